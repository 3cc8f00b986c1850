//! Apache Iceberg lake-format plugin for the Fluss lake tiering host.
//!
//! Writes Iceberg format-version 2 tables the way Fluss 0.9's Java Iceberg plugin (Iceberg
//! 1.10) does, so that Fluss's union read and any Iceberg engine read them: Hadoop-catalog
//! metadata versions, Parquet data files with every column's field id and the `__bucket`,
//! `__offset`, `__timestamp` system columns, Avro manifests with field ids and per-file
//! metrics, and for primary-key tables equality and position deletes committed as one row
//! delta per round; every commit merges manifests as Java's `MergeAppend` does
//! (`commit.manifest-merge.enabled`, [`merge`]). Table maintenance ([`maintenance`]) expires
//! snapshots ([`expire`]), compacts small data files per Fluss bucket with their deletes
//! applied ([`compaction`], committed as a `replace` by [`rewrite_commit`]) and merges
//! manifests left too many ([`rewrite_manifests`]). The format logic is plain Rust over the SDK's
//! [`Storage`](fluss_lake_guest_sdk::storage::Storage) trait so it runs natively in tests;
//! [`Iceberg`] hands it to the SDK's WIT adapter.

pub mod bins;
pub mod catalog;
pub mod committer;
pub mod compaction;
pub mod deletes;
pub mod expire;
pub mod file_rows;
pub mod file_writer;
pub mod hadoop_tables;
pub mod maintenance;
#[cfg(test)]
mod maintenance_tests;
pub mod manifest;
pub mod merge;
pub mod metadata;
pub mod partition;
pub mod producer;
#[cfg(test)]
mod rest_tests;
pub mod rewrite_commit;
pub mod rewrite_manifests;
pub mod schema;
pub mod summary;
pub mod tables;
pub mod types;
pub mod writer;

use fluss_lake_guest_sdk::Result;
use fluss_lake_guest_sdk::layout::Layout;
use fluss_lake_guest_sdk::plugin::LakeFormat;
use fluss_lake_guest_sdk::storage::HostStorage;
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest, TableInfo};

/// The format name this plugin writes (Fluss `table.datalake.format`).
pub const FORMAT: &str = "iceberg";

/// The plugin: Iceberg's table operations, writer and committer over the host's storage.
pub struct Iceberg;

impl LakeFormat for Iceberg {
    const FORMAT: &'static str = FORMAT;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Writer = writer::IcebergWriter<HostStorage>;
    type Committer = committer::IcebergCommitter<HostStorage>;

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

fluss_lake_guest_sdk::export_lake_format!(crate::Iceberg);
