//! Delta schemas: how Fluss column types map to Delta's primitive types, the schema string a
//! new table gets (the Fluss columns, then the system columns `__bucket`, `__offset`,
//! `__timestamp` that Fluss's lake plugins append), parsing the schema of an existing table,
//! and the Arrow schema of the Parquet files (Delta keeps partition columns out of them).

use std::sync::Arc;

use fluss_lake_guest_sdk::convert::to_file_array;
use fluss_lake_guest_sdk::datatype::FlussType;
use fluss_lake_guest_sdk::deps::arrow_array::ArrayRef;
use fluss_lake_guest_sdk::deps::arrow_array::cast::AsArray;
use fluss_lake_guest_sdk::deps::arrow_array::types::{Int32Type, Time32MillisecondType};
use fluss_lake_guest_sdk::deps::arrow_schema::{
    DataType, Field as ArrowField, Schema as ArrowSchema, SchemaRef, TimeUnit,
};
use fluss_lake_guest_sdk::deps::serde_json::{Map, Value, json};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result};

/// The system columns appended to every table, in order, as Fluss's lake catalogs append
/// them: the bucket, the log offset and the commit timestamp of each row.
pub const BUCKET_COLUMN: &str = "__bucket";
pub const OFFSET_COLUMN: &str = "__offset";
pub const TIMESTAMP_COLUMN: &str = "__timestamp";
pub const SYSTEM_COLUMNS: [(&str, DeltaType); 3] = [
    (BUCKET_COLUMN, DeltaType::Integer),
    (OFFSET_COLUMN, DeltaType::Long),
    (TIMESTAMP_COLUMN, DeltaType::Timestamp),
];

/// A Delta primitive type (the protocol's "Primitive Types"; nested types are not written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaType {
    Boolean,
    Byte,
    Short,
    Integer,
    Long,
    Float,
    Double,
    Decimal(u8, u8),
    String,
    Binary,
    Date,
    /// Microseconds since the epoch, UTC (an instant).
    Timestamp,
    /// Microseconds since the epoch of a wall-clock time (no zone); needs the `timestampNtz`
    /// table feature.
    TimestampNtz,
}

impl DeltaType {
    /// The Delta type of a Fluss column type.
    ///
    /// Delta has no time-of-day type, so TIME is stored as `integer` milliseconds of the day:
    /// Fluss's own representation of TIME (Fluss keeps no precision finer than millis), and
    /// what Paimon stores. TIMESTAMP / TIMESTAMP_LTZ of precision 7..9 are truncated to
    /// micros, Delta's only timestamp precision.
    pub fn from_fluss(t: FlussType) -> DeltaType {
        match t {
            FlussType::Boolean => DeltaType::Boolean,
            FlussType::TinyInt => DeltaType::Byte,
            FlussType::SmallInt => DeltaType::Short,
            FlussType::Int | FlussType::Time(_) => DeltaType::Integer,
            FlussType::BigInt => DeltaType::Long,
            FlussType::Float => DeltaType::Float,
            FlussType::Double => DeltaType::Double,
            FlussType::Decimal { precision, scale } => DeltaType::Decimal(precision, scale),
            FlussType::Char(_) | FlussType::String => DeltaType::String,
            FlussType::Bytes | FlussType::Binary(_) => DeltaType::Binary,
            FlussType::Date => DeltaType::Date,
            FlussType::Timestamp(_) => DeltaType::TimestampNtz,
            FlussType::TimestampLtz(_) => DeltaType::Timestamp,
        }
    }

    /// The type's name in a schema string.
    pub fn name(self) -> String {
        match self {
            DeltaType::Boolean => "boolean".into(),
            DeltaType::Byte => "byte".into(),
            DeltaType::Short => "short".into(),
            DeltaType::Integer => "integer".into(),
            DeltaType::Long => "long".into(),
            DeltaType::Float => "float".into(),
            DeltaType::Double => "double".into(),
            DeltaType::Decimal(p, s) => format!("decimal({p},{s})"),
            DeltaType::String => "string".into(),
            DeltaType::Binary => "binary".into(),
            DeltaType::Date => "date".into(),
            DeltaType::Timestamp => "timestamp".into(),
            DeltaType::TimestampNtz => "timestamp_ntz".into(),
        }
    }

    /// Parses a primitive type name of a schema string.
    pub fn parse(name: &str) -> Result<DeltaType> {
        let unsupported = || Error::unsupported(format!("Delta type {name:?} is not supported"));
        Ok(match name.trim() {
            "boolean" => DeltaType::Boolean,
            "byte" => DeltaType::Byte,
            "short" => DeltaType::Short,
            "integer" => DeltaType::Integer,
            "long" => DeltaType::Long,
            "float" => DeltaType::Float,
            "double" => DeltaType::Double,
            "string" => DeltaType::String,
            "binary" => DeltaType::Binary,
            "date" => DeltaType::Date,
            "timestamp" => DeltaType::Timestamp,
            "timestamp_ntz" => DeltaType::TimestampNtz,
            other => {
                let args = other
                    .strip_prefix("decimal(")
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(unsupported)?;
                let (p, s) = args.split_once(',').ok_or_else(unsupported)?;
                DeltaType::Decimal(
                    p.trim().parse().map_err(|_| unsupported())?,
                    s.trim().parse().map_err(|_| unsupported())?,
                )
            }
        })
    }

    /// The Arrow type of the column in data files, which the Parquet writer turns into the
    /// physical types Delta readers expect: timestamps as INT64 micros (`isAdjustedToUTC`
    /// for `timestamp` only), decimals as INT32 / INT64 / fixed bytes by precision, `byte`
    /// and `short` as INT32 with their integer annotation.
    pub fn file_type(self) -> DataType {
        match self {
            DeltaType::Boolean => DataType::Boolean,
            DeltaType::Byte => DataType::Int8,
            DeltaType::Short => DataType::Int16,
            DeltaType::Integer => DataType::Int32,
            DeltaType::Long => DataType::Int64,
            DeltaType::Float => DataType::Float32,
            DeltaType::Double => DataType::Float64,
            DeltaType::Decimal(p, s) => DataType::Decimal128(p, s as i8),
            DeltaType::String => DataType::Utf8,
            DeltaType::Binary => DataType::Binary,
            DeltaType::Date => DataType::Date32,
            DeltaType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            DeltaType::TimestampNtz => DataType::Timestamp(TimeUnit::Microsecond, None),
        }
    }
}

/// Converts a column of a Fluss row batch to its Delta file type (see
/// [`DeltaType::from_fluss`]). TIME goes through the SDK's conversion to millis of the day
/// and is then reinterpreted as plain `integer`, without a TIME annotation that Delta
/// readers would not expect.
pub fn to_delta_array(array: &ArrayRef, fluss: FlussType, field: &ArrowField) -> Result<ArrayRef> {
    if let FlussType::Time(_) = fluss {
        let millis = to_file_array(
            array,
            &DataType::Time32(TimeUnit::Millisecond),
            field.is_nullable(),
            field.name(),
        )?;
        let ints = millis
            .as_primitive::<Time32MillisecondType>()
            .reinterpret_cast::<Int32Type>();
        return Ok(Arc::new(ints));
    }
    to_file_array(array, field.data_type(), field.is_nullable(), field.name())
}

/// One top-level field of a Delta schema.
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaField {
    pub name: String,
    pub ty: DeltaType,
    pub nullable: bool,
    /// Column metadata (`comment`, and any `delta.*` keys other writers set).
    pub metadata: Map<String, Value>,
}

/// A table schema: its top-level fields, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaSchema {
    pub fields: Vec<DeltaField>,
}

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("Delta schema: {what}"))
}

impl DeltaSchema {
    /// The schema of a new table for `table`: the Fluss columns (comments kept as Spark
    /// keeps them, in the `comment` metadata), then the non-null system columns.
    pub fn for_fluss_table(table: &TableInfo) -> Result<DeltaSchema> {
        let mut fields = Vec::new();
        for c in &table.columns {
            if SYSTEM_COLUMNS.iter().any(|(n, _)| *n == c.name) {
                return Err(Error::invalid_input(format!(
                    "column '{}' conflicts with a reserved system column name",
                    c.name
                )));
            }
            let t = FlussType::parse(&c.data_type)
                .map_err(|e| e.context(format!("column {}", c.name)))?;
            let mut metadata = Map::new();
            if let Some(comment) = &c.comment {
                metadata.insert("comment".into(), json!(comment));
            }
            fields.push(DeltaField {
                name: c.name.clone(),
                ty: DeltaType::from_fluss(t),
                nullable: c.nullable,
                metadata,
            });
        }
        for (name, ty) in SYSTEM_COLUMNS {
            fields.push(DeltaField {
                name: name.to_string(),
                ty,
                nullable: false,
                metadata: Map::new(),
            });
        }
        Ok(DeltaSchema { fields })
    }

    /// Parses a `schemaString`. Nested columns are refused (`unsupported`): Fluss tables
    /// tiered by this plugin have primitive columns only.
    pub fn parse(schema_string: &str) -> Result<DeltaSchema> {
        let v: Value =
            fluss_lake_guest_sdk::deps::serde_json::from_str(schema_string).map_err(corrupt)?;
        let fields = v
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| corrupt("no fields"))?
            .iter()
            .map(|f| {
                let name = f
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| corrupt("field without name"))?
                    .to_string();
                let ty = match f.get("type") {
                    Some(Value::String(t)) => DeltaType::parse(t)?,
                    _ => {
                        return Err(Error::unsupported(format!(
                            "Delta column {name} has a nested type, which this plugin does not write"
                        )));
                    }
                };
                Ok(DeltaField {
                    name,
                    ty,
                    nullable: f.get("nullable").and_then(Value::as_bool).unwrap_or(true),
                    metadata: f
                        .get("metadata")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeltaSchema { fields })
    }

    /// The `schemaString` of a `metaData` action.
    pub fn to_schema_string(&self) -> String {
        let fields: Vec<Value> = self
            .fields
            .iter()
            .map(|f| {
                json!({"name": f.name, "type": f.ty.name(), "nullable": f.nullable,
                    "metadata": f.metadata})
            })
            .collect();
        json!({"type": "struct", "fields": fields}).to_string()
    }

    pub fn field(&self, name: &str) -> Option<&DeltaField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// True when a column needs the `timestampNtz` table feature.
    pub fn has_timestamp_ntz(&self) -> bool {
        self.fields.iter().any(|f| f.ty == DeltaType::TimestampNtz)
    }

    /// Checks that this is the schema of `table` as [`DeltaSchema::for_fluss_table`] builds
    /// it: the same column names in the same order, each of the Delta type its Fluss type
    /// maps to, no column NOT NULL in Delta that Fluss allows nulls in.
    pub fn check_matches(&self, table: &TableInfo) -> Result<()> {
        let want = DeltaSchema::for_fluss_table(table)?;
        let names = |s: &DeltaSchema| s.fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
        if names(self) != names(&want) {
            return Err(Error::invalid_input(format!(
                "the Delta table's columns {:?} are not the Fluss table's columns followed by \
                 the system columns: {:?}",
                names(self),
                names(&want)
            )));
        }
        for (have, want) in self.fields.iter().zip(&want.fields) {
            if have.ty != want.ty {
                return Err(Error::invalid_input(format!(
                    "column {}: the Delta table stores {}, the Fluss column needs {}",
                    have.name,
                    have.ty.name(),
                    want.ty.name()
                )));
            }
            if !have.nullable && want.nullable {
                return Err(Error::invalid_input(format!(
                    "column {} is NOT NULL in the Delta table but nullable in Fluss",
                    have.name
                )));
            }
        }
        Ok(())
    }
}

/// Where a column of the data files comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnSource {
    /// The Fluss column at this index, of this type.
    Fluss(usize, FlussType),
    Bucket,
    Offset,
    Timestamp,
}

/// The data files' columns: every table column except the partition columns (whose values
/// live in the `add` actions), with the Delta type of each.
#[derive(Debug, Clone)]
pub struct FileLayout {
    pub arrow: SchemaRef,
    pub sources: Vec<ColumnSource>,
    pub types: Vec<DeltaType>,
}

impl FileLayout {
    pub fn for_fluss_table(table: &TableInfo) -> Result<FileLayout> {
        let schema = DeltaSchema::for_fluss_table(table)?;
        let mut fields = Vec::new();
        let mut sources = Vec::new();
        let mut types = Vec::new();
        for f in &schema.fields {
            if table.partition_keys.contains(&f.name) {
                continue;
            }
            let source = match f.name.as_str() {
                BUCKET_COLUMN => ColumnSource::Bucket,
                OFFSET_COLUMN => ColumnSource::Offset,
                TIMESTAMP_COLUMN => ColumnSource::Timestamp,
                name => {
                    let i = table
                        .columns
                        .iter()
                        .position(|c| c.name == name)
                        .expect("schema built from the columns");
                    ColumnSource::Fluss(i, FlussType::parse(&table.columns[i].data_type)?)
                }
            };
            fields.push(ArrowField::new(&f.name, f.ty.file_type(), f.nullable));
            sources.push(source);
            types.push(f.ty);
        }
        Ok(FileLayout {
            arrow: Arc::new(ArrowSchema::new(fields)),
            sources,
            types,
        })
    }
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::deps::arrow_array::{Array, Time32SecondArray};
    use fluss_lake_guest_sdk::testing::log_table;

    use super::*;

    fn all_types() -> TableInfo {
        log_table(
            "db",
            "t",
            &[
                ("id", "INT", false),
                ("b", "BOOLEAN", true),
                ("tiny", "TINYINT", true),
                ("small", "SMALLINT", true),
                ("big", "BIGINT", true),
                ("f", "FLOAT", true),
                ("d", "DOUBLE", true),
                ("amount", "DECIMAL(10, 2)", true),
                ("s", "STRING", true),
                ("c", "CHAR(3)", true),
                ("bytes", "BYTES", true),
                ("bin", "BINARY(4)", true),
                ("day", "DATE", true),
                ("t", "TIME(3)", true),
                ("ts", "TIMESTAMP(6)", true),
                ("ltz", "TIMESTAMP_LTZ(3)", true),
                ("p", "STRING", false),
            ],
            &[],
            2,
            &["p"],
        )
    }

    #[test]
    fn schema_string_of_a_fluss_table() {
        let s = DeltaSchema::for_fluss_table(&all_types()).unwrap();
        let v: Value =
            fluss_lake_guest_sdk::deps::serde_json::from_str(&s.to_schema_string()).unwrap();
        let types: Vec<(&str, &str, bool)> = v["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap(),
                    f["type"].as_str().unwrap(),
                    f["nullable"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            types,
            [
                ("id", "integer", false),
                ("b", "boolean", true),
                ("tiny", "byte", true),
                ("small", "short", true),
                ("big", "long", true),
                ("f", "float", true),
                ("d", "double", true),
                ("amount", "decimal(10,2)", true),
                ("s", "string", true),
                ("c", "string", true),
                ("bytes", "binary", true),
                ("bin", "binary", true),
                ("day", "date", true),
                ("t", "integer", true),
                ("ts", "timestamp_ntz", true),
                ("ltz", "timestamp", true),
                ("p", "string", false),
                ("__bucket", "integer", false),
                ("__offset", "long", false),
                ("__timestamp", "timestamp", false),
            ]
        );
        assert_eq!(v["type"], "struct");
        assert_eq!(v["fields"][0]["metadata"], json!({}));
        assert!(s.has_timestamp_ntz());
        assert_eq!(DeltaSchema::parse(&s.to_schema_string()).unwrap(), s);
        s.check_matches(&all_types()).unwrap();
    }

    #[test]
    fn mismatches_are_invalid_input() {
        let t = all_types();
        let mut s = DeltaSchema::for_fluss_table(&t).unwrap();
        s.fields[0].ty = DeltaType::Long;
        let e = s.check_matches(&t).unwrap_err();
        assert!(e.message().contains("column id"), "{e}");
        let mut s = DeltaSchema::for_fluss_table(&t).unwrap();
        s.fields.pop();
        assert!(
            s.check_matches(&t)
                .unwrap_err()
                .message()
                .contains("system")
        );
        let mut s = DeltaSchema::for_fluss_table(&t).unwrap();
        s.fields[1].nullable = false;
        assert!(
            s.check_matches(&t)
                .unwrap_err()
                .message()
                .contains("NOT NULL")
        );
        assert_eq!(
            DeltaType::parse("decimal(38, 10)").unwrap(),
            DeltaType::Decimal(38, 10)
        );
        let nested = r#"{"type":"struct","fields":[{"name":"a","type":{"type":"struct","fields":[]},"nullable":true,"metadata":{}}]}"#;
        assert_eq!(
            DeltaSchema::parse(nested).unwrap_err().kind(),
            fluss_lake_guest_sdk::ErrorKind::Unsupported
        );
        let mut reserved = t.clone();
        reserved.columns[1].name = "__offset".into();
        assert!(DeltaSchema::for_fluss_table(&reserved).is_err());
    }

    #[test]
    fn file_layout_leaves_out_partition_columns() {
        let layout = FileLayout::for_fluss_table(&all_types()).unwrap();
        let names: Vec<&str> = layout
            .arrow
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert!(!names.contains(&"p"));
        assert_eq!(
            &names[names.len() - 3..],
            ["__bucket", "__offset", "__timestamp"]
        );
        assert_eq!(layout.sources[names.len() - 3], ColumnSource::Bucket);
        assert_eq!(
            layout
                .arrow
                .field_with_name("__timestamp")
                .unwrap()
                .data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
    }

    #[test]
    fn time_becomes_integer_millis_of_day() {
        let secs: ArrayRef = Arc::new(Time32SecondArray::from(vec![Some(61), None]));
        let field = ArrowField::new("t", DataType::Int32, true);
        let out = to_delta_array(&secs, FlussType::Time(0), &field).unwrap();
        assert_eq!(out.data_type(), &DataType::Int32);
        assert_eq!(out.as_primitive::<Int32Type>().value(0), 61_000);
        assert!(out.is_null(1));
    }
}
