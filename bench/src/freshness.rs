//! The steady workload: a writer appends to a lake table at a fixed rate while the service
//! runs; each second's batch is one sample, its freshness the time from its append to the
//! first lake snapshot Fluss registered that holds it. Reported as percentiles next to the
//! table's `table.datalake.freshness`, with the service's CPU and memory over the run.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fluss::client::FlussConnection;
use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::data;
use serde::Serialize;

use fluss_lake_bench::offsets::covers;
use fluss_lake_bench::proc_stats;
use fluss_lake_bench::stats::percentile;

use crate::measure::lake_offsets;
use crate::service::{Service, ServiceKind};
use crate::workload::Sizes;

#[derive(Debug, Clone, Serialize)]
pub struct SteadyFigures {
    pub service: ServiceKind,
    pub records: u64,
    pub rate_rows_per_s: usize,
    pub seconds: u64,
    /// The table's `table.datalake.freshness`.
    pub table_freshness_s: u64,
    pub samples: usize,
    pub p50_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
    /// CPU seconds of the service while the writer ran and the lake caught up.
    pub cpu_s: f64,
    pub peak_rss_bytes: u64,
}

impl SteadyFigures {
    pub fn cpu_s_per_million(&self) -> f64 {
        self.cpu_s * 1e6 / self.records.max(1) as f64
    }
}

/// One second's batch: when it was appended, and the log ends once it was acknowledged.
struct Sample {
    appended: Instant,
    ends: HashMap<(Option<i64>, i32), i64>,
}

pub async fn steady(
    kind: ServiceKind,
    c: &ClusterInfo,
    conn: &Arc<FlussConnection>,
    format: &str,
    sizes: &Sizes,
    t: &TablePath,
    log: &Path,
) -> Result<SteadyFigures> {
    let admin = &conn.get_admin()?;
    let freshness = format!("{}s", sizes.steady_freshness_s);
    data::create_table(admin, t, &data::lake_log_table(3, Some("id"), &freshness)).await;
    let mut service = Service::spawn(kind, c, format, log)?;
    let pid = service.pid();
    service.wait_ready(format, Duration::from_secs(300)).await?;
    let cpu0 = proc_stats::cpu_seconds(pid)?;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Sample>();
    let writer = {
        let (conn, t, rate, seconds) = (
            conn.clone(),
            t.clone(),
            sizes.steady_rate,
            sizes.steady_seconds,
        );
        tokio::spawn(async move { write_steadily(&conn, &t, rate, seconds, tx).await })
    };

    let mut pending: VecDeque<Sample> = VecDeque::new();
    let mut freshness_s = Vec::new();
    let mut writer_done = false;
    let deadline = Instant::now()
        + Duration::from_secs(sizes.steady_seconds + 4 * sizes.steady_freshness_s + 300);
    loop {
        service.check_running()?;
        while let Ok(s) = rx.try_recv() {
            pending.push_back(s);
        }
        if !writer_done && writer.is_finished() {
            writer_done = true;
            while let Ok(s) = rx.try_recv() {
                pending.push_back(s);
            }
        }
        if writer_done && pending.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "{} samples never reached the lake:\n{}",
                pending.len(),
                service.log_tail(60)
            );
        }
        if let Some(got) = lake_offsets(admin, t).await {
            let now = Instant::now();
            while pending.front().is_some_and(|s| covers(&got, &s.ends)) {
                let s = pending.pop_front().expect("a front sample");
                freshness_s.push((now - s.appended).as_secs_f64());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let records = writer.await.context("the steady writer")??;
    let cpu_s = proc_stats::cpu_seconds(pid)? - cpu0;
    let peak_rss_bytes = proc_stats::peak_rss_bytes(pid)?;
    service.stop(Duration::from_secs(30));
    freshness_s.sort_by(f64::total_cmp);
    Ok(SteadyFigures {
        service: kind,
        records,
        rate_rows_per_s: sizes.steady_rate,
        seconds: sizes.steady_seconds,
        table_freshness_s: sizes.steady_freshness_s,
        samples: freshness_s.len(),
        p50_s: percentile(&freshness_s, 50.0),
        p99_s: percentile(&freshness_s, 99.0),
        max_s: freshness_s.last().copied().unwrap_or(0.0),
        cpu_s,
        peak_rss_bytes,
    })
}

/// Appends `rate` rows once a second for `seconds` seconds; each batch is a [`Sample`].
async fn write_steadily(
    conn: &FlussConnection,
    t: &TablePath,
    rate: usize,
    seconds: u64,
    tx: tokio::sync::mpsc::UnboundedSender<Sample>,
) -> Result<u64> {
    let admin = conn.get_admin()?;
    let table = conn.get_table(t).await?;
    let writer = table.new_append()?.create_writer()?;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut written = 0u64;
    for k in 0..seconds {
        tick.tick().await;
        let appended = Instant::now();
        writer.append_arrow_batch(data::batch((k as usize * rate) as i64, rate))?;
        writer.flush().await?;
        written += rate as u64;
        let ends = data::all_log_end_offsets(&admin, t).await;
        let _ = tx.send(Sample { appended, ends });
    }
    Ok(written)
}
