//! Lance lake-format plugin for the Fluss lake tiering host.
//!
//! Writes Lance datasets the way Fluss 0.9's Java Lance plugin lays them out
//! (`<warehouse>/<db>/<table>.lance`, the Fluss columns only, log tables only): each round
//! appends one fragment per data file in one new version whose transaction carries the Fluss
//! commit user and offsets. The Lance Rust crates do not build for `wasm32-wasip2`, so the
//! data files (Lance file format 2.0, [`file_writer`]) and the manifests and transactions
//! ([`versions`], protobuf types generated from Lance's `.proto` files into [`proto`]) are
//! encoded here. Plain Rust over the SDK's
//! [`Storage`](fluss_lake_guest_sdk::storage::Storage); [`Lance`] hands it to the SDK's WIT
//! adapter.
//!
//! Maintenance ([`maintenance`], the contract's `maintain`): version cleanup as Lance's
//! `cleanup_old_versions` ([`cleanup`]) and fragment compaction as Lance's `compact_files`
//! ([`compact`]), which reads fragments back with [`file_reader`] (the encodings
//! [`file_writer`] produces, nothing else) and applies their [`deletion`] files.
//!
//! Modules: [`catalog`] (dataset location, creation), [`schema`] (Lance fields and Arrow
//! types), [`writer`] / [`file_writer`] (a split's data files), [`committer`] (a round's
//! `Append` version, recovery), [`versions`] (manifests, transactions, naming), [`file_reader`],
//! [`deletion`], [`cleanup`], [`compact`], [`maintenance`], [`proto`] (generated).

pub mod catalog;
pub mod cleanup;
pub mod committer;
pub mod compact;
pub mod deletion;
pub mod file_reader;
pub mod file_writer;
pub mod maintenance;
pub mod proto;
pub mod schema;
pub mod versions;
pub mod writer;

use fluss_lake_guest_sdk::Result;
use fluss_lake_guest_sdk::layout::Layout;
use fluss_lake_guest_sdk::plugin::LakeFormat;
use fluss_lake_guest_sdk::storage::HostStorage;
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest, TableInfo};

/// The format name this plugin writes (Fluss `table.datalake.format`).
pub const FORMAT: &str = "lance";

/// The plugin: Lance's table operations, writer and committer over the host's storage.
pub struct Lance;

impl LakeFormat for Lance {
    const FORMAT: &'static str = FORMAT;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Writer = writer::LanceWriter<HostStorage>;
    type Committer = committer::LanceCommitter<HostStorage>;

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
        _config: &[(String, String)],
    ) -> Result<bool> {
        catalog::create_table_if_missing(storage, table)
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

fluss_lake_guest_sdk::export_lake_format!(crate::Lance);
