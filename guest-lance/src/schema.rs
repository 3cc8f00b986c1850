//! Lance schemas: `lance.file.Field` lists with Lance's logical type names, the schema Fluss's
//! Java Lance catalog creates for a Fluss table (`LanceArrowUtils`: the Fluss columns only, no
//! system columns), and the Arrow types the data files store.

use std::sync::Arc;

use arrow_schema::{DataType, Field as ArrowField, Schema as ArrowSchema, SchemaRef, TimeUnit};
use fluss_lake_guest_sdk::datatype::FlussType;
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result};

use crate::proto::lance::file as pbfile;

fn unit(u: &TimeUnit) -> &'static str {
    match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

fn parse_unit(s: &str) -> Option<TimeUnit> {
    Some(match s {
        "s" => TimeUnit::Second,
        "ms" => TimeUnit::Millisecond,
        "us" => TimeUnit::Microsecond,
        "ns" => TimeUnit::Nanosecond,
        _ => return None,
    })
}

/// Lance's logical type name of a flat Arrow type (`lance_core::datatypes::LogicalType`).
pub fn logical_type(t: &DataType) -> Result<String> {
    Ok(match t {
        DataType::Boolean => "bool".into(),
        DataType::Int8 => "int8".into(),
        DataType::Int16 => "int16".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Decimal128(p, s) => format!("decimal:128:{p}:{s}"),
        DataType::Utf8 => "string".into(),
        DataType::LargeUtf8 => "large_string".into(),
        DataType::Binary => "binary".into(),
        DataType::LargeBinary => "large_binary".into(),
        DataType::Date32 => "date32:day".into(),
        DataType::Time32(u) => format!("time32:{}", unit(u)),
        DataType::Time64(u) => format!("time64:{}", unit(u)),
        DataType::Timestamp(u, tz) => {
            format!("timestamp:{}:{}", unit(u), tz.as_deref().unwrap_or("-"))
        }
        DataType::FixedSizeBinary(n) => format!("fixed_size_binary:{n}"),
        other => {
            return Err(Error::unsupported(format!(
                "Arrow type {other} has no Lance logical type here"
            )));
        }
    })
}

/// The Arrow type of a Lance logical type name (flat types only).
pub fn arrow_type(logical: &str) -> Result<DataType> {
    let bad = || Error::unsupported(format!("Lance logical type {logical:?} is not supported"));
    let parts: Vec<&str> = logical.split(':').collect();
    Ok(match parts.as_slice() {
        ["bool"] => DataType::Boolean,
        ["int8"] => DataType::Int8,
        ["int16"] => DataType::Int16,
        ["int32"] => DataType::Int32,
        ["int64"] => DataType::Int64,
        ["float"] => DataType::Float32,
        ["double"] => DataType::Float64,
        ["string"] => DataType::Utf8,
        ["large_string"] => DataType::LargeUtf8,
        ["binary"] => DataType::Binary,
        ["large_binary"] => DataType::LargeBinary,
        ["date32", "day"] => DataType::Date32,
        ["decimal", "128", p, s] => {
            DataType::Decimal128(p.parse().map_err(|_| bad())?, s.parse().map_err(|_| bad())?)
        }
        ["time32", u] => DataType::Time32(parse_unit(u).ok_or_else(bad)?),
        ["time64", u] => DataType::Time64(parse_unit(u).ok_or_else(bad)?),
        ["timestamp", u, tz @ ..] => {
            // the zone may itself contain ':' (e.g. "+08:00")
            let tz = tz.join(":");
            DataType::Timestamp(
                parse_unit(u).ok_or_else(bad)?,
                (tz != "-").then(|| tz.into()),
            )
        }
        ["fixed_size_binary", n] => DataType::FixedSizeBinary(n.parse().map_err(|_| bad())?),
        _ => return Err(bad()),
    })
}

/// The Arrow type Fluss's Java Lance plugin gives a Fluss column type (`LanceArrowUtils`):
/// both TIMESTAMP and TIMESTAMP_LTZ become zone-less timestamps of the column's precision.
pub fn arrow_type_for_fluss(t: FlussType) -> DataType {
    let ts_unit = |p: u8| match p {
        0 => TimeUnit::Second,
        1..=3 => TimeUnit::Millisecond,
        4..=6 => TimeUnit::Microsecond,
        _ => TimeUnit::Nanosecond,
    };
    match t {
        FlussType::Timestamp(p) | FlussType::TimestampLtz(p) => {
            DataType::Timestamp(ts_unit(p), None)
        }
        other => other.arrow_type(),
    }
}

/// The top-level (flat) fields of a Lance schema, in column order.
pub fn check_flat(fields: &[pbfile::Field]) -> Result<()> {
    if let Some(f) = fields.iter().find(|f| f.parent_id != -1) {
        return Err(Error::unsupported(format!(
            "Lance field {} is nested; this plugin writes flat schemas only",
            f.name
        )));
    }
    Ok(())
}

/// The Lance fields Fluss's Lance catalog creates for `table`: one leaf per column, ids
/// 0.. in column order.
pub fn fields_for_fluss_table(table: &TableInfo) -> Result<Vec<pbfile::Field>> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let t = FlussType::parse(&c.data_type)
                .map_err(|e| e.context(format!("column {}", c.name)))?;
            let arrow = arrow_type_for_fluss(t);
            let encoding = match arrow {
                DataType::Utf8 | DataType::Binary => pbfile::Encoding::VarBinary,
                _ => pbfile::Encoding::Plain,
            };
            Ok(pbfile::Field {
                r#type: pbfile::field::Type::Leaf as i32,
                name: c.name.clone(),
                id: i as i32,
                parent_id: -1,
                logical_type: logical_type(&arrow)?,
                nullable: c.nullable,
                encoding: encoding as i32,
                ..Default::default()
            })
        })
        .collect()
}

/// The Arrow schema of data files with these fields.
pub fn arrow_schema(fields: &[pbfile::Field]) -> Result<SchemaRef> {
    Ok(Arc::new(ArrowSchema::new(
        fields
            .iter()
            .map(|f| {
                Ok(ArrowField::new(
                    &f.name,
                    arrow_type(&f.logical_type)?,
                    f.nullable,
                ))
            })
            .collect::<Result<Vec<_>>>()?,
    )))
}

/// Checks that the Fluss table's columns are exactly the dataset's fields (by name, in
/// order, with convertible types): Lance tables hold the Fluss columns only.
pub fn check_compatible(fields: &[pbfile::Field], table: &TableInfo) -> Result<()> {
    check_flat(fields)?;
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    let fluss: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
    if names != fluss {
        return Err(Error::invalid_input(format!(
            "the Lance dataset's columns {names:?} are not the Fluss table's columns {fluss:?}"
        )));
    }
    for (f, c) in fields.iter().zip(&table.columns) {
        let lake = arrow_type(&f.logical_type)?;
        let want = arrow_type_for_fluss(
            FlussType::parse(&c.data_type).map_err(|e| e.context(format!("column {}", c.name)))?,
        );
        let same_family = match (&lake, &want) {
            (DataType::Timestamp(..), DataType::Timestamp(..)) => true,
            (
                DataType::Time32(_) | DataType::Time64(_),
                DataType::Time32(_) | DataType::Time64(_),
            ) => true,
            (DataType::Utf8 | DataType::LargeUtf8, DataType::Utf8) => true,
            (DataType::Binary | DataType::LargeBinary, DataType::Binary) => true,
            (a, b) => a == b,
        };
        if !same_family {
            return Err(Error::invalid_input(format!(
                "column {}: the Lance dataset stores {}, the Fluss type {} needs {}",
                c.name, f.logical_type, c.data_type, want
            )));
        }
        if !f.nullable && c.nullable {
            return Err(Error::invalid_input(format!(
                "column {} is non-nullable in Lance but nullable in Fluss",
                c.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::ErrorKind;
    use fluss_lake_guest_sdk::testing::{NESTED_COLUMNS, log_table};

    use super::*;

    /// Lance could hold nested columns, but this plugin's encoder is flat: a table with one is
    /// refused before anything is written, naming the column.
    #[test]
    fn nested_columns_are_refused_naming_the_column() {
        for (name, ty, nullable) in NESTED_COLUMNS.iter().filter(|(_, t, _)| t.contains('<')) {
            let t = log_table(
                "db",
                "t",
                &[("id", "INT", false), (name, ty, *nullable)],
                &[],
                1,
                &[],
            );
            let err = fields_for_fluss_table(&t).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
            assert!(err.message().contains(&format!("column {name}")), "{err}");
        }
    }
}
