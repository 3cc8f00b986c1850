//! Paimon tables kept by a Hive Metastore (`datalake.paimon.metastore=hive`): Apache Hive's own
//! standalone metastore 4.0.1 (`cluster/hive-metastore/`) registers each table and its
//! location; the host writes the table's files as in a filesystem catalog, and, with Paimon's
//! `lock.enabled` (its default on object stores; set here on local files), commits under the
//! metastore's exclusive table lock as Paimon's writers do. Java Paimon's `HiveCatalog` reads
//! the tables back through the metastore, pypaimon from their files. A Java writer holding the
//! table's lock keeps the host's commit waiting until it lets go.
//!
//! Fluss 0.9.1's coordinator cannot create Hive tables here: its Paimon plugin has Paimon's
//! `HiveCatalog` but not the Hive client it needs. So the coordinator creates each table in
//! its filesystem warehouse, and the test registers it in the metastore as an operator moving
//! the warehouse to a metastore would (Paimon's `HiveCatalog.repairTable`, same warehouse).

use std::time::{Duration, Instant};

use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::fluss_read::fluss_state;
use fluss_lake_e2e::hive::{self, HeldLock, HiveMetastore};
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::thrift_gate::ThriftGate;
use fluss_lake_e2e::{Rng, cluster, data, paimon, unique_name};
use serde_json::Value;

use super::catalog_rounds::{pk_descriptor, upsert_round};
use super::merge_engines::{KEYS, spawn_host, wait_tiered};

/// The host tiering Paimon tables kept by the metastore at `uri`, committing under its lock.
fn host(c: &ClusterInfo, uri: &str, log: &str) -> HostProcess {
    spawn_host(
        c,
        "paimon",
        log,
        &[
            "--datalake.paimon.metastore",
            "hive",
            "--datalake.paimon.uri",
            uri,
            "--datalake.paimon.lock.enabled",
            "true",
            "--datalake.paimon.warehouse",
            &c.paimon_warehouse.display().to_string(),
        ],
    )
}

/// Java Paimon's `HiveCatalog` (through the metastore) and pypaimon (the table's files) read
/// `path` as `expected` (business columns).
fn assert_reads(
    c: &ClusterInfo,
    hms: &HiveMetastore,
    path: &TablePath,
    expected: &[Value],
    columns: &[&str],
    what: &str,
) {
    let fluss = business(expected);
    assert!(!fluss.is_empty(), "{what}: no rows expected");
    let files = business(&paimon::rows(
        &c.paimon_warehouse,
        path.database(),
        path.table(),
        None,
    ));
    assert_eq!(files, fluss, "{what}: pypaimon");
    let java = hive::paimon_hive_rows(
        hms.uri(),
        &c.paimon_warehouse,
        path.database(),
        path.table(),
        columns,
    );
    // Java reads `columns`: the expected rows of those.
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
    let java: Vec<Value> = java["rows"].as_array().unwrap().clone();
    assert_eq!(
        project(&business(&java)),
        project(&fluss),
        "{what}: Java Paimon's HiveCatalog through the metastore"
    );
}

/// The table's latest lake snapshot id Fluss holds, if any.
async fn lake_snapshot(admin: &fluss::client::FlussAdmin, path: &TablePath) -> Option<i64> {
    admin
        .get_latest_lake_snapshot(path)
        .await
        .ok()
        .map(|s| s.snapshot_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_primary_key_tables_tier_through_the_hive_metastore_under_its_lock() {
    let c = cluster::lease("paimon");
    let hms = HiveMetastore::start();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    // A database of its own, in Fluss and in the metastore: Paimon's HiveCatalog puts a
    // database's tables under the database's location, which the first catalog to create it
    // (another format's, another cluster's warehouse) sets.
    let database = unique_name("paimon_hive");
    let log = TablePath::new(&database, unique_name("hive_plog"));
    let pk = TablePath::new(&database, unique_name("hive_ppk"));
    data::create_table(&admin, &log, &data::lake_log_table(2, Some("id"), "2s")).await;
    data::create_table(&admin, &pk, &pk_descriptor()).await;
    for t in [&log, &pk] {
        let registered =
            hive::paimon_register(hms.uri(), &c.paimon_warehouse, &database, t.table());
        assert_eq!(registered["table_type"], "PAIMON", "{registered}");
    }
    let gate = ThriftGate::start(hms.uri());
    let h = host(&c, &gate.uri(), "paimon-hive-host");
    let mut rng = Rng(0x9a1b_0417_2026);

    // Round 1: both tables tier, each commit under the metastore's lock.
    data::write_rows(&conn, &log, 0, 300, 100).await;
    upsert_round(&conn, &pk, 0, &mut rng).await;
    wait_tiered(&admin, &log, "round 1 (log)", &h).await;
    wait_tiered(&admin, &pk, "round 1 (pk)", &h).await;
    let mut expected = data::canonical_rows(&data::batch(0, 300));
    assert_reads(&c, &hms, &log, &expected, &["id", "name"], "round 1 (log)");
    let pk_rows = fluss_state(&conn, &pk, 0..KEYS as i32).await;
    assert_reads(
        &c,
        &hms,
        &pk,
        &pk_rows,
        &["id", "ver", "name"],
        "round 1 (pk)",
    );
    let methods: Vec<String> = gate.calls().into_iter().map(|c| c.method).collect();
    assert!(
        methods.iter().filter(|m| *m == "lock").count() >= 2,
        "every commit takes the metastore's lock: {methods:?}"
    );
    assert_eq!(
        methods.iter().filter(|m| *m == "lock").count(),
        methods.iter().filter(|m| *m == "unlock").count(),
        "and releases it: {methods:?}"
    );

    // Round 2: a Java writer holds the log table's lock; the host's commit waits for it, and
    // lands once it is released.
    let before = lake_snapshot(&admin, &log).await;
    let held = HeldLock::take(hms.uri(), &database, log.table(), 12_000);
    let taken = Instant::now();
    data::write_rows(&conn, &log, 300, 200, 100).await;
    while taken.elapsed() < Duration::from_secs(9) {
        assert_eq!(
            lake_snapshot(&admin, &log).await,
            before,
            "no commit while another writer holds the table's lock\nhost log:\n{}",
            h.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    held.wait();
    wait_tiered(&admin, &log, "round 2 (after the lock was released)", &h).await;
    expected.extend(data::canonical_rows(&data::batch(300, 200)));
    assert_reads(&c, &hms, &log, &expected, &["id", "name"], "round 2");
    assert!(
        gate.calls().iter().any(|c| c.method == "check_lock"),
        "the host waited for the lock"
    );
}
