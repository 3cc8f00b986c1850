//! Shared harness for the end-to-end tests: the real Fluss cluster, the host process, test
//! data and the independent lake readers.

pub mod all_types;
pub mod bombs;
pub mod catalog_gate;
pub mod cluster;
pub mod component;
pub mod crash;
pub mod data;
pub mod delta;
pub mod flink_tiering;
pub mod fluss_read;
pub mod hive;
pub mod host;
pub mod host_metrics;
pub mod iceberg;
pub mod java;
pub mod lake_check;
pub mod lance;
pub mod lossy_proxy;
pub mod nested;
pub mod object_stores;
pub mod paimon;
pub mod prometheus;
pub mod python;
pub mod remote_log;
pub mod s3;
pub mod thrift_gate;

use std::path::PathBuf;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// A fluss-rs connection to the test cluster.
pub async fn connect(bootstrap: &str) -> std::sync::Arc<fluss::client::FlussConnection> {
    std::sync::Arc::new(
        fluss::client::FlussConnection::new(fluss::config::Config {
            bootstrap_servers: bootstrap.to_string(),
            ..Default::default()
        })
        .await
        .expect("connect to Fluss"),
    )
}

/// A name unique to this run, so tests can share one cluster across runs.
pub fn unique_name(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}_{}_{}", std::process::id(), nanos % 1_000_000_000)
}

/// A small deterministic generator (xorshift), so a failing randomized test can be replayed
/// by its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The `KEY=value` lines of a server's `server.env` (what the cluster scripts write for the
/// tests), as a lookup that panics naming the file when a key is missing.
pub fn server_env(file: &std::path::Path) -> impl Fn(&str) -> String + '_ {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    move |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {key} in {}", file.display()))
            .to_string()
    }
}
