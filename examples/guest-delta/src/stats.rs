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
//!
//! Nested columns follow the protocol's "Per-file Statistics", which encodes per-column
//! statistics "mirroring the schema of the actual data": a `struct` column's statistics are
//! an object of its fields' (to any depth), a field counted null wherever its struct is null
//! (Spark's `a.b IS NULL`; delta-rs writes the same). An `array` or `map` column gets its
//! `nullCount` (null arrays / maps, not null elements) and no bounds: Spark's
//! `StatisticsCollection` collects min / max only for skipping-eligible primitive types but
//! `nullCount` for every non-struct field, and delta-kernel's stats schema likewise reads
//! `nullCount` of arrays and maps. (delta-rs's own writer leaves arrays and maps out of the
//! statistics altogether, which readers handle the same as a missing count.) A struct with
//! nothing to report under a statistic is left out of it, as Spark leaves it out.

use fluss_lake_guest_sdk::datatype::civil_from_days;
use fluss_lake_guest_sdk::deps::arrow_schema::TimeUnit;
use fluss_lake_guest_sdk::deps::serde_json::{Map, Value, json};
use fluss_lake_guest_sdk::stats::{ColumnStats, Datum};

use crate::schema::DeltaType;

/// The per-column objects of one file's statistics (one level of them for a struct).
#[derive(Default)]
struct Columns {
    min: Map<String, Value>,
    max: Map<String, Value>,
    nulls: Map<String, Value>,
}

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

fn bound(datum: &Datum, ty: &DeltaType, which: Bound) -> Option<Value> {
    match (datum, ty) {
        (Datum::Int8(v), _) => Some(json!(v)),
        (Datum::Int16(v), _) => Some(json!(v)),
        (Datum::Int32(v), _) => Some(json!(v)),
        (Datum::Int64(v), _) => Some(json!(v)),
        (Datum::Float32(v), _) => finite(*v as f64),
        (Datum::Float64(v), _) => finite(*v),
        (Datum::Decimal(v), DeltaType::Decimal(p, s)) => decimal(*v, *p, *s),
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

impl Columns {
    /// Adds the statistics of column (or struct field) `name` of type `ty`.
    fn add(&mut self, name: &str, ty: &DeltaType, s: &ColumnStats) {
        match ty {
            DeltaType::Struct(fields) => {
                let mut nested = Columns::default();
                for (f, fs) in fields.iter().zip(&s.fields) {
                    nested.add(&f.name, &f.ty, fs);
                }
                for (into, object) in [
                    (&mut self.min, nested.min),
                    (&mut self.max, nested.max),
                    (&mut self.nulls, nested.nulls),
                ] {
                    if !object.is_empty() {
                        into.insert(name.to_string(), Value::Object(object));
                    }
                }
            }
            DeltaType::Array { .. } | DeltaType::Map { .. } => {
                self.nulls.insert(name.to_string(), json!(s.null_count));
            }
            primitive => {
                self.nulls.insert(name.to_string(), json!(s.null_count));
                let lo = s.min.as_ref().and_then(|d| bound(d, primitive, Bound::Min));
                let hi = s.max.as_ref().and_then(|d| bound(d, primitive, Bound::Max));
                match (lo, hi) {
                    (Some(lo), Some(hi)) => {
                        self.min.insert(name.to_string(), lo);
                        self.max.insert(name.to_string(), hi);
                    }
                    // a string longer than the prefix has no maximum; its minimum still
                    // bounds it
                    (Some(lo), None) if *primitive == DeltaType::String => {
                        self.min.insert(name.to_string(), lo);
                    }
                    // otherwise both sides or none: a float column whose max is NaN must
                    // not keep a min that looks like the whole range
                    _ => {}
                }
            }
        }
    }
}

/// The `stats` JSON of a file of `num_records` rows whose columns (`name`, Delta type) have
/// these statistics (a struct column's with its fields' statistics, as the SDK collects
/// them).
pub fn file_stats(
    columns: &[(&str, &DeltaType)],
    stats: &[ColumnStats],
    num_records: u64,
) -> String {
    let mut out = Columns::default();
    for ((name, ty), s) in columns.iter().zip(stats) {
        out.add(name, ty, s);
    }
    json!({
        "numRecords": num_records,
        "minValues": out.min,
        "maxValues": out.max,
        "nullCount": out.nulls,
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
        let columns: Vec<(&str, &DeltaType)> = columns.iter().map(|(n, t)| (*n, t)).collect();
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

    /// Struct leaves nest their statistics (nulls of their struct counted), arrays and maps
    /// get a null count only, a struct without bounds is left out of the bounds.
    #[test]
    fn nested_columns_in_delta_form() {
        use crate::schema::DeltaField;
        let field = |name: &str, ty: DeltaType| DeltaField {
            name: name.into(),
            ty,
            nullable: true,
            metadata: Map::new(),
        };
        let inner = DeltaType::Struct(vec![field("z", DeltaType::Long)]);
        let flags = DeltaType::Struct(vec![field("b", DeltaType::Boolean)]);
        let point = DeltaType::Struct(vec![
            field("x", DeltaType::Integer),
            field("inner", inner),
            field(
                "tags",
                DeltaType::Array {
                    element: Box::new(DeltaType::String),
                    contains_null: true,
                },
            ),
            field("flags", flags),
        ]);
        let map = DeltaType::Map {
            key: Box::new(DeltaType::String),
            value: Box::new(DeltaType::Integer),
            value_contains_null: true,
        };
        let nulls = |n: u64| ColumnStats {
            null_count: n,
            ..ColumnStats::default()
        };
        let point_stats = ColumnStats {
            null_count: 1,
            min: None,
            max: None,
            fields: vec![
                stats(Datum::Int32(-2), Datum::Int32(7), 1),
                ColumnStats {
                    fields: vec![stats(Datum::Int64(5), Datum::Int64(5), 3)],
                    ..nulls(2)
                },
                nulls(1),
                ColumnStats {
                    fields: vec![stats(Datum::Boolean(false), Datum::Boolean(true), 1)],
                    ..nulls(1)
                },
            ],
        };
        let columns = [("point", &point), ("attrs", &map)];
        let s: Value =
            serde_json::from_str(&file_stats(&columns, &[point_stats, nulls(2)], 4)).unwrap();
        assert_eq!(
            s["minValues"],
            json!({"point": {"x": -2, "inner": {"z": 5}}})
        );
        assert_eq!(
            s["maxValues"],
            json!({"point": {"x": 7, "inner": {"z": 5}}})
        );
        assert_eq!(
            s["nullCount"],
            json!({"point": {"x": 1, "inner": {"z": 3}, "tags": 1, "flags": {"b": 1}},
                "attrs": 2})
        );
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
