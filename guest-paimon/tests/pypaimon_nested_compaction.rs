//! Compaction of tables with nested columns (the SDK's shared `NESTED_COLUMNS`: ARRAY, MAP and
//! ROW nested in each other, NOT NULL inside and out, nulls and empty collections at every
//! level), checked by independent readers. Compaction reads nested Parquet back, merges it and
//! writes it again: nothing else in the plugin does, and tiering's own tests never see it.
//!
//! * An append table with fixed buckets, tiered in small files, compacted, tiered again:
//!   pypaimon and Java Paimon read every row exactly, and the snapshots of and before the
//!   compaction still read as they did.
//! * A primary-key table whose keys are updated with other nested values and deleted, compacted
//!   twice (the second time merging the first compaction's output): pypaimon and Java Paimon
//!   read each live key's newest value exactly.
//!
//! Both also check what only this plugin decides: the compacted files' Parquet schema (Paimon's
//! nested field ids, element / key_value names, repetitions) is the tiering writer's, and their
//! `_VALUE_STATS` keep Paimon's rule that nested columns have no statistics (dense store: the
//! atomic columns only), with null counts and bounds those of the file's rows.
//!
//! Needs the Python venv (`scripts/setup-python.sh`), a JDK and the Paimon jars in
//! `target/fluss-dist` (`cluster/setup.sh`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{Field, Schema};
use fluss_lake_guest_sdk::datatype::ColumnType;
use fluss_lake_guest_sdk::deps::parquet::file::reader::{FileReader, SerializedFileReader};
use fluss_lake_guest_sdk::deps::parquet::schema::types::Type as ParquetType;
use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch, make_row_batch};
use fluss_lake_guest_sdk::parquet_read::read_all;
use fluss_lake_guest_sdk::storage::LocalStorage;
use fluss_lake_guest_sdk::testing::{
    ColumnSpec, NESTED_COLUMNS, json_array, log_table, nested_row, pk_table, writer_context,
};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_paimon::binary_row::{BinaryRowReader, Value};
use fluss_lake_paimon::bucket::bucket_of;
use fluss_lake_paimon::catalog::{LAYOUT, create_table_if_missing};
use fluss_lake_paimon::committer::{PaimonCommitter, to_committable};
use fluss_lake_paimon::compact::MAINTENANCE_COMMIT_USER;
use fluss_lake_paimon::compact::live_files::live_entries;
use fluss_lake_paimon::manifest::{DataFileMeta, FileSource};
use fluss_lake_paimon::schema::load_latest_schema;
use fluss_lake_paimon::snapshot::{latest_snapshot_id, read_snapshot};
use fluss_lake_paimon::table::{Partition, bucket_dir};
use fluss_lake_paimon::types::PaimonType;
use fluss_lake_paimon::writer::PaimonWriter;
use serde_json::{Value as Json, json};

use crate::common::{cmd, compact_now, java_paimon_read, python, read_many, scratch_warehouse};

const COMMIT_TS: i64 = 1_750_000_000_123;
const BUCKETS: i32 = 2;
/// The atomic columns: the only ones with value statistics.
const STATS_COLUMNS: [&str; 4] = ["id", "__bucket", "__offset", "__timestamp"];
/// The business columns, as Java Paimon is asked for them.
const COLUMN_NAMES: [&str; 6] = ["id", "tags", "nums", "attrs", "point", "events"];

/// [`NESTED_COLUMNS`] with `id` NOT NULL (a primary key's column).
fn pk_columns() -> Vec<ColumnSpec<'static>> {
    let mut columns = NESTED_COLUMNS.to_vec();
    columns[0].2 = false;
    columns
}

/// The rows (canonical JSON, business columns) as the host hands them over.
fn batch_of(columns: &[ColumnSpec<'_>], rows: &[Json]) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, ty, nullable)| {
            Field::new(
                *name,
                ColumnType::parse(ty).unwrap().arrow_type(),
                *nullable,
            )
        })
        .collect();
    let arrays = fields
        .iter()
        .map(|f| {
            let values: Vec<Json> = rows.iter().map(|r| r[f.name()].clone()).collect();
            json_array(&values, f.data_type())
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// Paimon's bucket of an `id` (bucket key `id`).
fn bucket_of_id(id: i64) -> i32 {
    let int = PaimonType::parse("INT NOT NULL").unwrap();
    bucket_of(&[(&int, Some(&Value::Int(id as i32)))], BUCKETS).unwrap()
}

/// `row` with the system columns the readers add.
fn with_system(mut row: Json, bucket: i32, offset: i64) -> Json {
    let o = row.as_object_mut().unwrap();
    o.insert("__bucket".into(), json!(bucket));
    o.insert("__offset".into(), json!(offset));
    o.insert("__timestamp".into(), json!(COMMIT_TS * 1000));
    row
}

fn sorted(mut rows: Vec<Json>) -> Vec<Json> {
    rows.sort_by_key(|r| r["id"].as_i64());
    rows
}

/// `rows` without the system columns, as Java Paimon is asked for them.
fn business(rows: &[Json]) -> Vec<Json> {
    let rows = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.as_object_mut()
                .unwrap()
                .retain(|k, _| COLUMN_NAMES.contains(&k.as_str()));
            r
        })
        .collect();
    sorted(rows)
}

/// Panics at the first row (by id) where `got` and `want` differ, naming both.
fn assert_rows(got: Vec<Json>, want: &[Json], what: &str) {
    let (got, want) = (sorted(got), sorted(want.to_vec()));
    if let Some((g, w)) = got.iter().zip(&want).find(|(g, w)| g != w) {
        panic!("{what}: the first row that differs\n got {g}\nwant {w}");
    }
    assert_eq!(got.len(), want.len(), "{what}: rows");
}

/// A table in a scratch warehouse, tiered as the host drives it.
struct Lake {
    warehouse: PathBuf,
    table: TableInfo,
    storage: LocalStorage,
    offsets: BTreeMap<i32, i64>,
    snapshot: i64,
}

impl Lake {
    fn new(table: TableInfo) -> Lake {
        let _ = python();
        let warehouse = scratch_warehouse("paimon-nested-compaction");
        let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&table).unwrap()));
        assert!(create_table_if_missing(&storage, &table, &[]).unwrap());
        Lake {
            warehouse,
            table,
            storage,
            offsets: BTreeMap::new(),
            snapshot: 0,
        }
    }

    fn name(&self) -> &str {
        &self.table.path.table
    }

    /// Tiers one round: per bucket, its `changes` (rows of the business columns; change types
    /// for a primary-key table) in log order, then one commit. Returns, per change, its
    /// bucket and offset.
    fn round(&mut self, changes: &[(Option<ChangeType>, Json)]) -> Vec<(i32, i64)> {
        let columns: Vec<ColumnSpec<'_>> = self
            .table
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.data_type.as_str(), c.nullable))
            .collect();
        let mut placed = vec![(0, 0); changes.len()];
        let mut payloads = Vec::new();
        for b in 0..BUCKETS {
            let mine: Vec<usize> = (0..changes.len())
                .filter(|&i| bucket_of_id(changes[i].1["id"].as_i64().unwrap()) == b)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let rows: Vec<Json> = mine.iter().map(|&i| changes[i].1.clone()).collect();
            let batch = batch_of(&columns, &rows);
            let offset = self.offsets.entry(b).or_insert(0);
            let rb = match changes[mine[0]].0 {
                None => make_row_batch(&batch, *offset, COMMIT_TS).unwrap(),
                Some(_) => {
                    let kinds: Vec<ChangeType> =
                        mine.iter().map(|&i| changes[i].0.unwrap()).collect();
                    make_changelog_batch(&batch, &kinds, *offset, COMMIT_TS).unwrap()
                }
            };
            for (k, &i) in mine.iter().enumerate() {
                placed[i] = (b, *offset + k as i64);
            }
            *offset += mine.len() as i64;
            let ctx = writer_context(&self.table, b, None, &[]);
            let mut w = PaimonWriter::open(&ctx, &self.storage).unwrap();
            w.write(rb).unwrap();
            payloads.push(w.complete().unwrap().payload);
        }
        let mut committer = PaimonCommitter::new(&self.storage, vec![]);
        let base = (self.snapshot > 0).then_some(self.snapshot);
        let properties = [(
            "fluss-offsets".to_string(),
            format!("/offsets/{}", self.snapshot + 1),
        )];
        self.snapshot = committer
            .commit(&to_committable(&payloads).unwrap(), &properties, base)
            .unwrap()
            .snapshot_id;
        placed
    }

    /// Compacts as a maintenance call does; the `COMPACT` snapshot's id.
    fn compact(&mut self, config: &[(&str, &str)]) -> i64 {
        let done = compact_now(&self.storage, config);
        assert_eq!(done.committed_snapshots, [self.snapshot + 1], "{done:?}");
        assert!(done.files_compacted > 0, "{done:?}");
        self.snapshot += 1;
        let s = read_snapshot(&self.storage, self.snapshot)
            .unwrap()
            .unwrap();
        assert_eq!(
            (s.commit_kind.as_str(), s.commit_user.as_str()),
            ("COMPACT", MAINTENANCE_COMMIT_USER)
        );
        self.snapshot
    }

    /// The live data files of the latest snapshot, with their paths relative to the table.
    fn live_files(&self) -> Vec<(String, DataFileMeta)> {
        let schema = load_latest_schema(&self.storage).unwrap().unwrap();
        let id = latest_snapshot_id(&self.storage).unwrap().unwrap();
        let snapshot = read_snapshot(&self.storage, id).unwrap().unwrap();
        live_entries(&self.storage, &snapshot, None)
            .unwrap()
            .into_iter()
            .map(|e| {
                let partition = Partition::from_row(&schema, &e.partition).unwrap();
                let dir = bucket_dir(&partition, e.bucket);
                (format!("{dir}/{}", e.file.file_name), e.file)
            })
            .collect()
    }

    fn parquet_schema(&self, path: &str) -> ParquetType {
        let file = std::fs::File::open(self.storage_path(path)).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .root_schema()
            .clone()
    }

    fn storage_path(&self, path: &str) -> PathBuf {
        self.warehouse
            .join(LAYOUT.location(&self.table).unwrap())
            .join(path)
    }

    /// Checks the files compaction wrote against the tiering writer's `tiered` file: the same
    /// Parquet schema (field ids, names, repetitions, types at every level), and
    /// `_VALUE_STATS` of the atomic columns only, whose null counts and `id` / `__offset`
    /// bounds are those of the file's rows. Returns how many compacted files were checked.
    fn check_compacted_files(&self, tiered: &str) -> usize {
        let want_schema = self.parquet_schema(tiered);
        let mut checked = 0;
        for (path, meta) in self.live_files() {
            if meta.file_source != Some(FileSource::Compact as i32) {
                continue;
            }
            checked += 1;
            assert_eq!(
                self.parquet_schema(&path),
                want_schema,
                "{path}: the Parquet schema of a compacted file is the tiering writer's"
            );
            let cols: Vec<&str> = meta
                .value_stats_cols
                .as_deref()
                .unwrap_or_else(|| panic!("{path}: nested columns are left out of value stats"))
                .iter()
                .map(String::as_str)
                .collect();
            assert_eq!(cols, STATS_COLUMNS, "{path}: value_stats_cols");

            let batches = read_all(&self.storage, &path).unwrap();
            let column = |name: &str| -> Vec<Option<i64>> {
                let mut values = Vec::new();
                for b in &batches {
                    let c = b.column_by_name(name).unwrap();
                    for i in 0..c.len() {
                        values.push(c.is_valid(i).then(|| match c.data_type() {
                            arrow_schema::DataType::Int32 => {
                                c.as_primitive::<Int32Type>().value(i) as i64
                            }
                            _ => c.as_primitive::<Int64Type>().value(i),
                        }));
                    }
                }
                values
            };
            let nulls: Vec<i64> = STATS_COLUMNS
                .iter()
                .map(|c| {
                    let mut n = 0;
                    for b in &batches {
                        n += b.column_by_name(c).unwrap().null_count() as i64;
                    }
                    n
                })
                .collect();
            let stats = &meta.value_stats;
            assert_eq!(
                stats.null_counts,
                Some(nulls.into_iter().map(Some).collect()),
                "{path}: value null counts"
            );
            let min = BinaryRowReader::new(&stats.min_values).unwrap();
            let max = BinaryRowReader::new(&stats.max_values).unwrap();
            assert_eq!(min.arity(), STATS_COLUMNS.len(), "{path}");
            let int: fn(i64) -> Value = |v| Value::Int(v as i32);
            for (pos, name, ty, value) in [
                (0, "id", "INT", int),
                (2, "__offset", "BIGINT", Value::BigInt),
            ] {
                let ty = PaimonType::parse(ty).unwrap();
                let values: Vec<i64> = column(name).into_iter().flatten().collect();
                assert_eq!(
                    min.get(pos, &ty).unwrap(),
                    values.iter().min().map(|v| value(*v)),
                    "{path}: min {name}"
                );
                assert_eq!(
                    max.get(pos, &ty).unwrap(),
                    values.iter().max().map(|v| value(*v)),
                    "{path}: max {name}"
                );
            }
        }
        checked
    }

    /// A data file tiering wrote (before any compaction).
    fn a_tiered_file(&self) -> String {
        self.live_files()
            .into_iter()
            .find(|(_, m)| m.file_source == Some(FileSource::Append as i32))
            .map(|(p, _)| p)
            .expect("a file tiering wrote")
    }

    fn remove(self) {
        std::fs::remove_dir_all(&self.warehouse).unwrap();
    }
}

/// Ten rounds of 15 rows spread over two buckets; after six, each bucket holds six small files
/// and compaction (`compaction.min.file-num` 5) rewrites five of them; tiering goes on after
/// it. pypaimon reads the latest snapshot, the compaction's and the one before it exactly,
/// Java Paimon the latest.
#[test]
fn compacted_append_table_with_nested_columns_reads_back_exactly() {
    let mut lake = Lake::new(log_table(
        "fluss",
        "nested_append",
        &NESTED_COLUMNS,
        &["id"],
        BUCKETS,
        &[],
    ));
    let mut expected: Vec<Json> = Vec::new();
    let round = |lake: &mut Lake, r: i64, expected: &mut Vec<Json>| {
        let rows: Vec<Json> = (r * 15..r * 15 + 15).map(nested_row).collect();
        let changes: Vec<(Option<ChangeType>, Json)> =
            rows.iter().map(|row| (None, row.clone())).collect();
        let placed = lake.round(&changes);
        for (row, (b, o)) in rows.into_iter().zip(placed) {
            expected.push(with_system(row, b, o));
        }
    };
    for r in 0..6 {
        round(&mut lake, r, &mut expected);
    }
    let before = sorted(expected.clone());
    let before_id = lake.snapshot;
    let tiered = lake.a_tiered_file();
    let compacted = lake.compact(&[]);
    assert!(lake.check_compacted_files(&tiered) >= BUCKETS as usize);
    round(&mut lake, 6, &mut expected);
    let latest = sorted(expected);

    let t = lake.name().to_string();
    let mut out = read_many(
        &lake.warehouse,
        &[
            cmd(&["rows", "fluss", &t]),
            cmd(&["rows", "fluss", &t, "--snapshot", &compacted.to_string()]),
            cmd(&["rows", "fluss", &t, "--snapshot", &before_id.to_string()]),
        ],
    )
    .into_iter();
    assert_rows(out.next().unwrap(), &latest, "pypaimon, latest");
    assert_rows(out.next().unwrap(), &before, "pypaimon, the compaction");
    assert_rows(out.next().unwrap(), &before, "pypaimon, before compaction");

    let java = java_paimon_read(&lake.warehouse, "fluss", &t, &COLUMN_NAMES);
    assert_eq!(java["snapshot"], json!(lake.snapshot));
    let rows = java["rows"].as_array().unwrap().clone();
    assert_rows(rows, &business(&latest), "Java Paimon, latest");
    lake.remove();
}

/// Deterministic pseudo-random numbers (SplitMix64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// Version `version` of key `key`'s row: the nested values (and where they are null or
/// empty) of another row of the shared table, under the key.
fn versioned_row(key: i64, version: i64) -> Json {
    let mut row = nested_row(key + 100 * version);
    row["id"] = json!(key);
    row
}

/// Eight rounds of inserts, updates (`-U`/`+U` pairs and lone `+U`, to other nested values)
/// and deletes over 24 keys in two buckets, compacted after six rounds (universal compaction:
/// six level-0 runs over the trigger) and again after eight with a trigger of 2, which merges
/// the first compaction's nested output with new level-0 files. pypaimon reads each live key's
/// newest row (system columns those of the winning record) after each compaction, and the
/// snapshot before each compaction as it was; Java Paimon reads the latest.
#[test]
fn compacted_primary_key_table_with_nested_values_reads_the_newest_rows() {
    let columns = pk_columns();
    let mut lake = Lake::new(pk_table(
        "fluss",
        "nested_pk",
        &columns,
        &["id"],
        BUCKETS,
        &[],
    ));
    let mut rng = Rng(17);
    // key → (version, expected row with system columns).
    let mut live: BTreeMap<i64, (i64, Json)> = BTreeMap::new();
    let mut versions: BTreeMap<i64, i64> = BTreeMap::new();
    let mut round = |lake: &mut Lake, live: &mut BTreeMap<i64, (i64, Json)>| {
        let mut changes: Vec<(Option<ChangeType>, Json)> = Vec::new();
        let mut model: BTreeMap<i64, Option<i64>> =
            live.iter().map(|(k, (v, _))| (*k, Some(*v))).collect();
        for _ in 0..14 {
            let key = rng.below(24) as i64;
            let mut next = || {
                let v = versions.entry(key).or_insert(0);
                *v += 1;
                *v
            };
            match model.get(&key).copied().flatten() {
                None => {
                    let v = next();
                    changes.push((Some(ChangeType::Insert), versioned_row(key, v)));
                    model.insert(key, Some(v));
                }
                Some(old) => match rng.below(10) {
                    0..=3 => {
                        let v = next();
                        changes.push((Some(ChangeType::UpdateBefore), versioned_row(key, old)));
                        changes.push((Some(ChangeType::UpdateAfter), versioned_row(key, v)));
                        model.insert(key, Some(v));
                    }
                    4..=6 => {
                        let v = next();
                        changes.push((Some(ChangeType::UpdateAfter), versioned_row(key, v)));
                        model.insert(key, Some(v));
                    }
                    _ => {
                        changes.push((Some(ChangeType::Delete), versioned_row(key, old)));
                        model.insert(key, None);
                    }
                },
            }
        }
        let placed = lake.round(&changes);
        for ((kind, row), (b, o)) in changes.into_iter().zip(placed) {
            let key = row["id"].as_i64().unwrap();
            match kind.unwrap() {
                ChangeType::Delete => {
                    live.remove(&key);
                }
                ChangeType::UpdateBefore => {}
                _ => {
                    let version = model[&key].unwrap_or(0);
                    live.insert(key, (version, with_system(row, b, o)));
                }
            }
        }
    };
    let rows = |live: &BTreeMap<i64, (i64, Json)>| -> Vec<Json> {
        live.values().map(|(_, r)| r.clone()).collect()
    };
    for _ in 0..6 {
        round(&mut lake, &mut live);
    }
    let tiered = lake.a_tiered_file();
    let before_first = (lake.snapshot, rows(&live));
    let first = lake.compact(&[]);
    assert!(lake.check_compacted_files(&tiered) > 0);
    let after_first = rows(&live);
    for _ in 0..2 {
        round(&mut lake, &mut live);
    }
    let before_second = (lake.snapshot, rows(&live));
    lake.compact(&[("num-sorted-run.compaction-trigger", "2")]);
    assert!(lake.check_compacted_files(&tiered) > 0);
    let latest = rows(&live);
    assert!(
        latest.iter().any(|r| r["events"].is_null())
            && latest.iter().any(|r| r["point"]["x"].is_null()),
        "nulls at several levels among the live rows"
    );

    let t = lake.name().to_string();
    let mut out = read_many(
        &lake.warehouse,
        &[
            cmd(&["rows", "fluss", &t]),
            cmd(&["rows", "fluss", &t, "--snapshot", &first.to_string()]),
            cmd(&[
                "rows",
                "fluss",
                &t,
                "--snapshot",
                &before_first.0.to_string(),
            ]),
            cmd(&[
                "rows",
                "fluss",
                &t,
                "--snapshot",
                &before_second.0.to_string(),
            ]),
        ],
    )
    .into_iter();
    assert_rows(
        out.next().unwrap(),
        &sorted(latest.clone()),
        "pypaimon, latest",
    );
    assert_rows(
        out.next().unwrap(),
        &sorted(after_first),
        "pypaimon, first compaction",
    );
    assert_rows(
        out.next().unwrap(),
        &sorted(before_first.1),
        "pypaimon, before the first compaction",
    );
    assert_rows(
        out.next().unwrap(),
        &sorted(before_second.1),
        "pypaimon, before the second compaction",
    );

    let java = java_paimon_read(&lake.warehouse, "fluss", &t, &COLUMN_NAMES);
    assert_eq!(java["snapshot"], json!(lake.snapshot));
    let rows = java["rows"].as_array().unwrap().clone();
    assert_rows(rows, &business(&latest), "Java Paimon, latest");
    lake.remove();
}
