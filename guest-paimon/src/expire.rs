//! Snapshot expiry, as Paimon's `ExpireSnapshotsImpl` and `SnapshotDeletion` do it.
//!
//! Which snapshots go: from the earliest on, every snapshot beyond `snapshot.num-retained.max`,
//! and older ones beyond `snapshot.num-retained.min` once they are older than
//! `snapshot.time-retained`, at most `snapshot.expire.limit` per call; never one a consumer
//! (`consumer/consumer-*`) still reads, nor the snapshot Fluss needs or any newer one.
//!
//! Each expiry removes the earliest snapshot `E`, with `R = E + 1` the next one, in phases
//! that keep `R` and every later snapshot whole at every step, each deleting the files the
//! next phase's metadata names (the order of Paimon's `ExpireSnapshotsImpl`):
//! 1. data files that `R`'s delta deletes (and does not add back: a file moved to another
//!    level is deleted and added under the same name), with their extra files, and `E`'s
//!    changelog files (Fluss's primary-key tables have `changelog-producer = input`);
//! 2. `E`'s changelog manifests and the manifests of `E` that `R` does not list;
//! 3. `E`'s manifest lists;
//! 4. the snapshot file, then the `EARLIEST` hint.
//!
//! Expiry resumes wherever an earlier one stopped: a crash, a failed delete or the deadline
//! (checked before every file) can stop it inside a snapshot, and a Paimon job can be
//! interrupted the same way. What is left of `E` then still names every file not yet
//! deleted, and what `E` names but is gone counts as deleted (Paimon's
//! `tryReadManifestList`), so the next call finishes `E`. What must be kept is only ever
//! learnt from `R`: when `R`'s metadata cannot be read, nothing is deleted on its account
//! (the files are left behind, never a live one deleted). A failed delete does not stop the
//! other deletes of its phase, but does stop the snapshot's expiry and is returned, so that
//! the metadata naming the file stays for the next call to delete it again.
//!
//! Not handled, so refused with a clear reason instead of guessed: tables with tags (their
//! snapshots pin files) and changelogs kept longer than snapshots (`changelog.num-retained.*`
//! or `changelog.time-retained` above the `snapshot.*` ones). Files with external paths and
//! the index manifests and statistics files of expired snapshots are left in place.

use std::collections::{BTreeMap, HashSet};

use fluss_lake_guest_sdk::maintenance::Expired;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, ErrorKind, Result, ResultExt, config};

use crate::manifest::{
    FileKind, ManifestEntry, ManifestFileMeta, manifest_path, read_manifest, read_manifest_list,
};
use crate::schema::TableSchema;
use crate::snapshot::{
    Snapshot, earliest_snapshot_id, latest_snapshot_id, read_snapshot, set_earliest_hint,
    snapshot_path,
};
use crate::table::{Partition, bucket_dir};

/// Paimon `snapshot.num-retained.min` default.
const DEFAULT_RETAINED_MIN: i64 = 10;
/// Paimon `snapshot.num-retained.max` default (`Integer.MAX_VALUE`).
const DEFAULT_RETAINED_MAX: i64 = i32::MAX as i64;
/// Paimon `snapshot.time-retained` default: 1 hour.
const DEFAULT_TIME_RETAINED_MS: i64 = 3_600_000;
/// Paimon `snapshot.expire.limit` default.
const DEFAULT_EXPIRE_LIMIT: i64 = 50;

/// The retention options of a table: the plugin configuration first, then the table's.
#[derive(Debug, Clone, PartialEq)]
pub struct Retention {
    pub min: i64,
    pub max: i64,
    pub time_retained_ms: i64,
    pub limit: i64,
}

impl Retention {
    pub fn of(plugin_config: &[(String, String)], schema: &TableSchema) -> Result<Retention> {
        let get = |key: &str| config::get(plugin_config, key).or_else(|| schema.option(key));
        let int = |key: &str, default: i64| config::parse_i64(key, get(key), default);
        let retention = Retention {
            min: int("snapshot.num-retained.min", DEFAULT_RETAINED_MIN)?,
            max: int("snapshot.num-retained.max", DEFAULT_RETAINED_MAX)?,
            time_retained_ms: match get("snapshot.time-retained") {
                None => DEFAULT_TIME_RETAINED_MS,
                Some(v) => config::parse_duration_ms(v).context("option snapshot.time-retained")?,
            },
            limit: int("snapshot.expire.limit", DEFAULT_EXPIRE_LIMIT)?,
        };
        // Paimon's own checks (`ExpireConfig` / `CoreOptions` validation).
        if retention.min < 1 {
            return Err(Error::invalid_input(format!(
                "snapshot.num-retained.min = {} must be at least 1",
                retention.min
            )));
        }
        if retention.max < retention.min {
            return Err(Error::invalid_input(format!(
                "snapshot.num-retained.max = {} must not be below snapshot.num-retained.min = {}",
                retention.max, retention.min
            )));
        }
        if retention.limit < 1 {
            return Err(Error::invalid_input(format!(
                "snapshot.expire.limit = {} must be at least 1",
                retention.limit
            )));
        }
        Ok(retention)
    }
}

/// Why a table's snapshots are not expired although expiry was asked for.
pub fn unsupported_reason(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    schema: &TableSchema,
    retention: &Retention,
) -> Result<Option<String>> {
    // Paimon decouples the changelog's lifecycle from the snapshots' when a changelog
    // retention exceeds its snapshot counterpart (`CoreOptions.changelogLifecycleDecoupled`).
    let get = |key: &str| config::get(plugin_config, key).or_else(|| schema.option(key));
    let int = |key: &str| get(key).and_then(|v| v.trim().parse::<i64>().ok());
    let decoupled = int("changelog.num-retained.min").is_some_and(|v| v > retention.min)
        || int("changelog.num-retained.max").is_some_and(|v| v > retention.max)
        || get("changelog.time-retained")
            .and_then(|v| config::parse_duration_ms(v).ok())
            .is_some_and(|v| v > retention.time_retained_ms);
    if decoupled {
        return Ok(Some(
            "the table keeps its changelog longer than its snapshots (changelog.num-retained.* \
             or changelog.time-retained above the snapshot.* ones), which this plugin does not \
             expire; lower them or expire the table with Paimon"
                .to_string(),
        ));
    }
    if !storage.list("tag")?.is_empty() {
        return Ok(Some(
            "the table has tags, whose snapshots pin files this plugin does not track; expire \
             it with Paimon"
                .to_string(),
        ));
    }
    Ok(None)
}

/// The smallest `nextSnapshot` of the table's consumers: they still read from there on.
fn consumers_next_snapshot(storage: &dyn Storage) -> Result<Option<i64>> {
    let mut min: Option<i64> = None;
    for object in storage.list("consumer")? {
        if !object
            .path
            .rsplit('/')
            .next()
            .unwrap_or("")
            .starts_with("consumer-")
        {
            continue;
        }
        let bytes = storage.get(&object.path)?;
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| Error::corrupt(format!("{}: {e}", object.path)))?;
        let next = value
            .get("nextSnapshot")
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(|| Error::corrupt(format!("{}: no nextSnapshot", object.path)))?;
        min = Some(min.map_or(next, |m: i64| m.min(next)));
    }
    Ok(min)
}

/// The snapshots to expire: `[earliest, end)`, empty when `end <= earliest`.
pub fn plan(
    storage: &dyn Storage,
    retention: &Retention,
    keep_since: Option<i64>,
    now_millis: i64,
) -> Result<Option<(i64, i64)>> {
    let (Some(latest), Some(earliest)) =
        (latest_snapshot_id(storage)?, earliest_snapshot_id(storage)?)
    else {
        return Ok(None);
    };
    // Beyond `max`, snapshots go whatever their age.
    let min = (latest - retention.max + 1).max(earliest);
    let mut end = latest - retention.min + 1;
    if let Some(next) = consumers_next_snapshot(storage)? {
        end = end.min(next);
    }
    end = end.min(earliest.saturating_add(retention.limit));
    if let Some(keep) = keep_since {
        end = end.min(keep);
    }
    let older_than = now_millis - retention.time_retained_ms;
    for id in min..end {
        if let Some(s) = read_snapshot(storage, id)?
            && older_than <= s.time_millis
        {
            end = id;
            break;
        }
    }
    Ok((end > earliest).then_some((earliest, end)))
}

/// The table-relative path of a manifest entry's data file and its extra files, or `None`
/// when the file lives outside the table (an external path).
fn entry_paths(schema: &TableSchema, e: &ManifestEntry) -> Result<Option<Vec<String>>> {
    if e.file.external_path.is_some() {
        return Ok(None);
    }
    let dir = bucket_dir(&Partition::from_row(schema, &e.partition)?, e.bucket);
    let mut paths = vec![format!("{dir}/{}", e.file.file_name)];
    paths.extend(e.file.extra_files.iter().map(|x| format!("{dir}/{x}")));
    Ok(Some(paths))
}

/// `Ok(None)` for an object that is gone (`not-found`), other errors unchanged.
fn unless_gone<T>(result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads a manifest list of the snapshot being expired, empty when it is gone: an earlier
/// expiry stopped after deleting it (a crash, a failed delete, the deadline, or a Paimon job
/// interrupted the same way), and its manifests went before it (Paimon's
/// `tryReadManifestList`). Other errors are returned rather than read as "empty": the next
/// call can read it again, while skipping it now would leak its manifests for good.
fn try_read_manifest_list(storage: &dyn Storage, list: &str) -> Result<Vec<ManifestFileMeta>> {
    Ok(
        unless_gone(read_manifest_list(storage, list))?.unwrap_or_else(|| {
            fluss_lake_guest_sdk::warn!("manifest list {list} is gone: taken as already deleted");
            Vec::new()
        }),
    )
}

/// Entries of every manifest a manifest list names.
fn entries_of(storage: &dyn Storage, list: &str) -> Result<Vec<ManifestEntry>> {
    let mut entries = Vec::new();
    for m in read_manifest_list(storage, list)? {
        entries.extend(read_manifest(storage, &m.file_name)?);
    }
    Ok(entries)
}

/// Files the delta of `next` deletes for good: deleted and not added back in the same delta
/// (Paimon's `getDataFileToDelete`: entries in order, an ADD cancels an earlier DELETE).
///
/// `None` when a manifest (list) of that delta is gone: with part of the delta unread, a
/// DELETE could lack the ADD that cancels it and a live file would go, so no data file is
/// deleted (Paimon's `planDeletedInDeltaManifest` cancels too; the files are left behind).
fn deleted_by_delta(storage: &dyn Storage, next: &Snapshot) -> Result<Option<Vec<ManifestEntry>>> {
    let Some(entries) = unless_gone(entries_of(storage, &next.delta_manifest_list))? else {
        fluss_lake_guest_sdk::warn!(
            "snapshot {}: a manifest of its delta is gone, so the data files it deleted are \
             left in place",
            next.id
        );
        return Ok(None);
    };
    let mut deleted: BTreeMap<(Vec<u8>, i32, String), ManifestEntry> = BTreeMap::new();
    for e in entries {
        let key = (e.partition.clone(), e.bucket, e.file.file_name.clone());
        match e.kind {
            FileKind::Add => {
                deleted.remove(&key);
            }
            FileKind::Delete => {
                deleted.insert(key, e);
            }
        }
    }
    Ok(Some(deleted.into_values().collect()))
}

/// Manifest lists and manifests snapshot `s` uses (Paimon's `manifestSkippingSet`).
///
/// `None` when one of its manifest lists is gone: what `s` keeps is then unknown, so nothing
/// may be deleted on its account (Paimon skips cleaning manifests when it cannot build the
/// skipping set). Any other error is returned, never read as "keeps nothing".
fn manifests_used_by(storage: &dyn Storage, s: &Snapshot) -> Result<Option<HashSet<String>>> {
    let mut used = HashSet::from([s.base_manifest_list.clone(), s.delta_manifest_list.clone()]);
    for list in [&s.base_manifest_list, &s.delta_manifest_list] {
        let Some(metas) = unless_gone(read_manifest_list(storage, list))? else {
            fluss_lake_guest_sdk::warn!(
                "snapshot {}: manifest list {list} is gone, so the manifests of the snapshot \
                 before it are left in place",
                s.id
            );
            return Ok(None);
        };
        used.extend(metas.into_iter().map(|m| m.file_name));
    }
    Ok(Some(used))
}

/// What expiring one snapshot deletes, phase by phase: a later phase deletes the metadata
/// that names the files of an earlier one, so that wherever the deletions stop, what is left
/// still names everything not yet deleted and the next call picks up from there.
#[derive(Default)]
struct Doomed {
    /// Data files `next`'s delta deleted, and the expiring snapshot's changelog files.
    data: Vec<(String, i64)>,
    /// The expiring snapshot's changelog manifests, and its manifests `next` does not list.
    manifests: Vec<(String, i64)>,
    /// Its manifest lists (any `next` uses excepted, as for manifests).
    lists: Vec<(String, i64)>,
    seen: HashSet<String>,
}

impl Doomed {
    /// Adds a data file's paths (with its extra files; its size counted once).
    fn data_file(&mut self, schema: &TableSchema, e: &ManifestEntry) -> Result<()> {
        match entry_paths(schema, e)? {
            Some(paths) => {
                let mut size = e.file.file_size;
                for p in paths {
                    if self.seen.insert(p.clone()) {
                        self.data.push((p, std::mem::take(&mut size)));
                    }
                }
            }
            None => fluss_lake_guest_sdk::warn!(
                "not deleting {}: it lives outside the table (external path)",
                e.file.file_name
            ),
        }
        Ok(())
    }

    fn manifest(&mut self, name: &str, size: i64) {
        let path = manifest_path(name);
        if self.seen.insert(path.clone()) {
            self.manifests.push((path, size));
        }
    }

    fn list(&mut self, name: &str, size: Option<i64>) {
        let path = manifest_path(name);
        if self.seen.insert(path.clone()) {
            self.lists.push((path, size.unwrap_or(0)));
        }
    }
}

/// Everything expiring `expiring` deletes, with `next` (`expiring.id + 1`) kept whole. Only
/// reads; files already gone (an earlier expiry of `expiring` stopped half way) are skipped.
fn doomed_by(
    storage: &dyn Storage,
    schema: &TableSchema,
    expiring: &Snapshot,
    next: &Snapshot,
) -> Result<Doomed> {
    let mut doomed = Doomed::default();
    for e in deleted_by_delta(storage, next)?.unwrap_or_default() {
        doomed.data_file(schema, &e)?;
    }
    if let Some(changelog) = &expiring.changelog_manifest_list {
        for m in try_read_manifest_list(storage, changelog)? {
            // A changelog manifest is gone only after its files (Paimon ignores it too).
            match unless_gone(read_manifest(storage, &m.file_name))? {
                Some(entries) => {
                    for e in entries.iter().filter(|e| e.kind == FileKind::Add) {
                        doomed.data_file(schema, e)?;
                    }
                }
                None => fluss_lake_guest_sdk::warn!(
                    "changelog manifest {} is gone: taken as already deleted",
                    m.file_name
                ),
            }
            doomed.manifest(&m.file_name, m.file_size);
        }
        doomed.list(changelog, expiring.changelog_manifest_list_size);
    }
    // What `next` uses comes from `next` itself, never from the snapshot going: a manifest
    // `next` lists is kept whether or not the expiring snapshot's lists can still be read.
    if let Some(used) = manifests_used_by(storage, next)? {
        for (list, size) in [
            (
                &expiring.base_manifest_list,
                expiring.base_manifest_list_size,
            ),
            (
                &expiring.delta_manifest_list,
                expiring.delta_manifest_list_size,
            ),
        ] {
            for m in try_read_manifest_list(storage, list)? {
                if !used.contains(&m.file_name) {
                    doomed.manifest(&m.file_name, m.file_size);
                }
            }
            if !used.contains(list.as_str()) {
                doomed.list(list, size);
            }
        }
    }
    Ok(doomed)
}

struct Deleter<'a> {
    storage: &'a dyn Storage,
    now: &'a dyn Fn() -> i64,
    deadline_millis: i64,
    done: Expired,
}

impl Deleter<'_> {
    /// Deletes one phase's files; `Ok(false)` when the deadline stopped it (`more_to_do`).
    ///
    /// The deadline is checked before every file, so that one large snapshot cannot overrun
    /// it; the phase order makes any stop resumable. A failed delete is logged and the other
    /// files are still deleted (as Paimon's `deleteQuietly` does), but the phase then fails:
    /// going on to the next phase would delete the metadata that names the file and leak it
    /// for good, while stopping lets the next call delete it again.
    fn delete_all(&mut self, what: &str, files: &[(String, i64)]) -> Result<bool> {
        let mut failed: Option<(Error, usize)> = None;
        for (path, size) in files {
            if (self.now)() >= self.deadline_millis {
                if failed.is_none() {
                    self.done.more_to_do = true;
                    return Ok(false);
                }
                break;
            }
            match self.storage.delete(path) {
                Ok(()) => {
                    self.done.files_deleted += 1;
                    self.done.bytes_deleted += (*size).max(0) as u64;
                }
                Err(e) => {
                    fluss_lake_guest_sdk::warn!("could not delete {path}: {e}");
                    let e = e.context(format!("deleting {path}"));
                    failed.get_or_insert((e, 0)).1 += 1;
                }
            }
        }
        match failed {
            None => Ok(true),
            Some((e, n)) => Err(e.context(format!(
                "{n} of {} {what} not deleted (the next expiry deletes them again)",
                files.len()
            ))),
        }
    }
}

/// Expires snapshot `expiring` (the earliest), keeping `next` (`expiring.id + 1`) and
/// everything after it whole; `Ok(false)` when the deadline stopped it half way.
fn expire_one(
    d: &mut Deleter<'_>,
    schema: &TableSchema,
    expiring: &Snapshot,
    next: &Snapshot,
) -> Result<bool> {
    let doomed = doomed_by(d.storage, schema, expiring, next)?;
    let snapshot = [(snapshot_path(expiring.id), 0)];
    for (what, files) in [
        ("data files", &doomed.data[..]),
        ("manifests", &doomed.manifests[..]),
        ("manifest lists", &doomed.lists[..]),
        ("snapshot file", &snapshot[..]),
    ] {
        if !d.delete_all(what, files)? {
            return Ok(false);
        }
    }
    d.done.snapshots += 1;
    set_earliest_hint(d.storage, next.id);
    Ok(true)
}

/// Expires what `retention` no longer keeps, oldest first, never `keep_since` or anything
/// newer, stopping once `deadline_millis` has passed (between two snapshots or inside one).
pub fn expire(
    storage: &dyn Storage,
    schema: &TableSchema,
    retention: &Retention,
    keep_since: Option<i64>,
    now: &dyn Fn() -> i64,
    deadline_millis: i64,
) -> Result<Expired> {
    let mut d = Deleter {
        storage,
        now,
        deadline_millis,
        done: Expired::default(),
    };
    let Some((earliest, end)) = plan(storage, retention, keep_since, now())? else {
        return Ok(d.done);
    };
    for id in earliest..end {
        if now() >= deadline_millis {
            d.done.more_to_do = true;
            break;
        }
        // Another expiry (a Paimon job) may be running too: a snapshot already gone is done.
        let (Some(expiring), Some(next)) =
            (read_snapshot(storage, id)?, read_snapshot(storage, id + 1)?)
        else {
            continue;
        };
        if !expire_one(&mut d, schema, &expiring, &next)
            .with_context(|| format!("expiring snapshot {id}"))?
        {
            break;
        }
    }
    Ok(d.done)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashSet;
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{id_name_batch, id_name_table, pk_table, writer_context};
    use fluss_lake_guest_sdk::wit::TableInfo;

    use fluss_lake_guest_sdk::ErrorKind;

    use super::*;
    use crate::catalog::create_table_if_missing;
    use crate::committer::{PaimonCommitter, to_committable};
    use crate::manifest::merge_entries;
    use crate::schema::load_latest_schema;
    use crate::writer::PaimonWriter;

    const FAR_FUTURE: i64 = i64::MAX / 2;
    const NO_DEADLINE: i64 = i64::MAX;

    fn retention(min: i64, max: i64) -> Retention {
        Retention {
            min,
            max,
            time_retained_ms: 1,
            limit: 1_000,
        }
    }

    /// Commits `rounds` rounds of one small file each; manifests merge every 3 so that
    /// merged-away manifests exist too.
    fn table_with_rounds(table: &TableInfo, rounds: i32) -> MemoryStorage {
        let storage = MemoryStorage::new();
        create_table_if_missing(&storage, table, &[]).unwrap();
        let config = vec![("manifest.merge-min-count".to_string(), "3".to_string())];
        for round in 0..rounds {
            let mut w = PaimonWriter::open(&writer_context(table, 0, None, &[]), &storage).unwrap();
            if table.primary_keys.is_empty() {
                w.write(id_name_batch(&[round, round + 1000])).unwrap();
            } else {
                let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
                let batch =
                    RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(vec![round % 4]))])
                        .unwrap();
                let kind = if round < 4 {
                    ChangeType::Insert
                } else {
                    ChangeType::UpdateAfter
                };
                w.write(make_changelog_batch(&batch, &[kind], round as i64, 1).unwrap())
                    .unwrap();
            }
            let payload = w.complete().unwrap().payload;
            let mut c = PaimonCommitter::new(&storage, config.clone());
            let base = latest_snapshot_id(&storage).unwrap();
            c.commit(
                &to_committable(&[payload]).unwrap(),
                &[("fluss-offsets".into(), format!("/o/{round}"))],
                base,
            )
            .unwrap();
        }
        storage
    }

    fn snapshot_ids(storage: &MemoryStorage) -> Vec<i64> {
        let mut ids: Vec<i64> = storage
            .list("snapshot")
            .unwrap()
            .iter()
            .filter_map(|m| m.path.strip_prefix("snapshot/snapshot-")?.parse().ok())
            .collect();
        ids.sort();
        ids
    }

    /// Every file the remaining snapshots use: manifest lists, manifests, live data files
    /// and changelog files. Panics when one of them is missing.
    fn referenced(storage: &MemoryStorage, schema: &TableSchema) -> HashSet<String> {
        referenced_by(storage, schema, snapshot_ids(storage))
    }

    /// [`referenced`] for the snapshots `ids` only.
    fn referenced_by(
        storage: &MemoryStorage,
        schema: &TableSchema,
        ids: impl IntoIterator<Item = i64>,
    ) -> HashSet<String> {
        let mut used = HashSet::new();
        for id in ids {
            let s = read_snapshot(storage, id).unwrap().unwrap();
            let mut data = Vec::new();
            for list in [&s.base_manifest_list, &s.delta_manifest_list] {
                used.insert(manifest_path(list));
                for m in read_manifest_list(storage, list).unwrap() {
                    used.insert(manifest_path(&m.file_name));
                    data.extend(read_manifest(storage, &m.file_name).unwrap());
                }
            }
            let mut files = merge_entries(data);
            if let Some(list) = &s.changelog_manifest_list {
                used.insert(manifest_path(list));
                for m in read_manifest_list(storage, list).unwrap() {
                    used.insert(manifest_path(&m.file_name));
                    files.extend(read_manifest(storage, &m.file_name).unwrap());
                }
            }
            for e in files {
                used.extend(entry_paths(schema, &e).unwrap().unwrap());
            }
        }
        for path in &used {
            assert!(
                storage.head(path).unwrap().is_some(),
                "{path} is used but gone"
            );
        }
        used
    }

    /// Objects outside the schema and snapshot directories that no snapshot uses.
    fn unreferenced(storage: &MemoryStorage, schema: &TableSchema) -> Vec<String> {
        let used = referenced(storage, schema);
        storage
            .list("")
            .unwrap()
            .into_iter()
            .map(|m| m.path)
            .filter(|p| !p.starts_with("schema/") && !p.starts_with("snapshot/"))
            .filter(|p| !used.contains(p))
            .collect()
    }

    fn schema_of(storage: &MemoryStorage) -> TableSchema {
        load_latest_schema(storage).unwrap().unwrap()
    }

    #[test]
    fn expiry_keeps_the_newest_snapshots_whole_and_deletes_only_what_nothing_uses() {
        let storage = table_with_rounds(&id_name_table(), 20);
        let schema = schema_of(&storage);
        assert!(
            unreferenced(&storage, &schema).is_empty(),
            "no garbage before expiry"
        );
        let before = storage.list("").unwrap().len();

        let done = expire(
            &storage,
            &schema,
            &retention(3, 5),
            Some(20),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(snapshot_ids(&storage), [18, 19, 20]);
        assert_eq!(done.snapshots, 17);
        assert!(!done.more_to_do);
        assert_eq!(earliest_snapshot_id(&storage).unwrap(), Some(18));
        assert_eq!(storage.get("snapshot/EARLIEST").unwrap(), b"18");
        // Every remaining snapshot is whole (`referenced` checks), nothing else is left, and
        // every file of the 20 rounds is still there (a log table never deletes data files).
        assert!(unreferenced(&storage, &schema).is_empty());
        let data_files = storage
            .list("bucket-0")
            .unwrap()
            .into_iter()
            .filter(|m| m.path.ends_with(".parquet"))
            .count();
        assert_eq!(data_files, 20);
        assert_eq!(
            done.files_deleted as usize,
            before - storage.list("").unwrap().len()
        );
        assert!(done.bytes_deleted > 0);

        // Nothing more to expire: a second call is a no-op.
        let again = expire(
            &storage,
            &schema,
            &retention(3, 5),
            Some(20),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(again, Expired::default());
    }

    #[test]
    fn the_snapshot_fluss_needs_and_newer_ones_survive_whatever_the_retention() {
        let storage = table_with_rounds(&id_name_table(), 12);
        let schema = schema_of(&storage);
        expire(
            &storage,
            &schema,
            &retention(1, 1),
            Some(5),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(snapshot_ids(&storage), (5..=12).collect::<Vec<_>>());
        assert!(unreferenced(&storage, &schema).is_empty());
    }

    #[test]
    fn young_snapshots_stay_unless_beyond_the_maximum() {
        let storage = table_with_rounds(&id_name_table(), 10);
        let schema = schema_of(&storage);
        let mut r = retention(2, 6);
        r.time_retained_ms = 3_600_000;
        // Every snapshot is younger than an hour: only those beyond the maximum go.
        expire(
            &storage,
            &schema,
            &r,
            None,
            &fluss_lake_guest_sdk::clock::now_millis,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(snapshot_ids(&storage), (5..=10).collect::<Vec<_>>());
        // The per-call limit.
        let storage = table_with_rounds(&id_name_table(), 10);
        let mut r = retention(1, 100);
        r.limit = 4;
        expire(&storage, &schema, &r, None, &|| FAR_FUTURE, NO_DEADLINE).unwrap();
        assert_eq!(snapshot_ids(&storage), (5..=10).collect::<Vec<_>>());
    }

    /// Storage that records the paths deleted through it and fails the delete of each path
    /// `fail_once` named, once, as a transient storage error would.
    struct Watched<'a> {
        inner: &'a MemoryStorage,
        deleted: RefCell<Vec<String>>,
        fail: RefCell<HashSet<String>>,
    }

    impl<'a> Watched<'a> {
        fn new(inner: &'a MemoryStorage) -> Self {
            Watched {
                inner,
                deleted: RefCell::default(),
                fail: RefCell::default(),
            }
        }

        fn fail_once(&self, path: String) {
            self.fail.borrow_mut().insert(path);
        }

        fn deleted_where(&self, pred: impl Fn(&str) -> bool) -> usize {
            self.deleted.borrow().iter().filter(|p| pred(p)).count()
        }
    }

    impl Storage for Watched<'_> {
        fn get(&self, p: &str) -> Result<Vec<u8>> {
            self.inner.get(p)
        }
        fn upload(&self, p: &str) -> Result<Box<dyn fluss_lake_guest_sdk::storage::Upload>> {
            self.inner.upload(p)
        }
        fn put(&self, p: &str, d: &[u8]) -> Result<()> {
            self.inner.put(p, d)
        }
        fn put_if_absent(&self, p: &str, d: &[u8]) -> Result<()> {
            self.inner.put_if_absent(p, d)
        }
        fn list(&self, p: &str) -> Result<Vec<fluss_lake_guest_sdk::storage::ObjectMeta>> {
            self.inner.list(p)
        }
        fn delete(&self, p: &str) -> Result<()> {
            if self.fail.borrow_mut().remove(p) {
                return Err(Error::io(format!("injected failure deleting {p}")));
            }
            self.deleted.borrow_mut().push(p.to_string());
            self.inner.delete(p)
        }
        fn head(&self, p: &str) -> Result<Option<fluss_lake_guest_sdk::storage::ObjectMeta>> {
            self.inner.head(p)
        }
    }

    fn is_snapshot_file(p: &str) -> bool {
        p.starts_with("snapshot/snapshot-")
    }

    fn is_data_file(p: &str) -> bool {
        p.starts_with("bucket-")
    }

    fn is_manifest(p: &str) -> bool {
        p.starts_with("manifest/") && !is_manifest_list(p)
    }

    fn is_manifest_list(p: &str) -> bool {
        p.starts_with("manifest/manifest-list-")
    }

    fn gone(storage: &MemoryStorage, name: &str) -> bool {
        storage.head(&manifest_path(name)).unwrap().is_none()
    }

    #[test]
    fn the_deadline_stops_expiry_between_two_snapshots() {
        let storage = table_with_rounds(&id_name_table(), 10);
        let schema = schema_of(&storage);
        let w = Watched::new(&storage);
        // The clock advances by one per snapshot expired: late once two went.
        let now = || FAR_FUTURE + w.deleted_where(is_snapshot_file) as i64;
        let done = expire(&w, &schema, &retention(1, 100), None, &now, FAR_FUTURE + 2).unwrap();
        assert_eq!(done.snapshots, 2);
        assert!(done.more_to_do);
        assert_eq!(snapshot_ids(&storage), (3..=10).collect::<Vec<_>>());
        assert!(unreferenced(&storage, &schema).is_empty());
    }

    /// A deadline passing inside one snapshot's deletions (after a data file, a manifest or
    /// a manifest list) stops right there, and the next call finishes what it left.
    #[test]
    fn a_deadline_inside_a_snapshot_stops_it_where_the_next_call_resumes() {
        let t = pk_table("db", "pk", &[("id", "INT", false)], &["id"], 1, &[]);
        let stops = [
            ("a data file", is_data_file as fn(&str) -> bool),
            ("a manifest", is_manifest),
            ("a manifest list", is_manifest_list),
        ];
        for (what, stop_after) in stops {
            let storage = table_with_rounds(&t, 12);
            let schema = schema_of(&storage);
            let w = Watched::new(&storage);
            let now = || FAR_FUTURE + (w.deleted_where(stop_after) > 0) as i64;
            let done = expire(
                &w,
                &schema,
                &retention(4, 4),
                Some(12),
                &now,
                FAR_FUTURE + 1,
            )
            .unwrap();
            assert!(done.more_to_do, "{what}");
            let deleted = w.deleted.borrow().clone();
            let last = deleted.last().unwrap();
            assert!(
                stop_after(last) && deleted.iter().filter(|p| stop_after(p)).count() == 1,
                "after {what}: expiry went on to delete {last}"
            );
            let first = snapshot_ids(&storage)[0];
            assert_eq!(done.snapshots as i64, first - 1, "{what}");
            // The retained snapshots are whole, the stopped one only in part.
            referenced_by(&storage, &schema, first + 1..=12);

            let rest = expire(
                &storage,
                &schema,
                &retention(4, 4),
                Some(12),
                &|| FAR_FUTURE,
                NO_DEADLINE,
            )
            .unwrap();
            assert_eq!(snapshot_ids(&storage), [9, 10, 11, 12], "{what}");
            assert_eq!(rest.snapshots as i64, 9 - first, "{what}");
            assert!(!rest.more_to_do);
            assert!(unreferenced(&storage, &schema).is_empty(), "{what}");
        }
    }

    /// A delete failing half way through a snapshot's manifest lists: the other lists still
    /// go, the error is returned, and the next call finishes the snapshot although some of
    /// its manifest lists and all its manifests are gone.
    #[test]
    fn a_failed_delete_is_returned_and_the_next_call_finishes_the_snapshot() {
        let t = pk_table("db", "pk", &[("id", "INT", false)], &["id"], 1, &[]);
        let storage = table_with_rounds(&t, 12);
        let schema = schema_of(&storage);
        let third = read_snapshot(&storage, 3).unwrap().unwrap();
        let changelog = third.changelog_manifest_list.clone().unwrap();
        let w = Watched::new(&storage);
        w.fail_once(manifest_path(&changelog));

        let e = expire(
            &w,
            &schema,
            &retention(4, 4),
            Some(12),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(e.message().contains(&changelog), "{e}");
        assert_eq!(snapshot_ids(&storage), (3..=12).collect::<Vec<_>>());
        assert!(!gone(&storage, &changelog));
        assert!(gone(&storage, &third.base_manifest_list));
        assert!(gone(&storage, &third.delta_manifest_list));
        referenced_by(&storage, &schema, 4..=12);

        let done = expire(
            &storage,
            &schema,
            &retention(4, 4),
            Some(12),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(done.snapshots, 6);
        assert_eq!(snapshot_ids(&storage), [9, 10, 11, 12]);
        assert!(unreferenced(&storage, &schema).is_empty());
    }

    /// What a crash in the middle of an expiry (this plugin's or Paimon's, which deletes the
    /// manifests of many snapshots before their snapshot files) leaves: snapshots whose
    /// manifests and manifest lists are partly gone. The next call expires them.
    #[test]
    fn snapshots_a_crashed_expiry_left_without_manifests_are_expired() {
        let t = pk_table("db", "pk", &[("id", "INT", false)], &["id"], 1, &[]);
        let storage = table_with_rounds(&t, 12);
        let schema = schema_of(&storage);
        let live = referenced_by(&storage, &schema, 9..=12);
        for id in 1..=8 {
            let s = read_snapshot(&storage, id).unwrap().unwrap();
            let lists = [
                Some(s.base_manifest_list),
                Some(s.delta_manifest_list),
                s.changelog_manifest_list,
            ];
            for (i, list) in lists.into_iter().flatten().enumerate() {
                for m in read_manifest_list(&storage, &list).unwrap() {
                    if !live.contains(&manifest_path(&m.file_name)) {
                        storage.delete(&manifest_path(&m.file_name)).unwrap();
                    }
                }
                // Some lists go too, some stay with their manifests gone.
                if (id as usize + i).is_multiple_of(2) {
                    storage.delete(&manifest_path(&list)).unwrap();
                }
            }
        }

        let done = expire(
            &storage,
            &schema,
            &retention(4, 4),
            Some(12),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(done.snapshots, 8);
        assert_eq!(snapshot_ids(&storage), [9, 10, 11, 12]);
        for path in &live {
            assert!(
                storage.head(path).unwrap().is_some(),
                "{path} is used but gone"
            );
        }
    }

    /// When the snapshot after the one expiring cannot be read whole, what it keeps is
    /// unknown: nothing is deleted on its account, so no file it may use goes.
    #[test]
    fn an_unreadable_next_snapshot_keeps_every_file_it_may_use() {
        let t = pk_table("db", "pk", &[("id", "INT", false)], &["id"], 1, &[]);
        let storage = table_with_rounds(&t, 12);
        let schema = schema_of(&storage);
        let mut live = referenced_by(&storage, &schema, 9..=12);
        let ninth = read_snapshot(&storage, 9).unwrap().unwrap();
        let lost_delta = read_manifest_list(&storage, &ninth.delta_manifest_list).unwrap()[0]
            .file_name
            .clone();
        for name in [&ninth.base_manifest_list, &lost_delta] {
            storage.delete(&manifest_path(name)).unwrap();
            live.remove(&manifest_path(name));
        }

        let done = expire(
            &storage,
            &schema,
            &retention(4, 4),
            Some(12),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(done.snapshots, 8);
        assert_eq!(snapshot_ids(&storage), [9, 10, 11, 12]);
        for path in &live {
            assert!(
                storage.head(path).unwrap().is_some(),
                "{path} is used but gone"
            );
        }
    }

    #[test]
    fn primary_key_tables_lose_replaced_changelog_files_but_keep_live_data() {
        let t = pk_table("db", "pk", &[("id", "INT", false)], &["id"], 1, &[]);
        let storage = table_with_rounds(&t, 12);
        let schema = schema_of(&storage);
        let changelogs = |s: &MemoryStorage| {
            s.list("bucket-0")
                .unwrap()
                .iter()
                .filter(|m| m.path.contains("/changelog-"))
                .count()
        };
        assert_eq!(changelogs(&storage), 12);
        expire(
            &storage,
            &schema,
            &retention(4, 4),
            Some(12),
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(snapshot_ids(&storage), [9, 10, 11, 12]);
        assert_eq!(
            changelogs(&storage),
            4,
            "one changelog file per retained snapshot"
        );
        assert!(unreferenced(&storage, &schema).is_empty());
    }

    #[test]
    fn retention_options_are_checked_and_unsupported_tables_named() {
        let storage = table_with_rounds(&id_name_table(), 1);
        let schema = schema_of(&storage);
        let cfg = |pairs: &[(&str, &str)]| fluss_lake_guest_sdk::testing::pairs(pairs);
        let r = Retention::of(&cfg(&[]), &schema).unwrap();
        assert_eq!(
            r,
            Retention {
                min: 10,
                max: i32::MAX as i64,
                time_retained_ms: 3_600_000,
                limit: 50
            }
        );
        let r = Retention::of(
            &cfg(&[
                ("snapshot.num-retained.max", "20"),
                ("snapshot.time-retained", "10 s"),
            ]),
            &schema,
        )
        .unwrap();
        assert_eq!((r.max, r.time_retained_ms), (20, 10_000));
        for bad in [
            [("snapshot.num-retained.min", "0")],
            [("snapshot.num-retained.max", "3")],
            [("snapshot.time-retained", "soon")],
        ] {
            let e = Retention::of(&cfg(&bad), &schema).unwrap_err();
            assert_eq!(
                e.kind(),
                fluss_lake_guest_sdk::ErrorKind::InvalidInput,
                "{e}"
            );
        }

        assert_eq!(
            unsupported_reason(&storage, &[], &schema, &r).unwrap(),
            None
        );
        let longer = cfg(&[("changelog.num-retained.max", "100")]);
        let why = unsupported_reason(&storage, &longer, &schema, &r)
            .unwrap()
            .unwrap();
        assert!(why.contains("changelog"), "{why}");
        storage.put("tag/tag-nightly", b"{}").unwrap();
        let why = unsupported_reason(&storage, &[], &schema, &r)
            .unwrap()
            .unwrap();
        assert!(why.contains("tags"), "{why}");
    }

    #[test]
    fn a_consumer_keeps_the_snapshots_it_still_reads() {
        let storage = table_with_rounds(&id_name_table(), 10);
        let schema = schema_of(&storage);
        storage
            .put("consumer/consumer-job", br#"{"nextSnapshot":4}"#)
            .unwrap();
        expire(
            &storage,
            &schema,
            &retention(1, 1),
            None,
            &|| FAR_FUTURE,
            NO_DEADLINE,
        )
        .unwrap();
        assert_eq!(snapshot_ids(&storage), (4..=10).collect::<Vec<_>>());
    }
}
