//! The tiering service under test, run as its users run it: the host binary with a format
//! plugin, or the real FlussLakeTiering job on a Flink local MiniCluster
//! (`cluster/flink-tiering/run.sh`, whose JVM replaces the script, so the measured process is the JVM).
//! Both get the same cluster, the same lake warehouse and the same table poll interval.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::{prometheus, repo_root};
use serde::Serialize;

/// Which service tiers the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceKind {
    /// This project's host, `target/release/fluss-lake-host`.
    Host,
    /// FlussLakeTiering 0.9.1 on Flink 1.20.3 (cluster/flink-tiering).
    Flink,
}

impl ServiceKind {
    pub fn name(self) -> &'static str {
        match self {
            ServiceKind::Host => "host",
            ServiceKind::Flink => "flink",
        }
    }

    /// The line the service prints once it serves the coordinator.
    fn ready_line(self, format: &str) -> String {
        match self {
            ServiceKind::Host => "registered with the coordinator".to_string(),
            ServiceKind::Flink => fluss_lake_e2e::flink_tiering::ready_line(format),
        }
    }
}

/// How often both services ask the coordinator for a table (`tiering.poll.table.interval`;
/// FlussLakeTiering's default, 30 s, would only measure the wait).
pub const POLL_TABLE_INTERVAL: &str = "1s";

/// A running service; killed when dropped.
pub struct Service {
    pub kind: ServiceKind,
    child: Option<Child>,
    log: PathBuf,
    pub started: Instant,
    /// The host's `--metrics.address` (HOST:PORT), read at the end of a measurement.
    pub metrics_address: Option<String>,
}

impl Service {
    /// Starts `kind` against cluster `c` for lake format `format`; its output goes to `log`.
    pub fn spawn(kind: ServiceKind, c: &ClusterInfo, format: &str, log: &Path) -> Result<Self> {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let out = std::fs::File::create(log)?;
        let metrics_address = match kind {
            ServiceKind::Host => Some(format!("127.0.0.1:{}", prometheus::free_port()?)),
            ServiceKind::Flink => None,
        };
        let mut cmd = match (kind, &metrics_address) {
            (ServiceKind::Host, Some(metrics)) => host_command(c, format, metrics)?,
            _ => flink_command(c, format, log)?,
        };
        let child = cmd
            .envs(fluss_lake_e2e::host::NO_INSTANCE_METADATA.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .spawn()
            .with_context(|| format!("cannot start the {} service", kind.name()))?;
        Ok(Service {
            kind,
            child: Some(child),
            log: log.to_path_buf(),
            started: Instant::now(),
            metrics_address,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last lines of the service's output, for errors.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = self.log_text();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Fails when the service exited.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
        {
            bail!(
                "the {} service exited ({status}):\n{}",
                self.kind.name(),
                self.log_tail(60)
            );
        }
        Ok(())
    }

    /// Waits until the service serves the coordinator.
    pub async fn wait_ready(&mut self, format: &str, timeout: Duration) -> Result<()> {
        let line = self.kind.ready_line(format);
        let deadline = Instant::now() + timeout;
        while !self.log_text().contains(&line) {
            self.check_running()?;
            if Instant::now() > deadline {
                bail!(
                    "the {} service did not print '{line}' within {timeout:?}:\n{}",
                    self.kind.name(),
                    self.log_tail(60)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The host as a user runs it: the format's plugin, the shared compiled-plugin cache (a
/// deployment compiles a plugin once, not per start), default settings but the poll interval,
/// and its metrics endpoint on `metrics` (what it says about its rounds and heartbeats).
fn host_command(c: &ClusterInfo, format: &str, metrics: &str) -> Result<Command> {
    let state = repo_root()
        .join("target/bench/state")
        .join(fluss_lake_e2e::unique_name("host"));
    let mut cmd = Command::new(fluss_lake_e2e::host::host_bin());
    cmd.args(["--fluss.bootstrap.servers", &c.bootstrap])
        .arg("--plugin")
        .arg(fluss_lake_e2e::host::plugin(format))
        .args(fluss_lake_e2e::host::plugin_cache_args())
        .arg("--state-dir")
        .arg(state)
        .args(["--tiering.poll.table.interval", POLL_TABLE_INTERVAL])
        .args(["--metrics.address", metrics])
        // The plugin it names, not the ones built in as well.
        .arg("--no-builtin-plugins")
        .env(
            "RUST_LOG",
            std::env::var("BENCH_HOST_RUST_LOG").unwrap_or_else(|_| "info".into()),
        );
    // For profiling runs only, e.g. BENCH_HOST_ARGS=--plugin-perf-map (see the README).
    if let Ok(extra) = std::env::var("BENCH_HOST_ARGS") {
        cmd.args(extra.split_whitespace());
    }
    Ok(cmd)
}

/// FlussLakeTiering with the options its users give it (`fluss_lake_e2e::flink_tiering`).
fn flink_command(c: &ClusterInfo, format: &str, log: &Path) -> Result<Command> {
    match fluss_lake_e2e::flink_tiering::command(c, format, POLL_TABLE_INTERVAL, log) {
        Some(cmd) => Ok(cmd),
        None => bail!("FlussLakeTiering is benchmarked for paimon and iceberg, not {format}"),
    }
}
