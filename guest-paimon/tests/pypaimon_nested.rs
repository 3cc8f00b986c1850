//! Nested columns (ARRAY, MAP, ROW, nested in each other, nulls at every level) written by the
//! plugin's native build the way the host drives it, read back by pypaimon; and a lake table
//! another engine changed (a column added, columns reordered) still written by column name.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use fluss_lake_guest_sdk::datatype::ColumnType;
use fluss_lake_guest_sdk::ipc::make_row_batch;
use fluss_lake_guest_sdk::storage::{LocalStorage, Storage};
use fluss_lake_guest_sdk::testing::{json_array, log_table, writer_context};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_paimon::catalog::{LAYOUT, create_table_if_missing, validate_table};
use fluss_lake_paimon::committer::{PaimonCommitter, to_committable};
use fluss_lake_paimon::schema::{SchemaField, load_latest_schema, schema_path};
use fluss_lake_paimon::writer::PaimonWriter;
use serde_json::{Value as Json, json};

use crate::common::{cmd, python, read_many, root, uuid_like};

const COLUMNS: &[(&str, &str, bool)] = &[
    ("id", "INT", false),
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

const COMMIT_TS: i64 = 1_750_000_000_123;

/// Row `id`'s values, as JSON in the shape of [`json_array`] and of the readers' canonical
/// form alike: nulls and empty collections at every level, by id.
fn row(id: i64) -> Json {
    let or_null = |null: bool, v: Json| if null { Json::Null } else { v };
    json!({
        "id": id,
        "tags": match id % 5 {
            4 => Json::Null,
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

/// The rows `ids` as fluss-rs hands them to the host.
fn batch(columns: &[(&str, &str, bool)], ids: &[i64]) -> RecordBatch {
    let rows: Vec<Json> = ids.iter().map(|&id| row(id)).collect();
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, t, nullable)| {
            Field::new(*n, ColumnType::parse(t).unwrap().arrow_type(), *nullable)
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

/// Writes `ids` into Fluss bucket `bucket` (offsets from `first_offset`) and commits them as
/// snapshot `round`; returns the rows the readers should add, system columns included.
fn round(
    storage: &LocalStorage,
    table: &TableInfo,
    columns: &[(&str, &str, bool)],
    ids: &[i64],
    round: i64,
) -> Vec<Json> {
    let bucket = 0;
    let first_offset = (round - 1) * 100;
    let ctx = writer_context(table, bucket, None, &[]);
    let mut w = PaimonWriter::open(&ctx, storage).unwrap();
    w.write(make_row_batch(&batch(columns, ids), first_offset, COMMIT_TS).unwrap())
        .unwrap();
    let result = w.complete().unwrap();
    let committable = to_committable(&[result.payload]).unwrap();
    let mut committer = PaimonCommitter::new(storage, vec![]);
    let res = committer
        .commit(&committable, &[], (round > 1).then_some(round - 1))
        .unwrap();
    assert_eq!(res.snapshot_id, round);
    ids.iter()
        .enumerate()
        .map(|(k, &id)| {
            let mut r = row(id);
            let o = r.as_object_mut().unwrap();
            o.retain(|name, _| columns.iter().any(|(c, _, _)| c == name));
            o.insert("__bucket".into(), json!(bucket));
            o.insert("__offset".into(), json!(first_offset + k as i64));
            o.insert("__timestamp".into(), json!(COMMIT_TS * 1000));
            r
        })
        .collect()
}

fn sorted(mut rows: Vec<Json>) -> Vec<Json> {
    rows.sort_by_key(|r| r["id"].as_i64());
    rows
}

#[test]
fn pypaimon_reads_nested_columns_and_tables_changed_elsewhere() {
    let _ = python();
    let warehouse = root()
        .join("target/test-warehouses")
        .join(format!("paimon-nested-{}", uuid_like()));
    std::fs::create_dir_all(&warehouse).unwrap();
    let table = log_table("fluss", "nested", COLUMNS, &[], 1, &[]);
    let storage = LocalStorage::new(warehouse.join(LAYOUT.location(&table).unwrap()));
    assert!(create_table_if_missing(&storage, &table, &[]).unwrap());
    validate_table(&storage, &table).unwrap();

    // Field ids as Paimon numbers them: each column, then its rows' fields after it.
    let schema = load_latest_schema(&storage).unwrap().unwrap();
    let ids: Vec<(&str, i32)> = schema
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.id))
        .collect();
    assert_eq!(
        ids,
        [
            ("id", 0),
            ("tags", 1),
            ("nums", 2),
            ("attrs", 3),
            ("point", 4),
            ("events", 7),
            ("__bucket", 10),
            ("__offset", 11),
            ("__timestamp", 12)
        ]
    );
    assert_eq!(schema.highest_field_id, 12);
    assert_eq!(
        schema.fields[4].type_json,
        json!({"type": "ROW", "fields": [
            {"id": 5, "name": "x", "type": "INT"},
            {"id": 6, "name": "y", "type": "STRING NOT NULL", "description": "the label"}]})
    );

    let mut expected = round(&storage, &table, COLUMNS, &(0..42).collect::<Vec<_>>(), 1);

    // Another engine adds a nullable column after `__timestamp` (Fluss #4038) and one first,
    // and moves `tags` last: Fluss's rows still land in the columns of their names.
    let mut changed = schema.clone();
    changed.id = 1;
    let tags = changed.fields.remove(1);
    changed.fields.push(tags);
    for (at, name) in [(changed.fields.len(), "added_last"), (0, "added_first")] {
        changed.highest_field_id += 1;
        changed.fields.insert(
            at,
            SchemaField {
                id: changed.highest_field_id,
                name: name.into(),
                type_json: json!("STRING"),
                description: None,
            },
        );
    }
    storage
        .put(&schema_path(1), &changed.to_json().unwrap())
        .unwrap();
    validate_table(&storage, &table).unwrap();
    let more = round(&storage, &table, COLUMNS, &(42..60).collect::<Vec<_>>(), 2);
    let with_added = |mut r: Json| {
        let o = r.as_object_mut().unwrap();
        o.insert("added_first".into(), Json::Null);
        o.insert("added_last".into(), Json::Null);
        r
    };
    let first = expected.clone();
    expected = expected.into_iter().chain(more).map(with_added).collect();

    let t = "nested";
    let mut out = read_many(
        &warehouse,
        &[
            cmd(&["rows", "fluss", t, "--snapshot", "1"]),
            cmd(&["rows", "fluss", t]),
        ],
    )
    .into_iter();
    assert_eq!(sorted(out.next().unwrap()), sorted(first), "snapshot 1");
    assert_eq!(sorted(out.next().unwrap()), sorted(expected), "latest");

    // A column dropped or retyped elsewhere that Fluss still has: refused, naming it.
    let mut dropped = changed.clone();
    dropped.id = 2;
    dropped.fields.retain(|f| f.name != "nums");
    storage
        .put(&schema_path(2), &dropped.to_json().unwrap())
        .unwrap();
    let e = validate_table(&storage, &table).unwrap_err().to_string();
    assert!(
        e.contains("Fluss column nums is not in the Paimon table"),
        "{e}"
    );
    let ctx = writer_context(&table, 0, None, &[]);
    assert!(PaimonWriter::open(&ctx, &storage).is_err());

    std::fs::remove_dir_all(&warehouse).unwrap();
}
