//! The real Fluss cluster the tests run against, started by `cluster/start.sh` when it is
//! not already up. A cluster that cannot start fails the test with the server's log tail.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::repo_root;

#[derive(Debug, Clone)]
pub struct ClusterInfo {
    pub bootstrap: String,
    /// The lake format the cluster runs with (`datalake.format`).
    pub format: String,
    pub paimon_warehouse: PathBuf,
    pub iceberg_warehouse: PathBuf,
    pub lance_warehouse: PathBuf,
    /// For Delta tables (Fluss has no Delta catalog; the host is given this warehouse).
    pub delta_warehouse: PathBuf,
    pub remote_data_dir: PathBuf,
}

static CLUSTER: OnceLock<ClusterInfo> = OnceLock::new();

fn work_dir() -> PathBuf {
    std::env::var("CLUSTER_WORK_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/fluss-cluster"))
}

/// The `datalake.format` of the cluster's startup configuration (`none` when it sets none).
fn configured_format() -> Option<String> {
    let yaml = std::fs::read_to_string(work_dir().join("conf/server.yaml")).ok()?;
    Some(
        yaml.lines()
            .find_map(|l| l.strip_prefix("datalake.format:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| "none".into()),
    )
}

fn run(script: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(repo_root().join(script))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"))
}

/// The running cluster with the Paimon lake (the default); see [`ensure_format`].
pub fn ensure() -> ClusterInfo {
    ensure_format("paimon")
}

/// The running cluster, (re)started with `datalake.format: <format>` when it is down or runs
/// another lake format (the coordinator creates lake tables in one format per cluster). A
/// restart starts clean. Once per test binary; a cluster that cannot start fails the test
/// with the scripts' output.
pub fn ensure_format(format: &str) -> ClusterInfo {
    let info = CLUSTER
        .get_or_init(|| {
            let up = run("cluster/status.sh", &[], &[]).status.success();
            if !up || configured_format().as_deref() != Some(format) {
                let _ = run("cluster/stop.sh", &[], &[]);
                let with = format!("WITH_{}", format.to_ascii_uppercase());
                let mut setup_env = vec![(with.as_str(), "1")];
                if format == "none" {
                    setup_env = vec![("WITH_ICEBERG", "1"), ("WITH_LANCE", "1")];
                }
                let setup = run("cluster/setup.sh", &[], &setup_env);
                assert!(
                    setup.status.success(),
                    "cluster/setup.sh failed:\n{}\n{}",
                    String::from_utf8_lossy(&setup.stdout),
                    String::from_utf8_lossy(&setup.stderr)
                );
                let start = run(
                    "cluster/start.sh",
                    &["--clean"],
                    &[("DATALAKE_FORMAT", format)],
                );
                assert!(
                    start.status.success(),
                    "the Fluss cluster did not start with datalake.format {format}:\n{}\n{}",
                    String::from_utf8_lossy(&start.stdout),
                    String::from_utf8_lossy(&start.stderr)
                );
            }
            let work = work_dir();
            ClusterInfo {
                bootstrap: std::env::var("FLUSS_BOOTSTRAP")
                    .unwrap_or_else(|_| "127.0.0.1:9123".into()),
                format: format.to_string(),
                paimon_warehouse: work.join("paimon-warehouse"),
                iceberg_warehouse: work.join("iceberg-warehouse"),
                lance_warehouse: work.join("lance-warehouse"),
                delta_warehouse: work.join("delta-warehouse"),
                remote_data_dir: work.join("remote-data"),
            }
        })
        .clone();
    assert_eq!(
        info.format, format,
        "this test binary already uses the cluster with datalake.format {}",
        info.format
    );
    info
}

/// The running cluster started without a lake format and with every Java lake plugin
/// installed, so that [`set_lake_format`] can switch the format at run time and the cluster
/// holds tables of several formats at once.
pub fn ensure_mixed() -> ClusterInfo {
    ensure_format("none")
}

/// Switches the cluster's `datalake.format` (and its options) with AlterClusterConfigs;
/// tables created from now on get `format`, existing ones keep theirs.
pub fn set_lake_format(format: &str) {
    let out = run("cluster/set-lake-format.sh", &[format], &[]);
    assert!(
        out.status.success(),
        "cluster/set-lake-format.sh {format} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The last lines of the coordinator's log, for failure messages.
pub fn coordinator_log_tail(lines: usize) -> String {
    let log = repo_root().join("target/fluss-cluster/log/coordinator-server.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
