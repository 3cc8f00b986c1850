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

/// Which end of the log to ask for.
#[derive(Debug, Clone, Copy)]
pub enum LogEnd {
    /// The log start offset.
    Earliest,
    /// The high watermark (what Fluss calls "latest").
    Latest,
}

/// An offset of every bucket of a table, or of one partition of it.
pub async fn bucket_offsets(
    admin: &FlussAdmin,
    path: &TablePath,
    partition_name: Option<&str>,
    num_buckets: i32,
    end: LogEnd,
) -> Result<HashMap<i32, i64>> {
    let buckets: Vec<i32> = (0..num_buckets).collect();
    let spec = match end {
        LogEnd::Earliest => OffsetSpec::Earliest,
        LogEnd::Latest => OffsetSpec::Latest,
    };
    match partition_name {
        None => admin.list_offsets(path, &buckets, spec).await,
        Some(p) => admin.list_partition_offsets(path, p, &buckets, spec).await,
    }
    .map_err(|e| {
        Error::new(
            ErrorKind::Fluss,
            format!(
                "cannot list the {end:?} offsets of {path}{}",
                partition_name
                    .map(|p| format!(" partition {p}"))
                    .unwrap_or_default()
            ),
        )
        .with_source(e)
    })
}

/// One partition of a table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Partition {
    pub id: i64,
    /// Fluss partition name: values joined by `$`, in partition-key order.
    pub name: String,
    /// The partition's own bucket count, which Fluss 1.0 sends for partitions created before
    /// the table's `bucket.num` last changed; `None` (servers before 1.0, tables never
    /// rescaled) means the table's count.
    pub buckets: Option<i32>,
}

/// The partitions of a table, by id.
pub async fn partitions(admin: &FlussAdmin, path: &TablePath) -> Result<Vec<Partition>> {
    let infos = admin.list_partition_infos(path).await.map_err(|e| {
        Error::new(
            ErrorKind::Fluss,
            format!("cannot list the partitions of {path}"),
        )
        .with_source(e)
    })?;
    let mut parts: Vec<Partition> = infos
        .iter()
        .map(|p| Partition {
            id: p.get_partition_id(),
            name: p.get_partition_name(),
            buckets: p.get_bucket_count(),
        })
        .collect();
    parts.sort();
    Ok(parts)
}
