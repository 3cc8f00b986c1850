//! Paimon data types: parsing and printing the SQL strings Paimon keeps in `schema-N`, the
//! mapping from Fluss types (Fluss `FlussDataTypeToPaimonDataType`), and the Arrow types that
//! produce Paimon's Parquet conventions (Paimon `ParquetSchemaConverter`).

use std::collections::HashMap;

use arrow_schema::{DataType as ArrowType, TimeUnit};
use fluss_lake_guest_sdk::datatype::FlussType;
use fluss_lake_guest_sdk::stats::Datum;
use fluss_lake_guest_sdk::{Error, Result};

use crate::binary_row::Value;

/// `VarCharType.MAX_LENGTH` / `VarBinaryType.MAX_LENGTH`: printed as `STRING` / `BYTES`.
pub const MAX_LENGTH: u32 = i32::MAX as u32;

/// The atomic Paimon types this plugin reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
}

/// A Paimon type with its nullability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    pub fn with_nullable(self, nullable: bool) -> Self {
        PaimonType { nullable, ..self }
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
        let base = match self.root {
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

    /// The Arrow type whose Parquet encoding (arrow-rs) matches what Paimon writes for this
    /// type: TIME as INT32 millis, TIMESTAMP(p<=3) millis, p<=6 micros, decimals by
    /// precision (INT32/INT64/FIXED), LTZ adjusted to UTC. TIMESTAMP(p>6) is written as INT64
    /// nanos (Paimon writes INT96, which arrow-rs cannot write).
    pub fn arrow_file_type(&self) -> ArrowType {
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

    /// Same type ignoring nullability and string/binary lengths Fluss does not carry.
    pub fn same_type(&self, other: &PaimonType) -> bool {
        self.root == other.root
    }
}

/// Converts a statistics value of a written file column into Paimon's internal value.
pub fn datum_to_value(d: &Datum, ty: &PaimonType) -> Option<Value> {
    Some(match (d, ty.root) {
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
    Ok(match (v, ty.root) {
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
