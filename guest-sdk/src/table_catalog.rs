//! The catalog that keeps the current table's metadata (contract 0.3.5's `table-catalog`
//! import, and 0.3.6's `version-catalog` for a catalog that keeps the table's versions), behind
//! a trait so that format code runs natively in tests too.
//!
//! An instance serves one table, and the host scopes the import to it: the host names the
//! table, the catalog's endpoint and its credentials, so a plugin only ever says *what* to
//! change, never *where*. [`current`] is the catalog of this instance: the host's import inside
//! the sandbox, and natively [`FilesOnly`] unless a test [`install`]s another.

use std::cell::RefCell;
use std::rc::Rc;

use crate::error::{Error, Result};

/// How the table's current metadata is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogKind {
    /// By files alone in the table's directory: commits publish version files with
    /// put-if-absent.
    Files,
    /// By an Iceberg REST catalog: commits are update lists under requirements.
    IcebergRest,
    /// By a metastore holding the location of the current metadata file.
    MetadataPointer,
    /// By a catalog that keeps the sequence of the table's versions (Paimon's REST catalog):
    /// the table's files are written as for [`CatalogKind::Files`], but the latest version is
    /// the catalog's ([`TableCatalog::latest_version`]) and a version is committed through it
    /// ([`TableCatalog::commit_version`]), never put by the plugin.
    Versions,
}

/// The table's current state as its catalog reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableState {
    /// The current metadata file, relative to the table's location.
    pub metadata_file: String,
    /// Its content.
    pub metadata: Vec<u8>,
}

/// The catalog of the instance's table. Errors follow the import's contract: `conflict` is a
/// refused change on a moved table (a lost race), an error whose message holds
/// [`crate::commit::UNKNOWN_OUTCOME`] may or may not have been applied.
pub trait TableCatalog {
    fn kind(&self) -> CatalogKind;
    /// The table's current state; `None` when the catalog has no such table.
    fn load(&self) -> Result<Option<TableState>>;
    /// Creates the table from a format-specific request (Iceberg's `CreateTableRequest`).
    fn create(&self, request: &str) -> Result<TableState>;
    /// Applies `updates` if every one of `requirements` holds (JSON arrays).
    fn commit(&self, requirements: &str, updates: &str) -> Result<TableState>;
    /// Points the table at `new_file` if it still points at `expected_file`.
    fn swap_metadata_file(&self, expected_file: &str, new_file: &str) -> Result<()>;
    /// [`CatalogKind::Versions`]: the latest version's JSON; `None` before the first commit.
    /// Other catalogs refuse it.
    fn latest_version(&self) -> Result<Option<String>> {
        Err(not_versions())
    }
    /// [`CatalogKind::Versions`]: commits `version` with `statistics` (JSON); `false` when
    /// another writer committed that version first (a lost race). Other catalogs refuse it.
    fn commit_version(&self, version: &str, statistics: &str) -> Result<bool> {
        let _ = (version, statistics);
        Err(not_versions())
    }
}

fn not_versions() -> Error {
    Error::unsupported("the table's catalog does not keep its versions")
}

/// A table kept by its files alone: every catalog call but [`TableCatalog::kind`] is refused.
pub struct FilesOnly;

impl TableCatalog for FilesOnly {
    fn kind(&self) -> CatalogKind {
        CatalogKind::Files
    }
    fn load(&self) -> Result<Option<TableState>> {
        Err(files_only())
    }
    fn create(&self, _: &str) -> Result<TableState> {
        Err(files_only())
    }
    fn commit(&self, _: &str, _: &str) -> Result<TableState> {
        Err(files_only())
    }
    fn swap_metadata_file(&self, _: &str, _: &str) -> Result<()> {
        Err(files_only())
    }
}

fn files_only() -> Error {
    Error::unsupported("the table is kept by its files alone: it has no catalog to call")
}

/// The host's `table-catalog` import.
#[cfg(target_arch = "wasm32")]
pub struct HostCatalog;

#[cfg(target_arch = "wasm32")]
mod host {
    use super::{CatalogKind, HostCatalog, TableCatalog, TableState};
    use crate::bindings::fluss::lake::table_catalog as wit;
    use crate::bindings::fluss::lake::version_catalog as versions;
    use crate::error::Result;

    fn state(s: wit::TableState) -> TableState {
        TableState {
            metadata_file: s.metadata_file,
            metadata: s.metadata,
        }
    }

    impl TableCatalog for HostCatalog {
        fn kind(&self) -> CatalogKind {
            if versions::keeps_versions() {
                return CatalogKind::Versions;
            }
            match wit::kind() {
                wit::CatalogKind::Files => CatalogKind::Files,
                wit::CatalogKind::IcebergRest => CatalogKind::IcebergRest,
                wit::CatalogKind::MetadataPointer => CatalogKind::MetadataPointer,
            }
        }
        fn load(&self) -> Result<Option<TableState>> {
            Ok(wit::load_table()?.map(state))
        }
        fn create(&self, request: &str) -> Result<TableState> {
            Ok(state(wit::create_table(request)?))
        }
        fn commit(&self, requirements: &str, updates: &str) -> Result<TableState> {
            Ok(state(wit::commit_table(requirements, updates)?))
        }
        fn swap_metadata_file(&self, expected_file: &str, new_file: &str) -> Result<()> {
            Ok(wit::swap_metadata_file(expected_file, new_file)?)
        }
        fn latest_version(&self) -> Result<Option<String>> {
            Ok(versions::latest_version()?)
        }
        fn commit_version(&self, version: &str, statistics: &str) -> Result<bool> {
            Ok(versions::commit_version(version, statistics)?)
        }
    }
}

thread_local! {
    static INSTALLED: RefCell<Option<Rc<dyn TableCatalog>>> = const { RefCell::new(None) };
}

/// The catalog of this instance's table.
pub fn current() -> Rc<dyn TableCatalog> {
    if let Some(installed) = INSTALLED.with(|c| c.borrow().clone()) {
        return installed;
    }
    #[cfg(target_arch = "wasm32")]
    {
        Rc::new(HostCatalog)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        Rc::new(FilesOnly)
    }
}

/// Makes `catalog` the [`current`] one of this thread until the guard drops (native tests:
/// inside the sandbox the host's import is the only catalog).
#[cfg(not(target_arch = "wasm32"))]
pub fn install(catalog: Rc<dyn TableCatalog>) -> Installed {
    let previous = INSTALLED.with(|c| c.borrow_mut().replace(catalog));
    Installed { previous }
}

/// Restores the previously installed catalog when dropped.
#[cfg(not(target_arch = "wasm32"))]
pub struct Installed {
    previous: Option<Rc<dyn TableCatalog>>,
}

#[cfg(not(target_arch = "wasm32"))]
impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        INSTALLED.with(|c| *c.borrow_mut() = previous);
    }
}
