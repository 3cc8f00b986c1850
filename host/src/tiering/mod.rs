//! The tiering service, the part of the host that replaces Flink's FlussLakeTiering job.
//!
//! - [`service`]: the heartbeat loop — asks the coordinator for tables, renews the rounds in
//!   flight, reports finished and failed tables, and reacts to fencing.
//! - [`splits`]: which offsets of which buckets a round must tier (Flink's
//!   `TieringSplitGenerator`).
//! - [`routing`]: which plugin tiers a table (its format, or an override).
//! - [`context`]: the values a round is made of, shared by the modules below.
//! - [`round`]: one table's round — plan, then read every split through the plugin's writers.
//! - [`row_batches`]: Fluss bucket batches into the contract's row batches.
//! - [`commit`]: the two-phase commit of a round into the lake and into Fluss, in order.
//! - [`fluss_commit`]: the coordinator calls of a commit and their messages.
//! - [`maintenance`]: snapshot expiry and compaction after a committed round, or after an
//!   idle one when due, by plugins that export `maintenance`.
//! - [`recovery`]: verifying a lake snapshot Fluss missed before registering it.
//! - [`progress`]: progress lines of long rounds.
//! - [`backoff`]: how long a table whose rounds keep failing waits.
//! - [`journal`]: the rounds in flight, on disk, so a restarted host hands them back at once.

pub mod backoff;
pub mod commit;
pub mod context;
pub mod fluss_commit;
pub mod journal;
pub mod maintenance;
pub mod progress;
pub mod recovery;
pub mod round;
pub mod routing;
pub mod row_batches;
pub mod service;
pub mod splits;

/// The commit user every lake snapshot written by tiering carries.
pub const COMMIT_USER: &str = "__fluss_lake_tiering";
/// The lake snapshot property holding the path of the Fluss offsets file.
pub const FLUSS_OFFSETS_PROPERTY: &str = "fluss-offsets";
/// The lake snapshot property listing the log ranges a round skipped because the table
/// accepts log gaps (`[partition/]bucket:from-to`, comma-separated); absent when none.
pub const FLUSS_LOG_GAP_PROPERTY: &str = "fluss-log-gap";
/// The lake snapshot property listing the primary-key buckets a round rebuilt from their KV
/// snapshots after a log gap, replacing their lake files
/// (`[partition/]bucket:<kv snapshot id>@<log offset>`, comma-separated); absent when none.
pub const FLUSS_REPLACED_BUCKETS_PROPERTY: &str = "fluss-replaced-buckets";
