//! Paimon, Iceberg and Lance tables over many small rounds (freshness 1 s, a few rows per
//! round, two buckets): a log table and (Paimon, Iceberg) a primary-key table with churn, both
//! with `table.datalake.auto-expire-snapshot` and `table.datalake.auto-compaction` and the
//! format's retention options, and a twin of each with neither.
//!
//! Retention, set as the table properties Fluss hands to the lake: Paimon
//! `snapshot.num-retained.min = 3`, `max = 5`, `time-retained = 1 s`; Iceberg
//! `history.expire.min-snapshots-to-keep = 3`, `max-snapshot-age-ms = 1000`,
//! `write.metadata.delete-after-commit.enabled` with 5 previous versions and manifests merged
//! from 10 on (`commit.manifest.min-count-to-merge`); Lance versions older than a second
//! (`lance.auto_cleanup.older_than`, as plugin configuration). Compaction uses each format's own default triggers.
//!
//! At every checkpoint (every 50 rounds, or a quarter of a shorter run): the maintained tables
//! hold few snapshots and few live files (data files; Iceberg: data and delete files; under
//! the bounds below) and the snapshot Fluss
//! registered is among them and readable; every table — maintained or not — reads exactly
//! Fluss's data (pypaimon, pyiceberg, pylance; Java Iceberg's generic reader for Iceberg
//! primary-key tables). At the end: every retained snapshot of the maintained log table reads
//! exactly the rows it held when committed (time travel) and the first one, expired, fails;
//! Java Paimon / Java Iceberg read the compacted, expired tables; the maintained tables'
//! metadata stays under a bound independent of the round count, while the twins hold a
//! snapshot and a data file per round and bucket and several times the metadata: the growth
//! maintenance prevents, so the test fails when expiry or compaction does nothing.
//!
//! `FLUSS_MAINTENANCE_ROUNDS` sets the number of rounds (CI: 40; `scripts/maintenance-run.sh`
//! runs 300 and prints the curves of snapshots, live data files, metadata bytes and read time).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fluss::client::{FlussConnection, UpsertWriter};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TableDescriptorBuilder, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{Rng, cluster, data, host, iceberg, paimon, python, unique_name};
use serde_json::{Value, json};

const BUCKETS: i32 = 2;
const RETAINED_MIN: usize = 3;
const LOG_ROWS_PER_ROUND: usize = 20;
const PK_CHANGES_PER_ROUND: usize = 20;
const KEYS: u64 = 200;
/// Live data files a maintained table may hold after a round's maintenance, per bucket: the
/// formats' compaction triggers (Paimon 5 sorted runs or 5 small append files, Iceberg 3
/// small files, Lance: small adjacent fragments always) plus the round's own file.
const LIVE_FILES_PER_BUCKET: usize = 6;

/// Metadata bytes (snapshots, manifest lists, manifests, metadata versions) a maintained
/// table may hold, whatever the round count: Paimon merges its small manifests at 30 (about
/// 90 KB here at the peak), Iceberg at 10 in this test and keeps 5 old metadata versions
/// (about 100 KB), Lance keeps a few versions (a few KB). Without maintenance the same tables
/// pass it within a few dozen rounds.
const METADATA_BOUND_BYTES: u64 = 256 << 10;

fn rounds() -> usize {
    std::env::var("FLUSS_MAINTENANCE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Format {
    Paimon,
    Iceberg,
    Lance,
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
            Format::Lance => "lance",
        }
    }

    /// Lance has no primary-key tables.
    fn has_pk(&self) -> bool {
        self.format != Format::Lance
    }

    /// Expiry and compaction on, with the retention above, or neither.
    fn descriptor(&self, mut b: TableDescriptorBuilder, maintained: bool) -> TableDescriptor {
        b = b
            .property("table.datalake.enabled", "true")
            .property("table.datalake.freshness", "1s");
        if maintained {
            b = b
                .property("table.datalake.auto-expire-snapshot", "true")
                .property("table.datalake.auto-compaction", "true");
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
                    ("iceberg.commit.manifest.min-count-to-merge", "10"),
                ],
                // Plugin configuration, for every Lance table of the host (see `host_args`).
                Format::Lance => &[],
            };
            for (k, v) in options {
                b = b.custom_property(*k, *v);
            }
        }
        b.build().unwrap()
    }

    /// The host's options: Lance's retention is plugin configuration (the plain twin asks
    /// for no maintenance, so it is never maintained whatever the plugin is told).
    fn host_args(&self) -> Vec<&'static str> {
        let mut args = vec![
            "--tiering.poll.table.interval",
            "1s",
            "--tiering.heartbeat.interval",
            "1s",
        ];
        if self.format == Format::Lance {
            args.extend(["--datalake.lance.lance.auto_cleanup.older_than", "1s"]);
        }
        args
    }

    fn log_table(&self, maintained: bool) -> TableDescriptor {
        let base = data::lake_log_table(BUCKETS, Some("id"), "1s");
        self.descriptor(
            TableDescriptor::builder()
                .schema(base.schema().clone())
                .distributed_by(Some(BUCKETS), vec!["id".to_string()]),
            maintained,
        )
    }

    fn pk_table(&self, maintained: bool) -> TableDescriptor {
        let schema = Schema::builder()
            .column("id", DataTypes::int())
            .column("v", DataTypes::string())
            .primary_key(vec!["id"])
            .unwrap()
            .build()
            .unwrap();
        self.descriptor(
            TableDescriptor::builder()
                .schema(schema)
                .distributed_by(Some(BUCKETS), vec!["id".to_string()]),
            maintained,
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
            Format::Lance => self
                .c
                .lance_warehouse
                .join(path.database())
                .join(format!("{}.lance", path.table())),
        }
    }

    /// The table's snapshot ids (Lance: versions), oldest first.
    fn snapshot_ids(&self, path: &TablePath) -> Vec<i64> {
        let dir = self.dir(path);
        match self.format {
            Format::Paimon => {
                let mut ids: Vec<i64> = file_names(&dir.join("snapshot"))
                    .iter()
                    .filter_map(|n| n.strip_prefix("snapshot-")?.parse().ok())
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
            Format::Lance => {
                // `<v>.manifest` (V1 naming) or `u64::MAX - v` in 20 digits (V2).
                let mut ids: Vec<i64> = file_names(&dir.join("_versions"))
                    .iter()
                    .filter_map(|n| {
                        let stem = n.strip_suffix(".manifest")?;
                        let n: u64 = stem.parse().ok()?;
                        Some(if stem.len() == 20 { u64::MAX - n } else { n } as i64)
                    })
                    .collect();
                ids.sort();
                ids
            }
        }
    }

    /// Bytes and files of the table's metadata.
    fn metadata(&self, path: &TablePath) -> (u64, usize) {
        let dirs: &[&str] = match self.format {
            Format::Paimon => &["snapshot", "manifest"],
            Format::Iceberg => &["metadata"],
            Format::Lance => &["_versions", "_transactions", "_deletions"],
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

    /// The reader command that prints the table's rows (at `snapshot`): pypaimon, pyiceberg
    /// (log tables only: it does not apply equality deletes) or pylance.
    fn read_command(&self, path: &TablePath, snapshot: Option<i64>) -> Vec<String> {
        self.command("rows", path, snapshot)
    }

    /// The reader command that lists the latest snapshot's live files: pypaimon's scan plan
    /// (data files), pyiceberg's manifests (data and delete files: pyiceberg cannot plan scans
    /// of tables with equality deletes), pylance's fragments (data files).
    fn plan_command(&self, path: &TablePath) -> Vec<String> {
        self.command(
            match self.format {
                Format::Paimon => "plan",
                Format::Iceberg => "files",
                Format::Lance => "info",
            },
            path,
            None,
        )
    }

    fn command(&self, what: &str, path: &TablePath, snapshot: Option<i64>) -> Vec<String> {
        let mut c = match self.format {
            Format::Paimon => vec![
                what.to_string(),
                self.c.paimon_warehouse.display().to_string(),
                path.database().to_string(),
                path.table().to_string(),
            ],
            Format::Iceberg => {
                let mut c = vec![what.to_string(), self.dir(path).display().to_string()];
                if what == "rows" {
                    c.extend(["--reader".to_string(), "pyiceberg".to_string()]);
                }
                c
            }
            Format::Lance => vec![what.to_string(), self.dir(path).display().to_string()],
        };
        if let Some(s) = snapshot {
            let flag = match self.format {
                Format::Lance => "--version",
                _ => "--snapshot",
            };
            c.extend([flag.to_string(), s.to_string()]);
        }
        c
    }

    /// Live data files in a plan command's output.
    fn planned_files(&self, plan: &[Value]) -> usize {
        match self.format {
            Format::Lance => plan[0]["fragments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["files"].as_array().unwrap().len())
                .sum(),
            _ => plan[0]["files"].as_u64().unwrap() as usize,
        }
    }

    fn reads(&self, commands: &[Vec<String>]) -> Vec<(Result<Vec<Value>, String>, f64)> {
        let script = match self.format {
            Format::Paimon => "paimon_read.py",
            Format::Iceberg => "iceberg_read.py",
            Format::Lance => "lance_read.py",
        };
        python::batch_timed(script, commands)
    }

    /// The primary-key table's rows and the seconds the read took: by pypaimon, or by Java
    /// Iceberg's generic reader (pyiceberg does not apply equality deletes, and DuckDB 1.4.4
    /// drops rows of old data files of such tables after a few dozen rounds;
    /// `iceberg::java_rows`).
    fn pk_rows(&self, path: &TablePath) -> (Vec<Value>, f64) {
        match self.format {
            Format::Paimon => {
                // A warm-up read first: the batch's first command pays pypaimon's imports.
                let command = self.read_command(path, None);
                let read = self.reads(&[command.clone(), command]).remove(1);
                let rows = read
                    .0
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.table()));
                (business(&rows), read.1)
            }
            Format::Iceberg => {
                let start = Instant::now();
                let java = iceberg::java_rows(&self.dir(path), &["id", "v"]);
                let mut rows = java["rows"].as_array().unwrap().clone();
                rows.sort_by_key(|v| v["id"].as_i64().unwrap());
                (rows, start.elapsed().as_secs_f64())
            }
            Format::Lance => unreachable!("Lance has no primary-key tables"),
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
            Format::Lance => {
                fluss_lake_e2e::lance::count(&self.dir(path), Some(id as u64)) as usize
            }
        }
    }

    /// The Java reader of Fluss's own lake plugin reads the maintained tables: Paimon's
    /// merged primary-key rows, Iceberg's planned rows of the log table's current snapshot
    /// and every retained snapshot of the primary-key table. (The tests have no Java Lance.)
    fn java_agrees(&self, t: &Tables, model: &BTreeMap<i32, String>, log_rows: usize) {
        let pk = t.pk.as_ref().map(|p| &p.maintained);
        match self.format {
            Format::Paimon => {
                let pk = pk.unwrap();
                let java =
                    paimon::java_read(&self.c.paimon_warehouse, "fluss", pk.table(), &["id", "v"]);
                let mut got: Vec<Value> = java["rows"].as_array().unwrap().clone();
                got.sort_by_key(|v| v["id"].as_i64().unwrap());
                assert_eq!(got, pk_rows(model), "Java Paimon, primary-key table");
                assert_eq!(
                    java["snapshot"].as_i64(),
                    self.snapshot_ids(pk).last().copied()
                );
            }
            Format::Iceberg => {
                let pk = pk.unwrap();
                let java = iceberg::java_check(&[&self.dir(&t.log.maintained), &self.dir(pk)]);
                let snaps = java[0]["snapshots"].as_array().unwrap();
                assert_eq!(snaps.len(), self.snapshot_ids(&t.log.maintained).len());
                let planned: i64 = snaps.last().unwrap()["tasks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["rows"].as_i64().unwrap())
                    .sum();
                assert_eq!(planned as usize, log_rows, "Java Iceberg, log table");
                assert_eq!(
                    java[1]["snapshots"].as_array().unwrap().len(),
                    self.snapshot_ids(pk).len(),
                    "Java Iceberg reads every retained snapshot of the primary-key table"
                );
            }
            Format::Lance => {}
        }
    }
}

fn file_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect()
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

/// A maintained table and its twin without maintenance, written alike.
struct Pair {
    maintained: TablePath,
    plain: TablePath,
}

impl Pair {
    fn both(&self) -> [&TablePath; 2] {
        [&self.maintained, &self.plain]
    }
}

struct Tables {
    log: Pair,
    pk: Option<Pair>,
}

impl Tables {
    fn all(&self) -> Vec<&TablePath> {
        let mut all = self.log.both().to_vec();
        if let Some(pk) = &self.pk {
            all.extend(pk.both());
        }
        all
    }
}

async fn write_round(
    conn: &FlussConnection,
    t: &Tables,
    round: usize,
    upserts: &[UpsertWriter],
    rng: &mut Rng,
    model: &mut BTreeMap<i32, String>,
) {
    let first = (round * LOG_ROWS_PER_ROUND) as i64;
    for path in t.log.both() {
        data::write_rows(conn, path, first, LOG_ROWS_PER_ROUND, LOG_ROWS_PER_ROUND).await;
    }
    if upserts.is_empty() {
        return;
    }
    for _ in 0..PK_CHANGES_PER_ROUND {
        let id = rng.below(KEYS) as i32;
        let mut row = GenericRow::new(2);
        row.set_field(0, id);
        if rng.below(5) == 0 && model.contains_key(&id) {
            row.set_field(1, model.remove(&id).unwrap());
            for w in upserts {
                w.delete(&row).unwrap();
            }
        } else {
            let v = format!("r{round}-{id}");
            row.set_field(1, v.clone());
            for w in upserts {
                w.upsert(&row).unwrap();
            }
            model.insert(id, v);
        }
    }
    for w in upserts {
        w.flush().await.unwrap();
    }
}

/// Few snapshots, the registered one among them, and few live data files.
fn check_bounded(
    lake: &Lake<'_>,
    h: &HostProcess,
    path: &TablePath,
    registered: i64,
    live_files: usize,
    round: usize,
) {
    let ids = lake.snapshot_ids(path);
    // Paimon keeps at most `num-retained.max`; Iceberg and Lance keep what is younger than a
    // second besides the minimum (Iceberg 3; Lance has none besides the latest and the one
    // Fluss registered): at most the commits of the last few seconds.
    let (min, max) = match lake.format {
        Format::Paimon => (RETAINED_MIN, 5),
        Format::Iceberg => (RETAINED_MIN, 10),
        Format::Lance => (1, 10),
    };
    assert!(
        ids.len() <= max && ids.len() >= min.min(round),
        "round {round}: {} holds snapshots {ids:?}\n{}",
        path.table(),
        h.log()
    );
    assert!(
        ids.contains(&registered),
        "round {round}: the snapshot Fluss registered ({registered}) is gone: {ids:?}"
    );
    let bound = LIVE_FILES_PER_BUCKET * BUCKETS as usize;
    assert!(
        live_files <= bound,
        "round {round}: {} holds {live_files} live data files (at most {bound})\n{}",
        path.table(),
        h.log()
    );
}

/// One checkpoint's figures of one table.
fn figures(lake: &Lake<'_>, path: &TablePath, live_files: usize, read_seconds: f64) -> Value {
    let (bytes, files) = lake.metadata(path);
    json!({
        "snapshots": lake.snapshot_ids(path).len(),
        "live_files": live_files,
        "metadata_bytes": bytes,
        "metadata_files": files,
        "read_seconds": read_seconds,
    })
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
    let id = unique_name(&format!("maint_{name}"));
    let pair = |kind: &str| Pair {
        maintained: TablePath::new("fluss", format!("{id}_{kind}")),
        plain: TablePath::new("fluss", format!("{id}_{kind}_plain")),
    };
    let t = Tables {
        log: pair("log"),
        pk: lake.has_pk().then(|| pair("pk")),
    };
    data::create_table(&admin, &t.log.maintained, &lake.log_table(true)).await;
    data::create_table(&admin, &t.log.plain, &lake.log_table(false)).await;
    let mut upserts = Vec::new();
    if let Some(pk) = &t.pk {
        data::create_table(&admin, &pk.maintained, &lake.pk_table(true)).await;
        data::create_table(&admin, &pk.plain, &lake.pk_table(false)).await;
        for path in pk.both() {
            let table = conn.get_table(path).await.unwrap();
            upserts.push(table.new_upsert().unwrap().create_writer().unwrap());
        }
    }
    let h = HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin(name)], &lake.host_args()),
        &format!("{id}-host"),
    );
    let mut rng = Rng(0x5eed_0016);
    let mut model: BTreeMap<i32, String> = BTreeMap::new();
    let mut curve = Vec::new();
    let mut first_registered = None;
    let check_every = (rounds / 4).clamp(1, 50);
    for round in 1..=rounds {
        write_round(&conn, &t, round - 1, &upserts, &mut rng, &mut model).await;
        let mut registered = BTreeMap::new();
        for path in t.all() {
            let ends = data::all_log_end_offsets(&admin, path).await;
            let id = wait_registered(&c, &admin, path, &ends, &h).await;
            registered.insert(path.table().to_string(), id);
        }
        first_registered.get_or_insert(registered[t.log.maintained.table()]);
        if round % check_every != 0 && round != rounds {
            continue;
        }
        // Maintenance runs after the registration: give the last round's a moment.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let log = &t.log.maintained;
        // The first command of a batch pays the reader's imports: a warm-up read first, so
        // the read times compare the tables, not the imports.
        let mut commands = vec![
            lake.read_command(&t.log.plain, None),
            lake.read_command(log, None),
            lake.read_command(log, Some(registered[log.table()])),
            lake.read_command(&t.log.plain, None),
        ];
        commands.extend(t.all().iter().map(|p| lake.plan_command(p)));
        let reads = lake.reads(&commands);
        let output = |i: usize| -> Vec<Value> {
            reads[i]
                .0
                .clone()
                .unwrap_or_else(|e| panic!("round {round}: read {i} failed: {e}"))
        };
        let live_files: Vec<usize> = (4..reads.len())
            .map(|i| lake.planned_files(&output(i)))
            .collect();
        let expected = expected_log(round * LOG_ROWS_PER_ROUND);
        assert_eq!(business(&output(1)), expected, "round {round}: log table");
        assert_eq!(
            business(&output(2)),
            expected,
            "round {round}: the registered snapshot of the log table"
        );
        assert_eq!(
            business(&output(3)),
            expected,
            "round {round}: log table without maintenance"
        );
        check_bounded(
            &lake,
            &h,
            log,
            registered[log.table()],
            live_files[0],
            round,
        );
        let mut point = json!({
            "round": round,
            "log": figures(&lake, log, live_files[0], reads[1].1),
            "log_plain": figures(&lake, &t.log.plain, live_files[1], reads[3].1),
        });
        if let Some(pk) = &t.pk {
            let (rows, seconds) = lake.pk_rows(&pk.maintained);
            assert_eq!(rows, pk_rows(&model), "round {round}: primary-key table");
            let (plain_rows, plain_seconds) = lake.pk_rows(&pk.plain);
            assert_eq!(
                plain_rows,
                pk_rows(&model),
                "round {round}: primary-key table without maintenance"
            );
            let maintained = &pk.maintained;
            check_bounded(
                &lake,
                &h,
                maintained,
                registered[maintained.table()],
                live_files[2],
                round,
            );
            point["pk"] = figures(&lake, maintained, live_files[2], seconds);
            point["pk_plain"] = figures(&lake, &pk.plain, live_files[3], plain_seconds);
        }
        curve.push(point);
    }
    println!("maintenance curve ({name}): {}", json!(curve));

    // Time travel: every retained snapshot of the log table reads exactly the rows it held;
    // the first one, expired, fails.
    let log = &t.log.maintained;
    let retained = lake.snapshot_ids(log);
    let first = first_registered.unwrap();
    assert!(
        !retained.contains(&first),
        "{first} was never expired: {retained:?}"
    );
    let mut commands: Vec<Vec<String>> = retained
        .iter()
        .map(|s| lake.read_command(log, Some(*s)))
        .collect();
    commands.push(lake.read_command(log, Some(first)));
    let reads = lake.reads(&commands);
    for (s, (read, _)) in retained.iter().zip(&reads) {
        let rows = read
            .clone()
            .unwrap_or_else(|e| panic!("retained snapshot {s} cannot be read: {e}"));
        let total = lake.total_records(log, *s);
        assert_eq!(business(&rows), expected_log(total), "snapshot {s}");
    }
    assert!(
        reads.last().unwrap().0.is_err(),
        "expired snapshot {first} can still be read"
    );

    lake.java_agrees(&t, &model, rounds * LOG_ROWS_PER_ROUND);

    // Growth: the maintained tables' metadata stays under a bound that does not depend on the
    // round count (it rises and falls as manifests pile up and merge), while the twins pile up
    // a snapshot and a data file per round and bucket.
    let mut kinds = vec!["log"];
    if t.pk.is_some() {
        kinds.push("pk");
    }
    for kind in kinds {
        let series = |key: &str, field: &str| -> Vec<u64> {
            curve
                .iter()
                .map(|p| p[key][field].as_u64().unwrap())
                .collect()
        };
        let bytes = series(kind, "metadata_bytes");
        assert!(
            bytes.iter().all(|b| *b <= METADATA_BOUND_BYTES),
            "{kind}: metadata over {METADATA_BOUND_BYTES} B: {bytes:?} bytes at the checkpoints"
        );
        let last = *bytes.last().unwrap();
        let plain = format!("{kind}_plain");
        let plain_files = *series(&plain, "live_files").last().unwrap() as usize;
        let plain_snapshots = *series(&plain, "snapshots").last().unwrap() as usize;
        assert!(
            plain_snapshots >= rounds && plain_files >= rounds,
            "{kind} without maintenance: {plain_snapshots} snapshots, {plain_files} data files"
        );
        let plain_bytes = *series(&plain, "metadata_bytes").last().unwrap();
        assert!(
            plain_bytes > 2 * last,
            "{kind}: metadata with maintenance {last} B, without {plain_bytes} B"
        );
    }
    let log = h.log();
    assert!(log.contains("table maintained"), "{log}");
    // A call that runs past its budget (the table's freshness, 1 s here) is interrupted and
    // tried again after a later round, as documented: on a loaded 2-core machine some do. Any
    // other failure fails the test; the checkpoints above prove maintenance kept up.
    let failures: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("table maintenance failed"))
        .collect();
    let over_budget = "ran past its 1s call deadline in maintenance.maintain";
    assert!(
        failures.iter().all(|l| l.contains(over_budget)),
        "{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_tables_stay_small_and_fast_over_many_rounds() {
    run(Format::Paimon).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_stay_small_and_fast_over_many_rounds() {
    run(Format::Iceberg).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lance_tables_stay_small_and_fast_over_many_rounds() {
    run(Format::Lance).await;
}
