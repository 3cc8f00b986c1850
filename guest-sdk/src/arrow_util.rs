//! Small Arrow helpers the SDK needs without pulling in arrow's compute kernels (which would
//! bloat every plugin's WebAssembly binary).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef};

use crate::error::{Error, Result};

/// The Arrow field-metadata key arrow-rs turns into a Parquet `field_id`.
pub const PARQUET_FIELD_ID_KEY: &str = "PARQUET:field_id";

/// A field carrying a Parquet field id (`PARQUET:field_id` metadata).
pub fn field_with_id(name: &str, data_type: DataType, nullable: bool, id: i32) -> Field {
    Field::new(name, data_type, nullable).with_metadata(HashMap::from([(
        PARQUET_FIELD_ID_KEY.to_string(),
        id.to_string(),
    )]))
}

/// Concatenates arrays of one type into one array.
pub fn concat(arrays: &[&dyn Array]) -> Result<ArrayRef> {
    if arrays.is_empty() {
        return Err(Error::internal("concat of no arrays"));
    }
    Ok(arrow_select::concat::concat(arrays)?)
}

/// Gathers rows from several batches of one schema into a new batch: row `k` of the result is
/// row `indices[k].1` of batch `indices[k].0`. This is how sorted runs are materialized from
/// buffered batches without concatenating the whole buffer first.
pub fn interleave_batches(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    indices: &[(usize, usize)],
) -> Result<RecordBatch> {
    let columns = (0..schema.fields().len())
        .map(|c| {
            let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
            Ok(arrow_select::interleave::interleave(&arrays, indices)?)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// An owned, hashable encoding of each row's values of `columns` (for key lookups such as
/// "was this primary key written earlier in this round"): equal values give equal keys.
pub fn row_keys(columns: &[&dyn Array]) -> Result<Vec<Vec<u8>>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    let rows = columns.first().map_or(0, |c| c.len());
    let mut keys = vec![Vec::new(); rows];
    for col in columns {
        macro_rules! prim {
            ($a:expr) => {{
                let a = $a;
                for (i, k) in keys.iter_mut().enumerate() {
                    if a.is_null(i) {
                        k.push(0);
                    } else {
                        k.push(1);
                        k.extend_from_slice(&a.value(i).to_le_bytes());
                    }
                }
            }};
        }
        macro_rules! bytes {
            ($a:expr) => {{
                let a = $a;
                for (i, k) in keys.iter_mut().enumerate() {
                    if a.is_null(i) {
                        k.push(0);
                    } else {
                        let v: &[u8] = a.value(i).as_ref();
                        k.push(1);
                        k.extend_from_slice(&(v.len() as u32).to_le_bytes());
                        k.extend_from_slice(v);
                    }
                }
            }};
        }
        match col.data_type() {
            DataType::Boolean => {
                let a = col.as_boolean();
                for (i, k) in keys.iter_mut().enumerate() {
                    k.push(if a.is_null(i) {
                        0
                    } else {
                        1 + a.value(i) as u8
                    });
                }
            }
            DataType::Int8 => prim!(col.as_primitive::<Int8Type>()),
            DataType::Int16 => prim!(col.as_primitive::<Int16Type>()),
            DataType::Int32 | DataType::Date32 | DataType::Time32(_) => {
                let data = col.to_data().into_builder().data_type(DataType::Int32);
                prim!(&arrow_array::PrimitiveArray::<Int32Type>::from(
                    data.build()?
                ))
            }
            DataType::Int64
            | DataType::Date64
            | DataType::Time64(_)
            | DataType::Timestamp(_, _) => {
                let data = col.to_data().into_builder().data_type(DataType::Int64);
                prim!(&arrow_array::PrimitiveArray::<Int64Type>::from(
                    data.build()?
                ))
            }
            DataType::Float32 => prim!(col.as_primitive::<Float32Type>()),
            DataType::Float64 => prim!(col.as_primitive::<Float64Type>()),
            DataType::Decimal128(_, _) => prim!(col.as_primitive::<Decimal128Type>()),
            DataType::Utf8 => bytes!(col.as_string::<i32>()),
            DataType::LargeUtf8 => bytes!(col.as_string::<i64>()),
            DataType::Binary => bytes!(col.as_binary::<i32>()),
            DataType::LargeBinary => bytes!(col.as_binary::<i64>()),
            DataType::FixedSizeBinary(_) => bytes!(col.as_fixed_size_binary()),
            other => {
                return Err(Error::unsupported(format!(
                    "key column of type {other} is not supported"
                )));
            }
        }
    }
    Ok(keys)
}

/// Bytes of the values a batch holds, counting only the slices its arrays view: arrays
/// decoded from an IPC message share that message's buffer, which Arrow's own
/// `get_array_memory_size` would count once per column. For bounding buffered data.
pub fn slice_memory_size(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
        .sum()
}

/// `Arc` helper.
pub fn arc(array: impl Array + 'static) -> ArrayRef {
    Arc::new(array)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::Schema;

    use super::*;

    #[test]
    fn interleaves_rows_of_several_batches() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = |i: Vec<i32>, s: Vec<Option<&str>>| {
            RecordBatch::try_new(
                schema.clone(),
                vec![arc(Int32Array::from(i)), arc(StringArray::from(s))],
            )
            .unwrap()
        };
        let a = batch(vec![1, 2], vec![Some("a"), None]);
        let b = batch(vec![3], vec![Some("c")]);
        let out = interleave_batches(&schema, &[a.clone(), b], &[(1, 0), (0, 1), (0, 0)]).unwrap();
        assert_eq!(out, batch(vec![3, 2, 1], vec![Some("c"), None, Some("a")]));
        let size = slice_memory_size(&a);
        assert!((2 * 4 + 2..200).contains(&size), "{size}");
        assert!(slice_memory_size(&a.slice(0, 1)) < size);

        let ints = Int32Array::from(vec![Some(1), Some(1), None, Some(2)]);
        let strs = StringArray::from(vec![Some("x"), Some("x"), Some("x"), Some("x")]);
        let keys = row_keys(&[&ints, &strs]).unwrap();
        assert_eq!(keys[0], keys[1]);
        assert_ne!(keys[0], keys[2]);
        assert_ne!(keys[0], keys[3]);
    }
}
