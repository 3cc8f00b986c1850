//! The real Fluss cluster the tests run against, started by `cluster/start.sh` when it is
//! not already up. A cluster that cannot start fails the test with the server's log tail.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::repo_root;

#[derive(Debug, Clone)]
pub struct ClusterInfo {
    pub bootstrap: String,
    pub paimon_warehouse: PathBuf,
    pub remote_data_dir: PathBuf,
}

static CLUSTER: OnceLock<ClusterInfo> = OnceLock::new();

/// The running cluster; starts it (once per test binary) if `cluster/status.sh` says it is down.
pub fn ensure() -> ClusterInfo {
    CLUSTER
        .get_or_init(|| {
            let root = repo_root();
            let status = Command::new(root.join("cluster/status.sh"))
                .output()
                .expect("cannot run cluster/status.sh");
            if !status.status.success() {
                let setup = Command::new(root.join("cluster/setup.sh"))
                    .output()
                    .expect("cannot run cluster/setup.sh");
                assert!(
                    setup.status.success(),
                    "cluster/setup.sh failed:\n{}\n{}",
                    String::from_utf8_lossy(&setup.stdout),
                    String::from_utf8_lossy(&setup.stderr)
                );
                let start = Command::new(root.join("cluster/start.sh"))
                    .arg("--clean")
                    .output()
                    .expect("cannot run cluster/start.sh");
                assert!(
                    start.status.success(),
                    "the Fluss cluster did not start:\n{}\n{}",
                    String::from_utf8_lossy(&start.stdout),
                    String::from_utf8_lossy(&start.stderr)
                );
            }
            let work = std::env::var("CLUSTER_WORK_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|_| root.join("target/fluss-cluster"));
            ClusterInfo {
                bootstrap: std::env::var("FLUSS_BOOTSTRAP")
                    .unwrap_or_else(|_| "127.0.0.1:9123".into()),
                paimon_warehouse: work.join("paimon-warehouse"),
                remote_data_dir: work.join("remote-data"),
            }
        })
        .clone()
}

/// The last lines of the coordinator's log, for failure messages.
pub fn coordinator_log_tail(lines: usize) -> String {
    let log = repo_root().join("target/fluss-cluster/log/coordinator-server.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
