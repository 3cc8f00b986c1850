//! Iceberg tables kept by a metastore that points at each table's current metadata file: the
//! AWS Glue Data Catalog ([`super::glue`]) and the Hive Metastore ([`super::hive`]), as Apache
//! Iceberg's `GlueCatalog` and `HiveCatalog` keep them. The metastore's table holds the
//! parameters `table_type=ICEBERG`, `metadata_location` and `previous_metadata_location`; a
//! commit writes a new metadata file and then points the table at it.
//!
//! What is the same for every such metastore lives here, once ([`PointerTable`]):
//!
//! - the table's location is the folder holding `metadata/` (Iceberg's default layout); a
//!   table whose metadata lies elsewhere, or whose storage descriptor names another location,
//!   is refused;
//! - the new metadata file must be a successor of the one the table points at that a tiering
//!   plugin may make: the host reads both through the table's storage and refuses any other
//!   change ([`check_successor`]: only snapshots, references, properties and statistics
//!   change; the location, UUID, schemas, specs and sort orders stay; every file a new
//!   snapshot, statistics entry or `metadata-log` entry names lies under the table's location);
//! - right before the update the table must still point at the file the commit was built on
//!   (Java's `checkMetadataLocation`), and the update itself is conditional on that (Glue's
//!   `VersionId`, Hive's `expected_parameter_value`): a writer in between makes it a lost race
//!   ([`ErrorKind::Conflict`]); a lost answer is [`ErrorKind::CommitUnknown`];
//! - a table dropped and created again under the same name (another location or UUID) is
//!   never committed to by a round planned on the old one.
//!
//! How a metastore is asked and updated is its module's ([`Metastore`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use super::glue::GlueCatalog;
use super::hive::HiveCatalog;
use super::rest::clean_message;
use super::validate::{MetadataHead, TableLocation};
use crate::error::{Error, ErrorKind, Result};
use crate::plugin::storage::{ScopedStorage, StorageErrorKind};

/// Largest metadata file read.
pub const MAX_METADATA_BYTES: u64 = 64 * 1024 * 1024;

/// The parameter naming the table's kind (`ICEBERG`).
pub(crate) const TABLE_TYPE: &str = "table_type";
/// The parameter pointing at the current metadata file.
pub(crate) const METADATA_LOCATION: &str = "metadata_location";
/// The parameter pointing at the one before.
pub(crate) const PREVIOUS_METADATA_LOCATION: &str = "previous_metadata_location";

/// A metastore keeping Iceberg tables' pointers.
#[derive(Clone, Debug)]
pub enum Metastore {
    Glue(GlueCatalog),
    Hive(HiveCatalog),
}

/// One table as a metastore answered it: what [`PointerTable`] checks, and the metastore's
/// own record, which an update sends back with only the pointer parameters changed.
#[derive(Clone)]
pub(crate) struct Entry {
    /// The `table_type` parameter.
    pub table_type: Option<String>,
    /// The `metadata_location` parameter.
    pub metadata_location: Option<String>,
    /// The storage descriptor's location, if it names one.
    pub storage_location: Option<String>,
    pub record: Record,
}

/// A metastore's own record of a table.
#[derive(Clone)]
pub(crate) enum Record {
    /// Glue's `Table` object (JSON) and its `VersionId`, Glue's optimistic lock.
    Glue {
        table: Map<String, Value>,
        version_id: Option<String>,
    },
    /// The Hive Metastore's `Table` struct, every field as read.
    Hive(super::thrift::Struct),
}

impl Metastore {
    /// "Glue catalog <endpoint>" / "Hive Metastore <uri>", for messages (no secret).
    pub fn describe(&self) -> String {
        match self {
            Metastore::Glue(c) => format!("Glue catalog {}", c.endpoint()),
            Metastore::Hive(c) => format!("Hive Metastore {}", c.endpoint()),
        }
    }

    /// `message` without any secret of the metastore's.
    fn redact(&self, message: String) -> String {
        match self {
            Metastore::Glue(c) => c.redact(message),
            Metastore::Hive(_) => message,
        }
    }

    /// The table's record; `None` when the metastore has no such table (or database).
    async fn get(&self, database: &str, table: &str) -> Result<Option<Entry>> {
        match self {
            Metastore::Glue(c) => c.get_entry(database, table).await,
            Metastore::Hive(c) => c.get_entry(database, table).await,
        }
    }

    /// Points the table at `new_location` if it still points at `entry`'s metadata file,
    /// sending back `entry`'s record with `table_type`, `metadata_location` and
    /// `previous_metadata_location` set.
    async fn update(
        &self,
        database: &str,
        table: &str,
        entry: &Entry,
        new_location: &str,
    ) -> Result<()> {
        match self {
            Metastore::Glue(c) => c.update_entry(database, table, entry, new_location).await,
            Metastore::Hive(c) => c.update_entry(database, table, entry, new_location).await,
        }
    }
}

impl Metastore {
    /// Takes the metastore's lock of the table for a swap, where writers of it take one
    /// (Hive: `Some(lock id)`); Glue has none (its `VersionId` is the condition).
    async fn lock(&self, database: &str, table: &str) -> Result<Option<i64>> {
        match self {
            Metastore::Glue(_) => Ok(None),
            Metastore::Hive(c) => c.lock(database, table).await.map(Some),
        }
    }

    async fn unlock(&self, lock: Option<i64>) {
        if let (Metastore::Hive(c), Some(id)) = (self, lock) {
            c.unlock(id).await;
        }
    }
}

/// One table of a metastore: the capability a plugin's `table-catalog` import is scoped to
/// (kind `metadata-pointer`).
pub struct PointerTable {
    metastore: Metastore,
    database: String,
    table: String,
}

impl fmt::Debug for PointerTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PointerTable")
            .field("metastore", &self.metastore.describe())
            .field("database", &self.database)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// A table's pointer to its current metadata file, as the metastore answered it.
#[derive(Clone)]
pub struct MetadataPointer {
    /// The current metadata file, absolute (the `metadata_location` parameter).
    pub metadata_location: String,
    /// The table's location: the folder holding `metadata/` (Iceberg's default layout; a
    /// table whose metadata files lie elsewhere is refused).
    pub location: String,
    entry: Entry,
}

impl fmt::Debug for MetadataPointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataPointer")
            .field("metadata_location", &self.metadata_location)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl MetadataPointer {
    /// The current metadata file relative to the table's location
    /// (`metadata/00003-<uuid>.metadata.json`).
    pub fn metadata_file(&self) -> String {
        TableLocation::new(&self.location)
            .and_then(|l| l.relative(&self.metadata_location))
            .unwrap_or_default()
    }

    /// The version the metastore answered (Glue's `VersionId`), if any.
    pub fn version_id(&self) -> Option<&str> {
        match &self.entry.record {
            Record::Glue { version_id, .. } => version_id.as_deref(),
            Record::Hive(_) => None,
        }
    }
}

/// What the host fixed about a table when a round resolved it.
#[derive(Debug, Clone)]
pub struct ResolvedPointerTable {
    pub pointer: MetadataPointer,
    /// The table's UUID, from its metadata file.
    pub uuid: String,
}

/// A relative metadata file name a plugin may name: `metadata/<name>.metadata.json`, one
/// segment, no gzip.
fn check_metadata_file(what: &str, file: &str) -> Result<()> {
    let ok = file.strip_prefix("metadata/").is_some_and(|name| {
        !name.is_empty()
            && !name.contains('/')
            && name.ends_with(".metadata.json")
            && !name.ends_with(".gz.metadata.json")
            && name.len() <= 255
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
    });
    if ok {
        Ok(())
    } else {
        Err(refused(format!(
            "{what} '{}' is not a metadata file under metadata/ (metadata/<name>.metadata.json)",
            clean_message(file, 120)
        )))
    }
}

fn refused(message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::PluginLimit,
        format!("table catalog request refused: {}", message.into()),
    )
}

impl PointerTable {
    /// The table `database.table` of `metastore`.
    pub fn new(metastore: Metastore, database: &str, table: &str) -> PointerTable {
        PointerTable {
            metastore,
            database: database.to_string(),
            table: table.to_string(),
        }
    }

    fn name(&self) -> String {
        format!("{}.{}", self.database, self.table)
    }

    /// The metastore, for messages ("Glue catalog <endpoint>").
    pub fn describe(&self) -> String {
        self.metastore.describe()
    }

    fn check_names(&self) -> Result<()> {
        for (what, name) in [("database", &self.database), ("table", &self.table)] {
            if name.is_empty() || name.len() > 255 || name.chars().any(char::is_control) {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "'{}' cannot be a {} {what} name",
                        clean_message(name, 80),
                        self.metastore.describe()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn protocol(&self, why: impl fmt::Display) -> Error {
        Error::new(
            ErrorKind::Protocol,
            self.metastore.redact(format!(
                "{}: table {}: {why}",
                self.metastore.describe(),
                self.name()
            )),
        )
    }

    /// The table's pointer; `None` when the metastore has no such table (or database). A
    /// table that is not an Iceberg table, or whose metadata file is not in the `metadata/`
    /// folder of its location, is refused.
    pub async fn pointer(&self) -> Result<Option<MetadataPointer>> {
        self.check_names()?;
        let Some(entry) = self.metastore.get(&self.database, &self.table).await? else {
            return Ok(None);
        };
        let table_type = entry.table_type.as_deref().unwrap_or("");
        if !table_type.eq_ignore_ascii_case("ICEBERG") {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "{}: table {} is not an Iceberg table (its table_type parameter is '{}')",
                    self.metastore.describe(),
                    self.name(),
                    clean_message(table_type, 60)
                ),
            ));
        }
        let metadata_location = entry
            .metadata_location
            .clone()
            .ok_or_else(|| self.protocol("it has no metadata_location parameter"))?;
        let location = metadata_location
            .rsplit_once("/metadata/")
            .map(|(dir, _)| dir.to_string())
            .filter(|dir| TableLocation::new(dir).is_some())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{}: table {} keeps its metadata at '{}', not in the metadata/ folder of its location (write.metadata.path is not supported)",
                        self.metastore.describe(),
                        self.name(),
                        clean_message(&metadata_location, 200)
                    ),
                )
            })?;
        let table_location = TableLocation::new(&location);
        if !table_location.as_ref().is_some_and(|l| {
            l.relative(&metadata_location)
                .is_some_and(|f| check_metadata_file("", &f).is_ok())
        }) {
            return Err(self.protocol(format!(
                "its metadata_location '{}' is not a metadata file of its location",
                clean_message(&metadata_location, 200)
            )));
        }
        // Java sets the storage descriptor's location to the table's; one elsewhere would
        // send the metastore's other readers elsewhere.
        if let Some(sd) = entry.storage_location.as_deref().filter(|l| !l.is_empty())
            && TableLocation::new(sd) != table_location
        {
            return Err(self.protocol(format!(
                "its storage descriptor's location '{}' is not the location of its metadata '{}'",
                clean_message(sd, 200),
                clean_message(&location, 200)
            )));
        }
        Ok(Some(MetadataPointer {
            metadata_location,
            location,
            entry,
        }))
    }

    /// Reads the metadata file `pointer` names through `storage` (scoped to its location) and
    /// checks that it is the metadata of a table at that location: its head (UUID, location).
    pub(crate) async fn read_metadata(
        &self,
        storage: &ScopedStorage,
        pointer: &MetadataPointer,
    ) -> Result<(Vec<u8>, MetadataHead)> {
        let file = pointer.metadata_file();
        let bytes = read_file(storage, &file).await?;
        let head = metadata_head(&bytes).map_err(|why| self.protocol(format!("{file}: {why}")))?;
        if TableLocation::new(head.location.as_deref().unwrap_or(""))
            != TableLocation::new(&pointer.location)
        {
            return Err(self.protocol(format!(
                "{file} gives the location '{}', not '{}' where the metastore keeps it",
                clean_message(head.location.as_deref().unwrap_or(""), 200),
                clean_message(&pointer.location, 200)
            )));
        }
        Ok((bytes, head))
    }

    /// The table as a round resolves it: its pointer and, from the metadata file read through
    /// `storage` (scoped to the pointer's location, see [`MetadataPointer::location`]), its
    /// UUID.
    pub async fn resolve(
        &self,
        storage: &ScopedStorage,
        pointer: MetadataPointer,
    ) -> Result<ResolvedPointerTable> {
        let (_, head) = self.read_metadata(storage, &pointer).await?;
        Ok(ResolvedPointerTable {
            pointer,
            uuid: head.table_uuid,
        })
    }

    /// The pointer again, checked to be the table `resolved` names: same location (else the
    /// table moved), and the caller checks the UUID where it reads the metadata.
    async fn current(&self, resolved: &ResolvedPointerTable) -> Result<Option<MetadataPointer>> {
        let Some(pointer) = self.pointer().await? else {
            return Ok(None);
        };
        if TableLocation::new(&pointer.location) != TableLocation::new(&resolved.pointer.location) {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!(
                    "{}: table {} is no longer the one this round resolved (its location {} became {}): it was dropped and created again",
                    self.metastore.describe(),
                    self.name(),
                    resolved.pointer.location,
                    pointer.location
                ),
            ));
        }
        Ok(Some(pointer))
    }

    /// The current metadata file (relative) and its content, read through `storage`; `None`
    /// when the metastore no longer has the table.
    pub async fn load(
        &self,
        storage: &ScopedStorage,
        resolved: &ResolvedPointerTable,
    ) -> Result<Option<(String, Vec<u8>)>> {
        let Some(pointer) = self.current(resolved).await? else {
            return Ok(None);
        };
        let (bytes, head) = self.read_metadata(storage, &pointer).await?;
        self.check_uuid(resolved, &head.table_uuid)?;
        Ok(Some((pointer.metadata_file(), bytes)))
    }

    fn check_uuid(&self, resolved: &ResolvedPointerTable, uuid: &str) -> Result<()> {
        if uuid != resolved.uuid {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!(
                    "{}: table {} is no longer the one this round resolved (UUID {} became {}): it was dropped and created again",
                    self.metastore.describe(),
                    self.name(),
                    resolved.uuid,
                    clean_message(uuid, 80)
                ),
            ));
        }
        Ok(())
    }

    /// Points the table at `new_file` (relative, written by the plugin under `metadata/`) if it
    /// still points at `expected_file`, as Java's `GlueTableOperations` and
    /// `HiveTableOperations` commit:
    ///
    /// 1. both files are read through `storage`; the new one must be a successor of the
    ///    expected one that a tiering plugin may make ([`check_successor`]), of the resolved
    ///    table (UUID and location);
    /// 2. the table must still point at `expected_file` (else `Conflict`);
    /// 3. the metastore's conditional update ([`Metastore`]): another writer's update since
    ///    step 2 is `Conflict`; a lost answer `CommitUnknown`.
    pub async fn swap(
        &self,
        storage: &ScopedStorage,
        resolved: &ResolvedPointerTable,
        expected_file: &str,
        new_file: &str,
    ) -> Result<()> {
        self.check_names()?;
        check_metadata_file("the expected metadata file", expected_file)?;
        check_metadata_file("the new metadata file", new_file)?;
        if expected_file == new_file {
            return Err(refused("the new metadata file is the expected one"));
        }
        let location = TableLocation::new(&resolved.pointer.location).ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                "the resolved table has no valid location",
            )
        })?;
        let new = read_file(storage, new_file).await?;
        let old = read_file(storage, expected_file).await?;
        check_successor(&old, &new, &location, &resolved.uuid)?;

        // The check and the update under the metastore's lock, where its writers take one.
        let lock = self.metastore.lock(&self.database, &self.table).await?;
        let swapped = self.swap_checked(resolved, expected_file, new_file).await;
        self.metastore.unlock(lock).await;
        let new_location = swapped?;
        tracing::debug!(
            table = %self.name(),
            metastore = %self.metastore.describe(),
            metadata = %new_location,
            "table pointed at its new metadata file"
        );
        Ok(())
    }

    /// The table still points at `expected_file` (else `Conflict`): points it at `new_file`
    /// with the metastore's conditional update. Returns the new file's absolute name.
    async fn swap_checked(
        &self,
        resolved: &ResolvedPointerTable,
        expected_file: &str,
        new_file: &str,
    ) -> Result<String> {
        let Some(pointer) = self.current(resolved).await? else {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}: table {} no longer exists",
                    self.metastore.describe(),
                    self.name()
                ),
            ));
        };
        let current = pointer.metadata_file();
        if current != expected_file {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!(
                    "{}: table {} points at {current}, not {expected_file}: another writer committed",
                    self.metastore.describe(),
                    self.name()
                ),
            ));
        }
        // The absolute name, spelled as the table's current one is (s3:// or s3a://).
        let new_location = format!(
            "{}/{new_file}",
            pointer
                .metadata_location
                .strip_suffix(&format!("/{current}"))
                .unwrap_or(&pointer.location)
        );
        self.metastore
            .update(&self.database, &self.table, &pointer.entry, &new_location)
            .await?;
        Ok(new_location)
    }
}

/// Reads a metadata file through the table's storage, bounded.
async fn read_file(storage: &ScopedStorage, file: &str) -> Result<Vec<u8>> {
    storage.get(file, MAX_METADATA_BYTES).await.map_err(|e| {
        let kind = match e.kind {
            StorageErrorKind::NotFound => ErrorKind::NotFound,
            StorageErrorKind::InvalidPath => ErrorKind::PluginLimit,
            StorageErrorKind::LimitExceeded => ErrorKind::PluginLimit,
            _ => ErrorKind::Storage,
        };
        Error::new(
            kind,
            format!("reading the metadata file {file}: {}", e.message),
        )
    })
}

fn metadata_head(bytes: &[u8]) -> std::result::Result<MetadataHead, String> {
    let head: MetadataHead = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "not Iceberg table metadata: {}",
            clean_message(&e.to_string(), 200)
        )
    })?;
    if head.table_uuid.is_empty() || head.format_version == 0 {
        return Err("the metadata has no table-uuid or format-version".into());
    }
    Ok(head)
}

/// Fields of the table metadata a tiering plugin's commit may change (snapshots, references,
/// properties, statistics, and what follows from them); every other one must stay as it was.
const CHANGEABLE: &[&str] = &[
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
    "next-row-id",
];

/// Table properties that say where writers write, or that the spec reserves: never changed
/// by a plugin (the same as a REST catalog's refused properties).
const FIXED_PROPERTIES: &[&str] = &[
    "write.metadata.path",
    "write.data.path",
    "write.object-storage.path",
    "write.folder-storage.path",
    "write.location-provider.impl",
    "format-version",
    "uuid",
];

/// Checks that `new` (a metadata file a plugin wrote) is a successor of `old` (the one the
/// table points at) that a tiering plugin may commit: the table `uuid` at `location`, with
/// only [`CHANGEABLE`] fields changed, no [`FIXED_PROPERTIES`] changed, snapshots it kept
/// unchanged, and every file a new snapshot, statistics or `metadata-log` entry names under
/// `location`. Refusals are `PluginLimit` (the plugin sees `invalid-input`).
pub fn check_successor(old: &[u8], new: &[u8], location: &TableLocation, uuid: &str) -> Result<()> {
    let parse = |what: &str, bytes: &[u8]| -> Result<Map<String, Value>> {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(refused(format!(
                "the {what} metadata file is not a JSON object"
            ))),
            Err(e) => Err(refused(format!(
                "the {what} metadata file is not JSON: {}",
                clean_message(&e.to_string(), 200)
            ))),
        }
    };
    let old = parse("expected", old)?;
    let new = parse("new", new)?;
    if new.get("table-uuid").and_then(Value::as_str) != Some(uuid) {
        return Err(refused(format!(
            "the new metadata names another table (table-uuid is not {uuid})"
        )));
    }
    if new
        .get("location")
        .and_then(Value::as_str)
        .and_then(TableLocation::new)
        .as_ref()
        != Some(location)
    {
        return Err(refused(format!(
            "the new metadata moves the table from its location {}",
            location.as_str()
        )));
    }
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for key in keys {
        if !CHANGEABLE.contains(&key.as_str()) && old.get(key) != new.get(key) {
            return Err(refused(format!(
                "the new metadata changes the table's '{}', which a tiering plugin never changes",
                clean_message(key, 80)
            )));
        }
    }
    let property =
        |m: &Map<String, Value>, key: &str| m.get("properties").and_then(|p| p.get(key)).cloned();
    for key in FIXED_PROPERTIES {
        if property(&old, key) != property(&new, key) {
            return Err(refused(format!(
                "the new metadata changes the table property '{key}', which is the host's and the catalog's, not a plugin's"
            )));
        }
    }
    let check = |what: &str, path: Option<&str>| -> Result<()> {
        match path {
            Some(p) if location.contains(p) => Ok(()),
            Some(p) => Err(refused(format!(
                "{what} '{}' is not under the table's location {}",
                clean_message(p, 200),
                location.as_str()
            ))),
            None => Err(refused(format!("{what} is missing"))),
        }
    };
    let array = |m: &Map<String, Value>, key: &str| -> Vec<Value> {
        m.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let old_snapshots: BTreeMap<i64, Value> = array(&old, "snapshots")
        .into_iter()
        .filter_map(|s| Some((s.get("snapshot-id")?.as_i64()?, s)))
        .collect();
    for snapshot in array(&new, "snapshots") {
        let id = snapshot
            .get("snapshot-id")
            .and_then(Value::as_i64)
            .ok_or_else(|| refused("a snapshot of the new metadata has no snapshot-id"))?;
        match old_snapshots.get(&id) {
            Some(kept) if *kept == snapshot => {}
            Some(_) => {
                return Err(refused(format!(
                    "the new metadata changes snapshot {id}, which a commit never does"
                )));
            }
            None => {
                check(
                    &format!("snapshot {id}'s manifest-list"),
                    snapshot.get("manifest-list").and_then(Value::as_str),
                )?;
                if snapshot.get("manifests").is_some() {
                    return Err(refused(format!(
                        "snapshot {id} lists its manifests inline ('manifests'), not in a manifest list"
                    )));
                }
            }
        }
    }
    for key in ["statistics", "partition-statistics"] {
        let before = array(&old, key);
        for entry in array(&new, key) {
            if !before.contains(&entry) {
                check(
                    &format!("a {key} file"),
                    entry.get("statistics-path").and_then(Value::as_str),
                )?;
            }
        }
    }
    let before = array(&old, "metadata-log");
    for entry in array(&new, "metadata-log") {
        if !before.contains(&entry) {
            check(
                "a metadata-log entry",
                entry.get("metadata-file").and_then(Value::as_str),
            )?;
        }
    }
    Ok(())
}
