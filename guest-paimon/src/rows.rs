//! Turning Fluss row batches into rows of the Paimon table: the columns in the Arrow types
//! whose Parquet encoding is Paimon's ([`crate::convert`]), in the lake table's column order,
//! nulls for lake columns Fluss does not have, and the Fluss system columns (`__bucket`, `__offset`, `__timestamp`) filled
//! from the batch's bucket, log offsets and commit timestamps, as Fluss's
//! `FlussRecordAsPaimonRow` does. Append and primary-key writers share it: both store whole
//! table rows (the primary-key writer wraps them in its key/value layout).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use fluss_lake_guest_sdk::file_columns::FileColumns;
use fluss_lake_guest_sdk::{Error, Result};

use crate::schema::{TableLayout, WriteLayout};

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
    columns: FileColumns,
    fluss_bucket: i32,
}

impl TableRows {
    /// A converter for batches read from Fluss bucket `fluss_bucket`, written as `layout` says.
    pub fn new(layout: WriteLayout, fluss_bucket: i32) -> Result<TableRows> {
        let columns = FileColumns::new(table_file_schema(&layout.table), layout.sources.clone())?;
        Ok(TableRows {
            columns,
            layout,
            fluss_bucket,
        })
    }

    /// The table layout.
    pub fn layout(&self) -> &TableLayout {
        &self.layout.table
    }

    /// The schema of converted batches.
    pub fn schema(&self) -> &SchemaRef {
        self.columns.schema()
    }

    /// The data files' columns and where each comes from.
    pub fn columns(&self) -> &FileColumns {
        &self.columns
    }

    /// The Fluss bucket the rows are read from (the `__bucket` column's value).
    pub fn fluss_bucket(&self) -> i32 {
        self.fluss_bucket
    }

    /// Checks that `batch` has the Fluss table's columns.
    pub fn check_columns(&self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.layout.fluss_columns {
            return Err(Error::invalid_input(format!(
                "batch has {} columns, the Fluss table {}",
                batch.num_columns(),
                self.layout.fluss_columns
            )));
        }
        Ok(())
    }

    /// The table rows of `batch`, whose rows have the given log offsets and commit timestamps.
    pub fn convert(
        &self,
        batch: &RecordBatch,
        offsets: &[i64],
        timestamps: &[i64],
    ) -> Result<RecordBatch> {
        self.check_columns(batch)?;
        Ok(self
            .columns
            .assemble(batch, offsets, timestamps, self.fluss_bucket)?)
    }
}
