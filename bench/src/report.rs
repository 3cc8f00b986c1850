//! A run's results: the JSON file (every figure, the machine, the commit and the command), the
//! Markdown tables with host / Flink ratios and the targets, and an SVG chart of rows per
//! second and CPU seconds per million rows for the host, Flink and the raw scan.

use std::fmt::Write as _;

use serde::Serialize;

use crate::freshness::SteadyFigures;
use crate::measure::ServiceFigures;
use crate::rates::Throughput;
use crate::wasm_tax::TaxFigures;
use crate::workload::Sizes;

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub memory_bytes: u64,
    pub cpu_model: String,
}

impl Machine {
    pub fn this() -> Machine {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            .unwrap_or_default();
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes: memory_kib * 1024,
            cpu_model,
        }
    }
}

/// One backlog workload in one format: each service's figures, and the raw scan's.
#[derive(Debug, Clone, Serialize)]
pub struct BacklogResult {
    pub workload: String,
    pub format: String,
    pub records: u64,
    pub tables: usize,
    pub host: Option<ServiceFigures>,
    pub flink: Option<ServiceFigures>,
    pub raw_scan: Option<Throughput>,
    /// The limit: the raw scan plus a native Parquet encode of the same rows as lake files
    /// hold them (`bench raw-scan --encode-zstd-level`).
    #[serde(default)]
    pub limit: Option<Throughput>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SteadyResult {
    pub format: String,
    pub host: Option<SteadyFigures>,
    pub flink: Option<SteadyFigures>,
}

/// A target of the issue, checked on this run's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub what: String,
    pub value: f64,
    pub bound: String,
    pub met: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub date: String,
    pub commit: String,
    pub command: String,
    pub machine: Machine,
    pub scale: f64,
    pub sizes: Sizes,
    pub backlog: Vec<BacklogResult>,
    pub steady: Vec<SteadyResult>,
    pub wasm_tax: Vec<TaxFigures>,
    pub targets: Vec<Target>,
}

/// The issue's targets on whatever this run measured.
pub fn targets(
    backlog: &[BacklogResult],
    steady: &[SteadyResult],
    tax: &[TaxFigures],
) -> Vec<Target> {
    let mut out = Vec::new();
    for r in backlog {
        let name = format!("{} {}", r.workload, r.format);
        if let (Some(h), Some(f)) = (&r.host, &r.flink) {
            let v = h.rows_per_cpu_s() / f.rows_per_cpu_s();
            out.push(Target {
                what: format!("{name}: rows per CPU-second, host / Flink"),
                value: v,
                bound: "≥ 4".into(),
                met: v >= 4.0,
            });
            let v = h.peak_rss_bytes as f64 / f.peak_rss_bytes.max(1) as f64;
            out.push(Target {
                what: format!("{name}: peak RSS, host / Flink"),
                value: v,
                bound: "≤ 0.2".into(),
                met: v <= 0.2,
            });
        }
        if let (Some(h), Some(l)) = (&r.host, &r.limit) {
            let v = h.cpu_s_per_million() / l.cpu_s_per_million().max(1e-9);
            out.push(Target {
                what: format!(
                    "{name}: host CPU per row / limit (raw scan + native Parquet encode)"
                ),
                value: v,
                bound: "≤ 1.25".into(),
                met: v <= 1.25,
            });
        }
        if let (Some(h), Some(s)) = (&r.host, &r.raw_scan) {
            let v = h.rows_per_s() / s.rows_per_s();
            out.push(Target {
                what: format!("{name}: host rows/s / raw fluss-rs scan rows/s"),
                value: v,
                bound: "≥ 0.7".into(),
                met: v >= 0.7,
            });
        }
    }
    // One bucket keeps the cores as busy as three: the host's CPU seconds per wall second on
    // log-1 against log-3's, per format.
    for one in backlog.iter().filter(|r| r.workload == "log-1") {
        let three = backlog
            .iter()
            .find(|r| r.workload == "log-3" && r.format == one.format);
        if let (Some(h1), Some(h3)) = (&one.host, three.and_then(|r| r.host.as_ref())) {
            let busy = |h: &ServiceFigures| h.cpu_s / h.wall_s.max(1e-9);
            let v = busy(h1) / busy(h3).max(1e-9);
            out.push(Target {
                what: format!(
                    "log-1 {}: host cores busy (CPU-s per wall-s) on one bucket / on three",
                    one.format
                ),
                value: v,
                bound: "≥ 0.9".into(),
                met: v >= 0.9,
            });
        }
    }
    for t in tax {
        let v = t.ratio();
        out.push(Target {
            what: format!(
                "{}: WASM tax, pure-guest path (CPU, .wasm / native)",
                t.format
            ),
            value: v,
            bound: "≤ 1.5".into(),
            met: v <= 1.5,
        });
        let v = t.data_plane_ratio();
        out.push(Target {
            what: format!(
                "{}: WASM tax, data-plane path (CPU, .wasm + host encode / native)",
                t.format
            ),
            value: v,
            bound: "≤ 1.5".into(),
            met: v <= 1.5,
        });
    }
    for s in steady {
        if let Some(h) = &s.host {
            let bound = h.table_freshness_s as f64 + 2.0;
            out.push(Target {
                what: format!("steady {}: host freshness p99 (s)", s.format),
                value: h.p99_s,
                bound: format!("≤ {bound}"),
                met: h.p99_s <= bound,
            });
        }
    }
    out
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "–".into()
    }
}

/// The Markdown report.
pub fn markdown(r: &RunResult) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Benchmark: fluss-lake-host vs FlussLakeTiering\n");
    let _ = writeln!(
        md,
        "{} · commit `{}` · {} cores, {:.0} GiB ({}) · scale {}\n\n`{}`\n",
        r.date,
        r.commit,
        r.machine.nproc,
        r.machine.memory_bytes as f64 / (1u64 << 30) as f64,
        r.machine.cpu_model,
        r.scale,
        r.command
    );
    if !r.backlog.is_empty() {
        let _ = writeln!(
            md,
            "## Backlogs (service started on tables already written)\n"
        );
        let _ = writeln!(
            md,
            "| workload | format | records | service | wall s | rows/s | first commit s | CPU s (startup) | CPU s / 1M rows | rows per CPU-s | peak RSS MiB | lake files (data) | lake MiB |"
        );
        let _ = writeln!(
            md,
            "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for b in &r.backlog {
            for f in [&b.host, &b.flink].into_iter().flatten() {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {:.1} | {:.0} | {:.1} | {:.1} ({:.1}) | {:.2} | {:.0} | {:.0} | {} ({}) | {:.1} |",
                    b.workload,
                    b.format,
                    b.records,
                    f.service.name(),
                    f.wall_s,
                    f.rows_per_s(),
                    f.first_commit_s,
                    f.cpu_s,
                    f.startup_cpu_s,
                    f.cpu_s_per_million(),
                    f.rows_per_cpu_s(),
                    mib(f.peak_rss_bytes),
                    f.lake.files,
                    f.lake.data_files,
                    mib(f.lake.bytes)
                );
            }
            let limits = [
                ("raw fluss-rs scan", &b.raw_scan),
                ("limit: raw scan + native Parquet encode", &b.limit),
            ];
            for (what, s) in limits {
                let Some(s) = s else { continue };
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {what} | {:.1} | {:.0} | – | {:.1} | {:.2} | {:.0} | – | – | – |",
                    b.workload,
                    b.format,
                    s.records,
                    s.wall_s,
                    s.rows_per_s(),
                    s.cpu_s,
                    s.cpu_s_per_million(),
                    s.rows_per_cpu_s()
                );
            }
        }
        let _ = writeln!(
            md,
            "\n| workload | format | rows/s host / Flink | rows per CPU-s host / Flink | peak RSS Flink / host | host rows/s / raw scan | host CPU per row / limit |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|");
        for b in &r.backlog {
            let (h, f) = (b.host.as_ref(), b.flink.as_ref());
            let cell = |v: Option<String>| v.unwrap_or_else(|| "–".into());
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                b.workload,
                b.format,
                cell(h.zip(f).map(|(h, f)| ratio(h.rows_per_s(), f.rows_per_s()))),
                cell(
                    h.zip(f)
                        .map(|(h, f)| ratio(h.rows_per_cpu_s(), f.rows_per_cpu_s()))
                ),
                cell(
                    h.zip(f)
                        .map(|(h, f)| ratio(f.peak_rss_bytes as f64, h.peak_rss_bytes as f64))
                ),
                cell(
                    h.zip(b.raw_scan.as_ref())
                        .map(|(h, s)| format!("{:.0}%", 100.0 * h.rows_per_s() / s.rows_per_s()))
                ),
                cell(
                    h.zip(b.limit.as_ref())
                        .map(|(h, l)| ratio(h.cpu_s_per_million(), l.cpu_s_per_million()))
                ),
            );
        }
    }
    let started: Vec<_> = r
        .backlog
        .iter()
        .filter_map(|b| Some((b, b.host.as_ref()?.host_metrics.as_ref()?)))
        .collect();
    if !started.is_empty() {
        let _ = writeln!(
            md,
            "\n## Host: round start-up and heartbeats (its own /metrics)\n\nFrom a round's start to its splits planned, and to its plugin's first byte in the lake store: mean, p50 and p99 (interpolated within histogram buckets) and the bucket bound the largest is under; the largest heartbeat request and response.\n"
        );
        let _ = writeln!(
            md,
            "| workload | format | tables | rounds | plan s mean / p50 / p99 / max ≤ | first write s mean / p50 / p99 / max ≤ | heartbeats | largest heartbeat request / response B | peak RSS MiB | CPU s | rows per CPU-s |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|");
        for (b, m) in started {
            let h = b.host.as_ref().expect("filtered above");
            let times = |s: &fluss_lake_e2e::host_metrics::HistogramSummary| {
                format!(
                    "{:.3} / {:.3} / {:.3} / {}",
                    s.mean, s.p50, s.p99, s.max_at_most
                )
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} | {} / {} | {:.0} | {:.1} | {:.0} |",
                b.workload,
                b.format,
                b.tables,
                m.plan_s.count,
                times(&m.plan_s),
                times(&m.first_write_s),
                m.heartbeats,
                m.heartbeat_request_max_bytes,
                m.heartbeat_response_max_bytes,
                mib(h.peak_rss_bytes),
                h.cpu_s,
                h.rows_per_cpu_s()
            );
        }
    }
    if !r.steady.is_empty() {
        let _ = writeln!(
            md,
            "\n## Steady load (writer at a fixed rate, freshness = append → in a registered lake snapshot)\n"
        );
        let _ = writeln!(
            md,
            "| format | service | rows/s written | seconds | table freshness s | p50 s | p99 s | max s | CPU s / 1M rows | peak RSS MiB |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for s in &r.steady {
            for f in [&s.host, &s.flink].into_iter().flatten() {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.0} |",
                    s.format,
                    f.service.name(),
                    f.rate_rows_per_s,
                    f.seconds,
                    f.table_freshness_s,
                    f.p50_s,
                    f.p99_s,
                    f.max_s,
                    f.cpu_s_per_million(),
                    mib(f.peak_rss_bytes)
                );
            }
        }
    }
    if !r.wasm_tax.is_empty() {
        let _ = writeln!(
            md,
            "\n## WASM tax (the same guest code natively and as .wasm with the host's default sandbox)\n"
        );
        let _ = writeln!(
            md,
            "| format | rows | rows per call | native CPU s | .wasm CPU s (pure guest) | ratio | .wasm + host encode CPU s (data plane) | ratio |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for t in &r.wasm_tax {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.2} | {:.2} | {:.2}× | {:.2} | {:.2}× |",
                t.format,
                t.records,
                t.batch_rows,
                t.native_cpu_s,
                t.wasm_cpu_s,
                t.ratio(),
                t.data_plane_cpu_s,
                t.data_plane_ratio()
            );
        }
    }
    if !r.targets.is_empty() {
        let _ = writeln!(md, "\n## Targets\n");
        let _ = writeln!(md, "| target | value | bound | met |");
        let _ = writeln!(md, "|---|---:|---|---|");
        for t in &r.targets {
            let _ = writeln!(
                md,
                "| {} | {:.2} | {} | {} |",
                t.what,
                t.value,
                t.bound,
                if t.met { "yes" } else { "**no**" }
            );
        }
    }
    md
}

/// Grouped bars: for each backlog workload, rows/s (left panel) and CPU seconds per million
/// rows (right panel) of the host, Flink and the raw scan.
pub fn svg(r: &RunResult) -> String {
    struct Group {
        label: String,
        bars: Vec<(&'static str, f64, f64)>,
    }
    let groups: Vec<Group> = r
        .backlog
        .iter()
        .map(|b| {
            let mut bars = Vec::new();
            if let Some(h) = &b.host {
                bars.push(("host", h.rows_per_s(), h.cpu_s_per_million()));
            }
            if let Some(f) = &b.flink {
                bars.push(("flink", f.rows_per_s(), f.cpu_s_per_million()));
            }
            if let Some(s) = &b.raw_scan {
                bars.push(("raw scan", s.rows_per_s(), s.cpu_s_per_million()));
            }
            Group {
                label: format!("{} {}", b.workload, b.format),
                bars,
            }
        })
        .collect();
    let colour = |name: &str| match name {
        "host" => "#2b7bba",
        "flink" => "#e6550d",
        _ => "#7f7f7f",
    };
    let row_h = 18.0;
    let group_h = |g: &Group| g.bars.len() as f64 * row_h + 14.0;
    let height = 70.0 + groups.iter().map(group_h).sum::<f64>();
    let (label_w, panel_w, gap) = (170.0, 330.0, 40.0);
    let width = label_w + 2.0 * panel_w + gap + 20.0;
    let max_rate = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.1))
        .fold(1.0, f64::max);
    let max_cpu = groups
        .iter()
        .flat_map(|g| g.bars.iter().map(|b| b.2))
        .fold(1e-9, f64::max);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{label_w}" y="18" font-size="13" font-weight="bold">rows/s (higher is better)</text><text x="{:.0}" y="18" font-size="13" font-weight="bold">CPU-s per 1M rows (lower is better)</text>"#,
        label_w + panel_w + gap
    );
    let _ = writeln!(
        s,
        r#"<text x="{label_w}" y="34" fill="dimgray">{} · commit {} · {} cores · scale {}</text>"#,
        r.date, r.commit, r.machine.nproc, r.scale
    );
    let mut y = 50.0;
    for g in &groups {
        let _ = writeln!(
            s,
            r#"<text x="4" y="{:.0}" font-weight="bold">{}</text>"#,
            y + 12.0,
            escape(&g.label)
        );
        for (name, rate, cpu) in &g.bars {
            let w1 = (rate / max_rate * (panel_w - 70.0)).max(1.0);
            let w2 = (cpu / max_cpu * (panel_w - 70.0)).max(1.0);
            let x2 = label_w + panel_w + gap;
            let _ = writeln!(
                s,
                r#"<text x="{:.0}" y="{:.0}" text-anchor="end" fill="black">{name}</text><rect x="{label_w}" y="{y:.0}" width="{w1:.1}" height="{:.0}" fill="{c}"/><text x="{:.1}" y="{:.0}">{:.0}</text><rect x="{x2}" y="{y:.0}" width="{w2:.1}" height="{:.0}" fill="{c}"/><text x="{:.1}" y="{:.0}">{:.2}</text>"#,
                label_w - 6.0,
                y + 12.0,
                row_h - 4.0,
                label_w + w1 + 4.0,
                y + 12.0,
                rate,
                row_h - 4.0,
                x2 + w2 + 4.0,
                y + 12.0,
                cpu,
                c = colour(name)
            );
            y += row_h;
        }
        y += 14.0;
    }
    s.push_str("</svg>\n");
    s
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
