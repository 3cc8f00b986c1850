//! Paimon snapshots (`snapshot/snapshot-<id>`, JSON, Paimon `Snapshot` version 3) and the
//! `LATEST` / `EARLIEST` hint files.
//!
//! A snapshot is published with `put-if-absent`, which is the atomic step of a commit. The
//! hints are only hints (readers probe past them), so they are updated after publishing with
//! plain `put`s and their failure never fails a commit.
//!
//! A table of Paimon's REST catalog (`metastore=rest`) keeps its snapshots in the catalog: the
//! latest is the catalog's answer, and the catalog's server writes each snapshot file (and the
//! hints) when it commits it; older snapshots are read from their files, as Java Paimon's
//! `SnapshotManager` does under a `SnapshotLoader`.

use std::collections::BTreeMap;

use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::table_catalog::{self, CatalogKind};
use fluss_lake_guest_sdk::{Error, Result, ResultExt};
use serde::{Deserialize, Serialize};

/// Directory of snapshot files.
pub const SNAPSHOT_DIR: &str = "snapshot";
/// `Snapshot.CURRENT_VERSION`.
pub const SNAPSHOT_VERSION: i32 = 3;
/// `BatchWriteBuilder.COMMIT_IDENTIFIER` (`Long.MAX_VALUE`), what Fluss commits with.
pub const BATCH_COMMIT_IDENTIFIER: i64 = i64::MAX;

/// Paimon `Snapshot`, fields in the order Paimon's Jackson mapping writes them; optional ones
/// are omitted when absent, as Paimon's `@JsonInclude(NON_NULL)` does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Format version; absent in very old snapshots (= 1).
    #[serde(default)]
    pub version: Option<i32>,
    /// Snapshot id.
    pub id: i64,
    /// Schema id the snapshot was committed with.
    pub schema_id: i64,
    /// Manifest list of all files before this commit.
    pub base_manifest_list: String,
    /// Its size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_manifest_list_size: Option<i64>,
    /// Manifest list of this commit's changes.
    pub delta_manifest_list: String,
    /// Its size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_manifest_list_size: Option<i64>,
    /// Changelog manifest list (always written, null when none).
    #[serde(default)]
    pub changelog_manifest_list: Option<String>,
    /// Its size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_manifest_list_size: Option<i64>,
    /// Index manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_manifest: Option<String>,
    /// Who committed.
    pub commit_user: String,
    /// Commit identifier.
    pub commit_identifier: i64,
    /// `APPEND`, `COMPACT`, `OVERWRITE` or `ANALYZE`.
    pub commit_kind: String,
    /// Commit time, epoch millis.
    pub time_millis: i64,
    /// Log offsets (bucket → offset) of Paimon's own log systems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_offsets: Option<BTreeMap<String, i64>>,
    /// Rows in the table after this snapshot.
    #[serde(default)]
    pub total_record_count: Option<i64>,
    /// Rows added by this snapshot.
    #[serde(default)]
    pub delta_record_count: Option<i64>,
    /// Changelog rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changelog_record_count: Option<i64>,
    /// Watermark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<i64>,
    /// Statistics file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<String>,
    /// Snapshot properties (Fluss keeps `fluss-offsets` here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, String>>,
    /// Next row id (row tracking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_row_id: Option<i64>,
}

impl Snapshot {
    /// Pretty JSON, as Paimon writes snapshot files.
    pub fn to_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec_pretty(self).map_err(|e| Error::internal(format!("snapshot json: {e}")))
    }
    /// Parses a snapshot file.
    pub fn from_json(bytes: &[u8]) -> Result<Snapshot> {
        serde_json::from_slice(bytes).map_err(|e| Error::corrupt(format!("snapshot json: {e}")))
    }
}

/// Path of snapshot `id`.
pub fn snapshot_path(id: i64) -> String {
    format!("{SNAPSHOT_DIR}/snapshot-{id}")
}

const LATEST: &str = "snapshot/LATEST";
const EARLIEST: &str = "snapshot/EARLIEST";

/// Reads snapshot `id`, `None` when it does not exist (never committed or expired).
pub fn read_snapshot(storage: &dyn Storage, id: i64) -> Result<Option<Snapshot>> {
    let path = snapshot_path(id);
    match storage
        .get_opt(&path)
        .with_context(|| format!("reading {path}"))?
    {
        None => Ok(None),
        Some(bytes) => Snapshot::from_json(&bytes)
            .map(Some)
            .with_context(|| path.clone()),
    }
}

fn read_hint(storage: &dyn Storage, path: &str) -> Result<Option<i64>> {
    Ok(storage
        .get_opt(path)?
        .and_then(|b| String::from_utf8(b).ok()?.trim().parse().ok()))
}

fn listed_ids(storage: &dyn Storage) -> Result<Vec<i64>> {
    Ok(storage
        .list(SNAPSHOT_DIR)?
        .iter()
        .filter_map(|m| {
            m.path
                .rsplit('/')
                .next()?
                .strip_prefix("snapshot-")?
                .parse()
                .ok()
        })
        .collect())
}

/// Whether the table's catalog keeps its snapshots (Paimon's REST catalog).
pub fn catalog_keeps_snapshots() -> bool {
    table_catalog::current().kind() == CatalogKind::Versions
}

/// The id of the newest snapshot: the catalog's latest when it keeps the table's snapshots;
/// else the `LATEST` hint when it is current (its snapshot exists and the next one does not),
/// otherwise the highest id listed (Paimon `findLatest`).
pub fn latest_snapshot_id(storage: &dyn Storage) -> Result<Option<i64>> {
    if catalog_keeps_snapshots() {
        return match table_catalog::current().latest_version()? {
            None => Ok(None),
            Some(json) => Snapshot::from_json(json.as_bytes())
                .map(|s| Some(s.id))
                .context("the catalog's latest snapshot"),
        };
    }
    if let Some(hint) = read_hint(storage, LATEST)?
        && storage.head(&snapshot_path(hint))?.is_some()
    {
        // Probe a few ids past a stale hint before falling back to a listing.
        for id in hint..hint + 3 {
            if storage.head(&snapshot_path(id + 1))?.is_none() {
                return Ok(Some(id));
            }
        }
    }
    Ok(listed_ids(storage)?.into_iter().max())
}

/// The id of the oldest snapshot still present.
pub fn earliest_snapshot_id(storage: &dyn Storage) -> Result<Option<i64>> {
    if let Some(hint) = read_hint(storage, EARLIEST)?
        && storage.head(&snapshot_path(hint))?.is_some()
        && (hint == 1 || storage.head(&snapshot_path(hint - 1))?.is_none())
    {
        return Ok(Some(hint));
    }
    Ok(listed_ids(storage)?.into_iter().min())
}

/// Updates the hints after snapshot `id` was published: `LATEST` always, `EARLIEST` when
/// missing. Failures are logged, not returned: hints are optional.
pub fn update_hints(storage: &dyn Storage, id: i64) {
    if let Err(e) = storage.put(LATEST, id.to_string().as_bytes()) {
        fluss_lake_guest_sdk::warn!("could not update {LATEST}: {e}");
    }
    match storage.head(EARLIEST) {
        Ok(Some(_)) => {}
        Ok(None) => {
            if let Err(e) = storage.put(EARLIEST, id.to_string().as_bytes()) {
                fluss_lake_guest_sdk::warn!("could not write {EARLIEST}: {e}");
            }
        }
        Err(e) => fluss_lake_guest_sdk::warn!("could not check {EARLIEST}: {e}"),
    }
}

/// Points the `EARLIEST` hint at `id` after the snapshots before it were expired. Failures
/// are logged: readers probe past a stale hint.
pub fn set_earliest_hint(storage: &dyn Storage, id: i64) {
    if let Err(e) = storage.put(EARLIEST, id.to_string().as_bytes()) {
        fluss_lake_guest_sdk::warn!("could not update {EARLIEST}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::storage::MemoryStorage;

    use super::*;

    pub(crate) fn sample(id: i64) -> Snapshot {
        Snapshot {
            version: Some(SNAPSHOT_VERSION),
            id,
            schema_id: 0,
            base_manifest_list: "manifest-list-a-0".into(),
            base_manifest_list_size: Some(10),
            delta_manifest_list: "manifest-list-a-1".into(),
            delta_manifest_list_size: Some(20),
            changelog_manifest_list: None,
            changelog_manifest_list_size: None,
            index_manifest: None,
            commit_user: "__fluss_lake_tiering".into(),
            commit_identifier: BATCH_COMMIT_IDENTIFIER,
            commit_kind: "APPEND".into(),
            time_millis: 1_700_000_000_000,
            log_offsets: Some(BTreeMap::new()),
            total_record_count: Some(7),
            delta_record_count: Some(3),
            changelog_record_count: Some(0),
            watermark: None,
            statistics: None,
            properties: Some(BTreeMap::from([(
                "fluss-offsets".into(),
                "/o/1.offsets".into(),
            )])),
            next_row_id: None,
        }
    }

    #[test]
    fn json_matches_paimon_field_names_and_order() {
        let json = String::from_utf8(sample(4).to_json().unwrap()).unwrap();
        let keys: Vec<&str> = json
            .lines()
            .filter_map(|l| l.strip_prefix("  \"")?.split('"').next())
            .collect();
        assert_eq!(
            keys,
            [
                "version",
                "id",
                "schemaId",
                "baseManifestList",
                "baseManifestListSize",
                "deltaManifestList",
                "deltaManifestListSize",
                "changelogManifestList",
                "commitUser",
                "commitIdentifier",
                "commitKind",
                "timeMillis",
                "logOffsets",
                "totalRecordCount",
                "deltaRecordCount",
                "changelogRecordCount",
                "properties"
            ]
        );
        assert!(json.contains("\"commitIdentifier\": 9223372036854775807"));
        assert!(json.contains("\"changelogManifestList\": null"));
        assert_eq!(Snapshot::from_json(json.as_bytes()).unwrap(), sample(4));
    }

    #[test]
    fn finds_latest_with_stale_or_missing_hints() {
        let s = MemoryStorage::new();
        assert_eq!(latest_snapshot_id(&s).unwrap(), None);
        for id in 1..=3 {
            let snapshot = sample(id);
            s.put_if_absent(&snapshot_path(id), &snapshot.to_json().unwrap())
                .unwrap();
        }
        assert_eq!(latest_snapshot_id(&s).unwrap(), Some(3));
        update_hints(&s, 1);
        assert_eq!(latest_snapshot_id(&s).unwrap(), Some(3));
        assert_eq!(earliest_snapshot_id(&s).unwrap(), Some(1));
        s.delete(&snapshot_path(1)).unwrap();
        assert_eq!(earliest_snapshot_id(&s).unwrap(), Some(2));
    }
}
