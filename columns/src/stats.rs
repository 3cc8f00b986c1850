//! Per-column statistics (min, max, null count) of the rows written to a data file.
//!
//! Lake formats prune files with these (Paimon `_VALUE_STATS`, Iceberg bounds), so they are
//! computed from the Arrow arrays while writing, in the file's own types. Ordering follows
//! Java's `Comparable` (what Paimon's collectors use): NaN sorts above every number, strings
//! and bytes compare bytewise (= code point order for UTF-8).

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray, make_array};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, TimeUnit};

/// One statistics value, typed like the column it came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Datum {
    /// BOOLEAN
    Boolean(bool),
    /// TINYINT
    Int8(i8),
    /// SMALLINT
    Int16(i16),
    /// INT
    Int32(i32),
    /// BIGINT
    Int64(i64),
    /// FLOAT
    Float32(f32),
    /// DOUBLE
    Float64(f64),
    /// STRING / CHAR
    Utf8(String),
    /// BYTES / BINARY
    Binary(Vec<u8>),
    /// DECIMAL: the unscaled value.
    Decimal(i128),
    /// DATE: days since epoch.
    Date32(i32),
    /// TIME: value in the unit of the Arrow type.
    Time(i64, TimeUnit),
    /// TIMESTAMP / TIMESTAMP_LTZ: value in the unit of the Arrow type.
    Timestamp(i64, TimeUnit),
}

/// Statistics of one column over the rows of one file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnStats {
    /// Rows whose value is null.
    pub null_count: u64,
    /// Smallest non-null value, if the type is ordered and any value was seen.
    pub min: Option<Datum>,
    /// Largest non-null value.
    pub max: Option<Datum>,
    /// For a struct (`ROW`) column, the statistics of each of its fields, in order, a field
    /// counted null where its struct is (as Iceberg and Delta keep them for the leaves of
    /// structs); empty for other columns, lists and maps included.
    pub fields: Vec<ColumnStats>,
}

/// Java's `Double.compare`: numeric, `-0.0 < 0.0`, NaN above everything and equal to itself.
pub fn cmp_f64(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

impl Datum {
    /// Compares two datums of the same variant; `None` for different variants.
    pub fn partial_cmp_same(&self, other: &Datum) -> Option<Ordering> {
        use Datum::*;
        Some(match (self, other) {
            (Boolean(a), Boolean(b)) => a.cmp(b),
            (Int8(a), Int8(b)) => a.cmp(b),
            (Int16(a), Int16(b)) => a.cmp(b),
            (Int32(a), Int32(b)) => a.cmp(b),
            (Int64(a), Int64(b)) => a.cmp(b),
            (Float32(a), Float32(b)) => cmp_f64(*a as f64, *b as f64),
            (Float64(a), Float64(b)) => cmp_f64(*a, *b),
            (Utf8(a), Utf8(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Binary(a), Binary(b)) => a.cmp(b),
            (Decimal(a), Decimal(b)) => a.cmp(b),
            (Date32(a), Date32(b)) => a.cmp(b),
            (Time(a, _), Time(b, _)) => a.cmp(b),
            (Timestamp(a, _), Timestamp(b, _)) => a.cmp(b),
            _ => return None,
        })
    }
}

impl ColumnStats {
    /// Folds another file-part's stats of the same column into these.
    pub fn merge(&mut self, other: &ColumnStats) {
        self.null_count += other.null_count;
        if let Some(m) = &other.min
            && self
                .min
                .as_ref()
                .is_none_or(|cur| m.partial_cmp_same(cur) == Some(Ordering::Less))
        {
            self.min = Some(m.clone());
        }
        if let Some(m) = &other.max
            && self
                .max
                .as_ref()
                .is_none_or(|cur| m.partial_cmp_same(cur) == Some(Ordering::Greater))
        {
            self.max = Some(m.clone());
        }
        if self.fields.len() < other.fields.len() {
            self.fields
                .resize(other.fields.len(), ColumnStats::default());
        }
        for (mine, theirs) in self.fields.iter_mut().zip(&other.fields) {
            mine.merge(theirs);
        }
    }

    /// Statistics of one array, with those of a struct's fields when `struct_fields`.
    pub fn of_array(array: &dyn Array, struct_fields: bool) -> ColumnStats {
        let null_count = array.null_count() as u64;
        let (min, max) = min_max(array);
        let fields = match array.as_struct_opt().filter(|_| struct_fields) {
            Some(st) => st
                .columns()
                .iter()
                .map(|child| {
                    // A field of a null struct is null too.
                    let nulls = NullBuffer::union(st.nulls(), child.logical_nulls().as_ref());
                    match child.to_data().into_builder().nulls(nulls).build() {
                        Ok(data) => ColumnStats::of_array(make_array(data).as_ref(), true),
                        Err(_) => ColumnStats::of_array(child.as_ref(), true),
                    }
                })
                .collect(),
            None => Vec::new(),
        };
        ColumnStats {
            null_count,
            min,
            max,
            fields,
        }
    }
}

fn prim_min_max<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    cmp: impl Fn(&T::Native, &T::Native) -> Ordering,
) -> Option<(T::Native, T::Native)> {
    let mut it = a.iter().flatten();
    let first = it.next()?;
    let (mut lo, mut hi) = (first, first);
    for v in it {
        if cmp(&v, &lo) == Ordering::Less {
            lo = v;
        }
        if cmp(&v, &hi) == Ordering::Greater {
            hi = v;
        }
    }
    Some((lo, hi))
}

fn ord_min_max<T: ArrowPrimitiveType>(a: &dyn Array) -> Option<(T::Native, T::Native)>
where
    T::Native: Ord,
{
    prim_min_max(a.as_primitive::<T>(), |x, y| x.cmp(y))
}

fn bytes_min_max<'a>(mut it: impl Iterator<Item = &'a [u8]>) -> Option<(&'a [u8], &'a [u8])> {
    let first = it.next()?;
    let (mut lo, mut hi) = (first, first);
    for v in it {
        if v < lo {
            lo = v;
        }
        if v > hi {
            hi = v;
        }
    }
    Some((lo, hi))
}

fn pair<V>(mm: Option<(V, V)>, f: impl Fn(V) -> Datum) -> (Option<Datum>, Option<Datum>) {
    match mm {
        Some((lo, hi)) => (Some(f(lo)), Some(f(hi))),
        None => (None, None),
    }
}

/// The value of row `i` (`None` when null or of an unordered type), e.g. to encode one key of
/// a sorted file as its bound.
pub fn datum_at(array: &dyn Array, i: usize) -> Option<Datum> {
    if array.is_null(i) {
        return None;
    }
    min_max(&array.slice(i, 1)).0
}

/// Min and max of an array's non-null values; `(None, None)` for unordered types.
pub fn min_max(array: &dyn Array) -> (Option<Datum>, Option<Datum>) {
    match array.data_type() {
        DataType::Boolean => {
            let a = array.as_boolean();
            let mut seen = (false, false);
            for v in a.iter().flatten() {
                if v { seen.1 = true } else { seen.0 = true }
            }
            match seen {
                (false, false) => (None, None),
                (f, t) => (Some(Datum::Boolean(!f)), Some(Datum::Boolean(t))),
            }
        }
        DataType::Int8 => pair(ord_min_max::<Int8Type>(array), Datum::Int8),
        DataType::Int16 => pair(ord_min_max::<Int16Type>(array), Datum::Int16),
        DataType::Int32 => pair(ord_min_max::<Int32Type>(array), Datum::Int32),
        DataType::Int64 => pair(ord_min_max::<Int64Type>(array), Datum::Int64),
        DataType::Float32 => pair(
            prim_min_max(array.as_primitive::<Float32Type>(), |a, b| {
                cmp_f64(*a as f64, *b as f64)
            }),
            Datum::Float32,
        ),
        DataType::Float64 => pair(
            prim_min_max(array.as_primitive::<Float64Type>(), |a, b| cmp_f64(*a, *b)),
            Datum::Float64,
        ),
        DataType::Date32 => pair(ord_min_max::<Date32Type>(array), Datum::Date32),
        DataType::Decimal128(_, _) => pair(ord_min_max::<Decimal128Type>(array), Datum::Decimal),
        DataType::Time32(TimeUnit::Second) => pair(ord_min_max::<Time32SecondType>(array), |v| {
            Datum::Time(v as i64, TimeUnit::Second)
        }),
        DataType::Time32(_) => pair(ord_min_max::<Time32MillisecondType>(array), |v| {
            Datum::Time(v as i64, TimeUnit::Millisecond)
        }),
        DataType::Time64(TimeUnit::Microsecond) => {
            pair(ord_min_max::<Time64MicrosecondType>(array), |v| {
                Datum::Time(v, TimeUnit::Microsecond)
            })
        }
        DataType::Time64(_) => pair(ord_min_max::<Time64NanosecondType>(array), |v| {
            Datum::Time(v, TimeUnit::Nanosecond)
        }),
        DataType::Timestamp(unit, _) => {
            let unit = *unit;
            let mm = match unit {
                TimeUnit::Second => ord_min_max::<TimestampSecondType>(array),
                TimeUnit::Millisecond => ord_min_max::<TimestampMillisecondType>(array),
                TimeUnit::Microsecond => ord_min_max::<TimestampMicrosecondType>(array),
                TimeUnit::Nanosecond => ord_min_max::<TimestampNanosecondType>(array),
            };
            pair(mm, |v| Datum::Timestamp(v, unit))
        }
        DataType::Utf8 => pair(
            bytes_min_max(array.as_string::<i32>().iter().flatten().map(str::as_bytes)),
            |b| Datum::Utf8(String::from_utf8_lossy(b).into_owned()),
        ),
        DataType::LargeUtf8 => pair(
            bytes_min_max(array.as_string::<i64>().iter().flatten().map(str::as_bytes)),
            |b| Datum::Utf8(String::from_utf8_lossy(b).into_owned()),
        ),
        DataType::Binary => pair(
            bytes_min_max(array.as_binary::<i32>().iter().flatten()),
            |b| Datum::Binary(b.to_vec()),
        ),
        DataType::LargeBinary => pair(
            bytes_min_max(array.as_binary::<i64>().iter().flatten()),
            |b| Datum::Binary(b.to_vec()),
        ),
        DataType::FixedSizeBinary(_) => pair(
            bytes_min_max(array.as_fixed_size_binary().iter().flatten()),
            |b| Datum::Binary(b.to_vec()),
        ),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{BooleanArray, Float64Array, Int32Array, StringArray};

    use super::*;

    #[test]
    fn struct_fields_get_statistics_with_their_structs_nulls() {
        use arrow_array::StructArray;
        use arrow_schema::{Field, Fields};
        let fields = Fields::from(vec![Field::new("x", DataType::Int32, true)]);
        let x = Int32Array::from(vec![Some(5), Some(1), None, Some(9)]);
        let st = StructArray::new(
            fields,
            vec![std::sync::Arc::new(x)],
            Some(NullBuffer::from(vec![true, false, true, true])),
        );
        // Without struct fields (Paimon), only the column's own statistics.
        let plain = ColumnStats::of_array(&st, false);
        assert_eq!(plain.null_count, 1);
        assert!(plain.fields.is_empty());
        let mut s = ColumnStats::of_array(&st, true);
        assert_eq!(s.null_count, 1);
        assert_eq!(s.min, None);
        assert_eq!(s.fields[0].null_count, 2);
        assert_eq!(s.fields[0].min, Some(Datum::Int32(5)));
        assert_eq!(s.fields[0].max, Some(Datum::Int32(9)));
        let mut empty = ColumnStats::default();
        empty.merge(&s);
        s.merge(&s.clone());
        assert_eq!(empty.fields[0].null_count, 2);
        assert_eq!(s.fields[0].null_count, 4);
    }

    #[test]
    fn computes_and_merges() {
        let s = ColumnStats::of_array(
            &Int32Array::from(vec![Some(3), None, Some(-1), Some(7)]),
            true,
        );
        assert_eq!(
            s,
            ColumnStats {
                null_count: 1,
                min: Some(Datum::Int32(-1)),
                max: Some(Datum::Int32(7)),
                fields: Vec::new(),
            }
        );
        let mut t = ColumnStats::of_array(&Int32Array::from(vec![Some(10), None]), true);
        t.merge(&s);
        assert_eq!(
            t,
            ColumnStats {
                null_count: 2,
                min: Some(Datum::Int32(-1)),
                max: Some(Datum::Int32(10)),
                fields: Vec::new(),
            }
        );

        let f = ColumnStats::of_array(&Float64Array::from(vec![1.0, f64::NAN, -2.0]), true);
        assert_eq!(f.min, Some(Datum::Float64(-2.0)));
        assert!(matches!(f.max, Some(Datum::Float64(v)) if v.is_nan()));

        let st = ColumnStats::of_array(
            &StringArray::from(vec![Some("b"), Some("ab"), None, Some("é")]),
            true,
        );
        assert_eq!(st.min, Some(Datum::Utf8("ab".into())));
        assert_eq!(st.max, Some(Datum::Utf8("é".into())));

        let b = ColumnStats::of_array(&BooleanArray::from(vec![Some(true), None]), true);
        assert_eq!(
            (b.min, b.max),
            (Some(Datum::Boolean(true)), Some(Datum::Boolean(true)))
        );
        let a = StringArray::from(vec![Some("x"), None]);
        assert_eq!(datum_at(&a, 0), Some(Datum::Utf8("x".into())));
        assert_eq!(datum_at(&a, 1), None);

        let e = ColumnStats::of_array(&Int32Array::from(vec![None, None]), true);
        assert_eq!(
            e,
            ColumnStats {
                null_count: 2,
                min: None,
                max: None,
                fields: Vec::new(),
            }
        );
    }
}
