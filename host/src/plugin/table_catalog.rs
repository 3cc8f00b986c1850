//! The `table-catalog` import (contract 0.3.5) and the `version-catalog` import (0.3.6): the
//! catalog of the one table an instance serves, as the host resolved it.
//!
//! The host speaks the catalog's protocol itself ([`crate::catalog`]) and hands the plugin a
//! capability scoped to one table: the plugin names no endpoint, no table and no credential,
//! and every request it sends is bounded and checked by [`crate::catalog`] before it leaves
//! the host (only snapshot, reference, property and statistics changes; files under the
//! table's location; the table's own UUID asserted). What a hostile plugin can do with it is
//! what it can do with its storage: change its own table.
//!
//! A table of a Glue catalog or a Hive Metastore ([`PointerScope`], kind `metadata-pointer`) is
//! read and swapped through the instance's storage, which is scoped to the table's location:
//! the host reads the file the metastore points at and hands its content to the plugin, and
//! checks a new file the plugin wrote before it points the table at it
//! ([`crate::catalog::pointer`]).
//!
//! A table of Paimon's REST catalog ([`VersionScope`]) is written as a filesystem catalog's
//! table (`table-catalog.kind` answers `files`), but its snapshots are the catalog's: the
//! plugin reads the latest and commits the next through `version-catalog`, and the host checks
//! each snapshot ([`crate::catalog::paimon_rest::check_version`]) and names the table's id.

use super::bindings::fluss::lake::{table_catalog, types, version_catalog};
use super::host_api::InstanceState;
use crate::catalog::pointer::ResolvedPointerTable;
use crate::catalog::{LoadedTable, PaimonRestTable, PointerTable, RestTable};
use crate::error::{Error, ErrorKind};

/// The catalog an instance's table is kept by.
#[derive(Clone, Default)]
pub enum TableCatalogScope {
    /// By its files alone (no catalog calls).
    #[default]
    Files,
    /// By an Iceberg REST catalog.
    Rest(RestScope),
    /// By a metastore's pointer to the current metadata file (AWS Glue, Hive Metastore).
    Pointer(PointerScope),
    /// By a catalog that keeps the table's versions (Paimon's REST catalog).
    Versions(VersionScope),
}

/// One table of Paimon's REST catalog, as the host resolved it (it always exists: the
/// coordinator creates the catalog's tables).
#[derive(Clone)]
pub struct VersionScope {
    pub table: std::sync::Arc<PaimonRestTable>,
    /// The table's id as the catalog answered it when the round resolved the table: every
    /// commit names it, so a table dropped and created again is never committed to.
    pub table_id: String,
}

/// One table of a metastore, as the host resolved it (it always exists: the host does not
/// create metastore tables).
#[derive(Clone)]
pub struct PointerScope {
    pub table: std::sync::Arc<PointerTable>,
    /// Its location (the root of the instance's storage) and UUID, checked on every call.
    pub resolved: ResolvedPointerTable,
}

/// One table of an Iceberg REST catalog, as the host resolved it.
#[derive(Clone)]
pub struct RestScope {
    pub table: std::sync::Arc<RestTable>,
    /// The table as the host loaded it when it resolved the round's table (its location is
    /// the root of the instance's storage, its UUID is asserted by every commit); `None`
    /// before the table exists (a table the host routes and creates).
    pub resolved: Option<Resolved>,
}

/// What the host fixed about a catalog's table when it resolved it.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The table's location (absolute), as the catalog answered.
    pub location: String,
    pub uuid: String,
}

fn lake_error(kind: types::ErrorKind, message: impl Into<String>) -> types::LakeError {
    types::LakeError {
        kind,
        message: message.into(),
    }
}

fn unsupported(what: &str) -> types::LakeError {
    lake_error(
        types::ErrorKind::Unsupported,
        format!("{what}: the table is not kept by a catalog that takes this call"),
    )
}

/// The host's error as the plugin sees it. An outcome the catalog left unknown carries the
/// words the SDK's commit kit recognises, so that it keeps every file.
fn to_lake(e: Error) -> types::LakeError {
    let kind = match e.kind() {
        ErrorKind::Conflict => types::ErrorKind::Conflict,
        ErrorKind::NotFound => types::ErrorKind::NotFound,
        ErrorKind::AlreadyExists => types::ErrorKind::AlreadyExists,
        ErrorKind::PluginLimit | ErrorKind::Config => types::ErrorKind::InvalidInput,
        ErrorKind::Unsupported => types::ErrorKind::Unsupported,
        ErrorKind::Internal => types::ErrorKind::Internal,
        _ => types::ErrorKind::Io,
    };
    // `CommitUnknown` displays as "commit outcome unknown: …", the words the SDK's commit kit
    // recognises.
    lake_error(kind, e.to_string())
}

impl InstanceState {
    fn rest(&self, call: &str) -> Result<RestScope, types::LakeError> {
        match &self.catalog {
            TableCatalogScope::Rest(scope) => Ok(scope.clone()),
            _ => Err(unsupported(call)),
        }
    }

    fn versions(&self, call: &str) -> Result<VersionScope, types::LakeError> {
        match &self.catalog {
            TableCatalogScope::Versions(scope) => Ok(scope.clone()),
            _ => Err(unsupported(call)),
        }
    }

    /// The metastore scope and the instance's storage (scoped to the table's location).
    fn pointer(
        &self,
        call: &str,
    ) -> Result<(PointerScope, crate::plugin::storage::ScopedStorage), types::LakeError> {
        match &self.catalog {
            TableCatalogScope::Pointer(scope) => {
                let storage = self.storage.clone().ok_or_else(|| {
                    lake_error(
                        types::ErrorKind::InvalidInput,
                        format!("{call}: storage is not available outside a table's round"),
                    )
                })?;
                Ok((scope.clone(), storage))
            }
            _ => Err(unsupported(call)),
        }
    }

    /// The state the plugin sees of `loaded`: refused when it is not the table the host
    /// resolved (dropped and created again under the same name).
    fn state(
        scope: &RestScope,
        loaded: LoadedTable,
    ) -> Result<table_catalog::TableState, types::LakeError> {
        if let Some(r) = &scope.resolved
            && r.uuid != loaded.uuid
        {
            return Err(lake_error(
                types::ErrorKind::Conflict,
                format!(
                    "the catalog's table is no longer the one this round resolved (UUID {} became {}): it was dropped and created again",
                    r.uuid, loaded.uuid
                ),
            ));
        }
        let metadata_file = loaded.metadata_file().ok_or_else(|| {
            lake_error(
                types::ErrorKind::Io,
                format!(
                    "the catalog keeps the table's metadata at {}, outside its location {}",
                    loaded.metadata_location, loaded.location
                ),
            )
        })?;
        Ok(table_catalog::TableState {
            metadata_file,
            metadata: loaded.metadata.to_vec(),
        })
    }
}

impl table_catalog::Host for InstanceState {
    async fn kind(&mut self) -> table_catalog::CatalogKind {
        match self.catalog {
            // A version catalog's table is written as one kept by its files; its versions go
            // through `version-catalog`.
            TableCatalogScope::Files | TableCatalogScope::Versions(_) => {
                table_catalog::CatalogKind::Files
            }
            TableCatalogScope::Rest(_) => table_catalog::CatalogKind::IcebergRest,
            TableCatalogScope::Pointer(_) => table_catalog::CatalogKind::MetadataPointer,
        }
    }

    async fn load_table(&mut self) -> Result<Option<table_catalog::TableState>, types::LakeError> {
        if matches!(self.catalog, TableCatalogScope::Pointer(_)) {
            let (scope, storage) = self.pointer("load-table")?;
            let loaded = scope
                .table
                .load(&storage, &scope.resolved)
                .await
                .map_err(to_lake)?;
            return Ok(
                loaded.map(|(metadata_file, metadata)| table_catalog::TableState {
                    metadata_file,
                    metadata,
                }),
            );
        }
        let scope = self.rest("load-table")?;
        match scope.table.load().await.map_err(to_lake)? {
            Some(loaded) => Ok(Some(Self::state(&scope, loaded)?)),
            None => Ok(None),
        }
    }

    async fn create_table(
        &mut self,
        request: String,
    ) -> Result<table_catalog::TableState, types::LakeError> {
        let scope = self.rest("create-table")?;
        let loaded = scope
            .table
            .create(request.as_bytes())
            .await
            .map_err(to_lake)?;
        Self::state(&scope, loaded)
    }

    async fn commit_table(
        &mut self,
        requirements: String,
        updates: String,
    ) -> Result<table_catalog::TableState, types::LakeError> {
        let scope = self.rest("commit-table")?;
        let Some(resolved) = scope.resolved.clone() else {
            return Err(lake_error(
                types::ErrorKind::NotFound,
                "commit-table: the table did not exist when the round resolved it",
            ));
        };
        let loaded = scope
            .table
            .commit(
                &resolved.uuid,
                &resolved.location,
                requirements.as_bytes(),
                updates.as_bytes(),
            )
            .await
            .map_err(to_lake)?;
        Self::state(&scope, loaded)
    }

    async fn swap_metadata_file(
        &mut self,
        expected_file: String,
        new_file: String,
    ) -> Result<(), types::LakeError> {
        let (scope, storage) = self.pointer("swap-metadata-file")?;
        scope
            .table
            .swap(&storage, &scope.resolved, &expected_file, &new_file)
            .await
            .map_err(to_lake)
    }
}

impl version_catalog::Host for InstanceState {
    async fn keeps_versions(&mut self) -> bool {
        matches!(self.catalog, TableCatalogScope::Versions(_))
    }

    async fn latest_version(&mut self) -> Result<Option<String>, types::LakeError> {
        let scope = self.versions("latest-version")?;
        scope.table.latest_snapshot().await.map_err(to_lake)
    }

    async fn commit_version(
        &mut self,
        version: String,
        statistics: String,
    ) -> Result<bool, types::LakeError> {
        let scope = self.versions("commit-version")?;
        scope
            .table
            .commit(&scope.table_id, &version, &statistics)
            .await
            .map_err(to_lake)
    }
}
