//! Command-line options, in the FlussLakeTiering convention.
//!
//! `--fluss.<key>` configure the Fluss client, `--datalake.format` and
//! `--datalake.<format>.<key>` the lake plugins (prefix stripped, as Flink does),
//! `--lake.tiering.<key>` the tiering behaviour (prefix kept), plus the host's own
//! `--plugin` and `--tiering.*` options. Prefixed keys are open-ended, so they are split off
//! before clap parses the rest; clap still documents every key the host itself knows.
//! [`file`] reads the same options from `--config FILE`; [`effective`] renders what the host
//! runs with for `--print-config`.

pub mod effective;
pub mod file;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::coordinator::client::PlainCredentials;
use crate::error::{Error, ErrorKind, Result};
use crate::plugin::cache::{CacheSettings, DEFAULT_KEEP_UNUSED};
use crate::plugin::source::{PluginArgs, PluginSource};
use crate::tiering::routing::RouteRule;
use crate::warehouse::StorageOptions;

#[derive(Debug, Parser)]
#[command(
    name = "fluss-lake-host",
    version,
    args_override_self = true,
    about = "Tiers Apache Fluss tables into lakehouse formats implemented as WebAssembly plugins.",
    long_about = "Tiers Apache Fluss tables into lakehouse formats implemented as WebAssembly plugins.\n\n\
        Replaces the FlussLakeTiering Flink job: asks the Fluss coordinator for tables that are due, \
        copies each bucket's new log records into the table's lake format through the plugin that \
        serves it, and commits lake snapshot and Fluss offsets in two phases.\n\n\
        Open-ended options (not listed below):\n  \
        --datalake.<format>.<key> <value>  plugin configuration for <format>, prefix stripped; overlays \
        the table's table.datalake.<format>.* properties (e.g. --datalake.paimon.warehouse /wh)\n  \
        --lake.tiering.<key> <value>       tiering options passed to plugins' committers, prefix kept\n  \
        --fluss.<key> <value>              Fluss client options: client.connect-timeout, \
        client.scanner.log.fetch.max-bytes, client.scanner.log.fetch.max-bytes-for-bucket, \
        client.scanner.log.max-poll-records, client.security.protocol, \
        client.security.sasl.mechanism, client.security.sasl.username, client.security.sasl.password, \
        client.fs.<key> (the host's own settings and credentials for the cluster's remote storage, \
        prefix stripped, used when the cluster hands out none: e.g. \
        --fluss.client.fs.gs.auth.service.account.json.keyfile /key.json)"
)]
pub struct Cli {
    /// A TOML file of options: keys are the long options without `--` (dotted keys, quoted
    /// keys or tables; lists for repeatable options; `true` for flags). The command line wins.
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print the effective configuration (defaults, file and command line; secrets masked)
    /// as a TOML file and exit.
    #[arg(long = "print-config")]
    pub print_config: bool,

    /// Fluss bootstrap servers (host:port of the coordinator or any server).
    #[arg(long = "fluss.bootstrap.servers", value_name = "HOST:PORT")]
    pub bootstrap_servers: String,

    #[command(flatten)]
    pub plugin_args: PluginArgs,

    /// Serve Prometheus metrics at /metrics, and /healthz and /readyz, on this address
    /// (e.g. 127.0.0.1:9250). Off unless set.
    #[arg(long = "metrics.address", value_name = "HOST:PORT")]
    pub metrics_address: Option<SocketAddr>,

    /// Log format: `text` for people, `json` (one object per line) for log shippers.
    #[arg(long = "log.format", value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// How often a round that is still reading logs its progress (records done and to do,
    /// rate); `0` turns progress lines off.
    #[arg(long = "log.progress-interval", value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub log_progress_interval: Duration,

    /// Routes tables to a plugin by name pattern, overriding their `table.datalake.format`:
    /// `DATABASE.TABLE=FORMAT` with `*`/`?` wildcards, e.g. `'sales.*=delta'`. Repeatable; the
    /// first matching rule wins. A table's custom property `lake.plugin` wins over every rule.
    /// Fluss's union read cannot read tables tiered to another format than their own.
    #[arg(long = "route", value_name = "DATABASE.TABLE=FORMAT", value_parser = RouteRule::parse)]
    pub routes: Vec<RouteRule>,

    /// How often plugin files are checked for changes (hot swap); `0` checks only on SIGHUP.
    #[arg(long = "plugin-watch-interval", value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub plugin_watch_interval: Duration,

    /// Longest time one call into a plugin may run before it is interrupted (a write of one
    /// batch, a commit).
    #[arg(long = "plugin-call-timeout", value_name = "DURATION", default_value = "10min", value_parser = parse_duration)]
    pub plugin_call_timeout: Duration,

    /// Largest write result, committable or property set a plugin may return from one call.
    #[arg(long = "plugin-max-result-size", value_name = "SIZE", default_value = "64mb", value_parser = parse_size)]
    pub plugin_max_result_size: usize,

    /// Most bytes the write results of one round may hold together (they are kept until the
    /// round commits).
    #[arg(long = "plugin-round-result-limit", value_name = "SIZE", default_value = "256mb", value_parser = parse_size)]
    pub plugin_round_result_limit: usize,

    /// Most bytes a plugin may write to storage in one round of one table, over all its
    /// buckets; a round over it fails and its files are deleted.
    #[arg(long = "plugin-round-write-limit", value_name = "SIZE", default_value = "64gb", value_parser = parse_size)]
    pub plugin_round_write_limit: usize,

    /// Most objects a plugin may write to storage in one round of one table.
    #[arg(
        long = "plugin-round-object-limit",
        value_name = "COUNT",
        default_value_t = 100_000
    )]
    pub plugin_round_object_limit: u64,

    /// Log lines one plugin instance may write per second (bursts of ten times as many);
    /// lines over it are dropped and counted.
    #[arg(long = "plugin-log-rate", value_name = "LINES", default_value_t = 100)]
    pub plugin_log_rate: u32,

    /// Lake format whose plugin must be loaded at startup (FlussLakeTiering's required option).
    /// Tables are still routed by their own `table.datalake.format` property.
    #[arg(long = "datalake.format", value_name = "FORMAT")]
    pub datalake_format: Option<String>,

    /// How long to wait before asking the coordinator again after it had no table to tier.
    #[arg(long = "tiering.poll.table.interval", value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub poll_table_interval: Duration,

    /// Heartbeat period; must stay well below the coordinator's fixed 120 s tiering timeout.
    #[arg(long = "tiering.heartbeat.interval", value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub heartbeat_interval: Duration,

    /// Longest wait of one Fluss log poll while reading a bucket.
    #[arg(long = "tiering.poll.timeout", value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub poll_timeout: Duration,

    /// Consecutive failed heartbeats after which every round in flight is abandoned (the host
    /// keeps running and reconnecting).
    #[arg(
        long = "tiering.heartbeat.max.failures",
        value_name = "N",
        default_value_t = 10
    )]
    pub heartbeat_max_failures: u32,

    /// Tables tiered at the same time (default: the number of CPUs, at least 2).
    #[arg(
        long = "lake.tiering.max-concurrent-tables",
        value_name = "N",
        default_value_t = default_concurrency()
    )]
    pub max_concurrent_tables: usize,

    /// Bucket splits of one table read and written at the same time.
    #[arg(
        long = "lake.tiering.max-concurrent-splits",
        value_name = "N",
        default_value_t = 4
    )]
    pub max_concurrent_splits: usize,

    /// Plugin instances writing splits at the same time, over every table (default: the number
    /// of CPUs, at least 2). With `--plugin-memory-limit` it bounds the memory writing takes,
    /// whatever the number of tables and buckets: each instance holds its linear memory and
    /// the files the native data plane encodes for it, both within that limit.
    #[arg(
        long = "lake.tiering.max-concurrent-writers",
        value_name = "N",
        default_value_t = default_concurrency()
    )]
    pub max_concurrent_writers: usize,

    /// Who encodes the Parquet files of plugins that export `batch-writer` (contract 0.3.8):
    /// `native`, the host (the plugin lays out each file, the host encodes the rows it keeps,
    /// so they never cross into WebAssembly); `guest`, the plugin in WebAssembly, as plugins
    /// without the export always do.
    #[arg(
        long = "plugin-data-plane",
        value_name = "PLANE",
        default_value = "native"
    )]
    pub plugin_data_plane: DataPlane,

    /// Directory for compiled plugins (default: $XDG_CACHE_HOME or ~/.cache, /fluss-lake-host;
    /// no cache when neither is set). It must be the host user's alone (mode 0700): it holds
    /// native code.
    #[arg(long = "plugin-cache-dir", value_name = "DIR")]
    pub plugin_cache_dir: Option<PathBuf>,

    /// The key that authenticates compiled plugins in the cache, created when missing
    /// (default: plugin-cache.key in the state directory). Hosts sharing a cache directory
    /// share its entries only if they share the key.
    #[arg(long = "plugin-cache-key", value_name = "FILE")]
    pub plugin_cache_key: Option<PathBuf>,

    /// Do not cache compiled plugins on disk.
    #[arg(long = "no-plugin-cache")]
    pub no_plugin_cache: bool,

    /// Write /tmp/perf-<pid>.map so that `perf report` names the plugins' functions (for
    /// profiling; adds a little work when plugins are compiled).
    #[arg(long = "plugin-perf-map")]
    pub plugin_perf_map: bool,

    /// Longest time compiling one plugin may take; a plugin that takes longer is refused
    /// (compilation runs in a child process, off the host's runtime).
    #[arg(long = "plugin-compile-timeout", value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    pub plugin_compile_timeout: Duration,

    /// Address space of the process that compiles a plugin; a plugin that needs more is
    /// refused.
    #[arg(long = "plugin-compile-memory-limit", value_name = "SIZE", default_value = "4gb", value_parser = parse_size)]
    pub plugin_compile_memory_limit: usize,

    /// Linear-memory limit of one plugin instance (e.g. 512mb, 2gb).
    #[arg(long = "plugin-memory-limit", value_name = "SIZE", default_value = "2gb", value_parser = parse_size)]
    pub plugin_memory_limit: usize,

    /// Directory for the host's own state (the rounds in flight, handed back to the
    /// coordinator at once after a crash). One per host process; it is locked while in use.
    /// Default: $XDG_STATE_HOME or ~/.local/state, /fluss-lake-host.
    #[arg(long = "state-dir", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// On SIGTERM/SIGINT, how long rounds in flight may take to finish before they are
    /// abandoned and reported failed.
    #[arg(long = "shutdown.grace-period", value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub shutdown_grace_period: Duration,

    /// How often, at most, snapshot expiry and compaction run on a table that gets no new
    /// data (its rounds commit nothing). A table that does get data is maintained after every
    /// round that commits; one whose last call left work is maintained again at its next
    /// round. `0` maintains an idle table at every round (once per table freshness).
    #[arg(long = "maintenance.idle-interval", value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub maintenance_idle_interval: Duration,

    /// How long startup waits for the Fluss cluster and the warehouses the host's options name
    /// while they cannot be reached or are not ready (a cluster starting with the host, a
    /// coordinator failing over, a store answering errors): every attempt is logged, and
    /// /readyz answers 503 meanwhile. Refused credentials and a store that cannot make creates
    /// atomic fail at once; so does every failure with `0`.
    #[arg(long = "startup.timeout", value_name = "DURATION", default_value = "5min", value_parser = parse_duration)]
    pub startup_timeout: Duration,

    /// Budget of one coordinator RPC, connecting included (at most 60s).
    #[arg(long = "rpc.timeout", value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub rpc_timeout: Duration,

    /// How long the cluster keeps a KV snapshot's files for the host once it leased them (a
    /// primary-key bucket's first round reads its latest snapshot): longer than copying a
    /// bucket's snapshot takes. The lease is dropped as soon as the files are copied; a snapshot
    /// gone before that (its lease expired) is given up for the bucket's latest one.
    #[arg(long = "tiering.kv-snapshot.lease-duration", value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub kv_snapshot_lease_duration: Duration,

    /// What a round does with a tiered bucket whose log no longer holds the offsets after
    /// the lake's (`table.log.ttl` expired them while no host tiered it): `refuse` stops that
    /// bucket with an error naming the lost range until an operator chooses; `accept` tiers a
    /// log table's bucket on from the log start and records the skipped range in the lake
    /// snapshot (`fluss-log-gap`), and rebuilds a primary-key bucket from the cluster's latest
    /// KV snapshot, replacing the bucket's lake files (`fluss-replaced-buckets`). A table's
    /// custom property `lake.tiering.on-log-gap` overrides this for that table.
    #[arg(
        long = "tiering.on-log-gap",
        value_name = "POLICY",
        default_value = "refuse"
    )]
    pub on_log_gap: OnLogGap,
}

/// `--tiering.on-log-gap` and the table property `lake.tiering.on-log-gap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnLogGap {
    /// The bucket is not tiered; every round names the lost range.
    Refuse,
    /// A log table's bucket goes on from the log start and the lost range is recorded; a
    /// primary-key bucket is rebuilt from its latest KV snapshot (its state is exact again,
    /// its changelog in the gap is lost to the lake) and the rebuild is recorded.
    Accept,
}

/// `--plugin-data-plane`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DataPlane {
    /// The host encodes the files of plugins that export `batch-writer`.
    Native,
    /// Every plugin encodes its own files, in WebAssembly.
    Guest,
}

/// `--log.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// The Fluss client options the host passes on (`--fluss.<key>`).
pub const FLUSS_CLIENT_OPTIONS: &[&str] = &[
    "client.connect-timeout",
    "client.scanner.log.fetch.max-bytes",
    "client.scanner.log.fetch.max-bytes-for-bucket",
    "client.scanner.log.max-poll-records",
    "client.security.protocol",
    "client.security.sasl.mechanism",
    "client.security.sasl.username",
    "client.security.sasl.password",
    "client.security.sasl.jaas.config",
    "remote.data.dir",
];

/// Whether an option's value may be a secret, and so is never printed: what names a secret
/// for the warehouses, and, misspellings included, anything naming a pass(word), a key or a
/// JAAS line.
pub fn is_secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    crate::warehouse::options::names_a_secret(key)
        || ["pass", "jaas", "key"].iter().any(|s| k.contains(s))
}

/// Everything the host runs with, after parsing and validation.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub bootstrap_servers: String,
    /// `--plugin` and `--plugin-dir`, in command-line order (files first).
    pub plugins: Vec<PluginSource>,
    /// `--plugin-max-file-size`.
    pub plugin_max_file_size: u64,
    pub plugin_compile_timeout: Duration,
    pub plugin_compile_memory_limit: u64,
    /// Load the plugins built into the binary (`--no-builtin-plugins` turns them off).
    pub builtin_plugins: bool,
    pub metrics_address: Option<SocketAddr>,
    pub log_format: LogFormat,
    /// None: no progress lines.
    pub log_progress_interval: Option<Duration>,
    /// `--print-config`: the effective configuration, rendered; the host prints it and exits.
    pub print_config: Option<String>,
    pub routes: Vec<RouteRule>,
    pub plugin_watch_interval: Duration,
    pub plugin_call_timeout: Duration,
    pub plugin_max_result_size: usize,
    pub plugin_round_result_limit: usize,
    pub plugin_round_write_limit: u64,
    pub plugin_round_object_limit: u64,
    pub plugin_log_rate: u32,
    pub required_format: Option<String>,
    pub poll_table_interval: Duration,
    pub heartbeat_interval: Duration,
    pub poll_timeout: Duration,
    pub heartbeat_max_failures: u32,
    pub max_concurrent_tables: usize,
    pub max_concurrent_splits: usize,
    pub max_concurrent_writers: usize,
    pub plugin_data_plane: DataPlane,
    pub plugin_cache: Option<CacheSettings>,
    pub plugin_perf_map: bool,
    pub plugin_memory_limit: usize,
    pub rpc_timeout: Duration,
    pub startup_timeout: Duration,
    pub kv_snapshot_lease_duration: Duration,
    pub on_log_gap: OnLogGap,
    pub state_dir: PathBuf,
    pub shutdown_grace_period: Duration,
    pub maintenance_idle_interval: Duration,
    /// `--fluss.<key>` options other than the bootstrap servers, prefix stripped.
    pub fluss_options: BTreeMap<String, String>,
    /// `--datalake.<format>.<key>` options: format → key (prefix stripped) → value.
    pub lake_options: BTreeMap<String, BTreeMap<String, String>>,
    /// `--lake.tiering.<key>` options, prefix kept.
    pub tiering_options: BTreeMap<String, String>,
}

impl HostConfig {
    /// Parses a command line (program name first), with the options of its `--config`
    /// file, if any, placed before it.
    pub fn from_args<I: IntoIterator<Item = String>>(
        args: I,
    ) -> std::result::Result<Self, clap::Error> {
        let raw = |msg: String| clap::Error::raw(clap::error::ErrorKind::InvalidValue, msg + "\n");
        let args: Vec<String> = args.into_iter().collect();
        let (program, cli_args) = match args.split_first() {
            Some((p, rest)) => (p.clone(), rest.to_vec()),
            None => ("fluss-lake-host".to_string(), Vec::new()),
        };
        let config_file = config_file_arg(&cli_args);
        let file_args = match &config_file {
            Some(path) => {
                let (known, flags) = known_options();
                let file_args = file::to_args(path, &known, &flags).map_err(raw)?;
                // The file alone must parse (with any server), so that a bad value in it is
                // reported as the file's.
                let mut alone = vec![program.clone()];
                alone.extend(file_args.iter().cloned());
                alone.extend(["--fluss.bootstrap.servers".to_string(), "-".to_string()]);
                let (rest, _) =
                    split_prefixed(alone).map_err(|m| raw(format!("{}: {m}", path.display())))?;
                if let Err(e) = Cli::try_parse_from(rest) {
                    let first = e.to_string();
                    let first = first
                        .lines()
                        .next()
                        .unwrap_or("")
                        .trim_start_matches("error: ");
                    return Err(raw(format!("{}: {first}", path.display())));
                }
                file::without_overridden(file_args, &cli_args)
            }
            None => Vec::new(),
        };
        let mut all = vec![program];
        all.extend(file_args.iter().cloned());
        all.extend(cli_args.iter().cloned());
        let (rest, prefixed) = split_prefixed(all).map_err(raw)?;
        let matches = Cli::command().try_get_matches_from(rest)?;
        let cli = Cli::from_arg_matches(&matches)?;
        let builtin_plugins =
            !cli.plugin_args.no_builtin_plugins && !crate::plugin::builtin::BUILTIN.is_empty();
        if cli.plugin_args.is_empty() && !builtin_plugins {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::MissingRequiredArgument,
                if crate::plugin::builtin::BUILTIN.is_empty() {
                    "at least one --plugin or --plugin-dir is required (this binary has no built-in plugins; scripts/install.sh builds one that has)\n"
                } else {
                    "at least one --plugin or --plugin-dir is required with --no-builtin-plugins\n"
                },
            ));
        }
        let print_config = cli.print_config.then(|| {
            effective::render(
                &Cli::command(),
                &matches,
                &prefixed,
                &file_args,
                config_file.as_deref(),
            )
        });
        let state_dir = match cli.state_dir.clone().or_else(default_state_dir) {
            Some(dir) => dir,
            None => {
                return Err(raw(
                    "no --state-dir given, and neither XDG_STATE_HOME nor HOME is set to find one"
                        .into(),
                ));
            }
        };
        let mut config = HostConfig {
            builtin_plugins,
            metrics_address: cli.metrics_address,
            log_format: cli.log_format,
            log_progress_interval: (!cli.log_progress_interval.is_zero())
                .then_some(cli.log_progress_interval),
            print_config,
            bootstrap_servers: cli.bootstrap_servers,
            plugins: cli.plugin_args.sources(),
            plugin_max_file_size: cli.plugin_args.max_file_size as u64,
            plugin_compile_timeout: cli.plugin_compile_timeout,
            plugin_compile_memory_limit: cli.plugin_compile_memory_limit as u64,
            routes: cli.routes,
            plugin_watch_interval: cli.plugin_watch_interval,
            plugin_call_timeout: cli.plugin_call_timeout,
            plugin_max_result_size: cli.plugin_max_result_size,
            plugin_round_result_limit: cli.plugin_round_result_limit,
            plugin_round_write_limit: cli.plugin_round_write_limit as u64,
            plugin_round_object_limit: cli.plugin_round_object_limit,
            plugin_log_rate: cli.plugin_log_rate,
            required_format: cli.datalake_format.map(|f| f.to_ascii_lowercase()),
            poll_table_interval: cli.poll_table_interval,
            heartbeat_interval: cli.heartbeat_interval,
            poll_timeout: cli.poll_timeout,
            heartbeat_max_failures: cli.heartbeat_max_failures,
            max_concurrent_tables: cli.max_concurrent_tables.max(1),
            max_concurrent_splits: cli.max_concurrent_splits.max(1),
            max_concurrent_writers: cli.max_concurrent_writers.max(1),
            plugin_data_plane: cli.plugin_data_plane,
            plugin_cache: match cli.plugin_cache_dir.or_else(default_cache_dir) {
                Some(dir) if !cli.no_plugin_cache => Some(CacheSettings {
                    dir,
                    key_file: cli
                        .plugin_cache_key
                        .unwrap_or_else(|| state_dir.join("plugin-cache.key")),
                    keep_unused: DEFAULT_KEEP_UNUSED,
                }),
                _ => None,
            },
            plugin_perf_map: cli.plugin_perf_map,
            plugin_memory_limit: cli.plugin_memory_limit,
            rpc_timeout: cli.rpc_timeout,
            startup_timeout: cli.startup_timeout,
            kv_snapshot_lease_duration: cli.kv_snapshot_lease_duration,
            on_log_gap: cli.on_log_gap,
            state_dir,
            shutdown_grace_period: cli.shutdown_grace_period,
            maintenance_idle_interval: cli.maintenance_idle_interval,
            fluss_options: BTreeMap::new(),
            lake_options: BTreeMap::new(),
            tiering_options: BTreeMap::new(),
        };
        for (key, value) in prefixed {
            if let Some(rest) = key.strip_prefix("datalake.") {
                let (format, k) = rest
                    .split_once('.')
                    .expect("split_prefixed checked the shape");
                config
                    .lake_options
                    .entry(format.to_ascii_lowercase())
                    .or_default()
                    .insert(k.to_string(), value);
            } else if key.starts_with("lake.tiering.") {
                config.tiering_options.insert(key, value);
            } else if let Some(k) = key.strip_prefix("fluss.") {
                config.fluss_options.insert(k.to_string(), value);
            }
        }
        if config.rpc_timeout > Duration::from_secs(60) {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                "--rpc.timeout must be at most 60s: a call must end well within the coordinator's 120 s tiering timeout\n",
            ));
        }
        if config.kv_snapshot_lease_duration < Duration::from_secs(1) {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                "--tiering.kv-snapshot.lease-duration must be at least 1s\n",
            ));
        }
        if config.heartbeat_interval >= Duration::from_secs(120) {
            return Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                "--tiering.heartbeat.interval must be below the coordinator's 120 s tiering timeout\n",
            ));
        }
        Ok(config)
    }

    /// The fluss-rs client configuration.
    pub fn fluss_client_config(&self) -> Result<fluss::config::Config> {
        let mut c = fluss::config::Config {
            bootstrap_servers: self.bootstrap_servers.clone(),
            ..Default::default()
        };
        for (k, v) in &self.fluss_options {
            // Security values (misspelled keys included) may be secrets: never printed.
            let secret = k.starts_with("client.security.") || is_secret(k);
            let shown = if secret { "<redacted>" } else { v.as_str() };
            let bad =
                |why: &str| Error::new(ErrorKind::Config, format!("--fluss.{k} {shown}: {why}"));
            let int = || v.parse::<i64>().map_err(|_| bad("not an integer"));
            match k.as_str() {
                "client.connect-timeout" => {
                    c.connect_timeout_ms =
                        parse_duration(v).map_err(|e| bad(&e))?.as_millis() as u64
                }
                "client.scanner.log.fetch.max-bytes" => {
                    c.scanner_log_fetch_max_bytes = parse_size(v).map_err(|e| bad(&e))? as i32
                }
                "client.scanner.log.fetch.max-bytes-for-bucket" => {
                    c.scanner_log_fetch_max_bytes_for_bucket =
                        parse_size(v).map_err(|e| bad(&e))? as i32
                }
                "client.scanner.log.max-poll-records" => {
                    c.scanner_log_max_poll_records = int()? as usize
                }
                "client.security.protocol" => c.security_protocol = v.clone(),
                "client.security.sasl.mechanism" => c.security_sasl_mechanism = v.clone(),
                "client.security.sasl.username" => c.security_sasl_username = v.clone(),
                "client.security.sasl.password" => c.security_sasl_password = v.clone(),
                // Read by `sasl_plain` below (the Java clients' way of giving credentials).
                "client.security.sasl.jaas.config" => {}
                // The cluster's own setting, for clusters that do not report it.
                "remote.data.dir" => {}
                // The host's own access to the remote storage: `client_fs_options`.
                k if k.starts_with("client.fs.") && k.len() > "client.fs.".len() => {}
                _ => return Err(bad("unknown Fluss client option (see --help)")),
            }
        }
        if let Some(credentials) = self.sasl_plain()? {
            c.security_sasl_username = credentials.username;
            c.security_sasl_password = credentials.password;
        }
        Ok(c)
    }

    /// The host's own settings and credentials for the cluster's remote storage:
    /// `--fluss.client.fs.<key>`, prefix stripped (Java clients' `client.fs.<key>`).
    pub fn client_fs_options(&self) -> StorageOptions {
        StorageOptions::from_pairs(
            self.fluss_options
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("client.fs.")?, v.as_str()))),
        )
    }

    /// The SASL/PLAIN credentials when `client.security.protocol` is `SASL`, from
    /// `client.security.sasl.username`/`.password` or, as Java clients give them, from
    /// `client.security.sasl.jaas.config` (`… PlainLoginModule required username="u"
    /// password="p";`). `None` for `PLAINTEXT` (the default).
    pub fn sasl_plain(&self) -> Result<Option<PlainCredentials>> {
        let get = |k: &str| self.fluss_options.get(k).map(String::as_str);
        let protocol = get("client.security.protocol").unwrap_or("PLAINTEXT");
        if protocol.eq_ignore_ascii_case("plaintext") {
            return Ok(None);
        }
        let refuse = |why: String| Err(Error::new(ErrorKind::Config, why));
        if !protocol.eq_ignore_ascii_case("sasl") {
            return refuse(format!(
                "--fluss.client.security.protocol {protocol}: supported are PLAINTEXT and SASL"
            ));
        }
        let mechanism = get("client.security.sasl.mechanism").unwrap_or("PLAIN");
        if !mechanism.eq_ignore_ascii_case("plain") {
            return refuse(format!(
                "--fluss.client.security.sasl.mechanism {mechanism}: only PLAIN is supported"
            ));
        }
        // As Java's client: a JAAS configuration, when given, is used instead of the options.
        let (username, password) = match get("client.security.sasl.jaas.config") {
            Some(jaas) => {
                let mut options = jaas_options(jaas);
                (options.remove("username"), options.remove("password"))
            }
            None => (
                get("client.security.sasl.username").map(str::to_string),
                get("client.security.sasl.password").map(str::to_string),
            ),
        };
        match (username, password) {
            (Some(username), Some(password)) if !username.is_empty() && !password.is_empty() => {
                Ok(Some(PlainCredentials { username, password }))
            }
            _ => refuse(
                "--fluss.client.security.protocol SASL needs a username and a password: \
                 --fluss.client.security.sasl.username and .password, or a \
                 client.security.sasl.jaas.config with username=\"…\" password=\"…\""
                    .into(),
            ),
        }
    }

    /// The host's overrides for one format's plugin configuration.
    pub fn lake_options_for(&self, format: &str) -> BTreeMap<String, String> {
        self.lake_options.get(format).cloned().unwrap_or_default()
    }
}

type KeyValue = (String, String);

/// The `--config FILE` of a command line, if any.
fn config_file_arg(args: &[String]) -> Option<PathBuf> {
    let mut it = args.iter();
    let mut found = None;
    while let Some(a) = it.next() {
        if a == "--config" {
            found = it.next().map(PathBuf::from);
        } else if let Some(v) = a.strip_prefix("--config=") {
            found = Some(PathBuf::from(v));
        }
    }
    found
}

/// The long options a config file may hold (clap's, and the Fluss client options under
/// `fluss.`), and those of them that are flags.
fn known_options() -> (Vec<String>, Vec<String>) {
    let cmd = Cli::command();
    let mut known = Vec::new();
    let mut flags = Vec::new();
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        known.push(long.to_string());
        if !arg.get_action().takes_values() {
            flags.push(long.to_string());
        }
    }
    known.extend(FLUSS_CLIENT_OPTIONS.iter().map(|k| format!("fluss.{k}")));
    (known, flags)
}

/// Splits `--datalake.<fmt>.<key>`, `--lake.tiering.<key>` and `--fluss.<key>` pairs off the
/// command line; maps `--fluss.tiering.*` (Flink's spelling) onto `--tiering.*`.
fn split_prefixed(args: Vec<String>) -> std::result::Result<(Vec<String>, Vec<KeyValue>), String> {
    const CLAP_KEYS: &[&str] = &[
        "fluss.bootstrap.servers",
        "datalake.format",
        "lake.tiering.max-concurrent-tables",
        "lake.tiering.max-concurrent-splits",
        "lake.tiering.max-concurrent-writers",
    ];
    let mut rest = Vec::with_capacity(args.len());
    let mut prefixed = Vec::new();
    let mut it = args.into_iter();
    if let Some(program) = it.next() {
        rest.push(program);
    }
    while let Some(arg) = it.next() {
        let Some(body) = arg.strip_prefix("--") else {
            rest.push(arg);
            continue;
        };
        let (key, inline_value) = match body.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        let is_open = (key.starts_with("datalake.") && key != "datalake.format")
            || key.starts_with("lake.tiering.")
            || key.starts_with("fluss.");
        if !is_open || CLAP_KEYS.contains(&key.as_str()) {
            rest.push(arg);
            continue;
        }
        if let Some(t) = key.strip_prefix("fluss.tiering.") {
            rest.push(format!("--tiering.{t}"));
            if let Some(v) = inline_value {
                rest.push(v);
            }
            continue;
        }
        if key.starts_with("datalake.") && key.matches('.').count() < 2 {
            return Err(format!("--{key}: expected --datalake.<format>.<key>"));
        }
        let value = match inline_value {
            Some(v) => v,
            None => it.next().ok_or_else(|| format!("--{key} needs a value"))?,
        };
        prefixed.push((key, value));
    }
    Ok((rest, prefixed))
}

fn default_concurrency() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .max(2)
}

/// `$XDG_STATE_HOME` or `~/.local/state`, `/fluss-lake-host`; never a shared temporary
/// directory (the state directory holds the key of the compiled-plugin cache).
pub fn default_state_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .map(|base| base.join("fluss-lake-host"))
}

/// `$XDG_CACHE_HOME` or `~/.cache`, `/fluss-lake-host`; never a shared temporary directory.
fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|base| base.join("fluss-lake-host"))
}

/// The options of a one-entry JAAS configuration, `<module> <flag> key="value" … ;`, read as
/// Java's `JaasConfig` parser reads them: a quoted value may escape `"` and `\` with `\`, an
/// unquoted one ends at white space or `;`.
fn jaas_options(jaas: &str) -> BTreeMap<String, String> {
    enum Token {
        Word(String),
        Quoted(String),
        Equals,
    }
    let mut tokens = Vec::new();
    let mut chars = jaas.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '=' => tokens.push(Token::Equals),
            '"' => {
                let mut value = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => value.extend(chars.next()),
                        c => value.push(c),
                    }
                }
                tokens.push(Token::Quoted(value));
            }
            c if c.is_whitespace() || c == ';' => {}
            c => {
                let mut word = c.to_string();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, '=' | ';' | '"') {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    let mut options = BTreeMap::new();
    for w in tokens.windows(3) {
        if let [
            Token::Word(key),
            Token::Equals,
            Token::Word(v) | Token::Quoted(v),
        ] = w
        {
            options.insert(key.clone(), v.clone());
        }
    }
    options
}

/// Durations as Fluss writes them: `10s`, `500ms`, `3min`, `1h`, or a bare number of millis.
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<u64>() {
        return Ok(Duration::from_millis(ms));
    }
    let normalized = s.replace("min", "m").replace(' ', "");
    humantime::parse_duration(&normalized).map_err(|e| format!("invalid duration '{s}': {e}"))
}

/// Sizes: `512mb`, `2gb`, `64kb`, or a bare number of bytes.
pub fn parse_size(s: &str) -> std::result::Result<usize, String> {
    let lower = s.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let n: usize = num.parse().map_err(|_| format!("invalid size '{s}'"))?;
    let mult = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        _ => return Err(format!("invalid size unit in '{s}'")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::source::PluginFile;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn flink_style_options() {
        let c = HostConfig::from_args(args(
            "host --fluss.bootstrap.servers 127.0.0.1:9123 --datalake.format paimon \
             --datalake.paimon.warehouse /wh --datalake.paimon.metastore=filesystem \
             --lake.tiering.auto-expire-snapshot true --plugin a.wasm --plugin b.wasm \
             --fluss.tiering.poll.table.interval 5s --tiering.heartbeat.interval 2s \
             --fluss.client.connect-timeout 5s",
        ))
        .unwrap();
        assert_eq!(c.bootstrap_servers, "127.0.0.1:9123");
        assert_eq!(c.required_format.as_deref(), Some("paimon"));
        assert_eq!(c.plugins.len(), 2);
        assert_eq!(c.poll_table_interval, Duration::from_secs(5));
        assert_eq!(c.heartbeat_interval, Duration::from_secs(2));
        assert_eq!(c.poll_timeout, Duration::from_secs(10));
        assert_eq!(c.heartbeat_max_failures, 10);
        let paimon = c.lake_options_for("paimon");
        assert_eq!(paimon.get("warehouse").unwrap(), "/wh");
        assert_eq!(paimon.get("metastore").unwrap(), "filesystem");
        assert_eq!(
            c.tiering_options
                .get("lake.tiering.auto-expire-snapshot")
                .unwrap(),
            "true"
        );
        assert_eq!(c.fluss_client_config().unwrap().connect_timeout_ms, 5000);
    }

    #[test]
    fn sasl_plain_credentials() {
        let with = |extra: &[&str]| {
            let mut a = args("host --fluss.bootstrap.servers h:1 --plugin p.wasm");
            a.extend(extra.iter().map(|s| s.to_string()));
            HostConfig::from_args(a).unwrap()
        };
        assert_eq!(with(&[]).sasl_plain().unwrap(), None);
        let plain = |u: &str, p: &str| PlainCredentials {
            username: u.into(),
            password: p.into(),
        };
        let c = with(&[
            "--fluss.client.security.protocol",
            "sasl",
            "--fluss.client.security.sasl.username",
            "tiering",
            "--fluss.client.security.sasl.password",
            "s3cret",
        ]);
        assert_eq!(c.sasl_plain().unwrap(), Some(plain("tiering", "s3cret")));
        let fluss = c.fluss_client_config().unwrap();
        assert!(fluss.is_sasl_enabled());
        assert_eq!(fluss.security_sasl_username, "tiering");
        assert!(!format!("{:?}", c.sasl_plain().unwrap()).contains("s3cret"));
        // As Java clients (and FlussLakeTiering) are configured.
        let c = with(&[
            "--fluss.client.security.protocol",
            "SASL",
            "--fluss.client.security.sasl.jaas.config",
            "org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required \
             username=\"admin\" password = \"a b=c\";",
        ]);
        assert_eq!(c.sasl_plain().unwrap(), Some(plain("admin", "a b=c")));
        // Escapes and unquoted values as Java's JaasConfig parser reads them; the JAAS line
        // wins over the separate options, as in Java.
        let c = with(&[
            "--fluss.client.security.protocol",
            "SASL",
            "--fluss.client.security.sasl.username",
            "ignored",
            "--fluss.client.security.sasl.jaas.config",
            r#"org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required username=bob password="q\"u\\o;te";"#,
        ]);
        assert_eq!(c.sasl_plain().unwrap(), Some(plain("bob", r#"q"u\o;te"#)));
        // A misspelled secret option is refused without printing its value.
        let e = HostConfig::from_args(args(
            "host --fluss.bootstrap.servers h:1 --plugin p.wasm \
             --fluss.client.security.sasl.pasword hunter2",
        ))
        .unwrap()
        .fluss_client_config()
        .unwrap_err();
        assert!(e.message().contains("<redacted>"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        for (extra, needle) in [
            (
                &[
                    "--fluss.client.security.protocol",
                    "SASL",
                    "--fluss.client.security.sasl.username",
                    "u",
                ][..],
                "needs a username and a password",
            ),
            (
                &["--fluss.client.security.protocol", "SSL"][..],
                "supported are PLAINTEXT and SASL",
            ),
            (&["--fluss.client.security.protocol", "SASL"][..], "needs"),
            (
                &[
                    "--fluss.client.security.protocol",
                    "SASL",
                    "--fluss.client.security.sasl.mechanism",
                    "SCRAM-SHA-256",
                ][..],
                "only PLAIN",
            ),
        ] {
            let e = with(extra).sasl_plain().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config);
            assert!(e.message().contains(needle), "{e}");
        }
    }

    #[test]
    fn defaults_and_errors() {
        let c = HostConfig::from_args(args("host --fluss.bootstrap.servers h:1 --plugin p.wasm"))
            .unwrap();
        assert_eq!(c.poll_table_interval, Duration::from_secs(30));
        assert_eq!(c.heartbeat_interval, Duration::from_secs(10));
        assert_eq!(c.maintenance_idle_interval, Duration::from_secs(3600));
        assert!(HostConfig::from_args(args("host --plugin p.wasm")).is_err());
        // Without a plugin file only a binary with built-in plugins runs.
        assert_eq!(
            HostConfig::from_args(args("host --fluss.bootstrap.servers h:1")).is_err(),
            crate::plugin::builtin::BUILTIN.is_empty()
        );
        let e = HostConfig::from_args(args(
            "host --fluss.bootstrap.servers h:1 --no-builtin-plugins",
        ))
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("at least one --plugin or --plugin-dir is required")
        );
        assert!(
            HostConfig::from_args(args(
                "host --fluss.bootstrap.servers h:1 --plugin p --datalake.paimon"
            ))
            .is_err()
        );
        let c = HostConfig::from_args(args(
            "host --fluss.bootstrap.servers h:1 --plugin p --fluss.bogus 1",
        ))
        .unwrap();
        assert_eq!(
            c.fluss_client_config().unwrap_err().kind(),
            ErrorKind::Config
        );
        assert!(
            HostConfig::from_args(args(
                "host --fluss.bootstrap.servers h:1 --plugin p --tiering.heartbeat.interval 3min"
            ))
            .is_err()
        );
        // A KV snapshot lease shorter than a second would lapse before its renewal.
        assert!(
            HostConfig::from_args(args(
                "host --fluss.bootstrap.servers h:1 --plugin p --tiering.kv-snapshot.lease-duration 500ms"
            ))
            .is_err()
        );
        let c = HostConfig::from_args(args(
            "host --fluss.bootstrap.servers h:1 --plugin p --tiering.kv-snapshot.lease-duration 2s",
        ))
        .unwrap();
        assert_eq!(c.kv_snapshot_lease_duration, Duration::from_secs(2));
    }

    #[test]
    fn log_gaps_are_refused_unless_accepted_by_name() {
        let parse = |extra: &str| {
            HostConfig::from_args(args(&format!(
                "host --fluss.bootstrap.servers h:1 --plugin p {extra}"
            )))
        };
        assert_eq!(parse("").unwrap().on_log_gap, OnLogGap::Refuse);
        assert_eq!(
            parse("--tiering.on-log-gap accept").unwrap().on_log_gap,
            OnLogGap::Accept
        );
        assert!(parse("--tiering.on-log-gap skip").is_err());
    }

    /// A config file of its own (the config tests here and in [`file`]), removed on drop.
    pub(super) struct ConfigFile(pub(super) PathBuf);

    impl ConfigFile {
        pub(super) fn new(name: &str, text: &str) -> Self {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "fluss-lake-host-{}-{name}-{}.toml",
                std::process::id(),
                N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ));
            std::fs::write(&path, text).unwrap();
            Self(path)
        }

        fn arg(&self) -> String {
            self.0.display().to_string()
        }
    }

    impl Drop for ConfigFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn a_config_file_says_what_the_command_line_says_and_the_command_line_wins() {
        let f = ConfigFile::new(
            "wins",
            r#"
            fluss.bootstrap.servers = "file:9123"
            plugin = ["/p/paimon.wasm", "/p/iceberg.wasm"]
            plugin-call-timeout = "2min"
            tiering.heartbeat.interval = "3s"
            metrics.address = "127.0.0.1:9250"
            log.format = "json"
            route = ["sales.*=iceberg"]
            [lake.tiering]
            auto-expire-snapshot = true
            [datalake.paimon]
            warehouse = "/wh"
            "s3.secret-key" = "hunter2"
            [fluss.client.security.sasl]
            password = "p4ss"
            "#,
        );
        let c = HostConfig::from_args(vec![
            "host".into(),
            "--config".into(),
            f.arg(),
            "--plugin-call-timeout".into(),
            "30s".into(),
            "--plugin".into(),
            "/cli/lance.wasm".into(),
        ])
        .unwrap();
        assert_eq!(c.bootstrap_servers, "file:9123");
        assert_eq!(
            c.plugin_call_timeout,
            Duration::from_secs(30),
            "the command line wins"
        );
        assert_eq!(
            c.plugins,
            vec![PluginSource::File(
                PluginFile::parse("/cli/lance.wasm").unwrap()
            )],
            "a repeatable option on the command line replaces the file's list"
        );
        assert_eq!(c.routes.len(), 1);
        assert_eq!(c.heartbeat_interval, Duration::from_secs(3));
        assert_eq!(c.metrics_address, Some("127.0.0.1:9250".parse().unwrap()));
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(
            c.lake_options_for("paimon").get("warehouse").unwrap(),
            "/wh"
        );
        assert_eq!(
            c.tiering_options
                .get("lake.tiering.auto-expire-snapshot")
                .unwrap(),
            "true"
        );
        assert_eq!(
            c.fluss_options
                .get("client.security.sasl.password")
                .unwrap(),
            "p4ss"
        );
        assert!(c.print_config.is_none());
    }

    #[test]
    fn a_bad_key_or_value_in_the_file_is_one_line_naming_the_file_and_the_key() {
        let run = |name: &str, text: &str| {
            let f = ConfigFile::new(name, text);
            let e = HostConfig::from_args(vec!["host".into(), "--config".into(), f.arg()])
                .unwrap_err()
                .to_string();
            (f.arg(), e)
        };
        let (path, e) = run(
            "badkey",
            "fluss.bootstrap.servers = \"h:1\"\nplugin-cal-timeout = \"1s\"\n",
        );
        assert_eq!(
            e.trim_end(),
            format!(
                "error: {path}: unknown key 'plugin-cal-timeout' (keys are the command line's long options without '--'; see --help)"
            )
        );
        let (path, e) = run(
            "badvalue",
            "fluss.bootstrap.servers = \"h:1\"\nplugin-call-timeout = \"soon\"\n",
        );
        assert!(
            e.starts_with(&format!(
                "error: {path}: invalid value 'soon' for '--plugin-call-timeout"
            )),
            "{e}"
        );
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        let (path, e) = run("badclient", "fluss.client.conect-timeout = \"1s\"\n");
        assert!(
            e.contains(&format!(
                "{path}: unknown key 'fluss.client.conect-timeout'"
            )),
            "{e}"
        );
    }

    #[test]
    fn print_config_shows_every_value_with_its_source_and_masks_secrets() {
        let f = ConfigFile::new(
            "print",
            r#"
            fluss.bootstrap.servers = "file:9123"
            plugin = "/p/paimon.wasm"
            plugin-call-timeout = "2min"
            [datalake.paimon]
            warehouse = "/wh"
            "s3.secret-key" = "hunter2"
            [fluss.client.security.sasl]
            password = "p4ss"
            "#,
        );
        let c = HostConfig::from_args(vec![
            "host".into(),
            "--config".into(),
            f.arg(),
            "--print-config".into(),
            "--rpc.timeout".into(),
            "20s".into(),
        ])
        .unwrap();
        let text = c.print_config.unwrap();
        let from_file = format!("# from {}", f.arg());
        for (line, source) in [
            (
                "\"fluss.bootstrap.servers\" = \"file:9123\"",
                from_file.as_str(),
            ),
            ("\"plugin-call-timeout\" = \"2min\"", from_file.as_str()),
            ("\"plugin\" = [\"/p/paimon.wasm\"]", from_file.as_str()),
            ("\"rpc.timeout\" = \"20s\"", "# from the command line"),
            ("\"tiering.heartbeat.interval\" = \"10s\"", "# default"),
            (
                "\"datalake.paimon.warehouse\" = \"/wh\"",
                from_file.as_str(),
            ),
            (
                "\"datalake.paimon.s3.secret-key\" = \"******\"",
                from_file.as_str(),
            ),
            (
                "\"fluss.client.security.sasl.password\" = \"******\"",
                from_file.as_str(),
            ),
        ] {
            assert!(
                text.lines()
                    .any(|l| l.starts_with(line) && l.ends_with(source)),
                "no line {line} … {source} in\n{text}"
            );
        }
        assert!(!text.contains("hunter2") && !text.contains("p4ss"));
        // What it prints is a config file the host reads back to the same configuration.
        let printed = ConfigFile::new("printed", &text.replace("******", "x"));
        let again =
            HostConfig::from_args(vec!["host".into(), "--config".into(), printed.arg()]).unwrap();
        assert_eq!(again.bootstrap_servers, "file:9123");
        assert_eq!(again.plugin_call_timeout, Duration::from_secs(120));
        assert_eq!(again.rpc_timeout, Duration::from_secs(20));
    }

    #[test]
    fn every_fluss_client_option_a_file_may_hold_is_one_the_client_takes() {
        let mut a = args("host --fluss.bootstrap.servers h:1 --plugin p.wasm");
        for k in FLUSS_CLIENT_OPTIONS {
            let v = match *k {
                "client.connect-timeout" => "1s",
                "client.security.protocol" => "PLAINTEXT",
                k if k.contains("bytes") => "1mb",
                "client.scanner.log.max-poll-records" => "10",
                _ => "x",
            };
            a.extend([format!("--fluss.{k}"), v.to_string()]);
        }
        HostConfig::from_args(a)
            .unwrap()
            .fluss_client_config()
            .unwrap();
    }

    #[test]
    fn client_fs_options_are_the_hosts_own_remote_storage_settings() {
        let dir = std::env::temp_dir().join(format!("client-fs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("host.toml");
        std::fs::write(
            &file,
            "[fluss.client.fs]\n\"fs.azure.account.key\" = \"a2V5\"\n",
        )
        .unwrap();
        let c = HostConfig::from_args(args(&format!(
            "host --fluss.bootstrap.servers h:1 --plugin p.wasm --config {} \
             --fluss.client.fs.gs.auth.type UNAUTHENTICATED",
            file.display()
        )))
        .unwrap();
        c.fluss_client_config().unwrap();
        let fs = c.client_fs_options();
        assert_eq!(fs.get("gs.auth.type"), Some("UNAUTHENTICATED"));
        assert_eq!(fs.get("fs.azure.account.key"), Some("a2V5"));
        assert_eq!(fs.iter().count(), 2);
        // A prefix with no key is not an option.
        let e = HostConfig::from_args(args(
            "host --fluss.bootstrap.servers h:1 --plugin p.wasm --fluss.client.fs. x",
        ))
        .unwrap()
        .fluss_client_config()
        .unwrap_err();
        assert!(e.message().contains("unknown Fluss client option"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("3min").unwrap(), Duration::from_secs(180));
        assert_eq!(parse_duration("250").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_size("2gb").unwrap(), 2 << 30);
        assert_eq!(parse_size("128mb").unwrap(), 128 << 20);
        assert!(parse_size("12 parsecs").is_err());
    }
}
