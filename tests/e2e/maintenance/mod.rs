//! Tables that stay healthy for months: snapshot expiry (and, later, compaction) through the
//! plugins' optional `maintenance` export, on the real cluster.
//!
//! - [`long_run`]: many small rounds with expiry on stay within Paimon's and Iceberg's
//!   retention options and readable at every retained snapshot; a twin table without expiry
//!   grows.
//! - [`evil`]: a plugin's maintenance that loops, floods or fails never undoes or blocks the
//!   rounds, and the host tells every plugin the snapshot Fluss needs.

mod evil;
mod long_run;
