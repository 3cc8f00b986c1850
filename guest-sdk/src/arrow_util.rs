//! Small Arrow helpers the SDK needs without pulling in arrow's compute kernels (which would
//! bloat every plugin's WebAssembly binary).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, Field};

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

/// `Arc` helper.
pub fn arc(array: impl Array + 'static) -> ArrayRef {
    Arc::new(array)
}
