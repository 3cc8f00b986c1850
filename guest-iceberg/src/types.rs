//! Iceberg types: their table-metadata JSON (primitive names, `list`/`map`/`struct` objects),
//! the mapping from Fluss types that Fluss's Java `FlussDataTypeToIcebergDataType` uses, field
//! ids as Iceberg's `TypeUtil.assignFreshIds` numbers them, the Arrow type whose Parquet
//! encoding is Iceberg's, and Iceberg's single-value binary serialization (file bounds,
//! partition summaries).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, TimeUnit};
use fluss_lake_guest_sdk::arrow_util::PARQUET_FIELD_ID_KEY;
use fluss_lake_guest_sdk::datatype::{ColumnType, FlussType, MAX_NESTING};
use fluss_lake_guest_sdk::stats::Datum;
use fluss_lake_guest_sdk::{Error, Result};
use serde_json::{Value, json};

/// A field of a struct: a column of a schema, or a field of a nested `struct`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NestedField {
    pub id: i32,
    pub name: String,
    pub required: bool,
    pub ty: IcebergType,
    pub doc: Option<String>,
}

/// An Iceberg `list`: its element's id, optionality and type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListType {
    pub element_id: i32,
    pub element_required: bool,
    pub element: IcebergType,
}

/// An Iceberg `map`: its key's and value's ids and types (keys are always required).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MapType {
    pub key_id: i32,
    pub key: IcebergType,
    pub value_id: i32,
    pub value_required: bool,
    pub value: IcebergType,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IcebergType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Decimal { precision: u8, scale: u8 },
    Date,
    Time,
    Timestamp,
    Timestamptz,
    String,
    Uuid,
    Fixed(u32),
    Binary,
    List(Box<ListType>),
    Map(Box<MapType>),
    Struct(Vec<NestedField>),
}

impl IcebergType {
    /// Parses a primitive type name of table metadata JSON (`"decimal(10, 2)"`, `"fixed[16]"`).
    pub fn parse(name: &str) -> Result<IcebergType> {
        let n = name.trim();
        let bad = || Error::unsupported(format!("unsupported Iceberg type {name:?}"));
        Ok(match n {
            "boolean" => IcebergType::Boolean,
            "int" => IcebergType::Int,
            "long" => IcebergType::Long,
            "float" => IcebergType::Float,
            "double" => IcebergType::Double,
            "date" => IcebergType::Date,
            "time" => IcebergType::Time,
            "timestamp" => IcebergType::Timestamp,
            "timestamptz" => IcebergType::Timestamptz,
            "string" => IcebergType::String,
            "uuid" => IcebergType::Uuid,
            "binary" => IcebergType::Binary,
            _ => {
                if let Some(args) = n.strip_prefix("decimal(").and_then(|r| r.strip_suffix(')')) {
                    let (p, s) = args.split_once(',').ok_or_else(bad)?;
                    let precision: u8 = p.trim().parse().map_err(|_| bad())?;
                    let scale: u8 = s.trim().parse().map_err(|_| bad())?;
                    if precision == 0 || precision > 38 || scale > precision {
                        return Err(bad());
                    }
                    IcebergType::Decimal { precision, scale }
                } else if let Some(len) = n.strip_prefix("fixed[").and_then(|r| r.strip_suffix(']'))
                {
                    IcebergType::Fixed(len.trim().parse().map_err(|_| bad())?)
                } else {
                    return Err(bad());
                }
            }
        })
    }

    /// True for `list`, `map` and `struct`.
    pub fn is_nested(&self) -> bool {
        matches!(
            self,
            IcebergType::List(_) | IcebergType::Map(_) | IcebergType::Struct(_)
        )
    }

    /// Parses a type of table metadata JSON: a primitive's name, or a `list`, `map` or
    /// `struct` object.
    pub fn from_json(v: &Value) -> Result<IcebergType> {
        Self::from_json_at(v, 0)
    }

    fn from_json_at(v: &Value, depth: usize) -> Result<IcebergType> {
        let corrupt = |what: &str| Error::corrupt(format!("Iceberg type {v}: {what}"));
        if depth > MAX_NESTING {
            return Err(corrupt(&format!("nested deeper than {MAX_NESTING} levels")));
        }
        let o = match v {
            Value::String(name) => return IcebergType::parse(name),
            Value::Object(o) => o,
            _ => return Err(corrupt("neither a name nor an object")),
        };
        let id = |key: &str| {
            o.get(key)
                .and_then(Value::as_i64)
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| corrupt(&format!("no {key}")))
        };
        let child = |key: &str| {
            Self::from_json_at(
                o.get(key).ok_or_else(|| corrupt(&format!("no {key}")))?,
                depth + 1,
            )
        };
        let required = |key: &str| o.get(key).and_then(Value::as_bool).unwrap_or(false);
        Ok(match o.get("type").and_then(Value::as_str) {
            Some("list") => IcebergType::List(Box::new(ListType {
                element_id: id("element-id")?,
                element_required: required("element-required"),
                element: child("element")?,
            })),
            Some("map") => IcebergType::Map(Box::new(MapType {
                key_id: id("key-id")?,
                key: child("key")?,
                value_id: id("value-id")?,
                value_required: required("value-required"),
                value: child("value")?,
            })),
            Some("struct") => IcebergType::Struct(NestedField::list_from_json(v, depth + 1)?),
            _ => return Err(corrupt("unknown type")),
        })
    }

    /// The type in table metadata JSON (see [`IcebergType::from_json`]).
    pub fn to_json(&self) -> Value {
        match self {
            IcebergType::List(l) => json!({
                "type": "list",
                "element-id": l.element_id,
                "element": l.element.to_json(),
                "element-required": l.element_required,
            }),
            IcebergType::Map(m) => json!({
                "type": "map",
                "key-id": m.key_id,
                "key": m.key.to_json(),
                "value-id": m.value_id,
                "value": m.value.to_json(),
                "value-required": m.value_required,
            }),
            IcebergType::Struct(fields) => json!({
                "type": "struct",
                "fields": fields.iter().map(NestedField::to_json).collect::<Vec<_>>(),
            }),
            primitive => Value::String(primitive.name()),
        }
    }

    /// The highest field id inside this type (elements, keys, values, struct fields).
    pub fn highest_nested_id(&self) -> Option<i32> {
        match self {
            IcebergType::List(l) => Some(l.element_id).max(l.element.highest_nested_id()),
            IcebergType::Map(m) => Some(m.key_id.max(m.value_id))
                .max(m.key.highest_nested_id())
                .max(m.value.highest_nested_id()),
            IcebergType::Struct(fields) => fields
                .iter()
                .map(|f| Some(f.id).max(f.ty.highest_nested_id()))
                .max()
                .flatten(),
            _ => None,
        }
    }

    /// The Iceberg type Fluss's Iceberg catalog creates for any Fluss column type: list
    /// elements and map values optional where Fluss's are nullable, map keys required, struct
    /// fields with the Fluss names and descriptions. Every id is 0 until
    /// [`assign_fresh_ids`] numbers them.
    pub fn from_column_type(t: &ColumnType) -> IcebergType {
        match t {
            ColumnType::Primitive(p) => IcebergType::from_fluss(*p),
            ColumnType::Array(e) => IcebergType::List(Box::new(ListType {
                element_id: 0,
                element_required: !e.nullable,
                element: IcebergType::from_column_type(&e.ty),
            })),
            ColumnType::Map { key, value } => IcebergType::Map(Box::new(MapType {
                key_id: 0,
                key: IcebergType::from_column_type(&key.ty),
                value_id: 0,
                value_required: !value.nullable,
                value: IcebergType::from_column_type(&value.ty),
            })),
            ColumnType::Row(fields) => IcebergType::Struct(
                fields
                    .iter()
                    .map(|f| NestedField {
                        id: 0,
                        name: f.name.clone(),
                        required: !f.ty.nullable,
                        ty: IcebergType::from_column_type(&f.ty.ty),
                        doc: f.description.clone(),
                    })
                    .collect(),
            ),
        }
    }

    /// True when values of this type (a Fluss column's) can be written as `other` (the lake
    /// column's): the same type whatever the field ids, nested fields with the same names in
    /// the same order, and nothing required in `other` that is optional here.
    pub fn writes_as(&self, other: &IcebergType) -> bool {
        let inner = |a: &IcebergType, a_required: bool, b: &IcebergType, b_required: bool| {
            a.writes_as(b) && (a_required || !b_required)
        };
        match (self, other) {
            (IcebergType::List(a), IcebergType::List(b)) => inner(
                &a.element,
                a.element_required,
                &b.element,
                b.element_required,
            ),
            (IcebergType::Map(a), IcebergType::Map(b)) => {
                a.key.writes_as(&b.key)
                    && inner(&a.value, a.value_required, &b.value, b.value_required)
            }
            (IcebergType::Struct(a), IcebergType::Struct(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| {
                        x.name == y.name && inner(&x.ty, x.required, &y.ty, y.required)
                    })
            }
            (a, b) => a == b,
        }
    }

    /// The type's name in table metadata JSON (a nested type's JSON, as text).
    pub fn name(&self) -> String {
        match self {
            IcebergType::Boolean => "boolean".into(),
            IcebergType::Int => "int".into(),
            IcebergType::Long => "long".into(),
            IcebergType::Float => "float".into(),
            IcebergType::Double => "double".into(),
            IcebergType::Decimal { precision, scale } => format!("decimal({precision}, {scale})"),
            IcebergType::Date => "date".into(),
            IcebergType::Time => "time".into(),
            IcebergType::Timestamp => "timestamp".into(),
            IcebergType::Timestamptz => "timestamptz".into(),
            IcebergType::String => "string".into(),
            IcebergType::Uuid => "uuid".into(),
            IcebergType::Fixed(n) => format!("fixed[{n}]"),
            IcebergType::Binary => "binary".into(),
            nested => nested.to_json().to_string(),
        }
    }

    /// The Iceberg type Fluss's Iceberg catalog creates for a Fluss column type.
    pub fn from_fluss(t: FlussType) -> IcebergType {
        match t {
            FlussType::Boolean => IcebergType::Boolean,
            FlussType::TinyInt | FlussType::SmallInt | FlussType::Int => IcebergType::Int,
            FlussType::BigInt => IcebergType::Long,
            FlussType::Float => IcebergType::Float,
            FlussType::Double => IcebergType::Double,
            FlussType::Char(_) | FlussType::String => IcebergType::String,
            FlussType::Decimal { precision, scale } => IcebergType::Decimal { precision, scale },
            FlussType::Date => IcebergType::Date,
            FlussType::Time(_) => IcebergType::Time,
            FlussType::Timestamp(_) => IcebergType::Timestamp,
            FlussType::TimestampLtz(_) => IcebergType::Timestamptz,
            FlussType::Bytes | FlussType::Binary(_) => IcebergType::Binary,
        }
    }

    /// The Arrow type written to Parquet for this Iceberg type: arrow-rs then produces the
    /// physical and logical types the Iceberg spec prescribes (INT32/INT64/FIXED decimals by
    /// precision, micros timestamps with `isAdjustedToUTC` for `timestamptz`).
    pub fn arrow_type(&self) -> DataType {
        match self {
            IcebergType::List(l) => DataType::List(Arc::new(arrow_field(
                "element",
                l.element_id,
                !l.element_required,
                &l.element,
            ))),
            IcebergType::Map(m) => DataType::Map(
                Arc::new(Field::new(
                    "key_value",
                    DataType::Struct(Fields::from(vec![
                        arrow_field("key", m.key_id, false, &m.key),
                        arrow_field("value", m.value_id, !m.value_required, &m.value),
                    ])),
                    false,
                )),
                false,
            ),
            IcebergType::Struct(fields) => DataType::Struct(Fields::from(
                fields
                    .iter()
                    .map(|f| arrow_field(&f.name, f.id, !f.required, &f.ty))
                    .collect::<Vec<_>>(),
            )),
            primitive => primitive.primitive_arrow_type(),
        }
    }

    fn primitive_arrow_type(&self) -> DataType {
        match *self {
            IcebergType::Boolean => DataType::Boolean,
            IcebergType::Int => DataType::Int32,
            IcebergType::Long => DataType::Int64,
            IcebergType::Float => DataType::Float32,
            IcebergType::Double => DataType::Float64,
            IcebergType::Decimal { precision, scale } => {
                DataType::Decimal128(precision, scale as i8)
            }
            IcebergType::Date => DataType::Date32,
            IcebergType::Time => DataType::Time64(TimeUnit::Microsecond),
            IcebergType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            IcebergType::Timestamptz => {
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
            }
            IcebergType::String => DataType::Utf8,
            IcebergType::Uuid => DataType::FixedSizeBinary(16),
            IcebergType::Fixed(n) => DataType::FixedSizeBinary(n as i32),
            IcebergType::Binary => DataType::Binary,
            IcebergType::List(_) | IcebergType::Map(_) | IcebergType::Struct(_) => {
                unreachable!("arrow_type handles nested types")
            }
        }
    }

    /// The Avro type of a value of this type inside a manifest (partition tuples, whose
    /// source columns are primitive).
    pub fn avro_type(&self) -> serde_json::Value {
        match self {
            IcebergType::Boolean => json!("boolean"),
            IcebergType::Int => json!("int"),
            IcebergType::Long => json!("long"),
            IcebergType::Float => json!("float"),
            IcebergType::Double => json!("double"),
            IcebergType::Date => json!({"type": "int", "logicalType": "date"}),
            IcebergType::Time => json!({"type": "long", "logicalType": "time-micros"}),
            IcebergType::Timestamp => json!({"type": "long", "logicalType": "timestamp-micros",
                "adjust-to-utc": false}),
            IcebergType::Timestamptz => json!({"type": "long", "logicalType": "timestamp-micros",
                "adjust-to-utc": true}),
            IcebergType::String => json!("string"),
            IcebergType::Binary => json!("bytes"),
            IcebergType::Decimal { .. } | IcebergType::Uuid | IcebergType::Fixed(_) => {
                json!("bytes")
            }
            IcebergType::List(_) | IcebergType::Map(_) | IcebergType::Struct(_) => {
                json!("bytes")
            }
        }
    }
}

/// The Arrow field of an Iceberg field (column, struct field, list element, map key or value)
/// with its field id, which Parquet carries and readers match columns by.
pub fn arrow_field(name: &str, id: i32, nullable: bool, ty: &IcebergType) -> Field {
    Field::new(name, ty.arrow_type(), nullable).with_metadata(HashMap::from([(
        PARQUET_FIELD_ID_KEY.to_string(),
        id.to_string(),
    )]))
}

/// Numbers the fields of a struct (a schema's columns) from `next + 1` as Iceberg's
/// `TypeUtil.assignFreshIds` does when a table is created: a struct's own fields first, then
/// the fields inside each of them in order; a list's element, a map's key and value, before
/// what is inside them.
pub fn assign_fresh_ids(fields: &mut [NestedField], next: &mut i32) {
    for f in fields.iter_mut() {
        *next += 1;
        f.id = *next;
    }
    for f in fields.iter_mut() {
        assign_fresh_type_ids(&mut f.ty, next);
    }
}

fn assign_fresh_type_ids(ty: &mut IcebergType, next: &mut i32) {
    match ty {
        IcebergType::List(l) => {
            *next += 1;
            l.element_id = *next;
            assign_fresh_type_ids(&mut l.element, next);
        }
        IcebergType::Map(m) => {
            *next += 1;
            m.key_id = *next;
            *next += 1;
            m.value_id = *next;
            assign_fresh_type_ids(&mut m.key, next);
            assign_fresh_type_ids(&mut m.value, next);
        }
        IcebergType::Struct(fields) => assign_fresh_ids(fields, next),
        _ => {}
    }
}

impl NestedField {
    /// The `fields` of a struct object of table metadata.
    pub fn list_from_json(v: &Value, depth: usize) -> Result<Vec<NestedField>> {
        let corrupt = |what: &str| Error::corrupt(format!("Iceberg schema: {what}"));
        v.get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| corrupt("no fields"))?
            .iter()
            .map(|f| {
                let id = f
                    .get("id")
                    .and_then(Value::as_i64)
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(|| corrupt("field without id"))?;
                let name = f
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| corrupt("field without name"))?
                    .to_string();
                let ty = IcebergType::from_json_at(
                    f.get("type").ok_or_else(|| corrupt("field without type"))?,
                    depth,
                )?;
                Ok(NestedField {
                    id,
                    name,
                    required: f.get("required").and_then(Value::as_bool).unwrap_or(false),
                    ty,
                    doc: f.get("doc").and_then(Value::as_str).map(str::to_string),
                })
            })
            .collect()
    }

    /// The field in table metadata JSON.
    pub fn to_json(&self) -> Value {
        let mut o = json!({"id": self.id, "name": self.name, "required": self.required,
            "type": self.ty.to_json()});
        if let Some(doc) = &self.doc {
            o["doc"] = json!(doc);
        }
        o
    }
}

/// Iceberg's single-value serialization of a statistics value of a column of type `ty`, as
/// computed on the file's Arrow column (so already in Iceberg's units). `None` for values
/// that must not be used as bounds (NaN).
pub fn single_value(d: &Datum, ty: &IcebergType) -> Option<Vec<u8>> {
    Some(match (d, ty) {
        (Datum::Boolean(b), _) => vec![*b as u8],
        (Datum::Int32(v), _) | (Datum::Date32(v), _) => v.to_le_bytes().to_vec(),
        (Datum::Int8(v), _) => (*v as i32).to_le_bytes().to_vec(),
        (Datum::Int16(v), _) => (*v as i32).to_le_bytes().to_vec(),
        (Datum::Int64(v), _) | (Datum::Time(v, _), _) | (Datum::Timestamp(v, _), _) => {
            v.to_le_bytes().to_vec()
        }
        (Datum::Float32(v), _) if v.is_nan() => return None,
        (Datum::Float64(v), _) if v.is_nan() => return None,
        (Datum::Float32(v), _) => v.to_le_bytes().to_vec(),
        (Datum::Float64(v), _) => v.to_le_bytes().to_vec(),
        (Datum::Utf8(s), _) => s.as_bytes().to_vec(),
        (Datum::Binary(b), _) => b.clone(),
        (Datum::Decimal(v), _) => decimal_bytes(*v),
    })
}

/// A decimal's unscaled value as the minimal big-endian two's-complement bytes (Java's
/// `BigInteger.toByteArray`).
pub fn decimal_bytes(unscaled: i128) -> Vec<u8> {
    let bytes = unscaled.to_be_bytes();
    let mut start = 0;
    while start < 15 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        let redundant = (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes[start..].to_vec()
}

/// How many characters / bytes of a string or binary bound Iceberg keeps by default
/// (`write.metadata.metrics.default` = `truncate(16)`).
pub const BOUND_TRUNCATE_LENGTH: usize = 16;

/// Truncates a lower bound: any prefix is still a lower bound.
pub fn truncate_lower(d: &Datum) -> Datum {
    match d {
        Datum::Utf8(s) if s.chars().count() > BOUND_TRUNCATE_LENGTH => {
            Datum::Utf8(s.chars().take(BOUND_TRUNCATE_LENGTH).collect())
        }
        Datum::Binary(b) if b.len() > BOUND_TRUNCATE_LENGTH => {
            Datum::Binary(b[..BOUND_TRUNCATE_LENGTH].to_vec())
        }
        other => other.clone(),
    }
}

/// Truncates an upper bound by incrementing the last kept character / byte, as Iceberg's
/// `UnicodeUtil.truncateStringMax` / `BinaryUtil.truncateBinaryMax` do; `None` when no
/// short upper bound exists (then the file has no upper bound for the column).
pub fn truncate_upper(d: &Datum) -> Option<Datum> {
    match d {
        Datum::Utf8(s) if s.chars().count() > BOUND_TRUNCATE_LENGTH => {
            let mut chars: Vec<char> = s.chars().take(BOUND_TRUNCATE_LENGTH).collect();
            while let Some(last) = chars.pop() {
                let mut next = last as u32 + 1;
                if (0xD800..=0xDFFF).contains(&next) {
                    next = 0xE000;
                }
                if let Some(c) = char::from_u32(next) {
                    chars.push(c);
                    return Some(Datum::Utf8(chars.into_iter().collect()));
                }
            }
            None
        }
        Datum::Binary(b) if b.len() > BOUND_TRUNCATE_LENGTH => {
            let mut out = b[..BOUND_TRUNCATE_LENGTH].to_vec();
            while let Some(last) = out.pop() {
                if last < 0xff {
                    out.push(last + 1);
                    return Some(Datum::Binary(out));
                }
            }
            None
        }
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [
            IcebergType::Boolean,
            IcebergType::Int,
            IcebergType::Long,
            IcebergType::Float,
            IcebergType::Double,
            IcebergType::Decimal {
                precision: 10,
                scale: 2,
            },
            IcebergType::Date,
            IcebergType::Time,
            IcebergType::Timestamp,
            IcebergType::Timestamptz,
            IcebergType::String,
            IcebergType::Uuid,
            IcebergType::Fixed(16),
            IcebergType::Binary,
        ] {
            assert_eq!(IcebergType::parse(&t.name()).unwrap(), t);
        }
        assert_eq!(
            IcebergType::parse("decimal(38,0)").unwrap(),
            IcebergType::Decimal {
                precision: 38,
                scale: 0
            }
        );
        assert!(IcebergType::parse("list<int>").is_err());
        assert!(IcebergType::parse("decimal(40, 1)").is_err());
    }

    #[test]
    fn fluss_mapping_matches_java_plugin() {
        let m = |s: &str| IcebergType::from_fluss(FlussType::parse(s).unwrap());
        assert_eq!(m("TINYINT"), IcebergType::Int);
        assert_eq!(m("SMALLINT"), IcebergType::Int);
        assert_eq!(m("BIGINT"), IcebergType::Long);
        assert_eq!(m("CHAR(3)"), IcebergType::String);
        assert_eq!(m("BINARY(4)"), IcebergType::Binary);
        assert_eq!(m("BYTES"), IcebergType::Binary);
        assert_eq!(m("TIME(3)"), IcebergType::Time);
        assert_eq!(m("TIMESTAMP(3)"), IcebergType::Timestamp);
        assert_eq!(m("TIMESTAMP_LTZ(6)"), IcebergType::Timestamptz);
    }

    #[test]
    fn single_values_follow_the_spec() {
        assert_eq!(
            single_value(&Datum::Int32(1), &IcebergType::Int).unwrap(),
            [1, 0, 0, 0]
        );
        assert_eq!(
            single_value(&Datum::Int64(-1), &IcebergType::Long).unwrap(),
            [0xff; 8]
        );
        assert_eq!(
            single_value(&Datum::Utf8("é".into()), &IcebergType::String).unwrap(),
            "é".as_bytes()
        );
        assert!(single_value(&Datum::Float64(f64::NAN), &IcebergType::Double).is_none());
        assert_eq!(decimal_bytes(0), [0]);
        assert_eq!(decimal_bytes(127), [0x7f]);
        assert_eq!(decimal_bytes(128), [0x00, 0x80]);
        assert_eq!(decimal_bytes(-1), [0xff]);
        assert_eq!(decimal_bytes(-129), [0xff, 0x7f]);
        assert_eq!(decimal_bytes(12345), [0x30, 0x39]);
    }

    #[test]
    fn truncated_bounds_still_bound() {
        let long = Datum::Utf8("abcdefghijklmnopqrstuvwxyz".into());
        assert_eq!(
            truncate_lower(&long),
            Datum::Utf8("abcdefghijklmnop".into())
        );
        assert_eq!(
            truncate_upper(&long),
            Some(Datum::Utf8("abcdefghijklmnoq".into()))
        );
        let short = Datum::Utf8("abc".into());
        assert_eq!(truncate_upper(&short), Some(short.clone()));
        assert_eq!(truncate_upper(&Datum::Binary(vec![0xff; 20])), None);
        assert_eq!(
            truncate_upper(&Datum::Binary(vec![1; 20])),
            Some(Datum::Binary([vec![1; 15], vec![2]].concat()))
        );
    }
}
