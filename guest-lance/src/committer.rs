//! Commits a round as one Lance version: the splits' data files become new fragments, the
//! manifest of version `v + 1` lists the previous fragments plus them, and its transaction
//! (an `Append`) carries `commit-user=__fluss_lake_tiering` and `fluss-offsets` in
//! `transaction_properties`, as Fluss's Java `LanceLakeCommitter` commits. Empty rounds
//! commit too. The snapshot id Fluss records is the version number.

use std::collections::HashMap;

use fluss_lake_guest_sdk::commit::{self, Attempt, Plan, Proposal, RetryPolicy, Written};
use fluss_lake_guest_sdk::plugin::FormatCommitter;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{
    CommitResult, CommittedSnapshot, CommitterContext, ReadableSnapshot, TieringStats,
};
use fluss_lake_guest_sdk::{ErrorKind, FLUSS_COMMIT_USER, Result};

use crate::proto::lance::table as pb;
use crate::versions::{
    self, COMMIT_USER, DEFAULT_COMMIT_RETRIES, Head, new_fragment, now, writer_version,
};
use crate::writer::WritePayload;

pub fn to_committable(write_results: &[Vec<u8>]) -> Result<Vec<u8>> {
    let mut all = WritePayload::default();
    for r in write_results {
        all.files.extend(WritePayload::decode(r)?.files);
    }
    all.encode()
}

pub struct LanceCommitter<S: Storage> {
    storage: S,
}

/// A round's files appended as the next version (an `Append` transaction), as the commit kit
/// runs it.
struct Append<'a, S: Storage> {
    committer: &'a LanceCommitter<S>,
    files: &'a WritePayload,
    properties: &'a [(String, String)],
    tiered_base: Option<i64>,
}

impl<S: Storage> Attempt for Append<'_, S> {
    type Base = Head;
    type Output = pb::Manifest;

    fn read_base(&mut self, storage: &dyn Storage) -> Result<Head> {
        versions::read_head(storage)
    }

    fn check(&mut self, _: &dyn Storage, _: &Head) -> Result<()> {
        self.committer.check_tiered_base(self.tiered_base)
    }

    fn build(
        &mut self,
        _: &dyn Storage,
        head: &Head,
        written: &mut Written<'_>,
    ) -> Result<Plan<pb::Manifest>> {
        let base = &head.manifest;
        let field_ids: Vec<i32> = base.fields.iter().map(|f| f.id).collect();
        let mut next_id = base
            .max_fragment_id
            .map(|m| m as u64 + 1)
            .or_else(|| base.fragments.iter().map(|f| f.id + 1).max())
            .unwrap_or(0);
        let new_fragments: Vec<pb::DataFragment> = self
            .files
            .files
            .iter()
            .map(|f| {
                let id = next_id;
                next_id += 1;
                new_fragment(id, f.path.clone(), f.rows, f.size, &field_ids)
            })
            .collect();
        let mut tx_properties: HashMap<String, String> = self.properties.iter().cloned().collect();
        tx_properties.insert(COMMIT_USER.to_string(), FLUSS_COMMIT_USER.to_string());
        let tx = pb::Transaction {
            read_version: head.version,
            uuid: uuid::Uuid::new_v4().to_string(),
            transaction_properties: tx_properties,
            operation: Some(pb::transaction::Operation::Append(
                pb::transaction::Append {
                    fragments: new_fragments.clone(),
                },
            )),
            ..Default::default()
        };
        let (tx_name, tx_path, tx_bytes) = versions::transaction_file(&tx);
        written.put(tx_path, &tx_bytes)?;
        let mut manifest = base.clone();
        manifest.version = head.version + 1;
        manifest.fragments.extend(new_fragments);
        manifest.max_fragment_id = next_id
            .checked_sub(1)
            .map(|m| m as u32)
            .or(base.max_fragment_id);
        // The transaction file's name is unique to this attempt, so the manifest's bytes are
        // too: the commit kit recognises them as ours after a lost acknowledgement.
        manifest.transaction_file = tx_name;
        manifest.transaction_section = None;
        manifest.timestamp = Some(now());
        manifest.writer_version = Some(writer_version());
        manifest.tag = String::new();
        let (path, bytes) =
            versions::proposal(&manifest, head.index_section.as_deref(), head.naming);
        Ok(Plan::Publish(Proposal {
            path,
            bytes,
            unreferenced: Vec::new(),
            output: manifest,
        }))
    }
}

impl<S: Storage> FormatCommitter<S> for LanceCommitter<S> {
    fn open(_context: CommitterContext, storage: S) -> Result<Self> {
        Ok(LanceCommitter { storage })
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
        let files = WritePayload::decode(committable)?;
        let policy = RetryPolicy::retries(DEFAULT_COMMIT_RETRIES);
        let mut append = Append {
            committer: self,
            files: &files,
            properties,
            tiered_base,
        };
        let storage: &dyn Storage = &self.storage;
        let manifest = commit::commit(
            storage,
            policy,
            "Lance tiering commit",
            Written::new(storage),
            &mut append,
        )?
        .output;
        let rows: u64 = manifest.fragments.iter().map(|f| f.physical_rows).sum();
        let size: u64 = manifest
            .fragments
            .iter()
            .flat_map(|f| &f.files)
            .map(|f| f.file_size_bytes)
            .sum();
        fluss_lake_guest_sdk::info!(
            "committed Lance version {} ({} new fragments)",
            manifest.version,
            files.files.len()
        );
        Ok(CommitResult {
            snapshot_id: manifest.version as i64,
            readable: ReadableSnapshot::Committed,
            earliest_snapshot_to_keep: None,
            stats: TieringStats {
                file_size: Some(size as i64),
                record_count: Some(rows as i64),
            },
        })
    }

    /// Deletes the round's data files (no manifest refers to them).
    fn abort(&self, committable: &[u8]) -> Result<()> {
        for f in WritePayload::decode(committable)?.files {
            self.storage.delete(&format!("data/{}", f.path))?;
        }
        Ok(())
    }

    /// The newest version whose transaction Fluss committed, if newer than the one Fluss
    /// knows (Java's `getMissingLakeSnapshot`: versions are scanned newest first). Versions
    /// committed by maintenance (compaction, [`MAINTENANCE_COMMIT_USER`]) are passed over; a
    /// manifest a concurrent cleanup removed after the listing is skipped.
    ///
    /// [`MAINTENANCE_COMMIT_USER`]: crate::compact::MAINTENANCE_COMMIT_USER
    fn get_missing_lake_snapshot(&self, latest: Option<i64>) -> Result<Option<CommittedSnapshot>> {
        let all = versions::all(&self.storage)?;
        for (version, naming) in all.into_iter().rev() {
            if latest.is_some_and(|l| version as i64 <= l) {
                return Ok(None);
            }
            let manifest = match versions::read(&self.storage, version, naming) {
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                other => other?,
            };
            let Some(tx) = versions::read_transaction(&self.storage, &manifest)? else {
                continue;
            };
            if tx
                .transaction_properties
                .get(COMMIT_USER)
                .map(String::as_str)
                == Some(FLUSS_COMMIT_USER)
            {
                return Ok(Some(CommittedSnapshot {
                    snapshot_id: version as i64,
                    properties: tx.transaction_properties.into_iter().collect(),
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
        RacingStorage, committer_context, id_name_batch, id_name_table, writer_context,
    };
    use fluss_lake_guest_sdk::wit::TableInfo;

    use super::*;
    use crate::catalog::create_table_if_missing;
    use crate::writer::LanceWriter;

    fn table() -> TableInfo {
        id_name_table()
    }

    fn write(storage: &dyn Storage, t: &TableInfo, ids: &[i32]) -> Vec<u8> {
        let mut w = LanceWriter::open(&writer_context(t, 0, None, &[]), storage).unwrap();
        w.write(id_name_batch(ids)).unwrap();
        w.complete().unwrap().payload
    }

    /// Commits rows 1 and 2 while a rival commit of row 3 takes version 2 first. The rival is
    /// another tiering round, or, unless `rival_is_tiering`, a writer with another commit user.
    fn commit_losing_a_race(
        storage: &MemoryStorage,
        t: &TableInfo,
        rival_is_tiering: bool,
    ) -> Result<CommitResult> {
        let mine = write(storage, t, &[1, 2]);
        let theirs = write(storage, t, &[3]);
        let racing = RacingStorage::new(
            storage,
            |p| p.starts_with(versions::VERSIONS_DIR),
            || {
                let mut c = LanceCommitter::open(committer_context(t, &[]), storage).unwrap();
                let committable = c.to_committable(std::slice::from_ref(&theirs)).unwrap();
                let r = c.commit(
                    &committable,
                    &[("fluss-offsets".into(), "/theirs".into())],
                    None,
                );
                assert_eq!(r.unwrap().snapshot_id, 2);
                if rival_is_tiering {
                    return;
                }
                for meta in storage.list(versions::TRANSACTIONS_DIR).unwrap() {
                    let mut body = storage.get(&meta.path).unwrap();
                    let user = FLUSS_COMMIT_USER.as_bytes();
                    if let Some(at) = body.windows(user.len()).position(|w| w == user) {
                        // Same length, so the protobuf stays valid.
                        body[at..at + user.len()].copy_from_slice(b"__some_other_writer_");
                    }
                    storage.put(&meta.path, &body).unwrap();
                }
            },
        );
        let mut c = LanceCommitter::open(committer_context(t, &[]), &racing).unwrap();
        let committable = c.to_committable(&[mine]).unwrap();
        c.commit(&committable, &[("fluss-offsets".into(), "/o".into())], None)
    }

    #[test]
    fn a_race_lost_to_another_tiering_round_is_not_retried() {
        let storage = MemoryStorage::new();
        let t = table();
        assert!(create_table_if_missing(&storage, &t).unwrap());
        let e = commit_losing_a_race(&storage, &t, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        assert!(e.to_string().contains("another tiering round"), "{e}");
        assert_eq!(versions::latest(&storage).unwrap().unwrap().0, 2);
    }

    #[test]
    fn races_retry_and_abort_cleans_up() {
        let storage = MemoryStorage::new();
        let t = table();
        assert!(create_table_if_missing(&storage, &t).unwrap());
        let r = commit_losing_a_race(&storage, &t, false).unwrap();
        let c = LanceCommitter::open(committer_context(&t, &[]), &storage).unwrap();
        assert_eq!(
            r.snapshot_id, 3,
            "lost the race for 2, committed on top of it"
        );
        assert_eq!(r.stats.record_count, Some(3));
        let m = versions::read(&storage, 3, versions::Naming::V1).unwrap();
        let ids: Vec<u64> = m.fragments.iter().map(|f| f.id).collect();
        assert_eq!(ids, [0, 1], "fragment ids continue after the rival's");
        assert_eq!(m.max_fragment_id, Some(1));
        let tx = versions::read_transaction(&storage, &m).unwrap().unwrap();
        assert_eq!(tx.read_version, 2);
        assert_eq!(
            c.get_missing_lake_snapshot(Some(2))
                .unwrap()
                .unwrap()
                .snapshot_id,
            3
        );

        // abort deletes the round's data files
        let aborted = write(&storage, &t, &[9]);
        let files = WritePayload::decode(&aborted).unwrap().files;
        let path = format!("data/{}", files[0].path);
        assert!(storage.head(&path).unwrap().is_some());
        c.abort(&c.to_committable(&[aborted]).unwrap()).unwrap();
        assert!(storage.head(&path).unwrap().is_none());
    }
}
