//! Delta schemas: how Fluss column types map to Delta types, primitive and nested (the
//! protocol's "Schema Serialization Format": `array`, `map` and `struct` objects), the schema
//! string a new table gets (the Fluss columns, then the system columns `__bucket`, `__offset`,
//! `__timestamp` that Fluss's lake plugins append), parsing the schema of an existing table,
//! and the Arrow schema of the Parquet files (Delta keeps partition columns out of them).
//!
//! Nested fields carry no ids: column mapping, which would give them ids and physical names,
//! is refused by [`crate::actions::check_writable`], so Delta readers match nested Parquet
//! fields by name.

use std::sync::Arc;

use fluss_lake_guest_sdk::convert::to_file_array;
use fluss_lake_guest_sdk::datatype::{ColumnType, FlussType, MAX_NESTING};
use fluss_lake_guest_sdk::deps::arrow_array::cast::AsArray;
use fluss_lake_guest_sdk::deps::arrow_array::types::{Int32Type, Time32MillisecondType};
use fluss_lake_guest_sdk::deps::arrow_array::{Array, ArrayRef, ListArray, MapArray, StructArray};
use fluss_lake_guest_sdk::deps::arrow_schema::{
    DataType, Field as ArrowField, Fields, Schema as ArrowSchema, SchemaRef, TimeUnit,
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

/// Names of the Parquet LIST element and MAP key-value group: the Parquet format's
/// LogicalTypes.md names, which Delta on Spark writes and delta-kernel uses for the Arrow
/// form of Delta's `array` and `map` (any name reads, these are the canonical ones).
const LIST_ELEMENT: &str = "element";
const MAP_KEY_VALUE: &str = "key_value";

/// A Delta data type: the protocol's primitive types, and its nested `array`, `map` and
/// `struct` types, nested to any depth.
#[derive(Debug, Clone, PartialEq)]
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
    /// table feature, wherever in the schema it occurs.
    TimestampNtz,
    /// `{"type":"array","elementType":…,"containsNull":…}`.
    Array {
        element: Box<DeltaType>,
        contains_null: bool,
    },
    /// `{"type":"map","keyType":…,"valueType":…,"valueContainsNull":…}`. Delta map keys are
    /// never null (the protocol has no `keyContainsNull`).
    Map {
        key: Box<DeltaType>,
        value: Box<DeltaType>,
        value_contains_null: bool,
    },
    /// `{"type":"struct","fields":[…]}`: named fields, each with its own nullability and
    /// metadata.
    Struct(Vec<DeltaField>),
}

impl DeltaType {
    /// The Delta type of a Fluss primitive type.
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

    /// The Delta type of any Fluss column type: `ARRAY<t>` is an `array` whose `containsNull`
    /// is the element's nullability, `MAP<k, v>` a `map` whose `valueContainsNull` is the
    /// value's (its keys must hold no nulls: Delta keys are never null), `ROW<...>` a
    /// `struct` of the same fields, each field's description kept as its `comment`
    /// metadata, as Spark keeps column comments.
    pub fn from_column_type(t: &ColumnType) -> DeltaType {
        match t {
            ColumnType::Primitive(p) => DeltaType::from_fluss(*p),
            ColumnType::Array(e) => DeltaType::Array {
                element: Box::new(DeltaType::from_column_type(&e.ty)),
                contains_null: e.nullable,
            },
            ColumnType::Map { key, value } => DeltaType::Map {
                key: Box::new(DeltaType::from_column_type(&key.ty)),
                value: Box::new(DeltaType::from_column_type(&value.ty)),
                value_contains_null: value.nullable,
            },
            ColumnType::Row(fields) => DeltaType::Struct(
                fields
                    .iter()
                    .map(|f| DeltaField {
                        name: f.name.clone(),
                        ty: DeltaType::from_column_type(&f.ty.ty),
                        nullable: f.ty.nullable,
                        metadata: comment(f.description.as_deref()),
                    })
                    .collect(),
            ),
        }
    }

    /// True for `array`, `map` and `struct`.
    pub fn is_nested(&self) -> bool {
        matches!(
            self,
            DeltaType::Array { .. } | DeltaType::Map { .. } | DeltaType::Struct(_)
        )
    }

    /// The type in a schema string: a primitive's name, or a nested type's object.
    pub fn to_json(&self) -> Value {
        match self {
            DeltaType::Array {
                element,
                contains_null,
            } => json!({
                "type": "array",
                "elementType": element.to_json(),
                "containsNull": contains_null,
            }),
            DeltaType::Map {
                key,
                value,
                value_contains_null,
            } => json!({
                "type": "map",
                "keyType": key.to_json(),
                "valueType": value.to_json(),
                "valueContainsNull": value_contains_null,
            }),
            DeltaType::Struct(fields) => json!({
                "type": "struct",
                "fields": fields.iter().map(DeltaField::to_json).collect::<Vec<_>>(),
            }),
            primitive => Value::String(primitive.name()),
        }
    }

    /// Parses a type of a schema string (see [`DeltaType::to_json`]); types nested deeper than
    /// the SDK's [`MAX_NESTING`] are refused rather than recursed into.
    pub fn from_json(v: &Value) -> Result<DeltaType> {
        Self::from_json_at(v, 0)
    }

    fn from_json_at(v: &Value, depth: usize) -> Result<DeltaType> {
        if depth > MAX_NESTING {
            return Err(corrupt(format!(
                "a type nests deeper than {MAX_NESTING} levels"
            )));
        }
        let o = match v {
            Value::String(name) => return DeltaType::parse(name),
            Value::Object(o) => o,
            other => {
                return Err(corrupt(format!(
                    "type {other} is neither a name nor an object"
                )));
            }
        };
        let child = |key: &str| {
            let t = o
                .get(key)
                .ok_or_else(|| corrupt(format!("{v} has no {key}")))?;
            DeltaType::from_json_at(t, depth + 1).map(Box::new)
        };
        // Spark writes both flags; a missing one reads as Spark's default (nullable).
        let flag = |key: &str| o.get(key).and_then(Value::as_bool).unwrap_or(true);
        Ok(match o.get("type").and_then(Value::as_str) {
            Some("array") => DeltaType::Array {
                element: child("elementType")?,
                contains_null: flag("containsNull"),
            },
            Some("map") => DeltaType::Map {
                key: child("keyType")?,
                value: child("valueType")?,
                value_contains_null: flag("valueContainsNull"),
            },
            Some("struct") => DeltaType::Struct(fields_from_json(v, depth + 1)?),
            other => {
                return Err(Error::unsupported(format!(
                    "Delta type {} is not supported",
                    other.map_or_else(|| v.to_string(), str::to_string)
                )));
            }
        })
    }

    /// The type's name in a schema string (a nested type's JSON, as text, for messages).
    pub fn name(&self) -> String {
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
            nested => nested.to_json().to_string(),
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
    /// and `short` as INT32 with their integer annotation; `array` as a 3-level LIST whose
    /// element is named `element`, `map` as a MAP of repeated `key_value` groups of a
    /// required `key` and a `value`, `struct` as a group of its fields — the Parquet
    /// format's canonical shapes, which the protocol's type mappings refer to and Spark
    /// writes.
    pub fn file_type(&self) -> DataType {
        match self {
            DeltaType::Boolean => DataType::Boolean,
            DeltaType::Byte => DataType::Int8,
            DeltaType::Short => DataType::Int16,
            DeltaType::Integer => DataType::Int32,
            DeltaType::Long => DataType::Int64,
            DeltaType::Float => DataType::Float32,
            DeltaType::Double => DataType::Float64,
            DeltaType::Decimal(p, s) => DataType::Decimal128(*p, *s as i8),
            DeltaType::String => DataType::Utf8,
            DeltaType::Binary => DataType::Binary,
            DeltaType::Date => DataType::Date32,
            DeltaType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            DeltaType::TimestampNtz => DataType::Timestamp(TimeUnit::Microsecond, None),
            DeltaType::Array {
                element,
                contains_null,
            } => DataType::List(Arc::new(ArrowField::new(
                LIST_ELEMENT,
                element.file_type(),
                *contains_null,
            ))),
            DeltaType::Map {
                key,
                value,
                value_contains_null,
            } => DataType::Map(
                Arc::new(ArrowField::new(
                    MAP_KEY_VALUE,
                    DataType::Struct(Fields::from(vec![
                        ArrowField::new("key", key.file_type(), false),
                        ArrowField::new("value", value.file_type(), *value_contains_null),
                    ])),
                    false,
                )),
                false,
            ),
            DeltaType::Struct(fields) => DataType::Struct(
                fields
                    .iter()
                    .map(|f| ArrowField::new(&f.name, f.ty.file_type(), f.nullable))
                    .collect::<Fields>(),
            ),
        }
    }

    /// True when this type is or holds a `timestamp_ntz` (the `timestampNtz` feature covers
    /// nested fields too: delta-rs and Spark refuse such a table without it).
    pub fn has_timestamp_ntz(&self) -> bool {
        match self {
            DeltaType::TimestampNtz => true,
            DeltaType::Array { element, .. } => element.has_timestamp_ntz(),
            DeltaType::Map { key, value, .. } => {
                key.has_timestamp_ntz() || value.has_timestamp_ntz()
            }
            DeltaType::Struct(fields) => fields.iter().any(|f| f.ty.has_timestamp_ntz()),
            _ => false,
        }
    }

    /// True when values of this type (what a Fluss column maps to) can be written to a column
    /// of type `table` (the Delta table's): the same type, nested fields of the same names in
    /// the same order, and nothing non-null in `table` that may be null here. Field metadata
    /// (comments) does not matter.
    pub fn writes_as(&self, table: &DeltaType) -> bool {
        match (self, table) {
            (
                DeltaType::Array {
                    element: a,
                    contains_null: a_null,
                },
                DeltaType::Array {
                    element: b,
                    contains_null: b_null,
                },
            ) => a.writes_as(b) && (!a_null || *b_null),
            (
                DeltaType::Map {
                    key: ak,
                    value: av,
                    value_contains_null: a_null,
                },
                DeltaType::Map {
                    key: bk,
                    value: bv,
                    value_contains_null: b_null,
                },
            ) => ak.writes_as(bk) && av.writes_as(bv) && (!a_null || *b_null),
            (DeltaType::Struct(a), DeltaType::Struct(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| {
                        x.name == y.name && x.ty.writes_as(&y.ty) && (!x.nullable || y.nullable)
                    })
            }
            (a, b) => a == b,
        }
    }

    /// Calls `visit` with every struct field inside this type and its dotted path under
    /// `path` (`a.element.x`, `m.value.y`: Spark's names for fields in arrays and maps).
    fn visit_fields<'a>(&'a self, path: &str, visit: &mut dyn FnMut(&str, &'a DeltaField)) {
        match self {
            DeltaType::Array { element, .. } => {
                element.visit_fields(&format!("{path}.element"), visit)
            }
            DeltaType::Map { key, value, .. } => {
                key.visit_fields(&format!("{path}.key"), visit);
                value.visit_fields(&format!("{path}.value"), visit);
            }
            DeltaType::Struct(fields) => {
                for f in fields {
                    let p = format!("{path}.{}", f.name);
                    visit(&p, f);
                    f.ty.visit_fields(&p, visit);
                }
            }
            _ => {}
        }
    }
}

/// The `comment` metadata of a column or field with this description (Spark's key).
fn comment(description: Option<&str>) -> Map<String, Value> {
    let mut metadata = Map::new();
    if let Some(d) = description {
        metadata.insert("comment".into(), json!(d));
    }
    metadata
}

/// The `fields` of a `struct` object (the schema itself, or a nested struct).
fn fields_from_json(v: &Value, depth: usize) -> Result<Vec<DeltaField>> {
    v.get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| corrupt("a struct without fields"))?
        .iter()
        .map(|f| DeltaField::from_json(f, depth))
        .collect()
}

/// A TIME column (at any depth) goes through the SDK's conversion to millis of the day as
/// Arrow `Time32(ms)`, which is then reinterpreted as the plain `integer` of the file type,
/// without a TIME annotation Delta readers would not expect: the type to convert to first
/// (`None` when the column holds no TIME, so the file type is converted to directly).
fn staging_type(fluss: &ColumnType, file: &DataType) -> Option<DataType> {
    let with = |f: &ArrowField, t: DataType| Arc::new(f.clone().with_data_type(t));
    match (fluss, file) {
        (ColumnType::Primitive(FlussType::Time(_)), _) => {
            Some(DataType::Time32(TimeUnit::Millisecond))
        }
        (ColumnType::Array(e), DataType::List(item)) => {
            let t = staging_type(&e.ty, item.data_type())?;
            Some(DataType::List(with(item, t)))
        }
        (ColumnType::Map { key, value }, DataType::Map(entries, sorted)) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return None;
            };
            let k = staging_type(&key.ty, kv[0].data_type());
            let v = staging_type(&value.ty, kv[1].data_type());
            if k.is_none() && v.is_none() {
                return None;
            }
            let kv = Fields::from(vec![
                with(&kv[0], k.unwrap_or_else(|| kv[0].data_type().clone())),
                with(&kv[1], v.unwrap_or_else(|| kv[1].data_type().clone())),
            ]);
            Some(DataType::Map(with(entries, DataType::Struct(kv)), *sorted))
        }
        (ColumnType::Row(fields), DataType::Struct(file_fields)) => {
            let staged: Vec<Option<DataType>> = fields
                .iter()
                .zip(file_fields.iter())
                .map(|(f, ff)| staging_type(&f.ty.ty, ff.data_type()))
                .collect();
            if staged.iter().all(Option::is_none) {
                return None;
            }
            Some(DataType::Struct(
                file_fields
                    .iter()
                    .zip(staged)
                    .map(|(ff, t)| with(ff, t.unwrap_or_else(|| ff.data_type().clone())))
                    .collect::<Fields>(),
            ))
        }
        _ => None,
    }
}

/// `array` (of the staging type) as the file type `to`: `Time32(ms)` leaves become `Int32`
/// ones over the same buffers; lists, maps and structs are rebuilt around them with the
/// file type's fields.
fn retype(array: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if array.data_type() == to {
        return Ok(array.clone());
    }
    let mismatch = || {
        Error::internal(format!(
            "cannot reinterpret Arrow {} as {to}",
            array.data_type()
        ))
    };
    Ok(match (array.data_type(), to) {
        (DataType::Time32(TimeUnit::Millisecond), DataType::Int32) => Arc::new(
            array
                .as_primitive::<Time32MillisecondType>()
                .reinterpret_cast::<Int32Type>(),
        ),
        (DataType::List(_), DataType::List(item)) => {
            let list = array.as_list::<i32>();
            Arc::new(ListArray::try_new(
                item.clone(),
                list.offsets().clone(),
                retype(list.values(), item.data_type())?,
                list.nulls().cloned(),
            )?)
        }
        (DataType::Map(_, _), DataType::Map(entries, sorted)) => {
            let map = array.as_map();
            let kv: ArrayRef = Arc::new(map.entries().clone());
            Arc::new(MapArray::try_new(
                entries.clone(),
                map.offsets().clone(),
                retype(&kv, entries.data_type())?.as_struct().clone(),
                map.nulls().cloned(),
                *sorted,
            )?)
        }
        (DataType::Struct(_), DataType::Struct(fields)) => {
            let st = array.as_struct();
            let children = st
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| retype(c, f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(
                fields.clone(),
                children,
                st.nulls().cloned(),
            )?)
        }
        _ => return Err(mismatch()),
    })
}

/// Converts a column of a Fluss row batch to its Delta file type `field` (see
/// [`DeltaType::from_column_type`]), through `staging` when the column holds TIME values
/// (see [`FileLayout`]).
pub fn to_delta_array(
    array: &ArrayRef,
    staging: Option<&DataType>,
    field: &ArrowField,
) -> Result<ArrayRef> {
    match staging {
        None => Ok(to_file_array(
            array,
            field.data_type(),
            field.is_nullable(),
            field.name(),
        )?),
        Some(staging) => {
            let staged = to_file_array(array, staging, field.is_nullable(), field.name())?;
            retype(&staged, field.data_type())
        }
    }
}

/// A field of a Delta schema: a top-level column, or a field of a nested `struct`.
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaField {
    pub name: String,
    pub ty: DeltaType,
    pub nullable: bool,
    /// Column metadata (`comment`, and any `delta.*` keys other writers set).
    pub metadata: Map<String, Value>,
}

impl DeltaField {
    /// The field in a schema string.
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "type": self.ty.to_json(), "nullable": self.nullable,
            "metadata": self.metadata})
    }

    fn from_json(f: &Value, depth: usize) -> Result<DeltaField> {
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| corrupt("field without name"))?
            .to_string();
        let ty = DeltaType::from_json_at(
            f.get("type")
                .ok_or_else(|| corrupt(format!("field {name} without type")))?,
            depth,
        )
        .map_err(|e| e.context(format!("Delta column {name}")))?;
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
    }
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
    /// keeps them, in the `comment` metadata; nested types as [`DeltaType::from_column_type`]
    /// maps them), then the non-null system columns.
    pub fn for_fluss_table(table: &TableInfo) -> Result<DeltaSchema> {
        let mut fields = Vec::new();
        for c in &table.columns {
            if SYSTEM_COLUMNS.iter().any(|(n, _)| *n == c.name) {
                return Err(Error::invalid_input(format!(
                    "column '{}' conflicts with a reserved system column name",
                    c.name
                )));
            }
            let t = ColumnType::parse(&c.data_type)
                .map_err(|e| e.context(format!("column {}", c.name)))?;
            fields.push(DeltaField {
                name: c.name.clone(),
                ty: DeltaType::from_column_type(&t),
                nullable: c.nullable,
                metadata: comment(c.comment.as_deref()),
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

    /// Parses a `schemaString`, nested types included. Types this plugin cannot write
    /// (`variant`, anything unknown) are `unsupported`.
    pub fn parse(schema_string: &str) -> Result<DeltaSchema> {
        let v: Value =
            fluss_lake_guest_sdk::deps::serde_json::from_str(schema_string).map_err(corrupt)?;
        Ok(DeltaSchema {
            fields: fields_from_json(&v, 0)?,
        })
    }

    /// The `schemaString` of a `metaData` action.
    pub fn to_schema_string(&self) -> String {
        let fields: Vec<Value> = self.fields.iter().map(DeltaField::to_json).collect();
        json!({"type": "struct", "fields": fields}).to_string()
    }

    pub fn field(&self, name: &str) -> Option<&DeltaField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// True when a column, or a field nested in one, needs the `timestampNtz` table feature.
    pub fn has_timestamp_ntz(&self) -> bool {
        self.fields.iter().any(|f| f.ty.has_timestamp_ntz())
    }

    /// Every field of the schema, top-level columns and nested struct fields alike, with its
    /// dotted path (for checks of column metadata at any depth).
    pub fn all_fields(&self) -> Vec<(String, &DeltaField)> {
        let mut out = Vec::new();
        for f in &self.fields {
            out.push((f.name.clone(), f));
            f.ty.visit_fields(&f.name, &mut |p, nested| out.push((p.to_string(), nested)));
        }
        out
    }

    /// Checks that this is the schema of `table` as [`DeltaSchema::for_fluss_table`] builds
    /// it: the same column names in the same order, each of a type the Fluss type's Delta
    /// type writes as (see [`DeltaType::writes_as`]: nested fields too), no column NOT NULL
    /// in Delta that Fluss allows nulls in.
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
            if !want.ty.writes_as(&have.ty) {
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
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnSource {
    /// The Fluss column at `index`, converted to its file type through `staging` when it
    /// holds TIME values (see [`to_delta_array`]).
    Fluss {
        index: usize,
        staging: Option<DataType>,
    },
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
        for f in schema.fields {
            if table.partition_keys.contains(&f.name) {
                continue;
            }
            let file_type = f.ty.file_type();
            let source = match f.name.as_str() {
                BUCKET_COLUMN => ColumnSource::Bucket,
                OFFSET_COLUMN => ColumnSource::Offset,
                TIMESTAMP_COLUMN => ColumnSource::Timestamp,
                name => {
                    let index = table
                        .columns
                        .iter()
                        .position(|c| c.name == name)
                        .expect("schema built from the columns");
                    let fluss = ColumnType::parse(&table.columns[index].data_type)?;
                    ColumnSource::Fluss {
                        index,
                        staging: staging_type(&fluss, &file_type),
                    }
                }
            };
            fields.push(ArrowField::new(&f.name, file_type, f.nullable));
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
    use fluss_lake_guest_sdk::deps::arrow_array::Time32SecondArray;
    use fluss_lake_guest_sdk::testing::{NESTED_COLUMNS, log_table};

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
        let variant = r#"{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":"variant","containsNull":true},"nullable":true,"metadata":{}}]}"#;
        assert_eq!(
            DeltaSchema::parse(variant).unwrap_err().kind(),
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
        let fluss = ColumnType::Primitive(FlussType::Time(0));
        let staging = staging_type(&fluss, field.data_type());
        assert_eq!(staging, Some(DataType::Time32(TimeUnit::Millisecond)));
        let out = to_delta_array(&secs, staging.as_ref(), &field).unwrap();
        assert_eq!(out.data_type(), &DataType::Int32);
        assert_eq!(out.as_primitive::<Int32Type>().value(0), 61_000);
        assert!(out.is_null(1));
    }

    fn nested_table() -> TableInfo {
        log_table("db", "nested", &NESTED_COLUMNS, &[], 2, &[])
    }

    fn parse_json(text: &str) -> Value {
        fluss_lake_guest_sdk::deps::serde_json::from_str(text).unwrap()
    }

    /// The nested test table's schema string, as Delta's JSON (what delta-rs writes for the
    /// same Arrow schema, plus the ROW field's description as its `comment`).
    #[test]
    fn nested_columns_in_the_schema_string() {
        let t = nested_table();
        let s = DeltaSchema::for_fluss_table(&t).unwrap();
        let v = parse_json(&s.to_schema_string());
        let ty = |name: &str| {
            v["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == name)
                .unwrap()["type"]
                .clone()
        };
        assert_eq!(
            ty("tags"),
            json!({"type": "array", "elementType": "string", "containsNull": true})
        );
        assert_eq!(
            ty("nums"),
            json!({"type": "array", "elementType": "integer", "containsNull": false})
        );
        assert_eq!(
            ty("attrs"),
            json!({"type": "map", "keyType": "string", "valueType": "integer",
                "valueContainsNull": true})
        );
        assert_eq!(
            ty("point"),
            json!({"type": "struct", "fields": [
                {"name": "x", "type": "integer", "nullable": true, "metadata": {}},
                {"name": "y", "type": "string", "nullable": false,
                    "metadata": {"comment": "the label"}},
            ]})
        );
        assert_eq!(
            ty("events"),
            json!({"type": "array", "containsNull": true, "elementType": {
            "type": "struct", "fields": [
                {"name": "at", "type": "timestamp_ntz", "nullable": true, "metadata": {}},
                {"name": "labels", "nullable": true, "metadata": {}, "type": {
                    "type": "map", "keyType": "string", "valueContainsNull": true,
                    "valueType": {"type": "array", "elementType": "decimal(10,2)",
                        "containsNull": true}}},
            ]}})
        );
        assert!(s.field("events").unwrap().ty.is_nested());
        assert!(
            s.has_timestamp_ntz(),
            "a timestamp_ntz nested in an array of structs needs the feature"
        );
        assert_eq!(DeltaSchema::parse(&s.to_schema_string()).unwrap(), s);
        s.check_matches(&t).unwrap();
        let paths: Vec<String> = s.all_fields().into_iter().map(|(p, _)| p).collect();
        for p in ["point.y", "events.element.at", "events.element.labels"] {
            assert!(paths.contains(&p.to_string()), "{p} in {paths:?}");
        }
    }

    /// Another writer's schema of the same table (Spark's and delta-rs's spelling: no
    /// metadata keys, keys in another order) is the same schema.
    #[test]
    fn parses_nested_types_as_other_writers_spell_them() {
        let spark = r#"{"type":"struct","fields":[
            {"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array",
              "elementType":{"type":"struct","fields":[{"name":"d","type":"integer",
              "nullable":false,"metadata":{}}]},"containsNull":true},"valueContainsNull":false},
             "nullable":true,"metadata":{}}]}"#;
        let s = DeltaSchema::parse(spark).unwrap();
        let element = DeltaType::Struct(vec![DeltaField {
            name: "d".into(),
            ty: DeltaType::Integer,
            nullable: false,
            metadata: Map::new(),
        }]);
        assert_eq!(
            s.fields[0].ty,
            DeltaType::Map {
                key: Box::new(DeltaType::String),
                value: Box::new(DeltaType::Array {
                    element: Box::new(element),
                    contains_null: true,
                }),
                value_contains_null: false,
            }
        );
        assert_eq!(DeltaSchema::parse(&s.to_schema_string()).unwrap(), s);

        let mut deep = json!("integer");
        for _ in 0..=MAX_NESTING {
            deep = json!({"type": "array", "elementType": deep, "containsNull": true});
        }
        let schema = json!({"type": "struct", "fields": [
            {"name": "a", "type": deep, "nullable": true, "metadata": {}}]});
        let e = DeltaSchema::parse(&schema.to_string()).unwrap_err();
        assert_eq!(e.kind(), fluss_lake_guest_sdk::ErrorKind::Corrupt, "{e}");
        let no_element = r#"{"type":"struct","fields":[{"name":"a","type":{"type":"array"},
            "nullable":true,"metadata":{}}]}"#;
        assert!(DeltaSchema::parse(no_element).is_err());
    }

    #[test]
    fn nested_mismatches_are_invalid_input() {
        let t = nested_table();
        let want = DeltaSchema::for_fluss_table(&t).unwrap();
        let check = |edit: &dyn Fn(&mut DeltaType)| {
            let mut s = want.clone();
            edit(&mut s.fields[4].ty); // point
            edit(&mut s.fields[2].ty); // nums
            edit(&mut s.fields[1].ty); // tags
            s.check_matches(&t)
        };
        // Nullable in the table where Fluss has NOT NULL is fine; comments do not matter.
        check(&|ty| match ty {
            DeltaType::Struct(f) => {
                f[1].nullable = true;
                f[1].metadata.clear();
            }
            DeltaType::Array { contains_null, .. } => *contains_null = true,
            _ => {}
        })
        .unwrap();
        // NOT NULL in the table where Fluss allows nulls is not.
        let e = check(&|ty| {
            if let DeltaType::Array { contains_null, .. } = ty {
                *contains_null = false
            }
        })
        .unwrap_err();
        assert_eq!(e.kind(), fluss_lake_guest_sdk::ErrorKind::InvalidInput);
        assert!(e.message().contains("column tags"), "{e}");
        let e = check(&|ty| {
            if let DeltaType::Struct(f) = ty {
                f[0].nullable = false
            }
        })
        .unwrap_err();
        assert!(e.message().contains("column point"), "{e}");
        // A renamed or retyped field is another type.
        assert!(
            check(&|ty| {
                if let DeltaType::Struct(f) = ty {
                    f[0].name = "X".into()
                }
            })
            .is_err()
        );
        assert!(
            check(&|ty| {
                if let DeltaType::Struct(f) = ty {
                    f[0].ty = DeltaType::Long
                }
            })
            .is_err()
        );
    }

    /// The Parquet shapes of the nested types: LIST of `element`, MAP of `key_value` with a
    /// required `key`, structs of their fields, nullability at every level.
    #[test]
    fn nested_file_types() {
        let layout = FileLayout::for_fluss_table(&nested_table()).unwrap();
        let ty = |name: &str| {
            layout
                .arrow
                .field_with_name(name)
                .unwrap()
                .data_type()
                .clone()
        };
        let DataType::List(element) = ty("nums") else {
            panic!()
        };
        assert_eq!(
            (element.name().as_str(), element.is_nullable()),
            ("element", false)
        );
        let DataType::Map(entries, false) = ty("attrs") else {
            panic!()
        };
        assert_eq!(
            (entries.name().as_str(), entries.is_nullable()),
            ("key_value", false)
        );
        let DataType::Struct(kv) = entries.data_type() else {
            panic!()
        };
        assert_eq!(
            (
                kv[0].name().as_str(),
                kv[0].is_nullable(),
                kv[0].data_type()
            ),
            ("key", false, &DataType::Utf8)
        );
        assert_eq!(
            (kv[1].name().as_str(), kv[1].is_nullable()),
            ("value", true)
        );
        let DataType::Struct(point) = ty("point") else {
            panic!()
        };
        assert!(point[0].is_nullable() && !point[1].is_nullable());
        let DataType::List(event) = ty("events") else {
            panic!()
        };
        let DataType::Struct(event) = event.data_type() else {
            panic!()
        };
        assert_eq!(
            event[0].data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        assert!(
            layout.sources.iter().all(|s| !matches!(
                s,
                ColumnSource::Fluss {
                    staging: Some(_),
                    ..
                }
            )),
            "no TIME in the nested table"
        );
    }

    /// TIME at any depth is `integer` millis of the day, through the SDK's conversion.
    #[test]
    fn nested_time_becomes_integer_millis() {
        use fluss_lake_guest_sdk::testing::json_array;
        let t = log_table(
            "db",
            "times",
            &[
                ("a", "ARRAY<TIME(0)>", true),
                ("m", "MAP<STRING NOT NULL, TIME(3)>", true),
                ("r", "ROW<`t` TIME(3) NOT NULL, `i` INT>", true),
            ],
            &[],
            1,
            &[],
        );
        let s = DeltaSchema::for_fluss_table(&t).unwrap();
        assert_eq!(
            s.fields[2].ty.to_json()["fields"][0]["type"],
            json!("integer")
        );
        let layout = FileLayout::for_fluss_table(&t).unwrap();
        let rows = [
            (
                json!([61, null]),
                json!([["k", 1_500]]),
                json!({"t": 5, "i": 1}),
            ),
            (json!(null), json!(null), json!(null)),
        ];
        let inputs: Vec<ArrayRef> = t
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let values: Vec<Value> =
                    rows.iter().map(|r| [&r.0, &r.1, &r.2][i].clone()).collect();
                json_array(
                    &values,
                    &ColumnType::parse(&c.data_type).unwrap().arrow_type(),
                )
            })
            .collect();
        let out: Vec<ArrayRef> = inputs
            .iter()
            .zip(&layout.sources)
            .zip(layout.arrow.fields())
            .map(|((a, source), field)| {
                let ColumnSource::Fluss { staging, .. } = source else {
                    panic!()
                };
                assert!(staging.is_some(), "{field}");
                let out = to_delta_array(a, staging.as_ref(), field).unwrap();
                assert_eq!(out.data_type(), field.data_type());
                out
            })
            .collect();
        let ints = |a: &dyn Array| a.as_primitive::<Int32Type>().clone();
        let list = out[0].as_list::<i32>();
        assert_eq!(
            ints(list.value(0).as_ref()),
            vec![Some(61_000), None].into()
        );
        assert!(list.is_null(1));
        let map = out[1].as_map();
        assert_eq!(ints(map.values().as_ref()).value(0), 1_500);
        assert!(map.is_null(1));
        let row = out[2].as_struct();
        assert_eq!(ints(row.column(0).as_ref()).value(0), 5);
        assert_eq!(ints(row.column(1).as_ref()).value(0), 1);
        assert!(row.is_null(1));
    }
}
