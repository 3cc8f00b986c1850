//! Manifest merging as Iceberg's `ManifestMergeManager` does it on every `MergeAppend`,
//! `RowDelta` and `RewriteFiles` commit (which is what Fluss's Java committer uses, so its
//! tables keep few manifests), and as a maintenance-only `replace` when a table still lists
//! too many.
//!
//! A snapshot's data manifests and delete manifests are merged apart. Within each, manifests
//! are grouped by partition spec (highest id first) and packed into bins of at most
//! `commit.manifest.target-size-bytes` from the end of the list (oldest first), so bins are
//! contiguous and the under-filled one holds the newest manifests. A bin of one manifest is
//! kept; the bin with the list's first manifest (the commit's new files) is merged only once
//! it has `commit.manifest.min-count-to-merge` manifests; every other bin is merged into one
//! manifest. Merged entries keep their snapshot id and sequence numbers (`EXISTING`), files
//! this snapshot added stay `ADDED`, and entries `DELETED` by earlier snapshots are dropped.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use fluss_lake_guest_sdk::{Error, Result, config};

use crate::bins::pack_end;
use crate::manifest::{ManifestFile, STATUS_DELETED};
use crate::metadata::TableMetadata;
use crate::producer::SnapshotAttempt;

/// Table property / plugin option: merge manifests on commit (default true).
pub const MERGE_ENABLED: &str = "commit.manifest-merge.enabled";
/// Table property / plugin option: manifests the newest bin needs before it is merged
/// (default 100).
pub const MIN_COUNT_TO_MERGE: &str = "commit.manifest.min-count-to-merge";
/// Table property / plugin option: the size merged manifests aim at (default 8 MiB).
pub const TARGET_SIZE_BYTES: &str = "commit.manifest.target-size-bytes";

/// How a table merges manifests: the plugin configuration first, then the table's
/// properties, then Iceberg's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergePolicy {
    pub enabled: bool,
    pub min_count_to_merge: usize,
    pub target_size_bytes: u64,
}

impl MergePolicy {
    pub fn of(plugin_config: &[(String, String)], metadata: &TableMetadata) -> Result<MergePolicy> {
        let get = |key: &str| config::get(plugin_config, key).or_else(|| metadata.property(key));
        let enabled = match get(MERGE_ENABLED).map(|v| v.trim().to_ascii_lowercase()) {
            None => true,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(v) => {
                return Err(Error::invalid_input(format!(
                    "{MERGE_ENABLED} = {v:?} is not a boolean"
                )));
            }
        };
        let min_count = config::parse_i64(MIN_COUNT_TO_MERGE, get(MIN_COUNT_TO_MERGE), 100)?;
        let target = config::parse_i64(TARGET_SIZE_BYTES, get(TARGET_SIZE_BYTES), 8 << 20)?;
        if target <= 0 {
            return Err(Error::invalid_input(format!(
                "{TARGET_SIZE_BYTES} = {target} must be positive"
            )));
        }
        Ok(MergePolicy {
            enabled,
            min_count_to_merge: min_count.max(0) as usize,
            target_size_bytes: target as u64,
        })
    }

    /// What a commit does with its manifests of one content class (`manifests`, the new ones
    /// first): merged as `MergeAppend` merges them, or unchanged when merging is off.
    pub fn on_commit(
        &self,
        attempt: &mut SnapshotAttempt<'_>,
        manifests: Vec<ManifestFile>,
    ) -> Result<Vec<ManifestFile>> {
        if !self.enabled {
            return Ok(manifests);
        }
        merge_manifests(
            attempt,
            manifests,
            self.target_size_bytes,
            self.min_count_to_merge,
        )
    }
}

/// Merges `manifests` (of one content class) as `ManifestMergeManager.mergeManifests` does:
/// the bin holding the list's first manifest is merged only with at least `first_bin_min`
/// manifests, every other bin of more than one manifest always.
pub fn merge_manifests(
    attempt: &mut SnapshotAttempt<'_>,
    manifests: Vec<ManifestFile>,
    target_size_bytes: u64,
    first_bin_min: usize,
) -> Result<Vec<ManifestFile>> {
    let Some(first) = manifests.first().map(|m| m.manifest_path.clone()) else {
        return Ok(manifests);
    };
    let mut by_spec: BTreeMap<Reverse<i32>, Vec<ManifestFile>> = BTreeMap::new();
    for m in manifests {
        by_spec
            .entry(Reverse(m.partition_spec_id))
            .or_default()
            .push(m);
    }
    let mut out = Vec::new();
    for (Reverse(spec_id), group) in by_spec {
        for bin in pack_end(group, target_size_bytes, |m| {
            m.manifest_length.max(0) as u64
        }) {
            let has_first = bin.iter().any(|m| m.manifest_path == first);
            if bin.len() == 1 || (has_first && bin.len() < first_bin_min) {
                out.extend(bin);
            } else {
                out.push(merge_bin(attempt, spec_id, &bin)?);
            }
        }
    }
    Ok(out)
}

/// One manifest with the entries of `bin`, read one manifest at a time.
fn merge_bin(
    attempt: &mut SnapshotAttempt<'_>,
    spec_id: i32,
    bin: &[ManifestFile],
) -> Result<ManifestFile> {
    let schema = attempt.manifest_schema(spec_id)?;
    let mut writer = attempt.manifest_writer(&schema, bin[0].content)?;
    for m in bin {
        for e in attempt.read_entries(m)? {
            if e.status == STATUS_DELETED {
                // Deletes of earlier snapshots are history; only this snapshot's stay.
                if e.snapshot_id == Some(attempt.snapshot_id) {
                    writer.delete(&e)?;
                }
            } else {
                writer.keep(&e)?;
            }
        }
    }
    attempt.store_manifest(writer)
}
