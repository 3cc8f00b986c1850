//! Manifest merging as a maintenance commit (Iceberg's `RewriteManifests`, operation
//! `replace`): when the current snapshot lists more manifests than
//! `commit.manifest.min-count-to-merge`, every bin of small manifests is merged (the same bins
//! as [`merge`](crate::merge), without the newest bin's minimum), the data unchanged. Tiering
//! commits merge as Java's `MergeAppend` does already; this catches tables whose manifests
//! piled up anyway (merging switched off on commit, other writers' fast appends).

use fluss_lake_guest_sdk::Result;
use fluss_lake_guest_sdk::commit::Written;
use fluss_lake_guest_sdk::storage::Storage;

use crate::manifest::{MANIFEST_DATA, ManifestFile};
use crate::merge::{MergePolicy, merge_manifests};
use crate::metadata::Snapshot;
use crate::producer::{Outcome, Planned, SnapshotAttempt, SnapshotChange, commit_snapshot};
use crate::summary::{Change, MAINTENANCE_COMMIT_USER, summary};

/// Merges the current snapshot's manifests when it lists more than the table's
/// `commit.manifest.min-count-to-merge`; the committed `replace` snapshot, if any.
pub fn merge_if_too_many(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
) -> Result<Option<Snapshot>> {
    let mut change = ManifestMerge {
        plugin_config,
        before: 0,
    };
    let what = "Iceberg manifest merge";
    match commit_snapshot(storage, what, Written::new(storage), &mut change)? {
        Outcome::Committed(s) => {
            fluss_lake_guest_sdk::info!(
                "merged {} manifests (replace snapshot {})",
                change.before,
                s.snapshot_id
            );
            Ok(Some(s))
        }
        Outcome::Nothing(()) => Ok(None),
    }
}

/// A manifest merge as the commit kit runs it.
struct ManifestMerge<'a> {
    plugin_config: &'a [(String, String)],
    /// Manifests the last attempt merged, for the log.
    before: usize,
}

impl SnapshotChange for ManifestMerge<'_> {
    type Nothing = ();

    fn plan(&mut self, attempt: &mut SnapshotAttempt<'_>) -> Result<Planned<()>> {
        let policy = MergePolicy::of(self.plugin_config, &attempt.base.metadata)?;
        if attempt.parent.is_none() {
            return Ok(Planned::Nothing(()));
        }
        let before = attempt.parent_manifests()?;
        let kept: Vec<ManifestFile> = before
            .iter()
            .filter(|m| m.has_live_files())
            .cloned()
            .collect();
        if kept.len() <= policy.min_count_to_merge {
            return Ok(Planned::Nothing(()));
        }
        let merged = merge_all(attempt, &policy, kept)?;
        if merged.len() >= before.len() {
            return Ok(Planned::Nothing(())); // every manifest is as large as the target already
        }
        self.before = before.len();
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
        Ok(Planned::Snapshot {
            manifests: merged,
            summary,
        })
    }
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
