//! Paimon data types: parsing and printing the SQL strings and JSON objects Paimon keeps in
//! `schema-N`, the mapping from Fluss types (Fluss `FlussDataTypeToPaimonDataType`, field ids as
//! Paimon's `Schema.Builder` and `ReassignFieldId` number them), and the Arrow types that
//! produce Paimon's Parquet conventions (Paimon `ParquetSchemaConverter`, `SpecialFields`).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType as ArrowType, Field, Fields, TimeUnit};
use fluss_lake_guest_sdk::arrow_util::PARQUET_FIELD_ID_KEY;
use fluss_lake_guest_sdk::datatype::{ColumnType, FlussType, MAX_NESTING};
use fluss_lake_guest_sdk::stats::Datum;
use fluss_lake_guest_sdk::{Error, Result};
use serde_json::{Map as JsonMap, Value as Json};

use crate::binary_row::Value;

/// `VarCharType.MAX_LENGTH` / `VarBinaryType.MAX_LENGTH`: printed as `STRING` / `BYTES`.
pub const MAX_LENGTH: u32 = i32::MAX as u32;

/// The Paimon types this plugin reads and writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeRoot {
    /// BOOLEAN
    Boolean,
    /// TINYINT
    TinyInt,
    /// SMALLINT
    SmallInt,
    /// INT
    Int,
    /// BIGINT
    BigInt,
    /// FLOAT
    Float,
    /// DOUBLE
    Double,
    /// CHAR(n)
    Char(u32),
    /// VARCHAR(n); STRING = VARCHAR(MAX)
    VarChar(u32),
    /// BINARY(n)
    Binary(u32),
    /// VARBINARY(n); BYTES = VARBINARY(MAX)
    VarBinary(u32),
    /// DECIMAL(p, s)
    Decimal(u8, u8),
    /// DATE
    Date,
    /// TIME(p)
    Time(u8),
    /// TIMESTAMP(p)
    Timestamp(u8),
    /// TIMESTAMP(p) WITH LOCAL TIME ZONE
    TimestampLtz(u8),
    /// ARRAY<element>
    Array(Box<PaimonType>),
    /// MAP<key, value>
    Map(Box<PaimonType>, Box<PaimonType>),
    /// ROW<fields>: each field with its own field id.
    Row(Vec<PaimonField>),
}

/// A field of a Paimon `ROW` type, as schema JSON holds it (top-level columns have the same
/// shape: [`crate::schema::SchemaField`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PaimonField {
    /// The field id.
    pub id: i32,
    /// The field name.
    pub name: String,
    /// Its type.
    pub ty: PaimonType,
    /// Its description.
    pub description: Option<String>,
}

/// `SpecialFields`' base of the field ids of array elements and map keys and values
/// (`Integer.MAX_VALUE / 4`): Parquet needs an id on them, and Paimon derives it from the
/// collection's own id and depth.
const COLLECTION_ID_BASE: i64 = i32::MAX as i64 / 4;
/// `SpecialFields.DEPTH_LIMIT`.
const COLLECTION_DEPTH_LIMIT: i64 = 1024;

/// A Paimon type with its nullability.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PaimonType {
    /// The type.
    pub root: TypeRoot,
    /// False for `NOT NULL`.
    pub nullable: bool,
}

impl PaimonType {
    /// A nullable type.
    pub fn nullable(root: TypeRoot) -> Self {
        PaimonType {
            root,
            nullable: true,
        }
    }

    /// Same type with another nullability.
    pub fn with_nullable(&self, nullable: bool) -> Self {
        PaimonType {
            nullable,
            root: self.root.clone(),
        }
    }

    /// True for `ARRAY`, `MAP` and `ROW`.
    pub fn is_nested(&self) -> bool {
        matches!(
            self.root,
            TypeRoot::Array(_) | TypeRoot::Map(..) | TypeRoot::Row(_)
        )
    }

    /// Parses a type of schema JSON: a string (atomic types, [`PaimonType::parse`]) or an
    /// object (`{"type": "ARRAY", "element": ..}`, `MAP` with `key` and `value`, `ROW` with
    /// `fields`, each type name followed by ` NOT NULL` when it is not nullable).
    pub fn from_json(json: &Json) -> Result<PaimonType> {
        Self::from_json_at(json, 0)
    }

    fn from_json_at(json: &Json, depth: usize) -> Result<PaimonType> {
        let bad = |what: &str| Error::corrupt(format!("Paimon type {json}: {what}"));
        if depth > MAX_NESTING {
            return Err(bad(&format!("nested deeper than {MAX_NESTING} levels")));
        }
        let object = match json {
            Json::String(s) => return PaimonType::parse(s),
            Json::Object(o) => o,
            _ => return Err(bad("neither a string nor an object")),
        };
        let name = object
            .get("type")
            .and_then(Json::as_str)
            .ok_or_else(|| bad("no type name"))?;
        let upper = name.trim().to_ascii_uppercase();
        let (kind, nullable) = match upper.strip_suffix("NOT NULL") {
            Some(rest) => (rest.trim_end(), false),
            None => (upper.as_str(), true),
        };
        let child = |key: &str| -> Result<Box<PaimonType>> {
            let j = object.get(key).ok_or_else(|| bad(&format!("no {key}")))?;
            Ok(Box::new(Self::from_json_at(j, depth + 1)?))
        };
        let root = match kind {
            "ARRAY" => TypeRoot::Array(child("element")?),
            "MAP" => TypeRoot::Map(child("key")?, child("value")?),
            "ROW" => TypeRoot::Row(
                object
                    .get("fields")
                    .and_then(Json::as_array)
                    .ok_or_else(|| bad("no fields"))?
                    .iter()
                    .map(|f| PaimonField::from_json(f, depth + 1))
                    .collect::<Result<_>>()?,
            ),
            _ => {
                return Err(Error::unsupported(format!(
                    "the Paimon type {name} is not written by this plugin"
                )));
            }
        };
        Ok(PaimonType { root, nullable })
    }

    /// The type as schema JSON holds it (see [`PaimonType::from_json`]).
    pub fn to_json(&self) -> Json {
        let name = |n: &str| {
            Json::String(if self.nullable {
                n.to_string()
            } else {
                format!("{n} NOT NULL")
            })
        };
        let mut o = JsonMap::new();
        match &self.root {
            TypeRoot::Array(e) => {
                o.insert("type".into(), name("ARRAY"));
                o.insert("element".into(), e.to_json());
            }
            TypeRoot::Map(k, v) => {
                o.insert("type".into(), name("MAP"));
                o.insert("key".into(), k.to_json());
                o.insert("value".into(), v.to_json());
            }
            TypeRoot::Row(fields) => {
                o.insert("type".into(), name("ROW"));
                o.insert(
                    "fields".into(),
                    Json::Array(fields.iter().map(PaimonField::to_json).collect()),
                );
            }
            _ => return Json::String(self.sql()),
        }
        Json::Object(o)
    }

    /// Parses Paimon's SQL spelling, e.g. `BIGINT NOT NULL`, `DECIMAL(10, 2)`,
    /// `TIMESTAMP(3) WITH LOCAL TIME ZONE`, `STRING`, `VARCHAR(20)`.
    pub fn parse(text: &str) -> Result<PaimonType> {
        let upper = text.trim().to_ascii_uppercase();
        let bad = || Error::unsupported(format!("unsupported Paimon type {text:?}"));
        let (mut s, nullable) = match upper.strip_suffix("NOT NULL") {
            Some(rest) => (rest.trim_end().to_string(), false),
            None => (upper.clone(), true),
        };
        let ltz = match s.strip_suffix("WITH LOCAL TIME ZONE") {
            Some(rest) => {
                s = rest.trim_end().to_string();
                true
            }
            None => false,
        };
        let (name, args) = match s.find('(') {
            None => (s.trim().to_string(), Vec::new()),
            Some(open) => {
                let close = s.rfind(')').ok_or_else(bad)?;
                let args = s[open + 1..close]
                    .split(',')
                    .map(|a| a.trim().parse::<u32>().map_err(|_| bad()))
                    .collect::<Result<Vec<_>>>()?;
                (s[..open].trim().to_string(), args)
            }
        };
        let a = |i: usize, d: u32| args.get(i).copied().unwrap_or(d);
        let root = match (name.as_str(), ltz) {
            ("BOOLEAN", false) => TypeRoot::Boolean,
            ("TINYINT", false) => TypeRoot::TinyInt,
            ("SMALLINT", false) => TypeRoot::SmallInt,
            ("INT" | "INTEGER", false) => TypeRoot::Int,
            ("BIGINT", false) => TypeRoot::BigInt,
            ("FLOAT", false) => TypeRoot::Float,
            ("DOUBLE", false) => TypeRoot::Double,
            ("CHAR", false) => TypeRoot::Char(a(0, 1)),
            ("VARCHAR", false) => TypeRoot::VarChar(a(0, 1)),
            ("STRING", false) => TypeRoot::VarChar(MAX_LENGTH),
            ("BINARY", false) => TypeRoot::Binary(a(0, 1)),
            ("VARBINARY", false) => TypeRoot::VarBinary(a(0, 1)),
            ("BYTES", false) => TypeRoot::VarBinary(MAX_LENGTH),
            ("DECIMAL" | "NUMERIC" | "DEC", false) => {
                let (p, sc) = (a(0, 10), a(1, 0));
                if p == 0 || p > 38 || sc > p {
                    return Err(bad());
                }
                TypeRoot::Decimal(p as u8, sc as u8)
            }
            ("DATE", false) => TypeRoot::Date,
            ("TIME", false) => TypeRoot::Time(a(0, 0).min(9) as u8),
            ("TIMESTAMP", false) => TypeRoot::Timestamp(a(0, 6).min(9) as u8),
            ("TIMESTAMP", true) | ("TIMESTAMP_LTZ", false) => {
                TypeRoot::TimestampLtz(a(0, 6).min(9) as u8)
            }
            _ => return Err(bad()),
        };
        Ok(PaimonType { root, nullable })
    }

    /// Paimon's `asSQLString()`.
    pub fn sql(&self) -> String {
        let base = match &self.root {
            TypeRoot::Boolean => "BOOLEAN".to_string(),
            TypeRoot::TinyInt => "TINYINT".to_string(),
            TypeRoot::SmallInt => "SMALLINT".to_string(),
            TypeRoot::Int => "INT".to_string(),
            TypeRoot::BigInt => "BIGINT".to_string(),
            TypeRoot::Float => "FLOAT".to_string(),
            TypeRoot::Double => "DOUBLE".to_string(),
            TypeRoot::Char(n) => format!("CHAR({n})"),
            TypeRoot::VarChar(MAX_LENGTH) => "STRING".to_string(),
            TypeRoot::VarChar(n) => format!("VARCHAR({n})"),
            TypeRoot::Binary(n) => format!("BINARY({n})"),
            TypeRoot::VarBinary(MAX_LENGTH) => "BYTES".to_string(),
            TypeRoot::VarBinary(n) => format!("VARBINARY({n})"),
            TypeRoot::Decimal(p, s) => format!("DECIMAL({p}, {s})"),
            TypeRoot::Date => "DATE".to_string(),
            TypeRoot::Time(p) => format!("TIME({p})"),
            TypeRoot::Timestamp(p) => format!("TIMESTAMP({p})"),
            TypeRoot::TimestampLtz(p) => format!("TIMESTAMP({p}) WITH LOCAL TIME ZONE"),
            TypeRoot::Array(e) => format!("ARRAY<{}>", e.sql()),
            TypeRoot::Map(k, v) => format!("MAP<{}, {}>", k.sql(), v.sql()),
            TypeRoot::Row(fields) => format!(
                "ROW<{}>",
                fields
                    .iter()
                    .map(|f| format!("`{}` {}", f.name, f.ty.sql()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        if self.nullable {
            base
        } else {
            format!("{base} NOT NULL")
        }
    }

    /// The Paimon type Fluss's Paimon catalog creates for a Fluss column type.
    pub fn from_fluss(t: FlussType, nullable: bool) -> PaimonType {
        let root = match t {
            FlussType::Boolean => TypeRoot::Boolean,
            FlussType::TinyInt => TypeRoot::TinyInt,
            FlussType::SmallInt => TypeRoot::SmallInt,
            FlussType::Int => TypeRoot::Int,
            FlussType::BigInt => TypeRoot::BigInt,
            FlussType::Float => TypeRoot::Float,
            FlussType::Double => TypeRoot::Double,
            FlussType::Char(n) => TypeRoot::Char(n),
            FlussType::String => TypeRoot::VarChar(MAX_LENGTH),
            FlussType::Decimal { precision, scale } => TypeRoot::Decimal(precision, scale),
            FlussType::Date => TypeRoot::Date,
            FlussType::Time(p) => TypeRoot::Time(p),
            FlussType::Timestamp(p) => TypeRoot::Timestamp(p),
            FlussType::TimestampLtz(p) => TypeRoot::TimestampLtz(p),
            FlussType::Bytes => TypeRoot::VarBinary(MAX_LENGTH),
            FlussType::Binary(n) => TypeRoot::Binary(n),
        };
        PaimonType { root, nullable }
    }

    /// The Paimon type Fluss's Paimon catalog creates for any Fluss column type: nullability
    /// kept at every level, map keys `NOT NULL` (Fluss's `MapType`), and the fields of every
    /// `ROW` numbered from `next_id` as Paimon's `ReassignFieldId` numbers them: each field
    /// after the fields inside it (the caller numbers the column itself first).
    pub fn from_column_type(t: &ColumnType, nullable: bool, next_id: &mut i32) -> PaimonType {
        let root = match t {
            ColumnType::Primitive(p) => return PaimonType::from_fluss(*p, nullable),
            ColumnType::Array(e) => {
                TypeRoot::Array(Box::new(Self::from_column_type(&e.ty, e.nullable, next_id)))
            }
            ColumnType::Map { key, value } => TypeRoot::Map(
                Box::new(Self::from_column_type(&key.ty, false, next_id)),
                Box::new(Self::from_column_type(&value.ty, value.nullable, next_id)),
            ),
            ColumnType::Row(fields) => TypeRoot::Row(
                fields
                    .iter()
                    .map(|f| {
                        let ty = Self::from_column_type(&f.ty.ty, f.ty.nullable, next_id);
                        *next_id += 1;
                        PaimonField {
                            id: *next_id,
                            name: f.name.clone(),
                            ty,
                            description: f.description.clone(),
                        }
                    })
                    .collect(),
            ),
        };
        PaimonType { root, nullable }
    }

    /// The Arrow field of a column (or `ROW` field) `name` of this type with field id `id`,
    /// as Paimon's `ParquetSchemaConverter` shapes it: arrays as Parquet lists of `element`,
    /// maps of `key_value` with a required `key` and a `value`, rows as groups of their
    /// fields; elements, keys and values carry the ids `SpecialFields` derives from the
    /// collection's id and depth.
    pub fn arrow_field(&self, name: &str, id: i32) -> Field {
        self.arrow_field_at(name, id as i64, id, 0)
    }

    /// `field_id` is the Parquet id of this field; `collection_id` and `depth` those its
    /// elements, keys and values are derived from.
    fn arrow_field_at(&self, name: &str, field_id: i64, collection_id: i32, depth: i64) -> Field {
        let base = COLLECTION_ID_BASE;
        let step = collection_id as i64 * COLLECTION_DEPTH_LIMIT + depth + 1;
        let data_type = match &self.root {
            TypeRoot::Array(e) => ArrowType::List(Arc::new(e.arrow_field_at(
                "element",
                base + step,
                collection_id,
                depth + 1,
            ))),
            TypeRoot::Map(k, v) => {
                let key = k.with_nullable(false).arrow_field_at(
                    "key",
                    base - step,
                    collection_id,
                    depth + 1,
                );
                let value = v.arrow_field_at("value", base + step, collection_id, depth + 1);
                ArrowType::Map(
                    Arc::new(Field::new(
                        "key_value",
                        ArrowType::Struct(Fields::from(vec![key, value])),
                        false,
                    )),
                    false,
                )
            }
            TypeRoot::Row(fields) => ArrowType::Struct(Fields::from(
                fields
                    .iter()
                    .map(|f| f.ty.arrow_field_at(&f.name, f.id as i64, f.id, 0))
                    .collect::<Vec<_>>(),
            )),
            _ => self.arrow_file_type(),
        };
        let mut metadata = self.arrow_field_metadata();
        metadata.insert(PARQUET_FIELD_ID_KEY.to_string(), field_id.to_string());
        Field::new(name, data_type, self.nullable).with_metadata(metadata)
    }

    /// The Arrow type whose Parquet encoding (arrow-rs) matches what Paimon writes for this
    /// atomic type (nested ones: [`PaimonType::arrow_field`]): TIME as INT32 millis,
    /// TIMESTAMP(p<=3) millis, p<=6 micros, decimals by precision (INT32/INT64/FIXED), LTZ
    /// adjusted to UTC. TIMESTAMP(p>6) is written as INT64
    /// nanos (Paimon writes INT96, which arrow-rs cannot write).
    fn arrow_file_type(&self) -> ArrowType {
        let unit = |p: u8| match p {
            0..=3 => TimeUnit::Millisecond,
            4..=6 => TimeUnit::Microsecond,
            _ => TimeUnit::Nanosecond,
        };
        match self.root {
            TypeRoot::Boolean => ArrowType::Boolean,
            TypeRoot::TinyInt => ArrowType::Int8,
            TypeRoot::SmallInt => ArrowType::Int16,
            TypeRoot::Int => ArrowType::Int32,
            TypeRoot::BigInt => ArrowType::Int64,
            TypeRoot::Float => ArrowType::Float32,
            TypeRoot::Double => ArrowType::Float64,
            TypeRoot::Char(_) | TypeRoot::VarChar(_) => ArrowType::Utf8,
            TypeRoot::Binary(_) | TypeRoot::VarBinary(_) => ArrowType::Binary,
            TypeRoot::Decimal(p, s) => ArrowType::Decimal128(p, s as i8),
            TypeRoot::Date => ArrowType::Date32,
            TypeRoot::Time(_) => ArrowType::Time32(TimeUnit::Millisecond),
            TypeRoot::Timestamp(p) => ArrowType::Timestamp(unit(p), None),
            TypeRoot::TimestampLtz(p) => ArrowType::Timestamp(unit(p), Some("UTC".into())),
            TypeRoot::Array(_) | TypeRoot::Map(..) | TypeRoot::Row(_) => {
                unreachable!("arrow_field_at handles nested types")
            }
        }
    }

    /// Extra Arrow field metadata arrow-rs needs to reproduce Paimon's Parquet annotations.
    pub fn arrow_field_metadata(&self) -> HashMap<String, String> {
        match self.root {
            // Paimon annotates TIME as TIME(MILLIS, isAdjustedToUTC = true).
            TypeRoot::Time(_) => HashMap::from([("adjusted_to_utc".to_string(), String::new())]),
            _ => HashMap::new(),
        }
    }

    /// True when values of this type (a Fluss column's) can be written as `other` (the lake
    /// column's): the same type, whatever the top-level nullability (the caller checks it)
    /// and field ids; inside nested types, the same field names in the same order, and nothing
    /// `NOT NULL` in `other` that is nullable here.
    pub fn same_type(&self, other: &PaimonType) -> bool {
        let inner = |a: &PaimonType, b: &PaimonType| a.same_type(b) && (b.nullable || !a.nullable);
        match (&self.root, &other.root) {
            (TypeRoot::Array(a), TypeRoot::Array(b)) => inner(a, b),
            (TypeRoot::Map(ka, va), TypeRoot::Map(kb, vb)) => ka.same_type(kb) && inner(va, vb),
            (TypeRoot::Row(a), TypeRoot::Row(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(x, y)| x.name == y.name && inner(&x.ty, &y.ty))
            }
            (a, b) => a == b,
        }
    }
}

impl PaimonField {
    fn from_json(json: &Json, depth: usize) -> Result<PaimonField> {
        let bad = |what: &str| Error::corrupt(format!("Paimon field {json}: {what}"));
        let id = json
            .get("id")
            .and_then(Json::as_i64)
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| bad("no id"))?;
        let name = json
            .get("name")
            .and_then(Json::as_str)
            .ok_or_else(|| bad("no name"))?
            .to_string();
        let ty = PaimonType::from_json_at(json.get("type").ok_or_else(|| bad("no type"))?, depth)?;
        let description = json
            .get("description")
            .and_then(Json::as_str)
            .map(str::to_string);
        Ok(PaimonField {
            id,
            name,
            ty,
            description,
        })
    }

    fn to_json(&self) -> Json {
        let mut o = JsonMap::new();
        o.insert("id".into(), self.id.into());
        o.insert("name".into(), self.name.clone().into());
        o.insert("type".into(), self.ty.to_json());
        if let Some(d) = &self.description {
            o.insert("description".into(), d.clone().into());
        }
        Json::Object(o)
    }
}

/// Converts a statistics value of a written file column into Paimon's internal value.
pub fn datum_to_value(d: &Datum, ty: &PaimonType) -> Option<Value> {
    Some(match (d, &ty.root) {
        (Datum::Boolean(b), _) => Value::Boolean(*b),
        (Datum::Int8(v), _) => Value::TinyInt(*v),
        (Datum::Int16(v), _) => Value::SmallInt(*v),
        (Datum::Int32(v), _) => Value::Int(*v),
        (Datum::Int64(v), _) => Value::BigInt(*v),
        (Datum::Float32(v), _) => Value::Float(*v),
        (Datum::Float64(v), _) => Value::Double(*v),
        (Datum::Utf8(s), _) => Value::String(s.clone()),
        (Datum::Binary(b), _) => Value::Binary(b.clone()),
        (Datum::Decimal(u), _) => Value::Decimal(*u),
        (Datum::Date32(v), _) => Value::Int(*v),
        (Datum::Time(v, unit), _) => Value::Int(match unit {
            TimeUnit::Second => *v * 1000,
            TimeUnit::Millisecond => *v,
            TimeUnit::Microsecond => *v / 1000,
            TimeUnit::Nanosecond => *v / 1_000_000,
        } as i32),
        (Datum::Timestamp(v, unit), _) => {
            let (millis, nanos) = match unit {
                TimeUnit::Second => (*v * 1000, 0),
                TimeUnit::Millisecond => (*v, 0),
                TimeUnit::Microsecond => (v.div_euclid(1000), v.rem_euclid(1000) * 1000),
                TimeUnit::Nanosecond => (v.div_euclid(1_000_000), v.rem_euclid(1_000_000)),
            };
            Value::Timestamp {
                millis,
                nanos_of_milli: nanos as i32,
            }
        }
    })
}

/// Days since epoch → `(year, month, day)` (proleptic Gregorian).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `(year, month, day)` → days since epoch.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses one Fluss partition value (a component of the `$`-joined partition name) into the
/// Paimon value of the partition column (Paimon `castFromString` for the supported types).
pub fn parse_partition_value(text: &str, ty: &PaimonType) -> Result<Value> {
    let bad = || Error::invalid_input(format!("partition value {text:?} is not a {}", ty.sql()));
    Ok(match ty.root {
        TypeRoot::Char(_) | TypeRoot::VarChar(_) => Value::String(text.to_string()),
        TypeRoot::Boolean => Value::Boolean(match text.to_ascii_lowercase().as_str() {
            "true" => true,
            "false" => false,
            _ => return Err(bad()),
        }),
        TypeRoot::TinyInt => Value::TinyInt(text.parse().map_err(|_| bad())?),
        TypeRoot::SmallInt => Value::SmallInt(text.parse().map_err(|_| bad())?),
        TypeRoot::Int => Value::Int(text.parse().map_err(|_| bad())?),
        TypeRoot::BigInt => Value::BigInt(text.parse().map_err(|_| bad())?),
        TypeRoot::Date => {
            let parts: Vec<&str> = text.split('-').collect();
            let [y, m, d] = parts.as_slice() else {
                return Err(bad());
            };
            let (y, m, d): (i64, u32, u32) = (
                y.parse().map_err(|_| bad())?,
                m.parse().map_err(|_| bad())?,
                d.parse().map_err(|_| bad())?,
            );
            if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
                return Err(bad());
            }
            Value::Int(days_from_civil(y, m, d) as i32)
        }
        _ => {
            return Err(Error::unsupported(format!(
                "partition columns of type {} are not supported by this plugin",
                ty.sql()
            )));
        }
    })
}

/// Renders a partition value as Paimon does with `partition.legacy-name = false` (a cast
/// to STRING), before path escaping.
pub fn format_partition_value(v: &Value, ty: &PaimonType) -> Result<String> {
    Ok(match (v, &ty.root) {
        (Value::String(s), _) => s.clone(),
        (Value::Boolean(b), _) => b.to_string(),
        (Value::TinyInt(x), _) => x.to_string(),
        (Value::SmallInt(x), _) => x.to_string(),
        (Value::BigInt(x), _) => x.to_string(),
        (Value::Int(x), TypeRoot::Date) => {
            let (y, m, d) = civil_from_days(*x as i64);
            format!("{y:04}-{m:02}-{d:02}")
        }
        (Value::Int(x), TypeRoot::Int) => x.to_string(),
        _ => {
            return Err(Error::unsupported(format!(
                "partition columns of type {} are not supported by this plugin",
                ty.sql()
            )));
        }
    })
}

/// Escapes a partition path component like Paimon's `PartitionPathUtils.escapePathName`.
pub fn escape_path_name(s: &str) -> String {
    const EXTRA: &[char] = &[
        '"', '#', '%', '\'', '*', '/', ':', '=', '?', '\\', '\u{7f}', '{', '}', '[', ']', '^',
    ];
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if (c as u32) < 0x20 || EXTRA.contains(&c) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_round_trip() {
        for s in [
            "INT",
            "BIGINT NOT NULL",
            "STRING",
            "VARCHAR(20)",
            "CHAR(3)",
            "BYTES",
            "BINARY(16)",
            "DECIMAL(10, 2)",
            "DATE",
            "TIME(0)",
            "TIMESTAMP(6)",
            "TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL",
            "BOOLEAN",
            "FLOAT",
            "DOUBLE",
            "TINYINT",
            "SMALLINT",
        ] {
            assert_eq!(PaimonType::parse(s).unwrap().sql(), s);
        }
        assert!(PaimonType::parse("ARRAY<INT>").is_err());
        assert_eq!(
            PaimonType::from_fluss(FlussType::parse("TIMESTAMP_LTZ(3)").unwrap(), true).sql(),
            "TIMESTAMP(3) WITH LOCAL TIME ZONE"
        );
        assert_eq!(
            PaimonType::from_fluss(FlussType::String, false).sql(),
            "STRING NOT NULL"
        );
    }

    /// The worked example of Paimon's `ReassignFieldId` and `SpecialFields`: columns
    /// `a INT, r ROW<x INT, y ROW<z STRING>>, m MAP<STRING, ROW<q INT>>, l ARRAY<ROW<w INT>>`.
    #[test]
    fn nested_types_get_paimons_field_ids_json_and_parquet_ids() {
        let columns = [
            "INT",
            "ROW<`x` INT, `y` ROW<`z` STRING>>",
            "MAP<STRING NOT NULL, ROW<`q` INT>>",
            "ARRAY<ROW<`w` INT>>",
        ];
        let mut next = -1;
        let types: Vec<(i32, PaimonType)> = columns
            .iter()
            .map(|c| {
                next += 1;
                let id = next;
                let t = ColumnType::parse(c).unwrap();
                (id, PaimonType::from_column_type(&t, true, &mut next))
            })
            .collect();
        let ids: Vec<i32> = types.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [0, 1, 5, 7]);
        assert_eq!(next, 8);
        let r = types[1].1.to_json();
        assert_eq!(
            r,
            serde_json::json!({"type": "ROW", "fields": [
                {"id": 2, "name": "x", "type": "INT"},
                {"id": 4, "name": "y", "type": {"type": "ROW", "fields": [
                    {"id": 3, "name": "z", "type": "STRING"}]}}]})
        );
        assert_eq!(PaimonType::from_json(&r).unwrap(), types[1].1);
        assert_eq!(
            types[2].1.to_json()["key"],
            serde_json::json!("STRING NOT NULL")
        );

        let id_of = |f: &Field| f.metadata()[PARQUET_FIELD_ID_KEY].parse::<i64>().unwrap();
        let m = types[2].1.arrow_field("m", 5);
        let ArrowType::Map(kv, false) = m.data_type() else {
            panic!("{m:?}")
        };
        let ArrowType::Struct(kv_fields) = kv.data_type() else {
            panic!()
        };
        assert_eq!(kv.name(), "key_value");
        assert_eq!(id_of(&kv_fields[0]), 536_865_790);
        assert!(!kv_fields[0].is_nullable());
        assert_eq!(id_of(&kv_fields[1]), 536_876_032);
        let l = types[3].1.arrow_field("l", 7);
        let ArrowType::List(element) = l.data_type() else {
            panic!()
        };
        assert_eq!(
            (element.name().as_str(), id_of(element)),
            ("element", 536_878_080)
        );
        let ArrowType::Struct(w) = element.data_type() else {
            panic!()
        };
        assert_eq!(id_of(&w[0]), 8);
        // Fluss's type written into the lake's (other ids) is the same type; a NOT NULL element
        // in the lake is not.
        let lake = PaimonType::from_json(&serde_json::json!(
            {"type": "ARRAY", "element": {"type": "ROW", "fields": [{"id": 90, "name": "w", "type": "INT"}]}}
        ))
        .unwrap();
        assert!(types[3].1.same_type(&lake));
        let strict = PaimonType::from_json(&serde_json::json!(
            {"type": "ARRAY", "element": {"type": "ROW NOT NULL", "fields": [{"id": 90, "name": "w", "type": "INT"}]}}
        ))
        .unwrap();
        assert!(!types[3].1.same_type(&strict));
    }

    #[test]
    fn dates_and_partitions() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2024, 1, 1), 19723);
        assert_eq!(civil_from_days(19723), (2024, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        let date = PaimonType::parse("DATE").unwrap();
        let v = parse_partition_value("2024-02-29", &date).unwrap();
        assert_eq!(format_partition_value(&v, &date).unwrap(), "2024-02-29");
        assert_eq!(escape_path_name("a/b=c%d e"), "a%2Fb%3Dc%25d e");
    }
}
