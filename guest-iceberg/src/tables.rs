//! Where a table's current metadata is, and how a new version of it is published: the one
//! place the rest of the plugin asks, whichever catalog keeps the table.
//!
//! - A Hadoop catalog table ([`CatalogKind::Files`]) is its files: [`hadoop_tables`] finds the
//!   newest `v<N>.metadata.json` and a commit puts `v<N+1>` if absent.
//! - An Iceberg REST catalog table ([`CatalogKind::IcebergRest`]) is what the catalog answers
//!   (through the host's table-scoped `table-catalog` import); a commit sends the catalog the
//!   difference between the base and the new metadata as the REST spec's updates, under
//!   requirements that hold exactly when the table is still at the base, so the catalog's
//!   compare-and-swap decides a race as put-if-absent does for Hadoop tables.
//! - A table of a metastore that keeps the location of its current metadata file (Iceberg's
//!   Glue catalog: [`CatalogKind::MetadataPointer`]) is the file the pointer names, which the
//!   host reads through the table's storage; a commit writes the new version as Java's
//!   `BaseMetastoreTableOperations` names it (`metadata/<NNNNN>-<uuid>.metadata.json`, with
//!   the replaced file in `metadata-log`) and has the catalog swap the pointer to it, only
//!   while it still names the base's file.
//!
//! Everything else (snapshot producing, expiry, compaction) builds a whole new
//! [`TableMetadata`] on a [`Loaded`] base as before and hands it to [`publication`].

use std::collections::{BTreeMap, BTreeSet};

use fluss_lake_guest_sdk::commit::{CatalogProposal, Plan, PointerProposal, Proposal};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::table_catalog::{self, CatalogKind};
use fluss_lake_guest_sdk::{Error, Result};
use serde_json::{Map, Value, json};

use crate::hadoop_tables;
use crate::metadata::TableMetadata;

/// A loaded metadata version.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The Hadoop version number (`v<N>`); for a catalog's table the number its metadata file
    /// name starts with, if any (0 otherwise): only Hadoop tables name files after it.
    pub version: u64,
    /// The metadata file, relative to the table's location.
    pub file: String,
    pub metadata: TableMetadata,
}

impl Loaded {
    /// The absolute location of this version's metadata file (for `metadata-log`).
    pub fn metadata_file(&self) -> Result<String> {
        Ok(format!("{}/{}", self.metadata.location()?, self.file))
    }
}

/// How the table's catalog keeps it.
pub fn kind() -> CatalogKind {
    table_catalog::current().kind()
}

/// The table's current metadata, or `None` when the table does not exist.
pub fn load(storage: &dyn Storage) -> Result<Option<Loaded>> {
    match kind() {
        CatalogKind::Files => hadoop_tables::load(storage),
        CatalogKind::Versions => Err(not_versioned()),
        kind @ (CatalogKind::IcebergRest | CatalogKind::MetadataPointer) => {
            let Some(state) = table_catalog::current().load()? else {
                if kind == CatalogKind::MetadataPointer {
                    // Creating one would mean registering it in the metastore, which only
                    // the table's creator (Fluss's coordinator) does.
                    return Err(Error::not_found(
                        "the catalog has no such table: an Iceberg table of a metastore catalog \
                         (Glue) is created by Fluss's coordinator, not by this plugin",
                    ));
                }
                return Ok(None);
            };
            let metadata = TableMetadata::parse(&state.metadata).map_err(|e| {
                e.context(format!("the catalog's metadata {}", state.metadata_file))
            })?;
            Ok(Some(Loaded {
                version: catalog_version(&state.metadata_file),
                file: state.metadata_file,
                metadata,
            }))
        }
    }
}

/// [`load`] for a writer of table `table_id`, which reads a Hadoop table's metadata file only
/// when its plugin instance has not read it already ([`hadoop_tables::load_for_writer`]).
pub fn load_for_writer(storage: &dyn Storage, table_id: i64) -> Result<Option<Loaded>> {
    match kind() {
        CatalogKind::Files => hadoop_tables::load_for_writer(storage, table_id),
        _ => load(storage),
    }
}

/// `00003-<uuid>.metadata.json` → 3.
fn catalog_version(file: &str) -> u64 {
    let name = file.rsplit('/').next().unwrap_or(file);
    name.split(['-', '.'])
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The metadata file after `current` (relative to the table's location), as Java's
/// `BaseMetastoreTableOperations` names it: `metadata/<NNNNN>-<uuid>.metadata.json`, numbered
/// one past the number `current`'s name starts with (0 after a name without one, such as a
/// Hadoop table's `v3.metadata.json`).
pub fn next_pointer_file(current: &str) -> String {
    let name = current.rsplit('/').next().unwrap_or(current);
    let next = name
        .split_once('-')
        .and_then(|(n, _)| n.parse::<i64>().ok())
        .map_or(0, |n| n + 1);
    format!(
        "{}/{next:05}-{}.metadata.json",
        hadoop_tables::METADATA_DIR,
        uuid::Uuid::new_v4()
    )
}

/// How `next`, built on `base`, is published: as the next version file of a Hadoop table, as
/// the catalog's commit of what changed, or as a new metadata file the catalog's pointer is
/// swapped to. `unreferenced` files go once it is published.
pub fn publication<T>(
    base: &Loaded,
    next: &TableMetadata,
    unreferenced: Vec<String>,
    output: T,
) -> Result<Plan<T>> {
    match kind() {
        CatalogKind::Files => Ok(Plan::Publish(Proposal {
            path: hadoop_tables::metadata_path(base.version + 1),
            bytes: next.to_bytes()?,
            unreferenced,
            output,
        })),
        CatalogKind::IcebergRest => {
            let change = Change::between(&base.metadata, next)?;
            let (requirements, updates) = change.to_json(&base.metadata);
            Ok(Plan::Commit(CatalogProposal {
                requirements,
                updates,
                recognise: Box::new(move |state| {
                    Ok(change.applied_in(&TableMetadata::parse(&state.metadata)?))
                }),
                unreferenced,
                output,
            }))
        }
        CatalogKind::Versions => Err(not_versioned()),
        CatalogKind::MetadataPointer => {
            // The host refuses the same changes a REST catalog does: checked here first, and
            // the check is what recognises a swap whose answer was lost once the pointer moved
            // past it.
            let change = Change::between(&base.metadata, next)?;
            Ok(Plan::Swap(PointerProposal {
                expected: base.file.clone(),
                path: next_pointer_file(&base.file),
                bytes: next.to_bytes()?,
                recognise: Box::new(move |state| {
                    Ok(change.applied_in(&TableMetadata::parse(&state.metadata)?))
                }),
                unreferenced,
                output,
            }))
        }
    }
}

/// An Iceberg table's catalog keeps its metadata, never a sequence of versions the way
/// Paimon's REST catalog does: such a table is not an Iceberg table.
fn not_versioned() -> Error {
    Error::unsupported(
        "an Iceberg table cannot be kept by a catalog of versions (Paimon's REST catalog)",
    )
}

/// After `base`'s successor was published: a Hadoop table's version hint follows it.
pub fn published(storage: &dyn Storage, base: &Loaded) {
    if kind() == CatalogKind::Files {
        hadoop_tables::update_hint(storage, base.version + 1);
    }
}

/// Fields a catalog maintains itself from the updates it applies (or that only name files of
/// a Hadoop table): a difference there is not a change to send.
const CATALOG_MAINTAINED: &[&str] = &[
    "last-updated-ms",
    "last-sequence-number",
    "metadata-log",
    "snapshot-log",
    "current-snapshot-id",
    "refs",
    "snapshots",
    "properties",
    "statistics",
    "partition-statistics",
];

/// What a tiering plugin's commit changed in a table's metadata, as the REST spec's updates.
#[derive(Debug, Clone, Default, PartialEq)]
struct Change {
    added_snapshots: Vec<Value>,
    removed_snapshots: Vec<i64>,
    /// Refs set (name → the ref's JSON) and removed.
    set_refs: Vec<(String, Value)>,
    removed_refs: Vec<String>,
    set_properties: BTreeMap<String, Value>,
    removed_properties: Vec<String>,
    /// Snapshot ids whose statistics / partition statistics entries went.
    removed_statistics: Vec<i64>,
    removed_partition_statistics: Vec<i64>,
}

fn by_snapshot_id(m: &Map<String, Value>, key: &str) -> BTreeMap<i64, Value> {
    m.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| Some((v.get("snapshot-id")?.as_i64()?, v.clone())))
        .collect()
}

/// The table's refs, with `main` from `current-snapshot-id` in metadata that has no refs.
fn refs(m: &TableMetadata) -> BTreeMap<String, Value> {
    let mut refs: BTreeMap<String, Value> = m
        .fields()
        .get("refs")
        .and_then(Value::as_object)
        .map(|r| r.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    if !refs.contains_key("main")
        && let Some(id) = m.current_snapshot_id()
    {
        refs.insert("main".into(), json!({"snapshot-id": id, "type": "branch"}));
    }
    refs
}

fn object<'a>(m: &'a TableMetadata, key: &str) -> BTreeMap<&'a String, &'a Value> {
    m.fields()
        .get(key)
        .and_then(Value::as_object)
        .map(|o| o.iter().collect())
        .unwrap_or_default()
}

impl Change {
    fn between(base: &TableMetadata, next: &TableMetadata) -> Result<Change> {
        // Nothing but snapshots, refs, properties and statistics may change: the catalog
        // accepts nothing else from a plugin, and the plugin never needs more.
        let (b, n) = (base.fields(), next.fields());
        let keys: BTreeSet<&String> = b.keys().chain(n.keys()).collect();
        for key in keys {
            if !CATALOG_MAINTAINED.contains(&key.as_str()) && b.get(key) != n.get(key) {
                return Err(Error::internal(format!(
                    "a commit changed the table's '{key}', which a catalog's commit cannot carry"
                )));
            }
        }
        let mut change = Change::default();
        let (bs, ns) = (
            by_snapshot_id(b, "snapshots"),
            by_snapshot_id(n, "snapshots"),
        );
        change.added_snapshots = n
            .get("snapshots")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|s| {
                s.get("snapshot-id")
                    .and_then(Value::as_i64)
                    .is_some_and(|id| !bs.contains_key(&id))
            })
            .cloned()
            .collect();
        change.removed_snapshots = bs
            .keys()
            .filter(|id| !ns.contains_key(id))
            .copied()
            .collect();
        let (br, nr) = (refs(base), refs(next));
        for (name, r) in &nr {
            if br.get(name) != Some(r) {
                change.set_refs.push((name.clone(), r.clone()));
            }
        }
        change.removed_refs = br
            .keys()
            .filter(|k| !nr.contains_key(*k))
            .cloned()
            .collect();
        let (bp, np) = (object(base, "properties"), object(next, "properties"));
        for (k, v) in &np {
            if bp.get(k) != Some(v) {
                change.set_properties.insert((*k).clone(), (*v).clone());
            }
        }
        change.removed_properties = bp
            .keys()
            .filter(|k| !np.contains_key(*k))
            .map(|k| (*k).clone())
            .collect();
        for (key, removed) in [
            ("statistics", &mut change.removed_statistics),
            (
                "partition-statistics",
                &mut change.removed_partition_statistics,
            ),
        ] {
            let (before, after) = (by_snapshot_id(b, key), by_snapshot_id(n, key));
            for (id, entry) in &after {
                if before.get(id) != Some(entry) {
                    return Err(Error::internal(format!(
                        "a commit added {key} of snapshot {id}, which this plugin never does"
                    )));
                }
            }
            *removed = before
                .keys()
                .filter(|id| !after.contains_key(id))
                .copied()
                .collect();
        }
        Ok(change)
    }

    /// The requirements and updates (JSON arrays) of this change on `base`. The main branch
    /// (and every ref the change sets or removes) must still point where it did in `base`, and
    /// a snapshot's schema must still be the current one: exactly when the table is still at
    /// the base for this change, so a request repeated after an unknown outcome lands once.
    fn to_json(&self, base: &TableMetadata) -> (String, String) {
        let base_refs = refs(base);
        let ref_id = |name: &str| {
            base_refs
                .get(name)
                .and_then(|r| r.get("snapshot-id"))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let mut asserted: BTreeSet<&str> = BTreeSet::from(["main"]);
        asserted.extend(self.set_refs.iter().map(|(n, _)| n.as_str()));
        asserted.extend(self.removed_refs.iter().map(String::as_str));
        let mut requirements: Vec<Value> = asserted
            .into_iter()
            .map(|name| json!({"type": "assert-ref-snapshot-id", "ref": name, "snapshot-id": ref_id(name)}))
            .collect();
        if !self.added_snapshots.is_empty()
            && let Some(schema_id) = base.fields().get("current-schema-id")
        {
            requirements
                .push(json!({"type": "assert-current-schema-id", "current-schema-id": schema_id}));
        }
        let mut updates = Vec::new();
        for snapshot in &self.added_snapshots {
            updates.push(json!({"action": "add-snapshot", "snapshot": snapshot}));
        }
        for (name, r) in &self.set_refs {
            let mut update = json!({"action": "set-snapshot-ref", "ref-name": name});
            if let (Some(u), Some(r)) = (update.as_object_mut(), r.as_object()) {
                u.extend(r.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            updates.push(update);
        }
        for name in &self.removed_refs {
            updates.push(json!({"action": "remove-snapshot-ref", "ref-name": name}));
        }
        for id in &self.removed_statistics {
            updates.push(json!({"action": "remove-statistics", "snapshot-id": id}));
        }
        for id in &self.removed_partition_statistics {
            updates.push(json!({"action": "remove-partition-statistics", "snapshot-id": id}));
        }
        if !self.removed_snapshots.is_empty() {
            updates.push(
                json!({"action": "remove-snapshots", "snapshot-ids": self.removed_snapshots}),
            );
        }
        if !self.set_properties.is_empty() {
            updates.push(json!({"action": "set-properties", "updates": self.set_properties}));
        }
        if !self.removed_properties.is_empty() {
            updates
                .push(json!({"action": "remove-properties", "removals": self.removed_properties}));
        }
        (
            Value::Array(requirements).to_string(),
            Value::Array(updates).to_string(),
        )
    }

    /// Whether `current` holds this change: its new snapshots are there, or (a change that
    /// only removes) the snapshots it removed are gone and the properties it set are set.
    fn applied_in(&self, current: &TableMetadata) -> bool {
        let ids = by_snapshot_id(current.fields(), "snapshots");
        if !self.added_snapshots.is_empty() {
            return self.added_snapshots.iter().all(|s| {
                s.get("snapshot-id")
                    .and_then(Value::as_i64)
                    .is_some_and(|id| ids.contains_key(&id))
            });
        }
        let props = object(current, "properties");
        self.removed_snapshots
            .iter()
            .all(|id| !ids.contains_key(id))
            && self
                .set_properties
                .iter()
                .all(|(k, v)| props.get(k) == Some(&v))
    }
}

#[cfg(test)]
#[path = "pointer_tests.rs"]
mod pointer_tests;
