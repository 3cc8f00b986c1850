//! Fluss SQL type strings (the WIT `column.data-type`), parsed once into a typed form that
//! every format maps to its own type system: [`FlussType`] for the primitive types, and
//! [`ColumnType`] for any column type, nested ones (`ARRAY`, `MAP`, `ROW`) included.

use std::fmt;
use std::sync::Arc;

use arrow_schema::{DataType as ArrowType, Field, Fields, TimeUnit};

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
        if ["ARRAY", "MAP", "ROW"].iter().any(|n| {
            s.strip_prefix(n)
                .is_some_and(|r| r.trim_start().starts_with('<'))
        }) {
            return Err(Error::unsupported(format!(
                "{} is a nested type, which this plugin does not write",
                text.trim()
            )));
        }
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

/// How deep types may nest: deeper strings are refused, not parsed with unbounded recursion.
pub const MAX_NESTING: usize = 64;

/// Any Fluss column type, without the column's own nullability (that travels in the WIT
/// `column.nullable`). The grammar of nested types is the contract's (wit `column.data-type`):
/// `ARRAY<t>`, `MAP<k, v>`, ``ROW<`name` t 'comment', ...>``, each nested type followed by
/// ` NOT NULL` when it is not nullable.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// A primitive type.
    Primitive(FlussType),
    /// `ARRAY<element>`.
    Array(Box<NestedType>),
    /// `MAP<key, value>`.
    Map {
        /// The key type (Fluss keys are `NOT NULL`, but the grammar allows either).
        key: Box<NestedType>,
        /// The value type.
        value: Box<NestedType>,
    },
    /// `ROW<fields>`.
    Row(Vec<RowField>),
}

/// A type inside another one: an array element, a map key or value, a row field's type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NestedType {
    /// The type.
    pub ty: ColumnType,
    /// False for ` NOT NULL`.
    pub nullable: bool,
}

/// One field of a `ROW` type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RowField {
    /// The field name (any text: the grammar quotes it).
    pub name: String,
    /// Its type and nullability.
    pub ty: NestedType,
    /// Its description.
    pub description: Option<String>,
}

impl ColumnType {
    /// Parses a column type string; a trailing ` NOT NULL` is tolerated and ignored, as by
    /// [`FlussType::parse`].
    pub fn parse(text: &str) -> Result<ColumnType> {
        let mut parser = TypeParser { text, pos: 0 };
        let nested = parser.nested(0)?;
        parser.skip_ws();
        if parser.pos != text.len() {
            return Err(parser.error("unexpected text after the type"));
        }
        Ok(nested.ty)
    }

    /// The Arrow type fluss-rs 1.0.0 (`to_arrow_type`) uses for this type in row batches:
    /// lists of a field named `item`, maps of `entries` with `key` and `value`, structs.
    pub fn arrow_type(&self) -> ArrowType {
        match self {
            ColumnType::Primitive(t) => t.arrow_type(),
            ColumnType::Array(e) => ArrowType::List(Arc::new(Field::new_list_field(
                e.ty.arrow_type(),
                e.nullable,
            ))),
            ColumnType::Map { key, value } => ArrowType::Map(
                Arc::new(Field::new(
                    "entries",
                    ArrowType::Struct(Fields::from(vec![
                        Field::new("key", key.ty.arrow_type(), key.nullable),
                        Field::new("value", value.ty.arrow_type(), value.nullable),
                    ])),
                    false,
                )),
                false,
            ),
            ColumnType::Row(fields) => ArrowType::Struct(Fields::from(
                fields
                    .iter()
                    .map(|f| Field::new(&f.name, f.ty.ty.arrow_type(), f.ty.nullable))
                    .collect::<Vec<_>>(),
            )),
        }
    }
}

impl fmt::Display for NestedType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ty)?;
        if !self.nullable {
            write!(f, " NOT NULL")?;
        }
        Ok(())
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnType::Primitive(t) => write!(f, "{t}"),
            ColumnType::Array(e) => write!(f, "ARRAY<{e}>"),
            ColumnType::Map { key, value } => write!(f, "MAP<{key}, {value}>"),
            ColumnType::Row(fields) => {
                write!(f, "ROW<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "`{}` {}", field.name.replace('`', "``"), field.ty)?;
                    if let Some(d) = &field.description {
                        write!(f, " '{}'", d.replace('\'', "''"))?;
                    }
                }
                write!(f, ">")
            }
        }
    }
}

/// Recursive descent over a column type string.
struct TypeParser<'a> {
    text: &'a str,
    pos: usize,
}

impl TypeParser<'_> {
    fn error(&self, what: &str) -> Error {
        Error::invalid_input(format!(
            "cannot parse type {:?}: {what} at character {}",
            self.text, self.pos
        ))
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// Consumes `c` after optional whitespace.
    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// Consumes the keyword `word` (case-insensitive) after optional whitespace, if it is
    /// followed by no identifier character.
    fn eat_keyword(&mut self, word: &str) -> bool {
        self.skip_ws();
        let rest = self.rest();
        let matches = rest.len() >= word.len()
            && rest.is_char_boundary(word.len())
            && rest[..word.len()].eq_ignore_ascii_case(word)
            && !rest[word.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if matches {
            self.pos += word.len();
        }
        matches
    }

    /// A type and its ` NOT NULL`, if any.
    fn nested(&mut self, depth: usize) -> Result<NestedType> {
        if depth > MAX_NESTING {
            return Err(self.error(&format!("types nest deeper than {MAX_NESTING} levels")));
        }
        let ty = if self.eat_keyword("ARRAY") {
            self.expect('<')?;
            let element = self.nested(depth + 1)?;
            self.expect('>')?;
            ColumnType::Array(Box::new(element))
        } else if self.eat_keyword("MAP") {
            self.expect('<')?;
            let key = self.nested(depth + 1)?;
            self.expect(',')?;
            let value = self.nested(depth + 1)?;
            self.expect('>')?;
            ColumnType::Map {
                key: Box::new(key),
                value: Box::new(value),
            }
        } else if self.eat_keyword("ROW") {
            self.expect('<')?;
            let mut fields = Vec::new();
            if !self.eat('>') {
                loop {
                    fields.push(self.row_field(depth + 1)?);
                    if self.eat('>') {
                        break;
                    }
                    self.expect(',')?;
                }
            }
            ColumnType::Row(fields)
        } else {
            return self.primitive();
        };
        let nullable = !self.not_null();
        Ok(NestedType { ty, nullable })
    }

    fn expect(&mut self, c: char) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error(&format!("expected {c:?}")))
        }
    }

    fn not_null(&mut self) -> bool {
        let start = self.pos;
        if self.eat_keyword("NOT") {
            if self.eat_keyword("NULL") {
                return true;
            }
            self.pos = start;
        }
        false
    }

    /// A primitive type: everything up to the next `,`, `>` or `'` outside parentheses.
    fn primitive(&mut self) -> Result<NestedType> {
        self.skip_ws();
        let rest = self.rest();
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' | '>' | '\'' if depth == 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let span = rest[..end].trim_end();
        if span.is_empty() {
            return Err(self.error("expected a type"));
        }
        let (span, nullable) = match span.len().checked_sub("NOT NULL".len()) {
            Some(cut)
                if span.is_char_boundary(cut)
                    && span[cut..].eq_ignore_ascii_case("NOT NULL")
                    && span[..cut].ends_with(char::is_whitespace) =>
            {
                (span[..cut].trim_end(), false)
            }
            _ => (span, true),
        };
        let ty = FlussType::parse(span)?;
        self.pos += end;
        Ok(NestedType {
            ty: ColumnType::Primitive(ty),
            nullable,
        })
    }

    /// `` `name` type 'comment' ``; a bare name (fluss-rs's `Display`) is read up to the
    /// next whitespace.
    fn row_field(&mut self, depth: usize) -> Result<RowField> {
        self.skip_ws();
        let name = if self.eat('`') {
            self.quoted('`')?
        } else {
            let rest = self.rest();
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let name = rest[..end].to_string();
            if end == 0 {
                return Err(self.error("expected a field name"));
            }
            self.pos += end;
            name
        };
        let ty = self.nested(depth)?;
        let description = if self.eat('\'') {
            Some(self.quoted('\'')?)
        } else {
            None
        };
        Ok(RowField {
            name,
            ty,
            description,
        })
    }

    /// The rest of a quoted text whose opening `quote` was consumed; a doubled quote is one.
    fn quoted(&mut self, quote: char) -> Result<String> {
        let mut out = String::new();
        let mut chars = self.rest().char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == quote {
                if chars.peek().map(|&(_, n)| n) == Some(quote) {
                    chars.next();
                    out.push(quote);
                    continue;
                }
                self.pos += i + c.len_utf8();
                return Ok(out);
            }
            out.push(c);
        }
        Err(self.error(&format!("unterminated {quote}")))
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
        let e = FlussType::parse("MAP<INT, INT>").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
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
    fn nested_types_parse_and_print_back() {
        let text = "ROW<`a b` ARRAY<INT NOT NULL> NOT NULL 'it''s', `x``y` MAP<STRING NOT NULL, \
                    DECIMAL(10, 2)>, `t` TIMESTAMP(3) WITH LOCAL TIME ZONE, `e` ROW<>>";
        let t = ColumnType::parse(text).unwrap();
        let ColumnType::Row(fields) = &t else {
            panic!("{t:?}")
        };
        assert_eq!(fields.len(), 4);
        assert_eq!(fields[0].name, "a b");
        assert_eq!(fields[0].description.as_deref(), Some("it's"));
        assert!(!fields[0].ty.nullable);
        let ColumnType::Array(e) = &fields[0].ty.ty else {
            panic!()
        };
        assert_eq!(
            **e,
            NestedType {
                ty: ColumnType::Primitive(FlussType::Int),
                nullable: false
            }
        );
        assert_eq!(fields[1].name, "x`y");
        assert_eq!(
            fields[2].ty.ty,
            ColumnType::Primitive(FlussType::TimestampLtz(3))
        );
        assert_eq!(fields[3].ty.ty, ColumnType::Row(vec![]));
        assert_eq!(ColumnType::parse(&t.to_string()).unwrap(), t);
        // fluss-rs's own spelling (bare names) reads too.
        let bare = ColumnType::parse("ROW<x INT, y STRING NOT NULL> NOT NULL").unwrap();
        assert_eq!(bare.to_string(), "ROW<`x` INT, `y` STRING NOT NULL>");
        assert_eq!(
            ColumnType::parse("DECIMAL(10, 2)").unwrap(),
            ColumnType::Primitive(FlussType::Decimal {
                precision: 10,
                scale: 2
            })
        );
        for bad in [
            "ARRAY<INT",
            "MAP<INT>",
            "ROW<`a INT>",
            "ARRAY<>",
            "ROW<a INT,>",
            "ARRAY<INT> x",
        ] {
            assert!(ColumnType::parse(bad).is_err(), "{bad}");
        }
        let deep = format!("{}INT{}", "ARRAY<".repeat(100), ">".repeat(100));
        let e = ColumnType::parse(&deep).unwrap_err().to_string();
        assert!(e.contains("nest deeper"), "{e}");
    }

    #[test]
    fn nested_arrow_types_follow_fluss_rs() {
        let t = ColumnType::parse("MAP<STRING NOT NULL, ARRAY<INT>>").unwrap();
        let ArrowType::Map(entries, false) = t.arrow_type() else {
            panic!()
        };
        let ArrowType::Struct(kv) = entries.data_type() else {
            panic!()
        };
        assert_eq!(entries.name(), "entries");
        assert_eq!((kv[0].name().as_str(), kv[0].is_nullable()), ("key", false));
        assert_eq!(kv[1].name(), "value");
        let ArrowType::List(item) = kv[1].data_type() else {
            panic!()
        };
        assert_eq!(item.name(), "item");
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
