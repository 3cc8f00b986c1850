//! One attempt at committing a snapshot on a loaded table version (Java's
//! `SnapshotProducer`): the new snapshot's id and sequence number, the manifests and the
//! manifest list it writes (named as Java names them: `{commit-uuid}-m{n}.avro`,
//! `snap-{id}-1-{commit-uuid}.avro`), and the metadata version it publishes with
//! put-if-absent. An attempt that does not land deletes every file it wrote, so a lost race
//! leaves nothing behind; the caller plans again on the new version.

use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Result, ResultExt, clock};

use crate::committer::relative_path;
use crate::hadoop_tables::{self, Loaded};
use crate::manifest::{
    ManifestEntry, ManifestFile, ManifestSchema, ManifestWriter, read_entries, read_manifest_list,
    write_manifest_list,
};
use crate::metadata::Snapshot;

/// A snapshot being built on `base`.
pub struct SnapshotAttempt<'a> {
    storage: &'a dyn Storage,
    pub base: &'a Loaded,
    /// The table location, prefix of every file URI.
    pub location: String,
    pub snapshot_id: i64,
    pub sequence_number: i64,
    /// The current snapshot of `base`, this one's parent.
    pub parent: Option<Snapshot>,
    commit_id: uuid::Uuid,
    manifests_written: u32,
    /// Files this attempt wrote (relative paths), deleted when it does not land.
    written: Vec<String>,
}

fn new_snapshot_id(taken: &[Snapshot]) -> i64 {
    loop {
        let (hi, lo) = uuid::Uuid::new_v4().as_u64_pair();
        let id = ((hi ^ lo) & i64::MAX as u64) as i64;
        if id != 0 && !taken.iter().any(|s| s.snapshot_id == id) {
            return id;
        }
    }
}

impl<'a> SnapshotAttempt<'a> {
    pub fn new(storage: &'a dyn Storage, base: &'a Loaded) -> Result<SnapshotAttempt<'a>> {
        let m = &base.metadata;
        Ok(SnapshotAttempt {
            storage,
            base,
            location: m.location()?.to_string(),
            snapshot_id: new_snapshot_id(&m.snapshots()?),
            sequence_number: m.last_sequence_number() + 1,
            parent: m.current_snapshot()?,
            commit_id: uuid::Uuid::new_v4(),
            manifests_written: 0,
            written: Vec::new(),
        })
    }

    /// Reads the file at absolute `uri` inside the table.
    pub fn read(&self, uri: &str) -> Result<Vec<u8>> {
        let rel = relative_path(&self.location, uri)?;
        self.storage
            .get(rel)
            .with_context(|| format!("reading {rel}"))
    }

    /// The manifests the parent snapshot lists, in its order.
    pub fn parent_manifests(&self) -> Result<Vec<ManifestFile>> {
        match &self.parent {
            Some(p) => read_manifest_list(&self.read(&p.manifest_list)?),
            None => Ok(Vec::new()),
        }
    }

    /// Every entry of `manifest`, whole.
    pub fn read_entries(&self, manifest: &ManifestFile) -> Result<Vec<ManifestEntry>> {
        let spec = self
            .base
            .metadata
            .partition_spec(manifest.partition_spec_id)?;
        read_entries(&self.read(&manifest.manifest_path)?, manifest, &spec)
    }

    /// The schema of manifests of partition spec `spec_id` written by this attempt.
    pub fn manifest_schema(&self, spec_id: i32) -> Result<ManifestSchema> {
        let m = &self.base.metadata;
        ManifestSchema::new(&m.current_schema()?, &m.partition_spec(spec_id)?)
    }

    /// A manifest writer of this snapshot.
    pub fn manifest_writer<'s>(
        &self,
        schema: &'s ManifestSchema,
        content: i32,
    ) -> Result<ManifestWriter<'s>> {
        schema.writer(content, self.snapshot_id, self.sequence_number)
    }

    /// Stores a finished manifest; its manifest-list entry.
    pub fn store_manifest(&mut self, writer: ManifestWriter<'_>) -> Result<ManifestFile> {
        let rel = format!(
            "metadata/{}-m{}.avro",
            self.commit_id, self.manifests_written
        );
        self.manifests_written += 1;
        let (bytes, manifest) = writer.finish(format!("{}/{rel}", self.location))?;
        self.written.push(rel.clone());
        self.storage
            .put(&rel, &bytes)
            .with_context(|| format!("writing {rel}"))?;
        Ok(manifest)
    }

    /// Writes the manifest list of `manifests` and publishes the snapshot with `summary` as
    /// the next metadata version; `Conflict` when another commit took that version (this
    /// attempt's files are deleted then, as on any failure).
    pub fn commit(
        mut self,
        manifests: &[ManifestFile],
        summary: Vec<(String, String)>,
    ) -> Result<Snapshot> {
        let result = self.publish(manifests, summary);
        if result.is_err() {
            self.discard();
            return result;
        }
        // Manifests this attempt wrote that a merge then folded into another one (Java's
        // `cleanUncommitted`): nothing lists them.
        let listed: std::collections::HashSet<&str> =
            manifests.iter().map(|m| m.manifest_path.as_str()).collect();
        let location = self.location.clone();
        self.written.retain(|rel| {
            !rel.contains("/snap-") && !listed.contains(format!("{location}/{rel}").as_str())
        });
        self.discard();
        result
    }

    fn publish(
        &mut self,
        manifests: &[ManifestFile],
        summary: Vec<(String, String)>,
    ) -> Result<Snapshot> {
        let m = &self.base.metadata;
        let parent_id = self.parent.as_ref().map(|p| p.snapshot_id);
        let list_rel = format!(
            "metadata/snap-{}-1-{}.avro",
            self.snapshot_id, self.commit_id
        );
        let list =
            write_manifest_list(manifests, self.snapshot_id, parent_id, self.sequence_number)?;
        self.written.push(list_rel.clone());
        self.storage.put(&list_rel, &list)?;
        let snapshot = Snapshot {
            snapshot_id: self.snapshot_id,
            parent_snapshot_id: parent_id,
            sequence_number: self.sequence_number,
            timestamp_ms: clock::now_millis().max(m.last_updated_ms()),
            manifest_list: format!("{}/{list_rel}", self.location),
            summary,
            schema_id: Some(m.current_schema()?.schema_id),
        };
        let next = m.with_snapshot(&snapshot, &self.base.metadata_file()?);
        hadoop_tables::publish(self.storage, Some(self.base.version), &next)?;
        Ok(snapshot)
    }

    /// Deletes every file this attempt wrote (nothing refers to them) that is still
    /// tracked: all of them before publishing, the unlisted ones after.
    pub fn discard(&mut self) {
        for rel in self.written.drain(..) {
            if let Err(e) = self.storage.delete(&rel) {
                fluss_lake_guest_sdk::warn!("could not delete {rel} of a failed commit: {e}");
            }
        }
    }
}
