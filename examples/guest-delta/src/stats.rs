//! Per-file statistics in Delta's form (the `stats` JSON string of an `add` action):
//! `numRecords`, and per data column `nullCount`, `minValues`, `maxValues`, from the column
//! statistics the SDK's Parquet writer collects while writing.
//!
//! Readers skip files with these, so a bound must never be tighter than the data. Values are
//! written as Delta on Spark writes them: numbers as JSON numbers, dates as `YYYY-MM-DD`,
//! timestamps at millisecond precision (`...T12:34:56.789Z`, no `Z` for `timestamp_ntz`) —
//! here the minimum rounded down and the maximum rounded up, so the bounds hold whether or
//! not a reader widens Spark's truncated bounds. Bounds are left out where they could not
//! be exact or safe: floating-point columns holding NaN or infinities, decimals too wide for
//! a JSON double, booleans and binary (not used for skipping), and the maximum of strings
//! longer than 32 characters (Delta's default prefix length; the minimum is truncated).

use fluss_lake_guest_sdk::datatype::civil_from_days;
use fluss_lake_guest_sdk::deps::arrow_schema::TimeUnit;
use fluss_lake_guest_sdk::deps::serde_json::{Map, Value, json};
use fluss_lake_guest_sdk::stats::{ColumnStats, Datum};

use crate::schema::DeltaType;

/// Characters of a string bound (Delta's `dataSkippingStringPrefixLength` default).
const STRING_PREFIX: usize = 32;

#[derive(Clone, Copy, PartialEq)]
enum Bound {
    Min,
    Max,
}

fn date(days: i64) -> Option<String> {
    let (y, m, d) = civil_from_days(days);
    (0..=9999)
        .contains(&y)
        .then(|| format!("{y:04}-{m:02}-{d:02}"))
}

fn timestamp(value: i64, unit: TimeUnit, bound: Bound, utc: bool) -> Option<String> {
    let per_milli: i64 = match unit {
        TimeUnit::Second => {
            return timestamp(value.checked_mul(1000)?, TimeUnit::Millisecond, bound, utc);
        }
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1_000_000,
    };
    let millis = match bound {
        Bound::Min => value.div_euclid(per_milli),
        Bound::Max => value.div_euclid(per_milli) + i64::from(value.rem_euclid(per_milli) != 0),
    };
    let day = date(millis.div_euclid(86_400_000))?;
    let ms = millis.rem_euclid(86_400_000);
    let (h, mi, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let zone = if utc { "Z" } else { "" };
    Some(format!("{day}T{h:02}:{mi:02}:{s:02}.{frac:03}{zone}"))
}

fn decimal(unscaled: i128, precision: u8, scale: u8) -> Option<Value> {
    // At most 15 significant digits survive the trip through a JSON double exactly.
    if precision > 15 {
        return None;
    }
    let v = unscaled as f64 / 10f64.powi(scale as i32);
    Some(json!(v))
}

fn finite(v: f64) -> Option<Value> {
    v.is_finite().then(|| json!(v))
}

fn bound(datum: &Datum, ty: DeltaType, which: Bound) -> Option<Value> {
    match (datum, ty) {
        (Datum::Int8(v), _) => Some(json!(v)),
        (Datum::Int16(v), _) => Some(json!(v)),
        (Datum::Int32(v), _) => Some(json!(v)),
        (Datum::Int64(v), _) => Some(json!(v)),
        (Datum::Float32(v), _) => finite(*v as f64),
        (Datum::Float64(v), _) => finite(*v),
        (Datum::Decimal(v), DeltaType::Decimal(p, s)) => decimal(*v, p, s),
        (Datum::Date32(v), _) => date(*v as i64).map(Value::String),
        (Datum::Timestamp(v, unit), DeltaType::Timestamp) => {
            timestamp(*v, *unit, which, true).map(Value::String)
        }
        (Datum::Timestamp(v, unit), DeltaType::TimestampNtz) => {
            timestamp(*v, *unit, which, false).map(Value::String)
        }
        (Datum::Utf8(s), _) => {
            if s.chars().count() <= STRING_PREFIX {
                Some(json!(s))
            } else if which == Bound::Min {
                Some(json!(s.chars().take(STRING_PREFIX).collect::<String>()))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The `stats` JSON of a file of `num_records` rows whose columns (`name`, Delta type) have
/// these statistics.
pub fn file_stats(
    columns: &[(&str, DeltaType)],
    stats: &[ColumnStats],
    num_records: u64,
) -> String {
    let (mut min, mut max, mut nulls) = (Map::new(), Map::new(), Map::new());
    for ((name, ty), s) in columns.iter().zip(stats) {
        nulls.insert(name.to_string(), json!(s.null_count));
        let lo = s.min.as_ref().and_then(|d| bound(d, *ty, Bound::Min));
        let hi = s.max.as_ref().and_then(|d| bound(d, *ty, Bound::Max));
        match (lo, hi) {
            (Some(lo), Some(hi)) => {
                min.insert(name.to_string(), lo);
                max.insert(name.to_string(), hi);
            }
            // a string longer than the prefix has no maximum; its minimum still bounds it
            (Some(lo), None) if *ty == DeltaType::String => {
                min.insert(name.to_string(), lo);
            }
            // otherwise both sides or none: a float column whose max is NaN must not keep
            // a min that looks like the whole range
            _ => {}
        }
    }
    json!({
        "numRecords": num_records,
        "minValues": min,
        "maxValues": max,
        "nullCount": nulls,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::deps::serde_json;

    use super::*;

    fn stats(min: Datum, max: Datum, nulls: u64) -> ColumnStats {
        ColumnStats {
            null_count: nulls,
            min: Some(min),
            max: Some(max),
            fields: Vec::new(),
        }
    }

    #[test]
    fn bounds_in_delta_form() {
        let long = "x".repeat(40);
        let columns = [
            ("i", DeltaType::Integer),
            ("amount", DeltaType::Decimal(10, 2)),
            ("wide", DeltaType::Decimal(38, 2)),
            ("day", DeltaType::Date),
            ("ts", DeltaType::TimestampNtz),
            ("ltz", DeltaType::Timestamp),
            ("f", DeltaType::Double),
            ("s", DeltaType::String),
            ("b", DeltaType::Boolean),
            ("empty", DeltaType::Long),
        ];
        let per_column = vec![
            stats(Datum::Int32(-3), Datum::Int32(9), 1),
            stats(Datum::Decimal(-450), Datum::Decimal(123), 0),
            stats(Datum::Decimal(1), Datum::Decimal(2), 0),
            stats(Datum::Date32(19_723), Datum::Date32(19_782), 0),
            stats(
                Datum::Timestamp(1_704_067_323_456_789, TimeUnit::Microsecond),
                Datum::Timestamp(1_704_067_323_456_789, TimeUnit::Microsecond),
                0,
            ),
            stats(
                Datum::Timestamp(1_704_067_323_456, TimeUnit::Millisecond),
                Datum::Timestamp(1_704_067_323_456, TimeUnit::Millisecond),
                2,
            ),
            stats(Datum::Float64(-1.5), Datum::Float64(f64::NAN), 0),
            stats(Datum::Utf8("a".into()), Datum::Utf8(long.clone()), 0),
            stats(Datum::Boolean(false), Datum::Boolean(true), 0),
            ColumnStats {
                null_count: 4,
                min: None,
                max: None,
                fields: Vec::new(),
            },
        ];
        let s: Value = serde_json::from_str(&file_stats(&columns, &per_column, 4)).unwrap();
        assert_eq!(s["numRecords"], 4);
        assert_eq!(
            s["minValues"],
            json!({"i": -3, "amount": -4.5, "day": "2024-01-01",
                "ts": "2024-01-01T00:02:03.456", "ltz": "2024-01-01T00:02:03.456Z", "s": "a"})
        );
        assert_eq!(
            s["maxValues"],
            json!({"i": 9, "amount": 1.23, "day": "2024-02-29",
                "ts": "2024-01-01T00:02:03.457", "ltz": "2024-01-01T00:02:03.456Z"})
        );
        assert_eq!(s["nullCount"]["i"], 1);
        assert_eq!(s["nullCount"]["empty"], 4);
        assert_eq!(s["nullCount"].as_object().unwrap().len(), columns.len());
    }

    #[test]
    fn timestamps_round_outwards() {
        let us = TimeUnit::Microsecond;
        assert_eq!(
            timestamp(-1, us, Bound::Min, true).unwrap(),
            "1969-12-31T23:59:59.999Z"
        );
        assert_eq!(
            timestamp(-1, us, Bound::Max, true).unwrap(),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            timestamp(3, TimeUnit::Second, Bound::Max, false).unwrap(),
            "1970-01-01T00:00:03.000"
        );
        assert_eq!(
            timestamp(1_500_001, TimeUnit::Nanosecond, Bound::Max, true).unwrap(),
            "1970-01-01T00:00:00.002Z"
        );
    }
}
