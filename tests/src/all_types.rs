//! The "every type" rows the format component tests write: one column of each Fluss type the
//! lake formats map (with nulls), as fluss-rs hands them to the host, and their canonical JSON
//! as the Python readers print it.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int8Array, Int16Array, Int32Array, Int64Array, RecordBatch, StringArray, Time32SecondArray,
    TimestampMicrosecondArray, TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use serde_json::{Value, json};

pub const ALL_TYPES: &[(&str, &str, bool)] = &[
    ("id", "INT", false),
    ("big", "BIGINT", true),
    ("name", "STRING", true),
    ("score", "DOUBLE", true),
    ("flag", "BOOLEAN", true),
    ("amount", "DECIMAL(10, 2)", true),
    ("day", "DATE", true),
    ("ts", "TIMESTAMP(6)", true),
    ("ltz", "TIMESTAMP_LTZ(3)", true),
    ("bin", "BYTES", true),
    ("tiny", "TINYINT", true),
    ("small", "SMALLINT", true),
    ("f", "FLOAT", true),
    ("t", "TIME(0)", true),
    ("code", "CHAR(3)", true),
];

pub fn nulls(id: i32) -> bool {
    id % 7 == 3
}

/// Rows of the all-types table as fluss-rs hands them to the host, plus their canonical
/// JSON (without system columns), as the readers print them.
pub fn all_types(ids: &[i32], extra: Option<(&str, &str)>) -> (RecordBatch, Vec<Value>) {
    let v = |id: i32| !nulls(id);
    let mut fields = vec![
        Field::new("id", DataType::Int32, false),
        Field::new("big", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
        Field::new("flag", DataType::Boolean, true),
        Field::new("amount", DataType::Decimal128(10, 2), true),
        Field::new("day", DataType::Date32, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new(
            "ltz",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("bin", DataType::Binary, true),
        Field::new("tiny", DataType::Int8, true),
        Field::new("small", DataType::Int16, true),
        Field::new("f", DataType::Float32, true),
        Field::new("t", DataType::Time32(TimeUnit::Second), true),
        Field::new("code", DataType::Utf8, true),
    ];
    let name = |id: i32| format!("name {id} {}", "é".repeat((id % 20) as usize));
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(ids.to_vec())),
        Arc::new(Int64Array::from_iter(
            ids.iter()
                .map(|&i| v(i).then_some(i as i64 * 10_000_000_019)),
        )),
        Arc::new(StringArray::from_iter(
            ids.iter().map(|&i| v(i).then(|| name(i))),
        )),
        Arc::new(Float64Array::from_iter(
            ids.iter().map(|&i| v(i).then_some(i as f64 * 0.5 - 3.0)),
        )),
        Arc::new(BooleanArray::from_iter(
            ids.iter().map(|&i| v(i).then_some(i % 2 == 0)),
        )),
        Arc::new(
            Decimal128Array::from_iter(ids.iter().map(|&i| v(i).then_some(i as i128 * 101 - 7)))
                .with_precision_and_scale(10, 2)
                .unwrap(),
        ),
        Arc::new(Date32Array::from_iter(
            ids.iter().map(|&i| v(i).then_some(19_000 + i)),
        )),
        Arc::new(TimestampMicrosecondArray::from_iter(ids.iter().map(|&i| {
            v(i).then_some(1_600_000_000_000_000 + i as i64 * 1_000_003)
        }))),
        Arc::new(
            TimestampMillisecondArray::from_iter(
                ids.iter()
                    .map(|&i| v(i).then_some(1_650_000_000_000 + i as i64 * 7)),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(BinaryArray::from_iter(
            ids.iter().map(|&i| v(i).then(|| vec![i as u8, 0xff, 0x00])),
        )),
        Arc::new(Int8Array::from_iter(
            ids.iter().map(|&i| v(i).then_some((i % 100) as i8)),
        )),
        Arc::new(Int16Array::from_iter(
            ids.iter().map(|&i| v(i).then_some(-(i as i16))),
        )),
        Arc::new(Float32Array::from_iter(
            ids.iter().map(|&i| v(i).then_some(i as f32 * 0.25)),
        )),
        Arc::new(Time32SecondArray::from_iter(
            ids.iter().map(|&i| v(i).then_some(i * 61)),
        )),
        Arc::new(StringArray::from_iter(
            ids.iter()
                .map(|&i| v(i).then(|| format!("c{:02}", i % 100))),
        )),
    ];
    if let Some((col, value)) = extra {
        fields.push(Field::new(col, DataType::Utf8, true));
        cols.push(Arc::new(StringArray::from(vec![value; ids.len()])));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
    let expected = ids
        .iter()
        .map(|&i| {
            let n = nulls(i);
            let opt = |x: Value| if n { Value::Null } else { x };
            let unscaled = i as i128 * 101 - 7;
            let sign = if unscaled < 0 { "-" } else { "" };
            let mut o = json!({
                "id": i,
                "big": opt(json!(i as i64 * 10_000_000_019)),
                "name": opt(json!(name(i))),
                "score": opt(json!(i as f64 * 0.5 - 3.0)),
                "flag": opt(json!(i % 2 == 0)),
                "amount": opt(json!(format!("{sign}{}.{:02}", unscaled.abs() / 100, unscaled.abs() % 100))),
                "day": opt(json!(19_000 + i)),
                "ts": opt(json!(1_600_000_000_000_000 + i as i64 * 1_000_003)),
                "ltz": opt(json!((1_650_000_000_000 + i as i64 * 7) * 1000)),
                "bin": opt(json!(format!("{:02x}ff00", i as u8))),
                "tiny": opt(json!(i % 100)),
                "small": opt(json!(-i)),
                "f": opt(json!(i as f64 * 0.25)),
                "t": opt(json!(i as i64 * 61 * 1000)),
                "code": opt(json!(format!("c{:02}", i % 100))),
            });
            if let Some((col, value)) = extra {
                o[col] = json!(value);
            }
            o
        })
        .collect();
    (batch, expected)
}
