//! Taking over from FlussLakeTiering, and back (README "Migrating from FlussLakeTiering"). On
//! a real cluster, the real FlussLakeTiering 0.9.1 (Flink 1.20 MiniCluster) tiers a log table
//! and a primary-key table (Lance: log tables only, as Fluss's Lance catalog allows) for two
//! rounds and is killed (SIGKILL); the host tiers two rounds and stops; Flink tiers one more
//! round; then the host again. After every round the lake equals Fluss's data exactly
//! (pypaimon; pyiceberg and DuckDB; pylance), every (bucket, offset) of the log table is in
//! the lake exactly once (ids are unique, and Paimon and Iceberg also keep the offsets), and
//! the snapshot Fluss registered is the lake's newest, made by the tiering commit user. After
//! every hand-over Java Paimon / Java Iceberg read the tables both services wrote.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use fluss::client::{FlussAdmin, FlussConnection};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::flink_tiering::FlinkTiering;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::{assert_no_duplicate_offsets, business};
use fluss_lake_e2e::{Rng, cluster, data, host, iceberg, lance, paimon, repo_root, unique_name};
use serde_json::{Value, json};

const BUCKETS: i32 = 3;
/// Long enough that a table whose round just finished stays scheduled (not being tiered)
/// while the service that tiered it is killed, so the next one gets it at once rather than
/// after the coordinator's 120 s tiering timeout.
const FRESHNESS: &str = "10s";
const LOG_ROWS_PER_ROUND: usize = 3_000;
const KEYS: u64 = 1_000;
const COMMIT_USER: &str = "__fluss_lake_tiering";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Service {
    Flink,
    Host,
}

/// The order of the issue: Flink two rounds, the host two, Flink one, the host one.
const ROUNDS: [Service; 6] = [
    Service::Flink,
    Service::Flink,
    Service::Host,
    Service::Host,
    Service::Flink,
    Service::Host,
];

enum Running {
    Flink(FlinkTiering),
    Host(HostProcess),
}

impl Running {
    fn log(&self) -> String {
        match self {
            Running::Flink(f) => f.log_tail(80),
            Running::Host(h) => h.log(),
        }
    }

    /// Flink is killed as a crash would kill it; the host stops as an operator stops it.
    fn stop(self) {
        match self {
            Running::Flink(mut f) => f.kill(),
            Running::Host(mut h) => {
                let status = h.terminate(Duration::from_secs(40));
                assert!(
                    status.is_some_and(|s| s.success()),
                    "host stop: {status:?}\n{}",
                    h.log()
                );
            }
        }
    }
}

fn pk_descriptor() -> TableDescriptor {
    TableDescriptor::builder()
        .schema(
            Schema::builder()
                .column("id", DataTypes::int())
                .column("name", DataTypes::string())
                .column("val", DataTypes::bigint())
                .primary_key(vec!["id"])
                .unwrap()
                .build()
                .unwrap(),
        )
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", FRESHNESS)
        .build()
        .unwrap()
}

/// The lake side of one format: its independent readers.
struct Lake<'a> {
    format: &'a str,
    c: &'a ClusterInfo,
}

impl Lake<'_> {
    fn iceberg_dir(&self, table: &str) -> PathBuf {
        self.c.iceberg_warehouse.join("fluss").join(table)
    }

    fn lance_dataset(&self, table: &str) -> PathBuf {
        self.c
            .lance_warehouse
            .join("fluss")
            .join(format!("{table}.lance"))
    }

    /// Every row of the table's current snapshot, system columns included.
    fn rows(&self, table: &str, reader: Option<&str>) -> Vec<Value> {
        match self.format {
            "paimon" => paimon::rows(&self.c.paimon_warehouse, "fluss", table, None),
            "lance" => lance::rows(&self.lance_dataset(table), None),
            _ => iceberg::rows(
                &self.iceberg_dir(table),
                None,
                reader.unwrap_or("pyiceberg"),
            ),
        }
    }

    /// The id and commit user of the table's newest snapshot.
    fn newest_snapshot(&self, table: &str) -> (i64, String) {
        match self.format {
            "paimon" => {
                let s = paimon::snapshot(&self.c.paimon_warehouse, "fluss", table, None);
                (
                    s["id"].as_i64().unwrap(),
                    s["commit_user"].as_str().unwrap().to_string(),
                )
            }
            "lance" => {
                let dataset = self.lance_dataset(table);
                let version = *lance::versions(&dataset).last().expect("a version");
                let tx = lance::transaction(&dataset, version);
                (
                    version as i64,
                    tx["properties"]["commit-user"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            }
            _ => {
                let snaps = iceberg::snapshots(&self.iceberg_dir(table));
                let last = snaps.last().expect("an Iceberg snapshot");
                (
                    last["snapshot-id"].as_i64().unwrap(),
                    last["summary"]["commit-user"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            }
        }
    }
}

/// Every (bucket, offset) of the log table exactly once: offsets of bucket b are 0..end(b).
fn assert_offsets_exactly_once(rows: &[Value], ends: &HashMap<(Option<i64>, i32), i64>, at: &str) {
    let counts = assert_no_duplicate_offsets(rows, &[]);
    for r in rows {
        let b = r["__bucket"].as_i64().expect("__bucket") as i32;
        let o = r["__offset"].as_i64().expect("__offset");
        let end = ends.get(&(None, b)).copied().unwrap_or(0);
        assert!(
            o < end,
            "{at}: bucket {b} offset {o} beyond the log end {end}"
        );
    }
    for b in 0..BUCKETS {
        let end = ends.get(&(None, b)).copied().unwrap_or(0);
        let n = counts.get(&(vec![], b as i64)).copied().unwrap_or(0) as i64;
        assert_eq!(
            n, end,
            "{at}: rows of bucket {b} (offsets 0..{end}, each once)"
        );
    }
}

async fn wait_covered(
    c: &ClusterInfo,
    admin: &FlussAdmin,
    path: &TablePath,
    running: &Running,
    at: &str,
) -> (i64, HashMap<(Option<i64>, i32), i64>) {
    let ends = data::all_log_end_offsets(admin, path).await;
    let snap = data::wait_for_all_lake_offsets(admin, path, &ends, Duration::from_secs(240))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{at}: {e}\nservice log:\n{}\ncoordinator:\n{}",
                running.log(),
                c.coordinator_log_tail(40)
            )
        });
    (snap, ends)
}

async fn upsert_round(
    conn: &FlussConnection,
    path: &TablePath,
    rng: &mut Rng,
    round: usize,
    model: &mut BTreeMap<i32, (String, i64)>,
) {
    let table = conn.get_table(path).await.unwrap();
    let writer = table.new_upsert().unwrap().create_writer().unwrap();
    for _ in 0..400 {
        let id = rng.below(KEYS) as i32;
        let name = format!("r{round}-{id}-{}", rng.below(1000));
        let val = rng.below(1 << 40) as i64;
        let mut row = GenericRow::new(3);
        row.set_field(0, id);
        row.set_field(1, name.clone());
        row.set_field(2, val);
        writer.upsert(&row).unwrap();
        model.insert(id, (name, val));
    }
    let live: Vec<i32> = model.keys().copied().collect();
    for _ in 0..80 {
        let id = live[rng.below(live.len() as u64) as usize];
        let Some((name, val)) = model.remove(&id) else {
            continue;
        };
        let mut row = GenericRow::new(3);
        row.set_field(0, id);
        row.set_field(1, name);
        row.set_field(2, val);
        writer.delete(&row).unwrap();
    }
    writer.flush().await.unwrap();
}

fn pk_expected(model: &BTreeMap<i32, (String, i64)>) -> Vec<Value> {
    model
        .iter()
        .map(|(id, (name, val))| json!({"id": id, "name": name, "val": val}))
        .collect()
}

async fn hand_over_and_back(format: &str) {
    let c = cluster::lease(format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let log_path = TablePath::new("fluss", unique_name(&format!("handover_log_{format}")));
    let pk_path = TablePath::new("fluss", unique_name(&format!("handover_pk_{format}")));
    data::create_table(
        &admin,
        &log_path,
        &data::lake_log_table(BUCKETS, Some("id"), FRESHNESS),
    )
    .await;
    let with_pk = format != "lance";
    if with_pk {
        data::create_table(&admin, &pk_path, &pk_descriptor()).await;
    }
    let lake = Lake { format, c: &c };
    // One state directory for every start of the host, as a deployment keeps it.
    let state = repo_root()
        .join("target/test-state")
        .join(unique_name("handover"));
    let host_args = host::args(
        &c.bootstrap,
        &[host::plugin(format)],
        &["--state-dir", &state.display().to_string()],
    );

    let mut rng = Rng(0x5eed_4a4d_0f0e_2026);
    let mut model: BTreeMap<i32, (String, i64)> = BTreeMap::new();
    let mut log_rows = 0usize;
    let mut running: Option<(Service, Running)> = None;
    for (round, who) in ROUNDS.iter().copied().enumerate() {
        let at = format!("{format} round {round} ({who:?})");
        let handed_over = round > 0 && ROUNDS[round - 1] != who;
        // The host hands over by stopping before the round's data is written: with nothing new
        // to tier it holds no table. (Flink was killed at the end of its last round, below.)
        if handed_over && let Some((_, r)) = running.take() {
            r.stop();
        }
        // The next round's data, written before the next service starts so it finds a backlog
        // waiting.
        data::write_rows(&conn, &log_path, log_rows as i64, LOG_ROWS_PER_ROUND, 1_000).await;
        log_rows += LOG_ROWS_PER_ROUND;
        if with_pk {
            upsert_round(&conn, &pk_path, &mut rng, round, &mut model).await;
        }

        if running.is_none() {
            let started = match who {
                Service::Flink => Running::Flink(
                    FlinkTiering::start(&c, format, &format!("{}-flink-{round}", log_path.table()))
                        .await,
                ),
                Service::Host => Running::Host(HostProcess::spawn(
                    &host_args,
                    &format!("{}-host", log_path.table()),
                )),
            };
            running = Some((who, started));
        }
        let r = &running.as_ref().unwrap().1;
        let (snap, ends) = wait_covered(&c, &admin, &log_path, r, &at).await;
        let pk_snap = if with_pk {
            Some(wait_covered(&c, &admin, &pk_path, r, &at).await.0)
        } else {
            None
        };
        // Flink hands over by being killed, as a crash kills it, as soon as its last round is
        // committed: a table it held in a round would wait for the coordinator's fixed 120 s
        // tiering timeout before anyone else got it, and both tables have just finished
        // theirs, so the freshness (10 s) keeps them from being assigned again before it dies.
        // The pause lets its finish reports (polled every second) reach the coordinator.
        if who == Service::Flink && ROUNDS.get(round + 1).is_some_and(|next| *next != who) {
            tokio::time::sleep(Duration::from_secs(2)).await;
            if let Some((_, r)) = running.take() {
                r.stop();
            }
        }

        // The log table: exactly Fluss's rows, each offset once, Fluss's snapshot the newest.
        let rows = lake.rows(log_path.table(), None);
        if format != "lance" {
            assert_offsets_exactly_once(&rows, &ends, &at);
        }
        let expected = data::sorted_by_id(data::canonical_rows(&data::batch(0, log_rows)));
        let got = business(&rows);
        assert_eq!(got.len(), expected.len(), "{at}: log table rows");
        assert!(
            got == expected,
            "{at}: the log table differs from Fluss's rows"
        );
        assert_eq!(
            lake.newest_snapshot(log_path.table()),
            (snap, COMMIT_USER.to_string()),
            "{at}: Fluss registered the log table's newest lake snapshot"
        );

        // The primary-key table: the merged read is Fluss's state.
        let Some(snap) = pk_snap else {
            continue;
        };
        let reader = (format == "iceberg").then_some("duckdb");
        assert_eq!(
            business(&lake.rows(pk_path.table(), reader)),
            pk_expected(&model),
            "{at}: the primary-key table's merged read differs from Fluss's state"
        );
        assert_eq!(
            lake.newest_snapshot(pk_path.table()),
            (snap, COMMIT_USER.to_string()),
            "{at}: Fluss registered the primary-key table's newest lake snapshot"
        );
        if handed_over {
            java_reads(
                &lake,
                log_path.table(),
                pk_path.table(),
                log_rows,
                &model,
                &at,
            );
        }
    }
    if let Some((_, r)) = running.take() {
        r.stop();
    }
}

/// Java Paimon / Java Iceberg read what both services wrote: the log table's rows (Paimon)
/// or its planned rows (Iceberg), and the primary-key table's merged rows (Paimon) or every
/// snapshot's plan (Iceberg). Lance has no Java reader here but FlussLakeTiering's own.
fn java_reads(
    lake: &Lake<'_>,
    log_table: &str,
    pk_table: &str,
    log_rows: usize,
    model: &BTreeMap<i32, (String, i64)>,
    at: &str,
) {
    let format = lake.format;
    match format {
        "paimon" => {
            let wh = &lake.c.paimon_warehouse;
            let log = paimon::java_read(wh, "fluss", log_table, &["id", "seq"]);
            let mut ids: Vec<i64> = log["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["id"].as_i64().unwrap())
                .collect();
            ids.sort_unstable();
            assert_eq!(
                ids,
                (0..log_rows as i64).collect::<Vec<_>>(),
                "{at}: Java Paimon: log table"
            );
            assert_eq!(log["commit_user"], COMMIT_USER);
            let pk = paimon::java_read(wh, "fluss", pk_table, &["id", "name", "val"]);
            let mut rows = pk["rows"].as_array().unwrap().clone();
            rows.sort_by_key(|r| r["id"].as_i64().unwrap());
            assert_eq!(
                rows,
                pk_expected(model),
                "{at}: Java Paimon: primary-key table"
            );
        }
        "lance" => {}
        _ => {
            let (log_dir, pk_dir) = (lake.iceberg_dir(log_table), lake.iceberg_dir(pk_table));
            let java = iceberg::java_check(&[&log_dir, &pk_dir]);
            let current = |t: &Value| -> i64 {
                let snaps = t["snapshots"].as_array().unwrap();
                snaps.last().unwrap()["tasks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["rows"].as_i64().unwrap())
                    .sum()
            };
            assert_eq!(
                current(&java[0]),
                log_rows as i64,
                "{at}: Java Iceberg: log table rows planned"
            );
            assert_eq!(
                java[1]["snapshots"].as_array().unwrap().len(),
                iceberg::snapshots(&pk_dir).len(),
                "{at}: Java Iceberg reads every snapshot of the primary-key table"
            );
            let duck = business(&lake.rows(log_table, Some("duckdb")));
            assert_eq!(duck.len(), log_rows, "{at}: DuckDB: log table rows");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_tables_pass_from_flink_to_the_host_and_back() {
    hand_over_and_back("paimon").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_pass_from_flink_to_the_host_and_back() {
    hand_over_and_back("iceberg").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lance_log_tables_pass_from_flink_to_the_host_and_back() {
    hand_over_and_back("lance").await;
}
