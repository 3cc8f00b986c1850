//! Cross-check against Fluss 0.9.1's Java Paimon plugin and Paimon 1.3.1 itself: both tables
//! are created by Fluss's own `PaimonLakeCatalog` (as the coordinator creates them; the
//! plugin's `create-table-if-missing` must produce the same schema and validation must accept
//! it); the plugin and `tests/java/PkCrossCheck.java` — which drives Paimon's
//! `MergeTreeWriter` exactly as Fluss's `MergeTreeWriter` does — write the same changelog
//! (composite string keys, a partition, updates, deletes, three rounds); Java Paimon then
//! decodes both tables' data and changelog file metadata (keys, key and value statistics,
//! sequence numbers, retraction counts, snapshot counters) and reads both back (batch reads of
//! every snapshot and streaming changelog reads), which must agree line for line.
//!
//! Needs a JDK and the Paimon jars `cluster/setup.sh` installs into
//! `target/fluss-dist` (scripts/test.sh installs both); fails, never skips, without them:
//! `cargo test -p fluss-lake-paimon --test java_paimon_crosscheck`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::{
    Decimal128Array, Float64Array, Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
use fluss_lake_guest_sdk::storage::LocalStorage;
use fluss_lake_guest_sdk::testing::{pk_table, writer_context};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_paimon::binary_row::Value;
use fluss_lake_paimon::bucket::bucket_of;
use fluss_lake_paimon::catalog::{LAYOUT, create_table_if_missing, validate_table};
use fluss_lake_paimon::committer::{PaimonCommitter, to_committable};
use fluss_lake_paimon::compact::{MAINTENANCE_COMMIT_USER, compact};
use fluss_lake_paimon::schema::load_latest_schema;
use fluss_lake_paimon::types::PaimonType;
use fluss_lake_paimon::writer::PaimonWriter;

use crate::common::{paimon_jars, root, uuid_like};

// The scenario, mirrored from PkCrossCheck.java.
const ROUNDS: i32 = 3;
const RECORDS: i32 = 60;
const BUCKETS: i32 = 2;
const CODES: [&str; 4] = ["a", "bb", "long-code-ü-xyz", "Z"];

fn region(r: i32, i: i32) -> &'static str {
    if (i / 3 + r) % 2 == 0 { "eu" } else { "us" }
}
fn id(r: i32, i: i32) -> i32 {
    (i * 7 + r * 3) % 11
}
fn code(r: i32, i: i32) -> &'static str {
    CODES[((i + 2 * r) % 4) as usize]
}
fn kind(r: i32, i: i32) -> ChangeType {
    match (i + r) % 6 {
        2 => ChangeType::UpdateBefore,
        3 | 5 => ChangeType::UpdateAfter,
        4 => ChangeType::Delete,
        _ => ChangeType::Insert,
    }
}
fn name(r: i32, i: i32) -> Option<String> {
    if i % 9 == 0 {
        None
    } else if i % 5 == 0 {
        Some(format!("a rather long name that stats truncate, {r}/{i}"))
    } else {
        Some(format!("n{}-{r}-{i}", id(r, i)))
    }
}
fn score(r: i32, i: i32) -> f64 {
    i as f64 * 0.5 - r as f64
}
fn amount_unscaled(r: i32, i: i32) -> i128 {
    (i as i128 * 1_234_567_891_234 - r as i128 * 99) * if i % 2 == 0 { 1 } else { -1 }
}
fn ts_micros(r: i32, i: i32) -> i64 {
    1_700_000_000_000_000 + i as i64 * 1_000_001 + r as i64
}
fn commit_millis(i: i32) -> i64 {
    1_750_000_000_000 + i as i64
}

fn bucket(r: i32, i: i32) -> i32 {
    let int = PaimonType::parse("INT NOT NULL").unwrap();
    let string = PaimonType::parse("STRING NOT NULL").unwrap();
    bucket_of(
        &[
            (&int, Some(&Value::Int(id(r, i)))),
            (&string, Some(&Value::String(code(r, i).into()))),
        ],
        BUCKETS,
    )
    .unwrap()
}

fn batch(r: i32, records: &[i32]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("region", DataType::Utf8, false),
        Field::new("id", DataType::Int32, false),
        Field::new("code", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
        Field::new("amount", DataType::Decimal128(20, 4), true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
    ]));
    let it = || records.iter().copied();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter_values(it().map(|i| region(r, i)))),
            Arc::new(Int32Array::from_iter_values(it().map(|i| id(r, i)))),
            Arc::new(StringArray::from_iter_values(it().map(|i| code(r, i)))),
            Arc::new(StringArray::from_iter(it().map(|i| name(r, i)))),
            Arc::new(Float64Array::from_iter_values(it().map(|i| score(r, i)))),
            Arc::new(
                Decimal128Array::from_iter_values(it().map(|i| amount_unscaled(r, i)))
                    .with_precision_and_scale(20, 4)
                    .unwrap(),
            ),
            Arc::new(TimestampMicrosecondArray::from_iter_values(
                it().map(|i| ts_micros(r, i)),
            )),
        ],
    )
    .unwrap()
}

fn table_info(name: &str) -> TableInfo {
    pk_table(
        "fluss",
        name,
        &[
            ("region", "STRING", false),
            ("id", "INT", false),
            ("code", "STRING", false),
            ("name", "STRING", true),
            ("score", "DOUBLE", true),
            ("amount", "DECIMAL(20, 4)", true),
            ("ts", "TIMESTAMP(6)", true),
        ],
        &["region", "id", "code"],
        BUCKETS,
        &["region"],
    )
}

/// The plugin creates the same schema as Fluss's catalog did (but for the creation time), and
/// accepts the one Fluss created.
fn check_schema(warehouse: &Path) {
    let schema = |table: &str| -> serde_json::Value {
        let path = warehouse.join(format!("fluss.db/{table}/schema/schema-0"));
        let mut v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("timeMillis");
        v
    };
    let ours = table_info("ours_pk");
    let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&ours).unwrap()));
    assert!(create_table_if_missing(&storage, &ours, &[]).unwrap());
    assert_eq!(schema("ours_pk"), schema("rust_pk"));
    let theirs = table_info("rust_pk");
    let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&theirs).unwrap()));
    validate_table(&storage, &theirs).unwrap();
    assert!(!create_table_if_missing(&storage, &theirs, &[]).unwrap());
}

/// Writes the scenario with the plugin, as the host would: per round, one writer per
/// (partition, bucket) fed that bucket's records in log order, then one commit.
fn write_with_plugin(warehouse: &Path) {
    let table = table_info("rust_pk");
    let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&table).unwrap()));
    let mut offsets: BTreeMap<(&str, i32), i64> = BTreeMap::new();
    for r in 0..ROUNDS {
        let mut logs: BTreeMap<(&str, i32), Vec<i32>> = BTreeMap::new();
        for i in 0..RECORDS {
            logs.entry((region(r, i), bucket(r, i)))
                .or_default()
                .push(i);
        }
        let mut results = Vec::new();
        for ((part, b), records) in logs {
            let offset = offsets.entry((part, b)).or_insert(0);
            let kinds: Vec<ChangeType> = records.iter().map(|&i| kind(r, i)).collect();
            let mut rb = make_changelog_batch(&batch(r, &records), &kinds, *offset, 0).unwrap();
            rb.timestamps = records.iter().map(|&i| commit_millis(i)).collect();
            *offset += records.len() as i64;
            let ctx = writer_context(&table, b, Some(part), &[]);
            let mut w = PaimonWriter::open(&ctx, &storage).unwrap();
            w.write(rb).unwrap();
            results.push(w.complete().unwrap().payload);
        }
        let properties = [("fluss-offsets".to_string(), format!("/o/{r}"))];
        let mut c = PaimonCommitter::new(&storage, vec![]);
        let base = fluss_lake_guest_sdk::testing::tiered_base(&c);
        c.commit(&to_committable(&results).unwrap(), &properties, base)
            .unwrap();
    }
}

/// Compacts the plugin's table as a maintenance call does, with a trigger low enough for
/// three rounds (three level-0 runs per bucket) to be compacted.
fn compact_with_plugin(warehouse: &Path) {
    let table = table_info("rust_pk");
    let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&table).unwrap()));
    let schema = load_latest_schema(&storage).unwrap().unwrap();
    let config = vec![(
        "num-sorted-run.compaction-trigger".to_string(),
        "2".to_string(),
    )];
    let now = fluss_lake_guest_sdk::clock::now_millis;
    let done = compact(&storage, &config, &schema, &now, i64::MAX).unwrap();
    assert_eq!(done.committed_snapshots, [ROUNDS as i64 + 1], "{done:?}");
    assert!(done.files_compacted > 0, "{done:?}");
}

/// The first line where `ours` and `expected` differ, with the block it belongs to.
fn first_difference(ours: &str, expected: &str) -> Option<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), expected.lines().collect());
    let at = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
    let block = |lines: &[&str]| {
        lines[..at.min(lines.len())]
            .iter()
            .rev()
            .find(|l| !l.starts_with("  "))
            .map(|l| l.to_string())
    };
    Some(format!(
        "line {at} (in {:?} / {:?}): {:?} instead of {:?}",
        block(&a),
        block(&b),
        a.get(at),
        b.get(at)
    ))
}

/// The record count of the compaction snapshot.
fn compacted_total(warehouse: &Path) -> i64 {
    let table = table_info("rust_pk");
    let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&table).unwrap()));
    fluss_lake_paimon::snapshot::read_snapshot(&storage, ROUNDS as i64 + 1)
        .unwrap()
        .unwrap()
        .total_record_count
        .unwrap()
}

fn run(command: &mut Command) -> String {
    let out = command.output().expect("running the JDK");
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]

fn java_paimon_writes_and_reads_the_same_tables() {
    let scratch = root()
        .join("target/test-warehouses")
        .join(format!("pk-crosscheck-{}", uuid_like()));
    let classes = scratch.join("classes");
    let warehouse = scratch.join("warehouse");
    std::fs::create_dir_all(&warehouse).unwrap();
    let source: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/PkCrossCheck.java");
    let jars = paimon_jars();
    run(Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(&classes)
        .args(["-cp", &jars])
        .arg(&source));
    let classpath = format!("{}:{jars}", classes.display());
    let java = |args: &[&str]| {
        run(Command::new("java")
            .args(["-cp", &classpath, "PkCrossCheck"])
            .args(args)
            .env(
                "JAVA_TOOL_OPTIONS",
                format!("-Djava.io.tmpdir={}", scratch.display()),
            ))
    };
    let wh = warehouse.to_str().unwrap();

    java(&["create", wh, "fluss", "rust_pk"]);
    java(&["create", wh, "fluss", "java_pk"]);
    check_schema(&warehouse);
    write_with_plugin(&warehouse);
    java(&["write", wh, "fluss", "java_pk", &ROUNDS.to_string()]);

    let ours = java(&["dump", wh, "fluss", "rust_pk"]);
    let theirs = java(&["dump", wh, "fluss", "java_pk"]);
    assert!(ours.contains("CHANGELOG kind=ADD"), "{ours}");
    assert_eq!(ours, theirs, "file metadata differs from Java Paimon's");

    let ours = java(&["read", wh, "fluss", "rust_pk"]);
    let theirs = java(&["read", wh, "fluss", "java_pk"]);
    assert!(ours.contains("changelog of snapshot 3"), "{ours}");
    assert_eq!(ours, theirs, "Java Paimon reads differ");

    // The plugin compacts its table; Java Paimon reads the compaction snapshot exactly as
    // the last round's (Java's own table, never compacted, is the model) and every earlier
    // snapshot as before.
    compact_with_plugin(&warehouse);
    let dump = java(&["dump", wh, "fluss", "rust_pk"]);
    assert!(
        dump.contains(&format!(
            "snapshot 4 kind=COMPACT total={} ",
            compacted_total(&warehouse)
        )) && dump.contains(&format!("user={MAINTENANCE_COMMIT_USER}")),
        "{dump}"
    );
    assert!(dump.contains("source=COMPACT"), "{dump}");
    let compacted = java(&["read", wh, "fluss", "rust_pk"]);
    let (history, compaction) = compacted
        .split_once("batch read at snapshot 4 ")
        .expect("a batch read of the compaction snapshot");
    if let Some(diff) = first_difference(history, &theirs) {
        panic!("Java Paimon reads the snapshots before the compaction differently: {diff}");
    }
    // A bucket whose files are all on the highest level without retractions is read raw,
    // without the merge that reports each row's kind: Java reports those rows as +I.
    let rows = |block: &str| -> Vec<String> {
        let mut rows: Vec<String> = block
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .map(|l| l.replacen("  +U ", "  +I ", 1))
            .collect();
        rows.sort();
        rows
    };
    let last_round = theirs
        .split_once("batch read at snapshot 3 ")
        .expect("a batch read of the last round")
        .1;
    assert_eq!(
        rows(&format!("\n{}", compaction.split_once('\n').unwrap().1)),
        rows(&format!("\n{}", last_round.split_once('\n').unwrap().1)),
        "Java Paimon reads the compaction snapshot differently from the last round's"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}
