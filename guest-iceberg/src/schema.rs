//! Iceberg schemas (table metadata JSON), the schema Fluss's Iceberg catalog creates for a
//! Fluss table, and how a Fluss table's columns land in an existing Iceberg schema.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{Field, Schema as ArrowSchema, SchemaRef};
use fluss_lake_guest_sdk::arrow_util::PARQUET_FIELD_ID_KEY;
use fluss_lake_guest_sdk::datatype::FlussType;
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result};
use serde_json::{Value, json};

use crate::types::IcebergType;

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
pub struct NestedField {
    pub id: i32,
    pub name: String,
    pub required: bool,
    pub ty: IcebergType,
    pub doc: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IcebergSchema {
    pub schema_id: i32,
    pub fields: Vec<NestedField>,
    pub identifier_field_ids: Vec<i32>,
}

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("Iceberg schema: {what}"))
}

impl IcebergSchema {
    /// Parses a schema of table metadata. Nested types are refused (`unsupported`): Fluss
    /// tables tiered by this plugin only have primitive columns.
    pub fn from_json(v: &Value) -> Result<IcebergSchema> {
        let schema_id = v.get("schema-id").and_then(Value::as_i64).unwrap_or(0) as i32;
        let fields = v
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| corrupt("no fields"))?
            .iter()
            .map(|f| {
                let id = f
                    .get("id")
                    .and_then(Value::as_i64)
                    .ok_or_else(|| corrupt("field without id"))? as i32;
                let name = f
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| corrupt("field without name"))?
                    .to_string();
                let ty = match f.get("type") {
                    Some(Value::String(t)) => IcebergType::parse(t)?,
                    _ => {
                        return Err(Error::unsupported(format!(
                            "Iceberg column {name} has a nested type, which this plugin does not write"
                        )));
                    }
                };
                Ok(NestedField {
                    id,
                    name,
                    required: f.get("required").and_then(Value::as_bool).unwrap_or(false),
                    ty,
                    doc: f.get("doc").and_then(Value::as_str).map(str::to_string),
                })
            })
            .collect::<Result<Vec<_>>>()?;
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
        let fields: Vec<Value> = self
            .fields
            .iter()
            .map(|f| {
                let mut o = json!({"id": f.id, "name": f.name, "required": f.required,
                    "type": f.ty.name()});
                if let Some(doc) = &f.doc {
                    o["doc"] = json!(doc);
                }
                o
            })
            .collect();
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

    pub fn highest_field_id(&self) -> i32 {
        self.fields.iter().map(|f| f.id).max().unwrap_or(0)
    }

    /// The schema Fluss 0.9's `IcebergLakeCatalog` creates: the Fluss columns, then the
    /// required system columns, field ids assigned 1.. in order (Iceberg's fresh-id
    /// assignment), the primary key as identifier fields.
    pub fn for_fluss_table(table: &TableInfo) -> Result<IcebergSchema> {
        let mut fields = Vec::new();
        for c in &table.columns {
            if SYSTEM_COLUMNS.iter().any(|(n, _)| *n == c.name) {
                return Err(Error::invalid_input(format!(
                    "column '{}' conflicts with a reserved system column name",
                    c.name
                )));
            }
            let ty = FlussType::parse(&c.data_type)
                .map_err(|e| e.context(format!("column {}", c.name)))?;
            fields.push(NestedField {
                id: fields.len() as i32 + 1,
                name: c.name.clone(),
                required: !c.nullable,
                ty: IcebergType::from_fluss(ty),
                doc: c.comment.clone(),
            });
        }
        for (name, ty) in SYSTEM_COLUMNS {
            fields.push(NestedField {
                id: fields.len() as i32 + 1,
                name: name.to_string(),
                required: true,
                ty,
                doc: None,
            });
        }
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

/// Where each column of the Iceberg table's data files comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnSource {
    /// The Fluss column at this index.
    Fluss(usize),
    /// `__bucket`, `__offset` or `__timestamp`.
    Bucket,
    Offset,
    Timestamp,
    /// An optional Iceberg column Fluss does not have: null.
    Absent,
}

/// How a Fluss table's rows become rows of the Iceberg table's current schema.
#[derive(Debug, Clone)]
pub struct TableLayout {
    pub schema: IcebergSchema,
    pub sources: Vec<ColumnSource>,
    /// The data files' Arrow schema: one field per Iceberg column, with its field id.
    pub file_schema: SchemaRef,
}

impl TableLayout {
    /// Maps the Fluss table onto `schema`, refusing what would lose or corrupt data: a Fluss
    /// column missing from the lake or of another type, a required lake column Fluss cannot
    /// fill, missing system columns.
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
            let ty = IcebergType::from_fluss(FlussType::parse(&c.data_type)?);
            if ty != field.ty {
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
                ColumnSource::Absent
            };
            sources.push(source);
        }
        for (name, _) in SYSTEM_COLUMNS {
            if schema.field(name).is_none() {
                return Err(Error::invalid_input(format!(
                    "the Iceberg table has no system column {name} (Fluss's Iceberg tables always do)"
                )));
            }
        }
        Ok(TableLayout {
            file_schema: file_schema(&schema.fields),
            schema: schema.clone(),
            sources,
        })
    }
}

impl TableLayout {
    /// The layout of files holding rows already in the table's shape: compaction rewrites
    /// them with every column read back, none filled from Fluss.
    pub fn of_table_rows(schema: &IcebergSchema) -> TableLayout {
        TableLayout {
            file_schema: file_schema(&schema.fields),
            schema: schema.clone(),
            sources: vec![ColumnSource::Absent; schema.fields.len()],
        }
    }
}

/// The Arrow schema of a Parquet file holding `fields`, each tagged with its field id.
pub fn file_schema(fields: &[NestedField]) -> SchemaRef {
    Arc::new(ArrowSchema::new(
        fields
            .iter()
            .map(|f| {
                Field::new(&f.name, f.ty.arrow_type(), !f.required).with_metadata(HashMap::from([
                    (PARQUET_FIELD_ID_KEY.to_string(), f.id.to_string()),
                ]))
            })
            .collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests {
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
            ColumnSource::Absent
        );
    }
}
