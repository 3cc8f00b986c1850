//! The data files a snapshot holds (Paimon's `FileStoreScan` of a snapshot): its base and
//! delta manifests read in order, each DELETE cancelling the ADD of the same file.

use std::collections::{BTreeMap, HashSet};

use fluss_lake_guest_sdk::Result;
use fluss_lake_guest_sdk::storage::Storage;

use crate::manifest::{
    FileIdentifier, FileKind, ManifestEntry, merge_entries, read_manifest, read_manifest_list,
};
use crate::snapshot::Snapshot;

/// A bucket of a partition: the serialized partition row and the bucket number.
pub type BucketKey = (Vec<u8>, i32);

/// The live data files of `snapshot`, only of `bucket` when given (manifests whose bucket
/// range excludes it are not read).
pub fn live_entries(
    storage: &dyn Storage,
    snapshot: &Snapshot,
    bucket: Option<i32>,
) -> Result<Vec<ManifestEntry>> {
    let mut manifests = read_manifest_list(storage, &snapshot.base_manifest_list)?;
    manifests.extend(read_manifest_list(storage, &snapshot.delta_manifest_list)?);
    let mut entries = Vec::new();
    for m in manifests {
        let covers = bucket.is_none_or(|b| {
            m.min_bucket.is_none_or(|lo| lo <= b) && m.max_bucket.is_none_or(|hi| b <= hi)
        });
        if covers {
            entries.extend(
                read_manifest(storage, &m.file_name)?
                    .into_iter()
                    .filter(|e| bucket.is_none_or(|b| e.bucket == b)),
            );
        }
    }
    Ok(merge_entries(entries)
        .into_iter()
        .filter(|e| e.kind == FileKind::Add)
        .collect())
}

/// A DELETE entry for every live data file of `snapshot` in `buckets`: what a commit that
/// replaces those buckets removes (only of the buckets asked: manifests whose bucket range
/// excludes all of them are not read).
pub fn replaced_entries(
    storage: &dyn Storage,
    snapshot: &Snapshot,
    buckets: &[BucketKey],
) -> Result<Vec<ManifestEntry>> {
    let mut by_bucket: BTreeMap<i32, HashSet<&[u8]>> = BTreeMap::new();
    for (partition, bucket) in buckets {
        by_bucket
            .entry(*bucket)
            .or_default()
            .insert(partition.as_slice());
    }
    let mut removed = Vec::new();
    for (bucket, partitions) in by_bucket {
        removed.extend(
            live_entries(storage, snapshot, Some(bucket))?
                .into_iter()
                .filter(|e| partitions.contains(e.partition.as_slice()))
                .map(|mut e| {
                    e.kind = FileKind::Delete;
                    e
                }),
        );
    }
    Ok(removed)
}

/// The live data files of `snapshot` by bucket, each bucket's files in manifest order.
pub fn live_files_by_bucket(
    storage: &dyn Storage,
    snapshot: &Snapshot,
) -> Result<BTreeMap<BucketKey, Vec<ManifestEntry>>> {
    let mut buckets: BTreeMap<BucketKey, Vec<ManifestEntry>> = BTreeMap::new();
    for e in live_entries(storage, snapshot, None)? {
        buckets
            .entry((e.partition.clone(), e.bucket))
            .or_default()
            .push(e);
    }
    Ok(buckets)
}

/// The identifiers of the live files of `snapshot` in `buckets`.
pub fn live_identifiers(
    storage: &dyn Storage,
    snapshot: &Snapshot,
    buckets: &HashSet<BucketKey>,
) -> Result<(HashSet<FileIdentifier>, Vec<ManifestEntry>)> {
    let entries: Vec<ManifestEntry> = live_entries(storage, snapshot, None)?
        .into_iter()
        .filter(|e| buckets.contains(&(e.partition.clone(), e.bucket)))
        .collect();
    Ok((
        entries.iter().map(ManifestEntry::identifier).collect(),
        entries,
    ))
}
