//! Builders of WIT context records for native tests and benchmarks of format plugins, so
//! every format's tests describe tables the same way the host does.

use crate::wit::{Column, CommitterContext, TableInfo, TablePath, WriterContext};

/// An Arrow array of type `data_type` holding `values` (JSON; `null` for a null): how tests
/// spell rows with nested columns as fluss-rs hands them over. Integers for every integer,
/// date (days), time and timestamp type (in the type's unit); strings for strings and, as
/// decimal text, for decimals; arrays for lists; `[[key, value], ...]` for maps; objects for
/// structs (a missing field is null).
pub fn json_array(
    values: &[serde_json::Value],
    data_type: &arrow_schema::DataType,
) -> arrow_array::ArrayRef {
    use std::sync::Arc;

    use arrow_array::*;
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    use arrow_schema::{DataType, TimeUnit};
    use serde_json::Value;

    let ints = || values.iter().map(Value::as_i64);
    let nulls = || NullBuffer::from(values.iter().map(|v| !v.is_null()).collect::<Vec<_>>());
    let offsets = |items: &dyn Fn(&Value) -> usize| {
        OffsetBuffer::from_lengths(
            values
                .iter()
                .map(|v| if v.is_null() { 0 } else { items(v) }),
        )
    };
    match data_type {
        DataType::Boolean => Arc::new(values.iter().map(Value::as_bool).collect::<BooleanArray>()),
        DataType::Int8 => Arc::new(ints().map(|v| v.map(|v| v as i8)).collect::<Int8Array>()),
        DataType::Int16 => Arc::new(ints().map(|v| v.map(|v| v as i16)).collect::<Int16Array>()),
        DataType::Int32 => Arc::new(ints().map(|v| v.map(|v| v as i32)).collect::<Int32Array>()),
        DataType::Int64 => Arc::new(ints().collect::<Int64Array>()),
        DataType::Float32 => Arc::new(
            values
                .iter()
                .map(|v| v.as_f64().map(|v| v as f32))
                .collect::<Float32Array>(),
        ),
        DataType::Float64 => Arc::new(values.iter().map(Value::as_f64).collect::<Float64Array>()),
        DataType::Utf8 => Arc::new(values.iter().map(Value::as_str).collect::<StringArray>()),
        DataType::Binary => Arc::new(
            values
                .iter()
                .map(|v| v.as_str().map(str::as_bytes))
                .collect::<BinaryArray>(),
        ),
        DataType::Date32 => Arc::new(ints().map(|v| v.map(|v| v as i32)).collect::<Date32Array>()),
        DataType::Decimal128(p, s) => Arc::new(
            values
                .iter()
                .map(|v| {
                    v.as_str().map(|t| {
                        let digits: String = t.chars().filter(|c| *c != '.').collect();
                        digits.parse::<i128>().expect("a decimal's digits")
                    })
                })
                .collect::<Decimal128Array>()
                .with_precision_and_scale(*p, *s)
                .expect("a decimal type"),
        ),
        DataType::Time32(TimeUnit::Second) => Arc::new(
            ints()
                .map(|v| v.map(|v| v as i32))
                .collect::<Time32SecondArray>(),
        ),
        DataType::Time32(_) => Arc::new(
            ints()
                .map(|v| v.map(|v| v as i32))
                .collect::<Time32MillisecondArray>(),
        ),
        DataType::Timestamp(unit, tz) => {
            let a: ArrayRef = match unit {
                TimeUnit::Second => Arc::new(
                    ints()
                        .collect::<TimestampSecondArray>()
                        .with_timezone_opt(tz.clone()),
                ),
                TimeUnit::Millisecond => Arc::new(
                    ints()
                        .collect::<TimestampMillisecondArray>()
                        .with_timezone_opt(tz.clone()),
                ),
                TimeUnit::Microsecond => Arc::new(
                    ints()
                        .collect::<TimestampMicrosecondArray>()
                        .with_timezone_opt(tz.clone()),
                ),
                TimeUnit::Nanosecond => Arc::new(
                    ints()
                        .collect::<TimestampNanosecondArray>()
                        .with_timezone_opt(tz.clone()),
                ),
            };
            a
        }
        DataType::List(field) => {
            let items: Vec<Value> = values
                .iter()
                .filter_map(Value::as_array)
                .flatten()
                .cloned()
                .collect();
            let offsets = offsets(&|v| v.as_array().map_or(0, Vec::len));
            Arc::new(ListArray::new(
                field.clone(),
                offsets,
                json_array(&items, field.data_type()),
                Some(nulls()),
            ))
        }
        DataType::Map(entries, ordered) => {
            let DataType::Struct(kv) = entries.data_type() else {
                panic!("a map of {entries:?}")
            };
            let pairs: Vec<&Vec<Value>> = values
                .iter()
                .filter_map(Value::as_array)
                .flatten()
                .map(|p| p.as_array().expect("a [key, value] pair"))
                .collect();
            let keys: Vec<Value> = pairs.iter().map(|p| p[0].clone()).collect();
            let vals: Vec<Value> = pairs.iter().map(|p| p[1].clone()).collect();
            let entries_array = StructArray::new(
                kv.clone(),
                vec![
                    json_array(&keys, kv[0].data_type()),
                    json_array(&vals, kv[1].data_type()),
                ],
                None,
            );
            let offsets = offsets(&|v| v.as_array().map_or(0, Vec::len));
            Arc::new(MapArray::new(
                entries.clone(),
                offsets,
                entries_array,
                Some(nulls()),
                *ordered,
            ))
        }
        DataType::Struct(fields) => {
            let children = fields
                .iter()
                .map(|f| {
                    let column: Vec<Value> = values
                        .iter()
                        .map(|v| v.get(f.name()).cloned().unwrap_or(Value::Null))
                        .collect();
                    json_array(&column, f.data_type())
                })
                .collect();
            Arc::new(StructArray::new(fields.clone(), children, Some(nulls())))
        }
        other => panic!("json_array: no test values of type {other}"),
    }
}

/// The nested-type test table every format's tests and the end-to-end tests share: ARRAY, MAP
/// and ROW, nested in each other, NOT NULL inside and out, as the contract spells them.
pub const NESTED_COLUMNS: [(&str, &str, bool); 6] = [
    ("id", "INT", true),
    ("tags", "ARRAY<STRING>", true),
    ("nums", "ARRAY<INT NOT NULL>", true),
    ("attrs", "MAP<STRING NOT NULL, INT>", true),
    (
        "point",
        "ROW<`x` INT, `y` STRING NOT NULL 'the label'>",
        true,
    ),
    (
        "events",
        "ARRAY<ROW<`at` TIMESTAMP(6), `labels` MAP<STRING NOT NULL, ARRAY<DECIMAL(10, 2)>>>>",
        true,
    ),
];

/// Row `id` of [`NESTED_COLUMNS`], with nulls and empty collections at every level by id, in
/// the readers' canonical JSON, which is also how [`json_array`] reads it.
pub fn nested_row(id: i64) -> serde_json::Value {
    use serde_json::{Value, json};
    let or_null = |null: bool, v: Value| if null { Value::Null } else { v };
    json!({
        "id": id,
        "tags": match id % 5 {
            4 => Value::Null,
            3 => json!([]),
            _ => json!([format!("t{id}"), or_null(id % 2 == 1, json!("u"))]),
        },
        "nums": or_null(id % 4 == 1, json!([id, id + 1])),
        "attrs": or_null(id % 6 == 5, json!([[format!("k{id}"), id], ["n", null]])),
        "point": or_null(id % 7 == 3, json!({"x": or_null(id % 2 == 1, json!(id)), "y": format!("p{id}")})),
        "events": or_null(id % 3 == 2, json!([
            {"at": 1_700_000_000_000_000i64 + id, "labels": [["a", ["1.50", null, format!("{id}.25")]], ["b", []]]},
            null,
            {"at": null, "labels": null},
        ])),
    })
}

/// Rows `first..first + count` of [`NESTED_COLUMNS`] as the host hands them over (the Arrow
/// types of [`crate::datatype::ColumnType::arrow_type`], fluss-rs's).
pub fn nested_batch(first: i64, count: i64) -> arrow_array::RecordBatch {
    use std::sync::Arc;

    use arrow_schema::{Field, Schema};
    let rows: Vec<serde_json::Value> = (first..first + count).map(nested_row).collect();
    let fields: Vec<Field> = NESTED_COLUMNS
        .iter()
        .map(|(name, ty, nullable)| {
            let ty = crate::datatype::ColumnType::parse(ty).expect("a nested test type");
            Field::new(*name, ty.arrow_type(), *nullable)
        })
        .collect();
    let arrays = fields
        .iter()
        .map(|f| {
            let values: Vec<serde_json::Value> = rows.iter().map(|r| r[f.name()].clone()).collect();
            json_array(&values, f.data_type())
        })
        .collect();
    arrow_array::RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .expect("a nested test batch")
}

/// The small log table committer tests use: `db.t (id INT NOT NULL, name STRING)`, one
/// bucket, not partitioned.
pub fn id_name_table() -> TableInfo {
    log_table(
        "db",
        "t",
        &[("id", "INT", false), ("name", "STRING", true)],
        &[],
        1,
        &[],
    )
}

/// A batch of [`id_name_table`] rows with the given ids (name `x`), offsets from 0.
pub fn id_name_batch(ids: &[i32]) -> crate::wit::RowBatch {
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int32Array::from(ids.to_vec())),
            Arc::new(StringArray::from(vec![Some("x"); ids.len()])),
        ],
    )
    .expect("valid batch");
    crate::ipc::make_row_batch(&batch, 0, 0).expect("encodable batch")
}

/// A column: `(name, Fluss type, nullable)`.
pub type ColumnSpec<'a> = (&'a str, &'a str, bool);

/// A log table (no primary key) with the given columns, bucket keys, bucket count and
/// partition keys, as the host would describe it.
pub fn log_table(
    database: &str,
    table: &str,
    columns: &[ColumnSpec<'_>],
    bucket_keys: &[&str],
    num_buckets: i32,
    partition_keys: &[&str],
) -> TableInfo {
    TableInfo {
        table_id: 1,
        path: TablePath {
            database: database.to_string(),
            table: table.to_string(),
        },
        schema_id: 0,
        columns: columns
            .iter()
            .map(|(n, t, nullable)| Column {
                name: n.to_string(),
                data_type: t.to_string(),
                nullable: *nullable,
                comment: None,
            })
            .collect(),
        primary_keys: Vec::new(),
        bucket_keys: bucket_keys.iter().map(|s| s.to_string()).collect(),
        num_buckets,
        partition_keys: partition_keys.iter().map(|s| s.to_string()).collect(),
        properties: vec![
            ("table.datalake.enabled".to_string(), "true".to_string()),
            ("table.datalake.format".to_string(), "paimon".to_string()),
            ("table.replication.factor".to_string(), "1".to_string()),
        ],
        custom_properties: Vec::new(),
    }
}

/// A primary-key table, as the host describes one: the bucket keys are the primary key minus
/// the partition keys (Fluss's default).
pub fn pk_table(
    database: &str,
    table: &str,
    columns: &[ColumnSpec<'_>],
    primary_keys: &[&str],
    num_buckets: i32,
    partition_keys: &[&str],
) -> TableInfo {
    let bucket_keys: Vec<&str> = primary_keys
        .iter()
        .copied()
        .filter(|k| !partition_keys.contains(k))
        .collect();
    let mut t = log_table(
        database,
        table,
        columns,
        &bucket_keys,
        num_buckets,
        partition_keys,
    );
    t.primary_keys = primary_keys.iter().map(|s| s.to_string()).collect();
    t
}

/// The newest snapshot committed by tiering: the `tiered-base` Fluss would hand a round if it
/// had registered every commit so far.
pub fn tiered_base<S: crate::storage::Storage, C: crate::plugin::FormatCommitter<S>>(
    committer: &C,
) -> Option<i64> {
    committer
        .get_missing_lake_snapshot(None)
        .expect("read the lake's snapshots")
        .map(|s| s.snapshot_id)
}

/// The context of a writer for one bucket (and partition).
pub fn writer_context(
    table: &TableInfo,
    bucket: i32,
    partition_name: Option<&str>,
    config: &[(&str, &str)],
) -> WriterContext {
    WriterContext {
        table: table.clone(),
        bucket,
        partition_id: partition_name.map(|_| 1),
        partition_name: partition_name.map(str::to_string),
        split_index: bucket.unsigned_abs(),
        round_timestamp: crate::clock::now_millis(),
        config: pairs(config),
    }
}

/// The context of a committer.
pub fn committer_context(table: &TableInfo, config: &[(&str, &str)]) -> CommitterContext {
    CommitterContext {
        table: table.clone(),
        config: pairs(config),
        tiering_config: Vec::new(),
    }
}

/// `&[(&str, &str)]` → owned pairs.
pub fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Storage for commit-race tests: before the first `put-if-absent` of a path `race_on`
/// selects, it runs `rival` (a competing committer publishing the same version), then lets
/// the call proceed, so the committer under test loses the race exactly once.
pub struct RacingStorage<'a> {
    inner: &'a crate::storage::MemoryStorage,
    race_on: Box<dyn Fn(&str) -> bool + 'a>,
    rival: Box<dyn Fn() + 'a>,
    raced: std::cell::Cell<bool>,
}

impl<'a> RacingStorage<'a> {
    pub fn new(
        inner: &'a crate::storage::MemoryStorage,
        race_on: impl Fn(&str) -> bool + 'a,
        rival: impl Fn() + 'a,
    ) -> Self {
        RacingStorage {
            inner,
            race_on: Box::new(race_on),
            rival: Box::new(rival),
            raced: std::cell::Cell::new(false),
        }
    }
}

impl crate::storage::Storage for RacingStorage<'_> {
    fn get(&self, p: &str) -> crate::Result<Vec<u8>> {
        self.inner.get(p)
    }
    fn upload(&self, p: &str) -> crate::Result<Box<dyn crate::storage::Upload>> {
        self.inner.upload(p)
    }
    fn put(&self, p: &str, d: &[u8]) -> crate::Result<()> {
        self.inner.put(p, d)
    }
    fn put_if_absent(&self, p: &str, d: &[u8]) -> crate::Result<()> {
        if (self.race_on)(p) && !self.raced.replace(true) {
            (self.rival)();
        }
        self.inner.put_if_absent(p, d)
    }
    fn list(&self, p: &str) -> crate::Result<Vec<crate::storage::ObjectMeta>> {
        self.inner.list(p)
    }
    fn delete(&self, p: &str) -> crate::Result<()> {
        self.inner.delete(p)
    }
    fn head(&self, p: &str) -> crate::Result<Option<crate::storage::ObjectMeta>> {
        self.inner.head(p)
    }
}

/// How [`LostAckStorage`] loses the answer to a selected `put-if-absent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostAck {
    /// The object is written, the caller gets an I/O error (a timeout, a dropped connection).
    Io,
    /// The object is written, the caller gets "already exists" (the store's own retry of the
    /// request that had landed got 412).
    AlreadyExists,
    /// Nothing is written, the caller gets an I/O error, and reading the path back fails too:
    /// whether the object landed cannot be told.
    Unreadable,
}

/// Storage whose first `put-if-absent` of a path `lose_on` selects lands but loses its answer
/// as `how` says; every other call goes through.
pub struct LostAckStorage<'a> {
    inner: &'a dyn crate::storage::Storage,
    lose_on: Box<dyn Fn(&str) -> bool + 'a>,
    how: LostAck,
    lost: std::cell::RefCell<Option<String>>,
}

impl<'a> LostAckStorage<'a> {
    pub fn new(
        inner: &'a dyn crate::storage::Storage,
        lose_on: impl Fn(&str) -> bool + 'a,
        how: LostAck,
    ) -> Self {
        LostAckStorage {
            inner,
            lose_on: Box::new(lose_on),
            how,
            lost: std::cell::RefCell::new(None),
        }
    }

    /// The path whose answer was lost, once it was.
    pub fn lost(&self) -> Option<String> {
        self.lost.borrow().clone()
    }
}

impl crate::storage::Storage for LostAckStorage<'_> {
    fn get(&self, p: &str) -> crate::Result<Vec<u8>> {
        if self.how == LostAck::Unreadable && self.lost.borrow().as_deref() == Some(p) {
            return Err(crate::Error::io(format!("reading {p}: connection reset")));
        }
        self.inner.get(p)
    }
    fn upload(&self, p: &str) -> crate::Result<Box<dyn crate::storage::Upload>> {
        self.inner.upload(p)
    }
    fn put(&self, p: &str, d: &[u8]) -> crate::Result<()> {
        self.inner.put(p, d)
    }
    fn put_if_absent(&self, p: &str, d: &[u8]) -> crate::Result<()> {
        if self.lost.borrow().is_some() || !(self.lose_on)(p) {
            return self.inner.put_if_absent(p, d);
        }
        *self.lost.borrow_mut() = Some(p.to_string());
        match self.how {
            LostAck::Io => {
                self.inner.put_if_absent(p, d)?;
                Err(crate::Error::io(format!("putting {p}: connection reset")))
            }
            LostAck::AlreadyExists => {
                self.inner.put_if_absent(p, d)?;
                Err(crate::Error::already_exists(format!("{p} exists")))
            }
            LostAck::Unreadable => Err(crate::Error::io(format!("putting {p}: timed out"))),
        }
    }
    fn list(&self, p: &str) -> crate::Result<Vec<crate::storage::ObjectMeta>> {
        self.inner.list(p)
    }
    fn delete(&self, p: &str) -> crate::Result<()> {
        self.inner.delete(p)
    }
    fn head(&self, p: &str) -> crate::Result<Option<crate::storage::ObjectMeta>> {
        self.inner.head(p)
    }
}

/// Storage that injects faults at random, replayable by seed: a call fails before it reaches
/// the store, or (`put`, `put-if-absent`, `delete`) is applied and its answer lost. Reads
/// fail too, but never return wrong data. `fault_per_mille` of the calls fail.
pub struct FaultyStorage<'a> {
    inner: &'a dyn crate::storage::Storage,
    state: std::cell::Cell<u64>,
    fault_per_mille: u64,
    enabled: std::cell::Cell<bool>,
    faults: std::cell::Cell<u64>,
}

impl<'a> FaultyStorage<'a> {
    pub fn new(inner: &'a dyn crate::storage::Storage, seed: u64, fault_per_mille: u64) -> Self {
        FaultyStorage {
            inner,
            state: std::cell::Cell::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            fault_per_mille,
            enabled: std::cell::Cell::new(true),
            faults: std::cell::Cell::new(0),
        }
    }

    /// Turns fault injection on or off (checks read the table without faults).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.set(on);
    }

    /// Faults injected so far.
    pub fn faults(&self) -> u64 {
        self.faults.get()
    }

    /// `None`: no fault; `Some(true)`: apply, then fail; `Some(false)`: fail without applying.
    fn roll(&self) -> Option<bool> {
        if !self.enabled.get() {
            return None;
        }
        // xorshift64*
        let mut x = self.state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state.set(x);
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        if r % 1000 >= self.fault_per_mille {
            return None;
        }
        self.faults.set(self.faults.get() + 1);
        Some((r >> 32) & 1 == 1)
    }

    fn fail(what: &str, p: &str) -> crate::Error {
        crate::Error::io(format!("{what} {p}: injected fault"))
    }
}

impl crate::storage::Storage for FaultyStorage<'_> {
    fn get(&self, p: &str) -> crate::Result<Vec<u8>> {
        match self.roll() {
            None => self.inner.get(p),
            Some(_) => Err(Self::fail("reading", p)),
        }
    }
    fn get_range(&self, p: &str, offset: u64, length: u64) -> crate::Result<Vec<u8>> {
        match self.roll() {
            None => self.inner.get_range(p, offset, length),
            Some(_) => Err(Self::fail("reading", p)),
        }
    }
    fn upload(&self, p: &str) -> crate::Result<Box<dyn crate::storage::Upload>> {
        match self.roll() {
            None => self.inner.upload(p),
            Some(_) => Err(Self::fail("uploading", p)),
        }
    }
    fn put(&self, p: &str, d: &[u8]) -> crate::Result<()> {
        match self.roll() {
            None => self.inner.put(p, d),
            Some(true) => self.inner.put(p, d).and(Err(Self::fail("putting", p))),
            Some(false) => Err(Self::fail("putting", p)),
        }
    }
    fn put_if_absent(&self, p: &str, d: &[u8]) -> crate::Result<()> {
        match self.roll() {
            None => self.inner.put_if_absent(p, d),
            Some(true) => self
                .inner
                .put_if_absent(p, d)
                .and(Err(Self::fail("putting", p))),
            Some(false) => Err(Self::fail("putting", p)),
        }
    }
    fn list(&self, p: &str) -> crate::Result<Vec<crate::storage::ObjectMeta>> {
        match self.roll() {
            None => self.inner.list(p),
            Some(_) => Err(Self::fail("listing", p)),
        }
    }
    fn delete(&self, p: &str) -> crate::Result<()> {
        match self.roll() {
            None => self.inner.delete(p),
            Some(true) => self.inner.delete(p).and(Err(Self::fail("deleting", p))),
            Some(false) => Err(Self::fail("deleting", p)),
        }
    }
    fn head(&self, p: &str) -> crate::Result<Option<crate::storage::ObjectMeta>> {
        match self.roll() {
            None => self.inner.head(p),
            Some(_) => Err(Self::fail("reading", p)),
        }
    }
}

/// What [`fault_run`] needs of a format besides its writer and committer: how to create the
/// table, maintain it, and read it back independently of the code under test.
pub struct FaultRunFormat<'a> {
    /// A log table `id INT NOT NULL, name STRING` (see [`id_name_table`]).
    pub table: TableInfo,
    /// The plugin configuration (retention and compaction options that make maintenance act
    /// every round).
    pub config: Vec<(String, String)>,
    pub create: &'a dyn Fn(&dyn crate::storage::Storage) -> crate::Result<()>,
    pub maintain: &'a dyn Fn(
        &dyn crate::storage::Storage,
        &crate::wit::MaintenanceRequest,
    ) -> crate::Result<crate::wit::MaintenanceReport>,
    /// Every snapshot (version) the table lists.
    pub snapshots: &'a dyn Fn(&dyn crate::storage::Storage) -> Vec<i64>,
    /// The ids of the rows of a snapshot, sorted, read from every file it references (panics
    /// when one is missing or unreadable).
    pub rows: &'a dyn Fn(&dyn crate::storage::Storage, i64) -> Vec<i32>,
}

/// What [`fault_run`] saw, for a test to check that faults did happen.
#[derive(Debug, Default)]
pub struct FaultRunReport {
    pub rounds_registered: usize,
    pub faults: u64,
    pub snapshots: usize,
}

/// The seeds a format's fault test runs [`fault_run`] with.
pub const FAULT_RUN_SEEDS: std::ops::Range<u64> = 0..40;

/// The sum of the [`FaultRunReport`]s of many seeds: a fault test checks with
/// [`assert_exercised`](Self::assert_exercised) that its seeds did inject faults, register
/// rounds and expire snapshots, since a run where none happened proves nothing.
#[derive(Debug, Default)]
pub struct FaultRunTotals {
    seeds: usize,
    faults: u64,
    rounds_registered: usize,
    /// Seeds after which the table lists fewer snapshots than rounds were registered.
    seeds_expired: usize,
}

impl FaultRunTotals {
    pub fn add(&mut self, report: &FaultRunReport) {
        self.seeds += 1;
        self.faults += report.faults;
        self.rounds_registered += report.rounds_registered;
        self.seeds_expired += usize::from(report.snapshots < report.rounds_registered);
    }

    /// Panics unless faults averaged more than 2.5 per seed, registered rounds more than 2.5
    /// per seed, and maintenance expired snapshots in more than half the seeds.
    pub fn assert_exercised(&self) {
        let seeds = self.seeds as u64;
        assert!(
            self.faults * 2 > seeds * 5,
            "{} faults injected over {seeds} seeds",
            self.faults
        );
        assert!(
            self.rounds_registered as u64 * 2 > seeds * 5,
            "{} rounds registered over {seeds} seeds",
            self.rounds_registered
        );
        assert!(
            self.seeds_expired as u64 * 2 > seeds,
            "maintenance expired snapshots in {} of {seeds} seeds only",
            self.seeds_expired
        );
    }
}

/// Tiers `rounds` rounds of a log table, each followed by a maintenance call (expiry and
/// compaction), through `storage`, which injects faults, with a model of the host's commit
/// protocol (`host/src/tiering/commit.rs`): a failed commit is probed and its files aborted
/// only when the lake provably holds no snapshot of the round; the next round first registers
/// a snapshot Fluss missed. Then, without faults: every snapshot the table lists reads, and
/// the one Fluss registered holds exactly the rows of the rounds registered, each once (after
/// one more maintenance call without faults, which resumes any the faults interrupted).
pub fn fault_run<'s, W, C>(
    format: &FaultRunFormat<'_>,
    faulty: &'s FaultyStorage<'s>,
    rounds: i32,
) -> FaultRunReport
where
    W: crate::plugin::FormatWriter<&'s dyn crate::storage::Storage>,
    C: crate::plugin::FormatCommitter<&'s dyn crate::storage::Storage>,
{
    use crate::storage::Storage;
    let storage: &'s dyn Storage = faulty;
    faulty.set_enabled(false);
    (format.create)(storage).expect("create the table");
    faulty.set_enabled(true);
    let offsets = |round: i32| format!("/offsets/{round}");
    let ids_of = |round: i32| (round * 10..round * 10 + 4).collect::<Vec<i32>>();
    let mut registered: Option<i64> = None;
    let mut model: Vec<i32> = Vec::new();
    let mut counted: std::collections::HashSet<i32> = std::collections::HashSet::new();
    let context = || CommitterContext {
        table: format.table.clone(),
        config: format.config.clone(),
        tiering_config: Vec::new(),
    };
    // Registers the snapshot Fluss misses, as the host's recovery does; false on a fault.
    let recover = |registered: &mut Option<i64>,
                   model: &mut Vec<i32>,
                   counted: &mut std::collections::HashSet<i32>|
     -> bool {
        let Ok(c) = C::open(context(), storage) else {
            return false;
        };
        match c.get_missing_lake_snapshot(*registered) {
            Ok(None) => true,
            Ok(Some(s)) => {
                let round = s
                    .properties
                    .iter()
                    .find(|(k, _)| k == crate::FLUSS_OFFSETS_PROPERTY)
                    .and_then(|(_, v)| v.strip_prefix("/offsets/"))
                    .and_then(|r| r.parse::<i32>().ok())
                    .expect("a tiering snapshot names its round's offsets");
                *registered = Some(s.snapshot_id);
                if counted.insert(round) {
                    model.extend(ids_of(round));
                }
                true
            }
            Err(_) => false,
        }
    };
    let mut offset = 0i64;
    for round in 0..rounds {
        if !recover(&mut registered, &mut model, &mut counted) {
            continue;
        }
        let written = (|| -> crate::Result<Vec<u8>> {
            let mut w = W::open(&writer_context(&format.table, 0, None, &[]), storage)?;
            let ids = ids_of(round);
            let batch = {
                use std::sync::Arc;

                use arrow_array::{Int32Array, RecordBatch, StringArray};
                use arrow_schema::{DataType, Field, Schema};
                let schema = Arc::new(Schema::new(vec![
                    Field::new("id", DataType::Int32, false),
                    Field::new("name", DataType::Utf8, true),
                ]));
                RecordBatch::try_new(
                    schema,
                    vec![
                        Arc::new(Int32Array::from(ids.clone())),
                        Arc::new(StringArray::from(vec![Some("x"); ids.len()])),
                    ],
                )?
            };
            w.write(crate::ipc::make_row_batch(&batch, offset, 1_000)?)?;
            Ok(w.complete()?.payload)
        })();
        offset += 4;
        let Ok(payload) = written else {
            continue; // the writer's files are orphans: nothing references them
        };
        let Ok(mut c) = C::open(context(), storage) else {
            continue;
        };
        let Ok(committable) = c.to_committable(&[payload]) else {
            continue;
        };
        let properties = vec![(crate::FLUSS_OFFSETS_PROPERTY.to_string(), offsets(round))];
        match c.commit(&committable, &properties, registered) {
            Ok(r) => {
                registered = Some(r.snapshot_id);
                counted.insert(round);
                model.extend(ids_of(round));
            }
            Err(_) => match c.get_missing_lake_snapshot(None) {
                Ok(Some(s))
                    if s.properties.iter().any(|(k, v)| {
                        k == crate::FLUSS_OFFSETS_PROPERTY && *v == offsets(round)
                    }) => {} // published: the next round's recovery registers it
                Ok(_) => {
                    let _ = c.abort(&committable);
                }
                Err(_) => {} // cannot tell: the files stay
            },
        }
        let request = crate::wit::MaintenanceRequest {
            expire_snapshots: true,
            compact: true,
            keep_since: registered,
            deadline_millis: i64::MAX,
        };
        let _ = (format.maintain)(storage, &request);
    }
    faulty.set_enabled(false);
    assert!(
        recover(&mut registered, &mut model, &mut counted),
        "recovery without faults"
    );
    // A maintenance call that faults interrupted (an expiry between its files' deletions and
    // its snapshot's) is resumed by the next one, which then succeeds.
    let request = crate::wit::MaintenanceRequest {
        expire_snapshots: true,
        compact: true,
        keep_since: registered,
        deadline_millis: i64::MAX,
    };
    if let Err(e) = (format.maintain)(storage, &request) {
        panic!("maintenance without faults after faulty calls: {e}");
    }
    model.sort_unstable();
    let snapshots = (format.snapshots)(storage);
    for &s in &snapshots {
        (format.rows)(storage, s);
    }
    if let Some(id) = registered {
        assert!(snapshots.contains(&id), "Fluss's snapshot {id} was expired");
        assert_eq!(
            (format.rows)(storage, id),
            model,
            "snapshot {id} Fluss registered"
        );
    }
    FaultRunReport {
        rounds_registered: counted.len(),
        faults: faulty.faults(),
        snapshots: snapshots.len(),
    }
}
