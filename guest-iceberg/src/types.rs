//! Iceberg primitive types: their JSON names, the mapping from Fluss types that Fluss's Java
//! `FlussDataTypeToIcebergDataType` uses, the Arrow type whose Parquet encoding is Iceberg's,
//! and Iceberg's single-value binary serialization (file bounds, partition summaries).

use arrow_schema::{DataType, TimeUnit};
use fluss_lake_guest_sdk::datatype::FlussType;
use fluss_lake_guest_sdk::stats::Datum;
use fluss_lake_guest_sdk::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

    /// The type's name in table metadata JSON.
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
        }
    }

    /// The Avro type of a value of this type inside a manifest (partition tuples).
    pub fn avro_type(&self) -> serde_json::Value {
        use serde_json::json;
        match *self {
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
        }
    }
}

/// Iceberg's single-value serialization of a statistics value of a column of type `ty`, as
/// computed on the file's Arrow column (so already in Iceberg's units). `None` for values
/// that must not be used as bounds (NaN).
pub fn single_value(d: &Datum, ty: IcebergType) -> Option<Vec<u8>> {
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
            single_value(&Datum::Int32(1), IcebergType::Int).unwrap(),
            [1, 0, 0, 0]
        );
        assert_eq!(
            single_value(&Datum::Int64(-1), IcebergType::Long).unwrap(),
            [0xff; 8]
        );
        assert_eq!(
            single_value(&Datum::Utf8("é".into()), IcebergType::String).unwrap(),
            "é".as_bytes()
        );
        assert!(single_value(&Datum::Float64(f64::NAN), IcebergType::Double).is_none());
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
