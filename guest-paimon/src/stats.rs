//! Value statistics of data files as Paimon stores them (`SimpleStats`: min row, max row,
//! null counts), honouring Paimon's `metadata.stats-mode` (default `truncate(16)`),
//! per-column `fields.<name>.stats-mode`, `metadata.stats-keep-first-n-columns`, and the
//! dense store (`metadata.stats-dense-store`, default true: only columns whose mode is not
//! `none` are stored, listed in `_VALUE_STATS_COLS`, which is null when that is all columns).

use std::collections::BTreeMap;

use fluss_lake_guest_sdk::stats::{ColumnStats, Datum};
use fluss_lake_guest_sdk::{Error, Result};

use crate::binary_row::{self, BinaryRowWriter, Value};
use crate::types::{PaimonType, TypeRoot, datum_to_value};

/// Paimon `SimpleStats` in serialized form.
#[derive(Debug, Clone, PartialEq)]
pub struct SimpleStats {
    /// Serialized `BinaryRow` of minimums.
    pub min_values: Vec<u8>,
    /// Serialized `BinaryRow` of maximums.
    pub max_values: Vec<u8>,
    /// Null count per column (`None` entries = unknown); `None` = not recorded.
    pub null_counts: Option<Vec<Option<i64>>>,
}

impl SimpleStats {
    /// `SimpleStats.EMPTY_STATS`: arity-0 rows and no null counts.
    pub fn empty() -> SimpleStats {
        SimpleStats {
            min_values: binary_row::empty_row(),
            max_values: binary_row::empty_row(),
            null_counts: Some(Vec::new()),
        }
    }
}

/// A column's statistics mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsMode {
    /// No statistics (column left out of the dense store).
    None,
    /// Null counts only.
    Counts,
    /// Min/max with strings truncated to this many characters.
    Truncate(usize),
    /// Exact min/max.
    Full,
}

impl StatsMode {
    /// Parses `none`, `counts`, `truncate(N)`, `full` (case-insensitive).
    pub fn parse(s: &str) -> Result<StatsMode> {
        let l = s.trim().to_ascii_lowercase();
        Ok(match l.as_str() {
            "none" => StatsMode::None,
            "counts" => StatsMode::Counts,
            "full" => StatsMode::Full,
            _ => {
                let n = l
                    .strip_prefix("truncate(")
                    .and_then(|r| r.strip_suffix(')'))
                    .and_then(|n| n.trim().parse::<usize>().ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| Error::invalid_input(format!("unknown stats mode {s:?}")))?;
                StatsMode::Truncate(n)
            }
        })
    }
}

/// Stats modes per column, from the table options (Paimon `StatsCollectorFactories`).
pub fn stats_modes(names: &[&str], options: &BTreeMap<String, String>) -> Result<Vec<StatsMode>> {
    let default = options
        .get("metadata.stats-mode")
        .map_or("truncate(16)", |s| s);
    stats_modes_with(names, options, default)
}

/// Like [`stats_modes`] with `default_mode` in place of `metadata.stats-mode`, for files whose
/// mode Paimon picks otherwise (per level, changelog files).
pub fn stats_modes_with(
    names: &[&str],
    options: &BTreeMap<String, String>,
    default_mode: &str,
) -> Result<Vec<StatsMode>> {
    let default = StatsMode::parse(default_mode)?;
    let keep_first: i64 = match options.get("metadata.stats-keep-first-n-columns") {
        None => -1,
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| Error::invalid_input("bad stats-keep-first-n-columns"))?,
    };
    let mut counted = 0i64;
    names
        .iter()
        .map(|name| {
            if let Some(m) = options.get(&format!("fields.{name}.stats-mode")) {
                counted += 1;
                return StatsMode::parse(m);
            }
            // System fields (`_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`) always get truncate(128).
            if name.starts_with("_KEY_") || *name == "_SEQUENCE_NUMBER" || *name == "_VALUE_KIND" {
                return Ok(StatsMode::Truncate(128));
            }
            let mode = if keep_first >= 0 && counted >= keep_first {
                StatsMode::None
            } else {
                default
            };
            counted += 1;
            Ok(mode)
        })
        .collect()
}

/// `metadata.stats-dense-store` (default true).
pub fn dense_store(options: &BTreeMap<String, String>) -> bool {
    options
        .get("metadata.stats-dense-store")
        .is_none_or(|v| !v.trim().eq_ignore_ascii_case("false"))
}

/// Truncates a string lower bound to `n` characters.
fn truncate_min(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// A string upper bound of at most `n` characters (Paimon `truncateMax`): the prefix with its
/// last incrementable character incremented; `None` if there is none.
fn truncate_max(s: &str, n: usize) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= n {
        return Some(s.to_string());
    }
    for i in (0..n).rev() {
        let mut next = chars[i] as u32 + 1;
        if (0xD800..0xE000).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            let mut out: String = chars[..i].iter().collect();
            out.push(c);
            return Some(out);
        }
    }
    None
}

/// Float bounds as Paimon ends up with them: it reads statistics back from Parquet footers
/// through parquet-mr, whose statistics builder drops the bounds of a column that holds NaN
/// and widens a zero lower bound to `-0.0` and a zero upper bound to `+0.0`, so that no zero
/// is pruned whatever its sign. Other values pass through.
fn parquet_float_bounds(
    min: Option<&Datum>,
    max: Option<&Datum>,
) -> (Option<Datum>, Option<Datum>) {
    let float = |d: Option<&Datum>| match d {
        Some(Datum::Float32(v)) => Some(*v as f64),
        Some(Datum::Float64(v)) => Some(*v),
        _ => None,
    };
    let (Some(lo), Some(hi)) = (float(min), float(max)) else {
        return (min.cloned(), max.cloned());
    };
    if lo.is_nan() || hi.is_nan() {
        return (None, None);
    }
    let fix = |d: &Datum, v: f64| match d {
        Datum::Float32(_) => Datum::Float32(v as f32),
        _ => Datum::Float64(v),
    };
    let lo = if lo == 0.0 { -0.0 } else { lo };
    let hi = if hi == 0.0 { 0.0 } else { hi };
    (min.map(|d| fix(d, lo)), max.map(|d| fix(d, hi)))
}

/// The statistics Paimon keeps for one column under `mode`: `(min, max)`.
fn apply_mode(
    stats: &ColumnStats,
    ty: &PaimonType,
    mode: StatsMode,
) -> (Option<Value>, Option<Value>) {
    // Paimon collects min/max only for `Comparable` values: not for byte arrays.
    if matches!(ty.root, TypeRoot::Binary(_) | TypeRoot::VarBinary(_)) {
        return (None, None);
    }
    let (min, max) = parquet_float_bounds(stats.min.as_ref(), stats.max.as_ref());
    let value = |d: &Option<Datum>| d.as_ref().and_then(|d| datum_to_value(d, ty));
    match mode {
        StatsMode::None | StatsMode::Counts => (None, None),
        StatsMode::Full => (value(&min), value(&max)),
        StatsMode::Truncate(n) => match (&min, &max) {
            (Some(Datum::Utf8(lo)), Some(Datum::Utf8(hi))) => match truncate_max(hi, n) {
                Some(hi) => (
                    Some(Value::String(truncate_min(lo, n))),
                    Some(Value::String(hi)),
                ),
                None => (None, None),
            },
            _ => (value(&min), value(&max)),
        },
    }
}

/// Builds `_VALUE_STATS` and `_VALUE_STATS_COLS` for a data file from its column statistics
/// (dense store). `fields` are the file's columns (name, type), in order.
pub fn value_stats(
    fields: &[(&str, PaimonType)],
    stats: &[ColumnStats],
    modes: &[StatsMode],
    dense: bool,
) -> Result<(Option<Vec<String>>, SimpleStats)> {
    if fields.len() != stats.len() || fields.len() != modes.len() {
        return Err(Error::internal("stats and fields differ in length"));
    }
    // Paimon looks Parquet statistics up by top-level column name, which no column chunk of a
    // nested column has: ARRAY, MAP and ROW columns have no statistics whatever their mode
    // (`ParquetSimpleStatsExtractor`), so the dense store leaves them out.
    let modes: Vec<StatsMode> = fields
        .iter()
        .zip(modes)
        .map(|((_, ty), mode)| {
            if ty.is_nested() {
                StatsMode::None
            } else {
                *mode
            }
        })
        .collect();
    let kept: Vec<usize> = (0..fields.len())
        .filter(|i| !dense || modes[*i] != StatsMode::None)
        .collect();
    let mut min = BinaryRowWriter::new(kept.len());
    let mut max = BinaryRowWriter::new(kept.len());
    let mut nulls = Vec::with_capacity(kept.len());
    for (pos, &i) in kept.iter().enumerate() {
        // Stats rows use the column types made nullable.
        let ty = fields[i].1.with_nullable(true);
        let (lo, hi) = apply_mode(&stats[i], &ty, modes[i]);
        min.set(pos, &ty, lo.as_ref())?;
        max.set(pos, &ty, hi.as_ref())?;
        nulls.push(if modes[i] == StatsMode::None {
            None
        } else {
            Some(stats[i].null_count as i64)
        });
    }
    let cols = if kept.len() == fields.len() {
        None
    } else {
        Some(kept.iter().map(|i| fields[*i].0.to_string()).collect())
    };
    Ok((
        cols,
        SimpleStats {
            min_values: min.finish_serialized(),
            max_values: max.finish_serialized(),
            null_counts: Some(nulls),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary_row::BinaryRowReader;

    #[test]
    fn float_bounds_follow_parquet_mr() {
        let f = |v: f64| Some(Datum::Float64(v));
        let (lo, hi) = parquet_float_bounds(f(0.0).as_ref(), f(-0.0).as_ref());
        assert!(matches!(lo, Some(Datum::Float64(v)) if v == 0.0 && v.is_sign_negative()));
        assert!(matches!(hi, Some(Datum::Float64(v)) if v == 0.0 && v.is_sign_positive()));
        assert_eq!(
            parquet_float_bounds(f(-1.0).as_ref(), f(f64::NAN).as_ref()),
            (None, None)
        );
        assert_eq!(
            parquet_float_bounds(Some(&Datum::Float32(1.5)), Some(&Datum::Float32(2.0))),
            (Some(Datum::Float32(1.5)), Some(Datum::Float32(2.0)))
        );
        let i = Some(Datum::Int32(0));
        assert_eq!(parquet_float_bounds(i.as_ref(), i.as_ref()), (i.clone(), i));
    }

    #[test]
    fn truncation_follows_paimon() {
        assert_eq!(truncate_min("abcdef", 3), "abc");
        assert_eq!(truncate_max("abcdef", 3).as_deref(), Some("abd"));
        assert_eq!(truncate_max("ab", 3).as_deref(), Some("ab"));
        assert_eq!(truncate_max("a\u{10FFFF}z", 2).as_deref(), Some("b"));
        assert_eq!(truncate_max("\u{10FFFF}\u{10FFFF}z", 2), None);
        assert_eq!(
            StatsMode::parse("TRUNCATE(16)").unwrap(),
            StatsMode::Truncate(16)
        );
        assert!(StatsMode::parse("truncate(0)").is_err());
    }

    #[test]
    fn dense_stats_list_columns_only_when_some_are_left_out() {
        let int = PaimonType::parse("INT NOT NULL").unwrap();
        let s = PaimonType::parse("STRING").unwrap();
        let fields = [("id", int.clone()), ("name", s.clone())];
        let stats = [
            ColumnStats {
                null_count: 0,
                min: Some(Datum::Int32(1)),
                max: Some(Datum::Int32(9)),
                fields: Vec::new(),
            },
            ColumnStats {
                null_count: 2,
                min: Some(Datum::Utf8("a".repeat(20))),
                max: Some(Datum::Utf8("b".repeat(20))),
                fields: Vec::new(),
            },
        ];
        let opts = BTreeMap::new();
        let modes = stats_modes(&["id", "name"], &opts).unwrap();
        let (cols, st) = value_stats(&fields, &stats, &modes, true).unwrap();
        assert_eq!(cols, None);
        assert_eq!(st.null_counts, Some(vec![Some(0), Some(2)]));
        let max = BinaryRowReader::new(&st.max_values).unwrap();
        assert_eq!(
            max.get(1, &s).unwrap(),
            Some(Value::String(format!("{}c", "b".repeat(15))))
        );
        assert_eq!(max.get(0, &int).unwrap(), Some(Value::Int(9)));

        let opts = BTreeMap::from([("fields.name.stats-mode".to_string(), "none".to_string())]);
        let modes = stats_modes(&["id", "name"], &opts).unwrap();
        let (cols, st) = value_stats(&fields, &stats, &modes, true).unwrap();
        assert_eq!(cols, Some(vec!["id".to_string()]));
        assert_eq!(BinaryRowReader::new(&st.min_values).unwrap().arity(), 1);
    }

    #[test]
    fn nested_columns_have_no_statistics_and_leave_the_dense_store() {
        let int = PaimonType::parse("INT").unwrap();
        let tags =
            PaimonType::from_json(&serde_json::json!({"type": "ARRAY", "element": "STRING"}))
                .unwrap();
        let fields = [("id", int.clone()), ("tags", tags)];
        let stats = [
            ColumnStats {
                null_count: 1,
                min: Some(Datum::Int32(1)),
                max: Some(Datum::Int32(2)),
                fields: Vec::new(),
            },
            ColumnStats {
                null_count: 3,
                ..Default::default()
            },
        ];
        let modes = stats_modes(&["id", "tags"], &BTreeMap::new()).unwrap();
        let (cols, st) = value_stats(&fields, &stats, &modes, true).unwrap();
        assert_eq!(cols, Some(vec!["id".to_string()]));
        assert_eq!(st.null_counts, Some(vec![Some(1)]));
        let (cols, st) = value_stats(&fields, &stats, &modes, false).unwrap();
        assert_eq!(cols, None);
        assert_eq!(st.null_counts, Some(vec![Some(1), None]));
        assert_eq!(
            BinaryRowReader::new(&st.max_values)
                .unwrap()
                .get(0, &int)
                .unwrap(),
            Some(Value::Int(2))
        );
    }
}
