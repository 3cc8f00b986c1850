//! A primary-key bucket's KV snapshot: the RocksDB checkpoint Fluss keeps of its state, read
//! for the first tiering round of a bucket that was never tiered (FlussLakeTiering's
//! `TieringSnapshotSplit`): its rows as they were at the snapshot's log offset, from which the
//! changelog continues.
//!
//! Reading one: lease the snapshot so the cluster keeps its files while they are copied
//! (`AcquireKvSnapshotLease`; Fluss #2512 is what happens without), ask for its files
//! (`GetKvSnapshotMetadata`), copy each through the host's remote storage into a directory of
//! its own, then drop the lease; decode the checkpoint's merged view ([`sst`]) into Arrow
//! batches of the table's rows ([`values`]). Work in progress (issue 34): not yet planned by
//! the rounds.

pub mod sst;
pub mod values;

use std::path::{Path, PathBuf};

use arrow::array::RecordBatch;
use fluss::client::FlussAdmin;
use fluss::metadata::{KvSnapshotLeaseForBucket, KvSnapshotLeaseForTable};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorKind, Result};
use crate::fluss::remote_dir::{RemotePath, RemoteStorage};

/// How long the cluster keeps a leased snapshot's files for the host: longer than copying
/// them takes; the lease is dropped as soon as they are copied.
const LEASE_MS: i64 = 60 * 60 * 1000;

/// The KV snapshot a bucket's first round starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotSource {
    pub snapshot_id: i64,
    /// The log offset the snapshot holds every change before (exclusive): where the bucket's
    /// changelog continues.
    pub log_offset: i64,
}

/// One bucket of a table, at a snapshot.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotBucket {
    pub table_id: i64,
    pub partition_id: Option<i64>,
    pub bucket: i32,
    pub source: SnapshotSource,
}

/// A local directory removed when dropped.
struct CopyDir(PathBuf);

impl Drop for CopyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reads `at`'s rows into batches of at most `batch_rows` rows of `decoder`'s table, sent to
/// `tx` in key order.
pub async fn read(
    admin: &FlussAdmin,
    storage: &RemoteStorage,
    at: SnapshotBucket,
    decoder: values::ValueDecoder,
    batch_rows: usize,
    tx: mpsc::Sender<RecordBatch>,
) -> Result<()> {
    let dir = CopyDir(std::env::temp_dir().join(format!(
        "{}{}-{}",
        crate::fluss::local_copies::KV_SNAPSHOTS,
        std::process::id(),
        uuid::Uuid::new_v4()
    )));
    std::fs::create_dir_all(&dir.0).map_err(|e| {
        Error::new(
            ErrorKind::Storage,
            format!("cannot create {}: {e}", dir.0.display()),
        )
    })?;
    copy_files(admin, storage, at, &dir.0).await?;
    let path = dir.0.clone();
    tokio::task::spawn_blocking(move || decode(&path, &decoder, batch_rows.max(1), &tx))
        .await
        .map_err(|e| Error::new(ErrorKind::Internal, format!("snapshot decoder failed: {e}")))??;
    drop(dir);
    Ok(())
}

/// Leases the snapshot, copies its files into `dir`, and drops the lease.
async fn copy_files(
    admin: &FlussAdmin,
    storage: &RemoteStorage,
    at: SnapshotBucket,
    dir: &Path,
) -> Result<()> {
    let what = format!(
        "KV snapshot {} of bucket {}{}",
        at.source.snapshot_id,
        at.bucket,
        at.partition_id
            .map(|p| format!(" of partition {p}"))
            .unwrap_or_default()
    );
    let gone = |why: String| {
        Error::new(
            ErrorKind::NotFound,
            format!("{what} is gone ({why}); the next round starts from a newer one"),
        )
    };
    let lease_id = format!("fluss-lake-host-{}", uuid::Uuid::new_v4());
    let leased = admin
        .create_kv_snapshot_lease(
            &lease_id,
            LEASE_MS,
            vec![KvSnapshotLeaseForTable {
                table_id: at.table_id,
                bucket_snapshots: vec![KvSnapshotLeaseForBucket {
                    partition_id: at.partition_id,
                    bucket_id: at.bucket,
                    snapshot_id: at.source.snapshot_id,
                }],
            }],
        )
        .await
        .map_err(|e| Error::new(ErrorKind::Fluss, format!("{what}: cannot lease it: {e}")))?;
    let copied = async {
        if !leased.unavailable_snapshots.is_empty() {
            return Err(gone("the cluster cannot lease it".into()));
        }
        let metadata = admin
            .get_kv_snapshot_metadata(
                at.table_id,
                at.partition_id,
                at.bucket,
                at.source.snapshot_id,
            )
            .await
            .map_err(|e| gone(e.to_string()))?;
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
            let remote = RemotePath::parse(&f.remote_path).ok_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("{what}: '{}' is not a remote path", f.remote_path),
                )
            })?;
            storage
                .download(&remote, &dir.join(name))
                .await
                .map_err(|e| match e.kind() {
                    ErrorKind::Storage if e.message().contains("not found") => {
                        gone(format!("{}: {}", f.remote_path, e.message()))
                    }
                    _ => Error::new(
                        e.kind(),
                        format!("{what}: {}: {}", f.remote_path, e.message()),
                    ),
                })?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = admin.drop_kv_snapshot_lease(&lease_id).await {
        // It expires on its own.
        tracing::warn!(lease = lease_id, "could not drop the lease of {what}: {e}");
    }
    copied
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
    let send = |pending: &mut Vec<Vec<u8>>| -> Result<bool> {
        if pending.is_empty() {
            return Ok(true);
        }
        let batch = decoder.batch(pending.iter().map(Vec::as_slice))?;
        pending.clear();
        // A closed channel: the split was abandoned.
        Ok(tx.blocking_send(batch).is_ok())
    };
    for entry in sst::MergedView::open(dir)? {
        let (_, value) = entry?;
        pending.push(value);
        if pending.len() == batch_rows && !send(&mut pending)? {
            return Ok(());
        }
    }
    send(&mut pending)?;
    Ok(())
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
