//! A Prometheus of a test's own (`cluster/prometheus/start.sh`: Debian's prometheus, extracted
//! by `cluster/prometheus/setup.sh` into `target/prometheus-dist`), scraping the host's
//! `--metrics.address` every second as job `fluss-lake-host`, on a free loopback port and with
//! its data in `target/prometheus/<unique>/`; stopped when dropped. Queries go through the HTTP
//! API (`/api/v1/query`), as Grafana's do.
//!
//! Also the Grafana dashboard's queries (`docs/grafana/fluss-lake-host.json`), with their
//! variables filled in, to run against a real Prometheus.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde_json::Value;

use crate::{repo_root, unique_name};

/// The Grafana dashboard, relative to the repository root.
pub const DASHBOARD: &str = "docs/grafana/fluss-lake-host.json";
/// The suggested alerting rules, relative to the repository root.
pub const ALERT_RULES: &str = "docs/prometheus/alerts.yml";

/// One series of an instant query's result: its labels (`__name__` included when the
/// expression keeps it) and its value.
pub type Sample = (BTreeMap<String, String>, f64);

/// A scrape target as Prometheus sees it (`/api/v1/targets`).
#[derive(Debug, Clone)]
pub struct TargetHealth {
    pub scrape_url: String,
    /// `up`, `down` or `unknown` (not scraped yet).
    pub health: String,
    pub last_error: String,
}

/// An alert of a loaded rule file (`/api/v1/alerts`).
#[derive(Debug, Clone)]
pub struct Alert {
    /// `alertname`, the rule's labels and the series' labels.
    pub labels: BTreeMap<String, String>,
    /// `pending` (its `for` has not passed yet) or `firing`.
    pub state: String,
}

/// A rule of a loaded rule file (`/api/v1/rules`).
#[derive(Debug, Clone)]
pub struct RuleHealth {
    pub name: String,
    /// `ok`, `err` or `unknown` (not evaluated yet).
    pub health: String,
    pub last_error: String,
}

/// A running Prometheus; stopped (its pid only, `cluster/prometheus/stop.sh`) when dropped.
/// Its directory is removed then, unless the test is panicking (kept for its log).
pub struct Prometheus {
    port: u16,
    dir: PathBuf,
}

impl Prometheus {
    /// Starts one scraping `targets` (`HOST:PORT`, the host's `--metrics.address`) every
    /// second. No targets: it scrapes nothing (to check that expressions parse). The first
    /// samples arrive some 5 s after the start: wait with [`Prometheus::wait_for`].
    pub fn start(targets: &[&str]) -> anyhow::Result<Self> {
        Self::start_with_rules(targets, &[])
    }

    /// As [`Prometheus::start`], with rule files loaded (evaluated every second), e.g.
    /// [`ALERT_RULES`].
    pub fn start_with_rules(targets: &[&str], rules: &[&Path]) -> anyhow::Result<Self> {
        let bin = prometheus_bin();
        if !bin.is_file() {
            bail!(
                "no Prometheus at {}: run cluster/prometheus/setup.sh first (scripts/test.sh runs it)",
                bin.display()
            );
        }
        let dir = repo_root()
            .join("target/prometheus")
            .join(unique_name("test"));
        let mut failure = String::new();
        // A free port may be taken by someone else before Prometheus binds it: start.sh
        // refuses a busy port, and a new one is tried.
        for _ in 0..3 {
            let port = free_port()?;
            let mut cmd = Command::new(repo_root().join("cluster/prometheus/start.sh"));
            cmd.arg("--port")
                .arg(port.to_string())
                .arg("--dir")
                .arg(&dir);
            for t in targets {
                cmd.arg("--target").arg(t);
            }
            for r in rules {
                cmd.arg("--rules").arg(repo_root().join(r));
            }
            let out = cmd
                .output()
                .context("cannot run cluster/prometheus/start.sh")?;
            if out.status.success() {
                return Ok(Prometheus { port, dir });
            }
            failure = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if !failure.contains("is in use") {
                break;
            }
        }
        bail!(
            "cluster/prometheus/start.sh --dir {} failed:\n{failure}",
            dir.display()
        )
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its config (`prometheus.yml`), data and log (`prometheus.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// An instant query (`GET /api/v1/query`): one sample per series (a scalar result is one
    /// sample without labels). Bad PromQL is an error with Prometheus's message.
    pub fn query(&self, promql: &str) -> anyhow::Result<Vec<Sample>> {
        let data = self
            .api("/api/v1/query", &[("query", promql)])
            .with_context(|| format!("query {promql}"))?;
        parse_query_data(&data).with_context(|| format!("query {promql}"))
    }

    /// Runs `promql` every 500 ms until `done` holds for its result, and returns that result.
    /// After `timeout`, an error with the last result (or the last error) and the scrape
    /// targets' health.
    pub fn wait_for(
        &self,
        promql: &str,
        mut done: impl FnMut(&[Sample]) -> bool,
        timeout: Duration,
    ) -> anyhow::Result<Vec<Sample>> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match self.query(promql) {
                Ok(result) if done(&result) => return Ok(result),
                Ok(result) => format!("{result:?}"),
                Err(e) => format!("error: {e:#}"),
            };
            if Instant::now() >= deadline {
                let targets = match self.targets() {
                    Ok(t) => format!("{t:#?}"),
                    Err(e) => format!("unknown ({e:#})"),
                };
                bail!(
                    "{promql} did not reach the expected result within {timeout:?}\n\
                     last result: {last}\nscrape targets: {targets}\nlog: {}",
                    self.dir.join("prometheus.log").display()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The scrape targets and their health (`GET /api/v1/targets`).
    pub fn targets(&self) -> anyhow::Result<Vec<TargetHealth>> {
        let data = self.api("/api/v1/targets", &[("state", "active")])?;
        Ok(array(&data, "activeTargets")?
            .iter()
            .map(|t| TargetHealth {
                scrape_url: str_field(t, "scrapeUrl"),
                health: str_field(t, "health"),
                last_error: str_field(t, "lastError"),
            })
            .collect())
    }

    /// Active alerts of the loaded rule files (`GET /api/v1/alerts`).
    pub fn alerts(&self) -> anyhow::Result<Vec<Alert>> {
        let data = self.api("/api/v1/alerts", &[])?;
        array(&data, "alerts")?
            .iter()
            .map(|a| {
                Ok(Alert {
                    labels: labels(&a["labels"])?,
                    state: str_field(a, "state"),
                })
            })
            .collect()
    }

    /// Every rule of the loaded rule files with its health (`GET /api/v1/rules`): a rule
    /// whose evaluation failed is `err` with the error.
    pub fn rules(&self) -> anyhow::Result<Vec<RuleHealth>> {
        let data = self.api("/api/v1/rules", &[])?;
        let mut rules = Vec::new();
        for group in array(&data, "groups")? {
            for r in array(group, "rules")? {
                rules.push(RuleHealth {
                    name: str_field(r, "name"),
                    health: str_field(r, "health"),
                    last_error: str_field(r, "lastError"),
                });
            }
        }
        Ok(rules)
    }

    /// A GET of the HTTP API: the `data` of a `"status": "success"` answer, or an error
    /// with the answer's `errorType` and `error`.
    fn api(&self, path: &str, params: &[(&str, &str)]) -> anyhow::Result<Value> {
        let query: Vec<String> = params
            .iter()
            .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
            .collect();
        let target = if query.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{}", query.join("&"))
        };
        let (status, body) = self.get(&target)?;
        let answer: Value = serde_json::from_str(&body)
            .map_err(|e| anyhow!("HTTP {status} from {path}, not JSON ({e}): {body}"))?;
        if answer["status"] != "success" {
            bail!(
                "HTTP {status} from {path}: {} {}",
                answer["errorType"].as_str().unwrap_or("?"),
                answer["error"].as_str().unwrap_or(&body)
            );
        }
        Ok(answer["data"].clone())
    }

    fn get(&self, target: &str) -> anyhow::Result<(u16, String)> {
        http_get(&format!("127.0.0.1:{}", self.port), target)
            .with_context(|| format!("Prometheus at {}", self.url()))
    }
}

/// One HTTP/1.0 GET of `target` at `address` (HOST:PORT; no chunked encoding, the connection
/// closes after the answer): status and body. Also how tests read the host's own endpoints.
pub fn http_get(address: &str, target: &str) -> anyhow::Result<(u16, String)> {
    let mut s = TcpStream::connect(address).with_context(|| format!("connect to {address}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.set_write_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {target} HTTP/1.0\r\nHost: {address}\r\nAccept: application/json\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("read the answer to GET {target}"))?;
    let text = String::from_utf8(raw).context("an answer that is not UTF-8")?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("a malformed HTTP answer to GET {target}: {text}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("a malformed HTTP status line: {head}"))?;
    Ok((status, body.to_string()))
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let stopped = Command::new(repo_root().join("cluster/prometheus/stop.sh"))
            .arg("--dir")
            .arg(&self.dir)
            .output();
        match stopped {
            Ok(out) if out.status.success() => {
                if std::thread::panicking() {
                    eprintln!(
                        "Prometheus's config, data and log kept in {}",
                        self.dir.display()
                    );
                } else {
                    let _ = std::fs::remove_dir_all(&self.dir);
                }
            }
            Ok(out) => eprintln!(
                "cluster/prometheus/stop.sh --dir {} failed: {}{}",
                self.dir.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("cannot run cluster/prometheus/stop.sh: {e}"),
        }
    }
}

/// Where `cluster/prometheus/setup.sh` puts the binary (`PROM_BIN`, `PROM_DIST` as in
/// `cluster/prometheus/env.sh`).
fn prometheus_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("PROM_BIN") {
        return bin.into();
    }
    std::env::var_os("PROM_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/prometheus-dist"))
        .join("usr/bin/prometheus")
}

/// A loopback port nobody listens on now.
pub fn free_port() -> anyhow::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("bind 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `data` of an instant query's answer: a vector, or a scalar as one sample.
fn parse_query_data(data: &Value) -> anyhow::Result<Vec<Sample>> {
    match data["resultType"].as_str() {
        Some("vector") => array(data, "result")?
            .iter()
            .map(|s| Ok((labels(&s["metric"])?, sample_value(&s["value"])?)))
            .collect(),
        Some("scalar") => Ok(vec![(BTreeMap::new(), sample_value(&data["result"])?)]),
        other => bail!("a result of type {other:?}, not a vector or scalar: {data}"),
    }
}

/// `[<unix seconds>, "<value>"]`; the value may be `NaN`, `+Inf` or `-Inf`.
fn sample_value(v: &Value) -> anyhow::Result<f64> {
    let s = v[1]
        .as_str()
        .ok_or_else(|| anyhow!("a sample without a value: {v}"))?;
    match s {
        "NaN" => Ok(f64::NAN),
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => s.parse().map_err(|e| anyhow!("a sample value {s:?}: {e}")),
    }
}

fn labels(v: &Value) -> anyhow::Result<BTreeMap<String, String>> {
    v.as_object()
        .ok_or_else(|| anyhow!("labels that are not an object: {v}"))?
        .iter()
        .map(|(k, v)| {
            let v = v
                .as_str()
                .ok_or_else(|| anyhow!("label {k} is not a string: {v}"))?;
            Ok((k.clone(), v.to_string()))
        })
        .collect()
}

fn array<'a>(v: &'a Value, key: &str) -> anyhow::Result<&'a Vec<Value>> {
    v[key]
        .as_array()
        .ok_or_else(|| anyhow!("no array {key} in {v}"))
}

fn str_field(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

/// Every panel query (`targets[].expr`, rows' panels included) of a Grafana dashboard, with
/// its variables filled in as "everything": query and custom variables (`$table`,
/// `$database`) become `.*`, interval variables (`$window`) their current value, Grafana's
/// `$__rate_interval`, `$__interval` and `$__range` `1m`. Panics on a dashboard that cannot
/// be read, or on a variable it does not define.
pub fn dashboard_queries(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let dashboard: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let mut values: BTreeMap<String, String> = ["__rate_interval", "__interval", "__range"]
        .iter()
        .map(|v| (v.to_string(), "1m".to_string()))
        .collect();
    for var in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = str_field(var, "name");
        match var["type"].as_str() {
            Some("interval") => {
                let current = &var["current"]["value"];
                let value = current
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| {
                        var["query"]
                            .as_str()
                            .and_then(|q| q.split(',').next())
                            .map(|v| v.trim().to_string())
                    })
                    .unwrap_or_else(|| panic!("interval variable {name} without a value"));
                values.insert(name, value);
            }
            Some("query" | "custom" | "textbox" | "constant") => {
                values.insert(name, ".*".to_string());
            }
            _ => {}
        }
    }
    let mut exprs = Vec::new();
    collect_exprs(&dashboard["panels"], &mut exprs);
    exprs
        .into_iter()
        .map(|e| {
            fill_variables(&e, &values)
                .unwrap_or_else(|v| panic!("{}: unknown variable ${v} in {e}", path.display()))
        })
        .collect()
}

fn collect_exprs(panels: &Value, out: &mut Vec<String>) {
    for panel in panels.as_array().into_iter().flatten() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                out.push(expr.to_string());
            }
        }
        collect_exprs(&panel["panels"], out);
    }
}

/// `$name`, `${name}` and `${name:format}` replaced by their values; Err(name) for one
/// without a value.
fn fill_variables(expr: &str, values: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(expr.len());
    let mut rest = expr;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, len) = if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or_else(|| after.to_string())?;
            let inner = &braced[..end];
            (inner.split(':').next().unwrap_or(inner), end + 2)
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            // A `$` of the expression itself (a regular expression's end anchor).
            out.push('$');
        } else {
            out.push_str(values.get(name).ok_or_else(|| name.to_string())?);
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Runs every query of the dashboard ([`DASHBOARD`]) through `prometheus`'s API; fails,
/// naming each, on any query Prometheus refuses (bad PromQL). Returns each query with the
/// number of series it found, for a test to require data where it expects some.
pub fn check_dashboard_queries(prometheus: &Prometheus) -> anyhow::Result<Vec<(String, usize)>> {
    let queries = dashboard_queries(&repo_root().join(DASHBOARD));
    if queries.is_empty() {
        bail!("{DASHBOARD} has no panel queries");
    }
    let mut found = Vec::new();
    let mut refused = Vec::new();
    for q in queries {
        match prometheus.query(&q) {
            Ok(result) => found.push((q, result.len())),
            Err(e) => refused.push(format!("{e:#}")),
        }
    }
    if !refused.is_empty() {
        bail!(
            "Prometheus refuses {} queries of {DASHBOARD}:\n{}",
            refused.len(),
            refused.join("\n")
        );
    }
    Ok(found)
}
