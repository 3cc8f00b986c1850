//! The `table-catalog` import (contract 0.3.5): the catalog of the one table an instance
//! serves, as the host resolved it.
//!
//! The host speaks the catalog's protocol itself ([`crate::catalog`]) and hands the plugin a
//! capability scoped to one table: the plugin names no endpoint, no table and no credential,
//! and every request it sends is bounded and checked by [`crate::catalog`] before it leaves
//! the host (only snapshot, reference, property and statistics changes; files under the
//! table's location; the table's own UUID asserted). What a hostile plugin can do with it is
//! what it can do with its storage: change its own table.

use super::bindings::fluss::lake::{table_catalog, types};
use super::host_api::InstanceState;

/// The catalog an instance's table is kept by.
#[derive(Clone, Default)]
pub enum TableCatalogScope {
    /// By its files alone (no catalog calls).
    #[default]
    Files,
}

fn unsupported(what: &str) -> types::LakeError {
    types::LakeError {
        kind: types::ErrorKind::Unsupported,
        message: format!("{what}: the table is kept by its files alone, not by a catalog"),
    }
}

impl table_catalog::Host for InstanceState {
    async fn kind(&mut self) -> table_catalog::CatalogKind {
        match self.catalog {
            TableCatalogScope::Files => table_catalog::CatalogKind::Files,
        }
    }

    async fn load_table(&mut self) -> Result<Option<table_catalog::TableState>, types::LakeError> {
        Err(unsupported("load-table"))
    }

    async fn create_table(
        &mut self,
        _request: String,
    ) -> Result<table_catalog::TableState, types::LakeError> {
        Err(unsupported("create-table"))
    }

    async fn commit_table(
        &mut self,
        _requirements: String,
        _updates: String,
    ) -> Result<table_catalog::TableState, types::LakeError> {
        Err(unsupported("commit-table"))
    }

    async fn swap_metadata_file(
        &mut self,
        _expected_file: String,
        _new_file: String,
    ) -> Result<(), types::LakeError> {
        Err(unsupported("swap-metadata-file"))
    }
}
