//! End-to-end check that the tables this plugin writes are real Paimon tables: the plugin's
//! native build writes tables into a local warehouse through the SDK's `LocalStorage`, the
//! way the host drives it (create table, writers per bucket, commit per round, an empty
//! round), then pypaimon (an independent Paimon implementation) reads every snapshot back.
//!
//! Needs the Python venv: run `scripts/setup-python.sh` first (the test fails without it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Int64Array, RecordBatch,
    StringArray, Time32SecondArray, TimestampMicrosecondArray, TimestampMillisecondArray,
};
use arrow_schema::{Field, Schema};
use fluss_lake_guest_sdk::datatype::FlussType;
use fluss_lake_guest_sdk::ipc::make_row_batch;
use fluss_lake_guest_sdk::storage::{LocalStorage, Storage};
use fluss_lake_guest_sdk::testing::{log_table, writer_context};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_paimon::binary_row::Value;
use fluss_lake_paimon::bucket::bucket_of;
use fluss_lake_paimon::catalog::{LAYOUT, create_table_if_missing, validate_table};
use fluss_lake_paimon::committer::{PaimonCommitter, to_committable};
use fluss_lake_paimon::types::PaimonType;
use fluss_lake_paimon::writer::PaimonWriter;
use serde_json::{Value as Json, json};

use crate::common::{cmd, python, read_many, scratch_warehouse};

const COLUMNS: &[(&str, &str, bool)] = &[
    ("id", "INT", false),
    ("big", "BIGINT", true),
    ("name", "STRING", true),
    ("score", "DOUBLE", true),
    ("flag", "BOOLEAN", true),
    ("ts", "TIMESTAMP(6)", true),
    ("day", "DATE", true),
    ("amount", "DECIMAL(10, 2)", true),
    ("ltz", "TIMESTAMP_LTZ(3)", true),
    ("tiny", "TINYINT", true),
    ("small", "SMALLINT", true),
    ("f", "FLOAT", true),
    ("t", "TIME(0)", true),
    ("bin", "BYTES", true),
    ("code", "CHAR(3)", true),
    ("fixed", "BINARY(2)", true),
];

/// Whether row `id` has nulls in its nullable columns.
fn nulls(id: i32) -> bool {
    id % 5 == 4
}

fn name_of(id: i32) -> String {
    if id % 3 == 0 {
        format!("a fairly long name, number {id} ✓")
    } else {
        format!("n{id}")
    }
}

/// A Fluss-typed Arrow batch (the types fluss-rs sends) of the given ids.
fn batch(ids: &[i32]) -> RecordBatch {
    let fields: Vec<Field> = COLUMNS
        .iter()
        .map(|(n, t, nullable)| {
            Field::new(*n, FlussType::parse(t).unwrap().arrow_type(), *nullable)
        })
        .collect();
    let opt = |id: i32| !nulls(id);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(ids.to_vec())),
        Arc::new(Int64Array::from_iter(
            ids.iter()
                .map(|&i| opt(i).then_some(i as i64 * 1_000_000_007)),
        )),
        Arc::new(StringArray::from_iter(
            ids.iter().map(|&i| opt(i).then(|| name_of(i))),
        )),
        Arc::new(Float64Array::from_iter(
            ids.iter().map(|&i| opt(i).then_some(i as f64 * 1.5)),
        )),
        Arc::new(BooleanArray::from_iter(
            ids.iter().map(|&i| opt(i).then_some(i % 2 == 0)),
        )),
        Arc::new(TimestampMicrosecondArray::from_iter(ids.iter().map(|&i| {
            opt(i).then_some(1_700_000_000_000_000 + i as i64 * 1_234_567)
        }))),
        Arc::new(Date32Array::from_iter(
            ids.iter().map(|&i| opt(i).then_some(19723 + i)),
        )),
        Arc::new(
            Decimal128Array::from_iter(
                ids.iter()
                    .map(|&i| opt(i).then_some(i as i128 * 12345 - 500_000)),
            )
            .with_precision_and_scale(10, 2)
            .unwrap(),
        ),
        Arc::new(
            TimestampMillisecondArray::from_iter(
                ids.iter()
                    .map(|&i| opt(i).then_some(1_700_000_000_000 + i as i64 * 1000)),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(Int8Array::from_iter(
            ids.iter().map(|&i| opt(i).then_some((i % 100) as i8 - 50)),
        )),
        Arc::new(Int16Array::from_iter(
            ids.iter().map(|&i| opt(i).then_some(i as i16 * 3)),
        )),
        Arc::new(Float32Array::from_iter(
            ids.iter().map(|&i| opt(i).then_some(i as f32 * 0.25)),
        )),
        Arc::new(Time32SecondArray::from_iter(
            ids.iter().map(|&i| opt(i).then_some(i * 61 % 86_400)),
        )),
        Arc::new(BinaryArray::from_iter(
            ids.iter()
                .map(|&i| opt(i).then(|| vec![i as u8, (i >> 8) as u8, 0xff])),
        )),
        Arc::new(StringArray::from_iter(
            ids.iter()
                .map(|&i| opt(i).then(|| format!("{:03}", i % 1000))),
        )),
        Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                ids.iter().map(|&i| opt(i).then(|| vec![0xab, i as u8])),
                2,
            )
            .unwrap(),
        ),
    ];
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

/// The canonical row pypaimon should return for `id` (see tests/python/paimon_read.py).
fn expected_row(id: i32, system: Option<(i32, i64, i64)>) -> Json {
    let n = nulls(id);
    let v = |x: Json| if n { Json::Null } else { x };
    let amount = i64::from(id) * 12345 - 500_000;
    let amount = format!(
        "{}{}.{:02}",
        if amount < 0 { "-" } else { "" },
        amount.abs() / 100,
        amount.abs() % 100
    );
    let mut row = json!({
        "id": id,
        "big": v(json!(id as i64 * 1_000_000_007)),
        "name": v(json!(name_of(id))),
        "score": v(json!(id as f64 * 1.5)),
        "flag": v(json!(id % 2 == 0)),
        "ts": v(json!(1_700_000_000_000_000 + id as i64 * 1_234_567)),
        "day": v(json!(19723 + id)),
        "amount": v(json!(amount)),
        "ltz": v(json!((1_700_000_000_000 + id as i64 * 1000) * 1000)),
        "tiny": v(json!((id % 100) - 50)),
        "small": v(json!(id * 3)),
        "f": v(json!(id as f64 * 0.25)),
        "t": v(json!((id * 61 % 86_400) as i64 * 1000)),
        "bin": v(json!(format!("{:02x}{:02x}ff", id as u8, (id >> 8) as u8))),
        "code": v(json!(format!("{:03}", id % 1000))),
        "fixed": v(json!(format!("ab{:02x}", id as u8))),
    });
    if let Some((bucket, offset, ts)) = system {
        let o = row.as_object_mut().unwrap();
        o.insert("__bucket".into(), json!(bucket));
        o.insert("__offset".into(), json!(offset));
        o.insert("__timestamp".into(), json!(ts * 1000));
    }
    row
}

fn sorted(mut rows: Vec<Json>) -> Vec<Json> {
    rows.sort_by_key(|r| r["id"].as_i64());
    rows
}

/// Drives one table like the host: rounds of per-bucket writers, then a commit.
struct Harness {
    warehouse: PathBuf,
    table: TableInfo,
    storage: LocalStorage,
    config: Vec<(&'static str, &'static str)>,
    /// Next log offset per Fluss bucket.
    offsets: BTreeMap<i32, i64>,
    /// Expected rows after each snapshot (index = snapshot id - 1).
    snapshots: Vec<Vec<Json>>,
    rows: Vec<Json>,
    system_columns: bool,
}

const COMMIT_TS: i64 = 1_750_000_000_123;

impl Harness {
    fn new(
        warehouse: &Path,
        table: TableInfo,
        config: Vec<(&'static str, &'static str)>,
    ) -> Harness {
        let location = LAYOUT.location(&table).unwrap();
        assert_eq!(location, format!("fluss.db/{}", table.path.table));
        let storage = LocalStorage::new(warehouse.join(&location));
        let cfg: Vec<(String, String)> = config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(create_table_if_missing(&storage, &table, &cfg).unwrap());
        assert!(!create_table_if_missing(&storage, &table, &cfg).unwrap());
        validate_table(&storage, &table).unwrap();
        Harness {
            warehouse: warehouse.to_path_buf(),
            table,
            storage,
            config,
            offsets: BTreeMap::new(),
            snapshots: Vec::new(),
            rows: Vec::new(),
            system_columns: true,
        }
    }

    /// Writes `ids_by_bucket` (Fluss bucket → rows, in two batches each) and commits.
    fn round(&mut self, ids_by_bucket: &BTreeMap<i32, Vec<i32>>) -> i64 {
        let mut results = Vec::new();
        for (&bucket, ids) in ids_by_bucket {
            let ctx = writer_context(&self.table, bucket, None, &self.config);
            let mut w = PaimonWriter::open(&ctx, &self.storage).unwrap();
            let (a, b) = ids.split_at(ids.len() / 2);
            for part in [a, b] {
                if part.is_empty() {
                    continue;
                }
                let offset = self.offsets.entry(bucket).or_insert(0);
                w.write(make_row_batch(&batch(part), *offset, COMMIT_TS).unwrap())
                    .unwrap();
                for (k, &id) in part.iter().enumerate() {
                    let system =
                        self.system_columns
                            .then_some((bucket, *offset + k as i64, COMMIT_TS));
                    self.rows.push(expected_row(id, system));
                }
                *offset += part.len() as i64;
            }
            let r = w.complete().unwrap();
            assert_eq!(r.record_count, ids.len() as u64);
            results.push(r.payload);
        }
        let committable = to_committable(&results).unwrap();
        let mut committer = PaimonCommitter::new(&self.storage, vec![]);
        let round = self.snapshots.len() + 1;
        let res = committer
            .commit(
                &committable,
                &[("fluss-offsets".to_string(), self.offsets_path(round))],
                (round > 1).then_some(round as i64 - 1),
            )
            .unwrap();
        assert_eq!(res.snapshot_id, round as i64);
        assert_eq!(res.stats.record_count, Some(self.rows.len() as i64));
        let data_bytes: u64 = self
            .storage
            .list("")
            .unwrap()
            .iter()
            .filter(|m| m.path.ends_with(".parquet"))
            .map(|m| m.size)
            .sum();
        assert_eq!(res.stats.file_size, Some(data_bytes as i64));
        self.snapshots.push(sorted(self.rows.clone()));
        res.snapshot_id
    }

    fn offsets_path(&self, round: usize) -> String {
        format!(
            "/tmp/fluss/lake/fluss/{}-1/metadata/round-{round}.offsets",
            self.table.path.table
        )
    }

    fn verify(&self) {
        let t = self.table.path.table.as_str();
        let last = self.snapshots.last().unwrap();
        let mut commands = vec![cmd(&["rows", "fluss", t]), cmd(&["snapshot", "fluss", t])];
        for i in 0..self.snapshots.len() {
            let id = (i + 1).to_string();
            commands.push(cmd(&["rows", "fluss", t, "--snapshot", &id]));
            commands.push(cmd(&["snapshot", "fluss", t, "--snapshot", &id]));
        }
        // Lookups exercise bucket and stats pruning: a wrong bucket hash or wrong min/max
        // statistics silently drops rows here.
        let lookups: Vec<&Json> = last.iter().step_by(3).collect();
        for row in &lookups {
            commands.push(cmd(&["lookup", "fluss", t, "id", &row["id"].to_string()]));
        }
        let named = last.iter().find(|r| !r["name"].is_null()).unwrap();
        commands.push(cmd(&[
            "lookup",
            "fluss",
            t,
            "name",
            &named["name"].to_string(),
        ]));
        commands.push(cmd(&["plan", "fluss", t, "--filter", "id", "=", "100000"]));
        commands.push(cmd(&["plan", "fluss", t]));

        let mut out = read_many(&self.warehouse, &commands).into_iter();
        assert_eq!(sorted(out.next().unwrap()), *last, "latest rows of {t}");
        assert_eq!(out.next().unwrap()[0]["id"], json!(self.snapshots.len()));
        for (i, expected) in self.snapshots.iter().enumerate() {
            assert_eq!(
                sorted(out.next().unwrap()),
                *expected,
                "rows of {t} at snapshot {}",
                i + 1
            );
            let delta = expected.len()
                - if i == 0 {
                    0
                } else {
                    self.snapshots[i - 1].len()
                };
            assert_eq!(
                out.next().unwrap()[0],
                json!({
                    "id": i + 1,
                    "commit_user": "__fluss_lake_tiering",
                    "commit_identifier": i64::MAX,
                    "commit_kind": "APPEND",
                    "properties": {"fluss-offsets": self.offsets_path(i + 1)},
                    "total_record_count": expected.len(),
                    "delta_record_count": delta,
                }),
                "snapshot {} of {t}",
                i + 1
            );
        }
        for row in lookups {
            let want: Vec<Json> = last
                .iter()
                .filter(|r| r["id"] == row["id"])
                .cloned()
                .collect();
            assert_eq!(out.next().unwrap(), want, "lookup id={} in {t}", row["id"]);
        }
        assert!(out.next().unwrap().contains(named), "lookup by name in {t}");
        assert_eq!(
            out.next().unwrap()[0]["files"],
            json!(0),
            "min/max stats prune every file of {t}"
        );
        let plan = &out.next().unwrap()[0];
        assert_eq!(plan["rows"], json!(last.len()), "planned rows of {t}");
    }
}

fn bucket_of_id(id: i32, n: i32) -> i32 {
    let int = PaimonType::parse("INT NOT NULL").unwrap();
    bucket_of(&[(&int, Some(&Value::Int(id)))], n).unwrap()
}

fn by_bucket(
    ids: impl IntoIterator<Item = i32>,
    assign: impl Fn(i32) -> i32,
) -> BTreeMap<i32, Vec<i32>> {
    let mut m: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for id in ids {
        m.entry(assign(id)).or_default().push(id);
    }
    m
}

#[test]
fn pypaimon_reads_every_snapshot() {
    let python = python();
    let warehouse = scratch_warehouse("paimon");
    eprintln!(
        "warehouse: {} (python {})",
        warehouse.display(),
        python.display()
    );

    // Fixed-bucket table: Fluss bucket = Paimon bucket = Paimon's hash of the bucket key.
    let fixed = log_table("fluss", "fixed", COLUMNS, &["id"], 3, &[]);
    let mut h = Harness::new(&warehouse, fixed, vec![]);
    h.round(&by_bucket(0..30, |id| bucket_of_id(id, 3)));
    // Round 2 leaves bucket 1 idle.
    h.round(&by_bucket(
        (30..60).filter(|id| bucket_of_id(*id, 3) != 1),
        |id| bucket_of_id(id, 3),
    ));
    h.round(&BTreeMap::new());
    h.verify();

    // Bucket-unaware table (no bucket key): every Fluss bucket lands in Paimon bucket-0;
    // tiny target file size makes every batch its own file.
    let unaware = log_table("fluss", "unaware", COLUMNS, &[], 3, &[]);
    let mut h = Harness::new(&warehouse, unaware, vec![("target-file-size", "1b")]);
    h.round(&by_bucket(0..20, |id| id % 3));
    h.round(&BTreeMap::new());
    h.round(&by_bucket(20..41, |id| id % 3));
    h.verify();
    let files = h.storage.list("bucket-0").unwrap();
    assert!(files.len() >= 10, "rolled into many files: {}", files.len());
    assert!(h.storage.list("bucket-1").unwrap().is_empty());

    // Fluss's recovery query.
    let c = PaimonCommitter::new(&h.storage, vec![]);
    assert_eq!(
        c.get_missing_lake_snapshot(None)
            .unwrap()
            .unwrap()
            .snapshot_id,
        3
    );
    assert_eq!(
        c.get_missing_lake_snapshot(Some(2))
            .unwrap()
            .unwrap()
            .snapshot_id,
        3
    );
    assert!(c.get_missing_lake_snapshot(Some(3)).unwrap().is_none());

    std::fs::remove_dir_all(&warehouse).unwrap();
}

/// [`batch`] of `ids` with a `region` partition column.
fn batch_in_region(ids: &[i32], region: &str) -> RecordBatch {
    let b = batch(ids);
    let mut columns = b.columns().to_vec();
    columns.push(Arc::new(StringArray::from(vec![region; ids.len()])));
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("region", arrow_schema::DataType::Utf8, false));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

#[test]
fn pypaimon_reads_partitioned_tables_without_system_columns() {
    let _ = python();
    let warehouse = scratch_warehouse("paimon");
    let mut cols = COLUMNS.to_vec();
    cols.push(("region", "STRING", false));
    let table = log_table("fluss", "parted", &cols, &[], 2, &["region"]);
    let location = warehouse.join(LAYOUT.location(&table).unwrap());
    let storage = LocalStorage::new(&location);
    let cfg = vec![("create-system-columns".to_string(), "false".to_string())];
    assert!(create_table_if_missing(&storage, &table, &cfg).unwrap());
    let mut expected = Vec::new();
    let mut results = Vec::new();
    for (region, ids) in [("eu/west", 0..10), ("us", 10..15)] {
        for bucket in 0..2 {
            let ids: Vec<i32> = ids.clone().filter(|i| i % 2 == bucket).collect();
            let ctx = writer_context(&table, bucket, Some(region), &[]);
            let mut w = PaimonWriter::open(&ctx, &storage).unwrap();
            let b = batch_in_region(&ids, region);
            w.write(make_row_batch(&b, 0, COMMIT_TS).unwrap()).unwrap();
            results.push(w.complete().unwrap().payload);
            for id in ids {
                let mut row = expected_row(id, None);
                row.as_object_mut()
                    .unwrap()
                    .insert("region".into(), json!(region));
                expected.push(row);
            }
        }
    }
    // Bucket-unaware: both Fluss buckets of a partition write into its bucket-0.
    assert_eq!(storage.list("region=eu%2Fwest/bucket-0").unwrap().len(), 2);
    let mut c = PaimonCommitter::new(&storage, vec![]);
    c.commit(
        &to_committable(&results).unwrap(),
        &[("fluss-offsets".into(), "/o".into())],
        None,
    )
    .unwrap();
    let out = read_many(
        &warehouse,
        &[
            cmd(&["rows", "fluss", "parted"]),
            cmd(&["lookup", "fluss", "parted", "region", "\"eu/west\""]),
            cmd(&[
                "plan", "fluss", "parted", "--filter", "region", "=", "\"us\"",
            ]),
        ],
    );
    assert_eq!(sorted(out[0].clone()), sorted(expected.clone()));
    let eu: Vec<Json> = expected
        .iter()
        .filter(|r| r["region"] == "eu/west")
        .cloned()
        .collect();
    assert_eq!(sorted(out[1].clone()), sorted(eu));
    assert_eq!(
        out[2][0]["files"],
        json!(2),
        "partition pruning keeps only region=us files"
    );
    std::fs::remove_dir_all(&warehouse).unwrap();
}

/// A Fluss 1.0 table whose `bucket.num` went from 2 to 4: the older partition keeps its 2
/// buckets (the writer context says so), the newer has 4, and the Paimon table's `bucket`
/// option is the new count. Each partition's files carry its own `_TOTAL_BUCKETS`, so
/// pypaimon reads every row, and its bucket-pruned lookups find every key in both.
#[test]
fn pypaimon_reads_partitions_with_their_own_bucket_counts() {
    let _ = python();
    let warehouse = scratch_warehouse("paimon");
    let mut cols = COLUMNS.to_vec();
    cols.push(("region", "STRING", false));
    let table = log_table("fluss", "rescaled", &cols, &["id"], 4, &["region"]);
    let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&table).unwrap()));
    assert!(create_table_if_missing(&storage, &table, &[]).unwrap());
    validate_table(&storage, &table).unwrap();
    let mut expected = Vec::new();
    let mut results = Vec::new();
    for (region, buckets, ids) in [("old", 2, 0..40), ("new", 4, 40..80)] {
        for (bucket, ids) in by_bucket(ids, |id| bucket_of_id(id, buckets)) {
            let mut ctx = writer_context(&table, bucket, Some(region), &[]);
            ctx.table.num_buckets = buckets;
            let mut w = PaimonWriter::open(&ctx, &storage).unwrap();
            let b = batch_in_region(&ids, region);
            w.write(make_row_batch(&b, 0, COMMIT_TS).unwrap()).unwrap();
            results.push(w.complete().unwrap().payload);
            for (offset, id) in ids.into_iter().enumerate() {
                let mut row = expected_row(id, Some((bucket, offset as i64, COMMIT_TS)));
                row.as_object_mut()
                    .unwrap()
                    .insert("region".into(), json!(region));
                expected.push(row);
            }
        }
        let dirs = storage.list(&format!("region={region}")).unwrap();
        let mut bucket_dirs: Vec<&str> = dirs
            .iter()
            .filter_map(|m| m.path.split('/').nth(1))
            .collect();
        bucket_dirs.sort();
        bucket_dirs.dedup();
        assert_eq!(bucket_dirs.len(), buckets as usize, "{bucket_dirs:?}");
    }
    // A bucket the partition does not have is refused, naming the count.
    let mut ctx = writer_context(&table, 3, Some("old"), &[]);
    ctx.table.num_buckets = 2;
    let err = PaimonWriter::open(&ctx, &storage).err().unwrap();
    assert!(err.message().contains("partition with 2 buckets"), "{err}");

    let mut c = PaimonCommitter::new(&storage, vec![]);
    c.commit(
        &to_committable(&results).unwrap(),
        &[("fluss-offsets".into(), "/o".into())],
        None,
    )
    .unwrap();
    let mut commands = vec![cmd(&["rows", "fluss", "rescaled"])];
    let probes = [1, 2, 3, 17, 38, 41, 42, 55, 79];
    for id in probes {
        commands.push(cmd(&["lookup", "fluss", "rescaled", "id", &id.to_string()]));
    }
    let out = read_many(&warehouse, &commands);
    assert_eq!(sorted(out[0].clone()), sorted(expected.clone()));
    for (id, found) in probes.iter().zip(&out[1..]) {
        let want: Vec<Json> = expected
            .iter()
            .filter(|r| r["id"] == json!(id))
            .cloned()
            .collect();
        assert_eq!(found, &want, "lookup of id {id}");
    }
    std::fs::remove_dir_all(&warehouse).unwrap();
}
