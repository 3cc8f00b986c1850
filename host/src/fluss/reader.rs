//! Reads one bucket from a start offset up to an exclusive stop offset and hands the rows
//! on as contract batches (Arrow IPC + per-row change type, offset and timestamp).
//!
//! fluss-rs's record scanner is used rather than its Arrow batch scanner because only the
//! record scanner carries each row's commit timestamp and change type, which lake formats
//! store (`__timestamp`, PK changelogs). It still decodes whole Arrow batches: consecutive
//! records that share a source batch are re-assembled into a zero-copy slice of it, so no
//! row is ever copied one by one.

use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::ipc::writer::StreamWriter;
use fluss::client::FlussConnection;
use fluss::metadata::TablePath;
use fluss::record::{ChangeType, ScanRecord};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorKind, Result};
use crate::plugin::wit;

/// Fluss's sentinel for "from the earliest offset the log still holds".
pub const EARLIEST_OFFSET: i64 = -2;

/// One bucket's range to tier in this round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketRange {
    pub partition_id: Option<i64>,
    /// Fluss partition name (values joined by `$`), for the plugin.
    pub partition_name: Option<String>,
    pub bucket: i32,
    /// First offset to read, or [`EARLIEST_OFFSET`].
    pub start: i64,
    /// Exclusive end offset (the high watermark when the split was generated).
    pub stop: i64,
}

/// A batch on its way to a plugin, with what the commit needs to know about it.
pub struct ReadBatch {
    pub batch: wit::RowBatch,
    pub rows: usize,
    pub max_timestamp: i64,
    /// Exclusive offset after the batch's last row: how far the bucket is tiered once the
    /// batch is written.
    pub end_offset: i64,
}

/// How far a bucket was read.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadProgress {
    pub rows: u64,
    /// Exclusive offset up to which the bucket was read, -1 if nothing was read.
    pub end_offset: i64,
    pub max_timestamp: i64,
}

/// Reads `range` of `path` and sends its rows to `tx` until the stop offset is reached.
/// Returns when the bucket is complete or `tx` is closed (the writer gave up).
pub async fn read_bucket(
    conn: Arc<FlussConnection>,
    path: TablePath,
    range: BucketRange,
    poll_timeout: Duration,
    tx: mpsc::Sender<ReadBatch>,
) -> Result<ReadProgress> {
    let mut progress = ReadProgress {
        end_offset: -1,
        max_timestamp: -1,
        ..Default::default()
    };
    if range.stop <= 0 || (range.start >= 0 && range.start >= range.stop) {
        return Ok(progress);
    }
    let fluss_err = |what: &str, e: fluss::error::Error| {
        Error::new(
            ErrorKind::Fluss,
            format!("{what} {path} bucket {}", range.bucket),
        )
        .with_source(e)
    };
    let table = conn
        .get_table(&path)
        .await
        .map_err(|e| fluss_err("cannot open", e))?;
    let scanner = table
        .new_scan()
        .create_log_scanner()
        .map_err(|e| fluss_err("cannot scan", e))?;
    match range.partition_id {
        Some(pid) => {
            scanner
                .subscribe_partition(pid, range.bucket, range.start)
                .await
        }
        None => scanner.subscribe(range.bucket, range.start).await,
    }
    .map_err(|e| fluss_err("cannot subscribe to", e))?;

    loop {
        let records = scanner
            .poll(poll_timeout)
            .await
            .map_err(|e| fluss_err("cannot read", e))?;
        let mut done = false;
        for (_bucket, recs) in records.into_records_by_buckets() {
            let mut i = 0;
            while i < recs.len() {
                if recs[i].offset() >= range.stop {
                    done = true;
                    break;
                }
                let run = same_batch_run(&recs[i..], range.stop);
                let out = to_row_batch(&recs[i..i + run])?;
                progress.rows += out.rows as u64;
                progress.end_offset = recs[i + run - 1].offset() + 1;
                progress.max_timestamp = progress.max_timestamp.max(out.max_timestamp);
                if tx.send(out).await.is_err() {
                    return Ok(progress);
                }
                i += run;
            }
            if progress.end_offset >= range.stop {
                done = true;
            }
        }
        if done {
            progress.end_offset = range.stop;
            return Ok(progress);
        }
    }
}

/// Length of the run of records at the head of `recs` that are consecutive rows of one
/// source batch and below `stop`.
fn same_batch_run(recs: &[ScanRecord], stop: i64) -> usize {
    let first = &recs[0];
    let source = first
        .row()
        .get_record_batch()
        .map(|b| b as *const RecordBatch);
    let first_row = first.row().get_row_id();
    let mut n = 1;
    while n < recs.len() {
        let r = &recs[n];
        let same_source = r.row().get_record_batch().map(|b| b as *const RecordBatch) == source;
        if !same_source || r.row().get_row_id() != first_row + n || r.offset() >= stop {
            break;
        }
        n += 1;
    }
    n
}

/// Builds the contract batch for a run of records sharing one source batch.
fn to_row_batch(run: &[ScanRecord]) -> Result<ReadBatch> {
    let first = &run[0];
    let source = first.row().get_record_batch().ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "a scanned record carries no Arrow batch",
        )
    })?;
    let slice = source.slice(first.row().get_row_id(), run.len());
    let all_append = run
        .iter()
        .all(|r| *r.change_type() == ChangeType::AppendOnly);
    let change_types = if all_append {
        Vec::new()
    } else {
        run.iter()
            .map(|r| r.change_type().to_byte_value())
            .collect()
    };
    let log_offsets: Vec<i64> = run.iter().map(ScanRecord::offset).collect();
    let timestamps: Vec<i64> = run.iter().map(ScanRecord::timestamp).collect();
    let max_timestamp = timestamps.iter().copied().max().unwrap_or(-1);
    Ok(ReadBatch {
        rows: run.len(),
        max_timestamp,
        end_offset: run[run.len() - 1].offset() + 1,
        batch: wit::RowBatch {
            ipc: encode_ipc(&slice)?,
            change_types,
            log_offsets,
            timestamps,
        },
    })
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
