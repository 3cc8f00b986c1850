//! Iceberg tables kept by a Hive Metastore (`datalake.iceberg.type=hive`): Apache Hive's own
//! standalone metastore 4.0.1 (`cluster/hive-metastore/`), the host committing through it as
//! Java's `HiveCatalog` does (a new metadata file, then, under the metastore's exclusive table
//! lock, `alter_table` conditional on the metadata file the commit was built on), Java
//! Iceberg's `HiveCatalog` reading the tables back through the metastore, and DuckDB reading
//! the metadata file the metastore points at. A rival Java writer that takes the lock first, a
//! lock-free rival whose commit lands while the host's alter is in flight (the metastore
//! refuses the host's), and a lost answer to an alter the metastore applied each end as the
//! metastore decided, with nothing lost or doubled.
//!
//! Fluss 0.9.1's coordinator cannot create Hive tables here: its Iceberg plugin bundles
//! Iceberg's core but not `iceberg-hive-metastore` and the Hive client `type=hive` loads. So
//! the cluster keeps its Hadoop catalog, and the test registers each table in the metastore as
//! an operator moving a table to Hive would (`HiveCatalog.registerTable`): the metadata the
//! coordinator created, copied to the metastore's warehouse; the host, given `type=hive`, then
//! tiers the table into the metastore's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::fluss_read::fluss_state;
use fluss_lake_e2e::hive::{self, HiveMetastore};
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::thrift_gate::ThriftGate;
use fluss_lake_e2e::{Rng, cluster, data, iceberg, unique_name};
use serde_json::{Value, json};

use super::catalog_rounds::{first_round, pk_descriptor, upsert_round, wait_for};
use super::merge_engines::{KEYS, spawn_host, wait_tiered};

/// The metastore database (Iceberg namespace) of the tests' tables, as Fluss's database.
const DATABASE: &str = "fluss";
const ALTER: &str = "alter_table_with_environment_context";

/// Registers the table the coordinator created in its Hadoop catalog in the metastore, at
/// `<metastore warehouse>/fluss.db/<table>`: returns (its location, its first metadata file).
fn register(c: &ClusterInfo, hms: &HiveMetastore, path: &TablePath) -> (PathBuf, String) {
    let source = c
        .iceberg_warehouse
        .join(DATABASE)
        .join(path.table())
        .join("metadata/v1.metadata.json");
    let mut metadata: Value = serde_json::from_slice(
        &std::fs::read(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display())),
    )
    .unwrap();
    let location = hms
        .warehouse()
        .join(format!("{DATABASE}.db"))
        .join(path.table());
    std::fs::create_dir_all(location.join("metadata")).unwrap();
    metadata["location"] = json!(format!("file:{}", location.display()));
    let file = location.join(format!("metadata/00000-{}.metadata.json", unique_name("m")));
    std::fs::write(&file, serde_json::to_vec(&metadata).unwrap()).unwrap();
    let registered = hive::register(
        hms.uri(),
        DATABASE,
        path.table(),
        &format!("file:{}", file.display()),
    );
    (location, registered)
}

/// The metastore's pointer of `path`, as a local path.
fn pointer(hms: &HiveMetastore, path: &TablePath) -> String {
    hive::pointer(hms.uri(), DATABASE, path.table()).expect("the table has a metadata_location")
}

fn local(file: &str) -> PathBuf {
    PathBuf::from(file.strip_prefix("file:").unwrap_or(file))
}

/// The metadata file the metastore points at.
fn current_metadata(hms: &HiveMetastore, path: &TablePath) -> Value {
    let file = local(&pointer(hms, path));
    serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap()
}

/// Java Iceberg's `HiveCatalog` reads the log table as `expected`, and DuckDB the file the
/// metastore points at.
fn assert_log_reads(hms: &HiveMetastore, path: &TablePath, expected: &[Value], what: &str) {
    let expected = business(expected);
    let duck = iceberg::rows(&local(&pointer(hms, path)), None, "duckdb");
    assert_eq!(
        business(&duck),
        expected,
        "{what}: DuckDB of the file the metastore points at"
    );
    let java = hive::java_hive_rows(hms.uri(), DATABASE, path.table(), &["id", "name"]);
    let ids = |rows: &[Value]| rows.iter().map(|r| r["id"].clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&business(java["rows"].as_array().unwrap())),
        ids(&expected),
        "{what}: Java Iceberg's HiveCatalog"
    );
}

/// The primary-key table's merged read (Java's `HiveCatalog` and DuckDB apply its equality and
/// position deletes) equals Fluss's lookup of every key.
async fn assert_pk_reads(
    hms: &HiveMetastore,
    conn: &FlussConnection,
    path: &TablePath,
    what: &str,
) {
    let fluss = business(&fluss_state(conn, path, 0..KEYS as i32).await);
    assert!(!fluss.is_empty(), "{what}: Fluss has no rows");
    let duck = iceberg::rows(&local(&pointer(hms, path)), None, "duckdb");
    assert_eq!(
        business(&duck),
        fluss,
        "{what}: DuckDB of the file the metastore points at"
    );
    let java = hive::java_hive_rows(hms.uri(), DATABASE, path.table(), &["id", "ver", "name"]);
    assert_eq!(
        business(java["rows"].as_array().unwrap()),
        fluss,
        "{what}: Java Iceberg's merged read through HiveCatalog"
    );
}

/// The host tiering into the metastore at `uri`.
fn host(c: &ClusterInfo, uri: &str, warehouse: &Path, log: &str) -> HostProcess {
    spawn_host(
        c,
        "iceberg",
        log,
        &[
            "--datalake.iceberg.type",
            "hive",
            "--datalake.iceberg.uri",
            uri,
            "--datalake.iceberg.warehouse",
            &warehouse.display().to_string(),
        ],
    )
}

/// The metadata files of the table at `location`.
fn metadata_files(location: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(location.join("metadata"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".metadata.json"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_primary_key_tables_tier_through_the_hive_metastore_exactly() {
    let c = cluster::lease("iceberg");
    let hms = HiveMetastore::start();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let log = TablePath::new(DATABASE, unique_name("hive_log"));
    let pk = TablePath::new(DATABASE, unique_name("hive_pk"));
    data::create_table(&admin, &log, &data::lake_log_table(2, Some("id"), "2s")).await;
    data::create_table(&admin, &pk, &pk_descriptor()).await;
    let (log_location, first_log) = register(&c, &hms, &log);
    register(&c, &hms, &pk);
    let gate = ThriftGate::start(hms.uri());
    let h = host(&c, &gate.uri(), hms.warehouse(), "iceberg-hive-host");
    let mut rng = Rng(0x41fe_5a11_2026);
    let mut expected = Vec::new();

    // Round 1: both tables tier through the metastore.
    expected.extend(first_round(&conn, &admin, &log, &pk, &mut rng, &h).await);
    assert_log_reads(&hms, &log, &expected, "round 1");
    assert_pk_reads(&hms, &conn, &pk, "round 1").await;
    let current = pointer(&hms, &log);
    let name = current.rsplit('/').next().unwrap();
    assert!(
        name.starts_with("00001-") && name.ends_with(".metadata.json"),
        "Java's name for the next metadata file: {current}"
    );
    let m = current_metadata(&hms, &log);
    assert_eq!(m["metadata-log"][0]["metadata-file"], first_log, "{m}");
    let summary = &m["snapshots"].as_array().unwrap().last().unwrap()["summary"];
    assert_eq!(summary["commit-user"], "__fluss_lake_tiering", "{summary}");
    assert!(summary["fluss-offsets"].is_string(), "{summary}");
    let calls = gate.calls();
    assert!(
        calls.iter().any(|c| c.method == "lock") && calls.iter().any(|c| c.method == ALTER),
        "commits take the metastore's lock, then alter: {:?}",
        calls.iter().map(|c| &c.method).collect::<Vec<_>>()
    );

    // Round 2: a Java writer (Iceberg's defaults: it takes the metastore's lock) commits while
    // the host's lock request is held; the host then finds the table moved, a lost race, and
    // commits again on the rival's metadata.
    gate.hold_next("lock", log.table());
    data::write_rows(&conn, &log, 300, 200, 100).await;
    expected.extend(data::canonical_rows(&data::batch(300, 200)));
    wait_for("the host's lock request reaching the gate", &h, || {
        gate.held() == 1
    })
    .await;
    let rival = hive::rival(hms.uri(), DATABASE, log.table(), "rival", "locked");
    gate.release();
    wait_tiered(&admin, &log, "round 2 (after a locking rival)", &h).await;
    assert_log_reads(&hms, &log, &expected, "round 2");
    let m = current_metadata(&hms, &log);
    assert_eq!(
        m["properties"]["rival"], "locked",
        "the rival's commit stands: {m}"
    );
    assert!(
        m["metadata-log"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["metadata-file"] == json!(rival)),
        "the host's commit follows the rival's: {m}"
    );

    // Round 3: a lock-free Java writer commits while the host's alter is held (after the
    // host's check): the metastore refuses the host's alter (its expected metadata file is no
    // longer current), and the host commits again.
    gate.hold_next(ALTER, log.table());
    data::write_rows(&conn, &log, 500, 100, 100).await;
    expected.extend(data::canonical_rows(&data::batch(500, 100)));
    wait_for("the host's alter reaching the gate", &h, || {
        gate.held() == 2
    })
    .await;
    hive::rival_lock_free(hms.uri(), DATABASE, log.table(), "rival", "lock-free");
    gate.release();
    wait_tiered(&admin, &log, "round 3 (after a lock-free rival)", &h).await;
    assert_log_reads(&hms, &log, &expected, "round 3");
    assert!(
        gate.calls()
            .iter()
            .any(|c| c.method == ALTER && c.answered("The table has been modified")),
        "the metastore refused the held alter"
    );
    assert_eq!(
        current_metadata(&hms, &log)["properties"]["rival"],
        "lock-free"
    );

    // Round 4: the answer to an alter the metastore applied is lost; the host recognises its
    // commit (the metastore points at its file) instead of committing the rows twice.
    gate.lose_next(ALTER, log.table());
    data::write_rows(&conn, &log, 600, 100, 100).await;
    expected.extend(data::canonical_rows(&data::batch(600, 100)));
    upsert_round(&conn, &pk, 1, &mut rng).await;
    wait_tiered(&admin, &log, "round 4 (a lost answer)", &h).await;
    wait_tiered(&admin, &pk, "round 4 (pk)", &h).await;
    assert_log_reads(&hms, &log, &expected, "round 4");
    assert_pk_reads(&hms, &conn, &pk, "round 4").await;
    assert!(
        gate.calls().iter().any(|c| c.lost && c.method == ALTER),
        "an applied alter's answer was lost"
    );
    assert!(
        h.log()
            .contains("the table holds the commit: it was applied"),
        "the host recognised its applied commit:\n{}",
        h.log()
    );
    // Every metadata file is one the metastore's history names, or the current one: the
    // attempts that lost their races left none behind.
    let m = current_metadata(&hms, &log);
    let mut named: Vec<String> = m["metadata-log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e["metadata-file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    named.push(pointer(&hms, &log).rsplit('/').next().unwrap().to_string());
    named.sort();
    assert_eq!(metadata_files(&log_location), named);
    // The host's locks were all released.
    let locks = gate.calls().iter().filter(|c| c.method == "lock").count();
    let unlocks = gate.calls().iter().filter(|c| c.method == "unlock").count();
    assert_eq!(locks, unlocks, "every lock the host took was released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_metastore_is_one_clear_error_and_commits_nothing() {
    let c = cluster::lease("iceberg");
    let hms = HiveMetastore::start();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new(DATABASE, unique_name("hive_down"));
    data::create_table(&admin, &path, &data::lake_log_table(1, None, "1s")).await;
    let (location, first) = register(&c, &hms, &path);
    data::write_rows(&conn, &path, 0, 50, 50).await;

    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = format!("thrift://127.0.0.1:{port}");
    let mut h = host(&c, &down, hms.warehouse(), "iceberg-hive-unreachable");
    h.wait_for_more_logs(
        "cannot connect to Hive Metastore",
        2,
        Duration::from_secs(120),
    )
    .await;
    let line = h
        .log()
        .lines()
        .rfind(|l| l.contains("cannot connect to Hive Metastore"))
        .unwrap()
        .to_string();
    assert!(line.contains(&down), "the line names the metastore: {line}");
    assert_eq!(pointer(&hms, &path), first, "nothing committed");
    assert_eq!(
        metadata_files(&location).len(),
        1,
        "no metadata file written"
    );
    h.terminate(Duration::from_secs(40));

    // The metastore back: the same rows tier.
    let h = host(&c, hms.uri(), hms.warehouse(), "iceberg-hive-reachable");
    wait_tiered(&admin, &path, "with the metastore reachable", &h).await;
    assert_log_reads(
        &hms,
        &path,
        &data::canonical_rows(&data::batch(0, 50)),
        "with the metastore reachable",
    );
    assert_ne!(pointer(&hms, &path), first);
}
