//! Lake snapshot and log offset lookups for split generation and commits.

use std::collections::HashMap;

use fluss::client::FlussAdmin;
use fluss::metadata::TablePath;
use fluss::rpc::message::OffsetSpec;

use crate::error::{Error, ErrorKind, Result};

/// The tiered offsets Fluss holds for a table: the latest lake snapshot id and, per bucket,
/// the exclusive end offset already in the lake.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TieredOffsets {
    pub snapshot_id: Option<i64>,
    /// (partition id, bucket) → exclusive end offset.
    pub buckets: HashMap<(Option<i64>, i32), i64>,
}

/// The latest lake snapshot Fluss knows, or an empty one for a never-tiered table.
pub async fn latest_tiered_offsets(admin: &FlussAdmin, path: &TablePath) -> Result<TieredOffsets> {
    match admin.get_latest_lake_snapshot(path).await {
        Ok(snapshot) => Ok(TieredOffsets {
            snapshot_id: Some(snapshot.snapshot_id),
            buckets: snapshot
                .table_buckets_offset
                .into_iter()
                .map(|(tb, offset)| ((tb.partition_id(), tb.bucket_id()), offset))
                .collect(),
        }),
        Err(e) if e.api_error() == Some(fluss::rpc::FlussError::LakeSnapshotNotExist) => {
            Ok(TieredOffsets::default())
        }
        Err(e) => Err(Error::new(
            ErrorKind::Fluss,
            format!("cannot read the lake snapshot of {path}"),
        )
        .with_source(e)),
    }
}

/// The high watermark (Fluss's "latest" offset) of every bucket of a non-partitioned table.
pub async fn high_watermarks(
    admin: &FlussAdmin,
    path: &TablePath,
    num_buckets: i32,
) -> Result<HashMap<i32, i64>> {
    let buckets: Vec<i32> = (0..num_buckets).collect();
    admin
        .list_offsets(path, &buckets, OffsetSpec::Latest)
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Fluss,
                format!("cannot list the offsets of {path}"),
            )
            .with_source(e)
        })
}
