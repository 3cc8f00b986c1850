//! Commits a round as one Delta version: `commitInfo` (operation `WRITE`, blind append,
//! `commit-user=__fluss_lake_tiering` and the properties Fluss passes, `fluss-offsets`
//! among them, as top-level entries, which is where `DeltaTable.history()` shows custom
//! commit metadata) followed by the round's `add` actions. Empty rounds commit too: Fluss's
//! offsets must persist. The snapshot id Fluss records is the Delta version.
//!
//! No `txn` (set-transaction) action is written: Fluss finds its last commit through the
//! commit user in `commitInfo` ([`FormatCommitter::get_missing_lake_snapshot`]), and a
//! `txn` would only become cheap to look up with checkpoints, which this plugin does not
//! write. Cumulative table statistics are not reported either: they need every live file,
//! i.e. replaying the whole log.

use fluss_lake_guest_sdk::commit::{self, Attempt, Plan, Proposal, RetryPolicy, Written};
use fluss_lake_guest_sdk::deps::serde_json::{Map, Value, json};
use fluss_lake_guest_sdk::deps::uuid;
use fluss_lake_guest_sdk::plugin::FormatCommitter;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{
    CommitResult, CommittedSnapshot, CommitterContext, ReadableSnapshot, TableInfo, TieringStats,
};
use fluss_lake_guest_sdk::{Error, FLUSS_COMMIT_USER, Result, clock};

use crate::catalog;
use crate::delta_log::{self, find_action};
use crate::partition::decode_uri_path;
use crate::writer::WritePayload;

/// `commitInfo` entry naming who committed (Fluss's Java lake committers: `commit-user`).
pub const COMMIT_USER: &str = "commit-user";
/// Retries after a lost race (delta-rs's default `max_retries` is 15).
const COMMIT_RETRIES: u32 = 15;

pub struct DeltaCommitter<S: Storage> {
    storage: S,
    table: TableInfo,
}

impl<S: Storage> DeltaCommitter<S> {
    /// Fails with `conflict` if a version in `versions` changed the protocol or the metadata
    /// (schema, partitioning, properties): files written against the older table must not
    /// be appended to it — Delta's rule for blind appends.
    fn check_no_table_change(&self, versions: std::ops::RangeInclusive<u64>) -> Result<()> {
        for v in versions {
            let actions = delta_log::read_commit(&self.storage, v)?;
            for kind in ["protocol", "metaData"] {
                if find_action(&actions, kind).is_some() {
                    return Err(Error::conflict(format!(
                        "Delta version {v} changed the table's {kind} after this round's files \
                         were written; the round must be written again"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The actions of version `version` (read at `read_version`) for `payload`.
    fn actions(
        &self,
        payload: &WritePayload,
        properties: &[(String, String)],
        read_version: u64,
    ) -> Vec<Value> {
        let rows: u64 = payload.adds.iter().map(|a| a.num_records).sum();
        let bytes: u64 = payload.adds.iter().map(|a| a.size).sum();
        let mut info = Map::new();
        for (k, v) in properties {
            info.insert(k.clone(), json!(v));
        }
        let standard = json!({
            "timestamp": clock::now_millis(),
            "operation": "WRITE",
            "operationParameters": {
                "mode": "Append",
                "partitionBy": json!(self.table.partition_keys).to_string(),
            },
            "readVersion": read_version,
            "isolationLevel": "Serializable",
            "isBlindAppend": true,
            "operationMetrics": {
                "numFiles": payload.adds.len().to_string(),
                "numOutputRows": rows.to_string(),
                "numOutputBytes": bytes.to_string(),
            },
            "engineInfo": crate::ENGINE_INFO,
            // Unique to the attempt, so the commit kit recognises its own version after a
            // lost acknowledgement.
            "txnId": uuid::Uuid::new_v4().to_string(),
            COMMIT_USER: FLUSS_COMMIT_USER,
        });
        for (k, v) in standard.as_object().expect("an object") {
            if info.insert(k.clone(), v.clone()).is_some() {
                fluss_lake_guest_sdk::warn!("commit property {k} is a commitInfo field; dropped");
            }
        }
        let mut actions = vec![json!({ "commitInfo": info })];
        actions.extend(payload.adds.iter().map(|a| json!({"add": a.to_json()})));
        actions
    }
}

/// A round's files appended as the next version, as the commit kit runs it.
struct BlindAppend<'a, S: Storage> {
    committer: &'a DeltaCommitter<S>,
    /// Versions up to this one are known not to change what the files depend on.
    checked: Option<u64>,
    payload: &'a WritePayload,
    properties: &'a [(String, String)],
    tiered_base: Option<i64>,
}

impl<S: Storage> Attempt for BlindAppend<'_, S> {
    type Base = u64;
    type Output = u64;

    fn read_base(&mut self, storage: &dyn Storage) -> Result<u64> {
        delta_log::latest(storage)?.ok_or_else(|| catalog::missing(&self.committer.table))
    }

    fn check(&mut self, _: &dyn Storage, latest: &u64) -> Result<()> {
        self.committer.check_tiered_base(self.tiered_base)?;
        if let Some(from) = self.checked {
            self.committer.check_no_table_change(from + 1..=*latest)?;
        }
        self.checked = Some(*latest);
        Ok(())
    }

    fn build(&mut self, _: &dyn Storage, latest: &u64, _: &mut Written<'_>) -> Result<Plan<u64>> {
        let version = latest + 1;
        let actions = self
            .committer
            .actions(self.payload, self.properties, *latest);
        Ok(Plan::Publish(Proposal {
            path: delta_log::commit_path(version),
            bytes: delta_log::encode_commit(&actions),
            unreferenced: Vec::new(),
            output: version,
        }))
    }
}

/// The properties of a Fluss commit as Fluss reads them back: every top-level scalar entry
/// of its `commitInfo`, as text.
fn commit_properties(info: &Value) -> Vec<(String, String)> {
    info.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match v {
            Value::String(s) => Some((k.clone(), s.clone())),
            Value::Number(n) => Some((k.clone(), n.to_string())),
            Value::Bool(b) => Some((k.clone(), b.to_string())),
            _ => None,
        })
        .collect()
}

impl<S: Storage> FormatCommitter<S> for DeltaCommitter<S> {
    fn open(context: CommitterContext, storage: S) -> Result<Self> {
        catalog::check_log_table(&context.table)?;
        Ok(DeltaCommitter {
            storage,
            table: context.table,
        })
    }

    fn to_committable(&self, write_results: &[Vec<u8>]) -> Result<Vec<u8>> {
        let payloads = write_results
            .iter()
            .map(|r| WritePayload::decode(r))
            .collect::<Result<Vec<_>>>()?;
        WritePayload::merge(payloads).encode()
    }

    /// Publishes the next version through the SDK's commit kit: a lost race re-reads the
    /// latest version, checks the winners changed nothing the files depend on, and retries on
    /// top; a lost acknowledgement is recognised by the version's bytes (its `txnId`).
    fn commit(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
    ) -> Result<CommitResult> {
        let payload = WritePayload::decode(committable)?;
        let mut append = BlindAppend {
            committer: self,
            checked: payload.read_version,
            payload: &payload,
            properties,
            tiered_base,
        };
        let storage: &dyn Storage = &self.storage;
        let version = commit::commit(
            storage,
            RetryPolicy::retries(COMMIT_RETRIES),
            "Delta tiering commit",
            Written::new(storage),
            &mut append,
        )?
        .output;
        fluss_lake_guest_sdk::info!(
            "committed Delta version {version} ({} files)",
            payload.adds.len()
        );
        Ok(CommitResult {
            snapshot_id: version as i64,
            readable: ReadableSnapshot::Committed,
            earliest_snapshot_to_keep: None,
            stats: TieringStats {
                file_size: None,
                record_count: None,
            },
        })
    }

    /// Deletes the round's data files (no commit refers to them).
    fn abort(&self, committable: &[u8]) -> Result<()> {
        for add in WritePayload::decode(committable)?.adds {
            self.storage.delete(&decode_uri_path(&add.path)?)?;
        }
        Ok(())
    }

    /// The newest version Fluss committed, if newer than the one Fluss knows (versions are
    /// scanned newest first, as Fluss's Java committers scan snapshots); versions other
    /// writers committed are skipped.
    fn get_missing_lake_snapshot(&self, latest: Option<i64>) -> Result<Option<CommittedSnapshot>> {
        for version in delta_log::versions(&self.storage)?.into_iter().rev() {
            if latest.is_some_and(|l| version as i64 <= l) {
                return Ok(None);
            }
            let actions = delta_log::read_commit(&self.storage, version)?;
            let Some(info) = find_action(&actions, "commitInfo") else {
                continue;
            };
            if info.get(COMMIT_USER).and_then(Value::as_str) == Some(FLUSS_COMMIT_USER) {
                return Ok(Some(CommittedSnapshot {
                    snapshot_id: version as i64,
                    properties: commit_properties(info),
                }));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::plugin::FormatWriter;
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{
        RacingStorage, committer_context, id_name_batch, id_name_table, pairs, writer_context,
    };
    use fluss_lake_guest_sdk::{ErrorKind, FLUSS_OFFSETS_PROPERTY, config};

    use super::*;
    use crate::catalog::create_table_if_missing;
    use crate::writer::DeltaWriter;

    fn table() -> TableInfo {
        id_name_table()
    }

    fn write(storage: &dyn Storage, t: &TableInfo, ids: &[i32]) -> Vec<u8> {
        let mut w = DeltaWriter::open(&writer_context(t, 0, None, &[]), storage).unwrap();
        w.write(id_name_batch(ids)).unwrap();
        w.complete().unwrap().payload
    }

    fn commit(storage: &dyn Storage, t: &TableInfo, results: &[Vec<u8>], round: usize) -> i64 {
        let mut c = DeltaCommitter::open(committer_context(t, &[]), storage).unwrap();
        let committable = c.to_committable(results).unwrap();
        let offsets = format!("/offsets/{round}");
        c.commit(
            &committable,
            &pairs(&[(FLUSS_OFFSETS_PROPERTY, &offsets)]),
            fluss_lake_guest_sdk::testing::tiered_base(&c),
        )
        .unwrap()
        .snapshot_id
    }

    #[test]
    fn one_version_per_round_with_fluss_properties_and_recovery() {
        let storage = MemoryStorage::new();
        let t = table();
        assert!(create_table_if_missing(&storage, &t).unwrap());
        let c = DeltaCommitter::open(committer_context(&t, &[]), &storage).unwrap();
        assert!(
            c.get_missing_lake_snapshot(None).unwrap().is_none(),
            "v0 is no Fluss commit"
        );

        let a = write(&storage, &t, &[1, 2]);
        let b = write(&storage, &t, &[3]);
        assert_eq!(commit(&storage, &t, &[a, b], 1), 1);
        assert_eq!(commit(&storage, &t, &[], 2), 2, "empty rounds commit too");

        let v1 = delta_log::read_commit(&storage, 1).unwrap();
        let info = &v1[0]["commitInfo"];
        assert_eq!(info["operation"], "WRITE");
        assert_eq!(info["commit-user"], FLUSS_COMMIT_USER);
        assert_eq!(info["fluss-offsets"], "/offsets/1");
        assert_eq!(info["readVersion"], 0);
        assert_eq!(info["operationMetrics"]["numOutputRows"], "3");
        assert_eq!(v1.len(), 3, "commitInfo and two adds");
        assert_eq!(delta_log::read_commit(&storage, 2).unwrap().len(), 1);

        let missing = c.get_missing_lake_snapshot(None).unwrap().unwrap();
        assert_eq!(missing.snapshot_id, 2);
        assert_eq!(
            config::get(&missing.properties, FLUSS_OFFSETS_PROPERTY),
            Some("/offsets/2")
        );
        assert_eq!(
            config::get(&missing.properties, COMMIT_USER),
            Some(FLUSS_COMMIT_USER)
        );
        assert_eq!(
            c.get_missing_lake_snapshot(Some(1))
                .unwrap()
                .unwrap()
                .snapshot_id,
            2
        );
        assert!(c.get_missing_lake_snapshot(Some(2)).unwrap().is_none());

        // a version another writer committed is skipped by recovery
        delta_log::publish(
            &storage,
            3,
            &[json!({"commitInfo": {"operation": "WRITE", "engineInfo": "someone"}})],
        )
        .unwrap();
        assert_eq!(
            c.get_missing_lake_snapshot(Some(1))
                .unwrap()
                .unwrap()
                .snapshot_id,
            2
        );
        assert!(c.get_missing_lake_snapshot(Some(2)).unwrap().is_none());
    }

    /// The store applies the put of version 2 but its answer is lost: the commit is
    /// recognised as published (not retried as version 3, which would tier the rows twice).
    #[test]
    fn a_lost_acknowledgement_is_recognised_as_ours() {
        use fluss_lake_guest_sdk::testing::{LostAck, LostAckStorage};
        for how in [LostAck::Io, LostAck::AlreadyExists] {
            let storage = MemoryStorage::new();
            let t = table();
            assert!(create_table_if_missing(&storage, &t).unwrap());
            let r1 = write(&storage, &t, &[1]);
            assert_eq!(commit(&storage, &t, &[r1], 1), 1);
            let lossy = LostAckStorage::new(&storage, |p| p == delta_log::commit_path(2), how);
            let r2 = write(&storage, &t, &[2, 3]);
            assert_eq!(commit(&lossy, &t, &[r2], 2), 2, "{how:?}");
            assert!(lossy.lost().is_some());
            assert_eq!(delta_log::latest(&storage).unwrap(), Some(2), "{how:?}");
        }
    }

    #[test]
    fn lost_race_retries_on_the_new_version() {
        let storage = MemoryStorage::new();
        let t = table();
        assert!(create_table_if_missing(&storage, &t).unwrap());
        let mine = write(&storage, &t, &[1, 2]);
        // Another writer (not tiering) takes version 1.
        let racing = RacingStorage::new(
            &storage,
            |p| p.starts_with(delta_log::LOG_DIR),
            || {
                let other = fluss_lake_guest_sdk::deps::serde_json::json!({
                    "commitInfo": {"operation": "OPTIMIZE", "readVersion": 0}
                });
                delta_log::publish(&storage, 1, &[other]).unwrap();
            },
        );
        assert_eq!(
            commit(&racing, &t, &[mine], 2),
            2,
            "lost the race for 1, committed on top of it"
        );
        let v2 = delta_log::read_commit(&storage, 2).unwrap();
        assert_eq!(v2[0]["commitInfo"]["readVersion"], 1);
        assert_eq!(v2[0]["commitInfo"]["fluss-offsets"], "/offsets/2");
        assert_eq!(v2.len(), 2);
    }

    #[test]
    fn a_race_lost_to_another_tiering_round_is_not_retried() {
        let storage = MemoryStorage::new();
        let t = table();
        assert!(create_table_if_missing(&storage, &t).unwrap());
        let mine = write(&storage, &t, &[1, 2]);
        let theirs = write(&storage, &t, &[3]);
        let racing = RacingStorage::new(
            &storage,
            |p| p.starts_with(delta_log::LOG_DIR),
            || assert_eq!(commit(&storage, &t, std::slice::from_ref(&theirs), 1), 1),
        );
        let mut c = DeltaCommitter::open(committer_context(&t, &[]), &racing).unwrap();
        let committable = c.to_committable(&[mine]).unwrap();
        let e = c
            .commit(
                &committable,
                &pairs(&[(FLUSS_OFFSETS_PROPERTY, "/o")]),
                None,
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        assert!(e.message().contains("another tiering round"), "{e}");
        assert_eq!(delta_log::latest(&storage).unwrap(), Some(1));
    }

    #[test]
    fn a_concurrent_metadata_change_fails_the_round_and_abort_cleans_up() {
        let storage = MemoryStorage::new();
        let t = table();
        assert!(create_table_if_missing(&storage, &t).unwrap());
        let files = write(&storage, &t, &[1]);
        // someone changes the table after the files were written
        let mut changed = delta_log::read_commit(&storage, 0).unwrap();
        changed.remove(0);
        delta_log::publish(&storage, 1, &changed[1..]).unwrap();
        let mut c = DeltaCommitter::open(committer_context(&t, &[]), &storage).unwrap();
        let committable = c.to_committable(&[files]).unwrap();
        let e = c.commit(&committable, &[], None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert!(e.message().contains("metaData"), "{e}");
        assert_eq!(
            delta_log::latest(&storage).unwrap(),
            Some(1),
            "nothing committed"
        );

        let data: Vec<String> = WritePayload::decode(&committable)
            .unwrap()
            .adds
            .iter()
            .map(|a| decode_uri_path(&a.path).unwrap())
            .collect();
        assert!(storage.head(&data[0]).unwrap().is_some());
        c.abort(&committable).unwrap();
        assert!(storage.head(&data[0]).unwrap().is_none());
    }
}
