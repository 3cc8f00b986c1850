//! Fluss bucket batches into the contract's row batches: one Arrow IPC stream per batch plus
//! the per-row change types, offsets and timestamps. This is the one place that knows both
//! Fluss's batches and the plugin contract's.

use arrow::array::RecordBatch;
use arrow::ipc::writer::StreamWriter;
use tokio::sync::mpsc;

use crate::error::{Error, ErrorKind, Result};
use crate::fluss::reader::BucketBatch;
use crate::plugin::wit;

/// A batch ready for a plugin, with what the round needs to know about it.
pub struct EncodedBatch {
    pub batch: wit::RowBatch,
    pub rows: usize,
    /// Exclusive offset after the batch's last row.
    pub end_offset: i64,
    pub max_timestamp: Option<i64>,
}

pub fn encode(batch: BucketBatch) -> Result<EncodedBatch> {
    Ok(EncodedBatch {
        rows: batch.num_rows(),
        end_offset: batch.end_offset(),
        max_timestamp: batch.max_timestamp(),
        batch: wit::RowBatch {
            ipc: encode_ipc(&batch.rows)?,
            change_types: batch.change_types,
            log_offsets: batch.offsets,
            timestamps: batch.timestamps,
        },
    })
}

/// Encodes every batch from `rx` into `tx`, so that encoding the next batch overlaps with
/// the plugin writing the previous one. Ends when either side closes.
pub async fn encode_all(
    mut rx: mpsc::Receiver<BucketBatch>,
    tx: mpsc::Sender<EncodedBatch>,
) -> Result<()> {
    while let Some(batch) = rx.recv().await {
        if tx.send(encode(batch)?).await.is_err() {
            break;
        }
    }
    Ok(())
}

/// One Arrow IPC stream: schema, the batch, end-of-stream.
pub fn encode_ipc(batch: &RecordBatch) -> Result<Vec<u8>> {
    let ipc_err = |e: arrow::error::ArrowError| {
        Error::new(ErrorKind::Internal, "Arrow IPC encoding").with_source(e)
    };
    let mut writer = StreamWriter::try_new(Vec::new(), &batch.schema()).map_err(ipc_err)?;
    writer.write(batch).map_err(ipc_err)?;
    writer.finish().map_err(ipc_err)?;
    writer.into_inner().map_err(ipc_err)
}
