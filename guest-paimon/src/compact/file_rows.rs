//! Reading a data file's rows back for compaction: through the SDK's
//! [`ParquetFileReader`] (a row group at a time) and conformed to the Arrow schema this
//! plugin writes, so that files written by Java Paimon (whose Parquet schema reads back with
//! other time zone annotations or decimal precisions) merge with this plugin's own.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, make_array};
use arrow_schema::{DataType, SchemaRef};
use fluss_lake_guest_sdk::convert::to_file_array;
use fluss_lake_guest_sdk::parquet_read::{ParquetFileReader, ReadLimits};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt};

use crate::manifest::DataFileMeta;

/// Rows per batch read during compaction: every merged run holds one such batch decoded.
pub const READ_BATCH_ROWS: usize = 2048;

/// Opens data file `meta` of the bucket directory `dir`.
pub fn open<'a>(
    storage: &'a dyn Storage,
    dir: &str,
    meta: &DataFileMeta,
) -> Result<ParquetFileReader<'a>> {
    let path = format!("{dir}/{}", meta.file_name);
    let limits = ReadLimits {
        batch_rows: READ_BATCH_ROWS,
        ..ReadLimits::default()
    };
    ParquetFileReader::open(storage, &path, Some(meta.file_size.max(0) as u64), limits)
        .with_context(|| format!("opening {path}"))
}

/// True when arrays of type `from` hold the values of type `to` bit for bit.
fn same_values(from: &DataType, to: &DataType) -> bool {
    match (from, to) {
        (DataType::Timestamp(a, _), DataType::Timestamp(b, _)) => a == b,
        (DataType::Decimal128(_, a), DataType::Decimal128(_, b)) => a == b,
        _ => false,
    }
}

/// `batch`'s columns in the order, types and field metadata of `schema`, looked up by name.
/// Fails with `unsupported` when a column is missing or of another type (a file of an older
/// schema or another writer's encoding).
pub fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let (i, _) = batch
                .schema()
                .column_with_name(field.name())
                .ok_or_else(|| {
                    Error::unsupported(format!(
                        "a data file without column {}: written with another schema",
                        field.name()
                    ))
                })?;
            let column = batch.column(i);
            if column.data_type() == field.data_type() {
                return Ok(column.clone());
            }
            if same_values(column.data_type(), field.data_type()) {
                let data = column
                    .to_data()
                    .into_builder()
                    .data_type(field.data_type().clone())
                    .build()?;
                return Ok(make_array(data));
            }
            // Nested columns read back with the names and field ids of the file's writer on
            // their children: rebuilt with the table's, values shared.
            let nested = matches!(
                field.data_type(),
                DataType::List(_) | DataType::Map(..) | DataType::Struct(_)
            );
            if nested
                && let Ok(column) =
                    to_file_array(column, field.data_type(), field.is_nullable(), field.name())
            {
                return Ok(column);
            }
            Err(Error::unsupported(format!(
                "column {} of a data file reads as {}, not {}",
                field.name(),
                column.data_type(),
                field.data_type()
            )))
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}
