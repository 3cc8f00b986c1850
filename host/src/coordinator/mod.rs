//! The host's own client for the coordinator's lake tiering RPCs.
//!
//! fluss-rs 1.0.0 keeps its API keys and request plumbing crate-private, so the three
//! tiering RPCs (`LakeTieringHeartbeat`, `PrepareLakeTableSnapshot`,
//! `CommitLakeTableSnapshot`), and `GetFileSystemSecurityToken` for the offsets files in
//! `remote.data.dir`, go through this small client: [`codec`] is the wire framing,
//! [`client`] the connection with its handshake, [`proto`] the generated messages.

pub mod api;
pub mod client;
pub mod codec;

/// Protobuf messages generated at build time from `proto/coordinator.proto`.
#[allow(clippy::all, missing_docs)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/fluss.rs"));
}

pub use client::CoordinatorClient;

/// The codec against frames recorded from a real coordinator (`host/tests/frames/`).
#[cfg(test)]
mod recorded_frames;

/// The messages against vectors encoded by the Fluss 1.0 Java client
/// (`host/tests/frames/java-1.0/`).
#[cfg(test)]
mod java_frames;
