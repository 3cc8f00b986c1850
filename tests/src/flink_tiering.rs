//! The real FlussLakeTiering job (fluss-flink-tiering 0.9.1 on a Flink 1.20.3 local
//! MiniCluster, `cluster/flink-tiering/run.sh`), started as its users start it: the format,
//! its catalog (the cluster's own warehouse, as `server.yaml` names it) and a table poll
//! interval. The benchmark's baseline and the hand-over tests' other tiering service.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::ClusterInfo;
use crate::repo_root;

/// The command that runs FlussLakeTiering for `format` (`paimon` or `iceberg`) against
/// cluster `c` (`lance` too), asking for a table every `poll_interval` (e.g. `1s`); Flink's own log goes
/// next to `log` (`<log>.flink.log`). `None` for a format FlussLakeTiering is not run for here.
/// Its JVM runs with `run.sh`'s options alone (the benchmark's baseline): `FLINK_EXTRA_JVM_OPTS`
/// is not inherited.
pub fn command(c: &ClusterInfo, format: &str, poll_interval: &str, log: &Path) -> Option<Command> {
    let mut cmd = Command::new(repo_root().join("cluster/flink-tiering/run.sh"));
    cmd.arg(format)
        .args(["--fluss.bootstrap.servers", &c.bootstrap])
        .args(["--fluss.tiering.poll.table.interval", poll_interval])
        .args(["--datalake.format", format]);
    match format {
        "paimon" => {
            cmd.args(["--datalake.paimon.metastore", "filesystem"])
                .arg("--datalake.paimon.warehouse")
                .arg(&c.paimon_warehouse);
        }
        "iceberg" => {
            cmd.args(["--datalake.iceberg.type", "hadoop"])
                .arg("--datalake.iceberg.warehouse")
                .arg(&c.iceberg_warehouse);
        }
        "lance" => {
            cmd.arg("--datalake.lance.warehouse")
                .arg(&c.lance_warehouse);
        }
        _ => return None,
    }
    cmd.env("FLINK_LOG", log.with_extension("flink.log"))
        .env_remove("FLINK_EXTRA_JVM_OPTS");
    Some(cmd)
}

/// The line FlussLakeTiering prints once it serves the coordinator.
pub fn ready_line(format: &str) -> String {
    format!("Starting data tiering service from Fluss to {format}")
}

/// A running FlussLakeTiering job; killed (SIGKILL) when dropped.
pub struct FlinkTiering {
    child: Option<Child>,
    log: PathBuf,
}

impl FlinkTiering {
    /// Starts the job for `format` on cluster `c` and waits until it serves the coordinator;
    /// its output goes to `target/test-logs/<log_name>.log`. Its JVM, which lives for a few
    /// rounds of small tables, gets the options of a short-lived JVM (C1 only: 40 % less CPU
    /// until it serves, and over its life in a hand-over test).
    pub async fn start(c: &ClusterInfo, format: &str, log_name: &str) -> Self {
        let log = repo_root().join(format!("target/test-logs/{log_name}.log"));
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let out = std::fs::File::create(&log).unwrap();
        let child = command(c, format, "1s", &log)
            .unwrap_or_else(|| panic!("FlussLakeTiering is not run for {format}"))
            .env(
                "FLINK_EXTRA_JVM_OPTS",
                crate::java::SHORT_LIVED_JVM.join(" "),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone().unwrap()))
            .stderr(Stdio::from(out))
            .spawn()
            .expect("cannot start cluster/flink-tiering/run.sh");
        let mut job = FlinkTiering {
            child: Some(child),
            log,
        };
        let line = ready_line(format);
        let deadline = Instant::now() + Duration::from_secs(120);
        while !job.log().contains(&line) {
            if let Some(status) = job.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("FlussLakeTiering exited ({status}):\n{}", job.log_tail(60));
            }
            assert!(
                Instant::now() < deadline,
                "FlussLakeTiering did not print '{line}' within 120 s:\n{}",
                job.log_tail(60)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        job
    }

    /// The job's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of the job's output and of Flink's own log, for failures, after
    /// the Flink log's last lines that name an error (its INFO lines would hide them).
    pub fn log_tail(&self, lines: usize) -> String {
        let tail = |text: &str| {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        };
        let flink =
            std::fs::read_to_string(self.log.with_extension("flink.log")).unwrap_or_default();
        let errors: Vec<&str> = flink
            .lines()
            .filter(|l| {
                l.contains(" ERROR ")
                    || l.contains("Exception")
                    || l.contains("Caused by")
                    || l.contains(" WARN ")
            })
            .collect();
        format!(
            "--- Flink log, lines naming an error or a warning:\n{}\n--- job output:\n{}\n--- Flink log:\n{}",
            errors[errors.len().saturating_sub(30)..].join("\n"),
            tail(&self.log()),
            tail(&flink)
        )
    }

    /// Kills the JVM at once (SIGKILL), as a crash or `kill -9` would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for FlinkTiering {
    fn drop(&mut self) {
        self.kill();
    }
}
