//! What the native tests share: a Fluss table of every supported type, its rows, rounds
//! written through the plugin's own writer and committer, and pylance (`tests/python/lance_read.py`).

#![allow(dead_code)]

use std::process::Command;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int8Array, Int16Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use fluss_lake_guest_sdk::ipc::make_row_batch;
use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::testing::{committer_context, tiered_base, writer_context};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_lance::committer::LanceCommitter;
use fluss_lake_lance::writer::LanceWriter;

pub const COLUMNS: &[(&str, &str, bool)] = &[
    ("id", "INT", false),
    ("big", "BIGINT", true),
    ("name", "STRING", true),
    ("score", "DOUBLE", true),
    ("f", "FLOAT", true),
    ("flag", "BOOLEAN", true),
    ("day", "DATE", true),
    ("ts", "TIMESTAMP(6)", true),
    ("ltz", "TIMESTAMP_LTZ(3)", true),
    ("amount", "DECIMAL(10, 2)", true),
    ("bin", "BYTES", true),
    ("tiny", "TINYINT", true),
    ("small", "SMALLINT", true),
];

pub fn batch(ids: &[i32]) -> RecordBatch {
    let v = |i: i32| i % 5 != 3;
    let fields = vec![
        Field::new("id", DataType::Int32, false),
        Field::new("big", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
        Field::new("f", DataType::Float32, true),
        Field::new("flag", DataType::Boolean, true),
        Field::new("day", DataType::Date32, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new(
            "ltz",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("amount", DataType::Decimal128(10, 2), true),
        Field::new("bin", DataType::Binary, true),
        Field::new("tiny", DataType::Int8, true),
        Field::new("small", DataType::Int16, true),
    ];
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(ids.to_vec())),
        Arc::new(Int64Array::from_iter(
            ids.iter()
                .map(|&i| v(i).then_some(i as i64 * 1_000_000_007)),
        )),
        Arc::new(StringArray::from_iter(
            ids.iter().map(|&i| v(i).then(|| format!("name {i} é"))),
        )),
        Arc::new(Float64Array::from_iter(
            ids.iter().map(|&i| v(i).then_some(i as f64 / 4.0)),
        )),
        Arc::new(Float32Array::from_iter(
            ids.iter().map(|&i| v(i).then_some(i as f32 / 2.0)),
        )),
        Arc::new(BooleanArray::from_iter(
            ids.iter().map(|&i| v(i).then_some(i % 2 == 0)),
        )),
        Arc::new(Date32Array::from_iter(
            ids.iter().map(|&i| v(i).then_some(19_000 + i)),
        )),
        Arc::new(TimestampMicrosecondArray::from_iter(
            ids.iter()
                .map(|&i| v(i).then_some(1_600_000_000_000_000 + i as i64)),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter(
                ids.iter()
                    .map(|&i| v(i).then_some(1_650_000_000_000 + i as i64)),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(
            Decimal128Array::from_iter(ids.iter().map(|&i| v(i).then_some(i as i128 * 101 - 7)))
                .with_precision_and_scale(10, 2)
                .unwrap(),
        ),
        Arc::new(BinaryArray::from_iter(
            ids.iter().map(|&i| v(i).then(|| vec![i as u8, 0, 255])),
        )),
        Arc::new(Int8Array::from_iter(
            ids.iter().map(|&i| v(i).then_some((i % 100) as i8)),
        )),
        Arc::new(Int16Array::from_iter(
            ids.iter().map(|&i| v(i).then_some(-(i as i16))),
        )),
    ];
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

/// Runs one `tests/python/lance_read.py` command in one of the test process's pooled Python
/// workers: its output lines, or the error it raised.
pub fn try_lance_read(args: &[&str]) -> Result<Vec<serde_json::Value>, String> {
    let command: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    fluss_lake_python_readers::batch("lance_read.py", &[], &[command]).remove(0)
}

/// [`try_lance_read`], which must succeed.
pub fn lance_read(args: &[&str]) -> Vec<serde_json::Value> {
    try_lance_read(args).unwrap_or_else(|e| panic!("lance_read.py {args:?}:\n{e}"))
}

/// Runs `code` with pylance's Python; `args` become `sys.argv[1..]`. Its stdout.
pub fn python(code: &str, args: &[&str]) -> String {
    let out = Command::new(fluss_lake_python_readers::python())
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "python {args:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Tiers one round: `buckets` splits of `rows` rows each (ids `round * 1000 + bucket * 100 + i`),
/// committed as one version; the version.
pub fn write_round(
    storage: &dyn Storage,
    t: &TableInfo,
    round: i32,
    buckets: i32,
    rows: i32,
) -> i64 {
    let mut payloads = Vec::new();
    for bucket in 0..buckets {
        let ids: Vec<i32> = (0..rows).map(|i| round * 1000 + bucket * 100 + i).collect();
        let mut w = LanceWriter::open(&writer_context(t, bucket, None, &[]), storage).unwrap();
        w.write(
            make_row_batch(
                &batch(&ids),
                (round * buckets + bucket) as i64 * rows as i64,
                0,
            )
            .unwrap(),
        )
        .unwrap();
        payloads.push(w.complete().unwrap().payload);
    }
    let mut c = LanceCommitter::open(committer_context(t, &[]), storage).unwrap();
    let committable = c.to_committable(&payloads).unwrap();
    let base = tiered_base(&c);
    c.commit(
        &committable,
        &[("fluss-offsets".into(), format!("/o/{round}"))],
        base,
    )
    .unwrap()
    .snapshot_id
}
