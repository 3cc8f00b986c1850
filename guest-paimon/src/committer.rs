//! Committing a round (Fluss `PaimonLakeCommitter`, Paimon `FileStoreCommitImpl`): the
//! round's data files are written to a delta manifest and manifest list, its changelog files
//! (primary-key tables with `changelog-producer = input`) to a changelog manifest list, the
//! previous snapshot's manifests (merged when there are too many, as `ManifestFileMerger`
//! does) to a base manifest list, and a new `snapshot-<id>` is published with
//! `put-if-absent`. When another writer takes the id first, the base is rebuilt from the newer
//! snapshot and the commit retried a bounded number of times. A table of Paimon's REST
//! catalog has the catalog commit the snapshot instead (`CatalogSnapshotCommit`), with the
//! statistics of the partitions it changes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use fluss_lake_guest_sdk::avro::AvroCodec;
use fluss_lake_guest_sdk::commit::{
    self, Attempt, Plan, Proposal, RetryPolicy, VersionProposal, Written,
};
use fluss_lake_guest_sdk::plugin::FormatCommitter;
use fluss_lake_guest_sdk::replace::ReplaceSet;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{
    CommitResult, CommittedSnapshot, CommitterContext, ReadableSnapshot, TieringStats,
};
use fluss_lake_guest_sdk::{Error, FLUSS_COMMIT_USER, Result, ResultExt, clock, config};

use crate::commit_message::CommitMessage;
use crate::compact::live_files::{BucketKey, replaced_entries};
use crate::manifest::{
    DEFAULT_MANIFEST_CODEC, FileKind, ManifestEntry, ManifestFileMeta, ManifestFiles,
    manifest_path, merge_manifests, read_manifest, read_manifest_list, write_manifest_list,
    write_manifests,
};
use crate::schema::{TableSchema, load_latest_schema};
use crate::snapshot::{
    BATCH_COMMIT_IDENTIFIER, SNAPSHOT_VERSION, Snapshot, catalog_keeps_snapshots,
    earliest_snapshot_id, latest_snapshot_id, read_snapshot, snapshot_path, update_hints,
};
use crate::table::{BucketMode, Partition, bucket_dir, check_supported};

/// Paimon `manifest.target-file-size` default.
const DEFAULT_MANIFEST_TARGET_SIZE: u64 = 8 << 20;
/// Paimon `manifest.merge-min-count` default.
const DEFAULT_MANIFEST_MERGE_MIN_COUNT: usize = 30;

/// Merges write results into one committable: the concatenation of their files.
pub fn to_committable(write_results: &[Vec<u8>]) -> Result<Vec<u8>> {
    CommitMessage::merge(write_results)
        .context("decoding a write result")?
        .encode()
}

/// Net bytes of data files a manifest adds, cached by manifest name (manifests are immutable)
/// so that cumulative table sizes only read manifests a process has not seen yet.
static MANIFEST_BYTES: Mutex<Option<HashMap<String, i64>>> = Mutex::new(None);

fn net_bytes(entries: &[ManifestEntry]) -> i64 {
    entries
        .iter()
        .map(|e| {
            if e.kind == FileKind::Add {
                e.file.file_size
            } else {
                -e.file.file_size
            }
        })
        .sum()
}

fn total_file_size(storage: &dyn Storage, manifests: &[ManifestFileMeta]) -> Result<i64> {
    let mut cache = MANIFEST_BYTES.lock().unwrap_or_else(|p| p.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    let mut total = 0;
    let mut keep = HashMap::new();
    for m in manifests {
        let bytes = match cache.get(&m.file_name) {
            Some(b) => *b,
            None => net_bytes(&read_manifest(storage, &m.file_name)?),
        };
        total += bytes;
        keep.insert(m.file_name.clone(), bytes);
    }
    // Keep only what the newest snapshot references, so the cache stays bounded.
    if keep.len() < 100_000 {
        cache.retain(|k, _| !keep.contains_key(k));
        cache.extend(keep);
        if cache.len() > 200_000 {
            cache.clear();
        }
    }
    Ok(total)
}

/// The Avro codec of new manifests: `manifest.compression` of the plugin configuration, else
/// of the table, else Paimon's default (zstd).
fn manifest_codec(config: &[(String, String)], schema: &TableSchema) -> Result<AvroCodec> {
    match config::get(config, "manifest.compression")
        .or_else(|| schema.option("manifest.compression"))
    {
        Some(name) => AvroCodec::parse(name, "manifest.compression"),
        None => Ok(DEFAULT_MANIFEST_CODEC),
    }
}

/// Who publishes a snapshot and what kind of snapshot it is.
#[derive(Debug, Clone, Copy)]
struct Origin<'a> {
    commit_user: &'a str,
    /// `APPEND`, `OVERWRITE` (a round that replaces buckets) or `COMPACT`.
    commit_kind: &'a str,
}

/// A tiering round's snapshot.
const TIERING: Origin<'static> = Origin {
    commit_user: FLUSS_COMMIT_USER,
    commit_kind: "APPEND",
};

/// A tiering round that replaces buckets: Paimon's kind for a snapshot that deletes the files
/// it overwrites (as `INSERT OVERWRITE` commits), which streaming readers skip unless they set
/// `streaming-read-overwrite`.
const TIERING_REPLACE: Origin<'static> = Origin {
    commit_user: FLUSS_COMMIT_USER,
    commit_kind: "OVERWRITE",
};

/// Commits rounds of one table.
pub struct PaimonCommitter<S: Storage> {
    storage: S,
    config: Vec<(String, String)>,
    manifest_files: ManifestFiles,
}

struct Prepared {
    schema: TableSchema,
    message: CommitMessage,
    delta_metas: Vec<ManifestFileMeta>,
    delta_list: (String, i64),
    /// The changelog manifests and their list, when the round has changelog files.
    changelog: Option<(Vec<ManifestFileMeta>, (String, i64))>,
}

impl<S: Storage> PaimonCommitter<S> {
    /// A committer over the table's storage; `config` is the plugin configuration.
    pub fn new(storage: S, config: Vec<(String, String)>) -> Self {
        PaimonCommitter {
            storage,
            config,
            manifest_files: ManifestFiles::default(),
        }
    }

    fn schema(&self) -> Result<TableSchema> {
        load_latest_schema(&self.storage)?
            .ok_or_else(|| Error::not_found("the Paimon table has no schema"))
    }

    fn manifest_settings(&self, schema: &TableSchema) -> Result<(u64, usize)> {
        let target = match schema.option("manifest.target-file-size") {
            Some(v) => config::parse_size(v)?,
            None => DEFAULT_MANIFEST_TARGET_SIZE,
        };
        let min_count = match config::get(&self.config, "manifest.merge-min-count")
            .or_else(|| schema.option("manifest.merge-min-count"))
        {
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| Error::invalid_input(format!("manifest.merge-min-count={v:?}")))?,
            None => DEFAULT_MANIFEST_MERGE_MIN_COUNT,
        };
        Ok((target.max(1), usize::max(min_count, 1)))
    }

    /// Writes `entries` into manifests and a manifest list.
    fn write_manifest_list_of(
        &mut self,
        schema: &TableSchema,
        entries: &[ManifestEntry],
    ) -> Result<(Vec<ManifestFileMeta>, (String, i64))> {
        let (target, _) = self.manifest_settings(schema)?;
        let metas = write_manifests(
            &self.storage,
            &mut self.manifest_files,
            entries,
            schema.id,
            &schema.partition_types()?,
            target,
        )?;
        let list = write_manifest_list(&self.storage, &mut self.manifest_files, &metas)?;
        Ok((metas, list))
    }

    fn prepare(&mut self, committable: &[u8]) -> Result<Prepared> {
        let schema = self.schema()?;
        self.manifest_files.codec = manifest_codec(&self.config, &schema)?;
        let message = CommitMessage::decode(committable)?;
        let (delta_metas, delta_list) =
            self.write_manifest_list_of(&schema, &message.data_files)?;
        let changelog = if message.changelog_files.is_empty() {
            None
        } else {
            Some(self.write_manifest_list_of(&schema, &message.changelog_files)?)
        };
        Ok(Prepared {
            schema,
            message,
            delta_metas,
            delta_list,
            changelog,
        })
    }

    /// The manifests and manifest lists `prepare` wrote, registered with the commit kit so
    /// that they go only if the commit provably did not publish them.
    fn prepared_files<'s>(storage: &'s dyn Storage, p: &Prepared) -> Written<'s> {
        let mut written = Written::new(storage);
        let changelog = p.changelog.iter().flat_map(|(metas, list)| {
            metas
                .iter()
                .map(|m| &m.file_name)
                .chain(std::iter::once(&list.0))
        });
        for name in p
            .delta_metas
            .iter()
            .map(|m| &m.file_name)
            .chain(std::iter::once(&p.delta_list.0))
            .chain(changelog)
        {
            written.add(manifest_path(name));
        }
        written
    }

    /// The commit retry policy: `commit.max-retries` of the plugin configuration, else of the
    /// table, else Paimon's default (10).
    fn retry_policy(&self, schema: &TableSchema) -> Result<RetryPolicy> {
        RetryPolicy::from_options(
            [
                config::get(&self.config, "commit.max-retries"),
                schema.option("commit.max-retries"),
            ],
            "commit.max-retries",
            DEFAULT_COMMIT_RETRIES,
        )
    }

    /// Publishes the committable as a new snapshot carrying `properties` (even when empty:
    /// Fluss offsets must persist).
    pub fn commit(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
    ) -> Result<CommitResult> {
        self.commit_round(committable, properties, tiered_base, &[])
    }

    /// Whether this plugin can replace the buckets of the table: a primary-key table with a
    /// fixed bucket count, which it writes (compaction and bucket-unaware tables have no
    /// bucket a KV snapshot rebuilds).
    pub fn check_replace(&self) -> Result<()> {
        let schema = self.schema()?;
        check_supported(&schema, None)?;
        if schema.primary_keys.is_empty() {
            return Err(Error::unsupported(
                "only a primary-key Paimon table's buckets are replaced",
            ));
        }
        match BucketMode::of(&schema)? {
            BucketMode::Fixed(_) => Ok(()),
            BucketMode::Unaware => Err(Error::unsupported(
                "a bucket-unaware Paimon table has no bucket to replace",
            )),
        }
    }

    /// As [`commit`](Self::commit), but as an `OVERWRITE` snapshot in which each bucket of
    /// `replace` holds only the committable's files: every attempt deletes the bucket's live
    /// files in the base it publishes on (the SDK's [`replace`](fluss_lake_guest_sdk::replace)
    /// rules).
    pub fn commit_replacing(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
        replace: &ReplaceSet,
    ) -> Result<CommitResult> {
        self.check_replace()?;
        let schema = self.schema()?;
        let mode = BucketMode::of(&schema)?;
        let keys = replace
            .buckets()
            .iter()
            .map(|b| {
                let partition = Partition::from_fluss_name(&schema, b.partition_name.as_deref())?;
                Ok((partition.row, mode.place(b.bucket, b.num_buckets)?.0))
            })
            .collect::<Result<Vec<BucketKey>>>()?;
        self.commit_round(committable, properties, tiered_base, &keys)
    }

    /// A tiering round's commit; an `OVERWRITE` of `replace` when it names buckets.
    fn commit_round(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
        replace: &[BucketKey],
    ) -> Result<CommitResult> {
        let prepared = self.prepare(committable)?;
        let properties: BTreeMap<String, String> = properties.iter().cloned().collect();
        let origin = if replace.is_empty() {
            TIERING
        } else {
            TIERING_REPLACE
        };
        let (snapshot, manifests, attempts) = self.publish(
            &prepared,
            &properties,
            origin,
            Guard::TieredBase(tiered_base),
            &[],
            replace,
        )?;
        fluss_lake_guest_sdk::info!(
            "committed Paimon snapshot {} ({} data and {} changelog files, {} rows{}) \
             after {attempts} attempt(s)",
            snapshot.id,
            prepared.message.data_files.len(),
            prepared.message.changelog_files.len(),
            snapshot.delta_record_count.unwrap_or(0),
            if replace.is_empty() {
                String::new()
            } else {
                format!(", replacing {} bucket(s)", replace.len())
            },
        );
        let file_size = match total_file_size(&self.storage, &manifests) {
            Ok(s) => Some(s),
            Err(e) => {
                fluss_lake_guest_sdk::warn!("cannot compute the table size: {e}");
                None
            }
        };
        Ok(CommitResult {
            snapshot_id: snapshot.id,
            readable: ReadableSnapshot::Committed,
            earliest_snapshot_to_keep: None,
            stats: TieringStats {
                file_size,
                record_count: snapshot.total_record_count,
            },
        })
    }

    /// Publishes a compaction as a `COMPACT` snapshot of `commit_user` without properties
    /// (Paimon `FileStoreCommitImpl` for a `CompactIncrement`): `message.data_files` holds a
    /// DELETE entry for every file replaced and an ADD entry for every file replacing them.
    /// Before each attempt `still_applies` checks the compaction against the snapshot it
    /// would follow (another writer may have compacted the same files); its error ends the
    /// commit. The commit kit decides retries and the cleanup of the manifests and of
    /// `data_files`, the compaction's new data files.
    pub fn commit_compaction(
        &mut self,
        message: &CommitMessage,
        data_files: &[String],
        commit_user: &str,
        still_applies: &mut dyn FnMut(&dyn Storage, &Snapshot) -> Result<()>,
    ) -> Result<Snapshot> {
        if commit_user == FLUSS_COMMIT_USER {
            return Err(Error::internal(format!(
                "compaction must not commit as {FLUSS_COMMIT_USER}"
            )));
        }
        // The compaction's new data files are the commit kit's from here on: deleted when the
        // commit provably did not publish them (it fails before its first attempt, a refused
        // check, too many lost races), kept when it did or cannot tell.
        let prepared = match self.prepare(&message.encode()?) {
            Ok(p) => p,
            Err(e) => {
                let mut data = Written::new(&self.storage);
                for path in data_files {
                    data.add(path.clone());
                }
                data.discard();
                return Err(e);
            }
        };
        let origin = Origin {
            commit_user,
            commit_kind: "COMPACT",
        };
        let (snapshot, _, attempts) = self.publish(
            &prepared,
            &BTreeMap::new(),
            origin,
            Guard::StillApplies(still_applies),
            data_files,
            &[],
        )?;
        fluss_lake_guest_sdk::info!(
            "committed Paimon compaction snapshot {} ({} file entries) after {attempts} \
             attempt(s)",
            snapshot.id,
            message.data_files.len(),
        );
        Ok(snapshot)
    }

    /// Publishes `prepared` through the commit kit; the snapshot, its manifests and the
    /// attempts it took.
    fn publish<'a>(
        &'a mut self,
        prepared: &'a Prepared,
        properties: &'a BTreeMap<String, String>,
        origin: Origin<'a>,
        guard: Guard<'a>,
        data_files: &[String],
        replace: &'a [BucketKey],
    ) -> Result<(Snapshot, Vec<ManifestFileMeta>, u32)> {
        let policy = self.retry_policy(&prepared.schema)?;
        let (target, min_count) = self.manifest_settings(&prepared.schema)?;
        let storage: &dyn Storage = &self.storage;
        let mut attempt = SnapshotAttempt {
            manifest_files: &mut self.manifest_files,
            prepared,
            properties,
            origin,
            guard,
            replace,
            target,
            min_count,
        };
        let what = format!("Paimon {} commit", origin.commit_kind);
        let mut files = Self::prepared_files(storage, prepared);
        for path in data_files {
            files.add(path.clone());
        }
        let done = commit::commit(storage, policy, &what, files, &mut attempt)?;
        let (snapshot, manifests) = done.output;
        Ok((snapshot, manifests, done.attempts))
    }

    /// Best-effort deletion of the data and changelog files of a committable that will not be
    /// committed.
    pub fn abort(&self, committable: &[u8]) -> Result<()> {
        let message = CommitMessage::decode(committable)?;
        let schema = self.schema()?;
        let mut failed = 0;
        let mut seen = HashSet::new();
        for e in message.all_files().filter(|e| e.kind == FileKind::Add) {
            let partition = Partition::from_row(&schema, &e.partition)?;
            let path = format!("{}/{}", bucket_dir(&partition, e.bucket), e.file.file_name);
            if seen.insert(path.clone())
                && let Err(err) = self.storage.delete(&path)
            {
                fluss_lake_guest_sdk::warn!("abort: cannot delete {path}: {err}");
                failed += 1;
            }
        }
        if failed > 0 {
            return Err(Error::io(format!(
                "abort could not delete {failed} data file(s)"
            )));
        }
        Ok(())
    }

    /// The newest snapshot committed by Fluss (`__fluss_lake_tiering`) if it is newer than
    /// `latest_fluss_snapshot_id` (Fluss `getMissingLakeSnapshot`).
    pub fn get_missing_lake_snapshot(
        &self,
        latest_fluss_snapshot_id: Option<i64>,
    ) -> Result<Option<CommittedSnapshot>> {
        missing_tiering_snapshot(&self.storage, latest_fluss_snapshot_id)
    }
}

/// Paimon's default `commit.max-retries`.
const DEFAULT_COMMIT_RETRIES: u32 = 10;

/// What a commit must still hold on the snapshot it would follow; checked by the commit kit
/// after reading that snapshot, and final when it fails.
enum Guard<'a> {
    /// A tiering round: no snapshot committed by tiering after the one it planned from.
    TieredBase(Option<i64>),
    /// A compaction: its inputs are still live on the head snapshot.
    StillApplies(&'a mut dyn FnMut(&dyn Storage, &Snapshot) -> Result<()>),
}

/// One attempt of a Paimon commit (`FileStoreCommitImpl.tryCommitOnce`): the base snapshot's
/// manifests (merged when there are too many) as the new base manifest list, the prepared
/// delta and changelog lists, and the next `snapshot-<id>`.
struct SnapshotAttempt<'a> {
    manifest_files: &'a mut ManifestFiles,
    prepared: &'a Prepared,
    properties: &'a BTreeMap<String, String>,
    origin: Origin<'a>,
    guard: Guard<'a>,
    /// Buckets whose live files in the attempt's base this snapshot deletes.
    replace: &'a [BucketKey],
    target: u64,
    min_count: usize,
}

impl Attempt for SnapshotAttempt<'_> {
    type Base = Option<i64>;
    type Output = (Snapshot, Vec<ManifestFileMeta>);

    fn read_base(&mut self, storage: &dyn Storage) -> Result<Option<i64>> {
        latest_snapshot_id(storage)
    }

    fn check(&mut self, storage: &dyn Storage, base: &Option<i64>) -> Result<()> {
        match &mut self.guard {
            Guard::TieredBase(tiered_base) => commit::refuse_overlap(
                *tiered_base,
                missing_tiering_snapshot(storage, *tiered_base)?,
            ),
            Guard::StillApplies(still_applies) => {
                let Some(id) = *base else {
                    return Err(Error::conflict("the table lost its snapshots"));
                };
                let head = read_snapshot(storage, id)?.ok_or_else(|| {
                    Error::conflict(format!("snapshot {id} disappeared while committing"))
                })?;
                still_applies(storage, &head)
            }
        }
    }

    fn build(
        &mut self,
        storage: &dyn Storage,
        base: &Option<i64>,
        written: &mut Written<'_>,
    ) -> Result<Plan<Self::Output>> {
        let p = self.prepared;
        let latest = match base {
            None => None,
            Some(id) => match read_snapshot(storage, *id)? {
                Some(s) => Some(s),
                None => return Ok(Plan::BaseMoved(format!("snapshot {id} disappeared"))),
            },
        };
        let mut base_manifests = Vec::new();
        if let Some(prev) = &latest {
            base_manifests.extend(read_manifest_list(storage, &prev.base_manifest_list)?);
            base_manifests.extend(read_manifest_list(storage, &prev.delta_manifest_list)?);
        }
        let partition_types = p.schema.partition_types()?;
        let (merged, merged_files) = merge_manifests(
            storage,
            self.manifest_files,
            base_manifests,
            p.schema.id,
            &partition_types,
            self.target,
            self.min_count,
        )?;
        for name in &merged_files {
            written.add(manifest_path(name));
        }
        let base_list = write_manifest_list(storage, self.manifest_files, &merged)?;
        written.add(manifest_path(&base_list.0));
        // The replaced buckets' files of this base (never of an earlier attempt's: a
        // compaction published since would survive) go first in the delta, as DELETE entries.
        let replaced = match &latest {
            Some(prev) if !self.replace.is_empty() => {
                replaced_entries(storage, prev, self.replace)?
            }
            _ => Vec::new(),
        };
        let (mut delta_metas, delta_list) = if replaced.is_empty() {
            (p.delta_metas.clone(), p.delta_list.clone())
        } else {
            let mut metas = write_manifests(
                storage,
                self.manifest_files,
                &replaced,
                p.schema.id,
                &partition_types,
                self.target,
            )?;
            for m in &metas {
                written.add(manifest_path(&m.file_name));
            }
            metas.extend(p.delta_metas.iter().cloned());
            let list = write_manifest_list(storage, self.manifest_files, &metas)?;
            written.add(manifest_path(&list.0));
            (metas, list)
        };
        let data: Vec<&ManifestEntry> = replaced.iter().chain(&p.message.data_files).collect();
        let added: i64 = data
            .iter()
            .filter(|e| e.kind == FileKind::Add)
            .map(|e| e.file.row_count)
            .sum();
        let deleted: i64 = data
            .iter()
            .filter(|e| e.kind == FileKind::Delete)
            .map(|e| e.file.row_count)
            .sum();
        let delta_records = added - deleted;
        let previous_total = match &latest {
            None => 0,
            Some(prev) => match prev.total_record_count {
                Some(t) => t,
                None => {
                    let mut total = 0;
                    for m in &merged {
                        for e in read_manifest(storage, &m.file_name)? {
                            total += if e.kind == FileKind::Add {
                                e.file.row_count
                            } else {
                                -e.file.row_count
                            };
                        }
                    }
                    total
                }
            },
        };
        // The base manifest list's name is unique to this attempt, so the snapshot's bytes are
        // too: the commit kit recognises it as ours after a lost acknowledgement.
        let snapshot = Snapshot {
            version: Some(SNAPSHOT_VERSION),
            id: latest.as_ref().map_or(1, |s| s.id + 1),
            schema_id: p.schema.id,
            base_manifest_list: base_list.0.clone(),
            base_manifest_list_size: Some(base_list.1),
            delta_manifest_list: delta_list.0.clone(),
            delta_manifest_list_size: Some(delta_list.1),
            changelog_manifest_list: p.changelog.as_ref().map(|(_, l)| l.0.clone()),
            changelog_manifest_list_size: p.changelog.as_ref().map(|(_, l)| l.1),
            index_manifest: latest.as_ref().and_then(|s| s.index_manifest.clone()),
            commit_user: self.origin.commit_user.to_string(),
            commit_identifier: BATCH_COMMIT_IDENTIFIER,
            commit_kind: self.origin.commit_kind.to_string(),
            time_millis: clock::now_millis(),
            log_offsets: Some(
                latest
                    .as_ref()
                    .and_then(|s| s.log_offsets.clone())
                    .unwrap_or_default(),
            ),
            total_record_count: Some(previous_total + delta_records),
            delta_record_count: Some(delta_records),
            changelog_record_count: Some(
                p.message
                    .changelog_files
                    .iter()
                    .map(|e| e.file.row_count)
                    .sum(),
            ),
            watermark: latest.as_ref().and_then(|s| s.watermark),
            statistics: None,
            properties: if self.properties.is_empty() {
                None
            } else {
                Some(self.properties.clone())
            },
            next_row_id: Some(latest.as_ref().and_then(|s| s.next_row_id).unwrap_or(0)),
        };
        let mut manifests = merged;
        manifests.append(&mut delta_metas);
        if catalog_keeps_snapshots() {
            let version = String::from_utf8(snapshot.to_json()?)
                .map_err(|e| Error::internal(format!("a snapshot's JSON is not UTF-8: {e}")))?;
            let changed: Vec<ManifestEntry> = data.into_iter().cloned().collect();
            let statistics = partition_statistics(&p.schema, &changed)?;
            let (id, base_list) = (snapshot.id, snapshot.base_manifest_list.clone());
            return Ok(Plan::Version(VersionProposal {
                version,
                statistics,
                // The base manifest list is unique to the attempt: a snapshot naming it is ours.
                recognise: Box::new(move |storage: &dyn Storage| {
                    committed_by_catalog(storage, id, &base_list)
                }),
                unreferenced: Vec::new(),
                output: (snapshot, manifests),
            }));
        }
        Ok(Plan::Publish(Proposal {
            path: snapshot_path(snapshot.id),
            bytes: snapshot.to_json()?,
            unreferenced: Vec::new(),
            output: (snapshot, manifests),
        }))
    }

    fn published(&mut self, storage: &dyn Storage, output: &Self::Output) {
        // A catalog that keeps the snapshots writes the hints itself.
        if !catalog_keeps_snapshots() {
            update_hints(storage, output.0.id);
        }
    }
}

/// Whether the catalog holds snapshot `id` naming `base_list` (unique to the attempt that built
/// it), as Java's `FileStoreCommitImpl` tells a retried commit that landed: only when the
/// catalog's latest snapshot is `id` or later, and the snapshot `id` (the catalog's own answer
/// when it is the latest, else its file) names that list.
fn committed_by_catalog(storage: &dyn Storage, id: i64, base_list: &str) -> Result<bool> {
    let Some(latest) = fluss_lake_guest_sdk::table_catalog::current().latest_version()? else {
        return Ok(false);
    };
    let latest = Snapshot::from_json(latest.as_bytes()).context("the catalog's latest snapshot")?;
    if latest.id < id {
        return Ok(false);
    }
    if latest.id == id {
        return Ok(latest.base_manifest_list == base_list);
    }
    Ok(read_snapshot(storage, id)?.is_some_and(|s| s.base_manifest_list == base_list))
}

/// What a commit changes in each partition, as Paimon's `PartitionStatistics` JSON array
/// (`PartitionEntry.toPartitionStatistics`): the partition's values by key (`spec`), and the
/// net records, bytes and files its data files add, with the newest file's creation time.
fn partition_statistics(schema: &TableSchema, files: &[ManifestEntry]) -> Result<String> {
    #[derive(Default)]
    struct Stats {
        records: i64,
        bytes: i64,
        files: i64,
        last_creation: i64,
    }
    let mut by_partition: BTreeMap<&[u8], Stats> = BTreeMap::new();
    for e in files {
        let sign = if e.kind == FileKind::Add { 1 } else { -1 };
        let s = by_partition.entry(&e.partition).or_default();
        s.records += sign * e.file.row_count;
        s.bytes += sign * e.file.file_size;
        s.files += sign;
        s.last_creation = s.last_creation.max(e.file.creation_time.unwrap_or(0));
    }
    let mut out = Vec::with_capacity(by_partition.len());
    for (row, s) in by_partition {
        let spec: serde_json::Map<String, serde_json::Value> = Partition::spec(schema, row)?
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        out.push(serde_json::json!({
            "spec": spec,
            "recordCount": s.records,
            "fileSizeInBytes": s.bytes,
            "fileCount": s.files,
            "lastFileCreationTime": s.last_creation,
        }));
    }
    serde_json::to_string(&out).map_err(|e| Error::internal(format!("partition statistics: {e}")))
}

/// The newest snapshot committed by Fluss (`__fluss_lake_tiering`) if it is newer than
/// `latest_fluss_snapshot_id` (Fluss `getMissingLakeSnapshot`).
fn missing_tiering_snapshot(
    storage: &dyn Storage,
    latest_fluss_snapshot_id: Option<i64>,
) -> Result<Option<CommittedSnapshot>> {
    let Some(latest) = latest_snapshot_id(storage)? else {
        return Ok(None);
    };
    let earliest = earliest_snapshot_id(storage)?.unwrap_or(1);
    let floor = latest_fluss_snapshot_id.map_or(earliest, |f| earliest.max(f + 1));
    let mut id = latest;
    while id >= floor {
        let Some(s) = read_snapshot(storage, id)? else {
            break;
        };
        if s.commit_user == FLUSS_COMMIT_USER {
            let properties = s.properties.ok_or_else(|| {
                Error::corrupt(format!(
                    "Paimon snapshot {id} committed by Fluss has no properties"
                ))
            })?;
            return Ok(Some(CommittedSnapshot {
                snapshot_id: id,
                properties: properties.into_iter().collect(),
            }));
        }
        id -= 1;
    }
    Ok(None)
}

/// The SDK's committer interface (the WIT adapter drives it).
impl<S: Storage> FormatCommitter<S> for PaimonCommitter<S> {
    fn open(context: CommitterContext, storage: S) -> Result<Self> {
        Ok(PaimonCommitter::new(storage, context.config))
    }
    fn to_committable(&self, write_results: &[Vec<u8>]) -> Result<Vec<u8>> {
        to_committable(write_results)
    }
    fn commit(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
    ) -> Result<CommitResult> {
        PaimonCommitter::commit(self, committable, properties, tiered_base)
    }
    fn abort(&self, committable: &[u8]) -> Result<()> {
        PaimonCommitter::abort(self, committable)
    }
    fn get_missing_lake_snapshot(&self, latest: Option<i64>) -> Result<Option<CommittedSnapshot>> {
        PaimonCommitter::get_missing_lake_snapshot(self, latest)
    }
    fn check_replace(&self) -> Result<()> {
        PaimonCommitter::check_replace(self)
    }
    fn commit_replacing(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
        replace: &ReplaceSet,
    ) -> Result<CommitResult> {
        PaimonCommitter::commit_replacing(self, committable, properties, tiered_base, replace)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use fluss_lake_guest_sdk::ipc::make_row_batch;
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{RacingStorage, log_table, tiered_base, writer_context};
    use fluss_lake_guest_sdk::wit::TableInfo;

    use super::*;
    use crate::catalog::create_table_if_missing;
    use crate::manifest::read_manifest;
    use crate::writer::PaimonWriter;
    use fluss_lake_guest_sdk::ErrorKind;

    fn table() -> TableInfo {
        log_table(
            "db",
            "t",
            &[("id", "INT", false), ("name", "STRING", true)],
            &["id"],
            2,
            &[],
        )
    }

    fn write_round(
        storage: &MemoryStorage,
        table: &TableInfo,
        bucket: i32,
        ids: &[i32],
        first_offset: i64,
    ) -> Vec<u8> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(ids.to_vec())),
                Arc::new(StringArray::from(
                    ids.iter()
                        .map(|i| Some(format!("n{i}")))
                        .collect::<Vec<_>>(),
                )),
            ],
        )
        .unwrap();
        let mut w = PaimonWriter::open(&writer_context(table, bucket, None, &[]), storage).unwrap();
        w.write(make_row_batch(&batch, first_offset, 1000).unwrap())
            .unwrap();
        w.complete().unwrap().payload
    }

    fn props(round: i32) -> Vec<(String, String)> {
        vec![(
            "fluss-offsets".to_string(),
            format!("/offsets/{round}.offsets"),
        )]
    }

    #[test]
    fn empty_committable_still_commits_a_snapshot() {
        let storage = MemoryStorage::new();
        let t = table();
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let mut c = PaimonCommitter::new(&storage, vec![]);
        let r1 = write_round(&storage, &t, 0, &[1, 2, 3], 0);
        let res = c
            .commit(&to_committable(&[r1]).unwrap(), &props(1), None)
            .unwrap();
        assert_eq!(res.snapshot_id, 1);
        assert_eq!(res.stats.record_count, Some(3));
        let size = res.stats.file_size.unwrap();
        assert!(size > 0);

        let res = c
            .commit(&to_committable(&[]).unwrap(), &props(2), Some(1))
            .unwrap();
        assert_eq!(res.snapshot_id, 2);
        assert_eq!(
            res.stats,
            TieringStats {
                file_size: Some(size),
                record_count: Some(3)
            }
        );
        let s = read_snapshot(&storage, 2).unwrap().unwrap();
        assert_eq!(s.delta_record_count, Some(0));
        assert_eq!(s.total_record_count, Some(3));
        assert_eq!(s.properties.unwrap()["fluss-offsets"], "/offsets/2.offsets");
        assert!(
            read_manifest_list(&storage, &s.delta_manifest_list)
                .unwrap()
                .is_empty()
        );

        let missing = c.get_missing_lake_snapshot(None).unwrap().unwrap();
        assert_eq!(missing.snapshot_id, 2);
        assert_eq!(c.get_missing_lake_snapshot(Some(2)).unwrap(), None);
        assert_eq!(
            c.get_missing_lake_snapshot(Some(1))
                .unwrap()
                .unwrap()
                .snapshot_id,
            2
        );
    }

    /// Another writer (here a commit rewritten to a compaction job's commit user) takes
    /// snapshot 1 just before this commit puts it.
    fn racing_commit<'a>(
        storage: &'a MemoryStorage,
        theirs: Vec<u8>,
        commit_user: &'static str,
    ) -> RacingStorage<'a> {
        RacingStorage::new(
            storage,
            |p| p == crate::snapshot::snapshot_path(1),
            move || {
                let mut other = PaimonCommitter::new(storage, vec![]);
                other.commit(&theirs, &props(0), None).unwrap();
                let path = crate::snapshot::snapshot_path(1);
                let body = String::from_utf8(storage.get(&path).unwrap()).unwrap();
                let body = body.replace(FLUSS_COMMIT_USER, commit_user);
                storage.put(&path, body.as_bytes()).unwrap();
            },
        )
    }

    #[test]
    fn a_race_lost_to_another_tiering_round_is_not_retried() {
        let storage = MemoryStorage::new();
        let t = table();
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let ours = to_committable(&[write_round(&storage, &t, 0, &[1, 2], 0)]).unwrap();
        let theirs = to_committable(&[write_round(&storage, &t, 1, &[3, 4, 5], 0)]).unwrap();
        let racing = racing_commit(&storage, theirs, FLUSS_COMMIT_USER);
        let mut c = PaimonCommitter::new(&racing, vec![]);
        let e = c.commit(&ours, &props(1), None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        assert!(e.to_string().contains("another tiering round"), "{e}");
        assert_eq!(latest_snapshot_id(&storage).unwrap(), Some(1));
        // A round that planned from a snapshot older than the newest tiering one cannot
        // commit either, race or not.
        let later = to_committable(&[write_round(&storage, &t, 0, &[6], 2)]).unwrap();
        let e = PaimonCommitter::new(&storage, vec![])
            .commit(&later, &props(2), None)
            .unwrap_err();
        assert!(e.to_string().contains("another tiering round"), "{e}");
    }

    #[test]
    fn retries_when_another_writer_wins_the_snapshot_id() {
        let storage = MemoryStorage::new();
        let t = table();
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let ours = write_round(&storage, &t, 0, &[1, 2], 0);
        let theirs = write_round(&storage, &t, 1, &[3, 4, 5], 0);
        let racing = racing_commit(&storage, theirs, "paimon-compaction");
        let mut c = PaimonCommitter::new(&racing, vec![]);
        let res = c.commit(&ours, &props(1), None).unwrap();
        assert_eq!(res.snapshot_id, 2);
        assert_eq!(res.stats.record_count, Some(5));
        let s2 = read_snapshot(&storage, 2).unwrap().unwrap();
        assert_eq!(s2.delta_record_count, Some(2));
        let base = read_manifest_list(&storage, &s2.base_manifest_list).unwrap();
        let base_files: usize = base
            .iter()
            .map(|m| read_manifest(&storage, &m.file_name).unwrap().len())
            .sum();
        assert_eq!(
            base_files, 1,
            "the competitor's file is in the base of the retried commit"
        );
        // The losing attempt's base manifest list was cleaned up: only lists referenced remain.
        let lists = storage
            .list("manifest")
            .unwrap()
            .into_iter()
            .filter(|m| m.path.contains("manifest-list"))
            .count();
        assert_eq!(lists, 4);
    }

    /// Every manifest list, manifest and data file snapshot `id` references exists; its
    /// live rows.
    fn readable_rows(storage: &dyn Storage, id: i64) -> i64 {
        let s = read_snapshot(storage, id).unwrap().unwrap();
        let schema = load_latest_schema(storage).unwrap().unwrap();
        let mut rows = 0;
        for list in [&s.base_manifest_list, &s.delta_manifest_list] {
            for m in read_manifest_list(storage, list).unwrap() {
                for e in read_manifest(storage, &m.file_name).unwrap() {
                    let partition = Partition::from_row(&schema, &e.partition).unwrap();
                    let path = format!("{}/{}", bucket_dir(&partition, e.bucket), e.file.file_name);
                    assert!(
                        storage.head(&path).unwrap().is_some(),
                        "{path} of snapshot {id}"
                    );
                    rows += if e.kind == FileKind::Add {
                        e.file.row_count
                    } else {
                        -e.file.row_count
                    };
                }
            }
        }
        rows
    }

    /// The store applies the put of `snapshot-2` but its answer is lost (a dropped connection,
    /// or "already exists" to the store's own retry): the commit is recognised as published,
    /// nothing it references is deleted, and the snapshot is the one Fluss registers.
    #[test]
    fn a_lost_acknowledgement_of_the_snapshot_is_recognised_as_ours() {
        use fluss_lake_guest_sdk::testing::{LostAck, LostAckStorage};
        for how in [LostAck::Io, LostAck::AlreadyExists] {
            let storage = MemoryStorage::new();
            let t = table();
            create_table_if_missing(&storage, &t, &[]).unwrap();
            let r1 = to_committable(&[write_round(&storage, &t, 0, &[1, 2, 3], 0)]).unwrap();
            PaimonCommitter::new(&storage, vec![])
                .commit(&r1, &props(1), None)
                .unwrap();
            let lossy =
                LostAckStorage::new(&storage, |p| p == crate::snapshot::snapshot_path(2), how);
            let r2 = to_committable(&[write_round(&storage, &t, 1, &[4, 5], 0)]).unwrap();
            let res = PaimonCommitter::new(&lossy, vec![])
                .commit(&r2, &props(2), Some(1))
                .unwrap();
            assert!(lossy.lost().is_some());
            assert_eq!(res.snapshot_id, 2, "{how:?}");
            assert_eq!(readable_rows(&storage, 2), 5, "{how:?}");
            assert_eq!(latest_snapshot_id(&storage).unwrap(), Some(2));
            let missing = PaimonCommitter::new(&storage, vec![])
                .get_missing_lake_snapshot(Some(1))
                .unwrap()
                .unwrap();
            assert_eq!(missing.snapshot_id, 2);
        }
    }

    /// When neither the put nor reading it back answers, the outcome is unknown: the commit
    /// fails and keeps every file it wrote.
    #[test]
    fn an_unknown_outcome_keeps_the_commit_files() {
        use fluss_lake_guest_sdk::testing::{LostAck, LostAckStorage};
        let storage = MemoryStorage::new();
        let t = table();
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let lossy = LostAckStorage::new(
            &storage,
            |p| p == crate::snapshot::snapshot_path(1),
            LostAck::Unreadable,
        );
        let r1 = to_committable(&[write_round(&storage, &t, 0, &[1, 2, 3], 0)]).unwrap();
        let e = PaimonCommitter::new(&lossy, vec![])
            .commit(&r1, &props(1), None)
            .unwrap_err();
        assert!(
            e.message()
                .contains(fluss_lake_guest_sdk::commit::UNKNOWN_OUTCOME),
            "{e}"
        );
        let manifests = storage.list("manifest").unwrap().len();
        assert_eq!(
            manifests, 3,
            "delta manifest, delta list and base list are kept"
        );
    }

    #[test]
    fn changelog_files_get_their_own_manifest_list() {
        use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
        use fluss_lake_guest_sdk::testing::pk_table;

        let storage = MemoryStorage::new();
        let t = pk_table("db", "pk", &[("id", "INT", false)], &["id"], 1, &[]);
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        let batch =
            RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(vec![1, 2, 1]))]).unwrap();
        let kinds = [ChangeType::Insert, ChangeType::Insert, ChangeType::Delete];
        let mut w = PaimonWriter::open(&writer_context(&t, 0, None, &[]), &storage).unwrap();
        w.write(make_changelog_batch(&batch, &kinds, 0, 1).unwrap())
            .unwrap();
        let result = w.complete().unwrap();
        let message = CommitMessage::decode(&result.payload).unwrap();
        let mut c = PaimonCommitter::new(&storage, vec![]);
        let res = c
            .commit(&to_committable(&[result.payload]).unwrap(), &props(1), None)
            .unwrap();
        // The data file keeps key 1's delete, so it holds two rows.
        assert_eq!(res.stats.record_count, Some(2));
        let s = read_snapshot(&storage, 1).unwrap().unwrap();
        assert_eq!(s.changelog_record_count, Some(3));
        assert_eq!(s.total_record_count, Some(2));
        let list = s.changelog_manifest_list.unwrap();
        let metas = read_manifest_list(&storage, &list).unwrap();
        assert_eq!(
            s.changelog_manifest_list_size,
            Some(storage.get(&manifest_path(&list)).unwrap().len() as i64)
        );
        assert_eq!(metas.len(), 1);
        assert_eq!(metas[0].num_added_files, 1);
        assert_eq!(
            read_manifest(&storage, &metas[0].file_name).unwrap(),
            message.changelog_files
        );
        let delta = read_manifest_list(&storage, &s.delta_manifest_list).unwrap();
        assert_eq!(
            read_manifest(&storage, &delta[0].file_name).unwrap(),
            message.data_files
        );
        // The changelog stays out of the table's data manifests.
        let s2 = {
            c.commit(&to_committable(&[]).unwrap(), &props(2), Some(1))
                .unwrap();
            read_snapshot(&storage, 2).unwrap().unwrap()
        };
        assert_eq!(s2.changelog_manifest_list, None);
        assert_eq!(s2.changelog_record_count, Some(0));
        let base = read_manifest_list(&storage, &s2.base_manifest_list).unwrap();
        let files: Vec<_> = base
            .iter()
            .flat_map(|m| read_manifest(&storage, &m.file_name).unwrap())
            .map(|e| e.file.file_name)
            .collect();
        assert_eq!(files.len(), 1);
        assert!(files[0].starts_with("data-"), "{files:?}");

        // Abort deletes changelog files too.
        let mut w = PaimonWriter::open(&writer_context(&t, 0, None, &[]), &storage).unwrap();
        w.write(make_changelog_batch(&batch, &kinds, 3, 1).unwrap())
            .unwrap();
        let payload = w.complete().unwrap().payload;
        let m = CommitMessage::decode(&payload).unwrap();
        let changelog = format!("bucket-0/{}", m.changelog_files[0].file.file_name);
        assert!(storage.head(&changelog).unwrap().is_some());
        c.abort(&to_committable(&[payload]).unwrap()).unwrap();
        assert!(storage.head(&changelog).unwrap().is_none());
    }

    #[test]
    fn abort_deletes_the_data_files() {
        let storage = MemoryStorage::new();
        let t = table();
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let r = write_round(&storage, &t, 1, &[1, 2], 0);
        let committable = to_committable(&[r]).unwrap();
        let entries = CommitMessage::decode(&committable).unwrap().data_files;
        let path = format!("bucket-1/{}", entries[0].file.file_name);
        assert!(storage.head(&path).unwrap().is_some());
        PaimonCommitter::new(&storage, vec![])
            .abort(&committable)
            .unwrap();
        assert!(storage.head(&path).unwrap().is_none());
    }

    #[test]
    fn manifests_stay_bounded_over_many_rounds() {
        let storage = MemoryStorage::new();
        let t = table();
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let mut c = PaimonCommitter::new(&storage, vec![]);
        for round in 0..70 {
            let r = write_round(&storage, &t, round % 2, &[round], round as i64);
            c.commit(
                &to_committable(&[r]).unwrap(),
                &props(round),
                tiered_base(&c),
            )
            .unwrap();
        }
        let s = read_snapshot(&storage, 70).unwrap().unwrap();
        let base = read_manifest_list(&storage, &s.base_manifest_list).unwrap();
        assert!(
            base.len() < DEFAULT_MANIFEST_MERGE_MIN_COUNT,
            "{} base manifests",
            base.len()
        );
        let files: usize = base
            .iter()
            .map(|m| read_manifest(&storage, &m.file_name).unwrap().len())
            .sum();
        assert_eq!(files, 69);
        assert_eq!(s.total_record_count, Some(70));
    }
}
