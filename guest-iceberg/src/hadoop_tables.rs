//! Table metadata versions as Iceberg's Hadoop catalog (`HadoopTableOperations`) keeps them,
//! which is what Fluss's coordinator creates with `datalake.iceberg.type: hadoop`:
//! `metadata/v<N>.metadata.json` plus a `metadata/version-hint.text` holding `N`.
//!
//! A commit publishes `v<N+1>` with put-if-absent, so of two writers racing for the same
//! version exactly one wins and the other re-reads and retries; the hint is only a hint
//! (readers, like Java's, probe forward from it), so a crash between the two writes loses
//! nothing.

use fluss_lake_guest_sdk::commit::{self, Published};
use fluss_lake_guest_sdk::memo::FileMemo;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result};

use crate::metadata::TableMetadata;
use crate::tables::Loaded;

pub const METADATA_DIR: &str = "metadata";
pub const VERSION_HINT: &str = "metadata/version-hint.text";
const VERSION_HINT_CRC: &str = "metadata/.version-hint.text.crc";

pub fn metadata_path(version: u64) -> String {
    format!("{METADATA_DIR}/v{version}.metadata.json")
}

fn version_of(name: &str) -> Option<u64> {
    name.strip_prefix('v')?
        .strip_suffix(".metadata.json")?
        .parse()
        .ok()
}

/// The newest version: the hint, or the highest listed version, then probing forward while
/// a next version exists (the hint may lag behind a commit).
pub fn current_version(storage: &dyn Storage) -> Result<Option<u64>> {
    let hinted = storage
        .get_opt(VERSION_HINT)?
        .and_then(|b| String::from_utf8_lossy(&b).trim().parse::<u64>().ok());
    let mut version = match hinted {
        Some(v) if storage.head(&metadata_path(v))?.is_some() => v,
        _ => {
            let listed = storage
                .list(METADATA_DIR)?
                .iter()
                .filter_map(|m| version_of(m.path.rsplit('/').next().unwrap_or("")))
                .max();
            match listed {
                Some(v) => v,
                None => {
                    if storage
                        .list(METADATA_DIR)?
                        .iter()
                        .any(|m| m.path.ends_with(".gz.metadata.json"))
                    {
                        return Err(Error::unsupported(
                            "gzip-compressed Iceberg metadata files are not supported",
                        ));
                    }
                    return Ok(None);
                }
            }
        }
    };
    while storage.head(&metadata_path(version + 1))?.is_some() {
        version += 1;
    }
    Ok(Some(version))
}

/// The current metadata, or `None` when the table does not exist.
pub fn load(storage: &dyn Storage) -> Result<Option<Loaded>> {
    load_through(storage, None)
}

thread_local! {
    static LAST_METADATA: FileMemo<TableMetadata> = const { FileMemo::new() };
}

/// [`load`] for a writer of table `table_id`: the current version is found as before, but
/// its file is read only when it is not the one this plugin instance read last
/// ([`FileMemo`]: a round's splits are written one after another by the same instances, and
/// the metadata grows with the table's snapshots).
pub fn load_for_writer(storage: &dyn Storage, table_id: i64) -> Result<Option<Loaded>> {
    load_through(storage, Some(table_id))
}

fn load_through(storage: &dyn Storage, writer_of: Option<i64>) -> Result<Option<Loaded>> {
    let Some(version) = current_version(storage)? else {
        return Ok(None);
    };
    let file = metadata_path(version);
    let read = || {
        let bytes = storage.get(&file)?;
        TableMetadata::parse(&bytes).map_err(|e| e.context(format!("reading {file}")))
    };
    let metadata = match writer_of {
        Some(table_id) => match storage.head(&file)? {
            Some(meta) => LAST_METADATA.with(|memo| memo.get_or_read(table_id, &meta, read))?,
            None => read()?,
        },
        None => read()?,
    };
    Ok(Some(Loaded {
        version,
        file,
        metadata,
    }))
}

/// Publishes `metadata` as the version after `base` (or as version 1 for a new table)
/// through the commit kit's put-if-absent; `conflict` when another writer published that
/// version first. Commits of snapshots go through [`commit_snapshot`](crate::producer::commit_snapshot).
pub fn publish(storage: &dyn Storage, base: Option<u64>, metadata: &TableMetadata) -> Result<u64> {
    let version = base.map_or(1, |v| v + 1);
    match commit::publish(storage, &metadata_path(version), &metadata.to_bytes()?)? {
        Published::Ours => {}
        Published::Theirs => {
            return Err(Error::conflict(format!(
                "Iceberg metadata version {version} was committed concurrently"
            )));
        }
    }
    update_hint(storage, version);
    Ok(version)
}

/// Points the version hint at `version`, best effort like Java's: readers probe past a stale
/// hint. Hadoop's local file system keeps a `.crc` checksum beside files Java wrote; a stale
/// one would make Java distrust the new hint, so it goes (Java reads files without a checksum
/// file unverified).
pub fn update_hint(storage: &dyn Storage, version: u64) {
    let _ = storage.delete(VERSION_HINT_CRC);
    if let Err(e) = storage.put(VERSION_HINT, version.to_string().as_bytes()) {
        fluss_lake_guest_sdk::warn!("could not update {VERSION_HINT}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::ErrorKind;
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::log_table;

    use super::*;
    use crate::partition::PartitionSpec;
    use crate::schema::IcebergSchema;

    #[test]
    fn versions_hints_and_conflicts() {
        let s = MemoryStorage::new();
        assert!(load(&s).unwrap().is_none());
        let t = log_table("db", "t", &[("a", "INT", true)], &[], 1, &[]);
        let schema = IcebergSchema::for_fluss_table(&t).unwrap();
        let spec = PartitionSpec::for_fluss_table(&t, &schema).unwrap();
        let m = TableMetadata::new_table("file:/x", &schema, &spec, vec![], "u", 1);
        assert_eq!(publish(&s, None, &m).unwrap(), 1);
        assert_eq!(s.get(VERSION_HINT).unwrap(), b"1");
        // The same bytes again are this writer's own version (a retried request that landed);
        // another writer's version 1 is a conflict.
        assert_eq!(publish(&s, None, &m).unwrap(), 1);
        let rival = TableMetadata::new_table("file:/x", &schema, &spec, vec![], "u2", 1);
        assert_eq!(
            publish(&s, None, &rival).unwrap_err().kind(),
            ErrorKind::Conflict
        );
        assert_eq!(publish(&s, Some(1), &m).unwrap(), 2);
        // a stale hint is probed past; a missing one is replaced by listing
        s.put(VERSION_HINT, b"1").unwrap();
        assert_eq!(load(&s).unwrap().unwrap().version, 2);
        s.delete(VERSION_HINT).unwrap();
        assert_eq!(current_version(&s).unwrap(), Some(2));
        let loaded = load(&s).unwrap().unwrap();
        assert_eq!(
            loaded.metadata_file().unwrap(),
            "file:/x/metadata/v2.metadata.json"
        );
    }

    #[test]
    fn a_writer_sees_the_current_version_of_its_own_table_through_the_memo() {
        let t = log_table("db", "t", &[("a", "INT", true)], &[], 1, &[]);
        let schema = IcebergSchema::for_fluss_table(&t).unwrap();
        let spec = PartitionSpec::for_fluss_table(&t, &schema).unwrap();
        let (one, other) = (MemoryStorage::new(), MemoryStorage::new());
        let first = TableMetadata::new_table("file:/one", &schema, &spec, vec![], "u", 1);
        publish(&one, None, &first).unwrap();
        let theirs = TableMetadata::new_table("file:/other", &schema, &spec, vec![], "u2", 1);
        publish(&other, None, &theirs).unwrap();
        let metadata = |s: &MemoryStorage, id| load_for_writer(s, id).unwrap().unwrap().metadata;
        assert_eq!(metadata(&one, 1), first);
        assert_eq!(metadata(&other, 2), theirs);
        assert_eq!(metadata(&one, 1), first);
        // A newer version is seen at once.
        let next = TableMetadata::new_table("file:/one", &schema, &spec, vec![], "u3", 1);
        publish(&one, Some(1), &next).unwrap();
        let loaded = load_for_writer(&one, 1).unwrap().unwrap();
        assert_eq!((loaded.version, loaded.metadata), (2, next));
        assert!(load_for_writer(&MemoryStorage::new(), 1).unwrap().is_none());
    }
}
