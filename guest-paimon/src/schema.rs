//! Paimon table schemas (`schema/schema-N`, JSON) and how a Fluss table maps onto one.
//!
//! Fluss 0.9.1's `PaimonLakeCatalog` creates the Paimon table with the Fluss columns followed
//! by the system columns `__bucket INT`, `__offset BIGINT`, `__timestamp TIMESTAMP(3) WITH
//! LOCAL TIME ZONE`; later Fluss versions (FIP-27) create tables without them. Both layouts
//! are read here: [`TableLayout`] tells the writer which trailing system columns to fill.

use std::collections::BTreeMap;

use fluss_lake_guest_sdk::datatype::FlussType;
use fluss_lake_guest_sdk::storage::Storage;
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
    /// Paimon SQL type string (complex types are JSON objects; unsupported here).
    #[serde(rename = "type")]
    pub type_json: serde_json::Value,
    /// Column comment.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub description: Option<String>,
}

impl SchemaField {
    /// The parsed type.
    pub fn data_type(&self) -> Result<PaimonType> {
        match &self.type_json {
            serde_json::Value::String(s) => PaimonType::parse(s),
            other => Err(Error::unsupported(format!(
                "column {} has a nested Paimon type {other}, which this plugin does not write",
                self.name
            ))),
        }
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
    let latest = storage
        .list(SCHEMA_DIR)?
        .iter()
        .filter_map(|m| {
            m.path
                .rsplit('/')
                .next()?
                .strip_prefix("schema-")?
                .parse::<i64>()
                .ok()
        })
        .max();
    let Some(id) = latest else { return Ok(None) };
    load_schema(storage, id).map(Some)
}

/// Reads schema `id`.
pub fn load_schema(storage: &dyn Storage, id: i64) -> Result<TableSchema> {
    let path = schema_path(id);
    let bytes = storage
        .get(&path)
        .with_context(|| format!("reading {path}"))?;
    serde_json::from_slice(&bytes).map_err(|e| Error::corrupt(format!("{path}: {e}")))
}

/// How the columns of a Paimon table line up with the Fluss row.
#[derive(Debug, Clone, PartialEq)]
pub struct TableLayout {
    /// All Paimon fields (name, type, field id), in schema order.
    pub fields: Vec<(String, PaimonType, i32)>,
    /// Number of leading business columns (Fluss columns, possibly more than Fluss has when
    /// the lake schema is wider: the extra ones are written as nulls).
    pub business_columns: usize,
    /// True when the table ends with the Fluss system columns.
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
        let n = fields.len();
        let has_system_columns = n >= 3
            && fields[n - 3].0 == BUCKET_COLUMN
            && fields[n - 2].0 == OFFSET_COLUMN
            && fields[n - 1].0 == TIMESTAMP_COLUMN;
        if has_system_columns {
            let ok = fields[n - 3].1.root == TypeRoot::Int
                && fields[n - 2].1.root == TypeRoot::BigInt
                && matches!(fields[n - 1].1.root, TypeRoot::TimestampLtz(_));
            if !ok {
                return Err(Error::unsupported(
                    "the Paimon system columns __bucket/__offset/__timestamp have unexpected types",
                ));
            }
        }
        // Columns are matched by position: a system column anywhere but in the last three
        // places (another engine added a column after `__timestamp`, Fluss #4038) would be
        // taken for a business column absent from Fluss and written as null, losing every
        // row's bucket, offset and timestamp. Refused until columns are matched by name.
        if !has_system_columns {
            let misplaced: Vec<&str> = fields
                .iter()
                .map(|(name, _, _)| name.as_str())
                .filter(|name| [BUCKET_COLUMN, OFFSET_COLUMN, TIMESTAMP_COLUMN].contains(name))
                .collect();
            if !misplaced.is_empty() {
                return Err(Error::unsupported(format!(
                    "the Paimon table has the system column(s) {} but not as its last three                      columns (__bucket, __offset, __timestamp): a column added after them by                      another engine is not supported yet; nothing is written",
                    misplaced.join(", ")
                )));
            }
        }
        let business_columns = if has_system_columns { n - 3 } else { n };
        Ok(TableLayout {
            fields,
            business_columns,
            has_system_columns,
        })
    }
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
    let mut fields = Vec::new();
    for (i, c) in table.columns.iter().enumerate() {
        if [BUCKET_COLUMN, OFFSET_COLUMN, TIMESTAMP_COLUMN].contains(&c.name.as_str()) {
            return Err(Error::invalid_input(format!(
                "column {} conflicts with a system column name of the Paimon table, please rename it",
                c.name
            )));
        }
        let ft = FlussType::parse(&c.data_type).with_context(|| format!("column {}", c.name))?;
        let nullable = c.nullable && !table.primary_keys.contains(&c.name);
        fields.push(SchemaField {
            id: i as i32,
            name: c.name.clone(),
            type_json: serde_json::Value::String(PaimonType::from_fluss(ft, nullable).sql()),
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
            fields.push(SchemaField {
                id: fields.len() as i32,
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
        highest_field_id: fields.len() as i32 - 1,
        fields,
        partition_keys: table.partition_keys.clone(),
        primary_keys: table.primary_keys.clone(),
        options,
        comment: None,
        time_millis: now,
    })
}

/// Checks that a Paimon schema can take the rows of a Fluss table: business columns match by
/// position, name, type and nullability (the lake may have extra trailing business columns,
/// not fewer), partition and primary keys are the same.
pub fn check_compatible(schema: &TableSchema, table: &TableInfo) -> Result<TableLayout> {
    let layout = TableLayout::of(schema)?;
    if table.columns.len() > layout.business_columns {
        return Err(Error::invalid_input(format!(
            "the Fluss table has {} columns but the Paimon table only {}: the lake schema is not \
             synchronized with Fluss yet",
            table.columns.len(),
            layout.business_columns
        )));
    }
    for (c, (name, ty, _)) in table.columns.iter().zip(&layout.fields) {
        let ft = FlussType::parse(&c.data_type).with_context(|| format!("column {}", c.name))?;
        let expected = PaimonType::from_fluss(ft, c.nullable);
        if &c.name != name || !expected.same_type(ty) || (!ty.nullable && c.nullable) {
            return Err(Error::invalid_input(format!(
                "Fluss column {} {} does not match Paimon column {} {}",
                c.name,
                expected.sql(),
                name,
                ty.sql()
            )));
        }
    }
    for extra in &layout.fields[table.columns.len()..layout.business_columns] {
        if !extra.1.nullable {
            return Err(Error::invalid_input(format!(
                "Paimon column {} is NOT NULL but absent from the Fluss table",
                extra.0
            )));
        }
    }
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
    Ok(layout)
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

    #[test]
    fn a_column_added_after_the_system_columns_is_refused_not_written_as_their_nulls() {
        let mut schema = schema_for_fluss_table(&table(), true, 0).unwrap();
        assert!(
            check_compatible(&schema, &table())
                .unwrap()
                .has_system_columns
        );
        // What another engine's ALTER TABLE ADD COLUMN leaves (Fluss #4038).
        schema.highest_field_id += 1;
        schema.fields.push(SchemaField {
            id: schema.highest_field_id,
            name: "added_elsewhere".into(),
            type_json: serde_json::json!("INT"),
            description: None,
        });
        let e = check_compatible(&schema, &table()).unwrap_err().to_string();
        assert!(
            e.contains("__bucket, __offset, __timestamp but not as its last three"),
            "{e}"
        );
        let e = TableLayout::of(&schema).unwrap_err().to_string();
        assert!(e.contains("nothing is written"), "{e}");
    }

    #[test]
    fn a_table_without_system_columns_keeps_its_layout() {
        let schema = schema_for_fluss_table(&table(), false, 0).unwrap();
        let layout = check_compatible(&schema, &table()).unwrap();
        assert!(!layout.has_system_columns);
        assert_eq!(layout.business_columns, 2);
    }
}
