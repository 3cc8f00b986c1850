//! The log segments a bucket's log has moved to Fluss's remote storage, read for fluss-rs's
//! scanners through the host's own stores ([`RemoteStorage`]) when a warehouse could be on
//! that store (local, S3, GCS, Azure); fluss-rs reads the others (`oss://`) itself.
//!
//! fluss-rs reads them itself with OpenDAL and the credentials the cluster hands out, which
//! serves S3 and OSS only: it has no GCS or Azure reader, Fluss 0.9 hands out no credentials
//! for GCS and an AAD bearer token for Azure that fluss-rs cannot read, and it waits for
//! credentials forever when the cluster has none. Its scanners take this reader instead
//! (`Config::remote_log_fetcher`, patched into the vendored crate), so every store a lake
//! warehouse can be on also holds the cluster's remote log, with the same option names.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fluss::client::{FetchResult, RemoteLogDownloadRequest, RemoteLogFetcher};

use super::local_copies;
use super::remote_dir::{RemotePath, RemoteStorage};
use crate::error::{Error, ErrorKind, Result};
use crate::warehouse::WarehouseUrl;

/// Copies each requested segment from the remote storage into a local directory of its own
/// (removed with it), where fluss-rs reads it and deletes it once read.
pub struct SegmentReader {
    storage: Arc<RemoteStorage>,
    dir: tempfile::TempDir,
    /// Names each copy apart: two splits of a bucket may ask for one segment at once.
    copies: AtomicU64,
}

impl SegmentReader {
    pub fn new(storage: Arc<RemoteStorage>) -> Result<Self> {
        let parent = std::env::temp_dir();
        local_copies::remove_stale(&parent);
        let dir = local_copies::create(&parent, local_copies::SEGMENTS).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("cannot create a local directory for remote log segments: {e}"),
            )
        })?;
        Ok(Self {
            storage,
            dir,
            copies: AtomicU64::new(0),
        })
    }
}

impl RemoteLogFetcher for SegmentReader {
    /// Local directories and the stores a warehouse can be on; the others (`oss://`) are
    /// left to fluss-rs's own reader, with the credentials the cluster hands out.
    fn serves(&self, remote_log_tablet_dir: &str) -> bool {
        match RemotePath::parse(remote_log_tablet_dir) {
            Some(RemotePath {
                root: Some(root), ..
            }) => WarehouseUrl::parse(&root).is_ok(),
            // Local, or not a path: then `fetch` says so.
            _ => true,
        }
    }

    fn fetch(
        &self,
        request: &RemoteLogDownloadRequest,
    ) -> Pin<Box<dyn Future<Output = fluss::error::Result<FetchResult>> + Send>> {
        let storage = self.storage.clone();
        let segment = request.segment();
        // `<tablet dir>/<segment id>/<start offset, 20 digits>.log`, as Fluss lays them out.
        let file = format!("{:020}.log", segment.start_offset);
        let path = RemotePath::parse(request.remote_log_tablet_dir())
            .map(|dir| dir.join([segment.segment_id.as_str(), file.as_str()]));
        let tablet_dir = request.remote_log_tablet_dir().to_string();
        let copy = self.copies.fetch_add(1, Ordering::Relaxed);
        let local: PathBuf = self
            .dir
            .path()
            .join(format!("{copy}-{}", segment.local_file_name()));
        Box::pin(async move {
            let path = path.ok_or_else(|| fluss::error::Error::IllegalArgument {
                message: format!(
                    "the cluster names a remote log directory that is not a plain path: {tablet_dir}"
                ),
            })?;
            // fluss-rs fails the poll at once (its `retries`): the store client has retried
            // what was transient, and the round reports the rest.
            let size = storage.download(&path, &local).await.map_err(|e| {
                fluss::error::Error::UnexpectedError {
                    message: format!("remote log segment {path} {}", e.message()),
                    source: None,
                }
            })?;
            Ok(FetchResult {
                file_path: local,
                file_size: size as usize,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warehouse::StorageOptions;

    #[test]
    fn the_host_reads_the_stores_a_warehouse_can_be_on_and_leaves_oss_to_fluss_rs() {
        let reader =
            SegmentReader::new(Arc::new(RemoteStorage::new(StorageOptions::default()))).unwrap();
        for dir in [
            "/data/remote/log/fluss/t-1/0",
            "file:///data/remote/log/fluss/t-1/0",
            "s3://bucket/remote/log/fluss/t-1/0",
            "s3a://bucket/remote/log/fluss/t-1/0",
            "gs://bucket/remote/log/fluss/t-1/0",
            "abfss://c@acct.dfs.core.windows.net/remote/log/fluss/t-1/0",
            "wasbs://c@acct.blob.core.windows.net/remote/log/fluss/t-1/0",
        ] {
            assert!(reader.serves(dir), "{dir}");
        }
        for dir in [
            "oss://bucket/remote/log/fluss/t-1/0",
            "hdfs://namenode:8020/remote/log",
        ] {
            assert!(!reader.serves(dir), "{dir}");
        }
        assert!(reader.dir.path().is_dir());
    }
}
