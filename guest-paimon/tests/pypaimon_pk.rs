//! End-to-end check of primary-key tables: the plugin's native build tiers seeded random
//! changelogs (inserts, updates as `-U`/`+U` pairs and as lone `+U`, deletes, re-inserts of
//! deleted keys, empty rounds) into local warehouses the way the host drives it, and after
//! every round pypaimon — an independent Paimon implementation — must see exactly the state a
//! model of the Fluss table holds: the merged read, point lookups through pypaimon's equality
//! filter (bucket and key-statistics pruning), time travel to every earlier snapshot, and the
//! round's changelog as a streaming reader reads it.
//!
//! Needs the Python venv: run `scripts/setup-python.sh` first (the test fails without it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{Field, Schema};
use fluss_lake_guest_sdk::datatype::FlussType;
use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
use fluss_lake_guest_sdk::storage::{LocalStorage, Storage};
use fluss_lake_guest_sdk::testing::{ColumnSpec, pk_table, writer_context};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_paimon::binary_row::Value;
use fluss_lake_paimon::bucket::bucket_of;
use fluss_lake_paimon::catalog::{LAYOUT, create_table_if_missing, validate_table};
use fluss_lake_paimon::commit_message::CommitMessage;
use fluss_lake_paimon::committer::{PaimonCommitter, to_committable};
use fluss_lake_paimon::compact::MAINTENANCE_COMMIT_USER;
use fluss_lake_paimon::snapshot::read_snapshot;
use fluss_lake_paimon::types::PaimonType;
use fluss_lake_paimon::writer::PaimonWriter;
use serde_json::{Value as Json, json};

use crate::common::{cmd, compact_now, python, read_many, scratch_warehouse};

/// A cell of a generated row.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Val {
    Null,
    Int(i32),
    Big(i64),
    Str(String),
    Double(f64),
    /// DECIMAL(10, 2), unscaled.
    Dec(i128),
    /// TIMESTAMP(6), epoch micros.
    Ts(i64),
    /// DATE, days since epoch.
    Date(i32),
}

impl Val {
    /// The canonical JSON `paimon_read.py` prints for the value.
    fn json(&self) -> Json {
        match self {
            Val::Null => Json::Null,
            Val::Int(v) => json!(v),
            Val::Big(v) => json!(v),
            Val::Str(s) => json!(s),
            Val::Double(v) => json!(v),
            Val::Dec(u) => {
                let sign = if *u < 0 { "-" } else { "" };
                json!(format!("{sign}{}.{:02}", u.abs() / 100, u.abs() % 100))
            }
            Val::Ts(v) => json!(v),
            Val::Date(d) => json!(d),
        }
    }

    /// The value as the Fluss partition name spells it.
    fn partition_text(&self) -> String {
        match self {
            Val::Str(s) => s.clone(),
            Val::Date(d) => {
                let (y, m, dd) = fluss_lake_paimon::types::civil_from_days(*d as i64);
                format!("{y:04}-{m:02}-{dd:02}")
            }
            other => panic!("no partition text for {other:?}"),
        }
    }

    /// The value in Paimon's row model, for bucket hashing.
    fn paimon(&self) -> Value {
        match self {
            Val::Int(v) => Value::Int(*v),
            Val::Big(v) => Value::BigInt(*v),
            Val::Str(s) => Value::String(s.clone()),
            other => panic!("not a key value {other:?}"),
        }
    }
}

/// An Arrow column (in the types fluss-rs sends) of `vals` of Fluss type `ty`.
fn column(ty: &str, vals: &[Val]) -> ArrayRef {
    macro_rules! col {
        ($arr:ty, $variant:ident) => {
            Arc::new(<$arr>::from_iter(vals.iter().map(|v| match v {
                Val::$variant(x) => Some(x.clone()),
                Val::Null => None,
                other => panic!("{other:?} in a {ty} column"),
            })))
        };
    }
    match ty {
        "INT" => col!(Int32Array, Int),
        "BIGINT" => col!(Int64Array, Big),
        "STRING" => col!(StringArray, Str),
        "DOUBLE" => col!(Float64Array, Double),
        "DATE" => col!(Date32Array, Date),
        "TIMESTAMP(6)" => col!(TimestampMicrosecondArray, Ts),
        "DECIMAL(10, 2)" => {
            let a: Decimal128Array = vals
                .iter()
                .map(|v| match v {
                    Val::Dec(x) => Some(*x),
                    _ => None,
                })
                .collect();
            Arc::new(a.with_precision_and_scale(10, 2).unwrap())
        }
        other => panic!("no generator for {other}"),
    }
}

/// Deterministic pseudo-random numbers (SplitMix64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A primary-key table to drive: its columns (key columns first), which are key and partition
/// columns, and the key space the random changelog draws from.
struct Spec {
    name: &'static str,
    columns: Vec<ColumnSpec<'static>>,
    primary_keys: Vec<&'static str>,
    partition_keys: Vec<&'static str>,
    buckets: i32,
    keys: Vec<Vec<Val>>,
    /// The column lookups filter on.
    lookup: &'static str,
    config: Vec<(&'static str, &'static str)>,
}

const VALUE_COLUMNS: &[ColumnSpec<'static>] = &[
    ("name", "STRING", true),
    ("score", "DOUBLE", true),
    ("amount", "DECIMAL(10, 2)", true),
    ("ts", "TIMESTAMP(6)", true),
    ("version", "BIGINT", true),
];

/// The non-key cells of version `version` of the row of key `seed`.
fn values(seed: i64, version: i64) -> Vec<Val> {
    let nulls = (seed + version) % 7 == 3;
    let v = |x: Val| if nulls { Val::Null } else { x };
    vec![
        v(Val::Str(if version % 3 == 0 {
            format!("a name long enough to be truncated in stats, key {seed} v{version} ✓")
        } else {
            format!("n{seed}-v{version}")
        })),
        v(Val::Double(seed as f64 * 1.5 - version as f64)),
        v(Val::Dec(
            (seed as i128 * 1000 + version as i128) * if seed % 2 == 0 { 1 } else { -1 },
        )),
        v(Val::Ts(1_700_000_000_000_000 + seed * 1_000_003 + version)),
        Val::Big(version),
    ]
}

/// One change of the table's changelog.
#[derive(Debug, Clone)]
struct Record {
    kind: ChangeType,
    key: usize,
    version: i64,
}

/// A live row of the model: its version and where Fluss had it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Live {
    version: i64,
    bucket: i32,
    offset: i64,
}

const COMMIT_TS: i64 = 1_750_000_000_123;

/// Where Fluss keeps a record: (partition name, bucket).
type Place = (Option<String>, i32);

/// Drives one table like the host and checks it with pypaimon after every round.
struct Harness {
    spec: Spec,
    warehouse: PathBuf,
    table: TableInfo,
    storage: LocalStorage,
    rng: Rng,
    /// Model: key index → live row.
    live: BTreeMap<usize, Live>,
    /// Next version per key (versions never repeat, so every row is distinguishable).
    versions: BTreeMap<usize, i64>,
    /// Next log offset per (partition, bucket).
    offsets: BTreeMap<Place, i64>,
    /// Expected rows after each snapshot (index = snapshot id - 1).
    snapshots: Vec<Vec<Json>>,
    /// Data files written by each round, per (partition row, bucket).
    files_per_round: Vec<BTreeMap<(Vec<u8>, i32), usize>>,
    /// Most changelog files one bucket got in each round.
    changelog_files_per_round: Vec<usize>,
    total_data_rows: i64,
}

impl Harness {
    fn new(warehouse: &Path, spec: Spec, seed: u64) -> Harness {
        let mut columns = spec.columns.clone();
        columns.extend_from_slice(VALUE_COLUMNS);
        let table = pk_table(
            "fluss",
            spec.name,
            &columns,
            &spec.primary_keys,
            spec.buckets,
            &spec.partition_keys,
        );
        let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&table).unwrap()));
        assert!(create_table_if_missing(&storage, &table, &[]).unwrap());
        validate_table(&storage, &table).unwrap();
        Harness {
            spec,
            warehouse: warehouse.to_path_buf(),
            table,
            storage,
            rng: Rng(seed),
            live: BTreeMap::new(),
            versions: BTreeMap::new(),
            offsets: BTreeMap::new(),
            snapshots: Vec::new(),
            files_per_round: Vec::new(),
            changelog_files_per_round: Vec::new(),
            total_data_rows: 0,
        }
    }

    fn key_column(&self, key: usize, name: &str) -> Option<&Val> {
        let pos = self.spec.columns.iter().position(|c| c.0 == name)?;
        Some(&self.spec.keys[key][pos])
    }

    fn partition_of(&self, key: usize) -> Option<String> {
        if self.spec.partition_keys.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .spec
            .partition_keys
            .iter()
            .map(|p| self.key_column(key, p).unwrap().partition_text())
            .collect();
        Some(parts.join("$"))
    }

    /// Paimon's bucket of a key: the hash of the primary key without the partition keys.
    fn bucket_of(&self, key: usize) -> i32 {
        let trimmed: Vec<(PaimonType, Value)> = self
            .spec
            .primary_keys
            .iter()
            .filter(|k| !self.spec.partition_keys.contains(k))
            .map(|k| {
                let c = self.spec.columns.iter().find(|c| c.0 == *k).unwrap();
                let ty = PaimonType::from_fluss(FlussType::parse(c.1).unwrap(), false);
                (ty, self.key_column(key, k).unwrap().paimon())
            })
            .collect();
        let refs: Vec<(&PaimonType, Option<&Value>)> =
            trimmed.iter().map(|(t, v)| (t, Some(v))).collect();
        bucket_of(&refs, self.spec.buckets).unwrap()
    }

    fn seed_of(key: usize) -> i64 {
        key as i64 * 7 + 1
    }

    fn cells(&self, key: usize, version: i64) -> Vec<Val> {
        let mut cells = self.spec.keys[key].clone();
        cells.extend(values(Self::seed_of(key), version));
        cells
    }

    fn row_json(&self, key: usize, version: i64, bucket: i32, offset: i64) -> Json {
        let mut row = serde_json::Map::new();
        let names = self.spec.columns.iter().chain(VALUE_COLUMNS).map(|c| c.0);
        for (name, v) in names.zip(self.cells(key, version)) {
            row.insert(name.to_string(), v.json());
        }
        row.insert("__bucket".into(), json!(bucket));
        row.insert("__offset".into(), json!(offset));
        row.insert("__timestamp".into(), json!(COMMIT_TS * 1000));
        Json::Object(row)
    }

    fn expected_rows(&self) -> Vec<Json> {
        sorted(
            self.live
                .iter()
                .map(|(&k, l)| self.row_json(k, l.version, l.bucket, l.offset))
                .collect(),
        )
    }

    fn next_version(&mut self, key: usize) -> i64 {
        let v = self.versions.entry(key).or_insert(0);
        *v += 1;
        *v
    }

    /// A random round of `ops` changes: new keys are inserted (deleted keys come back this
    /// way), live keys are updated with a `-U`/`+U` pair or a lone `+U`, or deleted.
    fn random_changes(&mut self, ops: usize) -> Vec<Record> {
        let mut records = Vec::new();
        let mut live: BTreeMap<usize, i64> =
            self.live.iter().map(|(k, l)| (*k, l.version)).collect();
        for _ in 0..ops {
            let key = self.rng.below(self.spec.keys.len() as u64) as usize;
            match live.get(&key).copied() {
                None => {
                    let version = self.next_version(key);
                    records.push(Record {
                        kind: ChangeType::Insert,
                        key,
                        version,
                    });
                    live.insert(key, version);
                }
                Some(old) => match self.rng.below(10) {
                    0..=3 => {
                        let version = self.next_version(key);
                        records.push(Record {
                            kind: ChangeType::UpdateBefore,
                            key,
                            version: old,
                        });
                        records.push(Record {
                            kind: ChangeType::UpdateAfter,
                            key,
                            version,
                        });
                        live.insert(key, version);
                    }
                    4..=6 => {
                        let version = self.next_version(key);
                        records.push(Record {
                            kind: ChangeType::UpdateAfter,
                            key,
                            version,
                        });
                        live.insert(key, version);
                    }
                    _ => {
                        records.push(Record {
                            kind: ChangeType::Delete,
                            key,
                            version: old,
                        });
                        live.remove(&key);
                    }
                },
            }
        }
        records
    }

    /// Tiers `records` (in log order) as one round: a writer per (partition, bucket) fed in
    /// a few batches, then one commit. Returns the snapshot id.
    fn round(&mut self, records: &[Record]) -> i64 {
        // Fluss splits the changelog by partition and bucket, each in log order.
        let mut logs: BTreeMap<Place, Vec<(Record, i64)>> = BTreeMap::new();
        for r in records {
            let place = (self.partition_of(r.key), self.bucket_of(r.key));
            let offset = self.offsets.entry(place.clone()).or_insert(0);
            logs.entry(place.clone())
                .or_default()
                .push((r.clone(), *offset));
            *offset += 1;
            match r.kind {
                ChangeType::Insert | ChangeType::UpdateAfter => {
                    self.live.insert(
                        r.key,
                        Live {
                            version: r.version,
                            bucket: place.1,
                            offset: *offset - 1,
                        },
                    );
                }
                ChangeType::Delete => {
                    self.live.remove(&r.key);
                }
                _ => {}
            }
        }
        let mut results = Vec::new();
        let mut changelog_rows = 0;
        let mut files = BTreeMap::new();
        let mut most_changelog_files = 0;
        for ((partition, bucket), log) in &logs {
            let ctx = writer_context(
                &self.table,
                *bucket,
                partition.as_deref(),
                &self.spec.config,
            );
            let mut w = PaimonWriter::open(&ctx, &self.storage).unwrap();
            let batches = 1 + self.rng.below(3) as usize;
            let per = log.len().div_ceil(batches);
            for part in log.chunks(per) {
                let batch = self.batch(part);
                let kinds: Vec<ChangeType> = part.iter().map(|(r, _)| r.kind).collect();
                w.write(make_changelog_batch(&batch, &kinds, part[0].1, COMMIT_TS).unwrap())
                    .unwrap();
            }
            let result = w.complete().unwrap();
            assert_eq!(result.record_count, log.len() as u64);
            let message = CommitMessage::decode(&result.payload).unwrap();
            for e in &message.data_files {
                self.total_data_rows += e.file.row_count;
                *files.entry((e.partition.clone(), e.bucket)).or_insert(0) += 1;
            }
            most_changelog_files = most_changelog_files.max(message.changelog_files.len());
            changelog_rows += message
                .changelog_files
                .iter()
                .map(|e| e.file.row_count)
                .sum::<i64>();
            results.push(result.payload);
        }
        assert_eq!(
            changelog_rows,
            records.len() as i64,
            "input changelog holds every record"
        );
        self.files_per_round.push(files);
        self.changelog_files_per_round.push(most_changelog_files);
        let mut committer = PaimonCommitter::new(&self.storage, vec![]);
        let id = self.snapshots.len() as i64 + 1;
        let res = committer
            .commit(
                &to_committable(&results).unwrap(),
                &[("fluss-offsets".to_string(), format!("/offsets/{id}"))],
                (id > 1).then_some(id - 1),
            )
            .unwrap();
        assert_eq!(res.snapshot_id, id);
        assert_eq!(res.stats.record_count, Some(self.total_data_rows));
        let snapshot = read_snapshot(&self.storage, id).unwrap().unwrap();
        assert_eq!(snapshot.changelog_record_count, Some(records.len() as i64));
        assert_eq!(
            snapshot.changelog_manifest_list.is_some(),
            !records.is_empty()
        );
        self.snapshots.push(self.expected_rows());
        id
    }

    /// Compacts the table as a maintenance call does and checks with pypaimon that the
    /// compaction snapshot reads exactly as the one before it, that every earlier snapshot
    /// still time-travels, and that lookups still find every key. Returns the level-0 files
    /// the compaction replaced.
    fn compact_and_verify(&mut self, config: &[(&str, &str)]) -> u64 {
        let done = compact_now(&self.storage, config);
        let id = self.snapshots.len() as i64 + 1;
        assert_eq!(done.committed_snapshots, [id], "{done:?}");
        let snapshot = read_snapshot(&self.storage, id).unwrap().unwrap();
        assert_eq!(snapshot.commit_kind, "COMPACT");
        self.total_data_rows = snapshot.total_record_count.unwrap();
        self.snapshots.push(self.expected_rows());

        let t = self.spec.name;
        let mut commands = vec![cmd(&["rows", "fluss", t]), cmd(&["snapshot", "fluss", t])];
        for i in 1..=id {
            commands.push(cmd(&["rows", "fluss", t, "--snapshot", &i.to_string()]));
        }
        let keys: Vec<Json> = self
            .live
            .keys()
            .map(|k| self.key_column(*k, self.spec.lookup).unwrap().json())
            .collect();
        for v in &keys {
            commands.push(cmd(&[
                "lookup",
                "fluss",
                t,
                self.spec.lookup,
                &v.to_string(),
            ]));
        }
        let mut out = read_many(&self.warehouse, &commands).into_iter();
        let latest = self.snapshots.last().unwrap().clone();
        assert_eq!(
            sorted(out.next().unwrap()),
            latest,
            "merged read after compaction"
        );
        let snap = &out.next().unwrap()[0];
        assert_eq!(snap["id"], json!(id));
        assert_eq!(snap["commit_kind"], json!("COMPACT"));
        assert_eq!(snap["commit_user"], json!(MAINTENANCE_COMMIT_USER));
        assert_eq!(snap["properties"], json!({}));
        assert_eq!(snap["total_record_count"], json!(self.total_data_rows));
        for (i, expected) in self.snapshots.iter().enumerate() {
            assert_eq!(
                sorted(out.next().unwrap()),
                *expected,
                "time travel of {t} to snapshot {} after compaction",
                i + 1
            );
        }
        for v in &keys {
            let found = sorted(out.next().unwrap());
            let want: Vec<Json> = latest
                .iter()
                .filter(|r| r[self.spec.lookup] == *v)
                .cloned()
                .collect();
            assert_eq!(
                found, want,
                "lookup {}={v} after compaction",
                self.spec.lookup
            );
        }
        done.files_compacted
    }

    fn batch(&self, part: &[(Record, i64)]) -> RecordBatch {
        let specs: Vec<&ColumnSpec> = self.spec.columns.iter().chain(VALUE_COLUMNS).collect();
        let rows: Vec<Vec<Val>> = part
            .iter()
            .map(|(r, _)| self.cells(r.key, r.version))
            .collect();
        let fields: Vec<Field> = specs
            .iter()
            .map(|(n, t, nullable)| {
                Field::new(*n, FlussType::parse(t).unwrap().arrow_type(), *nullable)
            })
            .collect();
        let columns = specs
            .iter()
            .enumerate()
            .map(|(i, (_, t, _))| {
                let vals: Vec<Val> = rows.iter().map(|r| r[i].clone()).collect();
                column(t, &vals)
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    /// Checks the latest snapshot, time travel to every earlier one, lookups of every key
    /// ever written and the changelog of the newest round (`records`).
    fn verify(&self, records: &[Record]) {
        let t = self.spec.name;
        let n = self.snapshots.len();
        let mut commands = vec![cmd(&["rows", "fluss", t]), cmd(&["snapshot", "fluss", t])];
        for i in 1..=n {
            commands.push(cmd(&["rows", "fluss", t, "--snapshot", &i.to_string()]));
        }
        let lookups: Vec<Json> = {
            let mut vals: Vec<Json> = self
                .versions
                .keys()
                .map(|k| self.key_column(*k, self.spec.lookup).unwrap().json())
                .collect();
            vals.sort_by_key(|v| v.to_string());
            vals.dedup();
            vals
        };
        for v in &lookups {
            commands.push(cmd(&[
                "lookup",
                "fluss",
                t,
                self.spec.lookup,
                &v.to_string(),
            ]));
        }
        commands.push(cmd(&[
            "changelog",
            "fluss",
            t,
            "--snapshot",
            &n.to_string(),
        ]));

        let mut out = read_many(&self.warehouse, &commands).into_iter();
        let latest = self.snapshots.last().unwrap();
        assert_eq!(
            sorted(out.next().unwrap()),
            *latest,
            "merged read of {t} after round {n}"
        );
        let snap = &out.next().unwrap()[0];
        assert_eq!(snap["id"], json!(n));
        assert_eq!(snap["commit_kind"], json!("APPEND"));
        assert_eq!(snap["total_record_count"], json!(self.total_data_rows));
        for (i, expected) in self.snapshots.iter().enumerate() {
            assert_eq!(
                sorted(out.next().unwrap()),
                *expected,
                "time travel of {t} to snapshot {}",
                i + 1
            );
        }
        for v in &lookups {
            let want: Vec<Json> = latest
                .iter()
                .filter(|r| r[self.spec.lookup] == *v)
                .cloned()
                .collect();
            assert_eq!(
                sorted(out.next().unwrap()),
                want,
                "lookup {}={v} in {t}",
                self.spec.lookup
            );
        }
        self.check_changelog(out.next().unwrap(), records);
    }

    /// The changelog a streaming reader reads for the newest snapshot holds every record of
    /// the round with its row kind, each key's records in log order. (The order is only
    /// checked when every bucket got one changelog file: pypaimon's streaming split generator
    /// orders several level-0 files of a bucket by key range, where Java's reads them in the
    /// order they were committed, which is the order they were written.)
    fn check_changelog(&self, read: Vec<Json>, records: &[Record]) {
        let kind = |k: ChangeType| match k {
            ChangeType::Insert | ChangeType::AppendOnly => "+I",
            ChangeType::UpdateBefore => "-U",
            ChangeType::UpdateAfter => "+U",
            ChangeType::Delete => "-D",
        };
        let mut offsets = self.offsets.clone();
        // Recompute the offsets the round's records got (they were assigned last).
        for r in records.iter().rev() {
            let place = (self.partition_of(r.key), self.bucket_of(r.key));
            *offsets.get_mut(&place).unwrap() -= 1;
        }
        let mut expected = Vec::new();
        for r in records {
            let place = (self.partition_of(r.key), self.bucket_of(r.key));
            let offset = offsets.get_mut(&place).unwrap();
            let mut row = self.row_json(r.key, r.version, place.1, *offset);
            *offset += 1;
            row.as_object_mut()
                .unwrap()
                .insert("_row_kind".into(), json!(kind(r.kind)));
            expected.push(row);
        }
        // Per key, records must come in log order.
        let one_file_per_bucket = self.changelog_files_per_round.last() == Some(&1);
        let mut last: BTreeMap<String, i64> = BTreeMap::new();
        for row in read.iter().filter(|_| one_file_per_bucket) {
            let key: Vec<String> = self
                .spec
                .primary_keys
                .iter()
                .map(|k| row[*k].to_string())
                .collect();
            let offset = row["__offset"].as_i64().unwrap();
            let prev = last.insert(key.join("/"), offset);
            assert!(
                prev.is_none_or(|p| p < offset),
                "changelog of a key out of order: {row}"
            );
        }
        assert_eq!(
            sorted(read),
            sorted(expected),
            "changelog of {}",
            self.spec.name
        );
    }
}

fn sorted(mut rows: Vec<Json>) -> Vec<Json> {
    rows.sort_by_key(|r| r.to_string());
    rows
}

fn pk_warehouse() -> PathBuf {
    let _ = python();
    scratch_warehouse("paimon-pk")
}

/// Several rounds of random changes with an empty round in the middle, verified every round.
fn drive(h: &mut Harness, rounds: usize) {
    for round in 0..rounds {
        let records = if round == 2 {
            Vec::new()
        } else {
            let ops = 20 + h.rng.below(40) as usize;
            h.random_changes(ops)
        };
        h.round(&records);
        h.verify(&records);
    }
}

fn int_keys(n: i32) -> Vec<Vec<Val>> {
    (0..n).map(|i| vec![Val::Int(i)]).collect()
}

#[test]
fn pypaimon_sees_the_fluss_state_of_a_primary_key_table() {
    let warehouse = pk_warehouse();
    let spec = Spec {
        name: "pk",
        columns: vec![("id", "INT", false)],
        primary_keys: vec!["id"],
        partition_keys: vec![],
        buckets: 3,
        keys: int_keys(40),
        lookup: "id",
        config: vec![],
    };
    let mut h = Harness::new(&warehouse, spec, 42);
    drive(&mut h, 6);
    // One flush per bucket and round with the default 256 MB buffer.
    for files in &h.files_per_round {
        assert!(files.values().all(|n| *n == 1), "{files:?}");
    }
    std::fs::remove_dir_all(&warehouse).unwrap();
}

#[test]
fn a_tiny_write_buffer_flushes_several_sorted_runs_per_round() {
    let warehouse = pk_warehouse();
    let spec = Spec {
        name: "pk_tiny_buffer",
        columns: vec![("id", "INT", false)],
        primary_keys: vec!["id"],
        partition_keys: vec![],
        buckets: 3,
        keys: int_keys(30),
        lookup: "id",
        config: vec![("write-buffer-size", "1kb")],
    };
    let mut h = Harness::new(&warehouse, spec, 7);
    drive(&mut h, 4);
    let most = h
        .files_per_round
        .iter()
        .flat_map(|f| f.values().copied())
        .max()
        .unwrap();
    assert!(
        most >= 3,
        "several level-0 files per bucket and round: {:?}",
        h.files_per_round
    );
    std::fs::remove_dir_all(&warehouse).unwrap();
}

#[test]
fn partitioned_primary_key_tables() {
    let warehouse = pk_warehouse();
    // One partition key; the key without it is composite (id, code).
    let mut keys = Vec::new();
    for region in ["eu/west", "us"] {
        for id in 0..8 {
            for code in ["a", "b", "cc"] {
                keys.push(vec![
                    Val::Str(region.into()),
                    Val::Int(id),
                    Val::Str(code.into()),
                ]);
            }
        }
    }
    let spec = Spec {
        name: "pk_region",
        columns: vec![
            ("region", "STRING", false),
            ("id", "INT", false),
            ("code", "STRING", false),
        ],
        primary_keys: vec!["region", "id", "code"],
        partition_keys: vec!["region"],
        buckets: 2,
        keys,
        lookup: "id",
        config: vec![],
    };
    let mut h = Harness::new(&warehouse, spec, 3);
    drive(&mut h, 5);
    assert!(
        h.storage.list("region=eu%2Fwest/bucket-0").unwrap().len() > 1,
        "files of the escaped partition directory"
    );

    // Two partition keys.
    let mut keys = Vec::new();
    for day in [19723, 19724] {
        for region in ["eu", "us"] {
            for id in 0..10i64 {
                keys.push(vec![Val::Date(day), Val::Str(region.into()), Val::Big(id)]);
            }
        }
    }
    let spec = Spec {
        name: "pk_day_region",
        columns: vec![
            ("day", "DATE", false),
            ("region", "STRING", false),
            ("id", "BIGINT", false),
        ],
        primary_keys: vec!["day", "region", "id"],
        partition_keys: vec!["day", "region"],
        buckets: 3,
        keys,
        lookup: "id",
        config: vec![],
    };
    let mut h = Harness::new(&warehouse, spec, 11);
    drive(&mut h, 5);
    assert!(
        !h.storage
            .list("day=2024-01-02/region=us")
            .unwrap()
            .is_empty()
    );
    std::fs::remove_dir_all(&warehouse).unwrap();
}

#[test]
fn pypaimon_reads_a_compacted_primary_key_table() {
    let warehouse = pk_warehouse();
    // Partitioned, so that buckets of several partitions are compacted in one snapshot.
    let mut keys = Vec::new();
    for region in ["eu", "us"] {
        for id in 0..20 {
            keys.push(vec![Val::Str(region.into()), Val::Int(id)]);
        }
    }
    let spec = Spec {
        name: "pk_compacted",
        columns: vec![("region", "STRING", false), ("id", "INT", false)],
        primary_keys: vec!["region", "id"],
        partition_keys: vec!["region"],
        buckets: 2,
        keys,
        lookup: "id",
        config: vec![],
    };
    let mut h = Harness::new(&warehouse, spec, 5);
    drive(&mut h, 6);
    // Six level-0 runs per bucket are more than the trigger (5): universal compaction runs.
    assert!(h.compact_and_verify(&[]) > 0);
    // Tiering goes on after the compaction (sequence numbers continue above the compacted
    // files'), and a lower trigger compacts again, now with files above level 0.
    for _ in 0..3 {
        let records = h.random_changes(30);
        h.round(&records);
        h.verify(&records);
    }
    assert!(h.compact_and_verify(&[("num-sorted-run.compaction-trigger", "2")]) > 0);
    std::fs::remove_dir_all(&warehouse).unwrap();
}
