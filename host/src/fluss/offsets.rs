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

/// The buckets whose offsets [`bucket_offsets`] lists.
#[derive(Debug, Clone, Copy)]
pub enum BucketsOf<'a> {
    /// Every bucket of a table without partitions: its bucket count.
    Table(i32),
    /// Every bucket of each of these partitions of a table: name and bucket count.
    Partitions(&'a [(&'a str, i32)]),
}

/// An offset of every bucket of `of`, one map (bucket → offset) per partition in the order
/// given, or one for a table without partitions. A table's partitions are listed together
/// (one metadata update, then their requests in flight together): listing them one by one
/// updated the client's metadata per partition, which made planning a wide table grow with
/// the square of its partitions.
pub async fn bucket_offsets(
    admin: &FlussAdmin,
    path: &TablePath,
    of: BucketsOf<'_>,
    end: LogEnd,
) -> Result<Vec<HashMap<i32, i64>>> {
    let spec = match end {
        LogEnd::Earliest => OffsetSpec::Earliest,
        LogEnd::Latest => OffsetSpec::Latest,
    };
    match of {
        BucketsOf::Table(buckets) => {
            let buckets: Vec<i32> = (0..buckets).collect();
            admin
                .list_offsets(path, &buckets, spec)
                .await
                .map(|o| vec![o])
        }
        BucketsOf::Partitions([]) => Ok(Vec::new()),
        BucketsOf::Partitions(partitions) => {
            let buckets: Vec<Vec<i32>> =
                partitions.iter().map(|(_, n)| (0..*n).collect()).collect();
            let named: Vec<(&str, &[i32])> = partitions
                .iter()
                .zip(&buckets)
                .map(|((name, _), b)| (*name, b.as_slice()))
                .collect();
            admin.list_partitions_offsets(path, &named, spec).await
        }
    }
    .map_err(|e| {
        Error::new(
            ErrorKind::Fluss,
            format!("cannot list the {end:?} offsets of {path}"),
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
