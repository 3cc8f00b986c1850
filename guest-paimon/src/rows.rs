//! Turning Fluss row batches into rows of the Paimon table: the columns in the Arrow types
//! whose Parquet encoding is Paimon's ([`crate::convert`]), nulls for lake columns Fluss does
//! not send yet, and the Fluss system columns (`__bucket`, `__offset`, `__timestamp`) filled
//! from the batch's bucket, log offsets and commit timestamps, as Fluss's
//! `FlussRecordAsPaimonRow` does. Append and primary-key writers share it: both store whole
//! table rows (the primary-key writer wraps them in its key/value layout).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use fluss_lake_guest_sdk::arrow_util::PARQUET_FIELD_ID_KEY;
use fluss_lake_guest_sdk::{Error, Result};

use crate::schema::TableLayout;
use fluss_lake_guest_sdk::convert::{constant_i32, i64_column, millis_column, to_file_array};

/// The Arrow schema of the table's rows in data files: Paimon's field ids and the file types
/// of [`crate::types::PaimonType::arrow_file_type`].
pub fn table_file_schema(layout: &TableLayout) -> SchemaRef {
    Arc::new(Schema::new(
        layout
            .fields
            .iter()
            .map(|(name, ty, id)| {
                let mut md = ty.arrow_field_metadata();
                md.insert(PARQUET_FIELD_ID_KEY.to_string(), id.to_string());
                Field::new(name, ty.arrow_file_type(), ty.nullable).with_metadata(md)
            })
            .collect::<Vec<_>>(),
    ))
}

/// Converts the batches of one Fluss bucket into table rows.
#[derive(Debug, Clone)]
pub struct TableRows {
    layout: TableLayout,
    schema: SchemaRef,
    fluss_columns: usize,
    fluss_bucket: i32,
}

impl TableRows {
    /// A converter for batches of `fluss_columns` columns read from Fluss bucket `fluss_bucket`.
    pub fn new(layout: TableLayout, fluss_columns: usize, fluss_bucket: i32) -> TableRows {
        TableRows {
            schema: table_file_schema(&layout),
            layout,
            fluss_columns,
            fluss_bucket,
        }
    }

    /// The table layout.
    pub fn layout(&self) -> &TableLayout {
        &self.layout
    }

    /// The schema of converted batches.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The table rows of `batch`, whose rows have the given log offsets and commit timestamps.
    pub fn convert(
        &self,
        batch: &RecordBatch,
        offsets: &[i64],
        timestamps: &[i64],
    ) -> Result<RecordBatch> {
        if batch.num_columns() != self.fluss_columns {
            return Err(Error::invalid_input(format!(
                "batch has {} columns, the Fluss table {}",
                batch.num_columns(),
                self.fluss_columns
            )));
        }
        let n = batch.num_rows();
        let layout = &self.layout;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(layout.fields.len());
        for (i, (name, ty, _)) in layout.fields.iter().enumerate() {
            let target = self.schema.field(i).data_type();
            let col = if i < self.fluss_columns {
                to_file_array(batch.column(i), target, ty.nullable, name)?
            } else if i < layout.business_columns {
                arrow_array::new_null_array(target, n)
            } else {
                match i - layout.business_columns {
                    0 => constant_i32(self.fluss_bucket, n),
                    1 => i64_column(offsets),
                    _ => millis_column(timestamps, target)?,
                }
            };
            columns.push(col);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}
