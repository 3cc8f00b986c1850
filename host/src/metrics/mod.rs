//! What an operator watches: Prometheus metrics and the health the `/readyz` endpoint reports.
//!
//! - [`registry`]: every metric the host exports, registered once, and the handles the
//!   heartbeat loop, rounds and plugin instances record through;
//! - [`health`]: whether the host is ready (plugins loaded, heartbeats succeeding);
//! - [`server`]: the HTTP listener of `--metrics.address` serving `/metrics`, `/healthz` and
//!   `/readyz`.
//!
//! Recording never fails and costs an atomic add: the modules that record do not know
//! whether an endpoint is configured. Names follow the Prometheus conventions (base units in
//! the name, `_total` on counters, added by the encoder) and are listed in
//! `docs/operations.md`.

pub mod health;
pub mod registry;
pub mod server;

pub use registry::{PluginLabels, PluginMetrics, TableLabels, TableMetrics, metrics};
