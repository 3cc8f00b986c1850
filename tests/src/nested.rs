//! The nested-type test table (ARRAY, MAP, ROW, nested in each other, NOT NULL inside and
//! out) and its rows, with nulls and empty collections at every level: as Fluss columns, as
//! the contract spells their types, as Arrow batches fluss-rs appends and hands over, and in
//! the readers' canonical JSON.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{Field, Schema as ArrowSchema};
use fluss::metadata::{DataField, DataType, DataTypes};
use fluss::record::to_arrow_type;
use fluss_lake_guest_sdk::testing::json_array;
use serde_json::{Value, json};

/// The columns' names.
pub const COLUMN_NAMES: [&str; 6] = ["id", "tags", "nums", "attrs", "point", "events"];

/// The columns as the contract spells them (wit `column.data-type`), with their nullability:
/// what the host hands a plugin for [`columns`].
pub const CONTRACT_COLUMNS: [(&str, &str, bool); 6] = [
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

/// The columns: every nested type, nested in each other, NOT NULL inside and out.
pub fn columns() -> Vec<(&'static str, DataType)> {
    let field = |name: &str, ty: DataType, description: Option<&str>| {
        DataField::new(name, ty, description.map(str::to_string))
    };
    vec![
        ("id", DataTypes::int()),
        ("tags", DataTypes::array(DataTypes::string())),
        ("nums", DataTypes::array(DataTypes::int().as_non_nullable())),
        (
            "attrs",
            DataTypes::map(DataTypes::string().as_non_nullable(), DataTypes::int()),
        ),
        (
            "point",
            DataTypes::row(vec![
                field("x", DataTypes::int(), None),
                field(
                    "y",
                    DataTypes::string().as_non_nullable(),
                    Some("the label"),
                ),
            ]),
        ),
        (
            "events",
            DataTypes::array(DataTypes::row(vec![
                field("at", DataTypes::timestamp_with_precision(6), None),
                field(
                    "labels",
                    DataTypes::map(
                        DataTypes::string().as_non_nullable(),
                        DataTypes::array(DataTypes::decimal(10, 2)),
                    ),
                    None,
                ),
            ])),
        ),
    ]
}

/// Row `id` in the readers' canonical JSON, which is also how [`json_array`] reads it.
pub fn row(id: i64) -> Value {
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

/// Rows `first..first + count`, as fluss-rs appends and hands them over.
pub fn batch(first: i64, count: i64) -> RecordBatch {
    let rows: Vec<Value> = (first..first + count).map(row).collect();
    let fields: Vec<Field> = columns()
        .iter()
        .map(|(name, ty)| Field::new(*name, to_arrow_type(ty).unwrap(), ty.is_nullable()))
        .collect();
    let arrays = fields
        .iter()
        .map(|f| {
            let values: Vec<Value> = rows.iter().map(|r| r[f.name()].clone()).collect();
            json_array(&values, f.data_type())
        })
        .collect();
    RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), arrays).unwrap()
}

/// Row `expected` as pyiceberg 0.12 reads it: a null `list<struct>` (the `events` column) comes
/// back as an empty list (apache/iceberg-python#3833, open: its projection rebuilds such lists
/// without their validity). The data files hold the null: DuckDB, Java Iceberg and pyarrow
/// read it.
pub fn as_pyiceberg_reads(mut expected: Value) -> Value {
    if expected["events"].is_null() {
        expected["events"] = json!([]);
    }
    expected
}
