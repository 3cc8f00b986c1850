//! Tables that stay healthy for months: snapshot expiry and compaction through the plugins'
//! optional `maintenance` export, on the real cluster.
//!
//! - [`long_run`]: many small rounds with expiry and compaction on stay within Paimon's,
//!   Iceberg's and Lance's retention options and compaction triggers, readable at every
//!   retained snapshot by the formats' own readers; twin tables without maintenance grow.
//! - [`evil`]: a plugin's maintenance that loops, floods or fails never undoes or blocks the
//!   rounds, and the host tells every plugin the snapshot Fluss needs.
//! - [`idle`]: a table without new data is still maintained, at most once per idle interval;
//!   SIGTERM interrupts a maintenance call in progress and the host exits at once.

mod evil;
mod idle;
mod long_run;
