//! The nested-type test table (ARRAY, MAP, ROW, nested in each other, NOT NULL inside and
//! out; the SDK's `testing::NESTED_COLUMNS`) as Fluss columns, its rows and batches, and how
//! pyiceberg reads them.

use fluss::metadata::{DataField, DataType, DataTypes};
use serde_json::{Value, json};

/// The columns' names.
pub const COLUMN_NAMES: [&str; 6] = ["id", "tags", "nums", "attrs", "point", "events"];

/// The columns as the contract spells them, rows and batches: the SDK's, which the plugins'
/// own tests use.
pub use fluss_lake_guest_sdk::testing::{
    NESTED_COLUMNS as CONTRACT_COLUMNS, nested_batch as batch, nested_row as row,
};

/// [`CONTRACT_COLUMNS`] as Fluss columns (the end-to-end tests check that the host spells them
/// so).
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

/// The nested table's rows 0..160 as a component round writes them: two splits (buckets 0
/// and 1) of two batches each, and the rows the lake must then hold, system columns included.
pub fn component_splits() -> (Vec<crate::component::SplitInput>, Vec<Value>) {
    use crate::component::{SplitInput, TS_MS, row_batch, with_system};
    let mut expected = Vec::new();
    let mut splits = Vec::new();
    for (bucket, (first, count)) in [(0, 90), (90, 70)].into_iter().enumerate() {
        let b = batch(first, count);
        let rows: Vec<Value> = (first..first + count).map(row).collect();
        expected.extend(with_system(rows, bucket as i32, 0));
        splits.push(SplitInput {
            bucket: bucket as i32,
            partition: None,
            batches: vec![
                row_batch(&b.slice(0, 30), Vec::new(), 0, TS_MS),
                row_batch(&b.slice(30, count as usize - 30), Vec::new(), 30, TS_MS),
            ],
        });
    }
    (splits, expected)
}
