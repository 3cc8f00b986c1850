//! A primary-key bucket's KV snapshot: the RocksDB checkpoint Fluss keeps of its state, read
//! for the first tiering round of a bucket that was never tiered (FlussLakeTiering's
//! `TieringSnapshotSplit`): its rows as they were at the snapshot's log offset, from which the
//! changelog continues.
//!
//! Reading one: lease the snapshot so the cluster keeps its files while they are copied
//! (`AcquireKvSnapshotLease`; Fluss #2512 is what happens without), ask for its files
//! (`GetKvSnapshotMetadata`), copy each through the host's remote storage into a directory of
//! its own, then drop the lease; decode the checkpoint's merged view ([`sst`]) into Arrow
//! batches of the table's rows ([`values`]). A snapshot gone before its files are copied (its
//! lease expired, or the cluster replaced it between planning and leasing) is given up for the
//! bucket's latest one, a few times at most.

pub mod sst;
pub mod values;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use fluss::client::FlussAdmin;
use fluss::metadata::{KvSnapshotLeaseForBucket, KvSnapshotLeaseForTable, TablePath};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorKind, Result};
use crate::failpoints;
use crate::fluss::local_copies;
use crate::fluss::remote_dir::{RemotePath, RemoteStorage};

/// Encoded row bytes a batch of snapshot rows holds at most (besides its row count): wide rows
/// make smaller batches, as the round's gathering of log batches does (4 MiB).
const MAX_BATCH_VALUE_BYTES: usize = 4 << 20;

/// Snapshots tried for one bucket before its split fails: the planned one, then the bucket's
/// latest each time the one tried is gone (its lease expired, or it was replaced before it was
/// leased).
const MAX_ATTEMPTS: u32 = 3;

/// The KV snapshot a bucket's first round starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotSource {
    pub snapshot_id: i64,
    /// The log offset the snapshot holds every change before (exclusive): where the bucket's
    /// changelog continues.
    pub log_offset: i64,
}

/// One bucket of a table, at a snapshot.
#[derive(Debug, Clone)]
pub struct SnapshotBucket {
    pub table_id: i64,
    pub path: TablePath,
    pub partition_id: Option<i64>,
    pub partition_name: Option<String>,
    pub bucket: i32,
    pub source: SnapshotSource,
}

impl SnapshotBucket {
    fn describe(&self, source: SnapshotSource) -> String {
        format!(
            "KV snapshot {} of {} bucket {}{}",
            source.snapshot_id,
            self.path,
            self.bucket,
            self.partition_name
                .as_deref()
                .map(|p| format!(" of partition {p}"))
                .unwrap_or_default()
        )
    }
}

/// Where snapshot files are read from, and how long the cluster keeps them for the host.
#[derive(Clone)]
pub struct SnapshotAccess {
    pub storage: Arc<RemoteStorage>,
    /// `--tiering.kv-snapshot.lease-duration`.
    pub lease_duration: Duration,
}

/// The latest KV snapshot of every bucket of a primary-key table (or of one partition of it)
/// that has one.
pub async fn latest(
    admin: &FlussAdmin,
    path: &TablePath,
    partition_name: Option<&str>,
) -> Result<HashMap<i32, SnapshotSource>> {
    let snapshots = admin
        .get_latest_kv_snapshots(path, partition_name)
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Fluss,
                format!(
                    "cannot list the KV snapshots of {path}{}",
                    partition_name
                        .map(|p| format!(" partition {p}"))
                        .unwrap_or_default()
                ),
            )
            .with_source(e)
        })?;
    Ok(snapshots
        .latest_snapshots
        .into_iter()
        .filter_map(|s| {
            Some((
                s.bucket_id,
                SnapshotSource {
                    snapshot_id: s.snapshot_id?,
                    log_offset: s.log_offset?,
                },
            ))
        })
        .collect())
}

/// Reads the rows of `at`'s snapshot, or of the bucket's latest one when that one is gone
/// before its files are copied, into batches of at most `batch_rows` rows (and about
/// [`MAX_BATCH_VALUE_BYTES`]) of `decoder`'s table, sent to `tx` in key order. Returns the
/// snapshot read: the bucket is tiered up to its log offset. Nothing is sent before every file
/// of the snapshot read is copied, so a snapshot given up sent no row; a `tx` closed before
/// the last row is [`ErrorKind::Cancelled`], never a snapshot read.
pub async fn read(
    admin: Arc<FlussAdmin>,
    access: &SnapshotAccess,
    at: &SnapshotBucket,
    decoder: values::ValueDecoder,
    batch_rows: usize,
    tx: mpsc::Sender<RecordBatch>,
) -> Result<SnapshotSource> {
    let mut source = at.source;
    let mut attempt = 1;
    let (dir, source) = loop {
        // Removed when dropped: after decoding, or before the next attempt.
        let dir = local_copies::create(&std::env::temp_dir(), local_copies::KV_SNAPSHOTS).map_err(
            |e| {
                Error::new(
                    ErrorKind::Storage,
                    format!("cannot create a local directory for KV snapshot files: {e}"),
                )
            },
        )?;
        match copy_files(&admin, access, at, source, dir.path(), attempt).await {
            Ok(copied) => break (dir, copied),
            Err(gone) if gone.kind() == ErrorKind::NotFound && attempt < MAX_ATTEMPTS => {
                let newer = latest(&admin, &at.path, at.partition_name.as_deref())
                    .await?
                    .get(&at.bucket)
                    .copied()
                    .filter(|s| s.snapshot_id != source.snapshot_id);
                let Some(newer) = newer else { return Err(gone) };
                tracing::warn!(
                    "{gone}; reading the bucket's latest one, {} (up to offset {}), instead",
                    newer.snapshot_id,
                    newer.log_offset
                );
                source = newer;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    };
    let path = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || decode(&path, &decoder, batch_rows.max(1), &tx))
        .await
        .map_err(|e| Error::new(ErrorKind::Internal, format!("snapshot decoder failed: {e}")))??;
    drop(dir);
    Ok(source)
}

/// A lease on snapshots: dropped on the cluster by [`Lease::drop_now`], or, if the read ends
/// another way (an error, a cancelled split), in the background when this is dropped.
struct Lease {
    admin: Arc<FlussAdmin>,
    id: Option<String>,
    what: String,
}

impl Lease {
    async fn drop_now(mut self) {
        if let Some(id) = self.id.take()
            && let Err(e) = self.admin.drop_kv_snapshot_lease(&id).await
        {
            // It expires on its own.
            tracing::warn!(lease = id, "could not drop the lease of {}: {e}", self.what);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let admin = self.admin.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = admin.drop_kv_snapshot_lease(&id).await;
            });
        }
    }
}

/// Leases `source`, copies its table files into `dir` while renewing the lease, and drops the
/// lease. Returns the snapshot as the cluster describes it. A snapshot that no longer exists
/// is [`ErrorKind::NotFound`].
async fn copy_files(
    admin: &Arc<FlussAdmin>,
    access: &SnapshotAccess,
    at: &SnapshotBucket,
    source: SnapshotSource,
    dir: &Path,
    attempt: u32,
) -> Result<SnapshotSource> {
    let what = at.describe(source);
    let gone = |why: String| Error::new(ErrorKind::NotFound, format!("{what} is gone ({why})"));
    let lease_id = format!("fluss-lake-host-{}", uuid::Uuid::new_v4());
    let duration_ms = i64::try_from(access.lease_duration.as_millis()).unwrap_or(i64::MAX);
    let acquire = || {
        admin.create_kv_snapshot_lease(
            &lease_id,
            duration_ms,
            vec![KvSnapshotLeaseForTable {
                table_id: at.table_id,
                bucket_snapshots: vec![KvSnapshotLeaseForBucket {
                    partition_id: at.partition_id,
                    bucket_id: at.bucket,
                    snapshot_id: source.snapshot_id,
                }],
            }],
        )
    };
    // The guard comes first: a request interrupted after the cluster took it (a cancelled
    // split, a lost answer) still has its lease dropped. Dropping an unknown lease is harmless.
    let lease = Lease {
        admin: admin.clone(),
        id: Some(lease_id.clone()),
        what: what.clone(),
    };
    let leased = acquire()
        .await
        .map_err(|e| Error::new(ErrorKind::Fluss, format!("{what}: cannot lease it: {e}")))?;
    if !leased.unavailable_snapshots.is_empty() {
        return Err(gone("the cluster cannot lease it".into()));
    }
    if attempt == 1 {
        failpoints::hit(failpoints::KV_SNAPSHOT_LEASED).await;
    }
    let copy = async {
        // Asked for under the lease: an answer means the snapshot was still registered once
        // the lease existed. (A snapshot being replaced at that moment may still lose its files;
        // a copy then finds them missing, which is the same "gone".)
        let metadata = admin
            .get_kv_snapshot_metadata(at.table_id, at.partition_id, at.bucket, source.snapshot_id)
            .await
            .map_err(|e| {
                if e.api_error() == Some(fluss::rpc::FlussError::KvSnapshotNotExist) {
                    gone(e.to_string())
                } else {
                    Error::new(
                        ErrorKind::Fluss,
                        format!("{what}: cannot list its files: {e}"),
                    )
                }
            })?;
        for f in &metadata.snapshot_files {
            let name = plain_file_name(&f.local_file_name).ok_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "{what}: the file name '{}' is not a plain file name",
                        f.local_file_name
                    ),
                )
            })?;
            // Only the tables are read ([`sst::MergedView`]): RocksDB's MANIFEST, OPTIONS and
            // CURRENT are not copied.
            if !name.ends_with(".sst") {
                continue;
            }
            let remote = RemotePath::parse(&f.remote_path).ok_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("{what}: '{}' is not a remote path", f.remote_path),
                )
            })?;
            access
                .storage
                .download(&remote, &dir.join(name))
                .await
                .map_err(|e| match e.kind() {
                    ErrorKind::NotFound => gone(format!("{} {}", f.remote_path, e.message())),
                    kind => Error::new(kind, format!("{what}: {} {}", f.remote_path, e.message())),
                })?;
        }
        Ok::<i64, Error>(metadata.log_offset)
    };
    // Renewed while the files are copied: a copy longer than the lease keeps its snapshot.
    let renew = async {
        let every = (access.lease_duration / 3).max(Duration::from_secs(1));
        loop {
            tokio::time::sleep(every).await;
            if let Err(e) = acquire().await {
                tracing::warn!(lease = lease_id, "could not renew the lease of {what}: {e}");
            }
        }
    };
    let log_offset = tokio::select! {
        copied = copy => copied?,
        _ = renew => unreachable!("the renewal never ends"),
    };
    lease.drop_now().await;
    Ok(SnapshotSource {
        snapshot_id: source.snapshot_id,
        log_offset,
    })
}

/// `name` when it names a file in a directory and nothing else.
fn plain_file_name(name: &str) -> Option<&str> {
    (!name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']))
        .then_some(name)
}

/// The checkpoint in `dir`, decoded and sent in batches.
fn decode(
    dir: &Path,
    decoder: &values::ValueDecoder,
    batch_rows: usize,
    tx: &mpsc::Sender<RecordBatch>,
) -> Result<()> {
    let mut pending: Vec<Vec<u8>> = Vec::with_capacity(batch_rows);
    let mut pending_bytes = 0;
    let send = |pending: &mut Vec<Vec<u8>>| -> Result<bool> {
        if pending.is_empty() {
            return Ok(true);
        }
        let batch = decoder.batch(pending.iter().map(Vec::as_slice))?;
        pending.clear();
        Ok(tx.blocking_send(batch).is_ok())
    };
    for entry in sst::MergedView::open(dir)? {
        let (_, value) = entry?;
        pending_bytes += value.len();
        pending.push(value);
        if pending.len() == batch_rows || pending_bytes >= MAX_BATCH_VALUE_BYTES {
            pending_bytes = 0;
            if !send(&mut pending)? {
                return Err(abandoned());
            }
        }
    }
    if !send(&mut pending)? {
        return Err(abandoned());
    }
    Ok(())
}

/// A closed channel: the split was abandoned, and what was read is no whole snapshot.
pub(crate) fn abandoned() -> Error {
    Error::new(
        ErrorKind::Cancelled,
        "the split ended before the snapshot was read",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_file_names_are_copied_into() {
        assert_eq!(plain_file_name("000012.sst"), Some("000012.sst"));
        assert_eq!(plain_file_name("CURRENT"), Some("CURRENT"));
        for bad in ["", ".", "..", "../x", "a/b", "/etc/passwd", "a\\b"] {
            assert_eq!(plain_file_name(bad), None, "{bad}");
        }
    }
}
