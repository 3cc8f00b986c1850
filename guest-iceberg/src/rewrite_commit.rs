//! Committing a data-file rewrite as Iceberg's `RewriteFiles` with
//! `use-starting-sequence-number` (the default of Iceberg's `RewriteDataFiles`): a `replace`
//! snapshot where the rewritten files are `DELETED` and the new ones `ADDED` with the data
//! sequence number of the snapshot the rewrite read. Equality deletes committed after that
//! snapshot therefore still apply to the new files, and earlier ones (already applied while
//! rewriting) do not apply again.
//!
//! On a lost race (the SDK's commit kit retries) the commit is planned again on the new table
//! version after validating it
//! (Java's `validateNoNewDeletesForDataFiles` with equality deletes ignored, and its check
//! that every replaced file is still live): the rewrite is abandoned when a rewritten file was
//! removed meanwhile, or a position delete committed since the start deletes rows of one.
//!
//! Dangling deletes of the compacted partitions go in the same snapshot (Iceberg's
//! remove-dangling-deletes): a delete file is `DELETED` when no live data file of its
//! partition can match it any more: an equality delete whose data sequence number is not
//! above the partition's lowest live data file's, a position delete below it, or a position
//! delete of a rewritten file.

use std::collections::{HashMap, HashSet};

use fluss_lake_guest_sdk::commit::Written;
use fluss_lake_guest_sdk::layout::relative_path;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result};

use crate::deletes::{DeleteSource, position_delete_references};
use crate::manifest::{
    DataFile, FileContent, MANIFEST_DATA, ManifestEntry, ManifestFile, ManifestWriter,
};
use crate::merge::MergePolicy;
use crate::metadata::Snapshot;
use crate::partition::PartitionValue;
use crate::producer::{self, SnapshotAttempt, SnapshotChange, commit_snapshot};
use crate::summary::{Change, MAINTENANCE_COMMIT_USER, summary};
use crate::tables::{self, Loaded};

/// A rewrite ready to commit.
pub struct Rewrite<'a> {
    /// The snapshot the rewrite read.
    pub start: &'a Snapshot,
    /// The data files it replaces (their entries at `start`).
    pub removed: &'a [ManifestEntry],
    /// The files replacing them.
    pub added: &'a [DataFile],
    /// Bound of the memory reading a position delete file may take (validation).
    pub delete_limit: u64,
}

/// How a rewrite commit ended.
#[derive(Debug)]
pub enum Outcome {
    Committed(Snapshot),
    /// A concurrent change made the rewrite stale (why).
    Abandoned(String),
}

/// A partition of a partition spec: the spec id and the partition tuple.
pub(crate) type PartitionKey = (i32, Vec<Option<PartitionValue>>);

pub(crate) fn partition_of(f: &DataFile) -> PartitionKey {
    (f.spec_id, f.partition.clone())
}

/// The manifests of the new snapshot, or why the rewrite must be abandoned.
enum Planned {
    Manifests {
        manifests: Vec<ManifestFile>,
        dropped_deletes: Vec<DataFile>,
    },
    Abandon(String),
}

/// Commits `rewrite` on the newest table version through the commit kit, validating it again
/// after every lost race. The rewrite's new data files (`added`) are the kit's to keep or
/// delete: deleted when the rewrite is abandoned or provably not published, kept when
/// published or when the outcome is unknown.
pub fn commit(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    rewrite: &Rewrite<'_>,
) -> Result<Outcome> {
    let base =
        tables::load(storage)?.ok_or_else(|| Error::not_found("Iceberg table has no metadata"))?;
    let location = base.metadata.location()?.to_string();
    let mut prepared = Written::new(storage);
    for f in rewrite.added {
        match relative_path(&location, &f.file_path) {
            Ok(rel) => prepared.add(rel),
            Err(e) => fluss_lake_guest_sdk::warn!("not tracking {}: {e}", f.file_path),
        }
    }
    let mut change = RewriteChange {
        storage,
        plugin_config,
        rewrite,
    };
    let outcome = commit_snapshot(storage, "Iceberg rewrite", prepared, &mut change)?;
    Ok(match outcome {
        producer::Outcome::Committed(snapshot) => Outcome::Committed(snapshot),
        producer::Outcome::Nothing(why) => Outcome::Abandoned(why),
    })
}

/// A rewrite as the commit kit runs it.
struct RewriteChange<'a> {
    storage: &'a dyn Storage,
    plugin_config: &'a [(String, String)],
    rewrite: &'a Rewrite<'a>,
}

impl SnapshotChange for RewriteChange<'_> {
    type Nothing = String;

    fn plan(&mut self, attempt: &mut SnapshotAttempt<'_>) -> Result<producer::Planned<String>> {
        if let Some(why) = not_descended_from(attempt.base, self.rewrite.start)? {
            return Ok(producer::Planned::Nothing(why));
        }
        let policy = MergePolicy::of(self.plugin_config, &attempt.base.metadata)?;
        let (manifests, dropped_deletes) = match plan(self.storage, attempt, &policy, self.rewrite)?
        {
            Planned::Manifests {
                manifests,
                dropped_deletes,
            } => (manifests, dropped_deletes),
            Planned::Abandon(why) => return Ok(producer::Planned::Nothing(why)),
        };
        let removed: Vec<DataFile> = self
            .rewrite
            .removed
            .iter()
            .map(|e| e.file.clone())
            .chain(dropped_deletes)
            .collect();
        let summary = summary(
            "replace",
            Change {
                added: self.rewrite.added,
                removed: &removed,
            },
            attempt.parent.as_ref(),
            MAINTENANCE_COMMIT_USER,
            &[],
        );
        Ok(producer::Planned::Snapshot { manifests, summary })
    }
}

/// Why `base` cannot take a rewrite started at `start`: `start` is not its current
/// snapshot's ancestor (the table's history was replaced).
fn not_descended_from(base: &Loaded, start: &Snapshot) -> Result<Option<String>> {
    let snapshots = base.metadata.snapshots()?;
    let mut next = base.metadata.current_snapshot_id();
    let mut steps = 0;
    while let Some(id) = next {
        if id == start.snapshot_id {
            return Ok(None);
        }
        next = snapshots
            .iter()
            .find(|s| s.snapshot_id == id)
            .and_then(|s| s.parent_snapshot_id);
        steps += 1;
        if steps > snapshots.len() {
            break;
        }
    }
    Ok(Some(format!(
        "snapshot {} the rewrite read is no longer an ancestor of the current snapshot",
        start.snapshot_id
    )))
}

/// Rewrites `manifest` with `entries` (its live ones), those `deleted` marked `DELETED`.
pub(crate) fn filtered(
    attempt: &mut SnapshotAttempt<'_>,
    manifest: &ManifestFile,
    entries: &[ManifestEntry],
    deleted: impl Fn(&ManifestEntry) -> bool,
) -> Result<ManifestFile> {
    let schema = attempt.manifest_schema(manifest.partition_spec_id)?;
    let mut writer: ManifestWriter<'_> = attempt.manifest_writer(&schema, manifest.content)?;
    for e in entries.iter().filter(|e| e.is_live()) {
        if deleted(e) {
            writer.delete(e)?;
        } else {
            writer.keep(e)?;
        }
    }
    attempt.store_manifest(writer)
}

fn plan(
    storage: &dyn Storage,
    attempt: &mut SnapshotAttempt<'_>,
    policy: &MergePolicy,
    rewrite: &Rewrite<'_>,
) -> Result<Planned> {
    let start_seq = rewrite.start.sequence_number;
    let removed: HashSet<&str> = rewrite
        .removed
        .iter()
        .map(|e| e.file.file_path.as_str())
        .collect();
    let compacted: HashSet<PartitionKey> = rewrite
        .removed
        .iter()
        .map(|e| partition_of(&e.file))
        .collect();
    // The lowest data sequence number of each compacted partition's live data files after
    // this commit (the new files carry the starting one).
    let mut min_data_seq: HashMap<PartitionKey, i64> = HashMap::new();
    for f in rewrite.added {
        min_data_seq.insert(partition_of(f), start_seq);
    }
    let mut data_manifests = Vec::new();
    let mut delete_manifests = Vec::new();
    let mut found: HashSet<String> = HashSet::new();
    for m in attempt.parent_manifests()? {
        if m.content != MANIFEST_DATA {
            delete_manifests.push(m);
            continue;
        }
        let entries = attempt.read_entries(&m)?;
        let mut hits = 0;
        for e in entries.iter().filter(|e| e.is_live()) {
            if removed.contains(e.file.file_path.as_str()) {
                found.insert(e.file.file_path.clone());
                hits += 1;
            } else if compacted.contains(&partition_of(&e.file)) {
                let seq = e.data_sequence_number();
                min_data_seq
                    .entry(partition_of(&e.file))
                    .and_modify(|s| *s = (*s).min(seq))
                    .or_insert(seq);
            }
        }
        if hits == 0 {
            data_manifests.push(m);
        } else {
            let rewritten = filtered(attempt, &m, &entries, |e| {
                removed.contains(e.file.file_path.as_str())
            })?;
            data_manifests.push(rewritten);
        }
    }
    if found.len() != removed.len() {
        return Ok(Planned::Abandon(format!(
            "{} of the {} files to replace were removed by a concurrent commit",
            removed.len() - found.len(),
            removed.len()
        )));
    }

    let location = attempt.location.clone();
    let schema = attempt.base.metadata.current_schema()?;
    let source = DeleteSource {
        storage,
        location: &location,
        schema: &schema,
        limit: rewrite.delete_limit,
    };
    let mut dropped_deletes = Vec::new();
    let mut filtered_deletes = Vec::new();
    for m in delete_manifests {
        let entries = attempt.read_entries(&m)?;
        let mut dangling: HashSet<String> = HashSet::new();
        for e in entries.iter().filter(|e| e.is_live()) {
            let key = partition_of(&e.file);
            if !compacted.contains(&key) {
                continue;
            }
            let seq = e.data_sequence_number();
            let positional = e.file.content == FileContent::PositionDeletes;
            if positional && seq > start_seq && position_delete_references(&source, e, &removed)? {
                return Ok(Planned::Abandon(format!(
                    "position delete file {} committed since snapshot {} deletes rows of a \
                     file being rewritten",
                    e.file.file_path, rewrite.start.snapshot_id
                )));
            }
            let lowest = min_data_seq.get(&key).copied().unwrap_or(i64::MAX);
            let applies_to_nothing = if positional {
                seq < lowest
                    || e.file
                        .referenced_data_file
                        .as_deref()
                        .is_some_and(|r| removed.contains(r))
            } else {
                seq <= lowest
            };
            if applies_to_nothing {
                dangling.insert(e.file.file_path.clone());
            }
        }
        if dangling.is_empty() {
            filtered_deletes.push(m);
        } else {
            dropped_deletes.extend(
                entries
                    .iter()
                    .filter(|e| e.is_live() && dangling.contains(&e.file.file_path))
                    .map(|e| e.file.clone()),
            );
            filtered_deletes.push(filtered(attempt, &m, &entries, |e| {
                dangling.contains(&e.file.file_path)
            })?);
        }
    }

    let this = attempt.snapshot_id;
    let keep = |m: &ManifestFile| m.has_live_files() || m.added_snapshot_id == this;
    let mut data_list = Vec::new();
    if !rewrite.added.is_empty() {
        let spec_id = rewrite.added[0].spec_id;
        let schema = attempt.manifest_schema(spec_id)?;
        let mut writer = attempt.manifest_writer(&schema, MANIFEST_DATA)?;
        for f in rewrite.added {
            writer.add(f, Some(start_seq))?;
        }
        data_list.push(attempt.store_manifest(writer)?);
    }
    data_list.extend(data_manifests.into_iter().filter(keep));
    let delete_list: Vec<ManifestFile> = filtered_deletes.into_iter().filter(keep).collect();
    let mut manifests = policy.on_commit(attempt, data_list)?;
    manifests.extend(policy.on_commit(attempt, delete_list)?);
    Ok(Planned::Manifests {
        manifests,
        dropped_deletes,
    })
}
