//! Paimon tables over many small rounds (freshness 1 s, a few rows per round): a log table
//! and a primary-key table with `table.datalake.auto-expire-snapshot` and Paimon retention
//! options (`snapshot.num-retained.min = 3`, `max = 5`, `time-retained = 1 s`, set as the
//! `paimon.*` table properties Fluss hands to Paimon), and a log table without expiry.
//!
//! Every few rounds: the expiring tables hold between 3 and 5 snapshots and the snapshot
//! Fluss registered is among them and readable; pypaimon reads exactly Fluss's data. At the
//! end: every retained snapshot reads exactly the rows it held when committed (time travel),
//! an expired one fails, Java Paimon reads what pypaimon reads, and the table without expiry
//! holds a snapshot per round and several times the expiring table's metadata: the growth
//! expiry prevents, so the test fails when expiry does nothing.
//!
//! `FLUSS_MAINTENANCE_ROUNDS` sets the number of rounds (CI: 40; `scripts/maintenance-run.sh`
//! runs 300 and prints the curves of snapshots, metadata bytes and read time per round).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{Rng, cluster, data, host, paimon, python, unique_name};
use serde_json::{Value, json};

const RETAINED_MIN: usize = 3;
const RETAINED_MAX: usize = 5;
const LOG_ROWS_PER_ROUND: usize = 20;
const PK_CHANGES_PER_ROUND: usize = 20;
const KEYS: u64 = 200;

fn rounds() -> usize {
    std::env::var("FLUSS_MAINTENANCE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

/// Expiry on, with the retention above, or off.
fn with_expiry(mut b: fluss::metadata::TableDescriptorBuilder, expire: bool) -> TableDescriptor {
    b = b
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "1s");
    if expire {
        b = b
            .property("table.datalake.auto-expire-snapshot", "true")
            .custom_property("paimon.snapshot.num-retained.min", RETAINED_MIN.to_string())
            .custom_property("paimon.snapshot.num-retained.max", RETAINED_MAX.to_string())
            .custom_property("paimon.snapshot.time-retained", "1 s");
    }
    b.build().unwrap()
}

fn log_table(expire: bool) -> TableDescriptor {
    let base = data::lake_log_table(2, Some("id"), "1s");
    with_expiry(
        TableDescriptor::builder()
            .schema(base.schema().clone())
            .distributed_by(Some(2), vec!["id".to_string()]),
        expire,
    )
}

fn pk_table() -> TableDescriptor {
    let schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("v", DataTypes::string())
        .primary_key(vec!["id"])
        .unwrap()
        .build()
        .unwrap();
    with_expiry(
        TableDescriptor::builder()
            .schema(schema)
            .distributed_by(Some(2), vec!["id".to_string()]),
        true,
    )
}

fn table_dir(warehouse: &Path, path: &TablePath) -> PathBuf {
    warehouse.join(format!("{}.db/{}", path.database(), path.table()))
}

fn snapshot_ids(dir: &Path) -> Vec<i64> {
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

/// Bytes and files of the table's metadata: snapshots and manifests.
fn metadata(dir: &Path) -> (u64, usize) {
    let mut bytes = 0;
    let mut files = 0;
    for sub in ["snapshot", "manifest"] {
        for e in std::fs::read_dir(dir.join(sub))
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

fn expected_log(rows: usize) -> Vec<Value> {
    data::sorted_by_id(data::canonical_rows(&data::batch(0, rows)))
}

fn sorted(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|v| v["id"].as_i64().unwrap());
    rows
}

fn read_command(wh: &Path, path: &TablePath, snapshot: Option<i64>) -> Vec<String> {
    let mut c = vec![
        "rows".to_string(),
        wh.display().to_string(),
        path.database().to_string(),
        path.table().to_string(),
    ];
    if let Some(s) = snapshot {
        c.extend(["--snapshot".to_string(), s.to_string()]);
    }
    c
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
    upserts: &fluss::client::UpsertWriter,
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

fn check_bounded(h: &HostProcess, dir: &Path, registered: i64, round: usize) {
    let ids = snapshot_ids(dir);
    assert!(
        ids.len() <= RETAINED_MAX && ids.len() >= RETAINED_MIN.min(round),
        "round {round}: {} holds snapshots {ids:?}\n{}",
        dir.display(),
        h.log()
    );
    assert!(
        ids.contains(&registered),
        "round {round}: the snapshot Fluss registered ({registered}) is gone: {ids:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_keeps_paimon_tables_bounded_over_many_rounds() {
    let rounds = rounds();
    let c = cluster::lease("paimon");
    let wh = c.paimon_warehouse.clone();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("expire");
    let t = Tables {
        log: TablePath::new("fluss", format!("{id}_log")),
        pk: TablePath::new("fluss", format!("{id}_pk")),
        unexpired: TablePath::new("fluss", format!("{id}_unexpired")),
    };
    data::create_table(&admin, &t.log, &log_table(true)).await;
    data::create_table(&admin, &t.pk, &pk_table()).await;
    data::create_table(&admin, &t.unexpired, &log_table(false)).await;
    let pk = conn.get_table(&t.pk).await.unwrap();
    let upserts = pk.new_upsert().unwrap().create_writer().unwrap();
    let h = HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
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
    let check_every = (rounds / 4).max(1);
    for round in 1..=rounds {
        write_round(&conn, &t, round - 1, &upserts, &mut rng, &mut model).await;
        let mut registered = BTreeMap::new();
        for path in [&t.log, &t.pk, &t.unexpired] {
            let ends = data::all_log_end_offsets(&admin, path).await;
            registered.insert(
                path.table().to_string(),
                wait_registered(&c, &admin, path, &ends, &h).await,
            );
        }
        if round % check_every != 0 && round != rounds {
            continue;
        }
        // Maintenance runs after the registration: give the last round's a moment.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for path in [&t.log, &t.pk] {
            check_bounded(&h, &table_dir(&wh, path), registered[path.table()], round);
        }
        let reads = python::batch_timed(
            "paimon_read.py",
            &[
                read_command(&wh, &t.log, None),
                read_command(&wh, &t.log, Some(registered[t.log.table()])),
                read_command(&wh, &t.pk, None),
                read_command(&wh, &t.unexpired, None),
            ],
        );
        let rows = |i: usize| -> Vec<Value> {
            reads[i]
                .0
                .clone()
                .unwrap_or_else(|e| panic!("round {round}: read {i} failed: {e}"))
        };
        let expected = expected_log(round * LOG_ROWS_PER_ROUND);
        assert_eq!(
            sorted(business(&rows(0))),
            expected,
            "round {round}: log table"
        );
        assert_eq!(
            sorted(business(&rows(1))),
            expected,
            "round {round}: the registered snapshot of the log table"
        );
        let want: Vec<Value> = model
            .iter()
            .map(|(k, v)| json!({"id": k, "v": v}))
            .collect();
        assert_eq!(
            sorted(business(&rows(2))),
            want,
            "round {round}: primary-key table"
        );
        assert_eq!(
            sorted(business(&rows(3))),
            expected,
            "round {round}: unexpired table"
        );
        let (log_bytes, log_files) = metadata(&table_dir(&wh, &t.log));
        let (keep_bytes, keep_files) = metadata(&table_dir(&wh, &t.unexpired));
        curve.push(json!({
            "round": round,
            "snapshots": snapshot_ids(&table_dir(&wh, &t.log)).len(),
            "metadata_bytes": log_bytes,
            "metadata_files": log_files,
            "read_seconds": reads[0].1,
            "unexpired_snapshots": snapshot_ids(&table_dir(&wh, &t.unexpired)).len(),
            "unexpired_metadata_bytes": keep_bytes,
            "unexpired_metadata_files": keep_files,
            "unexpired_read_seconds": reads[3].1,
        }));
    }
    println!("maintenance curve (paimon): {}", json!(curve));

    // Time travel: every retained snapshot of the log table reads exactly the rows it held;
    // an expired one fails.
    let dir = table_dir(&wh, &t.log);
    let retained = snapshot_ids(&dir);
    let mut commands: Vec<Vec<String>> = retained
        .iter()
        .map(|s| read_command(&wh, &t.log, Some(*s)))
        .collect();
    commands.push(read_command(&wh, &t.log, Some(1)));
    let reads = python::batch("paimon_read.py", &commands);
    for (s, read) in retained.iter().zip(&reads) {
        let rows = read
            .clone()
            .unwrap_or_else(|e| panic!("retained snapshot {s} cannot be read: {e}"));
        let snapshot = paimon::snapshot(&wh, "fluss", t.log.table(), Some(*s));
        let total = snapshot["total_record_count"].as_u64().unwrap() as usize;
        assert_eq!(sorted(business(&rows)), expected_log(total), "snapshot {s}");
    }
    assert!(
        reads.last().unwrap().is_err(),
        "expired snapshot 1 can still be read"
    );

    // Java Paimon agrees with pypaimon on the expired tables.
    let java = paimon::java_read(&wh, "fluss", t.pk.table(), &["id", "v"]);
    let want: Vec<Value> = model
        .iter()
        .map(|(k, v)| json!({"id": k, "v": v}))
        .collect();
    let mut got: Vec<Value> = java["rows"].as_array().unwrap().clone();
    got.sort_by_key(|v| v["id"].as_i64().unwrap());
    assert_eq!(got, want, "Java Paimon, primary-key table");
    assert_eq!(
        java["snapshot"].as_i64(),
        snapshot_ids(&table_dir(&wh, &t.pk)).last().copied()
    );

    // Without expiry the same rounds pile up: a snapshot per round and far more metadata.
    let unexpired = snapshot_ids(&table_dir(&wh, &t.unexpired));
    assert!(unexpired.len() >= rounds, "{unexpired:?}");
    let (log_bytes, _) = metadata(&table_dir(&wh, &t.log));
    let (keep_bytes, _) = metadata(&table_dir(&wh, &t.unexpired));
    assert!(
        keep_bytes > 2 * log_bytes,
        "metadata with expiry {log_bytes} B, without {keep_bytes} B"
    );
    let log = h.log();
    assert!(log.contains("table maintained"), "{log}");
    assert!(!log.contains("table maintenance failed"), "{log}");
}
