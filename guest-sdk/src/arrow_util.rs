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
    }
}
