//! What the host needs from Fluss beyond the tiering RPCs, on top of fluss-rs: table
//! metadata in the contract's shape ([`table`]), lake snapshot and offset lookups
//! ([`offsets`]), reading a bucket up to its stop offset as Arrow batches ([`reader`]), and
//! the cluster's own tiering settings ([`cluster_config`]), its `remote.data.dir` on object
//! storage ([`remote_dir`]: offsets files, and the log segments fluss-rs's scanners read
//! through [`remote_log`]), and the connection itself, which can be repaired when its
//! metadata goes bad ([`client`]).

pub mod client;
pub mod cluster_config;
pub mod kv_snapshot;
pub mod local_copies;
pub mod offsets;
pub mod reader;
pub mod remote_dir;
pub mod remote_log;
pub mod table;
