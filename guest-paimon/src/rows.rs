//! Turning Fluss row batches into rows of the Paimon table: the columns in the Arrow types
//! whose Parquet encoding is Paimon's ([`crate::convert`]), in the lake table's column order,
//! nulls for lake columns Fluss does not have, and the Fluss system columns (`__bucket`, `__offset`, `__timestamp`) filled
//! from the batch's bucket, log offsets and commit timestamps, as Fluss's
//! `FlussRecordAsPaimonRow` does. Append and primary-key writers share it: both store whole
//! table rows (the primary-key writer wraps them in its key/value layout).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use fluss_lake_guest_sdk::{Error, Result};

use crate::schema::{ColumnSource, TableLayout, WriteLayout};
use fluss_lake_guest_sdk::convert::{constant_i32, i64_column, millis_column, to_file_array};

/// The Arrow schema of the table's rows in data files: Paimon's field ids and file types
/// ([`crate::types::PaimonType::arrow_field`]).
pub fn table_file_schema(layout: &TableLayout) -> SchemaRef {
    Arc::new(Schema::new(
        layout
            .fields
            .iter()
            .map(|(name, ty, id)| ty.arrow_field(name, *id))
            .collect::<Vec<_>>(),
    ))
}

/// Converts the batches of one Fluss bucket into table rows.
#[derive(Debug, Clone)]
pub struct TableRows {
    layout: WriteLayout,
    schema: SchemaRef,
    fluss_bucket: i32,
}

impl TableRows {
    /// A converter for batches read from Fluss bucket `fluss_bucket`, written as `layout` says.
    pub fn new(layout: WriteLayout, fluss_bucket: i32) -> TableRows {
        TableRows {
            schema: table_file_schema(&layout.table),
            layout,
            fluss_bucket,
        }
    }

    /// The table layout.
    pub fn layout(&self) -> &TableLayout {
        &self.layout.table
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
        if batch.num_columns() != self.layout.fluss_columns {
            return Err(Error::invalid_input(format!(
                "batch has {} columns, the Fluss table {}",
                batch.num_columns(),
                self.layout.fluss_columns
            )));
        }
        let n = batch.num_rows();
        let fields = &self.layout.table.fields;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields.len());
        for (i, ((name, ty, _), source)) in fields.iter().zip(&self.layout.sources).enumerate() {
            let target = self.schema.field(i).data_type();
            let col = match *source {
                ColumnSource::Fluss(c) => {
                    to_file_array(batch.column(c), target, ty.nullable, name)?
                }
                ColumnSource::Null => arrow_array::new_null_array(target, n),
                ColumnSource::Bucket => constant_i32(self.fluss_bucket, n),
                ColumnSource::Offset => i64_column(offsets),
                ColumnSource::Timestamp => millis_column(timestamps, target)?,
            };
            columns.push(col);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}
