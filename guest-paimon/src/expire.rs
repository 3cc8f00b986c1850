//! Snapshot expiry, as Paimon's `ExpireSnapshotsImpl` and `SnapshotDeletion` do it.
//!
//! Which snapshots go: from the earliest on, every snapshot beyond `snapshot.num-retained.max`,
//! and older ones beyond `snapshot.num-retained.min` once they are older than
//! `snapshot.time-retained`, at most `snapshot.expire.limit` per call; never one a consumer
//! (`consumer/consumer-*`) still reads, nor the snapshot Fluss needs or any newer one.
//!
//! Each expiry removes the earliest snapshot `E`, with `R = E + 1` the next one, in an order
//! that keeps `R` and every later snapshot whole at every step (a crash in between leaves
//! only unreferenced files, which the next expiry deletes again):
//! 1. data files that `R`'s delta deletes (and does not add back: a file moved to another
//!    level is deleted and added under the same name), with their extra files;
//! 2. `E`'s changelog files (Fluss's primary-key tables have `changelog-producer = input`);
//! 3. `E`'s manifest lists and the manifests `R` does not list;
//! 4. the snapshot file, then the `EARLIEST` hint.
//!
//! Not handled, so refused with a clear reason instead of guessed: tables with tags (their
//! snapshots pin files) and changelogs kept longer than snapshots (`changelog.num-retained.*`
//! or `changelog.time-retained` above the `snapshot.*` ones). Files with external paths and
//! the index manifests and statistics files of expired snapshots are left in place.

use std::collections::{BTreeMap, HashSet};

use fluss_lake_guest_sdk::maintenance::Expired;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt, config};

use crate::manifest::{FileKind, ManifestEntry, manifest_path, read_manifest, read_manifest_list};
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
fn deleted_by_delta(storage: &dyn Storage, next: &Snapshot) -> Result<Vec<ManifestEntry>> {
    let mut deleted: BTreeMap<(Vec<u8>, i32, String), ManifestEntry> = BTreeMap::new();
    for e in entries_of(storage, &next.delta_manifest_list)? {
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
    Ok(deleted.into_values().collect())
}

/// Manifest lists and manifests snapshot `s` uses (Paimon's `manifestSkippingSet`).
fn manifests_used_by(storage: &dyn Storage, s: &Snapshot) -> Result<HashSet<String>> {
    let mut used = HashSet::from([s.base_manifest_list.clone(), s.delta_manifest_list.clone()]);
    for list in [&s.base_manifest_list, &s.delta_manifest_list] {
        used.extend(
            read_manifest_list(storage, list)?
                .into_iter()
                .map(|m| m.file_name),
        );
    }
    Ok(used)
}

struct Deleter<'a> {
    storage: &'a dyn Storage,
    done: Expired,
}

impl Deleter<'_> {
    fn delete(&mut self, path: &str, size: i64) -> Result<()> {
        self.storage
            .delete(path)
            .with_context(|| format!("deleting {path}"))?;
        self.done.files_deleted += 1;
        self.done.bytes_deleted += size.max(0) as u64;
        Ok(())
    }

    fn delete_manifest_list(
        &mut self,
        list: &str,
        size: Option<i64>,
        used: &HashSet<String>,
    ) -> Result<()> {
        for m in read_manifest_list(self.storage, list)? {
            if !used.contains(&m.file_name) {
                self.delete(&manifest_path(&m.file_name), m.file_size)?;
            }
        }
        if !used.contains(list) {
            self.delete(&manifest_path(list), size.unwrap_or(0))?;
        }
        Ok(())
    }
}

/// Expires snapshot `id` (the earliest), keeping `next` (`id + 1`) and everything after it
/// whole.
fn expire_one(
    d: &mut Deleter<'_>,
    schema: &TableSchema,
    expiring: &Snapshot,
    next: &Snapshot,
) -> Result<()> {
    for e in deleted_by_delta(d.storage, next)? {
        match entry_paths(schema, &e)? {
            Some(paths) => {
                let mut size = e.file.file_size;
                for p in paths {
                    d.delete(&p, std::mem::take(&mut size))?;
                }
            }
            None => fluss_lake_guest_sdk::warn!(
                "not deleting {}: it lives outside the table (external path)",
                e.file.file_name
            ),
        }
    }
    if let Some(changelog) = &expiring.changelog_manifest_list {
        for e in entries_of(d.storage, changelog)? {
            if e.kind == FileKind::Add
                && let Some(paths) = entry_paths(schema, &e)?
            {
                let mut size = e.file.file_size;
                for p in paths {
                    d.delete(&p, std::mem::take(&mut size))?;
                }
            }
        }
        d.delete_manifest_list(
            changelog,
            expiring.changelog_manifest_list_size,
            &HashSet::new(),
        )?;
    }
    let used = manifests_used_by(d.storage, next)?;
    d.delete_manifest_list(
        &expiring.base_manifest_list,
        expiring.base_manifest_list_size,
        &used,
    )?;
    d.delete_manifest_list(
        &expiring.delta_manifest_list,
        expiring.delta_manifest_list_size,
        &used,
    )?;
    let path = snapshot_path(expiring.id);
    d.storage
        .delete(&path)
        .with_context(|| format!("deleting {path}"))?;
    d.done.files_deleted += 1;
    d.done.snapshots += 1;
    set_earliest_hint(d.storage, next.id);
    Ok(())
}

/// Expires what `retention` no longer keeps, oldest first, never `keep_since` or anything
/// newer, stopping between two snapshots once `deadline_millis` has passed.
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
        expire_one(&mut d, schema, &expiring, &next)
            .with_context(|| format!("expiring snapshot {id}"))?;
    }
    Ok(d.done)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{id_name_batch, id_name_table, pk_table, writer_context};
    use fluss_lake_guest_sdk::wit::TableInfo;

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
        let mut used = HashSet::new();
        for id in snapshot_ids(storage) {
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

    #[test]
    fn the_deadline_stops_expiry_between_two_snapshots() {
        let storage = table_with_rounds(&id_name_table(), 10);
        let schema = schema_of(&storage);
        let calls = std::cell::Cell::new(0);
        // Planning reads the clock once, then once per snapshot: the third expiry is late.
        let now = || {
            calls.set(calls.get() + 1);
            FAR_FUTURE + calls.get()
        };
        let done = expire(
            &storage,
            &schema,
            &retention(1, 100),
            None,
            &now,
            FAR_FUTURE + 4,
        )
        .unwrap();
        assert_eq!(done.snapshots, 2);
        assert!(done.more_to_do);
        assert_eq!(snapshot_ids(&storage), (3..=10).collect::<Vec<_>>());
        assert!(unreferenced(&storage, &schema).is_empty());
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
