//! Apache Paimon lake-format plugin for the Fluss lake tiering host.
//!
//! Writes Paimon tables the way Fluss 0.9's Java Paimon plugin (Paimon 1.3) does, so that
//! Paimon readers (Java, pypaimon) read them: append (log) tables, bucket-unaware or with
//! fixed buckets, and primary-key tables (merge-tree level-0 files with deduplicate merging
//! and input changelog), partitioned or not. The format logic is plain Rust over the SDK's
//! [`Storage`](fluss_lake_guest_sdk::storage::Storage) trait ([`writer`], [`committer`],
//! [`catalog`]) so it runs natively in tests and benchmarks; [`Paimon`] hands it to the SDK's
//! WIT adapter.
//!
//! Table maintenance ([`maintenance`], when the host asks after a round) does what Paimon's
//! own commit does for a table that is not `write-only`: [`compact`]ion of data files
//! (universal compaction of primary-key buckets, small-file compaction of bucketed append
//! tables, committed as `COMPACT` snapshots of its own commit user), then snapshot
//! [`expire`]y.

pub mod append_writer;
pub mod binary_row;
pub mod bucket;
pub mod catalog;
pub mod commit_message;
pub mod committer;
pub mod compact;
pub mod expire;
#[cfg(test)]
mod fault_tests;
pub mod maintenance;
pub mod manifest;
pub mod merge_tree;
pub mod rows;
pub mod schema;
pub mod snapshot;
pub mod stats;
pub mod table;
pub mod types;
pub mod writer;

use fluss_lake_guest_sdk::Result;
use fluss_lake_guest_sdk::layout::Layout;
use fluss_lake_guest_sdk::plugin::LakeFormat;
use fluss_lake_guest_sdk::storage::HostStorage;
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest, TableInfo};

/// The format name this plugin writes (Fluss `table.datalake.format`).
pub const FORMAT: &str = "paimon";

/// The plugin: Paimon's table operations, writer and committer over the host's storage.
pub struct Paimon;

impl LakeFormat for Paimon {
    const FORMAT: &'static str = FORMAT;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Writer = writer::PaimonWriter<HostStorage>;
    type Committer = committer::PaimonCommitter<HostStorage>;

    const LAYOUT: Layout = catalog::LAYOUT;
    fn validate_table(
        storage: &HostStorage,
        table: &TableInfo,
        _config: &[(String, String)],
    ) -> Result<()> {
        catalog::validate_table(storage, table)
    }
    fn create_table_if_missing(
        storage: &HostStorage,
        table: &TableInfo,
        config: &[(String, String)],
    ) -> Result<bool> {
        catalog::create_table_if_missing(storage, table, config)
    }
    fn maintain(
        storage: &HostStorage,
        _table: &TableInfo,
        config: &[(String, String)],
        request: &MaintenanceRequest,
    ) -> Result<MaintenanceReport> {
        maintenance::maintain(storage, config, request)
    }
}

fluss_lake_guest_sdk::export_lake_format!(crate::Paimon);
