//! Decoding of the WIT `row-batch`: an Arrow IPC stream plus per-row change types, log
//! offsets and commit timestamps.
//!
//! The IPC bytes are handed to arrow-ipc's `StreamDecoder` as an owned buffer, so column
//! buffers point into the bytes the host passed (no copy) whenever they are suitably aligned.

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_ipc::reader::StreamDecoder;
use arrow_schema::SchemaRef;

use crate::bindings::fluss::lake::types::RowBatch;
use crate::error::{Error, Result};

/// Fluss `ChangeType`, with its byte values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeType {
    /// `+A` (0): a row of a log table.
    AppendOnly,
    /// `+I` (1).
    Insert,
    /// `-U` (2).
    UpdateBefore,
    /// `+U` (3).
    UpdateAfter,
    /// `-D` (4).
    Delete,
}

impl ChangeType {
    /// From the Fluss byte value.
    pub fn from_byte(b: u8) -> Result<ChangeType> {
        Ok(match b {
            0 => ChangeType::AppendOnly,
            1 => ChangeType::Insert,
            2 => ChangeType::UpdateBefore,
            3 => ChangeType::UpdateAfter,
            4 => ChangeType::Delete,
            _ => {
                return Err(Error::invalid_input(format!(
                    "unknown change type byte {b}"
                )));
            }
        })
    }
    /// The Fluss byte value.
    pub fn to_byte(self) -> u8 {
        match self {
            ChangeType::AppendOnly => 0,
            ChangeType::Insert => 1,
            ChangeType::UpdateBefore => 2,
            ChangeType::UpdateAfter => 3,
            ChangeType::Delete => 4,
        }
    }
    /// True for `+A` and `+I`: rows that only add data.
    pub fn is_addition(self) -> bool {
        matches!(self, ChangeType::AppendOnly | ChangeType::Insert)
    }
}

/// A decoded `row-batch`.
#[derive(Debug, Clone)]
pub struct DecodedBatch {
    /// The rows, columns in table schema order with Fluss's Arrow types.
    pub batch: RecordBatch,
    /// Change type bytes per row; empty means every row is `+A`.
    pub change_types: Vec<u8>,
    /// Fluss log offset of each row.
    pub log_offsets: Vec<i64>,
    /// Commit timestamp (epoch millis) of each row; `-1` for KV-snapshot rows.
    pub timestamps: Vec<i64>,
}

impl DecodedBatch {
    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }
    /// The change type of row `i`.
    pub fn change_type(&self, i: usize) -> Result<ChangeType> {
        match self.change_types.get(i) {
            None if self.change_types.is_empty() => Ok(ChangeType::AppendOnly),
            None => Err(Error::invalid_input(format!("no change type for row {i}"))),
            Some(b) => ChangeType::from_byte(*b),
        }
    }
    /// True when every row only adds data (`+A`/`+I`), as log tables require.
    pub fn is_insert_only(&self) -> bool {
        self.change_types.iter().all(|b| *b <= 1)
    }
    /// First and last log offset, if any row.
    pub fn offset_range(&self) -> Option<(i64, i64)> {
        Some((*self.log_offsets.first()?, *self.log_offsets.last()?))
    }
}

/// Decodes every record batch of an Arrow IPC stream, returning the stream's schema too.
pub fn decode_ipc_stream(bytes: Vec<u8>) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let mut buffer = Buffer::from_vec(bytes);
    let mut decoder = StreamDecoder::new();
    let mut batches = Vec::new();
    while !buffer.is_empty() {
        match decoder.decode(&mut buffer)? {
            Some(batch) => batches.push(batch),
            None => {
                if buffer.is_empty() {
                    break;
                }
            }
        }
    }
    decoder.finish()?;
    let schema = decoder
        .schema()
        .ok_or_else(|| Error::invalid_input("Arrow IPC stream without a schema message"))?;
    Ok((schema, batches))
}

/// Decodes a WIT `row-batch`, checking that the per-row vectors match the row count. Several
/// record batches in one stream are concatenated.
pub fn decode_row_batch(row_batch: RowBatch) -> Result<DecodedBatch> {
    let RowBatch {
        ipc,
        change_types,
        log_offsets,
        timestamps,
    } = row_batch;
    let (schema, mut batches) = decode_ipc_stream(ipc)?;
    let batch = match batches.len() {
        0 => RecordBatch::new_empty(schema),
        1 => batches.pop().expect("one batch"),
        _ => arrow_select_concat(&schema, &batches)?,
    };
    let n = batch.num_rows();
    if log_offsets.len() != n || timestamps.len() != n {
        return Err(Error::invalid_input(format!(
            "row batch has {n} rows but {} log offsets and {} timestamps",
            log_offsets.len(),
            timestamps.len()
        )));
    }
    if !change_types.is_empty() && change_types.len() != n {
        return Err(Error::invalid_input(format!(
            "row batch has {n} rows but {} change types",
            change_types.len()
        )));
    }
    Ok(DecodedBatch {
        batch,
        change_types,
        log_offsets,
        timestamps,
    })
}

fn arrow_select_concat(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    let columns = (0..schema.fields().len())
        .map(|i| {
            let arrays: Vec<&dyn arrow_array::Array> =
                batches.iter().map(|b| b.column(i).as_ref()).collect();
            crate::arrow_util::concat(&arrays)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// Encodes record batches as an Arrow IPC stream, as the host does; for tests and native
/// benchmarks that build `row-batch`es themselves.
pub fn encode_ipc_stream(batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let schema = batches
        .first()
        .map(|b| b.schema())
        .ok_or_else(|| Error::invalid_input("no batch to encode"))?;
    let mut out = Vec::new();
    {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &schema)?;
        for b in batches {
            w.write(b)?;
        }
        w.finish()?;
    }
    Ok(out)
}

/// Builds a WIT `row-batch` of append-only rows with consecutive offsets from `first_offset`
/// and a constant commit timestamp; for tests and benchmarks.
pub fn make_row_batch(batch: &RecordBatch, first_offset: i64, timestamp: i64) -> Result<RowBatch> {
    let n = batch.num_rows() as i64;
    Ok(RowBatch {
        ipc: encode_ipc_stream(std::slice::from_ref(batch))?,
        change_types: Vec::new(),
        log_offsets: (first_offset..first_offset + n).collect(),
        timestamps: vec![timestamp; n as usize],
    })
}

/// Builds a WIT `row-batch` of a primary-key table's changelog: per-row change types,
/// consecutive offsets from `first_offset` and a constant commit timestamp; for tests and
/// benchmarks.
pub fn make_changelog_batch(
    batch: &RecordBatch,
    change_types: &[ChangeType],
    first_offset: i64,
    timestamp: i64,
) -> Result<RowBatch> {
    if change_types.len() != batch.num_rows() {
        return Err(Error::invalid_input(format!(
            "{} change types for {} rows",
            change_types.len(),
            batch.num_rows()
        )));
    }
    let mut row_batch = make_row_batch(batch, first_offset, timestamp)?;
    row_batch.change_types = change_types.iter().map(|c| c.to_byte()).collect();
    Ok(row_batch)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    #[test]
    fn round_trip() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![1, 2, 3])),
                Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
            ],
        )
        .unwrap();
        let rb = make_row_batch(&batch, 10, 1000).unwrap();
        let decoded = decode_row_batch(rb).unwrap();
        assert_eq!(decoded.batch, batch);
        assert_eq!(decoded.log_offsets, vec![10, 11, 12]);
        assert_eq!(decoded.offset_range(), Some((10, 12)));
        assert!(decoded.is_insert_only());
        assert_eq!(decoded.change_type(2).unwrap(), ChangeType::AppendOnly);

        let changes = [
            ChangeType::Insert,
            ChangeType::UpdateBefore,
            ChangeType::Delete,
        ];
        let cl = decode_row_batch(make_changelog_batch(&batch, &changes, 5, 1).unwrap()).unwrap();
        assert_eq!(cl.change_type(1).unwrap(), ChangeType::UpdateBefore);
        assert!(!cl.is_insert_only());
        assert!(make_changelog_batch(&batch, &changes[..1], 0, 0).is_err());

        let mut bad = make_row_batch(&batch, 0, 0).unwrap();
        bad.log_offsets.pop();
        assert!(decode_row_batch(bad).is_err());
    }
}
