//! Test fixture: a well-formed plugin for the made-up format `test-null`.
//!
//! The end-to-end tests load it alone to prove that a table whose lake format no plugin
//! serves is reported failed at run time and that nothing is written to its lake. Every
//! table operation refuses with `unsupported`, so even a misrouted table cannot be touched.
//!
//! It exports the `lake-plugin` world only, without the optional `maintenance` export of
//! contract 0.3.1 (its own bindings, not the SDK's): the tests that load it prove that such a
//! plugin still loads.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

/// Bindings of the `lake-plugin` world alone.
mod bindings {
    wit_bindgen::generate!({ path: "../../../wit", world: "lake-plugin" });
}

use bindings::exports::fluss::lake::plugin::{PluginInfo, TableLayout};
use bindings::exports::fluss::lake::{catalog, committer, plugin, writer};
use bindings::fluss::lake::types::{
    CommitResult, CommittedSnapshot, CommitterContext, ErrorKind as WitErrorKind, LakeError,
    RowBatch, TableInfo, WriteResult, WriterContext,
};
use fluss_lake_guest_sdk::CONTRACT_VERSION;

struct Null;

fn refuse<T>() -> Result<T, LakeError> {
    Err(LakeError {
        kind: WitErrorKind::Unsupported,
        message: "the test-null plugin tiers no table".into(),
    })
}

impl plugin::Guest for Null {
    fn info() -> PluginInfo {
        PluginInfo {
            format: "test-null".into(),
            plugin_version: env!("CARGO_PKG_VERSION").into(),
            contract_version: CONTRACT_VERSION.into(),
            layout: TableLayout {
                database_suffix: String::new(),
                table_suffix: String::new(),
            },
        }
    }
    fn validate_table(_table: TableInfo, _config: Vec<(String, String)>) -> Result<(), LakeError> {
        refuse()
    }
}

impl catalog::Guest for Null {
    fn create_table_if_missing(
        _table: TableInfo,
        _config: Vec<(String, String)>,
    ) -> Result<bool, LakeError> {
        refuse()
    }
}

struct NullWriter;

impl writer::GuestLakeWriter for NullWriter {
    fn open(_context: WriterContext) -> Result<writer::LakeWriter, LakeError> {
        refuse()
    }
    fn write(&self, _batch: RowBatch) -> Result<(), LakeError> {
        refuse()
    }
    fn complete(&self) -> Result<WriteResult, LakeError> {
        refuse()
    }
}

impl writer::Guest for Null {
    type LakeWriter = NullWriter;
}

struct NullCommitter;

impl committer::GuestLakeCommitter for NullCommitter {
    fn open(_context: CommitterContext) -> Result<committer::LakeCommitter, LakeError> {
        refuse()
    }
    fn to_committable(&self, _write_results: Vec<Vec<u8>>) -> Result<Vec<u8>, LakeError> {
        refuse()
    }
    fn commit(
        &self,
        _committable: Vec<u8>,
        _properties: Vec<(String, String)>,
        _tiered_base: Option<i64>,
    ) -> Result<CommitResult, LakeError> {
        refuse()
    }
    fn abort(&self, _committable: Vec<u8>) -> Result<(), LakeError> {
        refuse()
    }
    fn get_missing_lake_snapshot(
        &self,
        _id: Option<i64>,
    ) -> Result<Option<CommittedSnapshot>, LakeError> {
        refuse()
    }
}

impl committer::Guest for Null {
    type LakeCommitter = NullCommitter;
}

// Only on wasm32: the exported symbols' names contain `:`, which native linkers refuse (the
// native build is for lints only).
#[cfg(target_arch = "wasm32")]
bindings::export!(Null with_types_in bindings);
