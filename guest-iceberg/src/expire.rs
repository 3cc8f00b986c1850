//! Snapshot expiry, as Iceberg's `RemoveSnapshots` with its incremental file cleanup does it
//! for a table whose history is one line on `main` (Fluss's tables).
//!
//! Which snapshots go: walking back from the current snapshot, a snapshot is kept while fewer
//! than `history.expire.min-snapshots-to-keep` (default 1) are kept or it is younger than
//! `history.expire.max-snapshot-age-ms` (default 5 days); the first one that is neither, and
//! every older one, expire. The snapshot Fluss needs and everything after it are always kept.
//! At most [`MAX_EXPIRED_PER_CALL`] go per call, oldest first, so the files to delete stay
//! bounded and are all tried before the call returns.
//!
//! Order: the new metadata version without them is published first (put-if-absent, so a
//! concurrent commit wins and expiry is planned again on it), then the files only they
//! referenced are deleted (every read done before the first delete), which nothing can read
//! any more: what the expired snapshots reference minus what the metadata that stays still
//! does. In Java's order: the data and delete files they deleted (entries `DELETED` by them)
//! that no retained snapshot off main's line (a rolled-back one) still has live; the
//! manifests they list that neither the oldest remaining snapshot on the line (a manifest
//! dropped once never comes back) nor a retained snapshot off it lists; their manifest lists;
//! the statistics files (`statistics`, `partition-statistics`) listed for them that the
//! remaining metadata does not list for another snapshot too, as Java's
//! `expiredStatisticsFilesLocations` does; and, with
//! `write.metadata.delete-after-commit.enabled`, metadata files `metadata-log` no longer
//! names.
//!
//! Deletes are best effort, as Java's (`suppressFailureWhenFinished`): a file that cannot be
//! read or deleted once the new metadata is published is logged and counted, and the rest
//! still go; the call reports the snapshots removed and the files actually deleted. As in
//! Java, such a file is an orphan from then on: no metadata names it, so a later expiry does
//! not find it either, and only orphan-file removal (Iceberg's `DeleteOrphanFiles`, which
//! this plugin does not run) deletes it.
//!
//! Not handled, so refused with a reason: tables with refs besides `main` (tags, branches).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use fluss_lake_guest_sdk::commit::{self, Written};
use fluss_lake_guest_sdk::layout::relative_path;
use fluss_lake_guest_sdk::maintenance::Expired;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt, config};

use crate::hadoop_tables::{METADATA_DIR, metadata_path};
use crate::manifest::{STATUS_DELETED, read_manifest_entries, read_manifest_list};
use crate::metadata::{Snapshot, TableMetadata};
use crate::tables::{self, Loaded};

/// Iceberg `history.expire.max-snapshot-age-ms` default: 5 days.
const DEFAULT_MAX_SNAPSHOT_AGE_MS: i64 = 5 * 24 * 3_600_000;
/// Iceberg `history.expire.min-snapshots-to-keep` default.
const DEFAULT_MIN_SNAPSHOTS_TO_KEEP: i64 = 1;
/// Snapshots expired by one call at most (the rest wait for the next call).
pub const MAX_EXPIRED_PER_CALL: usize = 100;

/// A table's retention: the plugin configuration first, then the table's properties.
#[derive(Debug, Clone, PartialEq)]
pub struct Retention {
    pub max_snapshot_age_ms: i64,
    pub min_snapshots_to_keep: i64,
    pub delete_old_metadata: bool,
}

impl Retention {
    pub fn of(plugin_config: &[(String, String)], loaded: &Loaded) -> Result<Retention> {
        let get =
            |key: &str| config::get(plugin_config, key).or_else(|| loaded.metadata.property(key));
        let int = |key: &str, default: i64| config::parse_i64(key, get(key), default);
        let r = Retention {
            max_snapshot_age_ms: int(
                "history.expire.max-snapshot-age-ms",
                DEFAULT_MAX_SNAPSHOT_AGE_MS,
            )?,
            min_snapshots_to_keep: int(
                "history.expire.min-snapshots-to-keep",
                DEFAULT_MIN_SNAPSHOTS_TO_KEEP,
            )?,
            delete_old_metadata: get("write.metadata.delete-after-commit.enabled")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        };
        if r.min_snapshots_to_keep < 1 {
            return Err(Error::invalid_input(format!(
                "history.expire.min-snapshots-to-keep = {} must be at least 1",
                r.min_snapshots_to_keep
            )));
        }
        Ok(r)
    }
}

/// Why the table's snapshots are not expired although expiry was asked for.
pub fn unsupported_reason(loaded: &Loaded) -> Option<String> {
    let others: Vec<String> = loaded
        .metadata
        .ref_names()
        .into_iter()
        .filter(|r| r != "main")
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "the table has refs besides main ({}), whose snapshots this plugin does not \
             track; expire it with Iceberg",
            others.join(", ")
        )
    })
}

/// The current snapshot's ancestry, newest first.
fn ancestry(snapshots: &[Snapshot], current: Option<i64>) -> Vec<Snapshot> {
    let mut out = Vec::new();
    let mut next = current;
    while let Some(id) = next {
        let Some(s) = snapshots.iter().find(|s| s.snapshot_id == id) else {
            break;
        };
        next = s.parent_snapshot_id;
        out.push(s.clone());
        if out.len() > snapshots.len() {
            break; // a cycle: corrupt metadata; expire nothing beyond it
        }
    }
    out
}

/// What one call expires.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// At most [`MAX_EXPIRED_PER_CALL`] snapshots, oldest first.
    pub expired: Vec<Snapshot>,
    /// The oldest snapshot that stays (the newest one this call leaves when it expires only
    /// part of what is due).
    pub oldest_kept: Snapshot,
    /// More were due than this call expires.
    pub more_due: bool,
}

/// The snapshots to expire now; none when nothing is due.
pub fn plan(
    loaded: &Loaded,
    retention: &Retention,
    keep_since: Option<i64>,
    now_ms: i64,
) -> Result<Option<Plan>> {
    let snapshots = loaded.metadata.snapshots()?;
    let line = ancestry(&snapshots, loaded.metadata.current_snapshot_id());
    if let Some(keep) = keep_since
        && !line.iter().any(|s| s.snapshot_id == keep)
    {
        // The snapshot Fluss needs is not on main's line: keep everything.
        fluss_lake_guest_sdk::warn!(
            "snapshot {keep}, which Fluss needs, is not an ancestor of the current snapshot; nothing expired"
        );
        return Ok(None);
    }
    let cutoff = now_ms - retention.max_snapshot_age_ms;
    let mut fluss_needs_older = keep_since.is_some();
    let mut split = line.len();
    for (i, s) in line.iter().enumerate() {
        // `i` snapshots, all newer, are kept so far.
        let keep = (i as i64) < retention.min_snapshots_to_keep
            || s.timestamp_ms >= cutoff
            || fluss_needs_older;
        if Some(s.snapshot_id) == keep_since {
            fluss_needs_older = false;
        }
        if !keep {
            split = i;
            break;
        }
    }
    if split == line.len() || split == 0 {
        return Ok(None);
    }
    // Oldest first; when more are due than one call expires, the first one left stays.
    let due: Vec<Snapshot> = line[split..].iter().rev().cloned().collect();
    let n = due.len().min(MAX_EXPIRED_PER_CALL);
    let oldest_kept = if n < due.len() {
        due[n].clone()
    } else {
        line[split - 1].clone()
    };
    Ok(Some(Plan {
        more_due: n < due.len(),
        expired: due.into_iter().take(n).collect(),
        oldest_kept,
    }))
}

/// Deletes files best effort, as Java's `FileCleanupStrategy.deleteFiles` does
/// (`suppressFailureWhenFinished`, failures logged): once the new metadata is published no
/// metadata names them, so a file that cannot be deleted is an orphan, not a broken table,
/// and the others still go.
struct Deleter<'a> {
    storage: &'a dyn Storage,
    location: String,
    done: Expired,
    /// Deletes that failed (each logged).
    failed: u64,
}

impl Deleter<'_> {
    /// Deletes the `what` file at absolute `uri`, inside the table.
    fn delete(&mut self, uri: &str, size: i64, what: &str) {
        let rel = match relative_path(&self.location, uri) {
            Ok(rel) => rel,
            Err(e) => {
                fluss_lake_guest_sdk::warn!("not deleting {what} file {uri}: {e}");
                return;
            }
        };
        match self.storage.delete(rel) {
            Ok(()) => {
                self.done.files_deleted += 1;
                self.done.bytes_deleted += size.max(0) as u64;
            }
            Err(e) => {
                self.failed += 1;
                fluss_lake_guest_sdk::warn!(
                    "could not delete {what} file {rel}, which no metadata names any more; \
                     it is left as an orphan: {e}"
                );
            }
        }
    }

    fn read(&self, uri: &str) -> Result<Vec<u8>> {
        let rel = relative_path(&self.location, uri)?;
        self.storage
            .get(rel)
            .with_context(|| format!("reading {rel}"))
    }

    /// What was deleted; the failures, each logged already, are logged once more in sum.
    fn report(self) -> Expired {
        if self.failed > 0 {
            fluss_lake_guest_sdk::warn!(
                "snapshot expiry deleted {} files and could not delete {}, left as orphans \
                 (Iceberg's orphan-file removal deletes them)",
                self.done.files_deleted,
                self.failed
            );
        }
        self.done
    }
}

/// Every statistics file (`statistics` and `partition-statistics`, whatever snapshot the
/// entry is for) `metadata` lists: what Java's `FileCleanupStrategy.statsFileLocations` reads.
fn all_statistics_files(metadata: &TableMetadata) -> Result<HashSet<String>> {
    let json: serde_json::Value = serde_json::from_slice(&metadata.to_bytes()?)
        .map_err(|e| Error::internal(format!("re-reading table metadata: {e}")))?;
    Ok(["statistics", "partition-statistics"]
        .iter()
        .filter_map(|key| json.get(key)?.as_array())
        .flatten()
        .filter_map(|e| e.get("statistics-path")?.as_str().map(str::to_string))
        .collect())
}

/// What the retained snapshots reference, so it is never deleted.
struct Kept {
    /// Manifests listed by the oldest snapshot kept on the current line or by a retained
    /// snapshot off that line. A newer snapshot on the line lists no manifest of an expired
    /// one that the oldest kept does not: a manifest dropped once never comes back.
    manifests: HashSet<String>,
    /// Live data and delete files of retained snapshots off the current line (rolled back
    /// ones): a file an expired ancestor deleted may still be live there.
    files: HashSet<String>,
}

/// Reads what the retained snapshots reference; `None` (logged) when some of it cannot be
/// read, as then no manifest or data file is known to be unused.
fn kept_references(d: &Deleter<'_>, oldest_kept: &Snapshot, off_line: &[Snapshot]) -> Option<Kept> {
    let read = || -> Result<Kept> {
        let mut kept = Kept {
            manifests: read_manifest_list(&d.read(&oldest_kept.manifest_list)?)?
                .into_iter()
                .map(|m| m.manifest_path)
                .collect(),
            files: HashSet::new(),
        };
        for s in off_line {
            for m in read_manifest_list(&d.read(&s.manifest_list)?)? {
                for e in read_manifest_entries(&d.read(&m.manifest_path)?)? {
                    if e.status != STATUS_DELETED {
                        kept.files.insert(e.file_path);
                    }
                }
                kept.manifests.insert(m.manifest_path);
            }
        }
        Ok(kept)
    };
    read()
        .inspect_err(|e| {
            fluss_lake_guest_sdk::warn!(
                "could not read what the retained snapshots use ({e}); the manifests and data \
                 files of the expired snapshots are not deleted and are left as orphans"
            )
        })
        .ok()
}

/// The files to delete: what the expired snapshots reference minus what the metadata that
/// stays, `after`, still does. Paths as metadata names them, with sizes where known.
#[derive(Debug, Default)]
struct Unused {
    data: BTreeMap<String, i64>,
    manifests: BTreeMap<String, i64>,
    manifest_lists: BTreeSet<String>,
    statistics: BTreeSet<String>,
}

/// Plans the deletes of [`Unused`] (reading every file it needs before anything is deleted);
/// what cannot be read is logged and stays.
fn unused_files(
    d: &Deleter<'_>,
    before: &TableMetadata,
    after: &TableMetadata,
    expired: &[Snapshot],
    oldest_kept: &Snapshot,
) -> Unused {
    let mut unused = Unused::default();
    let expired_ids: HashSet<i64> = expired.iter().map(|s| s.snapshot_id).collect();
    let retained: Vec<Snapshot> = match after.snapshots() {
        Ok(all) => all
            .into_iter()
            .filter(|s| !expired_ids.contains(&s.snapshot_id))
            .collect(),
        Err(e) => {
            fluss_lake_guest_sdk::warn!(
                "could not read the retained snapshots ({e}); no file of the expired ones is \
                 deleted"
            );
            return unused;
        }
    };

    // Statistics: Java's `expiredStatisticsFilesLocations`, the files listed before minus
    // those listed after (one path may be listed for several snapshots).
    match all_statistics_files(after) {
        Ok(kept) => {
            unused.statistics = before
                .statistics_files(&expired_ids)
                .into_iter()
                .filter(|p| !kept.contains(p))
                .collect();
        }
        Err(e) => {
            fluss_lake_guest_sdk::warn!("statistics files of expired snapshots not deleted: {e}")
        }
    }

    let kept_lists: HashSet<&str> = retained.iter().map(|s| s.manifest_list.as_str()).collect();
    let line: HashSet<i64> = ancestry(&retained, after.current_snapshot_id())
        .iter()
        .map(|s| s.snapshot_id)
        .collect();
    let off_line: Vec<Snapshot> = retained
        .iter()
        .filter(|s| !line.contains(&s.snapshot_id))
        .cloned()
        .collect();
    let kept = kept_references(d, oldest_kept, &off_line);
    for s in expired {
        let Some(kept) = &kept else {
            // Manifests stay unread: the manifest lists need no reading.
            if !kept_lists.contains(s.manifest_list.as_str()) {
                unused.manifest_lists.insert(s.manifest_list.clone());
            }
            continue;
        };
        let manifests = match d
            .read(&s.manifest_list)
            .and_then(|b| read_manifest_list(&b))
        {
            Ok(m) => m,
            Err(e) => {
                // As Java: the list stays too; what it lists is orphaned.
                fluss_lake_guest_sdk::warn!(
                    "could not read the manifest list of expired snapshot {}: {e}; its \
                     manifests and the files it deleted are left as orphans",
                    s.snapshot_id
                );
                continue;
            }
        };
        for m in &manifests {
            // Files this snapshot deleted are in the manifests it wrote.
            if m.added_snapshot_id == s.snapshot_id && m.deleted_files_count > 0 {
                match d
                    .read(&m.manifest_path)
                    .and_then(|b| read_manifest_entries(&b))
                {
                    Ok(entries) => {
                        for e in entries {
                            if e.status == STATUS_DELETED
                                && e.snapshot_id.is_none_or(|id| id == s.snapshot_id)
                                && !kept.files.contains(&e.file_path)
                            {
                                unused.data.insert(e.file_path, e.file_size_in_bytes);
                            }
                        }
                    }
                    Err(e) => fluss_lake_guest_sdk::warn!(
                        "could not read manifest {} of expired snapshot {}: {e}; the files it \
                         deleted are left as orphans",
                        m.manifest_path,
                        s.snapshot_id
                    ),
                }
            }
            if !kept.manifests.contains(&m.manifest_path) {
                unused
                    .manifests
                    .insert(m.manifest_path.clone(), m.manifest_length);
            }
        }
        if !kept_lists.contains(s.manifest_list.as_str()) {
            unused.manifest_lists.insert(s.manifest_list.clone());
        }
    }
    unused
}

/// Deletes what only `expired` used, now that the published metadata no longer names them:
/// `before` is the metadata expiry started from, `after` the one that stays. Best effort:
/// every file is tried, in Java's order (data, manifests, manifest lists, statistics).
fn delete_files(
    d: &mut Deleter<'_>,
    before: &TableMetadata,
    after: &TableMetadata,
    expired: &[Snapshot],
    oldest_kept: &Snapshot,
) {
    let unused = unused_files(d, before, after, expired, oldest_kept);
    for (path, size) in &unused.data {
        d.delete(path, *size, "data");
    }
    for (path, size) in &unused.manifests {
        d.delete(path, *size, "manifest");
    }
    for path in &unused.manifest_lists {
        d.delete(path, 0, "manifest list");
    }
    for path in &unused.statistics {
        d.delete(path, 0, "statistics");
    }
}

/// With `write.metadata.delete-after-commit.enabled`: deletes metadata files older than the
/// current one that `metadata-log` no longer names (best effort, as Java's
/// `deleteRemovedMetadataFiles`).
fn delete_old_metadata(d: &mut Deleter<'_>, current: &Loaded) {
    let named: HashSet<String> = current.metadata.metadata_log_files().into_iter().collect();
    let (current_file, objects) = match current
        .metadata_file()
        .and_then(|f| Ok((f, d.storage.list(METADATA_DIR)?)))
    {
        Ok(found) => found,
        Err(e) => {
            fluss_lake_guest_sdk::warn!("old metadata files not deleted: {e}");
            return;
        }
    };
    for object in objects {
        let name = object.path.rsplit('/').next().unwrap_or("");
        let Some(version) = name
            .strip_prefix('v')
            .and_then(|v| v.strip_suffix(".metadata.json"))
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        let uri = format!("{}/{}", d.location, metadata_path(version));
        if version < current.version && uri != current_file && !named.contains(&uri) {
            d.delete(&uri, object.size as i64, "metadata");
        }
    }
}

/// Expires what `retention` no longer keeps, never `keep_since` or anything after it.
///
/// Once the new metadata is published the call succeeds: files that cannot be read or
/// deleted after that are logged and left as orphans (the report counts what was deleted).
pub fn expire(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    keep_since: Option<i64>,
    now: &dyn Fn() -> i64,
    deadline_millis: i64,
) -> Result<Expired> {
    let current =
        tables::load(storage)?.ok_or_else(|| Error::not_found("Iceberg table has no metadata"))?;
    let policy = crate::producer::retry_policy(&current.metadata)?;
    let mut expiry = Expiry {
        plugin_config,
        keep_since,
        now,
        deadline_millis,
    };
    let what = "Iceberg snapshot expiry";
    let done = commit::commit(storage, policy, what, Written::new(storage), &mut expiry)?;
    let mut d = Deleter {
        storage,
        location: String::new(),
        done: Expired::default(),
        failed: 0,
    };
    match done.output {
        ExpiryOutcome::NothingDue { loaded, retention } => {
            d.location = loaded.metadata.location()?.to_string();
            if retention.delete_old_metadata {
                delete_old_metadata(&mut d, &loaded);
            }
            Ok(d.report())
        }
        ExpiryOutcome::OutOfTime => {
            d.done.more_to_do = true;
            Ok(d.done)
        }
        ExpiryOutcome::Published {
            loaded,
            retention,
            plan,
            next,
        } => {
            d.location = loaded.metadata.location()?.to_string();
            d.done.snapshots = plan.expired.len() as u64;
            // As Java, the metadata after expiry is the table's as it is now (a newer commit
            // may have followed ours); ours when it cannot be read.
            let current = tables::load(storage).unwrap_or_else(|e| {
                fluss_lake_guest_sdk::warn!("could not re-read the table after expiry: {e}");
                None
            });
            let after = current.as_ref().map_or(&next, |c| &c.metadata);
            delete_files(
                &mut d,
                &loaded.metadata,
                after,
                &plan.expired,
                &plan.oldest_kept,
            );
            if retention.delete_old_metadata
                && let Some(current) = &current
            {
                delete_old_metadata(&mut d, current);
            }
            d.done.more_to_do = plan.more_due;
            Ok(d.report())
        }
    }
}

/// An expiry as the commit kit runs it: the metadata without the expired snapshots is
/// published first; the files only they used are deleted after, by [`expire`].
struct Expiry<'a> {
    plugin_config: &'a [(String, String)],
    keep_since: Option<i64>,
    now: &'a dyn Fn() -> i64,
    deadline_millis: i64,
}

/// How the metadata commit of an expiry ended.
enum ExpiryOutcome {
    /// Nothing was due on `loaded`.
    NothingDue {
        loaded: Loaded,
        retention: Retention,
    },
    /// The deadline passed before the commit.
    OutOfTime,
    /// `next`, the metadata without `plan.expired`, was published on `loaded`.
    Published {
        loaded: Loaded,
        retention: Retention,
        plan: Plan,
        next: TableMetadata,
    },
}

impl commit::Attempt for Expiry<'_> {
    type Base = Loaded;
    type Output = ExpiryOutcome;

    fn read_base(&mut self, storage: &dyn Storage) -> Result<Loaded> {
        tables::load(storage)?.ok_or_else(|| Error::not_found("Iceberg table has no metadata"))
    }

    fn check(&mut self, _: &dyn Storage, loaded: &Loaded) -> Result<()> {
        match unsupported_reason(loaded) {
            Some(reason) => Err(Error::unsupported(format!(
                "snapshots not expired: {reason}"
            ))),
            None => Ok(()),
        }
    }

    fn build(
        &mut self,
        _: &dyn Storage,
        loaded: &Loaded,
        _: &mut Written<'_>,
    ) -> Result<commit::Plan<ExpiryOutcome>> {
        let retention = Retention::of(self.plugin_config, loaded)?;
        let now = (self.now)();
        let Some(plan) = plan(loaded, &retention, self.keep_since, now)? else {
            return Ok(commit::Plan::Done(ExpiryOutcome::NothingDue {
                loaded: loaded.clone(),
                retention,
            }));
        };
        if now >= self.deadline_millis {
            return Ok(commit::Plan::Done(ExpiryOutcome::OutOfTime));
        }
        let ids: HashSet<i64> = plan.expired.iter().map(|s| s.snapshot_id).collect();
        let next = loaded
            .metadata
            .without_snapshots(&ids, &loaded.metadata_file()?, now);
        // The metadata names the previous metadata file and the time, so its bytes are this
        // attempt's own: the commit kit recognises them after a lost acknowledgement (and a
        // catalog's commit by the snapshots it removed).
        tables::publication(
            loaded,
            &next.clone(),
            Vec::new(),
            ExpiryOutcome::Published {
                loaded: loaded.clone(),
                retention,
                plan,
                next,
            },
        )
    }

    fn published(&mut self, storage: &dyn Storage, output: &ExpiryOutcome) {
        if let ExpiryOutcome::Published { loaded, .. } = output {
            tables::published(storage, loaded);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::RefCell;

    use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
    use fluss_lake_guest_sdk::storage::{MemoryStorage, ObjectMeta, Upload};
    use fluss_lake_guest_sdk::testing::{
        committer_context, id_name_batch, id_name_table, pairs, writer_context,
    };

    use fluss_lake_guest_sdk::ErrorKind;

    use super::*;
    use crate::catalog::create_table_if_missing;
    use crate::committer::{IcebergCommitter, to_committable};
    use crate::writer::IcebergWriter;

    const FAR_FUTURE: i64 = i64::MAX / 2;
    const NO_DEADLINE: i64 = i64::MAX;

    /// `properties` become Iceberg table properties (as `iceberg.<k>` Fluss properties do).
    fn table_with_rounds(rounds: i32, properties: &[(&str, &str)]) -> MemoryStorage {
        let storage = MemoryStorage::new();
        let mut t = id_name_table();
        t.custom_properties = properties
            .iter()
            .map(|(k, v)| (format!("iceberg.{k}"), v.to_string()))
            .collect();
        let config = vec![("warehouse", "/wh")];
        create_table_if_missing(&storage, &t, &pairs(&config)).unwrap();
        let mut c = IcebergCommitter::open(committer_context(&t, &config), &storage).unwrap();
        let mut base = None;
        for round in 0..rounds {
            let mut w =
                IcebergWriter::open(&writer_context(&t, 0, None, &config), &storage).unwrap();
            w.write(id_name_batch(&[round])).unwrap();
            let payload = w.complete().unwrap().payload;
            let r = c
                .commit(
                    &to_committable(&[payload]).unwrap(),
                    &[("fluss-offsets".into(), format!("/o/{round}"))],
                    base,
                )
                .unwrap();
            base = Some(r.snapshot_id);
        }
        storage
    }

    fn loaded(storage: &MemoryStorage) -> Loaded {
        tables::load(storage).unwrap().unwrap()
    }

    fn snapshot_ids(storage: &MemoryStorage) -> Vec<i64> {
        loaded(storage)
            .metadata
            .snapshots()
            .unwrap()
            .iter()
            .map(|s| s.snapshot_id)
            .collect()
    }

    /// Files the remaining snapshots use (panics when one is missing), relative paths.
    fn referenced(storage: &MemoryStorage) -> HashSet<String> {
        let l = loaded(storage);
        let location = l.metadata.location().unwrap().to_string();
        let rel = |uri: &str| relative_path(&location, uri).unwrap().to_string();
        let mut used = HashSet::new();
        for s in l.metadata.snapshots().unwrap() {
            used.insert(rel(&s.manifest_list));
            let list = storage.get(&rel(&s.manifest_list)).unwrap();
            for m in read_manifest_list(&list).unwrap() {
                used.insert(rel(&m.manifest_path));
                for e in
                    read_manifest_entries(&storage.get(&rel(&m.manifest_path)).unwrap()).unwrap()
                {
                    if e.status != STATUS_DELETED {
                        used.insert(rel(&e.file_path));
                    }
                }
            }
        }
        for p in &used {
            assert!(storage.head(p).unwrap().is_some(), "{p} is used but gone");
        }
        used
    }

    /// Manifests, manifest lists and data files nothing uses.
    fn unreferenced(storage: &MemoryStorage) -> Vec<String> {
        let used = referenced(storage);
        storage
            .list("")
            .unwrap()
            .into_iter()
            .map(|m| m.path)
            .filter(|p| p.ends_with(".avro") || p.ends_with(".parquet"))
            .filter(|p| !used.contains(p))
            .collect()
    }

    fn config(pairs_: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs(pairs_)
    }

    /// Storage whose deletes of the paths `fails` selects fail (as a file the store refuses to
    /// delete would, every time); everything else goes to `inner`.
    pub(crate) struct FailingDeletes<'a> {
        inner: &'a MemoryStorage,
        fails: Box<dyn Fn(&str) -> bool + 'a>,
        /// The deletes that failed.
        pub(crate) failed: RefCell<Vec<String>>,
    }

    impl<'a> FailingDeletes<'a> {
        pub(crate) fn new(inner: &'a MemoryStorage, fails: impl Fn(&str) -> bool + 'a) -> Self {
            FailingDeletes {
                inner,
                fails: Box::new(fails),
                failed: RefCell::new(Vec::new()),
            }
        }
    }

    impl Storage for FailingDeletes<'_> {
        fn get(&self, p: &str) -> Result<Vec<u8>> {
            self.inner.get(p)
        }
        fn get_range(&self, p: &str, offset: u64, length: u64) -> Result<Vec<u8>> {
            self.inner.get_range(p, offset, length)
        }
        fn upload(&self, p: &str) -> Result<Box<dyn Upload>> {
            self.inner.upload(p)
        }
        fn put(&self, p: &str, d: &[u8]) -> Result<()> {
            self.inner.put(p, d)
        }
        fn put_if_absent(&self, p: &str, d: &[u8]) -> Result<()> {
            self.inner.put_if_absent(p, d)
        }
        fn list(&self, p: &str) -> Result<Vec<ObjectMeta>> {
            self.inner.list(p)
        }
        fn delete(&self, p: &str) -> Result<()> {
            if (self.fails)(p) {
                self.failed.borrow_mut().push(p.to_string());
                return Err(Error::internal(format!("injected failure deleting {p}")));
            }
            self.inner.delete(p)
        }
        fn head(&self, p: &str) -> Result<Option<ObjectMeta>> {
            self.inner.head(p)
        }
    }

    /// Lists statistics files `(snapshot, name)` in the table's `statistics` and
    /// `partition-statistics` (a new metadata version, as a Java engine computing them would
    /// commit it) and writes them, as `metadata/<name>`.
    fn add_statistics(
        storage: &MemoryStorage,
        statistics: &[(i64, &str)],
        partition_statistics: &[(i64, &str)],
    ) {
        let l = loaded(storage);
        let location = l.metadata.location().unwrap().to_string();
        let entry = |(id, name): &(i64, &str), puffin: bool| {
            let rel = format!("{METADATA_DIR}/{name}");
            storage.put(&rel, name.as_bytes()).unwrap();
            let mut e = serde_json::json!({
                "snapshot-id": id,
                "statistics-path": format!("{location}/{rel}"),
                "file-size-in-bytes": name.len(),
            });
            if puffin {
                e["file-footer-size-in-bytes"] = 0.into();
                e["blob-metadata"] = serde_json::json!([]);
            }
            e
        };
        let mut json: serde_json::Value =
            serde_json::from_slice(&l.metadata.to_bytes().unwrap()).unwrap();
        json["statistics"] = statistics.iter().map(|s| entry(s, true)).collect();
        json["partition-statistics"] = partition_statistics
            .iter()
            .map(|s| entry(s, false))
            .collect();
        let m = crate::metadata::TableMetadata::parse(&serde_json::to_vec(&json).unwrap()).unwrap();
        crate::hadoop_tables::publish(storage, Some(l.version), &m).unwrap();
    }

    fn exists(storage: &MemoryStorage, rel: &str) -> bool {
        storage.head(rel).unwrap().is_some()
    }

    #[test]
    fn expiry_keeps_the_newest_snapshots_whole_and_deletes_what_only_old_ones_used() {
        let storage = table_with_rounds(8, &[]);
        assert!(unreferenced(&storage).is_empty());
        let all = snapshot_ids(&storage);
        let cfg = config(&[("history.expire.min-snapshots-to-keep", "3")]);
        // Young snapshots stay whatever the minimum.
        let done = expire(&storage, &cfg, all.last().copied(), &|| 0, NO_DEADLINE).unwrap();
        assert_eq!(done, Expired::default());
        assert_eq!(snapshot_ids(&storage), all);

        let done = expire(
            &storage,
            &cfg,
            all.last().copied(),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(done.snapshots, 5);
        assert!(!done.more_to_do);
        assert_eq!(snapshot_ids(&storage), all[5..]);
        // Snapshot 5 carries every manifest of the older ones (fast appends): only their
        // manifest lists go, and every data file stays.
        assert_eq!(done.files_deleted, 5);
        assert!(unreferenced(&storage).is_empty());
        let m = loaded(&storage).metadata;
        let log: Vec<i64> = m.json_snapshot_log_ids();
        assert_eq!(log, all[5..]);
        assert_eq!(m.current_snapshot_id(), all.last().copied());
        let again = expire(
            &storage,
            &cfg,
            all.last().copied(),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(again, Expired::default());
    }

    #[test]
    fn the_snapshot_fluss_needs_and_newer_ones_survive() {
        let storage = table_with_rounds(6, &[]);
        let all = snapshot_ids(&storage);
        expire(&storage, &[], Some(all[2]), &|| FAR_FUTURE, NO_DEADLINE).unwrap();
        assert_eq!(snapshot_ids(&storage), all[2..]);
        assert!(unreferenced(&storage).is_empty());
        // A snapshot Fluss needs that is not on main's line: nothing expires.
        expire(&storage, &[], Some(12345), &|| FAR_FUTURE, NO_DEADLINE).unwrap();
        assert_eq!(snapshot_ids(&storage), all[2..]);
    }

    #[test]
    fn old_metadata_files_go_with_delete_after_commit() {
        let storage = table_with_rounds(
            6,
            &[
                ("write.metadata.delete-after-commit.enabled", "true"),
                ("write.metadata.previous-versions-max", "2"),
            ],
        );
        let metadata_files = |s: &MemoryStorage| {
            s.list(METADATA_DIR)
                .unwrap()
                .iter()
                .filter(|m| m.path.ends_with(".metadata.json"))
                .count()
        };
        assert_eq!(metadata_files(&storage), 7);
        let last = snapshot_ids(&storage).last().copied();
        expire(&storage, &[], last, &|| FAR_FUTURE, NO_DEADLINE).unwrap();
        // The current version and the two metadata-log names.
        assert_eq!(metadata_files(&storage), 3);
        assert_eq!(snapshot_ids(&storage).len(), 1);
        assert!(unreferenced(&storage).is_empty());
    }

    #[test]
    fn tables_with_other_refs_are_refused_and_the_deadline_is_kept() {
        let storage = table_with_rounds(3, &[]);
        let e = expire(&storage, &[], None, &|| FAR_FUTURE, FAR_FUTURE).unwrap();
        assert!(e.more_to_do && e.snapshots == 0, "{e:?}");
        let l = loaded(&storage);
        let tagged = l.metadata.with_tag("nightly", snapshot_ids(&storage)[0]);
        crate::hadoop_tables::publish(&storage, Some(l.version), &tagged).unwrap();
        let e = expire(&storage, &[], None, &|| FAR_FUTURE, NO_DEADLINE).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("nightly"), "{e}");
    }

    #[test]
    fn statistics_files_a_retained_snapshot_still_lists_survive_expiry() {
        let storage = table_with_rounds(5, &[]);
        let all = snapshot_ids(&storage);
        // One statistics file per snapshot and list, as Java keeps them; a path may be listed
        // for several snapshots (statistics carried over to a newer snapshot).
        add_statistics(
            &storage,
            &[
                (all[0], "shared.stats"),
                (all[1], "expired-only.stats"),
                (all[4], "shared.stats"),
            ],
            &[
                (all[1], "expired-only-partition.stats"),
                (all[2], "shared-partition.stats"),
                (all[3], "shared-partition.stats"),
            ],
        );
        let done = expire(&storage, &[], Some(all[3]), &|| FAR_FUTURE, NO_DEADLINE).unwrap();
        assert_eq!(done.snapshots, 3);
        assert_eq!(snapshot_ids(&storage), all[3..]);
        for kept in ["shared.stats", "shared-partition.stats"] {
            assert!(
                exists(&storage, &format!("{METADATA_DIR}/{kept}")),
                "{kept}, which a retained snapshot lists, was deleted"
            );
        }
        for gone in ["expired-only.stats", "expired-only-partition.stats"] {
            assert!(
                !exists(&storage, &format!("{METADATA_DIR}/{gone}")),
                "{gone} is left behind"
            );
        }
        let l = loaded(&storage);
        let location = l.metadata.location().unwrap().to_string();
        let mut listed = l
            .metadata
            .statistics_files(&all[3..].iter().copied().collect());
        listed.sort();
        assert_eq!(
            listed,
            [
                format!("{location}/{METADATA_DIR}/shared-partition.stats"),
                format!("{location}/{METADATA_DIR}/shared.stats"),
            ]
        );
        // Three manifest lists (snapshot 3 carries every manifest) and two statistics files.
        assert_eq!(done.files_deleted, 5, "{done:?}");
        assert!(unreferenced(&storage).is_empty());
    }

    #[test]
    fn a_failed_delete_leaves_one_orphan_and_the_rest_is_deleted() {
        let storage = table_with_rounds(8, &[]);
        let all = snapshot_ids(&storage);
        add_statistics(&storage, &[(all[4], "expired.stats")], &[]);
        let l = loaded(&storage);
        let location = l.metadata.location().unwrap().to_string();
        let stuck = relative_path(
            &location,
            &l.metadata.snapshot(all[1]).unwrap().unwrap().manifest_list,
        )
        .unwrap()
        .to_string();
        let failing = FailingDeletes::new(&storage, |p| p == stuck);
        let cfg = config(&[("history.expire.min-snapshots-to-keep", "3")]);
        let done = expire(&failing, &cfg, None, &|| FAR_FUTURE, NO_DEADLINE).unwrap();
        assert_eq!(*failing.failed.borrow(), std::slice::from_ref(&stuck));
        assert_eq!(done.snapshots, 5);
        // The other four manifest lists and the statistics file went all the same.
        assert_eq!(done.files_deleted, 5, "{done:?}");
        assert!(!exists(&storage, &format!("{METADATA_DIR}/expired.stats")));
        assert_eq!(snapshot_ids(&storage), all[5..]);
        // The table reads whole; the file that could not go is unreferenced.
        assert_eq!(unreferenced(&storage), std::slice::from_ref(&stuck));
        // As in Java, no metadata names it any more, so a later expiry does not find it: it is
        // an orphan, for orphan-file removal.
        let again = expire(&storage, &cfg, None, &|| FAR_FUTURE, NO_DEADLINE).unwrap();
        assert_eq!(again, Expired::default());
        assert_eq!(unreferenced(&storage), std::slice::from_ref(&stuck));
    }
}
