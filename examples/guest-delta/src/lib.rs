//! Delta Lake lake-format plugin for the Fluss lake tiering host.
//!
//! Tiers Fluss log tables into Delta tables at `<warehouse>/<db>/<table>`: every round
//! appends one Delta version (`_delta_log/<version>.json`) whose `add` actions list the
//! round's Parquet files and whose `commitInfo` carries the Fluss commit user and offsets, so
//! `DeltaTable.history()` shows what Fluss tiered. The Delta Rust crates do not build for
//! `wasm32-wasip2`, so the log is written here as the Delta protocol specifies it; the data
//! files come from the SDK's Parquet writer.
//!
//! Written as a third party would write a plugin: its own crate, depending on the guest SDK
//! only. Plain Rust over the SDK's [`Storage`](fluss_lake_guest_sdk::storage::Storage), so
//! everything runs natively in unit tests; [`Delta`] hands it to the SDK's WIT adapter.
//!
//! * [`catalog`] — where tables live, creating them (version 0), validating them.
//! * [`schema`] — Fluss → Delta types, the schema string, the data files' Arrow schema.
//! * [`actions`] — the log actions this plugin reads and writes (`protocol`, `metaData`,
//!   `add`, `commitInfo`) and which reader / writer features it can honour.
//! * [`delta_log`] — versions in `_delta_log/`: listing, reading, publishing, table state.
//! * [`partition`] — partition values of a split and Hive-style partition directories.
//! * [`stats`] — per-file statistics in Delta's JSON form, for readers' data skipping.
//! * [`writer`], [`committer`] — one split's Parquet files; one version per round.

pub mod actions;
pub mod catalog;
pub mod committer;
pub mod delta_log;
pub mod partition;
pub mod schema;
pub mod stats;
pub mod writer;

use fluss_lake_guest_sdk::Result;
use fluss_lake_guest_sdk::layout::Layout;
use fluss_lake_guest_sdk::plugin::LakeFormat;
use fluss_lake_guest_sdk::storage::HostStorage;
use fluss_lake_guest_sdk::wit::TableInfo;

/// The format name this plugin writes (Fluss `table.datalake.format`).
pub const FORMAT: &str = "delta";

/// This plugin's name and version, as `engineInfo` in the commits it writes.
pub const ENGINE_INFO: &str = concat!("fluss-lake-delta/", env!("CARGO_PKG_VERSION"));

/// The plugin: Delta's table operations, writer and committer over the host's storage.
pub struct Delta;

impl LakeFormat for Delta {
    const FORMAT: &'static str = FORMAT;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    type Writer = writer::DeltaWriter<HostStorage>;
    type Committer = committer::DeltaCommitter<HostStorage>;

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
}

fluss_lake_guest_sdk::export_lake_format!(crate::Delta);
