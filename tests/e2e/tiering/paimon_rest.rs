//! Paimon tables kept by Paimon's REST catalog (`datalake.paimon.metastore: rest`): a real Fluss
//! cluster whose coordinator creates its Paimon tables through Paimon's own REST catalog server
//! (paimon-core's `RESTCatalogServer`, `cluster/paimon-rest/`, behind a bearer token), the host
//! reading each table's latest snapshot from the catalog and committing every snapshot through
//! it (the server writes the snapshot file), and Java Paimon's `RESTCatalog` and pypaimon's REST
//! catalog reading the tables back through the catalog. A rival's commit that takes the host's
//! snapshot id first, a lost answer to a commit the catalog applied, and a wrong or revoked
//! token each end as the catalog decided, with nothing lost or doubled.

use std::time::Duration;

use fluss::client::{FlussAdmin, FlussConnection};
use fluss::metadata::{TableDescriptor, TablePath};
use fluss_lake_e2e::catalog_gate::CatalogGate;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::fluss_read::fluss_state;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::paimon::{self, PaimonRest};
use fluss_lake_e2e::{Rng, cluster, data, unique_name};
use serde_json::Value;

use super::catalog_rounds::{first_round, pk_descriptor, upsert_round, wait_for};
use super::merge_engines::{KEYS, spawn_host, wait_tiered};

/// The host committing through `gate` with `token`.
fn host(c: &ClusterInfo, gate: &CatalogGate, token: &str, log: &str) -> HostProcess {
    spawn_host(
        c,
        "paimon",
        log,
        &[
            "--datalake.paimon.uri",
            gate.uri(),
            "--datalake.paimon.token.provider",
            "bear",
            "--datalake.paimon.token",
            token,
        ],
    )
}

/// pypaimon and Java Paimon, both through the catalog, read `path`'s `columns` as `expected`.
fn assert_reads(
    rest: &PaimonRest,
    path: &TablePath,
    expected: &[Value],
    columns: &[&str],
    what: &str,
) {
    let expected = business(expected);
    assert!(!expected.is_empty(), "{what}: no rows expected");
    let project = |rows: &[Value]| -> Vec<Value> {
        rows.iter()
            .map(|r| {
                Value::Object(
                    columns
                        .iter()
                        .map(|c| (c.to_string(), r[*c].clone()))
                        .collect(),
                )
            })
            .collect()
    };
    let py = business(&rest.rows(path.database(), path.table()));
    assert_eq!(
        project(&py),
        project(&expected),
        "{what}: pypaimon through the catalog"
    );
    let java = rest.java_read(path.database(), path.table(), columns);
    assert_eq!(
        project(&business(java["rows"].as_array().unwrap())),
        project(&expected),
        "{what}: Java Paimon's RESTCatalog"
    );
}

async fn assert_pk_reads(rest: &PaimonRest, conn: &FlussConnection, path: &TablePath, what: &str) {
    let fluss = fluss_state(conn, path, 0..KEYS as i32).await;
    assert_reads(rest, path, &fluss, &["id", "ver", "name"], what);
}

async fn create(admin: &FlussAdmin, rest: &PaimonRest, path: &TablePath, d: &TableDescriptor) {
    data::create_table(admin, path, d).await;
    let t = rest
        .table(path.database(), path.table())
        .unwrap_or_else(|| panic!("the coordinator creates {path} through the REST catalog"));
    assert!(t["id"].is_string(), "{t}");
}

/// The catalog's latest snapshot of `path`: (id, commit user).
fn latest(rest: &PaimonRest, path: &TablePath) -> Option<(i64, String)> {
    rest.latest_snapshot(path.database(), path.table())
        .map(|s| {
            (
                s["id"].as_i64().unwrap(),
                s["commitUser"].as_str().unwrap().to_string(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_primary_key_tables_tier_through_paimons_rest_catalog_exactly() {
    let c = cluster::lease("paimon-rest");
    let rest = paimon::rest_catalog();
    let gate = CatalogGate::forwarding(&rest.uri);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let log = TablePath::new("fluss", unique_name("prest_log"));
    let pk = TablePath::new("fluss", unique_name("prest_pk"));
    create(
        &admin,
        &rest,
        &log,
        &data::lake_log_table(2, Some("id"), "2s"),
    )
    .await;
    create(&admin, &rest, &pk, &pk_descriptor()).await;
    let h = host(&c, &gate, &rest.token, "paimon-rest-host");
    let mut rng = Rng(0x9a1d_2e57_2026);
    let mut expected = Vec::new();

    // Round 1: both tables tier through the catalog.
    expected.extend(first_round(&conn, &admin, &log, &pk, &mut rng, &h).await);
    assert_reads(&rest, &log, &expected, &["id", "name"], "round 1");
    assert_pk_reads(&rest, &conn, &pk, "round 1").await;
    let (first, user) = latest(&rest, &log).expect("a snapshot in the catalog");
    assert_eq!(user, "__fluss_lake_tiering");
    assert!(
        !gate.commits().is_empty(),
        "the host commits through the catalog"
    );
    assert!(gate.commits().iter().all(|(status, _)| *status == 200));
    let java = rest.java_read("fluss", log.table(), &["id"]);
    assert_eq!(java["snapshot"], first, "{java}");
    assert!(
        java["properties"]["fluss-offsets"].is_string(),
        "the snapshot carries Fluss's offsets: {java}"
    );

    // Round 2: a rival commits to the log table while the host's commit is held; the catalog
    // answers that the snapshot id is taken, and the host commits again after the rival's.
    gate.hold_commits(1);
    data::write_rows(&conn, &log, 300, 200, 100).await;
    expected.extend(data::canonical_rows(&data::batch(300, 200)));
    wait_for("the host's commit reaching the gate", &h, || {
        gate.held() == 1
    })
    .await;
    let rival = rest.rival_commit("fluss", log.table());
    gate.release();
    wait_tiered(&admin, &log, "round 2 (after the race)", &h).await;
    assert_reads(&rest, &log, &expected, &["id", "name"], "round 2");
    assert!(
        h.log()
            .contains("lost the race (the catalog already held that version"),
        "the catalog refused the held commit:\n{}",
        h.log()
    );
    let (ours, user) = latest(&rest, &log).unwrap();
    assert_eq!(user, "__fluss_lake_tiering");
    assert_eq!(ours, rival + 1, "the host's snapshot follows the rival's");

    // Round 3: the answer to a commit the catalog applied is lost; the host recognises its
    // snapshot instead of committing the rows twice.
    gate.lose_commit_answers(1);
    data::write_rows(&conn, &log, 500, 100, 100).await;
    expected.extend(data::canonical_rows(&data::batch(500, 100)));
    upsert_round(&conn, &pk, 1, &mut rng).await;
    wait_tiered(&admin, &log, "round 3 (a lost answer)", &h).await;
    wait_tiered(&admin, &pk, "round 3 (pk)", &h).await;
    assert_reads(&rest, &log, &expected, &["id", "name"], "round 3");
    assert_pk_reads(&rest, &conn, &pk, "round 3").await;
    assert!(
        gate.commits()
            .iter()
            .any(|(status, lost)| *lost && *status == 200),
        "an applied commit's answer was lost: {:?}",
        gate.commits()
    );
    assert!(
        h.log()
            .contains("and the table holds the version: it was committed"),
        "the host recognised its applied commit:\n{}",
        h.log()
    );
    assert!(
        !h.log().contains(&rest.token),
        "the host never logs the catalog's token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_revoked_token_is_one_clear_error_and_commits_nothing() {
    let c = cluster::lease("paimon-rest");
    let rest = paimon::rest_catalog();
    let gate = CatalogGate::forwarding(&rest.uri);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("prest_cred"));
    create(&admin, &rest, &path, &data::lake_log_table(1, None, "1s")).await;
    data::write_rows(&conn, &path, 0, 50, 50).await;

    // A wrong token: refused by the catalog itself; nothing is committed.
    let mut h = host(&c, &gate, "not-the-token", "paimon-rest-wrong-token");
    h.wait_for_more_logs("refused the credential", 2, Duration::from_secs(120))
        .await;
    assert_eq!(latest(&rest, &path), None, "nothing committed");
    assert!(
        !h.log().contains("not-the-token"),
        "the token is never logged"
    );
    h.kill();

    // The right one tiers; once revoked, rounds fail with the same line and commit nothing.
    let mut h = host(&c, &gate, &rest.token, "paimon-rest-revoked-token");
    wait_tiered(&admin, &path, "with the right token", &h).await;
    let tiered = latest(&rest, &path);
    assert!(tiered.is_some());
    gate.revoke();
    data::write_rows(&conn, &path, 50, 50, 50).await;
    h.wait_for_more_logs("refused the credential", 2, Duration::from_secs(120))
        .await;
    assert_eq!(latest(&rest, &path), tiered, "nothing more committed");
    let line = h
        .log()
        .lines()
        .rfind(|l| l.contains("refused the credential"))
        .unwrap()
        .to_string();
    assert!(
        line.contains(gate.uri()),
        "the line names the catalog: {line}"
    );
    assert!(!h.log().contains(&rest.token), "the token is never logged");
}
