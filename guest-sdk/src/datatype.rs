//! Fluss SQL type strings (the WIT `column.data-type`), parsed once into a typed form that
//! every format maps to its own type system.

use std::fmt;

use arrow_schema::{DataType as ArrowType, TimeUnit};

use crate::error::{Error, Result};

/// A Fluss column type, without nullability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlussType {
    /// `BOOLEAN`
    Boolean,
    /// `TINYINT`
    TinyInt,
    /// `SMALLINT`
    SmallInt,
    /// `INT`
    Int,
    /// `BIGINT`
    BigInt,
    /// `FLOAT`
    Float,
    /// `DOUBLE`
    Double,
    /// `CHAR(n)`
    Char(u32),
    /// `STRING`
    String,
    /// `DECIMAL(p, s)`
    Decimal {
        /// Total digits, 1..=38.
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
    /// `DATE`
    Date,
    /// `TIME(p)`
    Time(u8),
    /// `TIMESTAMP(p)` (without time zone)
    Timestamp(u8),
    /// `TIMESTAMP_LTZ(p)` (instant, with local time zone semantics)
    TimestampLtz(u8),
    /// `BYTES`
    Bytes,
    /// `BINARY(n)`
    Binary(u32),
}

/// Splits `NAME(a, b)` into `("NAME", [a, b])`.
fn split_args(s: &str) -> Result<(&str, Vec<u32>)> {
    let bad = || Error::invalid_input(format!("cannot parse type {s:?}"));
    match s.find('(') {
        None => Ok((s.trim(), Vec::new())),
        Some(open) => {
            let close = s.rfind(')').ok_or_else(bad)?;
            if close < open || !s[close + 1..].trim().is_empty() {
                return Err(bad());
            }
            let args = s[open + 1..close]
                .split(',')
                .map(|a| a.trim().parse::<u32>().map_err(|_| bad()))
                .collect::<Result<Vec<_>>>()?;
            Ok((s[..open].trim(), args))
        }
    }
}

impl FlussType {
    /// Parses a Fluss type string such as `DECIMAL(10, 2)` or `TIMESTAMP_LTZ(3)`. A trailing
    /// ` NOT NULL` is tolerated (and ignored: nullability travels separately).
    pub fn parse(text: &str) -> Result<FlussType> {
        let upper = text.trim().to_ascii_uppercase();
        let mut s = upper.as_str();
        if let Some(stripped) = s.strip_suffix("NOT NULL") {
            s = stripped.trim_end();
        }
        // `TIMESTAMP(3) WITH LOCAL TIME ZONE` is the SQL-standard spelling of TIMESTAMP_LTZ(3).
        let (s, ltz_suffix) = match s.strip_suffix("WITH LOCAL TIME ZONE") {
            Some(rest) => (rest.trim_end(), true),
            None => (s, false),
        };
        let (name, args) = split_args(s)?;
        let bad = || Error::invalid_input(format!("unsupported Fluss type {text:?}"));
        let arg = |i: usize, default: u32| args.get(i).copied().unwrap_or(default);
        let precision = |max: u32, default: u32| -> Result<u8> {
            let p = arg(0, default);
            if p > max || args.len() > 1 {
                return Err(bad());
            }
            Ok(p as u8)
        };
        let t = match (name, ltz_suffix) {
            ("BOOLEAN", false) => FlussType::Boolean,
            ("TINYINT", false) => FlussType::TinyInt,
            ("SMALLINT", false) => FlussType::SmallInt,
            ("INT" | "INTEGER", false) => FlussType::Int,
            ("BIGINT", false) => FlussType::BigInt,
            ("FLOAT", false) => FlussType::Float,
            ("DOUBLE", false) => FlussType::Double,
            ("CHAR", false) => FlussType::Char(arg(0, 1)),
            ("STRING", false) => FlussType::String,
            ("DECIMAL" | "NUMERIC", false) => {
                let (p, sc) = (arg(0, 10), arg(1, 0));
                if p == 0 || p > 38 || sc > p || args.len() > 2 {
                    return Err(bad());
                }
                FlussType::Decimal {
                    precision: p as u8,
                    scale: sc as u8,
                }
            }
            ("DATE", false) => FlussType::Date,
            ("TIME", false) => FlussType::Time(precision(9, 0)?),
            ("TIMESTAMP", false) => FlussType::Timestamp(precision(9, 6)?),
            ("TIMESTAMP_LTZ", false) | ("TIMESTAMP", true) => {
                FlussType::TimestampLtz(precision(9, 6)?)
            }
            ("BYTES", false) => FlussType::Bytes,
            ("BINARY", false) => FlussType::Binary(arg(0, 1)),
            _ => return Err(bad()),
        };
        Ok(t)
    }

    /// The Arrow type fluss-rs 1.0.0 (`to_arrow_type`) uses for this type in row batches.
    pub fn arrow_type(&self) -> ArrowType {
        let ts_unit = |p: u8| match p {
            0 => TimeUnit::Second,
            1..=3 => TimeUnit::Millisecond,
            4..=6 => TimeUnit::Microsecond,
            _ => TimeUnit::Nanosecond,
        };
        match *self {
            FlussType::Boolean => ArrowType::Boolean,
            FlussType::TinyInt => ArrowType::Int8,
            FlussType::SmallInt => ArrowType::Int16,
            FlussType::Int => ArrowType::Int32,
            FlussType::BigInt => ArrowType::Int64,
            FlussType::Float => ArrowType::Float32,
            FlussType::Double => ArrowType::Float64,
            FlussType::Char(_) | FlussType::String => ArrowType::Utf8,
            FlussType::Decimal { precision, scale } => {
                ArrowType::Decimal128(precision, scale as i8)
            }
            FlussType::Date => ArrowType::Date32,
            FlussType::Time(p) => match ts_unit(p) {
                u @ (TimeUnit::Second | TimeUnit::Millisecond) => ArrowType::Time32(u),
                u => ArrowType::Time64(u),
            },
            FlussType::Timestamp(p) => ArrowType::Timestamp(ts_unit(p), None),
            FlussType::TimestampLtz(p) => ArrowType::Timestamp(ts_unit(p), Some("UTC".into())),
            FlussType::Bytes => ArrowType::Binary,
            FlussType::Binary(n) => ArrowType::FixedSizeBinary(n as i32),
        }
    }
}

/// Days since the epoch → `(year, month, day)` in the proleptic Gregorian calendar, for
/// formats that render DATE / TIMESTAMP values as text (partition values, statistics).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl fmt::Display for FlussType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlussType::Boolean => write!(f, "BOOLEAN"),
            FlussType::TinyInt => write!(f, "TINYINT"),
            FlussType::SmallInt => write!(f, "SMALLINT"),
            FlussType::Int => write!(f, "INT"),
            FlussType::BigInt => write!(f, "BIGINT"),
            FlussType::Float => write!(f, "FLOAT"),
            FlussType::Double => write!(f, "DOUBLE"),
            FlussType::Char(n) => write!(f, "CHAR({n})"),
            FlussType::String => write!(f, "STRING"),
            FlussType::Decimal { precision, scale } => write!(f, "DECIMAL({precision}, {scale})"),
            FlussType::Date => write!(f, "DATE"),
            FlussType::Time(p) => write!(f, "TIME({p})"),
            FlussType::Timestamp(p) => write!(f, "TIMESTAMP({p})"),
            FlussType::TimestampLtz(p) => write!(f, "TIMESTAMP_LTZ({p})"),
            FlussType::Bytes => write!(f, "BYTES"),
            FlussType::Binary(n) => write!(f, "BINARY({n})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_documented_type() {
        let cases = [
            ("INT", FlussType::Int),
            ("BIGINT", FlussType::BigInt),
            ("STRING", FlussType::String),
            ("CHAR(3)", FlussType::Char(3)),
            (
                "DECIMAL(10, 2)",
                FlussType::Decimal {
                    precision: 10,
                    scale: 2,
                },
            ),
            ("DATE", FlussType::Date),
            ("TIME(0)", FlussType::Time(0)),
            ("TIMESTAMP(6)", FlussType::Timestamp(6)),
            ("TIMESTAMP_LTZ(3)", FlussType::TimestampLtz(3)),
            (
                "TIMESTAMP(3) WITH LOCAL TIME ZONE",
                FlussType::TimestampLtz(3),
            ),
            ("BYTES", FlussType::Bytes),
            ("BINARY(16)", FlussType::Binary(16)),
            ("BOOLEAN", FlussType::Boolean),
            ("FLOAT", FlussType::Float),
            ("DOUBLE", FlussType::Double),
            ("TINYINT", FlussType::TinyInt),
            ("SMALLINT", FlussType::SmallInt),
            ("bigint not null", FlussType::BigInt),
        ];
        for (s, t) in cases {
            assert_eq!(FlussType::parse(s).unwrap(), t, "{s}");
            assert_eq!(FlussType::parse(&t.to_string()).unwrap(), t);
        }
        for bad in [
            "MAP<INT, INT>",
            "DECIMAL(40, 2)",
            "TIMESTAMP(12)",
            "INT(",
            "VARCHAR",
        ] {
            assert!(FlussType::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn arrow_types_follow_fluss_rs() {
        assert_eq!(
            FlussType::Timestamp(0).arrow_type(),
            ArrowType::Timestamp(TimeUnit::Second, None)
        );
        assert_eq!(
            FlussType::TimestampLtz(3).arrow_type(),
            ArrowType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
        );
        assert_eq!(
            FlussType::Time(0).arrow_type(),
            ArrowType::Time32(TimeUnit::Second)
        );
        assert_eq!(
            FlussType::Time(6).arrow_type(),
            ArrowType::Time64(TimeUnit::Microsecond)
        );
        assert_eq!(
            FlussType::Binary(4).arrow_type(),
            ArrowType::FixedSizeBinary(4)
        );
    }
}
