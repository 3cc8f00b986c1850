//! Iceberg tables kept by a REST catalog: a real Fluss cluster whose coordinator creates its
//! Iceberg tables through Apache Iceberg's own REST catalog server (`datalake.iceberg.type:
//! rest`), the host committing through the same catalog behind an authenticating gate (OAuth2
//! client credentials, as production catalogs ask), and pyiceberg's `RestCatalog`, DuckDB's
//! iceberg extension and Java Iceberg's `RESTCatalog` reading the tables back through the
//! catalog. A rival's commit that wins the race, a lost answer to a commit the catalog
//! applied, and a wrong or revoked credential each end as the catalog decided, with nothing
//! lost or doubled.

use std::time::Duration;

use fluss::client::{FlussAdmin, FlussConnection};
use fluss::metadata::{TableDescriptor, TablePath};
use fluss_lake_e2e::catalog_gate::CatalogGate;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::fluss_read::fluss_state;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::iceberg::{self, RestCatalog};
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{Rng, cluster, data, unique_name};
use serde_json::{Value, json};

use super::catalog_rounds::{first_round, pk_descriptor, upsert_round, wait_for};
use super::merge_engines::{KEYS, spawn_host, wait_tiered};

const CLIENT_ID: &str = "tiering-host";
const CLIENT_SECRET: &str = "s3cr3t-0f-the-h0st";

/// The host committing through `gate` with `credential`.
fn host(c: &ClusterInfo, gate: &CatalogGate, credential: &str, log: &str) -> HostProcess {
    spawn_host(
        c,
        "iceberg",
        log,
        &[
            "--datalake.iceberg.uri",
            gate.uri(),
            "--datalake.iceberg.credential",
            credential,
        ],
    )
}

/// Every reader, through the catalog, reads the log table as `expected` (business columns).
fn assert_log_reads(rest: &RestCatalog, path: &TablePath, expected: &[Value], what: &str) {
    let expected = business(expected);
    for reader in ["pyiceberg", "duckdb"] {
        let rows = iceberg::rest_rows(&rest.uri, "fluss", path.table(), None, reader);
        assert_eq!(
            business(&rows),
            expected,
            "{what}: {reader} through the catalog"
        );
    }
    let java = iceberg::java_rest_rows(&rest.uri, "fluss", path.table(), &["id", "name"]);
    let java: Vec<Value> = business(java["rows"].as_array().unwrap());
    let ids = |rows: &[Value]| rows.iter().map(|r| r["id"].clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&java),
        ids(&expected),
        "{what}: Java Iceberg's RESTCatalog"
    );
}

/// The primary-key table's merged read through the catalog (Java Iceberg and DuckDB apply
/// its equality and position deletes) equals Fluss's lookup of every key.
async fn assert_pk_reads(rest: &RestCatalog, conn: &FlussConnection, path: &TablePath, what: &str) {
    let fluss = business(&fluss_state(conn, path, 0..KEYS as i32).await);
    assert!(!fluss.is_empty(), "{what}: Fluss has no rows");
    let java = iceberg::java_rest_rows(&rest.uri, "fluss", path.table(), &["id", "ver", "name"]);
    assert_eq!(
        business(java["rows"].as_array().unwrap()),
        fluss,
        "{what}: Java Iceberg's merged read through the catalog"
    );
    let duck = iceberg::rest_rows(&rest.uri, "fluss", path.table(), None, "duckdb");
    assert_eq!(business(&duck), fluss, "{what}: DuckDB through the catalog");
}

/// The table as the catalog answers it: (current snapshot id, its summary, metadata location).
fn catalog_state(rest: &RestCatalog, path: &TablePath) -> (Option<i64>, Value, String) {
    let t = iceberg::rest_load_table(&rest.uri, "fluss", path.table())
        .unwrap_or_else(|| panic!("the catalog has no table {path}"));
    let m = &t["metadata"];
    let current = m["current-snapshot-id"].as_i64().filter(|id| *id >= 0);
    let summary = m["snapshots"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["snapshot-id"].as_i64() == current)
        .map(|s| s["summary"].clone())
        .unwrap_or(Value::Null);
    (
        current,
        summary,
        t["metadata-location"].as_str().unwrap().to_string(),
    )
}

/// A rival writer's commit through the catalog (straight to the server): an empty snapshot
/// on main, as any engine's no-op commit makes, that moves main on.
fn rival_commit(rest: &RestCatalog, path: &TablePath) -> i64 {
    let t = iceberg::rest_load_table(&rest.uri, "fluss", path.table()).unwrap();
    let m = &t["metadata"];
    let current = m["current-snapshot-id"].as_i64().unwrap();
    let snapshot = m["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["snapshot-id"].as_i64() == Some(current))
        .unwrap();
    let id = 4_000_000_000_000 + current.rem_euclid(1_000_000);
    let body = json!({
        "identifier": {"namespace": ["fluss"], "name": path.table()},
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": current}],
        "updates": [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": id, "parent-snapshot-id": current,
                "sequence-number": m["last-sequence-number"].as_i64().unwrap() + 1,
                "timestamp-ms": fluss_lake_host::time::now_millis(),
                "manifest-list": snapshot["manifest-list"],
                "summary": {"operation": "append", "rival": "yes"},
                "schema-id": m["current-schema-id"]}},
            {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": id, "type": "branch"}
        ]
    });
    let (status, answer) = iceberg::rest_post(
        &rest.uri,
        &format!("/v1/namespaces/fluss/tables/{}", path.table()),
        &body.to_string(),
    );
    assert_eq!(status, 200, "the rival's commit: {answer}");
    id
}

async fn create(admin: &FlussAdmin, rest: &RestCatalog, path: &TablePath, d: &TableDescriptor) {
    data::create_table(admin, path, d).await;
    assert!(
        iceberg::rest_load_table(&rest.uri, "fluss", path.table()).is_some(),
        "the coordinator creates {path} through the REST catalog"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_primary_key_tables_tier_through_the_rest_catalog_exactly() {
    let c = cluster::lease("iceberg-rest");
    let rest = iceberg::rest_catalog(0);
    let gate = CatalogGate::start(&rest.uri, CLIENT_ID, CLIENT_SECRET);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let log = TablePath::new("fluss", unique_name("rest_log"));
    let pk = TablePath::new("fluss", unique_name("rest_pk"));
    create(
        &admin,
        &rest,
        &log,
        &data::lake_log_table(2, Some("id"), "2s"),
    )
    .await;
    create(&admin, &rest, &pk, &pk_descriptor()).await;
    let credential = format!("{CLIENT_ID}:{CLIENT_SECRET}");
    let h = host(&c, &gate, &credential, "iceberg-rest-host");
    let mut rng = Rng(0x2e57_ca7a_1065);
    let mut expected = Vec::new();

    // Round 1: both tables tier through the catalog.
    expected.extend(first_round(&conn, &admin, &log, &pk, &mut rng, &h).await);
    assert_log_reads(&rest, &log, &expected, "round 1");
    assert_pk_reads(&rest, &conn, &pk, "round 1").await;
    let (first, summary, metadata) = catalog_state(&rest, &log);
    assert!(first.is_some());
    assert_eq!(summary["commit-user"], "__fluss_lake_tiering", "{summary}");
    assert!(summary["fluss-offsets"].is_string(), "{summary}");
    // The catalog wrote the metadata (its own file names); the host no Hadoop version files.
    let name = metadata.rsplit('/').next().unwrap();
    assert!(
        name.ends_with(".metadata.json") && name.contains('-') && !name.starts_with('v'),
        "{metadata}"
    );
    let table_dir = metadata.rsplit_once("/metadata/").unwrap().0;
    let table_dir = table_dir.strip_prefix("file:").unwrap_or(table_dir);
    assert!(
        !std::path::Path::new(table_dir)
            .join("metadata/version-hint.text")
            .exists(),
        "{table_dir}: no Hadoop version hint"
    );
    assert!(gate.commits().iter().all(|(status, _)| *status == 200));

    // Round 2: a rival commits to the log table while the host's commit is held; the catalog
    // refuses the host's (409: main moved), and the host commits again on the rival's.
    gate.hold_commits(1);
    data::write_rows(&conn, &log, 300, 200, 100).await;
    expected.extend(data::canonical_rows(&data::batch(300, 200)));
    wait_for("the host's commit reaching the gate", &h, || {
        gate.held() == 1
    })
    .await;
    let rival = rival_commit(&rest, &log);
    gate.release();
    wait_tiered(&admin, &log, "round 2 (after the race)", &h).await;
    assert_log_reads(&rest, &log, &expected, "round 2");
    assert!(
        gate.commits().iter().any(|(status, _)| *status == 409),
        "the catalog refused the held commit: {:?}",
        gate.commits()
    );
    let (ours, summary, _) = catalog_state(&rest, &log);
    assert_eq!(summary["commit-user"], "__fluss_lake_tiering");
    let parent =
        iceberg::rest_load_table(&rest.uri, "fluss", log.table()).unwrap()["metadata"]["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["snapshot-id"].as_i64() == ours)
            .unwrap()["parent-snapshot-id"]
            .as_i64();
    assert_eq!(
        parent,
        Some(rival),
        "the host's snapshot follows the rival's"
    );

    // Round 3: the answer to a commit the catalog applied is lost; the host recognises its
    // snapshot instead of committing the rows twice.
    gate.lose_commit_answers(1);
    data::write_rows(&conn, &log, 500, 100, 100).await;
    expected.extend(data::canonical_rows(&data::batch(500, 100)));
    upsert_round(&conn, &pk, 1, &mut rng).await;
    wait_tiered(&admin, &log, "round 3 (a lost answer)", &h).await;
    wait_tiered(&admin, &pk, "round 3 (pk)", &h).await;
    assert_log_reads(&rest, &log, &expected, "round 3");
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
            .contains("the table holds the commit: it was applied"),
        "the host recognised its applied commit:\n{}",
        h.log()
    );
    assert!(
        !h.log().contains(CLIENT_SECRET),
        "the host never logs the catalog's secret"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_revoked_credential_is_one_clear_error_and_commits_nothing() {
    let c = cluster::lease("iceberg-rest");
    let rest = iceberg::rest_catalog(0);
    let gate = CatalogGate::start(&rest.uri, CLIENT_ID, CLIENT_SECRET);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("rest_cred"));
    create(&admin, &rest, &path, &data::lake_log_table(1, None, "1s")).await;
    data::write_rows(&conn, &path, 0, 50, 50).await;

    // A wrong secret: refused by the catalog's token endpoint; nothing is committed.
    let wrong = format!("{CLIENT_ID}:not-the-secret");
    let mut h = host(&c, &gate, &wrong, "iceberg-rest-wrong-credential");
    h.wait_for_more_logs("refused the credential", 2, Duration::from_secs(120))
        .await;
    assert_eq!(catalog_state(&rest, &path).0, None, "nothing committed");
    assert!(
        !h.log().contains("not-the-secret"),
        "the secret is never logged"
    );
    h.kill();

    // The right one tiers; once revoked, rounds fail with the same line and commit nothing.
    let right = format!("{CLIENT_ID}:{CLIENT_SECRET}");
    let mut h = host(&c, &gate, &right, "iceberg-rest-revoked-credential");
    wait_tiered(&admin, &path, "with the right credential", &h).await;
    let tiered = catalog_state(&rest, &path).0;
    assert!(tiered.is_some());
    gate.revoke();
    data::write_rows(&conn, &path, 50, 50, 50).await;
    h.wait_for_more_logs("refused the credential", 2, Duration::from_secs(120))
        .await;
    assert_eq!(
        catalog_state(&rest, &path).0,
        tiered,
        "nothing more committed"
    );
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
    assert!(
        !h.log().contains(CLIENT_SECRET),
        "the secret is never logged"
    );
}
