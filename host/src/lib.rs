//! The Fluss lake tiering host as a library, so that end-to-end tests and benchmarks drive
//! the same code the binary runs.
//!
//! - [`cli`]: the `fluss-lake-host` command, which the binary only calls.
//! - [`config`]: command-line options in the FlussLakeTiering convention (their reference page,
//!   docs/configuration.md, is generated from them and checked by `config_reference`'s tests).
//! - [`coordinator`]: the host's own client for the coordinator's tiering RPCs.
//! - [`fluss`]: table metadata, offsets and bucket reading on top of fluss-rs.
//! - [`metrics`]: Prometheus metrics, readiness, and the HTTP endpoint serving them.
//! - [`plugin`]: the WebAssembly plugin runtime.
//! - [`tiering`]: the heartbeat loop, split generation, rounds and the commit pipeline.
//! - [`time`]: wall-clock time as Fluss counts it (epoch milliseconds).
//! - [`warehouse`]: lake warehouses on a local disk or S3, opened and checked for atomic creates.

pub mod catalog;
pub mod cli;
pub mod config;
// docs/configuration.md is generated from the options and checked by this module's tests.
#[cfg(test)]
mod config_reference;
pub mod coordinator;
pub mod error;
pub mod failpoints;
pub mod fluss;
pub mod metrics;
pub mod plugin;
pub mod startup;
pub mod tiering;
pub mod time;
pub mod warehouse;

pub use error::{Error, ErrorKind, Result};
