//! One attempt at committing a snapshot on a loaded table version (Java's
//! `SnapshotProducer`): the new snapshot's id and sequence number, the manifests and the
//! manifest list it writes (named as Java names them: `{commit-uuid}-m{n}.avro`,
//! `snap-{id}-1-{commit-uuid}.avro`), and the metadata version it proposes. Retries, the
//! put-if-absent of the metadata and the cleanup of attempts that did not land are the SDK's
//! commit kit's ([`commit_snapshot`]).

use std::collections::HashSet;

use fluss_lake_guest_sdk::commit::{self, Attempt, Plan, RetryPolicy, Written};
use fluss_lake_guest_sdk::layout::relative_path;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt, clock};

use crate::manifest::{
    ManifestEntry, ManifestFile, ManifestSchema, ManifestWriter, read_entries, read_manifest_list,
    write_manifest_list,
};
use crate::metadata::Snapshot;
use crate::tables::{self, Loaded};

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
    /// Files this attempt wrote (relative paths), handed to the commit kit.
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

    /// Writes the manifest list of `manifests` and proposes the snapshot with `summary` as
    /// the next metadata version; the files this attempt wrote that the snapshot does not
    /// list (manifests a merge folded into another one: Java's `cleanUncommitted`) go once
    /// it is published.
    fn propose(
        &mut self,
        manifests: &[ManifestFile],
        summary: Vec<(String, String)>,
    ) -> Result<Plan<Snapshot>> {
        let m = &self.base.metadata;
        let parent_id = self.parent.as_ref().map(|p| p.snapshot_id);
        let list_rel = format!(
            "metadata/snap-{}-1-{}.avro",
            self.snapshot_id, self.commit_id
        );
        let list =
            write_manifest_list(manifests, self.snapshot_id, parent_id, self.sequence_number)?;
        self.written.push(list_rel.clone());
        self.storage
            .put(&list_rel, &list)
            .with_context(|| format!("writing {list_rel}"))?;
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
        let listed: HashSet<&str> = manifests.iter().map(|m| m.manifest_path.as_str()).collect();
        let location = &self.location;
        let unreferenced = self
            .written
            .iter()
            .filter(|rel| {
                *rel != &list_rel && !listed.contains(format!("{location}/{rel}").as_str())
            })
            .cloned()
            .collect();
        // The manifest list's name is unique to this attempt, so the metadata's bytes are too
        // (the commit kit recognises them as ours after a lost acknowledgement), and so is the
        // snapshot's id (the catalog's commit is recognised by it).
        tables::publication(self.base, &next, unreferenced, snapshot)
    }
}

/// A change committed as one Iceberg snapshot (a tiering round, a rewrite, a manifest merge):
/// the format logic of one commit kind. [`commit_snapshot`] runs it through the SDK's commit
/// kit, which retries lost races on the new version and decides what is cleaned up.
pub trait SnapshotChange {
    /// What a change that publishes nothing ends with.
    type Nothing;

    /// Refuses the change on `base` (another tiering round committed after the planned
    /// snapshot...): final, never retried.
    fn check(&mut self, storage: &dyn Storage, base: &Loaded) -> Result<()> {
        let _ = (storage, base);
        Ok(())
    }

    /// The new snapshot's manifests (written through `attempt`) and summary, or nothing to
    /// publish.
    fn plan(&mut self, attempt: &mut SnapshotAttempt<'_>) -> Result<Planned<Self::Nothing>>;
}

/// What a [`SnapshotChange`] plans on one table version.
pub enum Planned<T> {
    /// A snapshot listing `manifests`, with `summary`.
    Snapshot {
        manifests: Vec<ManifestFile>,
        summary: Vec<(String, String)>,
    },
    /// Nothing to publish.
    Nothing(T),
}

/// How a [`SnapshotChange`] ended.
#[derive(Debug)]
pub enum Outcome<T> {
    /// Published as this snapshot.
    Committed(Snapshot),
    /// Nothing was published.
    Nothing(T),
}

/// The commit retry policy of a table: its `commit.retry.num-retries` (Java's default, 4).
pub fn retry_policy(metadata: &crate::metadata::TableMetadata) -> Result<RetryPolicy> {
    RetryPolicy::from_options(
        [metadata.property(COMMIT_RETRIES)],
        COMMIT_RETRIES,
        DEFAULT_COMMIT_RETRIES,
    )
}

const COMMIT_RETRIES: &str = "commit.retry.num-retries";
const DEFAULT_COMMIT_RETRIES: u32 = 4;

/// Commits `change` on the newest table version through the commit kit; `prepared` holds the
/// files written for it before (a rewrite's new data files), kept when published or when the
/// outcome is unknown, deleted otherwise.
pub fn commit_snapshot<C: SnapshotChange>(
    storage: &dyn Storage,
    what: &str,
    prepared: Written<'_>,
    change: &mut C,
) -> Result<Outcome<C::Nothing>> {
    let current =
        tables::load(storage)?.ok_or_else(|| Error::not_found("Iceberg table has no metadata"))?;
    let policy = retry_policy(&current.metadata)?;
    let mut attempt = ChangeAttempt { change, base: None };
    Ok(commit::commit(storage, policy, what, prepared, &mut attempt)?.output)
}

/// The commit kit's view of a [`SnapshotChange`].
struct ChangeAttempt<'c, C> {
    change: &'c mut C,
    /// The base of the last attempt.
    base: Option<Loaded>,
}

impl<C: SnapshotChange> Attempt for ChangeAttempt<'_, C> {
    type Base = Loaded;
    type Output = Outcome<C::Nothing>;

    fn read_base(&mut self, storage: &dyn Storage) -> Result<Loaded> {
        tables::load(storage)?.ok_or_else(|| Error::not_found("Iceberg table has no metadata"))
    }

    fn check(&mut self, storage: &dyn Storage, base: &Loaded) -> Result<()> {
        self.change.check(storage, base)
    }

    fn build(
        &mut self,
        storage: &dyn Storage,
        base: &Loaded,
        written: &mut Written<'_>,
    ) -> Result<Plan<Self::Output>> {
        self.base = Some(base.clone());
        let mut attempt = SnapshotAttempt::new(storage, base)?;
        let plan = match self.change.plan(&mut attempt) {
            Ok(Planned::Snapshot { manifests, summary }) => attempt
                .propose(&manifests, summary)
                .map(|plan| plan.map(Outcome::Committed)),
            Ok(Planned::Nothing(t)) => Ok(Plan::Done(Outcome::Nothing(t))),
            Err(e) => Err(e),
        };
        // Whatever the plan, the kit owns what the attempt wrote: it keeps the files of a
        // published (or possibly published) snapshot and deletes the rest.
        for path in attempt.written.drain(..) {
            written.add(path);
        }
        plan
    }

    fn published(&mut self, storage: &dyn Storage, _: &Self::Output) {
        if let Some(base) = &self.base {
            tables::published(storage, base);
        }
    }
}
