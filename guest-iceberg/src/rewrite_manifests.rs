//! Manifest merging as a maintenance commit (Iceberg's `RewriteManifests`, operation
//! `replace`): when the current snapshot lists more manifests than
//! `commit.manifest.min-count-to-merge`, every bin of small manifests is merged (the same bins
//! as [`merge`](crate::merge), without the newest bin's minimum), the data unchanged. Tiering
//! commits merge as Java's `MergeAppend` does already; this catches tables whose manifests
//! piled up anyway (merging switched off on commit, other writers' fast appends).

use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, ErrorKind, Result};

use crate::hadoop_tables;
use crate::manifest::{MANIFEST_DATA, ManifestFile};
use crate::merge::{MergePolicy, merge_manifests};
use crate::metadata::Snapshot;
use crate::producer::SnapshotAttempt;
use crate::summary::{Change, MAINTENANCE_COMMIT_USER, summary};

const MAX_ATTEMPTS: usize = 5;

/// Merges the current snapshot's manifests when it lists more than the table's
/// `commit.manifest.min-count-to-merge`; the committed `replace` snapshot, if any.
pub fn merge_if_too_many(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
) -> Result<Option<Snapshot>> {
    let mut last_conflict = None;
    for _ in 0..MAX_ATTEMPTS {
        let base = hadoop_tables::load(storage)?
            .ok_or_else(|| Error::not_found("Iceberg table has no metadata"))?;
        let policy = MergePolicy::of(plugin_config, &base.metadata)?;
        let mut attempt = SnapshotAttempt::new(storage, &base)?;
        if attempt.parent.is_none() {
            return Ok(None);
        }
        let before = attempt.parent_manifests()?;
        let kept: Vec<ManifestFile> = before
            .iter()
            .filter(|m| m.has_live_files())
            .cloned()
            .collect();
        if kept.len() <= policy.min_count_to_merge {
            return Ok(None);
        }
        let merged = match merge_all(&mut attempt, &policy, kept) {
            Ok(merged) => merged,
            Err(e) => {
                attempt.discard();
                return Err(e);
            }
        };
        if merged.len() >= before.len() {
            attempt.discard();
            return Ok(None); // every manifest is as large as the target already
        }
        let created = merged
            .iter()
            .filter(|m| m.added_snapshot_id == attempt.snapshot_id)
            .count();
        let kept_as_is = merged.len() - created;
        let entries: i64 = before
            .iter()
            .filter(|m| !merged.iter().any(|n| n.manifest_path == m.manifest_path))
            .map(ManifestFile::live_files)
            .sum();
        let mut summary = summary(
            "replace",
            Change::default(),
            attempt.parent.as_ref(),
            MAINTENANCE_COMMIT_USER,
            &[],
        );
        summary.extend([
            ("manifests-created".to_string(), created.to_string()),
            ("manifests-kept".to_string(), kept_as_is.to_string()),
            (
                "manifests-replaced".to_string(),
                (before.len() - kept_as_is).to_string(),
            ),
            ("entries-processed".to_string(), entries.to_string()),
        ]);
        match attempt.commit(&merged, summary) {
            Ok(s) => {
                fluss_lake_guest_sdk::info!(
                    "merged {} manifests into {} (replace snapshot {})",
                    before.len(),
                    merged.len(),
                    s.snapshot_id
                );
                return Ok(Some(s));
            }
            Err(e) if e.kind() == ErrorKind::Conflict => last_conflict = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_conflict.unwrap_or_else(|| Error::conflict("Iceberg manifest merge kept conflicting")))
}

/// Data manifests merged, then delete manifests, every bin of more than one merged.
fn merge_all(
    attempt: &mut SnapshotAttempt<'_>,
    policy: &MergePolicy,
    manifests: Vec<ManifestFile>,
) -> Result<Vec<ManifestFile>> {
    let (data, deletes): (Vec<_>, Vec<_>) = manifests
        .into_iter()
        .partition(|m| m.content == MANIFEST_DATA);
    let mut out = merge_manifests(attempt, data, policy.target_size_bytes, 0)?;
    out.extend(merge_manifests(
        attempt,
        deletes,
        policy.target_size_bytes,
        0,
    )?);
    Ok(out)
}
