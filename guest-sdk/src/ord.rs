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

/// Row keys encoded so that comparing their bytes orders rows exactly as [`rows_comparator`]
/// does (nulls first, Java's order per type), for comparing rows of *different* batches: a
/// k-way merge of sorted files compares the heads of k batches, which a comparator built over
/// one set of arrays cannot. Each batch is encoded once; a comparison is then a `memcmp`.
///
/// Encoding per column: a null is `0x00`; any other value is `0x01` followed by integers
/// (dates, times, timestamps, decimals) big-endian with the sign bit flipped, floats as their
/// bits made order-preserving (every NaN equal and above +∞, `-0.0 < 0.0`), booleans as one
/// byte, and strings / bytes with every `0x00` written as `0x00 0xff` and ended by
/// `0x00 0x00` (so a prefix sorts first and columns cannot bleed into each other).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortKeys {
    bytes: Vec<u8>,
    /// `offsets[i]..offsets[i + 1]` is row `i`'s key.
    offsets: Vec<usize>,
}

impl SortKeys {
    /// Row `i`'s key.
    pub fn row(&self, i: usize) -> &[u8] {
        &self.bytes[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn put_escaped(out: &mut Vec<u8>, value: &[u8]) {
    for &b in value {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

fn float_key_64(v: f64) -> [u8; 8] {
    let bits = if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        v.to_bits()
    };
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    ordered.to_be_bytes()
}

/// Appends the key bytes of row `i` of `array` (non-null) to `out`.
fn put_value(out: &mut Vec<u8>, array: &dyn Array, i: usize) -> Result<()> {
    macro_rules! signed {
        ($t:ty, $unsigned:ty) => {{
            let v = array.as_primitive::<$t>().value(i);
            let flipped = (v as $unsigned) ^ (1 as $unsigned).rotate_right(1);
            out.extend_from_slice(&flipped.to_be_bytes());
        }};
    }
    match array.data_type() {
        DataType::Boolean => out.push(array.as_boolean().value(i) as u8),
        DataType::Int8 => signed!(Int8Type, u8),
        DataType::Int16 => signed!(Int16Type, u16),
        DataType::Int32 => signed!(Int32Type, u32),
        DataType::Int64 => signed!(Int64Type, u64),
        DataType::Date32 => signed!(Date32Type, u32),
        DataType::Decimal128(_, _) => signed!(Decimal128Type, u128),
        DataType::Time32(TimeUnit::Second) => signed!(Time32SecondType, u32),
        DataType::Time32(_) => signed!(Time32MillisecondType, u32),
        DataType::Time64(TimeUnit::Microsecond) => signed!(Time64MicrosecondType, u64),
        DataType::Time64(_) => signed!(Time64NanosecondType, u64),
        DataType::Timestamp(TimeUnit::Second, _) => signed!(TimestampSecondType, u64),
        DataType::Timestamp(TimeUnit::Millisecond, _) => signed!(TimestampMillisecondType, u64),
        DataType::Timestamp(TimeUnit::Microsecond, _) => signed!(TimestampMicrosecondType, u64),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => signed!(TimestampNanosecondType, u64),
        DataType::Float32 => out.extend_from_slice(&float_key_64(
            array.as_primitive::<Float32Type>().value(i) as f64,
        )),
        DataType::Float64 => {
            out.extend_from_slice(&float_key_64(array.as_primitive::<Float64Type>().value(i)))
        }
        DataType::Utf8 => put_escaped(out, array.as_string::<i32>().value(i).as_bytes()),
        DataType::LargeUtf8 => put_escaped(out, array.as_string::<i64>().value(i).as_bytes()),
        DataType::Binary => put_escaped(out, array.as_binary::<i32>().value(i)),
        DataType::LargeBinary => put_escaped(out, array.as_binary::<i64>().value(i)),
        DataType::FixedSizeBinary(_) => put_escaped(out, array.as_fixed_size_binary().value(i)),
        other => {
            return Err(Error::unsupported(format!(
                "cannot order values of Arrow type {other}"
            )));
        }
    }
    Ok(())
}

/// The [`SortKeys`] of the rows of `columns` (arrays of equal length). Fails with
/// `unsupported` for types without an order (nested types).
pub fn sort_keys(columns: &[&dyn Array]) -> Result<SortKeys> {
    let rows = columns.first().map_or(0, |c| c.len());
    let mut keys = SortKeys {
        bytes: Vec::with_capacity(rows * 9 * columns.len()),
        offsets: Vec::with_capacity(rows + 1),
    };
    keys.offsets.push(0);
    for i in 0..rows {
        for column in columns {
            if column.is_null(i) {
                keys.bytes.push(0);
            } else {
                keys.bytes.push(1);
                put_value(&mut keys.bytes, *column, i)?;
            }
        }
        keys.offsets.push(keys.bytes.len());
    }
    Ok(keys)
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

    #[test]
    fn sort_keys_order_rows_as_the_comparator_does() {
        use arrow_array::{BooleanArray, Int64Array, TimestampMicrosecondArray};
        let ints = Int64Array::from(vec![
            Some(3),
            None,
            Some(-7),
            Some(i64::MIN),
            Some(i64::MAX),
            Some(0),
            Some(-1),
            Some(3),
        ]);
        let strings = StringArray::from(vec![
            Some("a\0"),
            Some(""),
            None,
            Some("a"),
            Some("ab"),
            Some("é"),
            Some("a\u{1}"),
            Some("Z"),
        ]);
        let floats = Float64Array::from(vec![
            f64::NAN,
            0.0,
            -0.0,
            -1.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -f64::NAN,
            1e-300,
        ]);
        let bools = BooleanArray::from(vec![
            Some(true),
            Some(false),
            None,
            Some(true),
            Some(false),
            Some(true),
            None,
            Some(false),
        ]);
        let ts = TimestampMicrosecondArray::from(vec![5, -5, 0, 1, 2, 3, 4, -6]);
        let all: [&dyn Array; 5] = [&ints, &strings, &floats, &bools, &ts];
        for n in 1..=all.len() {
            for start in 0..=all.len() - n {
                let columns = &all[start..start + n];
                let cmp = rows_comparator(columns).unwrap();
                let keys = sort_keys(columns).unwrap();
                assert_eq!(keys.len(), 8);
                for a in 0..8 {
                    for b in 0..8 {
                        // NaNs of either sign are one value, as to Java.
                        let by_keys = keys.row(a).cmp(keys.row(b));
                        assert_eq!(
                            by_keys,
                            cmp(a, b),
                            "columns {start}..{}, rows {a} {b}",
                            start + n
                        );
                    }
                }
            }
        }
    }
}
