//! The benchmark: the host against the real FlussLakeTiering job, the raw fluss-rs scan rate
//! and the WASM tax, on one cluster with the same data in one run. `scripts/bench.sh` sets
//! everything up and runs it; the README shows the latest results.
//!
//! ```text
//! bench run [--workloads log1,log3,log12,pk,partitioned,many-tables,steady] [--formats paimon,iceberg]
//!           (or --workloads scale-tables,scale-buckets: the host's start-up and heartbeats at
//!           1,000 tables and at 50 × 64 buckets, with --services host)
//!           [--services host,flink] [--scale 1] [--out DIR] [--cluster-index 8]
//! bench raw-scan --bootstrap HOST:PORT --table db.table     (a child of `run`: its CPU alone)
//! ```
//!
//! Each backlog workload is written with no service running and handed to one service at a
//! time, on a cluster emptied of tables before each (so no service sees another's tables).
//! Figures are ratios within the run; nothing here asserts a timing.

mod freshness;
mod lake_files;
mod measure;
mod rates;
mod raw_scan;
mod report;
mod service;
mod wasm_tax;
mod workload;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::{self, BENCH_CLUSTER, ClusterInfo};
use fluss_lake_e2e::repo_root;

use report::{BacklogResult, Machine, RunResult, SteadyResult};
use service::{Service, ServiceKind};
use workload::{Sizes, WorkloadKind};

#[derive(Parser)]
#[command(
    name = "bench",
    about = "fluss-lake-host against FlussLakeTiering, side by side"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the benchmark and writes result.json, result.md and chart.svg into --out.
    Run(RunArgs),
    /// Reads a log table to its end with fluss-rs's Arrow batch scanner; prints JSON figures.
    RawScan {
        #[arg(long)]
        bootstrap: String,
        #[arg(long)]
        table: String,
        /// Also encode every row natively as a lake data file, at this zstd level (the limit).
        #[arg(long)]
        encode_zstd_level: Option<i32>,
    },
}

#[derive(clap::Args, Clone)]
struct RunArgs {
    #[arg(long, value_delimiter = ',', default_values = ["log1", "log3", "log12", "pk", "partitioned", "many-tables", "steady"])]
    workloads: Vec<WorkloadKind>,
    #[arg(long, value_delimiter = ',', default_values = ["paimon", "iceberg"])]
    formats: Vec<String>,
    #[arg(long, value_delimiter = ',', default_values = ["host", "flink"])]
    services: Vec<ServiceKind>,
    /// The issue's sizes times this (10M-row log tables at 1).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Rows of the WASM-tax measurement per format (0: not measured); default 2M × scale.
    #[arg(long)]
    tax_rows: Option<usize>,
    /// Where result.json, result.md and chart.svg go; default bench/results/<date>-<commit>.
    #[arg(long)]
    out: Option<PathBuf>,
    /// The cluster to run on (started by the run when it is not up); by default one outside
    /// the test pool.
    #[arg(long, default_value_t = BENCH_CLUSTER)]
    cluster_index: usize,
    /// The cluster's lease is held by the process that started this one (a test): the run
    /// empties it between measurements without taking the lease itself.
    #[arg(long)]
    cluster_held_by_parent: bool,
    /// Fails the run unless every figure it was asked for was measured and is plausible (the
    /// CI smoke).
    #[arg(long)]
    check: bool,
}

/// The cluster a measurement runs on, emptied of tables and switched to its format.
enum Held {
    Lease(cluster::Lease),
    Parent(ClusterInfo),
}

impl std::ops::Deref for Held {
    type Target = ClusterInfo;
    fn deref(&self) -> &ClusterInfo {
        match self {
            Held::Lease(l) => l,
            Held::Parent(c) => c,
        }
    }
}

fn take_cluster(args: &RunArgs, format: &str) -> Held {
    if args.cluster_held_by_parent {
        Held::Parent(cluster::held_by_parent(args.cluster_index, format))
    } else {
        Held::Lease(cluster::lease_index(args.cluster_index, format))
    }
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args).await,
        Command::RawScan {
            bootstrap,
            table,
            encode_zstd_level,
        } => raw_scan::run(&bootstrap, &table, encode_zstd_level)
            .await
            .map(|f| println!("{}", serde_json::to_string(&f).expect("json"))),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

async fn run(args: RunArgs) -> Result<()> {
    let sizes = Sizes::scaled(args.scale);
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let date = date();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| repo_root().join(format!("bench/results/{date}-{commit}")));
    std::fs::create_dir_all(&out)?;
    // The services' logs and the WASM tax's warehouses: build output, never committed with
    // the results (an absolute path: other processes are handed it).
    let work = repo_root().join(format!("target/bench/{date}-{commit}"));
    std::fs::create_dir_all(work.join("logs"))?;
    let mut backlog = Vec::new();
    let mut steady = Vec::new();
    let mut tax = Vec::new();
    for format in &args.formats {
        if args.services.contains(&ServiceKind::Host) {
            warm_plugin_cache(&args, format, &work).await?;
        }
        for &kind in &args.workloads {
            eprintln!("== {} {format}", kind.name());
            if kind == WorkloadKind::Steady {
                steady.push(run_steady(&args, &sizes, format, &work).await?);
            } else {
                backlog.push(run_backlog(&args, kind, &sizes, format, &work).await?);
            }
        }
        let tax_rows = args
            .tax_rows
            .unwrap_or((2_000_000.0 * args.scale).round() as usize);
        if tax_rows > 0 {
            eprintln!("== WASM tax {format}: {tax_rows} rows");
            let dir = work.join("tax").join(format);
            let _ = std::fs::remove_dir_all(&dir);
            tax.push(wasm_tax::measure(format, tax_rows, &dir).await?);
            std::fs::remove_dir_all(&dir)?;
        }
    }
    let targets = report::targets(&backlog, &steady, &tax);
    let result = RunResult {
        date,
        commit,
        command: std::env::var("FLUSS_BENCH_COMMAND")
            .unwrap_or_else(|_| std::env::args().collect::<Vec<_>>().join(" ")),
        machine: Machine::this(),
        scale: args.scale,
        sizes,
        backlog,
        steady,
        wasm_tax: tax,
        targets,
    };
    std::fs::write(
        out.join("result.json"),
        serde_json::to_string_pretty(&result)?,
    )?;
    let md = report::markdown(&result);
    std::fs::write(out.join("result.md"), &md)?;
    std::fs::write(out.join("chart.svg"), report::svg(&result))?;
    println!("{md}");
    eprintln!(
        "results in {}, the services' logs in {}",
        out.display(),
        work.join("logs").display()
    );
    if args.check {
        check(&args, &result)?;
    }
    Ok(())
}

/// Starts the host once so that its plugin is compiled into the shared cache: every measured
/// start then loads it, as a deployment's restarts do.
async fn warm_plugin_cache(args: &RunArgs, format: &str, work: &Path) -> Result<()> {
    let c = take_cluster(args, format);
    let mut s = Service::spawn(
        ServiceKind::Host,
        &c,
        format,
        &work.join(format!("logs/warm-{format}.log")),
    )?;
    s.wait_ready(format, Duration::from_secs(300)).await?;
    s.stop(Duration::from_secs(30));
    Ok(())
}

async fn run_backlog(
    args: &RunArgs,
    kind: WorkloadKind,
    sizes: &Sizes,
    format: &str,
    work: &Path,
) -> Result<BacklogResult> {
    let mut result = BacklogResult {
        workload: kind.name().to_string(),
        format: format.to_string(),
        records: 0,
        tables: 0,
        host: None,
        flink: None,
        raw_scan: None,
        limit: None,
    };
    for &service in &args.services {
        // A cluster emptied of tables for each service.
        let c = take_cluster(args, format);
        let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
        let admin = conn.get_admin()?;
        let prefix = fluss_lake_e2e::unique_name(&format!(
            "bench_{}_{}",
            kind.name().replace('-', "_"),
            service.name()
        ));
        let prepared = workload::prepare(kind, sizes, &conn, &admin, &prefix).await?;
        eprintln!(
            "   {}: {} records in {} table(s) written in {:.1} s",
            service.name(),
            prepared.records,
            prepared.tables.len(),
            prepared.write_seconds
        );
        result.records = prepared.records;
        result.tables = prepared.tables.len();
        if kind.has_raw_scan() && result.raw_scan.is_none() {
            let scan = raw_scan::in_child(&c.bootstrap, &prepared.tables[0], None)?;
            eprintln!(
                "   raw scan: {:.0} rows/s, {:.2} CPU-s",
                scan.rows_per_s(),
                scan.cpu_s
            );
            result.raw_scan = Some(scan);
            // The format's own default zstd level: Paimon 1, Iceberg 3.
            let level = if format == "iceberg" { 3 } else { 1 };
            let limit = raw_scan::in_child(&c.bootstrap, &prepared.tables[0], Some(level))?;
            eprintln!(
                "   limit (raw scan + native Parquet zstd-{level} encode): {:.2} CPU-s per 1M rows",
                limit.cpu_s_per_million()
            );
            result.limit = Some(limit);
        }
        let log = work.join(format!(
            "logs/{}-{format}-{}.log",
            kind.name(),
            service.name()
        ));
        let figures = measure::backlog(service, &c, &admin, format, &prepared, &log)
            .await
            .with_context(|| format!("{} on {} {format}", service.name(), kind.name()))?;
        eprintln!(
            "   {}: {:.1} s, {:.0} rows/s, {:.2} CPU-s per 1M rows, peak RSS {} MiB",
            service.name(),
            figures.wall_s,
            figures.rows_per_s(),
            figures.cpu_s_per_million(),
            figures.peak_rss_bytes >> 20
        );
        match service {
            ServiceKind::Host => result.host = Some(figures),
            ServiceKind::Flink => result.flink = Some(figures),
        }
    }
    Ok(result)
}

async fn run_steady(
    args: &RunArgs,
    sizes: &Sizes,
    format: &str,
    work: &Path,
) -> Result<SteadyResult> {
    let mut result = SteadyResult {
        format: format.to_string(),
        host: None,
        flink: None,
    };
    for &service in &args.services {
        let c = take_cluster(args, format);
        let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
        let t = TablePath::new(
            "fluss",
            fluss_lake_e2e::unique_name(&format!("bench_steady_{}", service.name())),
        );
        let log = work.join(format!("logs/steady-{format}-{}.log", service.name()));
        let figures = freshness::steady(service, &c, &conn, format, sizes, &t, &log).await?;
        eprintln!(
            "   {}: freshness p50 {:.1} s, p99 {:.1} s (table freshness {} s)",
            service.name(),
            figures.p50_s,
            figures.p99_s,
            figures.table_freshness_s
        );
        match service {
            ServiceKind::Host => result.host = Some(figures),
            ServiceKind::Flink => result.flink = Some(figures),
        }
    }
    Ok(result)
}

/// The smoke's check: every figure asked for is there and plausible.
fn check(args: &RunArgs, r: &RunResult) -> Result<()> {
    let mut problems = Vec::new();
    for b in &r.backlog {
        for &kind in &args.services {
            let f = match kind {
                ServiceKind::Host => &b.host,
                ServiceKind::Flink => &b.flink,
            };
            match f {
                None => problems.push(format!(
                    "{} {}: no {} figures",
                    b.workload,
                    b.format,
                    kind.name()
                )),
                Some(f) => {
                    if f.records == 0 || f.cpu_s <= 0.0 || f.wall_s <= 0.0 || f.peak_rss_bytes == 0
                    {
                        problems.push(format!(
                            "{} {} {}: implausible {f:?}",
                            b.workload,
                            b.format,
                            kind.name()
                        ));
                    }
                    if f.first_commit_s > f.wall_s || f.startup_cpu_s > f.cpu_s {
                        problems.push(format!(
                            "{} {} {}: inconsistent {f:?}",
                            b.workload,
                            b.format,
                            kind.name()
                        ));
                    }
                    if f.lake.data_files == 0 || f.lake.data_bytes == 0 {
                        problems.push(format!(
                            "{} {} {}: no data files in the lake",
                            b.workload,
                            b.format,
                            kind.name()
                        ));
                    }
                }
            }
        }
        let scanned = [WorkloadKind::Log1, WorkloadKind::Log3, WorkloadKind::Log12]
            .iter()
            .any(|k| k.name() == b.workload);
        match (&b.raw_scan, scanned) {
            (Some(s), true) if s.records != b.records => problems.push(format!(
                "{}: the raw scan read {} of {} records",
                b.workload, s.records, b.records
            )),
            (None, true) => problems.push(format!("{}: no raw scan", b.workload)),
            _ => {}
        }
        match (&b.limit, scanned) {
            (Some(l), true) if l.records != b.records || l.cpu_s <= 0.0 => problems.push(format!(
                "{}: the limit's scan and encode read {} of {} records in {:.2} CPU-s",
                b.workload, l.records, b.records, l.cpu_s
            )),
            (None, true) => problems.push(format!("{}: no limit", b.workload)),
            _ => {}
        }
    }
    for s in &r.steady {
        for f in [&s.host, &s.flink].into_iter().flatten() {
            if f.samples == 0 || f.p99_s < f.p50_s || f.p50_s <= 0.0 {
                problems.push(format!("steady {}: implausible {f:?}", s.format));
            }
        }
    }
    for t in &r.wasm_tax {
        if t.native_cpu_s <= 0.0 || t.wasm_cpu_s <= 0.0 || t.data_plane_cpu_s <= 0.0 {
            problems.push(format!("WASM tax {}: implausible {t:?}", t.format));
        }
    }
    if !problems.is_empty() {
        bail!("the run is incomplete:\n  {}", problems.join("\n  "));
    }
    eprintln!(
        "check: {} backlog, {} steady and {} WASM-tax results complete",
        r.backlog.len(),
        r.steady.len(),
        r.wasm_tax.len()
    );
    Ok(())
}

fn git(args: &[&str]) -> String {
    std::process::Command::new("git")
        .args(args)
        .current_dir(repo_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn date() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}
