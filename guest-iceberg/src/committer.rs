//! Commits a round: one snapshot per round, `append` for data files only, a row delta
//! (`overwrite`, or `delete` without data files) when delete files are present, as Fluss's
//! Java `IcebergLakeCommitter` does; empty rounds still commit a snapshot so the offsets
//! persist. The snapshot summary carries Iceberg's counters plus `commit-user` and the
//! properties Fluss passes (`fluss-offsets`). The parent's manifests are carried, those left
//! without a live file dropped, and merged as Java's `MergeAppend` / `RowDelta` merge them
//! ([`merge`](crate::merge)): done in the round's commit, as Fluss's Java committer does, so
//! tables stay bounded without maintenance; it reads at most the small manifests of one bin
//! once every `commit.manifest.min-count-to-merge` rounds.
//!
//! Optimistic concurrency is the SDK's commit kit's (through
//! [`commit_snapshot`](crate::producer::commit_snapshot)): the metadata version is published
//! with put-if-absent; on a lost race the round's manifests are rebuilt on the new current
//! metadata.

use std::collections::HashSet;

use fluss_lake_guest_sdk::commit::Written;
use fluss_lake_guest_sdk::layout::relative_path;
use fluss_lake_guest_sdk::plugin::FormatCommitter;
use fluss_lake_guest_sdk::replace::ReplaceSet;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{
    CommitResult, CommittedSnapshot, CommitterContext, ReadableSnapshot, TableInfo, TieringStats,
};
use fluss_lake_guest_sdk::{Error, FLUSS_COMMIT_USER, Result};

use crate::manifest::{
    DataFile, FileContent, MANIFEST_DATA, MANIFEST_DELETES, ManifestEntry, ManifestFile,
};
use crate::merge::MergePolicy;
use crate::partition::Transform;
use crate::producer::{Outcome, Planned, SnapshotAttempt, SnapshotChange, commit_snapshot};
use crate::rewrite_commit::{PartitionKey, filtered, partition_of};
use crate::schema::BUCKET_COLUMN;
use crate::summary::{Change, summary};
use crate::tables::{self, Loaded};
use crate::writer::WritePayload;

pub use crate::summary::COMMIT_USER;

/// Merges the splits' write results into one committable.
pub fn to_committable(write_results: &[Vec<u8>]) -> Result<Vec<u8>> {
    let mut all = WritePayload::default();
    for r in write_results {
        all.files.extend(WritePayload::decode(r)?.files);
    }
    all.encode()
}

pub struct IcebergCommitter<S: Storage> {
    storage: S,
    /// The Fluss table (a replaced bucket's partition tuple derives from it).
    table: TableInfo,
    /// The plugin configuration (overrides table properties, e.g. retention).
    config: Vec<(String, String)>,
}

impl<S: Storage> FormatCommitter<S> for IcebergCommitter<S> {
    fn open(context: CommitterContext, storage: S) -> Result<Self> {
        Ok(IcebergCommitter {
            storage,
            table: context.table,
            config: context.config,
        })
    }

    fn to_committable(&self, write_results: &[Vec<u8>]) -> Result<Vec<u8>> {
        to_committable(write_results)
    }

    /// Publishes the committable as a new snapshot carrying `properties`.
    fn commit(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
    ) -> Result<CommitResult> {
        self.commit_round(committable, properties, tiered_base, HashSet::new())
    }

    fn check_replace(&self) -> Result<()> {
        let loaded = self.load()?;
        let spec = loaded.metadata.default_spec()?;
        let schema = loaded.metadata.current_schema()?;
        let per_bucket = spec.fields.iter().any(|f| match f.transform {
            Transform::Bucket(_) => true,
            Transform::Identity => schema
                .field_by_id(f.source_id)
                .is_some_and(|c| c.name == BUCKET_COLUMN),
            _ => false,
        });
        if self.table.primary_keys.is_empty() || !per_bucket {
            return Err(Error::unsupported(
                "only a primary-key Iceberg table partitioned by bucket has buckets to replace",
            ));
        }
        Ok(())
    }

    /// As `commit`, as an `overwrite` snapshot in which each replaced bucket's partition holds
    /// only the committable's files: every attempt marks the partition's live data and delete
    /// files of the base it publishes on `DELETED` (the SDK's `replace` rules).
    fn commit_replacing(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
        replace: &ReplaceSet,
    ) -> Result<CommitResult> {
        self.check_replace()?;
        let loaded = self.load()?;
        let spec = loaded.metadata.default_spec()?;
        let schema = loaded.metadata.current_schema()?;
        let mut partitions = HashSet::new();
        for b in replace.buckets() {
            let mut table = self.table.clone();
            table.num_buckets = b.num_buckets;
            let tuple =
                spec.values_for_split(&schema, &table, b.partition_name.as_deref(), b.bucket)?;
            partitions.insert((spec.spec_id, tuple));
        }
        self.commit_round(committable, properties, tiered_base, partitions)
    }

    /// Deletes the round's files (nothing refers to them).
    fn abort(&self, committable: &[u8]) -> Result<()> {
        let files = WritePayload::decode(committable)?.files;
        let location = self.load()?.metadata.location()?.to_string();
        for f in files {
            match relative_path(&location, &f.file_path) {
                Ok(rel) => self.storage.delete(rel)?,
                Err(e) => fluss_lake_guest_sdk::warn!("not deleting {}: {e}", f.file_path),
            }
        }
        Ok(())
    }

    /// The newest snapshot committed by Fluss if it is newer (by sequence number: snapshot
    /// ids are random) than the one Fluss knows (Fluss `getMissingLakeSnapshot`).
    fn get_missing_lake_snapshot(
        &self,
        latest_fluss_snapshot_id: Option<i64>,
    ) -> Result<Option<CommittedSnapshot>> {
        let Some(loaded) = tables::load(&self.storage)? else {
            return Ok(None);
        };
        let snapshots = loaded.metadata.snapshots()?;
        let Some(latest) = snapshots
            .iter()
            .rev()
            .find(|s| s.summary_value(COMMIT_USER) == Some(FLUSS_COMMIT_USER))
        else {
            return Ok(None);
        };
        if let Some(known) = latest_fluss_snapshot_id {
            let known = snapshots
                .iter()
                .find(|s| s.snapshot_id == known)
                .ok_or_else(|| {
                    Error::corrupt(format!(
                        "Referenced Fluss snapshot {known} not found in Iceberg table"
                    ))
                })?;
            if latest.sequence_number <= known.sequence_number {
                return Ok(None);
            }
        }
        Ok(Some(CommittedSnapshot {
            snapshot_id: latest.snapshot_id,
            properties: latest.summary.clone(),
        }))
    }
}

impl<S: Storage> IcebergCommitter<S> {
    /// A tiering round's commit; an `overwrite` of `replace`'s partitions when it names any.
    fn commit_round(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
        replace: HashSet<PartitionKey>,
    ) -> Result<CommitResult> {
        let files = WritePayload::decode(committable)?.files;
        let mut round = Round {
            committer: self,
            files: &files,
            properties,
            tiered_base,
            replace,
            planned: None,
        };
        let outcome = commit_snapshot(
            &self.storage,
            "Iceberg tiering commit",
            Written::new(&self.storage),
            &mut round,
        )?;
        let (operation, manifests) = round.planned.unwrap_or(("append", 0));
        let snapshot = match outcome {
            Outcome::Committed(snapshot) => snapshot,
            Outcome::Nothing(never) => match never {},
        };
        fluss_lake_guest_sdk::info!(
            "committed Iceberg snapshot {} (sequence {}, {operation}: {} files, {manifests} \
             manifests)",
            snapshot.snapshot_id,
            snapshot.sequence_number,
            files.len(),
        );
        let stat = |k: &str| snapshot.summary_value(k).and_then(|v| v.parse().ok());
        Ok(CommitResult {
            snapshot_id: snapshot.snapshot_id,
            readable: ReadableSnapshot::Committed,
            earliest_snapshot_to_keep: None,
            stats: TieringStats {
                file_size: stat("total-files-size"),
                record_count: stat("total-records"),
            },
        })
    }

    fn load(&self) -> Result<Loaded> {
        tables::load(&self.storage)?
            .ok_or_else(|| Error::not_found("Iceberg table has no metadata"))
    }

    /// The new snapshot's manifest list: merged data manifests, then merged delete manifests;
    /// and the live files of `replace`'s partitions in the parent, marked `DELETED` in it.
    fn plan_manifests(
        attempt: &mut SnapshotAttempt<'_>,
        policy: &MergePolicy,
        data: &[DataFile],
        deletes: &[DataFile],
        replace: &HashSet<PartitionKey>,
    ) -> Result<(Vec<ManifestFile>, Vec<DataFile>)> {
        let spec_id = attempt.base.metadata.default_spec()?.spec_id;
        let schema = attempt.manifest_schema(spec_id)?;
        let mut lists = [Vec::new(), Vec::new()];
        for (content, group) in [(MANIFEST_DATA, data), (MANIFEST_DELETES, deletes)] {
            if group.is_empty() {
                continue;
            }
            let mut writer = attempt.manifest_writer(&schema, content)?;
            for f in group {
                writer.add(f, None)?;
            }
            let manifest = attempt.store_manifest(writer)?;
            lists[content as usize].push(manifest);
        }
        let mut removed = Vec::new();
        for parent in attempt.parent_manifests()? {
            if !parent.has_live_files() {
                continue;
            }
            let list = &mut lists[(parent.content != MANIFEST_DATA) as usize];
            if replace.is_empty() {
                list.push(parent);
                continue;
            }
            // The parent's own files of the replaced partitions: read from this attempt's
            // base, so that files a concurrent commit added are replaced too.
            if parent.partition_spec_id != spec_id {
                return Err(Error::unsupported(format!(
                    "the table holds files of partition spec {} besides the current {spec_id}: \
                     a bucket cannot be replaced",
                    parent.partition_spec_id
                )));
            }
            let entries = attempt.read_entries(&parent)?;
            let replaced = |e: &ManifestEntry| replace.contains(&partition_of(&e.file));
            let hits: Vec<DataFile> = entries
                .iter()
                .filter(|e| e.is_live() && replaced(e))
                .map(|e| e.file.clone())
                .collect();
            if hits.is_empty() {
                list.push(parent);
            } else {
                removed.extend(hits);
                let rewritten = filtered(attempt, &parent, &entries, replaced)?;
                lists[(parent.content != MANIFEST_DATA) as usize].push(rewritten);
            }
        }
        let [data_manifests, delete_manifests] = lists;
        let mut manifests = policy.on_commit(attempt, data_manifests)?;
        manifests.extend(policy.on_commit(attempt, delete_manifests)?);
        Ok((manifests, removed))
    }
}

/// A round's files committed as one snapshot: its manifests in front of the parent's, merged
/// as Java's `MergeAppend` / `RowDelta` merge them ([`MergePolicy::on_commit`]); manifests
/// left with no live file are dropped.
struct Round<'a, S: Storage> {
    committer: &'a IcebergCommitter<S>,
    files: &'a [DataFile],
    properties: &'a [(String, String)],
    tiered_base: Option<i64>,
    /// Partitions (one per replaced bucket) whose live files this snapshot removes.
    replace: HashSet<PartitionKey>,
    /// The operation and manifest count the last attempt planned, for the log.
    planned: Option<(&'static str, usize)>,
}

impl<S: Storage> SnapshotChange for Round<'_, S> {
    type Nothing = std::convert::Infallible;

    fn check(&mut self, _: &dyn Storage, base: &Loaded) -> Result<()> {
        self.committer.check_tiered_base(self.tiered_base)?;
        let spec = base.metadata.default_spec()?;
        if let Some(f) = self.files.iter().find(|f| f.spec_id != spec.spec_id) {
            return Err(Error::conflict(format!(
                "{} was written for partition spec {}, the table's is now {}",
                f.file_path, f.spec_id, spec.spec_id
            )));
        }
        Ok(())
    }

    fn plan(&mut self, attempt: &mut SnapshotAttempt<'_>) -> Result<Planned<Self::Nothing>> {
        let policy = MergePolicy::of(&self.committer.config, &attempt.base.metadata)?;
        let (data, deletes): (Vec<DataFile>, Vec<DataFile>) = self
            .files
            .iter()
            .cloned()
            .partition(|f| f.content == FileContent::Data);
        let (manifests, removed) = IcebergCommitter::<S>::plan_manifests(
            attempt,
            &policy,
            &data,
            &deletes,
            &self.replace,
        )?;
        let operation = match (data.is_empty(), deletes.is_empty()) {
            _ if !self.replace.is_empty() => "overwrite",
            (_, true) => "append",
            (false, false) => "overwrite",
            (true, false) => "delete",
        };
        self.planned = Some((operation, manifests.len()));
        let mut properties = self.properties.to_vec();
        if !self.replace.is_empty() {
            // As Java's `ReplacePartitions` marks its snapshots.
            properties.push(("replace-partitions".to_string(), "true".to_string()));
        }
        let summary = summary(
            operation,
            Change {
                added: self.files,
                removed: &removed,
            },
            attempt.parent.as_ref(),
            FLUSS_COMMIT_USER,
            &properties,
        );
        Ok(Planned::Snapshot { manifests, summary })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch, make_row_batch};
    use fluss_lake_guest_sdk::plugin::FormatWriter;
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{committer_context, pk_table, writer_context};

    use fluss_lake_guest_sdk::ErrorKind;

    use super::*;
    use crate::catalog::create_table_if_missing;
    use crate::manifest::read_manifest_list;
    use crate::writer::IcebergWriter;

    fn batch(ids: &[i32]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(ids.to_vec())),
                Arc::new(StringArray::from_iter_values(
                    ids.iter().map(|i| format!("n{i}")),
                )),
            ],
        )
        .unwrap()
    }

    #[test]
    fn deltas_commits_recovery_and_abort() {
        let storage = MemoryStorage::new();
        let t = pk_table(
            "db",
            "t",
            &[("id", "INT", false), ("name", "STRING", true)],
            &["id"],
            1,
            &[],
        );
        let config = [("warehouse", "/wh")];
        let pairs = fluss_lake_guest_sdk::testing::pairs(&config);
        assert!(create_table_if_missing(&storage, &t, &pairs).unwrap());
        let mut c = IcebergCommitter::open(committer_context(&t, &config), &storage).unwrap();

        // round 1: inserts 1..=3, then 2 updated within the round (position delete)
        let mut w = IcebergWriter::open(&writer_context(&t, 0, None, &config), &storage).unwrap();
        let kinds = [
            ChangeType::Insert,
            ChangeType::Insert,
            ChangeType::Insert,
            ChangeType::UpdateBefore,
            ChangeType::UpdateAfter,
        ];
        w.write(make_changelog_batch(&batch(&[1, 2, 3, 2, 2]), &kinds, 0, 9).unwrap())
            .unwrap();
        let r1 = w.complete().unwrap();
        assert_eq!(r1.record_count, 5);
        let files = WritePayload::decode(&r1.payload).unwrap().files;
        let contents: Vec<FileContent> = files.iter().map(|f| f.content).collect();
        assert_eq!(contents, [FileContent::Data, FileContent::PositionDeletes]);
        assert_eq!(
            files[1].referenced_data_file.as_deref(),
            Some(files[0].file_path.as_str())
        );
        let props = vec![("fluss-offsets".to_string(), "/o/1".to_string())];
        let committable = c.to_committable(&[r1.payload]).unwrap();
        let first = c.commit(&committable, &props, None).unwrap();
        assert_eq!(first.stats.record_count, Some(4));

        // round 2: delete 1 (an older row: equality delete)
        let mut w = IcebergWriter::open(&writer_context(&t, 0, None, &config), &storage).unwrap();
        w.write(make_changelog_batch(&batch(&[1]), &[ChangeType::Delete], 5, 9).unwrap())
            .unwrap();
        let r2 = w.complete().unwrap();
        let files = WritePayload::decode(&r2.payload).unwrap().files;
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].content, FileContent::EqualityDeletes);
        assert_eq!(files[0].equality_ids, Some(vec![1]));
        let props2 = vec![("fluss-offsets".to_string(), "/o/2".to_string())];
        let second = c
            .commit(
                &c.to_committable(&[r2.payload]).unwrap(),
                &props2,
                Some(first.snapshot_id),
            )
            .unwrap();

        let m = tables::load(&storage).unwrap().unwrap().metadata;
        let snaps = m.snapshots().unwrap();
        assert_eq!(snaps.len(), 2);
        assert_eq!(snaps[0].summary_value("operation"), Some("overwrite"));
        assert_eq!(snaps[1].summary_value("operation"), Some("delete"));
        assert_eq!(snaps[1].summary_value("total-equality-deletes"), Some("1"));
        assert_eq!(snaps[1].summary_value("total-position-deletes"), Some("1"));
        let list = storage
            .get(relative_path(m.location().unwrap(), &snaps[1].manifest_list).unwrap())
            .unwrap();
        assert_eq!(
            read_manifest_list(&list).unwrap().len(),
            3,
            "2 new + 1 carried"
        );

        // an empty round still commits the offsets
        let empty = c
            .commit(
                &to_committable(&[]).unwrap(),
                &props,
                Some(second.snapshot_id),
            )
            .unwrap();
        // A round planned from the first snapshot, after the second was tiered, cannot commit.
        let e = c
            .commit(
                &to_committable(&[]).unwrap(),
                &props,
                Some(first.snapshot_id),
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        assert!(e.to_string().contains("another tiering round"), "{e}");
        assert_ne!(empty.snapshot_id, second.snapshot_id);
        assert_eq!(
            c.get_missing_lake_snapshot(Some(first.snapshot_id))
                .unwrap()
                .unwrap()
                .snapshot_id,
            empty.snapshot_id
        );
        assert!(
            c.get_missing_lake_snapshot(Some(empty.snapshot_id))
                .unwrap()
                .is_none()
        );
        assert!(
            c.get_missing_lake_snapshot(Some(42)).is_err(),
            "unknown snapshot"
        );

        // abort removes the round's files
        let mut w = IcebergWriter::open(&writer_context(&t, 0, None, &config), &storage).unwrap();
        w.write(make_row_batch(&batch(&[7]), 6, 9).unwrap())
            .unwrap();
        let r = w.complete().unwrap();
        let path = WritePayload::decode(&r.payload).unwrap().files[0]
            .file_path
            .clone();
        let rel = relative_path("/wh/db/t", &path).unwrap().to_string();
        assert!(storage.head(&rel).unwrap().is_some());
        c.abort(&c.to_committable(&[r.payload]).unwrap()).unwrap();
        assert!(storage.head(&rel).unwrap().is_none());
    }
}
