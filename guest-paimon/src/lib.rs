//! Apache Paimon lake-format plugin for the Fluss lake tiering host.
//!
//! Writes Paimon tables the way Fluss 0.9's Java Paimon plugin (Paimon 1.3) does, so that
//! Paimon readers (Java, pypaimon) read them: append (log) tables, bucket-unaware or with
//! fixed buckets, and primary-key tables (merge-tree level-0 files with deduplicate merging
//! and input changelog), partitioned or not. The format logic is plain Rust over the SDK's
//! [`Storage`](fluss_lake_guest_sdk::storage::Storage) trait ([`writer`], [`committer`],
//! [`catalog`]) so it runs natively in tests and benchmarks; [`Paimon`] hands it to the SDK's
//! WIT adapter.

pub mod append_writer;
pub mod binary_row;
pub mod bucket;
pub mod catalog;
pub mod commit_message;
pub mod committer;
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
use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter, LakeFormat};
use fluss_lake_guest_sdk::storage::HostStorage;
use fluss_lake_guest_sdk::wit::{
    CommitResult, CommittedSnapshot, CommitterContext, RowBatch, TableInfo, WriteResult,
    WriterContext,
};

/// The format name this plugin writes (Fluss `table.datalake.format`).
pub const FORMAT: &str = "paimon";

/// The plugin: Paimon's table operations, writer and committer over the host's storage.
pub struct Paimon;

impl LakeFormat for Paimon {
    const FORMAT: &'static str = FORMAT;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Writer = writer::PaimonWriter<HostStorage>;
    type Committer = committer::PaimonCommitter<HostStorage>;

    fn table_location(table: &TableInfo, _config: &[(String, String)]) -> Result<String> {
        catalog::table_location(table)
    }
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
}

impl FormatWriter for writer::PaimonWriter<HostStorage> {
    fn open(context: &WriterContext, storage: HostStorage) -> Result<Self> {
        writer::PaimonWriter::open(context, storage)
    }
    fn write(&mut self, batch: RowBatch) -> Result<()> {
        writer::PaimonWriter::write(self, batch)
    }
    fn complete(self) -> Result<WriteResult> {
        writer::PaimonWriter::complete(self)
    }
}

impl FormatCommitter for committer::PaimonCommitter<HostStorage> {
    fn open(context: CommitterContext, storage: HostStorage) -> Result<Self> {
        Ok(committer::PaimonCommitter::new(storage, context.config))
    }
    fn to_committable(&self, write_results: &[Vec<u8>]) -> Result<Vec<u8>> {
        committer::to_committable(write_results)
    }
    fn commit(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
    ) -> Result<CommitResult> {
        committer::PaimonCommitter::commit(self, committable, properties)
    }
    fn abort(&self, committable: &[u8]) -> Result<()> {
        committer::PaimonCommitter::abort(self, committable)
    }
    fn get_missing_lake_snapshot(&self, latest: Option<i64>) -> Result<Option<CommittedSnapshot>> {
        committer::PaimonCommitter::get_missing_lake_snapshot(self, latest)
    }
}

fluss_lake_guest_sdk::export_lake_format!(crate::Paimon);
