//! Reads one bucket from a start offset up to an exclusive stop offset and hands the rows
//! on as Arrow batches with each row's change type, offset and commit timestamp. It knows
//! Fluss only; turning these batches into the plugin contract's is the tiering layer's job.
//!
//! Log tables are read through fluss-rs's Arrow batch scanner: every fetched log batch
//! arrives whole, its rows' offsets follow from its base offset and they share its commit
//! timestamp (the vendored fluss-rs carries it, see `vendor/fluss-rs/PATCHED.md`), so no
//! per-row object is ever made. Primary-key tables' changelogs need each row's change type,
//! which only the record scanner carries; there consecutive records that share a source
//! batch are re-assembled into a zero-copy slice of it, so no row is copied one by one.
//!
//! A bucket is complete once the scanner has consumed it up to the stop offset: its next
//! fetch offset, not the last record seen, decides, because Fluss writes log batches with
//! no record in them (a FIRST_ROW table's duplicate keys, deletes of missing keys), and a
//! range may end in such batches (Java's `TieringSplitReader` does the same).

use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use fluss::client::{FlussConnection, FlussTable};
use fluss::metadata::TablePath;
use fluss::metadata::{TableBucket, TableInfo};
use fluss::record::{ChangeType, ScanBatch, ScanRecord};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorKind, Result};
use crate::fluss::kv_snapshot::{self, SnapshotAccess, SnapshotSource};

/// How often a bucket that returns no record is checked for being consumed anyway.
const EMPTY_TAIL_CHECK_INTERVAL: Duration = Duration::from_millis(500);

/// Fluss's sentinel for "from the earliest offset the log still holds".
pub const EARLIEST_OFFSET: i64 = -2;

/// One bucket's range to tier in this round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketRange {
    pub partition_id: Option<i64>,
    /// Fluss partition name (values joined by `$`), for the plugin.
    pub partition_name: Option<String>,
    pub bucket: i32,
    /// How many buckets the bucket's partition (or the non-partitioned table) has. A Fluss 1.0
    /// partition keeps the count it was created with when the table's `bucket.num` changes
    /// later, and a lake writer places files by it (Paimon's `_TOTAL_BUCKETS`).
    pub buckets: i32,
    /// First offset to read, or [`EARLIEST_OFFSET`].
    pub start: i64,
    /// Exclusive end offset (the high watermark when the split was generated; for a snapshot
    /// split, the snapshot's log offset).
    pub stop: i64,
    /// Read the bucket's KV snapshot instead of its log (a primary-key bucket's first round):
    /// its rows are INSERTs with offset and timestamp -1, as Java writes them, and the bucket is
    /// then tiered up to the snapshot's log offset.
    pub snapshot: Option<SnapshotSource>,
    /// The snapshot's rows replace the bucket in the lake (a tiered bucket rebuilt after a log
    /// gap, see `tiering::splits`): the round commits them through the plugin's
    /// `bucket-replace`. Only with `snapshot`.
    pub replace: bool,
    /// One of the consecutive pieces a large log bucket's range was cut into, so that a table
    /// with fewer buckets than the host has writers still keeps them busy; none for a whole
    /// range.
    pub piece: Option<Piece>,
}

/// Which piece of its bucket's range a range is: pieces are written in parallel and committed
/// together, the bucket tiered up to the last piece's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// 0 for the first piece.
    pub index: u32,
    pub count: u32,
}

impl BucketRange {
    /// Whether the range ends where its bucket's range ends (a whole range, or the last
    /// piece): only such a range may stop short of its end, since the bucket is tiered up to
    /// where its last piece stopped.
    pub fn ends_its_bucket(&self) -> bool {
        self.piece.is_none_or(|p| p.index + 1 == p.count)
    }
}

/// Consecutive rows of one bucket, as Fluss stored them.
pub struct BucketBatch {
    /// The rows: a zero-copy slice of the fetched Arrow batch.
    pub rows: RecordBatch,
    /// Fluss change type byte values (0 `+A` .. 4 `-D`), one per row; empty when every
    /// row is `+A`.
    pub change_types: Vec<u8>,
    /// The log offset of every row.
    pub offsets: Vec<i64>,
    /// The commit timestamp (epoch millis) of every row's log batch.
    pub timestamps: Vec<i64>,
}

impl BucketBatch {
    pub fn num_rows(&self) -> usize {
        self.offsets.len()
    }

    /// Exclusive offset after the batch's last row: how far the bucket is tiered once the
    /// batch is written.
    pub fn end_offset(&self) -> i64 {
        self.offsets.last().map_or(0, |o| o + 1)
    }

    /// The newest commit timestamp among the rows.
    pub fn max_timestamp(&self) -> Option<i64> {
        // -1 is "unknown" (a KV snapshot's rows, as Java writes them), not a time.
        self.timestamps.iter().copied().filter(|t| *t >= 0).max()
    }
}

/// Reads `range` of `path` and sends its rows to `tx` until the bucket is consumed up to
/// the stop offset. Returns, once it is, the offset the bucket is then tiered up to
/// (exclusive): `range.stop`, or for a snapshot split the log offset of the snapshot read (a
/// newer one than planned when that one was gone). A `tx` closed before the range is consumed
/// (the writer gave up) ends the read with [`ErrorKind::Cancelled`].
///
/// `info` is the table as the round resolved it: the rows are read (and their schema
/// resolved) as the plugin's writer sees the table, and the split costs no metadata request
/// (a table's metadata grows with its partitions; asking for it per split made a round's
/// cost grow with partitions × splits).
pub async fn read_bucket(
    conn: Arc<FlussConnection>,
    snapshots: SnapshotAccess,
    info: TableInfo,
    range: BucketRange,
    poll_timeout: Duration,
    tx: mpsc::Sender<BucketBatch>,
) -> Result<i64> {
    if range.snapshot.is_none()
        && (range.stop <= 0 || (range.start >= 0 && range.start >= range.stop))
    {
        return Ok(range.stop);
    }
    let path = info.get_table_path().clone();
    let table = FlussTable::new(&conn, conn.get_metadata(), info);
    if let Some(source) = range.snapshot {
        return read_snapshot(&conn, &snapshots, &table, &range, source, &tx).await;
    }
    // Short polls: a range that ends in empty batches yields no record, only a moved fetch
    // offset, which is checked after every poll.
    let poll_timeout = poll_timeout.min(EMPTY_TAIL_CHECK_INTERVAL);
    if table.get_table_info().has_primary_key() {
        read_changelog(&table, &path, &range, poll_timeout, &tx).await?;
    } else {
        read_log(&table, &path, &range, poll_timeout, &tx).await?;
    }
    // They return early when the writer is gone: the range is then not consumed.
    if tx.is_closed() {
        return Err(Error::new(
            ErrorKind::Cancelled,
            format!(
                "{path} bucket {}: the split ended before its range was read",
                range.bucket
            ),
        ));
    }
    Ok(range.stop)
}

/// Rows a snapshot batch holds at most.
const SNAPSHOT_BATCH_ROWS: usize = 8192;

/// A primary-key bucket's KV snapshot, as INSERTs at offset and timestamp -1.
async fn read_snapshot(
    conn: &FlussConnection,
    snapshots: &SnapshotAccess,
    table: &FlussTable<'_>,
    range: &BucketRange,
    source: SnapshotSource,
    tx: &mpsc::Sender<BucketBatch>,
) -> Result<i64> {
    let info = table.get_table_info();
    // Values are CompactedRows unless the table says otherwise (`table.kv.format`).
    match info.get_table_config().get_kv_format() {
        Ok(fluss::metadata::KvFormat::COMPACTED) => {}
        other => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{} bucket {}: a KV snapshot of table.kv.format {other:?} is not read (only COMPACTED)",
                    info.get_table_path(),
                    range.bucket
                ),
            ));
        }
    }
    let admin = conn
        .get_admin()
        .map_err(|e| Error::new(ErrorKind::Fluss, format!("cannot reach the cluster: {e}")))?;
    let schema_id = i16::try_from(info.get_schema_id()).map_err(|_| {
        Error::new(
            ErrorKind::Fluss,
            format!("schema id {} out of range", info.get_schema_id()),
        )
    })?;
    // Rows keep the schema they were written with: every earlier one of the table, to map
    // them onto the current columns (ids count up from 0; one the cluster does not have is
    // skipped: a row written under it is refused by the decoder).
    let mut earlier = Vec::new();
    for id in 0..schema_id {
        match admin
            .get_table_schema(info.get_table_path(), Some(i32::from(id)))
            .await
        {
            Ok(s) => earlier.push((id, s.schema().clone())),
            Err(e) if e.api_error() == Some(fluss::rpc::FlussError::SchemaNotExist) => {}
            Err(e) => {
                return Err(fluss_err(
                    "cannot read an earlier schema of",
                    info.get_table_path(),
                    range,
                )(e));
            }
        }
    }
    let decoder = kv_snapshot::values::ValueDecoder::new(schema_id, info.get_schema(), earlier)?;
    let at = kv_snapshot::SnapshotBucket {
        table_id: info.get_table_id(),
        path: info.get_table_path().clone(),
        partition_id: range.partition_id,
        partition_name: range.partition_name.clone(),
        bucket: range.bucket,
        source,
    };
    tracing::info!(
        table = %info.get_table_path(),
        bucket = range.bucket,
        partition = range.partition_name.as_deref().unwrap_or(""),
        snapshot = source.snapshot_id,
        log_offset = source.log_offset,
        "tiering a bucket never tiered from its KV snapshot"
    );
    let (batches_tx, mut batches) = mpsc::channel(2);
    let read = kv_snapshot::read(
        admin,
        snapshots,
        &at,
        decoder,
        SNAPSHOT_BATCH_ROWS,
        batches_tx,
    );
    // Owns the receiving end: a writer gone closes it, so the decoder stops too.
    let forward = async move {
        while let Some(rows) = batches.recv().await {
            let n = rows.num_rows();
            let batch = BucketBatch {
                rows,
                change_types: vec![ChangeType::Insert.to_byte_value(); n],
                offsets: vec![-1; n],
                timestamps: vec![-1; n],
            };
            if tx.send(batch).await.is_err() {
                return Err(kv_snapshot::abandoned());
            }
        }
        Ok::<(), Error>(())
    };
    tokio::try_join!(read, forward).map(|(read, _)| read.log_offset)
}

/// Turns a fluss-rs error into one naming what failed, the table and the bucket.
fn fluss_err<'a>(
    what: &'a str,
    path: &'a TablePath,
    range: &'a BucketRange,
) -> impl FnOnce(fluss::error::Error) -> Error + 'a {
    move |e| {
        if e.api_error() == Some(fluss::rpc::FlussError::LogOffsetOutOfRangeException) {
            // The log no longer holds the range's start: rows the lake never received are
            // gone. Planning names the lost range once it knows the log start.
            return Error::new(
                ErrorKind::LogGap,
                format!(
                    "{path} bucket {}{}: offset {} is no longer in the log",
                    range.bucket,
                    range
                        .partition_name
                        .as_deref()
                        .map(|p| format!(" of partition {p}"))
                        .unwrap_or_default(),
                    range.start
                ),
            )
            .with_source(e);
        }
        Error::new(
            ErrorKind::Fluss,
            format!("{what} {path} bucket {}", range.bucket),
        )
        .with_source(e)
    }
}

/// Subscribes `$scanner` (either of fluss-rs's scanners: they share these methods, not a
/// trait) to the range's bucket from the range's start.
macro_rules! subscribe {
    ($scanner:ident, $path:expr, $range:expr) => {
        match $range.partition_id {
            Some(pid) => {
                $scanner
                    .subscribe_partition(pid, $range.bucket, $range.start)
                    .await
            }
            None => $scanner.subscribe($range.bucket, $range.start).await,
        }
        .map_err(fluss_err("cannot subscribe to", $path, $range))?
    };
}

/// A log table's range, whole log batches at a time.
async fn read_log(
    table: &FlussTable<'_>,
    path: &TablePath,
    range: &BucketRange,
    poll_timeout: Duration,
    tx: &mpsc::Sender<BucketBatch>,
) -> Result<()> {
    let scanner = table
        .new_scan()
        .create_record_batch_log_scanner()
        .map_err(fluss_err("cannot scan", path, range))?;
    subscribe!(scanner, path, range);
    loop {
        let batches =
            scanner
                .poll(poll_timeout)
                .await
                .map_err(fluss_err("cannot read", path, range))?;
        for batch in batches {
            if batch.base_offset() >= range.stop {
                return Ok(());
            }
            if batch.base_offset() + batch.num_records() as i64 <= range.start {
                continue;
            }
            if tx
                .send(log_batch(&batch, range.start, range.stop)?)
                .await
                .is_err()
            {
                return Ok(());
            }
        }
        if consumed_offset(scanner.get_subscribed_buckets(), range).is_some_and(|o| o >= range.stop)
        {
            return Ok(());
        }
    }
}

/// The rows of a fetched log batch from `start` (a piece of a bucket may start inside a
/// batch) and below `stop` (its base offset is below `stop`, its last offset not below
/// `start`).
fn log_batch(batch: &ScanBatch, start: i64, stop: i64) -> Result<BucketBatch> {
    // The vendored scanner sets every batch's timestamp; without it `__timestamp` would be
    // wrong, so a batch without one is refused rather than written.
    let timestamp = batch.commit_timestamp().ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "a scanned log batch carries no commit timestamp",
        )
    })?;
    let base = batch.base_offset();
    let skip = usize::try_from(start - base)
        .unwrap_or(0)
        .min(batch.num_records());
    let end = batch
        .num_records()
        .min(usize::try_from(stop - base).unwrap_or(usize::MAX));
    let rows = end.saturating_sub(skip);
    let first = base + skip as i64;
    Ok(BucketBatch {
        rows: if rows == batch.num_records() {
            batch.batch().clone()
        } else {
            batch.batch().slice(skip, rows)
        },
        change_types: Vec::new(),
        offsets: (first..first + rows as i64).collect(),
        timestamps: vec![timestamp; rows],
    })
}

/// A primary-key table's changelog range, record by record (for the change types).
async fn read_changelog(
    table: &FlussTable<'_>,
    path: &TablePath,
    range: &BucketRange,
    poll_timeout: Duration,
    tx: &mpsc::Sender<BucketBatch>,
) -> Result<()> {
    let scanner =
        table
            .new_scan()
            .create_log_scanner()
            .map_err(fluss_err("cannot scan", path, range))?;
    subscribe!(scanner, path, range);
    loop {
        let records =
            scanner
                .poll(poll_timeout)
                .await
                .map_err(fluss_err("cannot read", path, range))?;
        for (_bucket, recs) in records.into_records_by_buckets() {
            let mut i = 0;
            while i < recs.len() {
                if recs[i].offset() >= range.stop {
                    return Ok(());
                }
                let run = same_batch_run(&recs[i..], range.stop);
                if tx.send(to_bucket_batch(&recs[i..i + run])?).await.is_err() {
                    return Ok(());
                }
                i += run;
            }
        }
        if consumed_offset(scanner.get_subscribed_buckets(), range).is_some_and(|o| o >= range.stop)
        {
            return Ok(());
        }
    }
}

/// The scanner's next fetch offset for the range's bucket, from its subscriptions.
fn consumed_offset(subscribed: Vec<(TableBucket, i64)>, range: &BucketRange) -> Option<i64> {
    subscribed
        .into_iter()
        .find(|(tb, _)| tb.bucket_id() == range.bucket && tb.partition_id() == range.partition_id)
        .map(|(_, offset)| offset)
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

/// The batch of a run of records sharing one source batch.
fn to_bucket_batch(run: &[ScanRecord]) -> Result<BucketBatch> {
    let first = &run[0];
    let source = first.row().get_record_batch().ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "a scanned record carries no Arrow batch",
        )
    })?;
    let all_append = run
        .iter()
        .all(|r| *r.change_type() == ChangeType::AppendOnly);
    Ok(BucketBatch {
        rows: source.slice(first.row().get_row_id(), run.len()),
        change_types: if all_append {
            Vec::new()
        } else {
            run.iter()
                .map(|r| r.change_type().to_byte_value())
                .collect()
        },
        offsets: run.iter().map(ScanRecord::offset).collect(),
        timestamps: run.iter().map(ScanRecord::timestamp).collect(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn scan_batch(base_offset: i64, rows: i64) -> ScanBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let values = Int64Array::from((0..rows).collect::<Vec<_>>());
        let batch = RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap();
        ScanBatch::new(TableBucket::new(1, 0), batch, base_offset)
    }

    #[test]
    fn a_log_batch_is_cut_at_the_stop_offset_with_its_offsets_and_timestamp() {
        let b = log_batch(&scan_batch(10, 5).with_commit_timestamp(1234), -2, 13).unwrap();
        assert_eq!(b.rows.num_rows(), 3);
        assert_eq!(b.offsets, vec![10, 11, 12]);
        assert_eq!(b.timestamps, vec![1234; 3]);
        assert!(b.change_types.is_empty());
        let whole = log_batch(&scan_batch(10, 5).with_commit_timestamp(1), 10, 100).unwrap();
        assert_eq!(whole.offsets, vec![10, 11, 12, 13, 14]);
        // A piece of a bucket that starts inside the batch keeps its rows from its start.
        let piece = log_batch(&scan_batch(10, 5).with_commit_timestamp(1), 12, 14).unwrap();
        assert_eq!(piece.offsets, vec![12, 13]);
        let values = piece
            .rows
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(values.values().to_vec(), vec![2, 3]);
    }

    #[test]
    fn a_log_batch_without_a_commit_timestamp_is_refused() {
        let e = log_batch(&scan_batch(0, 2), 0, 10).err().expect("refused");
        assert_eq!(e.kind(), ErrorKind::Internal);
    }
}
