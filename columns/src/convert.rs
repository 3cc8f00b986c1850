//! Converting the Arrow columns Fluss sends (fluss-rs `to_arrow_type`) into the Arrow types a
//! lake format stores (each format's type mapping picks the target), plus the system columns
//! (`__bucket`, `__offset`, `__timestamp`) Fluss's lake plugins append.
//! Buffers are shared, not copied, whenever the type already matches.

use std::sync::Arc;

use crate::error::{Error, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, BinaryArray, ListArray, MapArray, PrimitiveArray, StructArray, new_null_array,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, TimeUnit};

fn unit_factor(u: TimeUnit) -> i64 {
    match u {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    }
}

/// The raw i64 values of any timestamp / time array (converted to i64).
fn i64_values(a: &dyn Array) -> Option<Vec<i64>> {
    Some(match a.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => {
            a.as_primitive::<TimestampSecondType>().values().to_vec()
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => a
            .as_primitive::<TimestampMillisecondType>()
            .values()
            .to_vec(),
        DataType::Timestamp(TimeUnit::Microsecond, _) => a
            .as_primitive::<TimestampMicrosecondType>()
            .values()
            .to_vec(),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => a
            .as_primitive::<TimestampNanosecondType>()
            .values()
            .to_vec(),
        DataType::Time32(TimeUnit::Second) => a
            .as_primitive::<Time32SecondType>()
            .values()
            .iter()
            .map(|v| *v as i64)
            .collect(),
        DataType::Time32(_) => a
            .as_primitive::<Time32MillisecondType>()
            .values()
            .iter()
            .map(|v| *v as i64)
            .collect(),
        DataType::Time64(TimeUnit::Microsecond) => {
            a.as_primitive::<Time64MicrosecondType>().values().to_vec()
        }
        DataType::Time64(_) => a.as_primitive::<Time64NanosecondType>().values().to_vec(),
        _ => return None,
    })
}

fn rescale(values: Vec<i64>, from: TimeUnit, to: TimeUnit) -> Vec<i64> {
    let (f, t) = (unit_factor(from), unit_factor(to));
    if f == t {
        values
    } else if t > f {
        let m = t / f;
        values.into_iter().map(|v| v.saturating_mul(m)).collect()
    } else {
        let d = f / t;
        values.into_iter().map(|v| v.div_euclid(d)).collect()
    }
}

fn unit_of(t: &DataType) -> Option<TimeUnit> {
    match t {
        DataType::Timestamp(u, _) | DataType::Time32(u) | DataType::Time64(u) => Some(*u),
        _ => None,
    }
}

/// Converts `array` to `target` (a lake file type). `nullable = false` rejects nulls.
/// Nested arrays (lists, maps, structs) are converted element by element to the target's
/// child types, which carry the lake's names and field ids; their offsets and null buffers
/// are shared.
pub fn to_file_array(
    array: &ArrayRef,
    target: &DataType,
    nullable: bool,
    column: &str,
) -> Result<ArrayRef> {
    to_file_array_within(array, target, nullable, column, None)
}

/// [`to_file_array`] for a child of a struct whose own nulls are `parent`: a null under a null
/// parent is no null of the child's (Arrow leaves the child's slot undefined there).
fn to_file_array_within(
    array: &ArrayRef,
    target: &DataType,
    nullable: bool,
    column: &str,
    parent: Option<&NullBuffer>,
) -> Result<ArrayRef> {
    if !nullable {
        let unmasked = match (array.logical_nulls(), parent) {
            (None, _) => false,
            (Some(nulls), None) => nulls.null_count() > 0,
            (Some(nulls), Some(parent)) => nulls
                .iter()
                .zip(parent.iter())
                .any(|(valid, parent_valid)| parent_valid && !valid),
        };
        if unmasked {
            return Err(Error::invalid_input(format!(
                "column {column} is NOT NULL in the lake table but the batch has nulls"
            )));
        }
    }
    let source = array.data_type();
    let mismatch = || {
        Error::invalid_input(format!(
            "column {column}: cannot write Arrow {source} as lake file type {target}"
        ))
    };
    if source == target {
        return Ok(array.clone());
    }
    let nulls = array.nulls().cloned();
    Ok(match (source, target) {
        (DataType::Null, _) => new_null_array(target, array.len()),
        (DataType::List(_), DataType::List(to)) => {
            let list = array.as_list::<i32>();
            let values = to_file_array(
                list.values(),
                to.data_type(),
                to.is_nullable(),
                &format!("{column}.element"),
            )?;
            Arc::new(ListArray::try_new(
                to.clone(),
                list.offsets().clone(),
                values,
                nulls,
            )?)
        }
        (DataType::Map(_, _), DataType::Map(to, ordered)) => {
            let map = array.as_map();
            // The entries convert as a struct of key and value (anything else is refused).
            let entries: ArrayRef = Arc::new(map.entries().clone());
            let entries = to_file_array(&entries, to.data_type(), false, column)?;
            let entries = entries.as_struct().clone();
            Arc::new(MapArray::try_new(
                to.clone(),
                map.offsets().clone(),
                entries,
                nulls,
                *ordered,
            )?)
        }
        (DataType::Struct(from), DataType::Struct(to)) => {
            if from.len() != to.len() {
                return Err(mismatch());
            }
            let st = array.as_struct();
            let children = st
                .columns()
                .iter()
                .zip(to.iter())
                .map(|(child, field)| {
                    to_file_array_within(
                        child,
                        field.data_type(),
                        field.is_nullable(),
                        &format!("{column}.{}", field.name()),
                        nulls.as_ref(),
                    )
                })
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(to.clone(), children, nulls)?)
        }
        (DataType::Timestamp(..), DataType::Timestamp(to, tz)) => {
            let from = unit_of(source).ok_or_else(mismatch)?;
            let v = rescale(i64_values(array.as_ref()).ok_or_else(mismatch)?, from, *to);
            match to {
                TimeUnit::Second => Arc::new(
                    PrimitiveArray::<TimestampSecondType>::new(v.into(), nulls)
                        .with_timezone_opt(tz.clone()),
                ),
                TimeUnit::Millisecond => Arc::new(
                    PrimitiveArray::<TimestampMillisecondType>::new(v.into(), nulls)
                        .with_timezone_opt(tz.clone()),
                ),
                TimeUnit::Microsecond => Arc::new(
                    PrimitiveArray::<TimestampMicrosecondType>::new(v.into(), nulls)
                        .with_timezone_opt(tz.clone()),
                ),
                TimeUnit::Nanosecond => Arc::new(
                    PrimitiveArray::<TimestampNanosecondType>::new(v.into(), nulls)
                        .with_timezone_opt(tz.clone()),
                ),
            }
        }
        (DataType::Time32(_) | DataType::Time64(_), DataType::Time32(TimeUnit::Millisecond)) => {
            let from = unit_of(source).ok_or_else(mismatch)?;
            let v = rescale(
                i64_values(array.as_ref()).ok_or_else(mismatch)?,
                from,
                TimeUnit::Millisecond,
            );
            let v: Vec<i32> = v.into_iter().map(|x| x as i32).collect();
            Arc::new(PrimitiveArray::<Time32MillisecondType>::new(
                v.into(),
                nulls,
            ))
        }
        (DataType::Time32(_) | DataType::Time64(_), DataType::Time64(TimeUnit::Microsecond)) => {
            let from = unit_of(source).ok_or_else(mismatch)?;
            let v = rescale(
                i64_values(array.as_ref()).ok_or_else(mismatch)?,
                from,
                TimeUnit::Microsecond,
            );
            Arc::new(PrimitiveArray::<Time64MicrosecondType>::new(
                v.into(),
                nulls,
            ))
        }
        (DataType::Int8, DataType::Int32) => Arc::new(PrimitiveArray::<Int32Type>::new(
            array
                .as_primitive::<Int8Type>()
                .values()
                .iter()
                .map(|v| *v as i32)
                .collect(),
            nulls,
        )),
        (DataType::Int16, DataType::Int32) => Arc::new(PrimitiveArray::<Int32Type>::new(
            array
                .as_primitive::<Int16Type>()
                .values()
                .iter()
                .map(|v| *v as i32)
                .collect(),
            nulls,
        )),
        (DataType::FixedSizeBinary(_), DataType::Binary) => {
            Arc::new(array.as_fixed_size_binary().iter().collect::<BinaryArray>())
        }
        (DataType::LargeBinary, DataType::Binary) => {
            Arc::new(array.as_binary::<i64>().iter().collect::<BinaryArray>())
        }
        (DataType::LargeUtf8, DataType::Utf8) => Arc::new(
            array
                .as_string::<i64>()
                .iter()
                .collect::<arrow_array::StringArray>(),
        ),
        (DataType::Decimal128(_, s1), DataType::Decimal128(p2, s2)) if s1 == s2 => Arc::new(
            array
                .as_primitive::<Decimal128Type>()
                .clone()
                .with_precision_and_scale(*p2, *s2)
                .map_err(|_| mismatch())?,
        ),
        _ => return Err(mismatch()),
    })
}

/// A column of `len` copies of `v` (the `__bucket` system column).
pub fn constant_i32(v: i32, len: usize) -> ArrayRef {
    Arc::new(PrimitiveArray::<Int32Type>::from(vec![v; len]))
}

/// An Int64 column (the `__offset` system column).
pub fn i64_column(values: &[i64]) -> ArrayRef {
    Arc::new(PrimitiveArray::<Int64Type>::from(values.to_vec()))
}

/// Epoch-millis values as a timestamp column of `target` type (the `__timestamp` column).
pub fn millis_column(values: &[i64], target: &DataType) -> Result<ArrayRef> {
    let millis: ArrayRef = Arc::new(PrimitiveArray::<TimestampMillisecondType>::from(
        values.to_vec(),
    ));
    to_file_array(&millis, target, true, "__timestamp")
}

#[cfg(test)]
mod tests {
    use arrow_array::{
        FixedSizeBinaryArray, Time32SecondArray, TimestampMicrosecondArray, TimestampSecondArray,
    };

    use super::*;

    #[test]
    fn converts_fluss_arrow_types() {
        let ts: ArrayRef = Arc::new(TimestampSecondArray::from(vec![Some(1), None]));
        let out = to_file_array(
            &ts,
            &DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
            "t",
        )
        .unwrap();
        assert_eq!(
            out.as_primitive::<TimestampMillisecondType>().value(0),
            1000
        );
        assert!(out.is_null(1));

        let us: ArrayRef =
            Arc::new(TimestampMicrosecondArray::from(vec![1_500]).with_timezone("UTC"));
        let target = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        assert_eq!(
            to_file_array(&us, &target, true, "t").unwrap().data_type(),
            &target
        );

        let t: ArrayRef = Arc::new(Time32SecondArray::from(vec![3]));
        let out = to_file_array(&t, &DataType::Time32(TimeUnit::Millisecond), true, "t").unwrap();
        assert_eq!(out.as_primitive::<Time32MillisecondType>().value(0), 3000);

        let fsb: ArrayRef = Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                vec![Some(vec![1u8, 2]), None].into_iter(),
                2,
            )
            .unwrap(),
        );
        let out = to_file_array(&fsb, &DataType::Binary, true, "b").unwrap();
        assert_eq!(out.as_binary::<i32>().value(0), &[1, 2]);

        let t: ArrayRef = Arc::new(Time32SecondArray::from(vec![Some(2), None]));
        let out = to_file_array(&t, &DataType::Time64(TimeUnit::Microsecond), true, "t").unwrap();
        assert_eq!(
            out.as_primitive::<Time64MicrosecondType>().value(0),
            2_000_000
        );
        assert!(out.is_null(1));

        let small: ArrayRef = Arc::new(PrimitiveArray::<Int16Type>::from(vec![Some(-3), None]));
        let out = to_file_array(&small, &DataType::Int32, true, "s").unwrap();
        assert_eq!(out.as_primitive::<Int32Type>().value(0), -3);
        assert!(out.is_null(1));
        let tiny: ArrayRef = Arc::new(PrimitiveArray::<Int8Type>::from(vec![7]));
        let out = to_file_array(&tiny, &DataType::Int32, true, "t").unwrap();
        assert_eq!(out.as_primitive::<Int32Type>().value(0), 7);

        let ints: ArrayRef = Arc::new(PrimitiveArray::<Int32Type>::from(vec![Some(1), None]));
        assert!(to_file_array(&ints, &DataType::Int32, false, "i").is_err());
        assert!(to_file_array(&ints, &DataType::Int64, true, "i").is_err());
    }

    #[test]
    fn converts_nested_arrays_to_the_lake_names_and_child_types() {
        use arrow_array::builder::{Int16Builder, ListBuilder, MapBuilder, StringBuilder};
        use arrow_schema::{Field, Fields};

        // ARRAY<SMALLINT> as fluss-rs sends it (`item`) to a list of INT32 `element`s.
        let mut lb = ListBuilder::new(Int16Builder::new());
        lb.append_value([Some(1), None]);
        lb.append_null();
        let list: ArrayRef = Arc::new(lb.finish());
        let element = Arc::new(Field::new("element", DataType::Int32, true));
        let out = to_file_array(&list, &DataType::List(element.clone()), true, "l").unwrap();
        let out = out.as_list::<i32>();
        assert_eq!(out.value(0).as_primitive::<Int32Type>().value(0), 1);
        assert!(out.is_null(1));
        let strict = Arc::new(Field::new("element", DataType::Int32, false));
        let e = to_file_array(&list, &DataType::List(strict), true, "l").unwrap_err();
        assert!(
            e.to_string().contains("column l.element is NOT NULL"),
            "{e}"
        );

        // MAP<STRING, STRING> (`entries`/`key`/`value`) to Parquet's `key_value`.
        let mut mb = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
        mb.keys().append_value("k");
        mb.values().append_null();
        mb.append(true).unwrap();
        mb.append(false).unwrap();
        let map: ArrayRef = Arc::new(mb.finish());
        let kv = Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, true),
        ]);
        let target = DataType::Map(
            Arc::new(Field::new("key_value", DataType::Struct(kv), false)),
            false,
        );
        let out = to_file_array(&map, &target, true, "m").unwrap();
        assert_eq!(out.data_type(), &target);
        assert!(out.is_null(1));

        // ROW<x TIMESTAMP(0) NOT NULL>: a null row's child slot may be null; a valid row's not.
        let from = Fields::from(vec![Field::new(
            "x",
            DataType::Timestamp(TimeUnit::Second, None),
            true,
        )]);
        let child: ArrayRef = Arc::new(TimestampSecondArray::from(vec![Some(2), None]));
        let row: ArrayRef = Arc::new(
            StructArray::try_new(
                from.clone(),
                vec![child.clone()],
                Some(NullBuffer::from(vec![true, false])),
            )
            .unwrap(),
        );
        let to = DataType::Struct(Fields::from(vec![Field::new(
            "x",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        )]));
        let out = to_file_array(&row, &to, true, "r").unwrap();
        let x = out
            .as_struct()
            .column(0)
            .as_primitive::<TimestampMillisecondType>();
        assert_eq!(x.value(0), 2000);
        assert!(out.is_null(1));
        let unmasked: ArrayRef = Arc::new(StructArray::try_new(from, vec![child], None).unwrap());
        let e = to_file_array(&unmasked, &to, true, "r").unwrap_err();
        assert!(e.to_string().contains("column r.x is NOT NULL"), "{e}");
    }
}
