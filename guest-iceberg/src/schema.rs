//! Iceberg schemas (table metadata JSON), the schema Fluss's Iceberg catalog creates for a
//! Fluss table, and how a Fluss table's columns land in an existing Iceberg schema.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{Schema as ArrowSchema, SchemaRef};
use fluss_lake_guest_sdk::datatype::ColumnType;
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result};
use serde_json::{Value, json};

pub use crate::types::NestedField;
use crate::types::{IcebergType, arrow_field, assign_fresh_ids};

/// The system columns Fluss's Iceberg catalog appends to every table, in order.
pub const BUCKET_COLUMN: &str = "__bucket";
pub const OFFSET_COLUMN: &str = "__offset";
pub const TIMESTAMP_COLUMN: &str = "__timestamp";
pub const SYSTEM_COLUMNS: [(&str, IcebergType); 3] = [
    (BUCKET_COLUMN, IcebergType::Int),
    (OFFSET_COLUMN, IcebergType::Long),
    (TIMESTAMP_COLUMN, IcebergType::Timestamptz),
];

#[derive(Debug, Clone, PartialEq)]
pub struct IcebergSchema {
    pub schema_id: i32,
    pub fields: Vec<NestedField>,
    pub identifier_field_ids: Vec<i32>,
}

impl IcebergSchema {
    /// Parses a schema of table metadata.
    pub fn from_json(v: &Value) -> Result<IcebergSchema> {
        let schema_id = v.get("schema-id").and_then(Value::as_i64).unwrap_or(0) as i32;
        let fields = NestedField::list_from_json(v, 0)?;
        let identifier_field_ids = v
            .get("identifier-field-ids")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_i64)
                    .map(|i| i as i32)
                    .collect()
            })
            .unwrap_or_default();
        Ok(IcebergSchema {
            schema_id,
            fields,
            identifier_field_ids,
        })
    }

    pub fn to_json(&self) -> Value {
        let fields: Vec<Value> = self.fields.iter().map(NestedField::to_json).collect();
        let mut o = json!({"type": "struct", "schema-id": self.schema_id, "fields": fields});
        if !self.identifier_field_ids.is_empty() {
            o["identifier-field-ids"] = json!(self.identifier_field_ids);
        }
        o
    }

    pub fn field(&self, name: &str) -> Option<&NestedField> {
        self.fields.iter().find(|f| f.name == name)
    }

    pub fn field_by_id(&self, id: i32) -> Option<&NestedField> {
        self.fields.iter().find(|f| f.id == id)
    }

    /// The highest field id of the schema, nested fields included (`last-column-id`).
    pub fn highest_field_id(&self) -> i32 {
        self.fields
            .iter()
            .map(|f| f.id.max(f.ty.highest_nested_id().unwrap_or(0)))
            .max()
            .unwrap_or(0)
    }

    /// The schema Fluss 0.9's `IcebergLakeCatalog` creates: the Fluss columns, then the
    /// required system columns, field ids assigned as Iceberg's fresh-id assignment does (the
    /// columns 1.. in order, then the fields nested in them), the primary key as identifier
    /// fields.
    pub fn for_fluss_table(table: &TableInfo) -> Result<IcebergSchema> {
        let mut fields = Vec::new();
        for c in &table.columns {
            if SYSTEM_COLUMNS.iter().any(|(n, _)| *n == c.name) {
                return Err(Error::invalid_input(format!(
                    "column '{}' conflicts with a reserved system column name",
                    c.name
                )));
            }
            let ty = ColumnType::parse(&c.data_type)
                .map_err(|e| e.context(format!("column {}", c.name)))?;
            fields.push(NestedField {
                id: 0,
                name: c.name.clone(),
                required: !c.nullable,
                ty: IcebergType::from_column_type(&ty),
                doc: c.comment.clone(),
            });
        }
        for (name, ty) in SYSTEM_COLUMNS {
            fields.push(NestedField {
                id: 0,
                name: name.to_string(),
                required: true,
                ty,
                doc: None,
            });
        }
        assign_fresh_ids(&mut fields, &mut 0);
        let identifier_field_ids = table
            .primary_keys
            .iter()
            .map(|k| {
                fields
                    .iter()
                    .find(|f| &f.name == k)
                    .map(|f| f.id)
                    .ok_or_else(|| Error::invalid_input(format!("primary key {k} is no column")))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(IcebergSchema {
            schema_id: 0,
            fields,
            identifier_field_ids,
        })
    }
}

/// Where each column of the Iceberg table's data files comes from (`Null`: an optional
/// Iceberg column Fluss does not have).
pub use fluss_lake_guest_sdk::file_columns::ColumnSource;
use fluss_lake_guest_sdk::file_columns::FileColumns;

/// How a Fluss table's rows become rows of the Iceberg table's current schema.
#[derive(Debug, Clone)]
pub struct TableLayout {
    pub schema: IcebergSchema,
    pub sources: Vec<ColumnSource>,
    /// The data files' Arrow schema: one field per Iceberg column, with its field id.
    pub file_schema: SchemaRef,
}

impl TableLayout {
    /// Maps the Fluss table onto `schema` by column name, refusing what would lose or corrupt
    /// data: a Fluss column missing from the lake or of another type, a required lake column
    /// Fluss cannot fill, some system columns without the others. The system columns are
    /// optional (Fluss 1.0's tables have none) and may be anywhere, like every column.
    pub fn new(schema: &IcebergSchema, table: &TableInfo) -> Result<TableLayout> {
        let fluss: HashMap<&str, (usize, &_)> = table
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_str(), (i, c)))
            .collect();
        for c in &table.columns {
            let field = schema.field(&c.name).ok_or_else(|| {
                Error::invalid_input(format!(
                    "Fluss column {} is not in the Iceberg table's schema",
                    c.name
                ))
            })?;
            let ty = IcebergType::from_column_type(&ColumnType::parse(&c.data_type)?);
            if !ty.writes_as(&field.ty) {
                return Err(Error::invalid_input(format!(
                    "column {}: Fluss type {} maps to Iceberg {}, but the Iceberg column is {}",
                    c.name,
                    c.data_type,
                    ty.name(),
                    field.ty.name()
                )));
            }
            if field.required && c.nullable {
                return Err(Error::invalid_input(format!(
                    "column {} is required in Iceberg but nullable in Fluss",
                    c.name
                )));
            }
        }
        let mut sources = Vec::with_capacity(schema.fields.len());
        for f in &schema.fields {
            let source = if let Some((i, _)) = fluss.get(f.name.as_str()) {
                ColumnSource::Fluss(*i)
            } else if let Some((name, ty)) = SYSTEM_COLUMNS.iter().find(|(n, _)| *n == f.name) {
                if f.ty != *ty {
                    return Err(Error::invalid_input(format!(
                        "system column {name} is {} in the Iceberg table, expected {}",
                        f.ty.name(),
                        ty.name()
                    )));
                }
                match *name {
                    BUCKET_COLUMN => ColumnSource::Bucket,
                    OFFSET_COLUMN => ColumnSource::Offset,
                    _ => ColumnSource::Timestamp,
                }
            } else if f.required {
                return Err(Error::invalid_input(format!(
                    "Iceberg column {} is required but the Fluss table has no such column",
                    f.name
                )));
            } else {
                ColumnSource::Null
            };
            sources.push(source);
        }
        // Fluss 0.9 creates every Iceberg table with the three system columns, Fluss 1.0
        // (FIP-27) without any: both are written. Some but not all of them is neither.
        let system = sources
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    ColumnSource::Bucket | ColumnSource::Offset | ColumnSource::Timestamp
                )
            })
            .count();
        if system != 0 && system != SYSTEM_COLUMNS.len() {
            let missing: Vec<&str> = SYSTEM_COLUMNS
                .iter()
                .map(|(name, _)| *name)
                .filter(|name| schema.field(name).is_none())
                .collect();
            return Err(Error::unsupported(format!(
                "the Iceberg table has some of Fluss's system columns but not {}; nothing is \
                 written",
                missing.join(", ")
            )));
        }
        Ok(TableLayout {
            file_schema: file_schema(&schema.fields),
            schema: schema.clone(),
            sources,
        })
    }
}

impl TableLayout {
    /// The data files' columns and where each comes from.
    pub fn file_columns(&self) -> Result<FileColumns> {
        Ok(FileColumns::new(
            self.file_schema.clone(),
            self.sources.clone(),
        )?)
    }

    /// The layout of files holding rows already in the table's shape: compaction rewrites
    /// them with every column read back, none filled from Fluss.
    pub fn of_table_rows(schema: &IcebergSchema) -> TableLayout {
        TableLayout {
            file_schema: file_schema(&schema.fields),
            schema: schema.clone(),
            sources: vec![ColumnSource::Null; schema.fields.len()],
        }
    }
}

/// The Arrow schema of a Parquet file holding `fields`, each tagged with its field id.
pub fn file_schema(fields: &[NestedField]) -> SchemaRef {
    Arc::new(ArrowSchema::new(
        fields
            .iter()
            .map(|f| arrow_field(&f.name, f.id, !f.required, &f.ty))
            .collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::arrow_util::PARQUET_FIELD_ID_KEY;
    use fluss_lake_guest_sdk::testing::{log_table, pk_table};

    use super::*;

    #[test]
    fn creates_like_the_java_catalog_and_round_trips() {
        let t = pk_table(
            "db",
            "t",
            &[("id", "INT", false), ("name", "STRING", true)],
            &["id"],
            2,
            &[],
        );
        let s = IcebergSchema::for_fluss_table(&t).unwrap();
        let names: Vec<_> = s.fields.iter().map(|f| (f.id, f.name.as_str())).collect();
        assert_eq!(
            names,
            [
                (1, "id"),
                (2, "name"),
                (3, "__bucket"),
                (4, "__offset"),
                (5, "__timestamp")
            ]
        );
        assert_eq!(s.identifier_field_ids, [1]);
        assert!(s.fields[0].required && !s.fields[1].required && s.fields[4].required);
        assert_eq!(IcebergSchema::from_json(&s.to_json()).unwrap(), s);

        let layout = TableLayout::new(&s, &t).unwrap();
        assert_eq!(
            layout.sources,
            [
                ColumnSource::Fluss(0),
                ColumnSource::Fluss(1),
                ColumnSource::Bucket,
                ColumnSource::Offset,
                ColumnSource::Timestamp
            ]
        );
        assert_eq!(
            layout.file_schema.field(2).metadata()[PARQUET_FIELD_ID_KEY],
            "3"
        );
    }

    #[test]
    fn refuses_what_would_lose_data() {
        let t = log_table("db", "t", &[("a", "INT", true)], &[], 1, &[]);
        let s = IcebergSchema::for_fluss_table(&t).unwrap();
        let other = log_table("db", "t", &[("a", "BIGINT", true)], &[], 1, &[]);
        assert!(TableLayout::new(&s, &other).is_err());
        let more = log_table(
            "db",
            "t",
            &[("a", "INT", true), ("b", "INT", true)],
            &[],
            1,
            &[],
        );
        assert!(TableLayout::new(&s, &more).is_err());
        let reserved = log_table("db", "t", &[("__offset", "INT", true)], &[], 1, &[]);
        assert!(IcebergSchema::for_fluss_table(&reserved).is_err());
        // an optional lake column unknown to Fluss is filled with nulls
        let mut wider = s.clone();
        wider.fields.insert(
            1,
            NestedField {
                id: 9,
                name: "extra".into(),
                required: false,
                ty: IcebergType::String,
                doc: None,
            },
        );
        assert_eq!(
            TableLayout::new(&wider, &t).unwrap().sources[1],
            ColumnSource::Null
        );
    }

    #[test]
    fn clean_tables_without_system_columns_are_written_and_partial_ones_refused() {
        let t = log_table("db", "t", &[("a", "INT", true)], &[], 1, &[]);
        let legacy = IcebergSchema::for_fluss_table(&t).unwrap();
        let mut clean = legacy.clone();
        clean.fields.retain(|f| f.name == "a");
        assert_eq!(
            TableLayout::new(&clean, &t).unwrap().sources,
            [ColumnSource::Fluss(0)]
        );
        let mut partial = legacy;
        partial.fields.retain(|f| f.name != OFFSET_COLUMN);
        let e = TableLayout::new(&partial, &t).unwrap_err().to_string();
        assert!(e.contains("but not __offset"), "{e}");
    }

    /// Iceberg's fresh ids for `a INT, r ROW<x INT, y ROW<z STRING>>, m MAP<STRING,
    /// ROW<q INT>>, l ARRAY<ROW<w INT>>, b INT` and the system columns: the columns 1..8,
    /// then what is nested in each, in order.
    #[test]
    fn nested_fields_get_icebergs_fresh_ids() {
        let t = log_table(
            "db",
            "t",
            &[
                ("a", "INT", true),
                ("r", "ROW<`x` INT, `y` ROW<`z` STRING>>", true),
                ("m", "MAP<STRING NOT NULL, ROW<`q` INT>>", true),
                ("l", "ARRAY<ROW<`w` INT NOT NULL>>", true),
                ("b", "INT", true),
            ],
            &[],
            1,
            &[],
        );
        let s = IcebergSchema::for_fluss_table(&t).unwrap();
        let top: Vec<i32> = s.fields.iter().map(|f| f.id).collect();
        assert_eq!(top, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(s.highest_field_id(), 16);
        let json = s.to_json();
        assert_eq!(
            json["fields"][1]["type"],
            json!({"type": "struct", "fields": [
                {"id": 9, "name": "x", "required": false, "type": "int"},
                {"id": 10, "name": "y", "required": false, "type": {"type": "struct", "fields": [
                    {"id": 11, "name": "z", "required": false, "type": "string"}]}}]})
        );
        assert_eq!(
            json["fields"][2]["type"],
            json!({"type": "map", "key-id": 12, "key": "string", "value-id": 13,
                "value": {"type": "struct", "fields": [
                    {"id": 14, "name": "q", "required": false, "type": "int"}]},
                "value-required": false})
        );
        assert_eq!(
            json["fields"][3]["type"]["element"]["fields"][0],
            json!({"id": 16, "name": "w", "required": true, "type": "int"})
        );
        assert_eq!(IcebergSchema::from_json(&json).unwrap(), s);
        let layout = TableLayout::new(&s, &t).unwrap();
        let l = layout.file_schema.field(3);
        let arrow_schema::DataType::List(element) = l.data_type() else {
            panic!("{l:?}")
        };
        assert_eq!(element.name(), "element");
        assert_eq!(element.metadata()[PARQUET_FIELD_ID_KEY], "15");
    }
}
