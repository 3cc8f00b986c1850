//! Fluss bucket batches into what a plugin's writer takes: a batch kept in the host for a
//! `batch-writer` (contract 0.3.8, [`Payload::Host`]), or the contract's row batch for a
//! `writer`, one Arrow IPC stream per batch plus the per-row change types, offsets and
//! timestamps ([`Payload::Ipc`]). This is the one place that knows both Fluss's batches and
//! the plugin contract's.
//!
//! Row batches are coalesced on the way: while the plugin is busy writing one row batch, the
//! batches read meanwhile are gathered into the next one (up to [`MAX_BATCH_ROWS`] rows or
//! [`MAX_BATCH_BYTES`] bytes), so each call into the plugin carries as many rows as are ready,
//! and a plugin that keeps up still gets every batch as soon as it is read. Batches kept in the
//! host are gathered the same way but not joined: the encoder takes them one after the other,
//! and joining would copy every row once more and hold both copies.

use tokio::sync::mpsc;

use crate::error::Result;
use crate::fluss::reader::BucketBatch;
use crate::plugin::data_plane::{HostRows, column_bytes};
use crate::plugin::wit;

/// Most rows gathered into one row batch.
pub const MAX_BATCH_ROWS: usize = 128 * 1024;
/// Most column bytes gathered into one row batch; a single fetched batch larger than this is
/// passed on alone, as Fluss stored it.
pub const MAX_BATCH_BYTES: usize = 4 << 20;
/// Most column bytes gathered into one batch kept in the host: small batches (a table written
/// a few rows at a time) are still handed over together, while a batch as Fluss writes them
/// under load (about a MiB) goes alone, so less waits for the encoder (measured: the peak
/// memory of a 10M-row backlog about a fifth lower than gathering 4 MiB; its CPU per row up to
/// a tenth higher, within the benchmark machine's run-to-run noise; docs/benchmark.md).
pub const MAX_HOST_BATCH_BYTES: usize = 256 << 10;

/// How a split's writer takes its batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchForm {
    /// As the contract's row batch (Arrow IPC), for a `writer`.
    Ipc,
    /// Kept in the host, for a `batch-writer`.
    Host,
}

/// A batch in the form its writer takes.
pub enum Payload {
    Ipc(wit::RowBatch),
    Host(HostRows),
}

/// A batch ready for a plugin, with what the round needs to know about it.
pub struct EncodedBatch {
    pub payload: Payload,
    pub rows: usize,
    /// Bytes of the batch as read (its columns), for the read metrics.
    pub bytes: usize,
    /// Exclusive offset after the batch's last row.
    pub end_offset: i64,
    pub max_timestamp: Option<i64>,
}

/// Consecutive batches of one bucket as one batch for the writer.
pub fn encode(parts: Vec<BucketBatch>, form: BatchForm) -> Result<EncodedBatch> {
    let end_offset = parts.last().map_or(0, BucketBatch::end_offset);
    let max_timestamp = parts.iter().filter_map(BucketBatch::max_timestamp).max();
    let host = host_rows(parts)?;
    let (rows, bytes) = (host.num_rows(), host.column_bytes());
    let payload = match form {
        BatchForm::Host => Payload::Host(host),
        BatchForm::Ipc => Payload::Ipc(host.into_row_batch()?),
    };
    Ok(EncodedBatch {
        payload,
        rows,
        bytes,
        end_offset,
        max_timestamp,
    })
}

/// Prepares every batch from `rx` for the writer into `tx`, so that encoding overlaps with
/// the plugin writing the previous batch, gathering what arrives meanwhile. Ends when either
/// side closes.
pub async fn encode_all(
    mut rx: mpsc::Receiver<BucketBatch>,
    tx: mpsc::Sender<EncodedBatch>,
    form: BatchForm,
) -> Result<()> {
    let mut gathered = Gathered {
        max_bytes: match form {
            BatchForm::Ipc => MAX_BATCH_BYTES,
            BatchForm::Host => MAX_HOST_BATCH_BYTES,
        },
        ..Gathered::default()
    };
    let mut read_all = false;
    loop {
        if read_all && gathered.parts.is_empty() {
            return Ok(());
        }
        tokio::select! {
            // Whatever is gathered goes as soon as the plugin can take it.
            biased;
            permit = tx.reserve(), if !gathered.parts.is_empty() => {
                let Ok(permit) = permit else { return Ok(()) };
                permit.send(encode(gathered.take(), form)?);
            }
            batch = rx.recv(), if !read_all && !gathered.is_full() => match batch {
                Some(batch) => gathered.push(batch),
                None => read_all = true,
            },
        }
    }
}

/// Consecutive batches of one bucket waiting for the plugin.
#[derive(Default)]
struct Gathered {
    parts: Vec<BucketBatch>,
    rows: usize,
    bytes: usize,
    /// Column bytes at which no more are gathered.
    max_bytes: usize,
}

impl Gathered {
    fn push(&mut self, batch: BucketBatch) {
        self.rows += batch.num_rows();
        self.bytes += column_bytes(&batch.rows);
        self.parts.push(batch);
    }

    fn is_full(&self) -> bool {
        self.rows >= MAX_BATCH_ROWS || self.bytes >= self.max_bytes
    }

    /// The gathered batches, leaving none.
    fn take(&mut self) -> Vec<BucketBatch> {
        self.rows = 0;
        self.bytes = 0;
        std::mem::take(&mut self.parts)
    }
}

/// Consecutive batches of one bucket as the host's one batch of rows (their Arrow batches kept
/// apart; joined only if the writer takes the rows themselves).
fn host_rows(parts: Vec<BucketBatch>) -> Result<HostRows> {
    let n = parts.iter().map(BucketBatch::num_rows).sum();
    // An empty change-type list means "every row +A"; spelled out once any part has others.
    let change_types = if parts.iter().all(|p| p.change_types.is_empty()) {
        Vec::new()
    } else {
        let append_only = fluss::record::ChangeType::AppendOnly.to_byte_value();
        let mut all = Vec::with_capacity(n);
        for p in &parts {
            if p.change_types.is_empty() {
                all.extend(std::iter::repeat_n(append_only, p.num_rows()));
            } else {
                all.extend_from_slice(&p.change_types);
            }
        }
        all
    };
    let mut offsets = Vec::with_capacity(n);
    let mut timestamps = Vec::with_capacity(n);
    let mut batches = Vec::with_capacity(parts.len());
    for p in parts {
        offsets.extend_from_slice(&p.offsets);
        timestamps.extend_from_slice(&p.timestamps);
        batches.push(p.rows);
    }
    HostRows::from_parts(batches, change_types, offsets, timestamps)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(first_offset: i64, rows: usize, change_types: Vec<u8>) -> BucketBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let offsets: Vec<i64> = (first_offset..first_offset + rows as i64).collect();
        BucketBatch {
            rows: RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(offsets.clone()))])
                .unwrap(),
            change_types,
            timestamps: offsets.iter().map(|o| 1000 + o).collect(),
            offsets,
        }
    }

    /// The values of a row batch's one Int64 column.
    fn values(rows: &wit::RowBatch) -> Vec<i64> {
        let mut reader =
            arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(&rows.ipc), None)
                .unwrap();
        let batch = reader.next().unwrap().unwrap();
        assert!(reader.next().is_none(), "one batch per row batch");
        let column = batch.column(0).as_any().downcast_ref::<Int64Array>();
        column.unwrap().values().to_vec()
    }

    #[test]
    fn gathered_batches_become_one_with_every_row_in_order() {
        let merged = host_rows(vec![batch(0, 3, vec![]), batch(3, 2, vec![1, 4])])
            .unwrap()
            .into_row_batch()
            .unwrap();
        assert_eq!(merged.log_offsets, vec![0, 1, 2, 3, 4]);
        assert_eq!(merged.timestamps, vec![1000, 1001, 1002, 1003, 1004]);
        // The +A rows of the first part are spelled out next to the second's.
        assert_eq!(merged.change_types, vec![0, 0, 0, 1, 4]);
        assert_eq!(values(&merged), vec![0, 1, 2, 3, 4]);
        // Log-table parts keep the "every row +A" form.
        let logs = host_rows(vec![batch(0, 2, vec![]), batch(2, 2, vec![])]).unwrap();
        assert!(logs.to_row_batch().unwrap().change_types.is_empty());
    }

    #[tokio::test]
    async fn batches_read_while_the_plugin_is_busy_reach_it_as_one_call() {
        let (raw_tx, raw_rx) = mpsc::channel(16);
        let (tx, mut rx) = mpsc::channel(1);
        let encoder = tokio::spawn(encode_all(raw_rx, tx, BatchForm::Ipc));
        // The plugin takes the first batch as soon as it is read...
        raw_tx.send(batch(0, 10, vec![])).await.unwrap();
        let first = rx.recv().await.unwrap();
        assert_eq!((first.rows, first.end_offset), (10, 10));
        // ...and is then busy while eleven more arrive: one fills the channel to the plugin,
        // the other ten are gathered into the next call.
        for i in 1..12 {
            raw_tx.send(batch(i * 10, 10, vec![])).await.unwrap();
        }
        drop(raw_tx);
        let mut calls = Vec::new();
        while let Some(b) = rx.recv().await {
            let Payload::Ipc(batch) = b.payload else {
                panic!("a writer's batch is a row batch")
            };
            calls.push((b.rows, b.end_offset, batch.log_offsets.len()));
        }
        encoder.await.unwrap().unwrap();
        assert_eq!(calls, vec![(10, 20, 10), (100, 120, 100)]);
    }

    #[tokio::test]
    async fn batches_kept_in_the_host_are_gathered_too() {
        let (raw_tx, raw_rx) = mpsc::channel(16);
        let (tx, mut rx) = mpsc::channel(1);
        for i in 0..5 {
            raw_tx.send(batch(i * 10, 10, vec![])).await.unwrap();
        }
        drop(raw_tx);
        let encoder = tokio::spawn(encode_all(raw_rx, tx, BatchForm::Host));
        let mut calls = Vec::new();
        while let Some(b) = rx.recv().await {
            let Payload::Host(rows) = b.payload else {
                panic!("a batch writer's batch stays in the host")
            };
            calls.push((b.rows, b.end_offset, values(&rows.to_row_batch().unwrap())));
        }
        encoder.await.unwrap().unwrap();
        // The first as soon as it is read; the others, read while it waits, in one call.
        assert_eq!(
            calls,
            vec![(10, 10, (0..10).collect()), (40, 50, (10..50).collect())]
        );
    }

    #[tokio::test]
    async fn a_gathered_batch_stops_growing_at_the_row_limit() {
        let (raw_tx, raw_rx) = mpsc::channel(64);
        let (tx, mut rx) = mpsc::channel(1);
        let per = MAX_BATCH_ROWS / 4;
        for i in 0..10 {
            raw_tx
                .send(batch((i * per) as i64, per, vec![]))
                .await
                .unwrap();
        }
        drop(raw_tx);
        let encoder = tokio::spawn(encode_all(raw_rx, tx, BatchForm::Ipc));
        let mut sizes = Vec::new();
        while let Some(b) = rx.recv().await {
            sizes.push(b.rows);
        }
        encoder.await.unwrap().unwrap();
        assert!(sizes.iter().all(|s| *s <= MAX_BATCH_ROWS), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 10 * per);
    }
}
