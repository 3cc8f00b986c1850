//! Row ordering over Arrow columns, the way Java's `Comparable`s order values — the order lake
//! formats sort keys in (Paimon sorts primary keys of a data file with it, and readers merge
//! files assuming it). Comparators work on the arrays in place: sorting a million keys needs no
//! per-row allocation.
//!
//! The order per type: booleans `false < true`; integers, dates, times, timestamps and
//! decimals numerically; strings and bytes as unsigned bytes (= code point order for UTF-8,
//! Paimon's `BinaryString.compareTo` / `SortUtil.compareBinary`); floats numerically with
//! `-0.0 < 0.0` and NaN above everything (Java's `Double.compare`, which is also how pypaimon
//! orders key bounds). Nulls come first.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrowPrimitiveType};
use arrow_schema::{DataType, TimeUnit};

use crate::error::{Error, Result};
use crate::stats::cmp_f64;

/// Compares row `a` with row `b` of the arrays it was built for.
pub type RowComparator<'a> = Box<dyn Fn(usize, usize) -> Ordering + 'a>;

fn primitive<T>(array: &dyn Array) -> RowComparator<'_>
where
    T: ArrowPrimitiveType,
    T::Native: Ord,
{
    let values = array.as_primitive::<T>().values();
    Box::new(move |a, b| values[a].cmp(&values[b]))
}

fn float<T>(array: &dyn Array, to_f64: fn(T::Native) -> f64) -> RowComparator<'_>
where
    T: ArrowPrimitiveType,
{
    let values = array.as_primitive::<T>().values();
    Box::new(move |a, b| cmp_f64(to_f64(values[a]), to_f64(values[b])))
}

/// The non-null part of a column comparator.
fn values_comparator(array: &dyn Array) -> Result<RowComparator<'_>> {
    Ok(match array.data_type() {
        DataType::Boolean => {
            let values = array.as_boolean().values();
            Box::new(move |a, b| values.value(a).cmp(&values.value(b)))
        }
        DataType::Int8 => primitive::<Int8Type>(array),
        DataType::Int16 => primitive::<Int16Type>(array),
        DataType::Int32 => primitive::<Int32Type>(array),
        DataType::Int64 => primitive::<Int64Type>(array),
        DataType::Float32 => float::<Float32Type>(array, |v| v as f64),
        DataType::Float64 => float::<Float64Type>(array, |v| v),
        DataType::Date32 => primitive::<Date32Type>(array),
        DataType::Decimal128(_, _) => primitive::<Decimal128Type>(array),
        DataType::Time32(TimeUnit::Second) => primitive::<Time32SecondType>(array),
        DataType::Time32(_) => primitive::<Time32MillisecondType>(array),
        DataType::Time64(TimeUnit::Microsecond) => primitive::<Time64MicrosecondType>(array),
        DataType::Time64(_) => primitive::<Time64NanosecondType>(array),
        DataType::Timestamp(TimeUnit::Second, _) => primitive::<TimestampSecondType>(array),
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            primitive::<TimestampMillisecondType>(array)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            primitive::<TimestampMicrosecondType>(array)
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => primitive::<TimestampNanosecondType>(array),
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            Box::new(move |x, y| a.value(x).as_bytes().cmp(a.value(y).as_bytes()))
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            Box::new(move |x, y| a.value(x).as_bytes().cmp(a.value(y).as_bytes()))
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            Box::new(move |x, y| a.value(x).cmp(a.value(y)))
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            Box::new(move |x, y| a.value(x).cmp(a.value(y)))
        }
        DataType::FixedSizeBinary(_) => {
            let a = array.as_fixed_size_binary();
            Box::new(move |x, y| a.value(x).cmp(a.value(y)))
        }
        other => {
            return Err(Error::unsupported(format!(
                "cannot order values of Arrow type {other}"
            )));
        }
    })
}

/// A comparator of the rows of one column (nulls first). Fails with `unsupported` for types
/// without an order (nested types).
pub fn column_comparator(array: &dyn Array) -> Result<RowComparator<'_>> {
    let values = values_comparator(array)?;
    Ok(match array.logical_nulls() {
        None => values,
        Some(nulls) => Box::new(move |a, b| match (nulls.is_null(a), nulls.is_null(b)) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => values(a, b),
        }),
    })
}

/// A comparator of rows over several columns of equal length: lexicographic, first column
/// first (how composite keys compare).
pub fn rows_comparator<'a>(columns: &[&'a dyn Array]) -> Result<RowComparator<'a>> {
    let comparators = columns
        .iter()
        .map(|c| column_comparator(*c))
        .collect::<Result<Vec<_>>>()?;
    Ok(Box::new(move |a, b| {
        comparators
            .iter()
            .map(|c| c(a, b))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }))
}

#[cfg(test)]
mod tests {
    use arrow_array::{BinaryArray, Float64Array, Int32Array, StringArray};

    use super::*;

    fn sorted(columns: &[&dyn Array]) -> Vec<usize> {
        let cmp = rows_comparator(columns).unwrap();
        let mut idx: Vec<usize> = (0..columns[0].len()).collect();
        idx.sort_by(|a, b| cmp(*a, *b));
        idx
    }

    #[test]
    fn orders_like_java() {
        let ints = Int32Array::from(vec![Some(3), None, Some(-7), Some(3)]);
        assert_eq!(sorted(&[&ints]), [1, 2, 0, 3]);

        // Bytewise: 'Z' < 'a' < 'é' (multi-byte) and a prefix sorts first.
        let s = StringArray::from(vec!["a", "é", "Z", "ab", ""]);
        assert_eq!(sorted(&[&s]), [4, 2, 0, 3, 1]);

        let b = BinaryArray::from(vec![&[0xffu8][..], &[0x01], &[0x01, 0x00]]);
        assert_eq!(sorted(&[&b]), [1, 2, 0]);

        let f = Float64Array::from(vec![f64::NAN, 0.0, -0.0, -1.5, f64::INFINITY]);
        assert_eq!(sorted(&[&f]), [3, 2, 1, 4, 0]);

        // Composite keys: second column breaks ties; the sort is stable beyond that.
        let k1 = Int32Array::from(vec![1, 0, 1, 1]);
        let k2 = StringArray::from(vec!["b", "z", "a", "b"]);
        assert_eq!(sorted(&[&k1, &k2]), [1, 2, 0, 3]);

        let nested = arrow_array::new_null_array(
            &DataType::List(std::sync::Arc::new(arrow_schema::Field::new(
                "x",
                DataType::Int32,
                true,
            ))),
            1,
        );
        assert!(column_comparator(nested.as_ref()).is_err());
    }
}
