//! One backlog measurement: a service is started on tables already written and due, and is
//! watched until Fluss's lake snapshots cover every table's log end. Figures: wall time from
//! the start, time to the first commit, CPU seconds of the service process (all of them, and
//! those after it became ready), its peak resident memory, and the files it left in the lake.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use fluss::client::FlussAdmin;
use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::host_metrics::{Exposition, HistogramSummary};
use serde::Serialize;

use fluss_lake_bench::offsets::covers;
use fluss_lake_bench::proc_stats;

use crate::lake_files::{self, LakeFiles};
use crate::rates::Throughput;
use crate::service::{Service, ServiceKind};
use crate::workload::Prepared;

/// What one service did with one backlog.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceFigures {
    pub service: ServiceKind,
    /// Records tiered, from the service's start to every table covered, and the service
    /// process's CPU seconds over that time.
    #[serde(flatten)]
    pub work: Throughput,
    /// From the start until the service served the coordinator.
    pub ready_s: f64,
    /// From the start to the first lake snapshot Fluss registered.
    pub first_commit_s: f64,
    /// Of the CPU seconds, the ones spent starting up (until ready).
    pub startup_cpu_s: f64,
    /// Peak resident memory of the service process (VmHWM).
    pub peak_rss_bytes: u64,
    /// Files and bytes under the tables' lake directories.
    pub lake: LakeFiles,
    /// What the host's `/metrics` said at the end (the host only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_metrics: Option<HostMetricsFigures>,
}

/// The host's own figures of its rounds' start-up and its heartbeats, scraped when every
/// table was covered: they must stay bounded as tables and buckets grow.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct HostMetricsFigures {
    /// A round's start to its splits planned (routing, table lookup, split generation).
    pub plan_s: HistogramSummary,
    /// A round's start to its plugin's first byte written to the lake store.
    pub first_write_s: HistogramSummary,
    pub heartbeats: u64,
    pub heartbeat_request_max_bytes: u64,
    pub heartbeat_response_max_bytes: u64,
}

impl HostMetricsFigures {
    fn scrape(address: &str) -> Result<Self> {
        let e = Exposition::scrape(address)?;
        let histogram = |name: &str| {
            e.histogram(name)
                .ok_or_else(|| anyhow::anyhow!("no {name} in the host's /metrics"))
        };
        let value = |name: &str| {
            e.value(name)
                .map(|v| v as u64)
                .ok_or_else(|| anyhow::anyhow!("no {name} in the host's /metrics"))
        };
        Ok(Self {
            plan_s: histogram("fluss_lake_round_plan_duration_seconds")?,
            first_write_s: histogram("fluss_lake_round_first_write_seconds")?,
            heartbeats: value("fluss_lake_heartbeats_sent_total")?,
            heartbeat_request_max_bytes: value("fluss_lake_heartbeat_request_max_bytes")?,
            heartbeat_response_max_bytes: value("fluss_lake_heartbeat_response_max_bytes")?,
        })
    }
}

/// A service's figures read as its throughput (records, wall and CPU seconds).
impl std::ops::Deref for ServiceFigures {
    type Target = Throughput;
    fn deref(&self) -> &Throughput {
        &self.work
    }
}

/// How long a service may take to tier a backlog of `records` in `tables` tables: 10 minutes,
/// and a second more per 10,000 records beyond 6M (Flink tiers 100,000 or more a second
/// here), plus a second per table (each table is a round of its own).
fn cover_timeout(records: u64, tables: usize) -> Duration {
    Duration::from_secs(600.max(records / 10_000) + tables as u64)
}
/// How long a service may take to serve the coordinator.
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// Starts `kind`, waits until it has tiered `prepared`, stops it.
pub async fn backlog(
    kind: ServiceKind,
    c: &ClusterInfo,
    admin: &FlussAdmin,
    format: &str,
    prepared: &Prepared,
    log: &Path,
) -> Result<ServiceFigures> {
    let mut service = Service::spawn(kind, c, format, log)?;
    let pid = service.pid();
    service.wait_ready(format, READY_TIMEOUT).await?;
    let ready_s = service.started.elapsed().as_secs_f64();
    let startup_cpu_s = proc_stats::cpu_seconds(pid)?;

    let mut first_commit_s = None;
    let mut left: Vec<usize> = (0..prepared.tables.len()).collect();
    let timeout = cover_timeout(prepared.records, prepared.tables.len());
    let deadline = Instant::now() + timeout;
    while !left.is_empty() {
        service.check_running()?;
        if Instant::now() > deadline {
            bail!(
                "the {} service did not tier {} of the tables within {timeout:?}:\n{}",
                kind.name(),
                left.len(),
                service.log_tail(60)
            );
        }
        let mut still = Vec::new();
        for &k in &left {
            match lake_offsets(admin, &prepared.tables[k]).await {
                Some(got) => {
                    first_commit_s.get_or_insert(service.started.elapsed().as_secs_f64());
                    if !covers(&got, &prepared.ends[k]) {
                        still.push(k);
                    }
                }
                None => still.push(k),
            }
        }
        left = still;
        if !left.is_empty() {
            tokio::time::sleep(poll_interval(prepared.tables.len())).await;
        }
    }
    // Read at once: the service idles from here on. VmHWM is the peak of the whole run.
    let wall_s = service.started.elapsed().as_secs_f64();
    let cpu_s = proc_stats::cpu_seconds(pid)?;
    let peak_rss_bytes = proc_stats::peak_rss_bytes(pid)?;
    let host_metrics = match &service.metrics_address {
        Some(address) => Some(HostMetricsFigures::scrape(address)?),
        None => None,
    };
    service.stop(Duration::from_secs(30));
    let lake = lake_files::of_tables(c, format, &prepared.tables)?;
    Ok(ServiceFigures {
        service: kind,
        work: Throughput {
            records: prepared.records,
            wall_s,
            cpu_s,
        },
        ready_s,
        first_commit_s: first_commit_s.unwrap_or(wall_s),
        startup_cpu_s,
        peak_rss_bytes,
        lake,
        host_metrics,
    })
}

/// Polls often for one table, less often for many (each poll is one request per table, to
/// the coordinator the service under test talks to as well).
fn poll_interval(tables: usize) -> Duration {
    Duration::from_millis(match tables {
        0..=10 => 100,
        11..=100 => 500,
        _ => 2_000,
    })
}

/// The latest lake snapshot's offsets of a table, if it has one.
pub async fn lake_offsets(
    admin: &FlussAdmin,
    t: &TablePath,
) -> Option<HashMap<(Option<i64>, i32), i64>> {
    let s = admin.get_latest_lake_snapshot(t).await.ok()?;
    Some(fluss_lake_e2e::data::snapshot_offsets(&s))
}
