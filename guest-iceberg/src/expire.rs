//! Snapshot expiry, as Iceberg's `RemoveSnapshots` with its incremental file cleanup does it
//! for a table whose history is one line on `main` (Fluss's tables).
//!
//! Which snapshots go: walking back from the current snapshot, a snapshot is kept while fewer
//! than `history.expire.min-snapshots-to-keep` (default 1) are kept or it is younger than
//! `history.expire.max-snapshot-age-ms` (default 5 days); the first one that is neither, and
//! every older one, expire. The snapshot Fluss needs and everything after it are always kept.
//! At most [`MAX_EXPIRED_PER_CALL`] go per call, oldest first, so the files to delete stay
//! bounded and are all deleted before the call returns.
//!
//! Order: the new metadata version without them is published first (put-if-absent, so a
//! concurrent commit wins and expiry is planned again on it), then their files are deleted,
//! which nothing can read any more: their manifest lists; the manifests they list that the
//! oldest remaining snapshot does not (a manifest dropped once never comes back); the data
//! and delete files they deleted (entries `DELETED` by them); their statistics files; and,
//! with `write.metadata.delete-after-commit.enabled`, metadata files `metadata-log` no longer
//! names.
//!
//! Not handled, so refused with a reason: tables with refs besides `main` (tags, branches).

use std::collections::HashSet;

use fluss_lake_guest_sdk::maintenance::Expired;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, ErrorKind, Result, ResultExt, config};

use crate::committer::relative_path;
use crate::hadoop_tables::{self, Loaded, METADATA_DIR, metadata_path};
use crate::manifest::{STATUS_DELETED, read_manifest_entries, read_manifest_list};
use crate::metadata::Snapshot;

/// Iceberg `history.expire.max-snapshot-age-ms` default: 5 days.
const DEFAULT_MAX_SNAPSHOT_AGE_MS: i64 = 5 * 24 * 3_600_000;
/// Iceberg `history.expire.min-snapshots-to-keep` default.
const DEFAULT_MIN_SNAPSHOTS_TO_KEEP: i64 = 1;
/// Snapshots expired by one call at most (the rest wait for the next call).
pub const MAX_EXPIRED_PER_CALL: usize = 100;
const MAX_ATTEMPTS: usize = 5;

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

struct Deleter<'a> {
    storage: &'a dyn Storage,
    location: String,
    done: Expired,
}

impl Deleter<'_> {
    /// Deletes the file at absolute `uri`, inside the table.
    fn delete(&mut self, uri: &str, size: i64) -> Result<()> {
        let rel = match relative_path(&self.location, uri) {
            Ok(rel) => rel,
            Err(e) => {
                fluss_lake_guest_sdk::warn!("not deleting {uri}: {e}");
                return Ok(());
            }
        };
        self.storage
            .delete(rel)
            .with_context(|| format!("deleting {rel}"))?;
        self.done.files_deleted += 1;
        self.done.bytes_deleted += size.max(0) as u64;
        Ok(())
    }

    fn read(&self, uri: &str) -> Result<Vec<u8>> {
        let rel = relative_path(&self.location, uri)?;
        self.storage
            .get(rel)
            .with_context(|| format!("reading {rel}"))
    }
}

/// Publishes the metadata without `expired`; `Conflict` when another commit came first.
fn publish(
    storage: &dyn Storage,
    loaded: &Loaded,
    expired: &[Snapshot],
    now_ms: i64,
) -> Result<()> {
    let ids: HashSet<i64> = expired.iter().map(|s| s.snapshot_id).collect();
    let next = loaded
        .metadata
        .without_snapshots(&ids, &loaded.metadata_file()?, now_ms);
    hadoop_tables::publish(storage, Some(loaded.version), &next).map(|_| ())
}

/// Deletes what only `expired` used, now that no metadata names them.
fn delete_files(
    d: &mut Deleter<'_>,
    loaded: &Loaded,
    expired: &[Snapshot],
    oldest_kept: &Snapshot,
) -> Result<()> {
    let kept: HashSet<String> = read_manifest_list(&d.read(&oldest_kept.manifest_list)?)?
        .into_iter()
        .map(|m| m.manifest_path)
        .collect();
    let mut deleted_manifests = HashSet::new();
    for s in expired {
        let manifests = read_manifest_list(&d.read(&s.manifest_list)?)?;
        for m in &manifests {
            // Files this snapshot deleted are in the manifests it wrote.
            if m.added_snapshot_id == s.snapshot_id && m.deleted_files_count > 0 {
                for e in read_manifest_entries(&d.read(&m.manifest_path)?)? {
                    if e.status == STATUS_DELETED
                        && e.snapshot_id.is_none_or(|id| id == s.snapshot_id)
                    {
                        d.delete(&e.file_path, e.file_size_in_bytes)?;
                    }
                }
            }
        }
        for m in manifests {
            if !kept.contains(&m.manifest_path) && deleted_manifests.insert(m.manifest_path.clone())
            {
                d.delete(&m.manifest_path, m.manifest_length)?;
            }
        }
        d.delete(&s.manifest_list, 0)?;
    }
    let ids: HashSet<i64> = expired.iter().map(|s| s.snapshot_id).collect();
    for stats in loaded.metadata.statistics_files(&ids) {
        d.delete(&stats, 0)?;
    }
    Ok(())
}

/// With `write.metadata.delete-after-commit.enabled`: deletes metadata files older than the
/// current one that `metadata-log` no longer names.
fn delete_old_metadata(d: &mut Deleter<'_>, current: &Loaded) -> Result<()> {
    let named: HashSet<String> = current.metadata.metadata_log_files().into_iter().collect();
    let current_file = current.metadata_file()?;
    for object in d.storage.list(METADATA_DIR)? {
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
            d.delete(&uri, object.size as i64)?;
        }
    }
    Ok(())
}

/// Expires what `retention` no longer keeps, never `keep_since` or anything after it.
pub fn expire(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    keep_since: Option<i64>,
    now: &dyn Fn() -> i64,
    deadline_millis: i64,
) -> Result<Expired> {
    let mut last_conflict = None;
    for _ in 0..MAX_ATTEMPTS {
        let loaded = hadoop_tables::load(storage)?
            .ok_or_else(|| Error::not_found("Iceberg table has no metadata"))?;
        if let Some(reason) = unsupported_reason(&loaded) {
            return Err(Error::unsupported(format!(
                "snapshots not expired: {reason}"
            )));
        }
        let retention = Retention::of(plugin_config, &loaded)?;
        let mut d = Deleter {
            storage,
            location: loaded.metadata.location()?.to_string(),
            done: Expired::default(),
        };
        let Some(Plan {
            expired,
            oldest_kept,
            more_due,
        }) = plan(&loaded, &retention, keep_since, now())?
        else {
            if retention.delete_old_metadata {
                delete_old_metadata(&mut d, &loaded)?;
            }
            return Ok(d.done);
        };
        if now() >= deadline_millis {
            d.done.more_to_do = true;
            return Ok(d.done);
        }
        match publish(storage, &loaded, &expired, now()) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Conflict => {
                last_conflict = Some(e);
                continue;
            }
            Err(e) => return Err(e),
        }
        d.done.snapshots = expired.len() as u64;
        delete_files(&mut d, &loaded, &expired, &oldest_kept)?;
        if retention.delete_old_metadata
            && let Some(current) = hadoop_tables::load(storage)?
        {
            delete_old_metadata(&mut d, &current)?;
        }
        d.done.more_to_do = more_due;
        return Ok(d.done);
    }
    Err(last_conflict.unwrap_or_else(|| Error::conflict("Iceberg expiry kept conflicting")))
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{
        committer_context, id_name_batch, id_name_table, pairs, writer_context,
    };

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
        hadoop_tables::load(storage).unwrap().unwrap()
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
        hadoop_tables::publish(&storage, Some(l.version), &tagged).unwrap();
        let e = expire(&storage, &[], None, &|| FAR_FUTURE, NO_DEADLINE).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("nightly"), "{e}");
    }
}
