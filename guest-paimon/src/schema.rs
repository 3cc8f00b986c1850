//! Paimon table schemas (`schema/schema-N`, JSON) and how a Fluss table maps onto one.
//!
//! Fluss 0.9.1's `PaimonLakeCatalog` creates the Paimon table with the Fluss columns followed
//! by the system columns `__bucket INT`, `__offset BIGINT`, `__timestamp TIMESTAMP(3) WITH
//! LOCAL TIME ZONE`; later Fluss versions (FIP-27) create tables without them, and other
//! engines may add columns anywhere. Every such table is read here: [`check_compatible`] says,
//! by column name, which lake column each Fluss column and each system value goes to.

use std::collections::BTreeMap;

use fluss_lake_guest_sdk::datatype::ColumnType;
use fluss_lake_guest_sdk::memo::FileMemo;
use fluss_lake_guest_sdk::storage::{ObjectMeta, Storage};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result, ResultExt};
use serde::{Deserialize, Serialize};

use crate::types::{PaimonType, TypeRoot};

/// Directory of schema files.
pub const SCHEMA_DIR: &str = "schema";
/// `TableSchema.CURRENT_VERSION`.
pub const SCHEMA_VERSION: i32 = 3;
/// Fluss's system column names.
pub const BUCKET_COLUMN: &str = "__bucket";
/// See [`BUCKET_COLUMN`].
pub const OFFSET_COLUMN: &str = "__offset";
/// See [`BUCKET_COLUMN`].
pub const TIMESTAMP_COLUMN: &str = "__timestamp";

/// One field of a Paimon schema as stored in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaField {
    /// Field id (Parquet field id).
    pub id: i32,
    /// Column name.
    pub name: String,
    /// The type: a Paimon SQL string for atomic types, an object for nested ones
    /// ([`PaimonType::from_json`]).
    #[serde(rename = "type")]
    pub type_json: serde_json::Value,
    /// Column comment.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub description: Option<String>,
}

impl SchemaField {
    /// The parsed type.
    pub fn data_type(&self) -> Result<PaimonType> {
        PaimonType::from_json(&self.type_json).with_context(|| format!("column {}", self.name))
    }
}

/// Paimon `TableSchema`, field order as Paimon's `SchemaSerializer` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableSchema {
    /// Format version (3).
    #[serde(default = "default_version")]
    pub version: i32,
    /// Schema id (`schema-<id>`).
    pub id: i64,
    /// Columns.
    pub fields: Vec<SchemaField>,
    /// Highest field id ever assigned.
    pub highest_field_id: i32,
    /// Partition keys.
    #[serde(default)]
    pub partition_keys: Vec<String>,
    /// Primary keys.
    #[serde(default)]
    pub primary_keys: Vec<String>,
    /// Table options.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Table comment.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub comment: Option<String>,
    /// Creation time.
    #[serde(default)]
    pub time_millis: i64,
}

fn default_version() -> i32 {
    SCHEMA_VERSION
}

impl TableSchema {
    /// Option value.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }

    /// The `bucket` option (Paimon default -1: bucket-unaware for append tables).
    pub fn bucket_option(&self) -> Result<i32> {
        match self.option("bucket") {
            None => Ok(-1),
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| Error::corrupt(format!("Paimon option bucket={v:?} is not a number"))),
        }
    }

    /// All field types, parsed.
    pub fn field_types(&self) -> Result<Vec<PaimonType>> {
        self.fields.iter().map(SchemaField::data_type).collect()
    }

    /// Types of the partition keys, in key order.
    pub fn partition_types(&self) -> Result<Vec<PaimonType>> {
        self.partition_keys
            .iter()
            .map(|k| {
                self.fields
                    .iter()
                    .find(|f| &f.name == k)
                    .ok_or_else(|| Error::corrupt(format!("partition key {k} is not a column")))
                    .and_then(SchemaField::data_type)
            })
            .collect()
    }

    /// JSON as Paimon writes it (pretty-printed).
    pub fn to_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec_pretty(self).map_err(|e| Error::internal(format!("schema json: {e}")))
    }
}

/// The path of schema `id`.
pub fn schema_path(id: i64) -> String {
    format!("{SCHEMA_DIR}/schema-{id}")
}

/// Reads the latest schema, or `None` when the table has no schema (does not exist).
pub fn load_latest_schema(storage: &dyn Storage) -> Result<Option<TableSchema>> {
    match latest_schema_file(storage)? {
        Some((id, _)) => load_schema(storage, id).map(Some),
        None => Ok(None),
    }
}

/// The id and listing entry of the table's latest schema file, if it has one.
fn latest_schema_file(storage: &dyn Storage) -> Result<Option<(i64, ObjectMeta)>> {
    Ok(storage
        .list(SCHEMA_DIR)?
        .into_iter()
        .filter_map(|m| {
            let id = m
                .path
                .rsplit('/')
                .next()?
                .strip_prefix("schema-")?
                .parse::<i64>()
                .ok()?;
            Some((id, m))
        })
        .max_by_key(|(id, _)| *id))
}

thread_local! {
    static LAST_SCHEMA: FileMemo<TableSchema> = const { FileMemo::new() };
}

/// [`load_latest_schema`] for a writer of table `table_id`: the schema directory is listed
/// as before, but the latest file is read only when it is not the one this plugin instance
/// read last ([`FileMemo`]: a round's splits are written one after another by the same
/// instances).
pub fn load_latest_schema_of(storage: &dyn Storage, table_id: i64) -> Result<Option<TableSchema>> {
    let Some((id, file)) = latest_schema_file(storage)? else {
        return Ok(None);
    };
    LAST_SCHEMA
        .with(|memo| memo.get_or_read(table_id, &file, || load_schema(storage, id)))
        .map(Some)
}

/// Reads schema `id`.
pub fn load_schema(storage: &dyn Storage, id: i64) -> Result<TableSchema> {
    let path = schema_path(id);
    let bytes = storage
        .get(&path)
        .with_context(|| format!("reading {path}"))?;
    serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(format!("{path}: {e}")))
}

/// The Fluss system columns, in the order Fluss 0.9's `PaimonLakeCatalog` appends them.
const SYSTEM_COLUMNS: [&str; 3] = [BUCKET_COLUMN, OFFSET_COLUMN, TIMESTAMP_COLUMN];

/// The columns of a Paimon table as data files store them, and whether it has Fluss's system
/// columns. Columns are found by name, not position: another engine may have added columns
/// anywhere, after `__timestamp` too (Fluss #4038), and a table created by Fluss 1.0 (FIP-27)
/// has no system columns at all.
#[derive(Debug, Clone, PartialEq)]
pub struct TableLayout {
    /// All Paimon fields (name, type, field id), in schema order.
    pub fields: Vec<(String, PaimonType, i32)>,
    /// True when the table has `__bucket`, `__offset` and `__timestamp`.
    pub has_system_columns: bool,
}

impl TableLayout {
    /// Derives the layout of a Paimon schema.
    pub fn of(schema: &TableSchema) -> Result<TableLayout> {
        let types = schema.field_types()?;
        let fields: Vec<_> = schema
            .fields
            .iter()
            .zip(types)
            .map(|(f, t)| (f.name.clone(), t, f.id))
            .collect();
        let present: Vec<&str> = SYSTEM_COLUMNS
            .into_iter()
            .filter(|s| fields.iter().any(|(name, _, _)| name == s))
            .collect();
        if !present.is_empty() && present.len() < SYSTEM_COLUMNS.len() {
            return Err(Error::unsupported(format!(
                "the Paimon table has the Fluss system column(s) {} but not all of __bucket, \
                 __offset and __timestamp; nothing is written",
                present.join(", ")
            )));
        }
        let has_system_columns = !present.is_empty();
        if has_system_columns {
            let type_of = |s: &str| {
                fields
                    .iter()
                    .find(|(name, _, _)| name == s)
                    .map(|(_, ty, _)| ty.root.clone())
            };
            let ok = type_of(BUCKET_COLUMN) == Some(TypeRoot::Int)
                && type_of(OFFSET_COLUMN) == Some(TypeRoot::BigInt)
                && matches!(type_of(TIMESTAMP_COLUMN), Some(TypeRoot::TimestampLtz(_)));
            if !ok {
                return Err(Error::unsupported(
                    "the Paimon system columns __bucket/__offset/__timestamp have unexpected types \
                     (INT, BIGINT, TIMESTAMP WITH LOCAL TIME ZONE expected); nothing is written",
                ));
            }
        }
        Ok(TableLayout {
            fields,
            has_system_columns,
        })
    }
}

/// Where a column of the Paimon table takes its values from when Fluss rows are written
/// (`Null`: a nullable column the Fluss table does not have, added to the lake table elsewhere).
pub use fluss_lake_guest_sdk::file_columns::ColumnSource;

/// How the rows of a Fluss table fill the columns of its Paimon table: the table's layout and,
/// for each of its columns in order, where the values come from.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteLayout {
    /// The Paimon table's columns.
    pub table: TableLayout,
    /// One source per column of [`TableLayout::fields`].
    pub sources: Vec<ColumnSource>,
    /// Number of columns of the Fluss rows.
    pub fluss_columns: usize,
}

/// Paimon option keys Fluss sets itself and refuses from users (`PAIMON_UNSETTABLE_OPTIONS`).
const UNSETTABLE: &[&str] = &["bucket", "bucket-key", "path", "partition.legacy-name"];

/// Builds the schema Fluss 0.9.1's `PaimonLakeCatalog` (`PaimonConversions.toPaimonSchema`)
/// creates for a Fluss table: Fluss columns, then the system columns; `bucket`/`bucket-key`
/// from the bucket keys (`bucket = -1` without), `partition.legacy-name = false`,
/// `changelog-producer = input` for PK tables, Fluss property `k` as option `fluss.k`,
/// `paimon.k` as `k`, `table.datalake.paimon.*` dropped.
pub fn schema_for_fluss_table(
    table: &TableInfo,
    with_system_columns: bool,
    now: i64,
) -> Result<TableSchema> {
    let mut options = BTreeMap::new();
    for (k, _) in table
        .properties
        .iter()
        .chain(table.custom_properties.iter())
    {
        let key = k.strip_prefix("paimon.").unwrap_or(k);
        if UNSETTABLE.contains(&key) {
            return Err(Error::invalid_input(format!(
                "the Paimon option {k} is set by Fluss automatically and must not be set manually"
            )));
        }
    }
    options.insert("partition.legacy-name".to_string(), "false".to_string());
    if table.bucket_keys.is_empty() {
        options.insert("bucket".to_string(), "-1".to_string());
    } else {
        if table.num_buckets <= 0 {
            return Err(Error::invalid_input(
                "a table with bucket keys needs a bucket count",
            ));
        }
        options.insert("bucket".to_string(), table.num_buckets.to_string());
        options.insert("bucket-key".to_string(), table.bucket_keys.join(","));
    }
    // Field ids as Paimon's `Schema.Builder` assigns them: each column the next id, then the
    // fields of its nested rows the ids after it (`ReassignFieldId`).
    let mut next_id = -1;
    let mut fields = Vec::new();
    for c in &table.columns {
        if SYSTEM_COLUMNS.contains(&c.name.as_str()) {
            return Err(Error::invalid_input(format!(
                "column {} conflicts with a system column name of the Paimon table, please rename it",
                c.name
            )));
        }
        let ct = ColumnType::parse(&c.data_type).with_context(|| format!("column {}", c.name))?;
        let nullable = c.nullable && !table.primary_keys.contains(&c.name);
        next_id += 1;
        let id = next_id;
        let ty = PaimonType::from_column_type(&ct, nullable, &mut next_id);
        fields.push(SchemaField {
            id,
            name: c.name.clone(),
            type_json: ty.to_json(),
            description: c.comment.clone(),
        });
    }
    if with_system_columns {
        let system = [
            (BUCKET_COLUMN, "INT"),
            (OFFSET_COLUMN, "BIGINT"),
            (TIMESTAMP_COLUMN, "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
        ];
        for (name, ty) in system {
            next_id += 1;
            fields.push(SchemaField {
                id: next_id,
                name: name.to_string(),
                type_json: serde_json::Value::String(ty.to_string()),
                description: None,
            });
        }
    }
    if !table.primary_keys.is_empty() {
        options.insert("changelog-producer".to_string(), "input".to_string());
    }
    for (k, v) in table
        .properties
        .iter()
        .chain(table.custom_properties.iter())
    {
        if let Some(key) = k.strip_prefix("paimon.") {
            options.insert(key.to_string(), v.clone());
        } else if !k.starts_with("table.datalake.paimon.") {
            options.insert(format!("fluss.{k}"), v.clone());
        }
    }
    Ok(TableSchema {
        version: SCHEMA_VERSION,
        id: 0,
        highest_field_id: next_id,
        fields,
        partition_keys: table.partition_keys.clone(),
        primary_keys: table.primary_keys.clone(),
        options,
        comment: None,
        time_millis: now,
    })
}

/// Checks that a Paimon schema can take the rows of a Fluss table, and says which column each
/// Fluss column is written to. Columns are matched by name: each Fluss column must be a lake
/// column of the same type, NOT NULL in the lake only where it is in Fluss; lake columns Fluss
/// does not have (another engine added them, in any place) must be nullable and are written as
/// null; the partition and primary keys must be the same. A Fluss column the lake table lacks
/// or has with another type (dropped or retyped elsewhere) is refused, naming the column, and
/// nothing is written.
pub fn check_compatible(schema: &TableSchema, table: &TableInfo) -> Result<WriteLayout> {
    let layout = TableLayout::of(schema)?;
    let mut sources: Vec<Option<ColumnSource>> = vec![None; layout.fields.len()];
    let position = |name: &str| layout.fields.iter().position(|(n, _, _)| n == name);
    for (i, c) in table.columns.iter().enumerate() {
        let ct = ColumnType::parse(&c.data_type).with_context(|| format!("column {}", c.name))?;
        let expected = PaimonType::from_column_type(&ct, c.nullable, &mut 0);
        let Some(pos) = position(&c.name) else {
            return Err(Error::invalid_input(format!(
                "Fluss column {} is not in the Paimon table (dropped there, or the lake schema \
                 is not synchronized with Fluss yet); nothing is written",
                c.name
            )));
        };
        let ty = &layout.fields[pos].1;
        if !expected.same_type(ty) || (!ty.nullable && c.nullable) {
            return Err(Error::invalid_input(format!(
                "Fluss column {} {} does not match Paimon column {} {}; nothing is written",
                c.name,
                expected.sql(),
                c.name,
                ty.sql()
            )));
        }
        sources[pos] = Some(ColumnSource::Fluss(i));
    }
    let sources = layout
        .fields
        .iter()
        .zip(sources)
        .map(|((name, ty, _), source)| match source {
            Some(source) => Ok(source),
            None if layout.has_system_columns && name == BUCKET_COLUMN => Ok(ColumnSource::Bucket),
            None if layout.has_system_columns && name == OFFSET_COLUMN => Ok(ColumnSource::Offset),
            None if layout.has_system_columns && name == TIMESTAMP_COLUMN => {
                Ok(ColumnSource::Timestamp)
            }
            None if ty.nullable => Ok(ColumnSource::Null),
            None => Err(Error::invalid_input(format!(
                "Paimon column {name} is NOT NULL but absent from the Fluss table; nothing is \
                 written"
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    if schema.partition_keys != table.partition_keys {
        return Err(Error::invalid_input(format!(
            "partition keys differ: Paimon {:?}, Fluss {:?}",
            schema.partition_keys, table.partition_keys
        )));
    }
    if schema.primary_keys != table.primary_keys {
        return Err(Error::invalid_input(format!(
            "primary keys differ: Paimon {:?}, Fluss {:?}",
            schema.primary_keys, table.primary_keys
        )));
    }
    Ok(WriteLayout {
        table: layout,
        sources,
        fluss_columns: table.columns.len(),
    })
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::testing::log_table;

    use super::*;

    fn table() -> TableInfo {
        log_table(
            "db",
            "t",
            &[("a", "INT", true), ("b", "STRING", true)],
            &[],
            1,
            &[],
        )
    }

    fn add_field(schema: &mut TableSchema, index: usize, name: &str, ty: &str) {
        schema.highest_field_id += 1;
        schema.fields.insert(
            index,
            SchemaField {
                id: schema.highest_field_id,
                name: name.into(),
                type_json: serde_json::json!(ty),
                description: None,
            },
        );
    }

    #[test]
    fn a_writer_sees_the_latest_schema_of_its_own_table_through_the_memo() {
        use fluss_lake_guest_sdk::storage::MemoryStorage;
        let (one, other) = (MemoryStorage::new(), MemoryStorage::new());
        let mut schema = schema_for_fluss_table(&table(), true, 0).unwrap();
        one.put(&schema_path(0), &schema.to_json().unwrap())
            .unwrap();
        assert_eq!(
            load_latest_schema_of(&one, 1).unwrap(),
            Some(schema.clone())
        );
        // Another table with a schema-0 of its own, in the same instance.
        let mut theirs = schema.clone();
        add_field(&mut theirs, 0, "theirs", "INT");
        other
            .put(&schema_path(0), &theirs.to_json().unwrap())
            .unwrap();
        assert_eq!(load_latest_schema_of(&other, 2).unwrap(), Some(theirs));
        assert_eq!(
            load_latest_schema_of(&one, 1).unwrap(),
            Some(schema.clone())
        );
        // A newer schema of the table is seen at once.
        add_field(&mut schema, 0, "added", "STRING");
        schema.id = 1;
        one.put(&schema_path(1), &schema.to_json().unwrap())
            .unwrap();
        assert_eq!(load_latest_schema_of(&one, 1).unwrap(), Some(schema));
        assert_eq!(
            load_latest_schema_of(&MemoryStorage::new(), 1).unwrap(),
            None
        );
    }

    #[test]
    fn columns_added_elsewhere_anywhere_are_written_as_null_and_system_columns_found_by_name() {
        let mut schema = schema_for_fluss_table(&table(), true, 0).unwrap();
        // What another engine's ALTER TABLE ADD COLUMN leaves (Fluss #4038), and one FIRST.
        add_field(&mut schema, 5, "added_last", "INT");
        add_field(&mut schema, 0, "added_first", "STRING");
        let layout = check_compatible(&schema, &table()).unwrap();
        assert!(layout.table.has_system_columns);
        use ColumnSource::*;
        assert_eq!(
            layout.sources,
            [Null, Fluss(0), Fluss(1), Bucket, Offset, Timestamp, Null]
        );
    }

    #[test]
    fn reordered_columns_with_other_field_ids_are_matched_by_name() {
        let mut schema = schema_for_fluss_table(&table(), false, 0).unwrap();
        schema.fields.swap(0, 1);
        schema.fields[0].id = 7;
        schema.fields[1].id = 9;
        let layout = check_compatible(&schema, &table()).unwrap();
        assert_eq!(
            layout.sources,
            [ColumnSource::Fluss(1), ColumnSource::Fluss(0)]
        );
        assert_eq!(layout.table.fields[0].2, 7);
    }

    #[test]
    fn dropped_retyped_or_not_null_columns_are_refused_naming_the_column() {
        let base = schema_for_fluss_table(&table(), true, 0).unwrap();
        let mut dropped = base.clone();
        dropped.fields.remove(1);
        let e = check_compatible(&dropped, &table())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Fluss column b is not in the Paimon table"),
            "{e}"
        );

        let mut retyped = base.clone();
        retyped.fields[0].type_json = serde_json::json!("BIGINT");
        let e = check_compatible(&retyped, &table())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Fluss column a INT does not match Paimon column a BIGINT"),
            "{e}"
        );

        let mut not_null = base.clone();
        add_field(&mut not_null, 2, "required", "INT NOT NULL");
        let e = check_compatible(&not_null, &table())
            .unwrap_err()
            .to_string();
        assert!(e.contains("Paimon column required is NOT NULL"), "{e}");

        let mut partial = base;
        partial.fields.retain(|f| f.name != OFFSET_COLUMN);
        let e = TableLayout::of(&partial).unwrap_err().to_string();
        assert!(e.contains("not all of __bucket"), "{e}");
    }

    #[test]
    fn a_table_without_system_columns_keeps_its_layout() {
        let schema = schema_for_fluss_table(&table(), false, 0).unwrap();
        let layout = check_compatible(&schema, &table()).unwrap();
        assert!(!layout.table.has_system_columns);
        assert_eq!(
            layout.sources,
            [ColumnSource::Fluss(0), ColumnSource::Fluss(1)]
        );
    }
}
