//! Version cleanup, as Lance's `cleanup_old_versions` (and the auto-cleanup hook Lance writers
//! run every `lance.auto_cleanup.interval` commits) does it.
//!
//! Which versions go: those older than `lance.auto_cleanup.older_than` (a humantime duration
//! such as `14days` or `3600s`) and, with `lance.auto_cleanup.retain_versions = n`, not among
//! the newest `n` — the dataset's manifest config, overridden by the plugin configuration's
//! keys of the same names; with neither set, versions older than 14 days go (pylance's
//! default). Never removed: the latest version, `keep_since` (the version Fluss registered) and
//! every newer one, the newest version Fluss's tiering committed (recovery reads its
//! `fluss-offsets`), tagged versions (`_refs/tags/*.json`: kept, as Lance's auto-cleanup does
//! with `error_if_tagged_old_versions = false`, instead of failing) and detached versions. At
//! most [`MAX_EXPIRED_PER_CALL`] go per call, oldest first.
//!
//! Which files go: every retained manifest is read and the files it references (fragment data
//! files, deletion files, its transaction file, index directories) are kept. A file only
//! expired manifests reference ("verified") is deleted; a file no manifest references (left by
//! a failed commit) only once it is 7 days old, as Lance does, since a writer may have written
//! it and not committed yet. Neither is deleted unless it was last modified before the cutoff
//! (`now - older_than`, or without `older_than` the oldest retained version's time, as Lance
//! 14 lists files). The expired manifests are deleted first, so a crash in between leaves
//! unreferenced files (the next cleanup's orphans), never a version missing its files.
//!
//! Refused (`unsupported`, nothing deleted): datasets with branches, several base paths or
//! feature flags this plugin does not know, or more versions than [`MAX_MANIFESTS_READ`] to
//! read. The deadline is checked while the manifests are read (nothing is deleted if it passes
//! first) and between deletions.

use std::collections::{HashMap, HashSet};

use fluss_lake_guest_sdk::maintenance::Expired;
use fluss_lake_guest_sdk::storage::{ObjectMeta, Storage};
use fluss_lake_guest_sdk::{Error, FLUSS_COMMIT_USER, Result, ResultExt, config};
use prost::Message;

use crate::deletion::{self, DELETIONS_DIR};
use crate::proto::lance::table as pb;
use crate::versions::COMMIT_USER;
use crate::versions::{self, Naming, TRANSACTIONS_DIR, VERSIONS_DIR};

/// Manifest config / plugin option: versions older than this (humantime) may go.
pub const OLDER_THAN: &str = "lance.auto_cleanup.older_than";
/// Manifest config / plugin option: the newest this many versions stay.
pub const RETAIN_VERSIONS: &str = "lance.auto_cleanup.retain_versions";
/// pylance's `cleanup_old_versions` default when no selector is given.
const DEFAULT_OLDER_THAN_MS: i64 = 14 * 86_400_000;
/// Lance's `UNVERIFIED_THRESHOLD_DAYS`: files no manifest references are deleted only once
/// this old.
const UNVERIFIED_MS: i64 = 7 * 86_400_000;
/// Versions removed by one call at most, oldest first.
pub const MAX_EXPIRED_PER_CALL: usize = 100;
/// Manifests one call reads at most; a dataset with more versions is refused (lower
/// `lance.auto_cleanup.older_than` or set `retain_versions` and clean it with Lance once).
pub const MAX_MANIFESTS_READ: usize = 10_000;
const DATA_DIR: &str = "data";
const INDICES_DIR: &str = "_indices";
const TAGS_DIR: &str = "_refs/tags";
const BRANCHES_DIR: &str = "_refs/branches";

/// Reader/writer feature flags cleanup understands: deletion files, stable row ids (their
/// sequences are not under the directories cleanup lists), table config.
const KNOWN_FLAGS: u64 = 1 | 2 | 8;

/// Which versions may go, from the dataset's config and the plugin's.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub older_than_ms: Option<i64>,
    pub retain_versions: Option<u64>,
}

impl Policy {
    pub fn of(
        plugin_config: &[(String, String)],
        manifest_config: &HashMap<String, String>,
    ) -> Result<Policy> {
        let get = |k: &str| {
            config::get(plugin_config, k).or_else(|| manifest_config.get(k).map(String::as_str))
        };
        let older_than_ms = get(OLDER_THAN)
            .map(|v| {
                humantime::parse_duration(v.trim())
                    .map(|d| d.as_millis().min(i64::MAX as u128) as i64)
                    .map_err(|e| Error::invalid_input(format!("{OLDER_THAN} = {v:?}: {e}")))
            })
            .transpose()?;
        let retain_versions = get(RETAIN_VERSIONS)
            .map(|v| match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(Error::invalid_input(format!(
                    "{RETAIN_VERSIONS} = {v:?} must be a positive integer"
                ))),
            })
            .transpose()?;
        Ok(Policy {
            older_than_ms: older_than_ms
                .or((retain_versions.is_none()).then_some(DEFAULT_OLDER_THAN_MS)),
            retain_versions,
        })
    }
}

/// Epoch millis of a manifest's timestamp (0 without one, as Lance reads it).
pub fn manifest_millis(m: &pb::Manifest) -> i64 {
    m.timestamp
        .as_ref()
        .map_or(0, |t| t.seconds * 1000 + t.nanos as i64 / 1_000_000)
}

/// Files a manifest references, as paths relative to the dataset (index directories as
/// `_indices/<uuid>`).
pub fn referenced_files(raw: &[u8], m: &pb::Manifest) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for f in &m.fragments {
        for file in f
            .files
            .iter()
            .chain(f.overlays.iter().filter_map(|o| o.data_file.as_ref()))
        {
            out.push(format!("{DATA_DIR}/{}", file.path));
        }
        if let Some(d) = &f.deletion_file {
            out.push(deletion::path(f.id, d));
        }
    }
    if !m.transaction_file.is_empty() {
        out.push(format!("{TRANSACTIONS_DIR}/{}", m.transaction_file));
    }
    if let Some(pos) = m.index_section {
        let section = pb::IndexSection::decode(versions::index_section(raw, pos)?.as_slice())
            .map_err(|e| Error::corrupt(format!("Lance index section: {e}")))?;
        for index in section.indices {
            if let Some(uuid) = index
                .uuid
                .and_then(|u| uuid::Uuid::from_slice(&u.uuid).ok())
            {
                out.push(format!("{INDICES_DIR}/{}", uuid.hyphenated()));
            }
        }
    }
    Ok(out)
}

/// Why cleanup refuses a dataset whose latest manifest is `m`.
fn unsupported_reason(storage: &dyn Storage, m: &pb::Manifest) -> Result<Option<String>> {
    let unknown = (m.reader_feature_flags | m.writer_feature_flags) & !KNOWN_FLAGS;
    if unknown != 0 {
        return Ok(Some(format!(
            "the dataset uses Lance feature flags {unknown:#x}"
        )));
    }
    if !m.base_paths.is_empty() {
        return Ok(Some("the dataset has several base paths".into()));
    }
    if !storage.list(BRANCHES_DIR)?.is_empty() {
        return Ok(Some("the dataset has branches (_refs/branches)".into()));
    }
    Ok(None)
}

/// The versions tags point at (`_refs/tags/<name>.json`: `{"version": n, ...}`).
fn tagged_versions(storage: &dyn Storage) -> Result<HashSet<u64>> {
    let mut out = HashSet::new();
    for tag in storage.list(TAGS_DIR)? {
        let body = storage.get(&tag.path)?;
        let v = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|j| j.get("version").and_then(|v| v.as_u64()))
            .ok_or_else(|| Error::corrupt(format!("Lance tag {} has no version", tag.path)))?;
        out.insert(v);
    }
    Ok(out)
}

/// A manifest file under `_versions/`.
struct VersionFile {
    version: u64,
    naming: Option<Naming>,
    meta: ObjectMeta,
}

/// Every manifest under `_versions/`, oldest first; detached ones (`d<v>.manifest`) have no
/// naming and are always retained.
fn version_files(storage: &dyn Storage) -> Result<Vec<VersionFile>> {
    let mut out: Vec<VersionFile> = storage
        .list(VERSIONS_DIR)?
        .into_iter()
        .filter_map(|meta| {
            let name = meta.path.rsplit('/').next().unwrap_or("");
            if let Some((version, naming)) = Naming::parse(name) {
                return Some(VersionFile {
                    version,
                    naming: Some(naming),
                    meta,
                });
            }
            let detached = name.strip_prefix('d')?.strip_suffix(".manifest")?;
            Some(VersionFile {
                version: detached.parse().ok()?,
                naming: None,
                meta,
            })
        })
        .collect();
    out.sort_by_key(|v| v.version);
    Ok(out)
}

/// The newest version whose transaction Fluss's tiering committed (newest first, as
/// `get_missing_lake_snapshot` finds it).
fn newest_tiering_version(storage: &dyn Storage, files: &[VersionFile]) -> Result<Option<u64>> {
    for f in files.iter().rev().filter(|f| f.naming.is_some()) {
        let Some(raw) = storage.get_opt(&f.meta.path)? else {
            continue;
        };
        let m = versions::decode_manifest(&raw).map_err(|e| e.context(&f.meta.path))?;
        if versions::read_transaction(storage, &m)?.is_some_and(|tx| {
            tx.transaction_properties
                .get(COMMIT_USER)
                .map(String::as_str)
                == Some(FLUSS_COMMIT_USER)
        }) {
            return Ok(Some(f.version));
        }
    }
    Ok(None)
}

/// Removes the versions `policy` no longer keeps and the files only they referenced.
pub fn cleanup(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    keep_since: Option<i64>,
    now: &dyn Fn() -> i64,
    deadline_millis: i64,
) -> Result<Expired> {
    let mut done = Expired::default();
    let files = version_files(storage)?;
    let Some(head) = files.iter().rev().find(|f| f.naming.is_some()) else {
        return Ok(done);
    };
    let head_version = head.version;
    let latest = versions::read(storage, head.version, head.naming.expect("named"))?;
    if let Some(reason) = unsupported_reason(storage, &latest)? {
        return Err(Error::unsupported(format!(
            "Lance versions not cleaned up: {reason}"
        )));
    }
    if files.len() > MAX_MANIFESTS_READ {
        return Err(Error::unsupported(format!(
            "Lance versions not cleaned up: the dataset has {} versions, more than the {} one \
             cleanup reads; set {RETAIN_VERSIONS} or a shorter {OLDER_THAN} and clean it up \
             once with Lance",
            files.len(),
            MAX_MANIFESTS_READ
        )));
    }
    let policy = Policy::of(plugin_config, &latest.config)?;
    let now_ms = now();
    let before_ts = policy.older_than_ms.map(|d| now_ms.saturating_sub(d));
    let named: Vec<u64> = files
        .iter()
        .filter(|f| f.naming.is_some())
        .map(|f| f.version)
        .collect();
    let before_version = policy.retain_versions.map(|n| {
        let n = n as usize;
        if named.len() <= n {
            named[0]
        } else {
            named[named.len() - n]
        }
    });
    let tags = tagged_versions(storage)?;
    let tiering = newest_tiering_version(storage, &files)?;

    let mut referenced: HashSet<String> = HashSet::new();
    let mut verified: HashSet<String> = HashSet::new();
    let mut expired: Vec<&VersionFile> = Vec::new();
    let mut earliest_retained: Option<i64> = None;
    let mut latest_expired: Option<i64> = None;
    for f in &files {
        if now() >= deadline_millis {
            done.more_to_do = true;
            return Ok(done);
        }
        let raw = match storage.get_opt(&f.meta.path)? {
            Some(raw) => raw,
            None => continue, // removed meanwhile by another cleanup
        };
        let m = versions::decode_manifest(&raw).map_err(|e| e.context(&f.meta.path))?;
        let ts = manifest_millis(&m);
        let due = f.naming.is_some()
            && f.version < head_version
            && keep_since.is_none_or(|k| (f.version as i64) < k)
            && Some(f.version) != tiering
            && !tags.contains(&f.version)
            && before_ts.is_none_or(|b| ts < b)
            && before_version.is_none_or(|b| f.version < b);
        let refs = referenced_files(&raw, &m).map_err(|e| e.context(&f.meta.path))?;
        if due && expired.len() < MAX_EXPIRED_PER_CALL {
            expired.push(f);
            verified.extend(refs);
            latest_expired = latest_expired.max(Some(ts));
        } else {
            done.more_to_do |= due;
            referenced.extend(refs);
            earliest_retained = Some(earliest_retained.map_or(ts, |e| e.min(ts)));
        }
    }
    // Lance 14's listing cutoff: `before`, else the oldest retained version, unless an
    // expired version is newer than that (sparse retention: tags), which drops it.
    let cutoff = match (before_ts, earliest_retained, latest_expired) {
        (Some(b), _, _) => b,
        (None, Some(r), Some(e)) if e > r => now_ms,
        (None, Some(r), _) => r,
        (None, None, _) => now_ms,
    };
    let unverified_before = now_ms.saturating_sub(UNVERIFIED_MS);

    for f in &expired {
        storage
            .delete(&f.meta.path)
            .with_context(|| format!("deleting {}", f.meta.path))?;
        done.snapshots += 1;
        done.files_deleted += 1;
        done.bytes_deleted += f.meta.size;
    }
    for dir in [DATA_DIR, DELETIONS_DIR, TRANSACTIONS_DIR, INDICES_DIR] {
        for object in storage.list(dir)? {
            if now() >= deadline_millis {
                done.more_to_do = true;
                return Ok(done);
            }
            let key = match dir {
                INDICES_DIR => match object.path.split('/').nth(1) {
                    Some(uuid) => format!("{INDICES_DIR}/{uuid}"),
                    None => continue,
                },
                DATA_DIR if !object.path.ends_with(".lance") => continue,
                DELETIONS_DIR
                    if !(object.path.ends_with(".arrow") || object.path.ends_with(".bin")) =>
                {
                    continue;
                }
                TRANSACTIONS_DIR if !object.path.ends_with(".txn") => continue,
                _ => object.path.clone(),
            };
            if object.last_modified >= cutoff || referenced.contains(&key) {
                continue;
            }
            if verified.contains(&key) || object.last_modified < unverified_before {
                storage
                    .delete(&object.path)
                    .with_context(|| format!("deleting {}", object.path))?;
                done.files_deleted += 1;
                done.bytes_deleted += object.size;
            }
        }
    }
    if done.snapshots > 0 {
        fluss_lake_guest_sdk::info!(
            "cleaned up {} Lance versions ({} files, {} bytes)",
            done.snapshots,
            done.files_deleted,
            done.bytes_deleted
        );
    }
    Ok(done)
}
