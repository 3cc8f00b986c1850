//! Paimon and Iceberg tables over many small rounds (freshness 1 s, a few rows per round): a
//! log table and a primary-key table with `table.datalake.auto-expire-snapshot` and the
//! format's retention options, set as the `paimon.*` / `iceberg.*` table properties Fluss
//! hands to the lake (Paimon `snapshot.num-retained.min = 3`, `max = 5`, `time-retained =
//! 1 s`; Iceberg `history.expire.min-snapshots-to-keep = 3`, `max-snapshot-age-ms = 1000`,
//! `write.metadata.delete-after-commit.enabled` with 5 previous versions), and a log table
//! without expiry.
//!
//! Every few rounds: the expiring tables hold between 3 and 5 snapshots (Iceberg: at least 3,
//! at most the rounds of the last few seconds) and the snapshot Fluss registered is among
//! them and readable; pypaimon / pyiceberg read exactly Fluss's data. At the end: every
//! retained snapshot of the log table reads exactly the rows it held when committed (time
//! travel), the first one, expired, fails; Java Paimon / Java Iceberg read the expired tables;
//! and the table without expiry holds a snapshot per round and several times the expiring
//! table's metadata: the growth expiry prevents, so the test fails when expiry does nothing.
//!
//! `FLUSS_MAINTENANCE_ROUNDS` sets the number of rounds (CI: 40; `scripts/maintenance-run.sh`
//! runs 300 and prints the curves of snapshots, metadata bytes and read time per round).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fluss::client::{FlussConnection, UpsertWriter};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TableDescriptorBuilder, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{Rng, cluster, data, host, iceberg, paimon, python, unique_name};
use serde_json::{Value, json};

const RETAINED_MIN: usize = 3;
const PAIMON_RETAINED_MAX: usize = 5;
const LOG_ROWS_PER_ROUND: usize = 20;
const PK_CHANGES_PER_ROUND: usize = 20;
const KEYS: u64 = 200;

fn rounds() -> usize {
    std::env::var("FLUSS_MAINTENANCE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Paimon,
    Iceberg,
}

/// One format's lake, as the test sees it.
struct Lake<'a> {
    format: Format,
    c: &'a ClusterInfo,
}

impl Lake<'_> {
    fn name(&self) -> &'static str {
        match self.format {
            Format::Paimon => "paimon",
            Format::Iceberg => "iceberg",
        }
    }

    /// Expiry on, with the retention above, or off.
    fn with_expiry(&self, mut b: TableDescriptorBuilder, expire: bool) -> TableDescriptor {
        b = b
            .property("table.datalake.enabled", "true")
            .property("table.datalake.freshness", "1s");
        if expire {
            b = b.property("table.datalake.auto-expire-snapshot", "true");
            let options: &[(&str, &str)] = match self.format {
                Format::Paimon => &[
                    ("paimon.snapshot.num-retained.min", "3"),
                    ("paimon.snapshot.num-retained.max", "5"),
                    ("paimon.snapshot.time-retained", "1 s"),
                ],
                Format::Iceberg => &[
                    ("iceberg.history.expire.min-snapshots-to-keep", "3"),
                    ("iceberg.history.expire.max-snapshot-age-ms", "1000"),
                    ("iceberg.write.metadata.delete-after-commit.enabled", "true"),
                    ("iceberg.write.metadata.previous-versions-max", "5"),
                ],
            };
            for (k, v) in options {
                b = b.custom_property(*k, *v);
            }
        }
        b.build().unwrap()
    }

    fn log_table(&self, expire: bool) -> TableDescriptor {
        let base = data::lake_log_table(2, Some("id"), "1s");
        self.with_expiry(
            TableDescriptor::builder()
                .schema(base.schema().clone())
                .distributed_by(Some(2), vec!["id".to_string()]),
            expire,
        )
    }

    fn pk_table(&self) -> TableDescriptor {
        let schema = Schema::builder()
            .column("id", DataTypes::int())
            .column("v", DataTypes::string())
            .primary_key(vec!["id"])
            .unwrap()
            .build()
            .unwrap();
        self.with_expiry(
            TableDescriptor::builder()
                .schema(schema)
                .distributed_by(Some(2), vec!["id".to_string()]),
            true,
        )
    }

    fn dir(&self, path: &TablePath) -> PathBuf {
        match self.format {
            Format::Paimon => {
                self.c
                    .paimon_warehouse
                    .join(format!("{}.db/{}", path.database(), path.table()))
            }
            Format::Iceberg => self
                .c
                .iceberg_warehouse
                .join(path.database())
                .join(path.table()),
        }
    }

    /// The table's snapshot ids, oldest first.
    fn snapshot_ids(&self, path: &TablePath) -> Vec<i64> {
        let dir = self.dir(path);
        match self.format {
            Format::Paimon => {
                let mut ids: Vec<i64> = std::fs::read_dir(dir.join("snapshot"))
                    .unwrap()
                    .filter_map(|e| {
                        e.ok()?
                            .file_name()
                            .to_str()?
                            .strip_prefix("snapshot-")?
                            .parse()
                            .ok()
                    })
                    .collect();
                ids.sort();
                ids
            }
            Format::Iceberg => current_iceberg_metadata(&dir)["snapshots"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["snapshot-id"].as_i64().unwrap())
                .collect(),
        }
    }

    /// Bytes and files of the table's metadata.
    fn metadata(&self, path: &TablePath) -> (u64, usize) {
        let dirs: &[&str] = match self.format {
            Format::Paimon => &["snapshot", "manifest"],
            Format::Iceberg => &["metadata"],
        };
        let mut bytes = 0;
        let mut files = 0;
        for sub in dirs {
            for e in std::fs::read_dir(self.dir(path).join(sub))
                .into_iter()
                .flatten()
                .flatten()
            {
                bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
                files += 1;
            }
        }
        (bytes, files)
    }

    /// The reader command that prints the table's rows (at `snapshot`): pypaimon, or
    /// pyiceberg (log tables only: it does not apply equality deletes).
    fn read_command(&self, path: &TablePath, snapshot: Option<i64>) -> Vec<String> {
        let mut c = match self.format {
            Format::Paimon => vec![
                "rows".to_string(),
                self.c.paimon_warehouse.display().to_string(),
                path.database().to_string(),
                path.table().to_string(),
            ],
            Format::Iceberg => vec![
                "rows".to_string(),
                self.dir(path).display().to_string(),
                "--reader".to_string(),
                "pyiceberg".to_string(),
            ],
        };
        if let Some(s) = snapshot {
            c.extend(["--snapshot".to_string(), s.to_string()]);
        }
        c
    }

    fn reads(&self, commands: &[Vec<String>]) -> Vec<(Result<Vec<Value>, String>, f64)> {
        let script = match self.format {
            Format::Paimon => "paimon_read.py",
            Format::Iceberg => "iceberg_read.py",
        };
        python::batch_timed(script, commands)
    }

    /// The primary-key table's rows, by pypaimon, or by Java Iceberg's generic reader
    /// (pyiceberg does not apply equality deletes, and DuckDB 1.4.4 drops rows of old data
    /// files of such tables after a few dozen rounds; `iceberg::java_rows`).
    fn pk_rows(&self, path: &TablePath) -> Vec<Value> {
        match self.format {
            Format::Paimon => business(&paimon::rows(
                &self.c.paimon_warehouse,
                path.database(),
                path.table(),
                None,
            )),
            Format::Iceberg => {
                let java = iceberg::java_rows(&self.dir(path), &["id", "v"]);
                let mut rows = java["rows"].as_array().unwrap().clone();
                rows.sort_by_key(|v| v["id"].as_i64().unwrap());
                rows
            }
        }
    }

    /// Rows of the log table snapshot `id` held when it was committed.
    fn total_records(&self, path: &TablePath, id: i64) -> usize {
        match self.format {
            Format::Paimon => paimon::snapshot(
                &self.c.paimon_warehouse,
                "fluss",
                path.table(),
                Some(id),
            )["total_record_count"]
                .as_u64()
                .unwrap() as usize,
            Format::Iceberg => {
                let snapshots = iceberg::snapshots(&self.dir(path));
                let s = snapshots
                    .iter()
                    .find(|s| s["snapshot-id"].as_i64() == Some(id))
                    .unwrap();
                s["summary"]["total-records"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap()
            }
        }
    }

    /// The Java reader of Fluss's own lake plugin reads the expired tables: Paimon's merged
    /// primary-key rows, Iceberg's planned rows of the log table's current snapshot.
    fn java_agrees(&self, t: &Tables, model: &BTreeMap<i32, String>, log_rows: usize) {
        match self.format {
            Format::Paimon => {
                let java = paimon::java_read(
                    &self.c.paimon_warehouse,
                    "fluss",
                    t.pk.table(),
                    &["id", "v"],
                );
                let mut got: Vec<Value> = java["rows"].as_array().unwrap().clone();
                got.sort_by_key(|v| v["id"].as_i64().unwrap());
                assert_eq!(got, pk_rows(model), "Java Paimon, primary-key table");
                assert_eq!(
                    java["snapshot"].as_i64(),
                    self.snapshot_ids(&t.pk).last().copied()
                );
            }
            Format::Iceberg => {
                let java = iceberg::java_check(&[&self.dir(&t.log), &self.dir(&t.pk)]);
                let snaps = java[0]["snapshots"].as_array().unwrap();
                assert_eq!(snaps.len(), self.snapshot_ids(&t.log).len());
                let planned: i64 = snaps.last().unwrap()["tasks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["rows"].as_i64().unwrap())
                    .sum();
                assert_eq!(planned as usize, log_rows, "Java Iceberg, log table");
                assert_eq!(
                    java[1]["snapshots"].as_array().unwrap().len(),
                    self.snapshot_ids(&t.pk).len(),
                    "Java Iceberg reads every retained snapshot of the primary-key table"
                );
            }
        }
    }
}

/// The current `vN.metadata.json` of an Iceberg Hadoop table.
fn current_iceberg_metadata(dir: &Path) -> Value {
    let hint: u64 = std::fs::read_to_string(dir.join("metadata/version-hint.text"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut v = hint;
    while dir
        .join(format!("metadata/v{}.metadata.json", v + 1))
        .exists()
    {
        v += 1;
    }
    serde_json::from_slice(
        &std::fs::read(dir.join(format!("metadata/v{v}.metadata.json"))).unwrap(),
    )
    .unwrap()
}

fn expected_log(rows: usize) -> Vec<Value> {
    data::sorted_by_id(data::canonical_rows(&data::batch(0, rows)))
}

fn pk_rows(model: &BTreeMap<i32, String>) -> Vec<Value> {
    model
        .iter()
        .map(|(k, v)| json!({"id": k, "v": v}))
        .collect()
}

struct Tables {
    log: TablePath,
    pk: TablePath,
    unexpired: TablePath,
}

async fn write_round(
    conn: &FlussConnection,
    t: &Tables,
    round: usize,
    upserts: &UpsertWriter,
    rng: &mut Rng,
    model: &mut BTreeMap<i32, String>,
) {
    let first = (round * LOG_ROWS_PER_ROUND) as i64;
    for path in [&t.log, &t.unexpired] {
        data::write_rows(conn, path, first, LOG_ROWS_PER_ROUND, LOG_ROWS_PER_ROUND).await;
    }
    for _ in 0..PK_CHANGES_PER_ROUND {
        let id = rng.below(KEYS) as i32;
        let mut row = GenericRow::new(2);
        row.set_field(0, id);
        if rng.below(5) == 0 && model.contains_key(&id) {
            row.set_field(1, model.remove(&id).unwrap());
            upserts.delete(&row).unwrap();
        } else {
            let v = format!("r{round}-{id}");
            row.set_field(1, v.clone());
            upserts.upsert(&row).unwrap();
            model.insert(id, v);
        }
    }
    upserts.flush().await.unwrap();
}

/// Between the minimum and (Paimon) the maximum retained, and the registered one among them.
fn check_bounded(
    lake: &Lake<'_>,
    h: &HostProcess,
    path: &TablePath,
    registered: i64,
    round: usize,
) {
    let ids = lake.snapshot_ids(path);
    let max = match lake.format {
        Format::Paimon => PAIMON_RETAINED_MAX,
        // Iceberg keeps what is younger than a second besides the minimum: at most the
        // rounds of the last few seconds.
        Format::Iceberg => 8,
    };
    assert!(
        ids.len() <= max && ids.len() >= RETAINED_MIN.min(round),
        "round {round}: {} holds snapshots {ids:?}\n{}",
        path.table(),
        h.log()
    );
    assert!(
        ids.contains(&registered),
        "round {round}: the snapshot Fluss registered ({registered}) is gone: {ids:?}"
    );
}

async fn run(format: Format) {
    let rounds = rounds();
    let mut c = cluster::lease_mixed();
    let lake = Lake { format, c: &c };
    let name = lake.name();
    c.set_lake_format(name);
    let lake = Lake { format, c: &c };
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name(&format!("expire_{name}"));
    let t = Tables {
        log: TablePath::new("fluss", format!("{id}_log")),
        pk: TablePath::new("fluss", format!("{id}_pk")),
        unexpired: TablePath::new("fluss", format!("{id}_unexpired")),
    };
    data::create_table(&admin, &t.log, &lake.log_table(true)).await;
    data::create_table(&admin, &t.pk, &lake.pk_table()).await;
    data::create_table(&admin, &t.unexpired, &lake.log_table(false)).await;
    let pk = conn.get_table(&t.pk).await.unwrap();
    let upserts = pk.new_upsert().unwrap().create_writer().unwrap();
    let h = HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin(name)],
            &[
                "--tiering.poll.table.interval",
                "1s",
                "--tiering.heartbeat.interval",
                "1s",
            ],
        ),
        &format!("{id}-host"),
    );
    let mut rng = Rng(0x5eed_0016);
    let mut model: BTreeMap<i32, String> = BTreeMap::new();
    let mut curve = Vec::new();
    let mut first_registered = None;
    let check_every = (rounds / 4).max(1);
    for round in 1..=rounds {
        write_round(&conn, &t, round - 1, &upserts, &mut rng, &mut model).await;
        let mut registered = BTreeMap::new();
        for path in [&t.log, &t.pk, &t.unexpired] {
            let ends = data::all_log_end_offsets(&admin, path).await;
            let id = wait_registered(&c, &admin, path, &ends, &h).await;
            registered.insert(path.table().to_string(), id);
        }
        first_registered.get_or_insert(registered[t.log.table()]);
        if round % check_every != 0 && round != rounds {
            continue;
        }
        // Maintenance runs after the registration: give the last round's a moment.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for path in [&t.log, &t.pk] {
            check_bounded(&lake, &h, path, registered[path.table()], round);
        }
        let reads = lake.reads(&[
            lake.read_command(&t.log, None),
            lake.read_command(&t.log, Some(registered[t.log.table()])),
            lake.read_command(&t.unexpired, None),
        ]);
        let rows = |i: usize| -> Vec<Value> {
            business(
                &reads[i]
                    .0
                    .clone()
                    .unwrap_or_else(|e| panic!("round {round}: read {i} failed: {e}")),
            )
        };
        let expected = expected_log(round * LOG_ROWS_PER_ROUND);
        assert_eq!(rows(0), expected, "round {round}: log table");
        assert_eq!(
            rows(1),
            expected,
            "round {round}: the registered snapshot of the log table"
        );
        assert_eq!(rows(2), expected, "round {round}: unexpired table");
        assert_eq!(
            lake.pk_rows(&t.pk),
            pk_rows(&model),
            "round {round}: primary-key table"
        );
        let (log_bytes, log_files) = lake.metadata(&t.log);
        let (keep_bytes, keep_files) = lake.metadata(&t.unexpired);
        curve.push(json!({
            "round": round,
            "snapshots": lake.snapshot_ids(&t.log).len(),
            "metadata_bytes": log_bytes,
            "metadata_files": log_files,
            "read_seconds": reads[0].1,
            "unexpired_snapshots": lake.snapshot_ids(&t.unexpired).len(),
            "unexpired_metadata_bytes": keep_bytes,
            "unexpired_metadata_files": keep_files,
            "unexpired_read_seconds": reads[2].1,
        }));
    }
    println!("maintenance curve ({name}): {}", json!(curve));

    // Time travel: every retained snapshot of the log table reads exactly the rows it held;
    // the first one, expired, fails.
    let retained = lake.snapshot_ids(&t.log);
    let first = first_registered.unwrap();
    assert!(
        !retained.contains(&first),
        "{first} was never expired: {retained:?}"
    );
    let mut commands: Vec<Vec<String>> = retained
        .iter()
        .map(|s| lake.read_command(&t.log, Some(*s)))
        .collect();
    commands.push(lake.read_command(&t.log, Some(first)));
    let reads = lake.reads(&commands);
    for (s, (read, _)) in retained.iter().zip(&reads) {
        let rows = read
            .clone()
            .unwrap_or_else(|e| panic!("retained snapshot {s} cannot be read: {e}"));
        let total = lake.total_records(&t.log, *s);
        assert_eq!(business(&rows), expected_log(total), "snapshot {s}");
    }
    assert!(
        reads.last().unwrap().0.is_err(),
        "expired snapshot {first} can still be read"
    );

    lake.java_agrees(&t, &model, rounds * LOG_ROWS_PER_ROUND);

    // Without expiry the same rounds pile up: a snapshot per round and far more metadata.
    let unexpired = lake.snapshot_ids(&t.unexpired);
    assert!(unexpired.len() >= rounds, "{unexpired:?}");
    let (log_bytes, _) = lake.metadata(&t.log);
    let (keep_bytes, _) = lake.metadata(&t.unexpired);
    assert!(
        keep_bytes > 2 * log_bytes,
        "metadata with expiry {log_bytes} B, without {keep_bytes} B"
    );
    let log = h.log();
    assert!(log.contains("table maintained"), "{log}");
    assert!(!log.contains("table maintenance failed"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_tables_stay_bounded_over_many_rounds() {
    run(Format::Paimon).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_stay_bounded_over_many_rounds() {
    run(Format::Iceberg).await;
}
