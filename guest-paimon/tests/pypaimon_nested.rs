//! Nested columns (ARRAY, MAP, ROW, nested in each other, nulls at every level) written by the
//! plugin's native build the way the host drives it, read back by pypaimon; and a lake table
//! another engine changed (a column added, columns reordered) still written by column name.

use arrow_array::RecordBatch;
use fluss_lake_guest_sdk::ipc::make_row_batch;
use fluss_lake_guest_sdk::storage::{LocalStorage, Storage};
use fluss_lake_guest_sdk::testing::{
    NESTED_COLUMNS, log_table, nested_batch, nested_row, writer_context,
};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_paimon::catalog::{LAYOUT, create_table_if_missing, validate_table};
use fluss_lake_paimon::committer::{PaimonCommitter, to_committable};
use fluss_lake_paimon::schema::{SchemaField, load_latest_schema, schema_path};
use fluss_lake_paimon::writer::PaimonWriter;
use serde_json::{Value as Json, json};

use crate::common::{cmd, python, read_many, scratch_warehouse};

const COLUMNS: &[(&str, &str, bool)] = &NESTED_COLUMNS;

const COMMIT_TS: i64 = 1_750_000_000_123;

/// The rows `ids` (consecutive) as the host hands them over.
fn batch(ids: &[i64]) -> RecordBatch {
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1));
    nested_batch(ids[0], ids.len() as i64)
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
    w.write(make_row_batch(&batch(ids), first_offset, COMMIT_TS).unwrap())
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
            let mut r = nested_row(id);
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
    let warehouse = scratch_warehouse("paimon-nested");
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
