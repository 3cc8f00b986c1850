//! Every metric the host exports, registered once in one process-wide registry.
//!
//! Rounds record through a [`TableMetrics`] handle (labels: database, table, format, plugin
//! digest), plugin instances through a [`PluginMetrics`] handle (format, plugin digest), the
//! heartbeat loop through the host-wide methods of [`Metrics`]. Gauges that are ages
//! (freshness, time since the last commit) are computed when the metrics are scraped, from
//! the instants the rounds recorded, so they keep growing while nothing commits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use super::health;
use crate::time::now_millis;

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

/// Which table a series is about. `format` and `plugin_digest` are empty for a round that
/// failed before it was routed to a plugin.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TableLabels {
    pub database: String,
    pub table: String,
    pub format: String,
    /// The first 12 hex digits of the plugin file's SHA-256.
    pub plugin_digest: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableReasonLabels {
    #[prometheus(flatten)]
    table: TableLabels,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableResultLabels {
    #[prometheus(flatten)]
    table: TableLabels,
    result: String,
}

/// Which plugin a series is about.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabels {
    pub format: String,
    /// The first 12 hex digits of the plugin file's SHA-256.
    pub plugin_digest: String,
}

impl PluginLabels {
    pub fn new(format: &str, digest: &str) -> Self {
        Self {
            format: format.to_string(),
            plugin_digest: short_digest(digest),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginCallLabels {
    #[prometheus(flatten)]
    plugin: PluginLabels,
    function: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginInfoLabels {
    #[prometheus(flatten)]
    plugin: PluginLabels,
    version: String,
    /// `builtin` (embedded in the binary) or `file`.
    source: String,
}

/// The first 12 hex digits of a SHA-256, as `plugins list` and the logs show it.
pub fn short_digest(digest: &str) -> String {
    digest.chars().take(12).collect()
}

type Counters<L> = Family<L, Counter>;
type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;
type Gauges<L> = Family<L, Gauge>;
type FloatGauges<L> = Family<L, Gauge<f64, AtomicU64>>;

fn histograms<L: Clone + std::hash::Hash + Eq>(buckets: fn() -> Histogram) -> Histograms<L> {
    Family::new_with_constructor(buckets)
}

fn round_seconds() -> Histogram {
    // 50 ms … 27 min.
    Histogram::new(exponential_buckets(0.05, 2.0, 16))
}

fn commit_seconds() -> Histogram {
    // 10 ms … 82 s.
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

fn call_seconds() -> Histogram {
    // 100 µs … 7 min.
    Histogram::new(exponential_buckets(0.0001, 4.0, 12))
}

fn instantiate_seconds() -> Histogram {
    // 500 µs … 4 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 14))
}

fn round_start_seconds() -> Histogram {
    // 5 ms … 5.8 min: a table of a few buckets plans in milliseconds, one of thousands of
    // buckets in seconds (Flink's split generator took minutes at 10,400 buckets).
    Histogram::new(exponential_buckets(0.005, 2.0, 17))
}

fn message_bytes() -> Histogram {
    // 16 B … 4 MiB.
    Histogram::new(exponential_buckets(16.0, 4.0, 10))
}

pub struct Metrics {
    registry: Registry,
    // Per table.
    rounds_started: Counters<TableLabels>,
    rounds_committed: Counters<TableLabels>,
    rounds_empty: Counters<TableLabels>,
    rounds_failed: Counters<TableReasonLabels>,
    rounds_force_finished: Counters<TableReasonLabels>,
    records_read: Counters<TableLabels>,
    read_bytes: Counters<TableLabels>,
    records_written: Counters<TableLabels>,
    written_bytes: Counters<TableLabels>,
    files_written: Counters<TableLabels>,
    round_duration: Histograms<TableLabels>,
    commit_duration: Histograms<TableLabels>,
    lag_records: Gauges<TableLabels>,
    log_gap_records: Gauges<TableLabels>,
    log_gap_skipped_records: Counters<TableLabels>,
    buckets_rebuilt: Counters<TableLabels>,
    freshness: FloatGauges<TableLabels>,
    last_commit_age: FloatGauges<TableLabels>,
    lake_size: Gauges<TableLabels>,
    lake_records: Gauges<TableLabels>,
    freshness_target: FloatGauges<TableLabels>,
    maintenance_runs: Counters<TableResultLabels>,
    maintenance_snapshots_expired: Counters<TableLabels>,
    maintenance_files_deleted: Counters<TableLabels>,
    maintenance_deleted_bytes: Counters<TableLabels>,
    maintenance_files_compacted: Counters<TableLabels>,
    maintenance_files_written: Counters<TableLabels>,
    maintenance_duration: Histograms<TableLabels>,
    maintenance_over_budget: Gauges<TableLabels>,
    // Per plugin.
    plugin_call_duration: Histograms<PluginCallLabels>,
    plugin_traps: Counters<PluginCallLabels>,
    plugin_deadline_interruptions: Counters<PluginCallLabels>,
    plugin_memory_high_water: Gauges<PluginLabels>,
    plugin_instantiate_duration: Histograms<PluginLabels>,
    plugin_info: Gauges<PluginInfoLabels>,
    // The host.
    round_plan_duration: Histogram,
    round_first_write: Histogram,
    heartbeat_request_bytes: Histogram,
    heartbeat_response_bytes: Histogram,
    heartbeat_request_max_bytes: Gauge,
    heartbeat_response_max_bytes: Gauge,
    fluss_cached_tables: Gauge,
    heartbeats_sent: Counter,
    heartbeats_failed: Counter,
    coordinator_epoch: Gauge,
    tables_in_flight: Gauge,
    table_slots_in_use: Gauge,
    table_slots: Gauge,
    rounds_waiting_backoff: Gauge,
    ready: Gauge,
    /// When each table last committed and the newest record it tiered, by (database, table):
    /// the age gauges are computed from these at scrape time. One entry per table, under the
    /// labels of its latest round.
    tables: Mutex<HashMap<(String, String), TableTimes>>,
}

struct TableTimes {
    labels: TableLabels,
    last_commit: Option<Instant>,
    /// Commit timestamp (epoch ms) of the newest record tiered.
    newest_record_ms: Option<i64>,
}

impl Metrics {
    fn new() -> Self {
        let mut r = Registry::with_prefix("fluss_lake");
        macro_rules! reg {
            ($name:literal, $help:literal, $metric:expr) => {{
                let m = $metric;
                r.register($name, $help, m.clone());
                m
            }};
        }
        let m = Metrics {
            rounds_started: reg!(
                "table_rounds_started",
                "Rounds the host started for the table (counted once routed to a plugin)",
                Counters::default()
            ),
            rounds_committed: reg!(
                "table_rounds_committed",
                "Rounds that committed a lake snapshot and registered it in Fluss",
                Counters::default()
            ),
            rounds_empty: reg!(
                "table_rounds_empty",
                "Rounds that found nothing new to tier",
                Counters::default()
            ),
            rounds_failed: reg!(
                "table_rounds_failed",
                "Failed rounds, by reason (the host error kind)",
                Counters::default()
            ),
            rounds_force_finished: reg!(
                "table_rounds_force_finished",
                "Rounds that reached the table's freshness and committed part of their splits",
                Counters::default()
            ),
            records_read: reg!(
                "table_records_read",
                "Records read from Fluss",
                Counters::default()
            ),
            read_bytes: reg!(
                "table_read_bytes",
                "Arrow bytes read from Fluss",
                Counters::default()
            ),
            records_written: reg!(
                "table_records_written",
                "Records written into the lake by committed rounds",
                Counters::default()
            ),
            written_bytes: reg!(
                "table_written_bytes",
                "Bytes of lake data files written by committed rounds",
                Counters::default()
            ),
            files_written: reg!(
                "table_files_written",
                "Files (objects) committed rounds wrote to the lake store, data and metadata",
                Counters::default()
            ),
            round_duration: reg!(
                "table_round_duration_seconds",
                "Wall time of a round, from assignment to its end",
                histograms(round_seconds)
            ),
            commit_duration: reg!(
                "table_commit_duration_seconds",
                "Wall time of a round's two-phase commit",
                histograms(commit_seconds)
            ),
            lag_records: reg!(
                "table_lag_records",
                "Fluss high watermark minus lake offset, summed over buckets, as of the last round (planned, then what its commit left)",
                Gauges::default()
            ),
            log_gap_records: reg!(
                "table_log_gap_records",
                "Records lost to the lake in buckets refused because their log now starts after the lake's offset (table.log.ttl expired them untiered), as of the last round; 0 when none",
                Gauges::default()
            ),
            log_gap_skipped_records: reg!(
                "table_log_gap_skipped_records",
                "Records of log gaps the table accepts that committed rounds tiered past (recorded in the lake snapshot's fluss-log-gap)",
                Counters::default()
            ),
            buckets_rebuilt: reg!(
                "table_buckets_rebuilt",
                "Primary-key buckets whose log lost rows that committed rounds rebuilt from their KV snapshots, replacing the bucket in the lake (recorded in the lake snapshot's fluss-replaced-buckets)",
                Counters::default()
            ),
            freshness: reg!(
                "table_freshness_seconds",
                "Now minus the commit timestamp of the newest record tiered",
                FloatGauges::default()
            ),
            last_commit_age: reg!(
                "table_last_commit_age_seconds",
                "Seconds since this host last committed the table",
                FloatGauges::default()
            ),
            lake_size: reg!(
                "table_lake_size_bytes",
                "Size of the lake table after the last commit (as the plugin reports it; sent to Fluss as lake_tiering_stats)",
                Gauges::default()
            ),
            lake_records: reg!(
                "table_lake_records",
                "Records in the lake table after the last commit (as the plugin reports it)",
                Gauges::default()
            ),
            freshness_target: reg!(
                "table_freshness_target_seconds",
                "The table's table.datalake.freshness: how fresh its lake copy should be (alerts compare the commit age with it)",
                FloatGauges::default()
            ),
            maintenance_runs: reg!(
                "table_maintenance_runs",
                "Maintenance calls after committed rounds, by result (ok, failed)",
                Counters::default()
            ),
            maintenance_snapshots_expired: reg!(
                "table_maintenance_snapshots_expired",
                "Lake snapshots maintenance expired",
                Counters::default()
            ),
            maintenance_files_deleted: reg!(
                "table_maintenance_files_deleted",
                "Files maintenance deleted",
                Counters::default()
            ),
            maintenance_deleted_bytes: reg!(
                "table_maintenance_deleted_bytes",
                "Bytes of the files maintenance deleted",
                Counters::default()
            ),
            maintenance_files_compacted: reg!(
                "table_maintenance_files_compacted",
                "Data files replaced by compaction",
                Counters::default()
            ),
            maintenance_files_written: reg!(
                "table_maintenance_files_written",
                "Files compaction wrote",
                Counters::default()
            ),
            maintenance_over_budget: reg!(
                "table_maintenance_over_budget_parts",
                "Parts of the table (Paimon: buckets) whose due compaction does not fit maintenance.compaction.max-input-bytes, as the last maintenance call reported",
                Gauges::default()
            ),
            maintenance_duration: reg!(
                "table_maintenance_duration_seconds",
                "Wall time of a maintenance call",
                histograms(commit_seconds)
            ),
            plugin_call_duration: reg!(
                "plugin_call_duration_seconds",
                "Time of one call into a plugin, by function",
                histograms(call_seconds)
            ),
            plugin_traps: reg!(
                "plugin_traps",
                "Calls into a plugin that trapped (a panic, a sandbox limit), by function",
                Counters::default()
            ),
            plugin_deadline_interruptions: reg!(
                "plugin_deadline_interruptions",
                "Calls into a plugin interrupted at their deadline or abandoned blocked in a host import, by function",
                Counters::default()
            ),
            plugin_memory_high_water: reg!(
                "plugin_memory_high_water_bytes",
                "Largest linear memory any instance of the plugin reached",
                Gauges::default()
            ),
            plugin_instantiate_duration: reg!(
                "plugin_instantiate_duration_seconds",
                "Time to instantiate the plugin",
                histograms(instantiate_seconds)
            ),
            plugin_info: reg!(
                "plugin_info",
                "1 for every plugin serving new rounds, with its version and where it came from",
                Gauges::default()
            ),
            round_plan_duration: reg!(
                "round_plan_duration_seconds",
                "Time from a round's start (its assignment, or the end of its retry backoff) to its splits being planned: plugin routing, table lookup and split generation",
                round_start_seconds()
            ),
            round_first_write: reg!(
                "round_first_write_seconds",
                "Time from a round's start to the first byte its plugin wrote to the lake store (rounds that wrote something)",
                round_start_seconds()
            ),
            heartbeat_request_bytes: reg!(
                "heartbeat_request_bytes",
                "Encoded size of each heartbeat request sent to the coordinator",
                message_bytes()
            ),
            heartbeat_response_bytes: reg!(
                "heartbeat_response_bytes",
                "Encoded size of each heartbeat response received from the coordinator",
                message_bytes()
            ),
            heartbeat_request_max_bytes: reg!(
                "heartbeat_request_max_bytes",
                "Largest heartbeat request sent since the host started",
                Gauge::default()
            ),
            heartbeat_response_max_bytes: reg!(
                "heartbeat_response_max_bytes",
                "Largest heartbeat response received since the host started",
                Gauge::default()
            ),
            fluss_cached_tables: reg!(
                "fluss_cached_tables",
                "Tables whose metadata the host's Fluss client caches: the tables of the rounds in flight",
                Gauge::default()
            ),
            heartbeats_sent: reg!(
                "heartbeats_sent",
                "Heartbeats sent to the coordinator",
                Counter::default()
            ),
            heartbeats_failed: reg!(
                "heartbeats_failed",
                "Heartbeats that failed (no answer, or an error)",
                Counter::default()
            ),
            coordinator_epoch: reg!(
                "coordinator_epoch",
                "The coordinator epoch of the last heartbeat answer",
                Gauge::default()
            ),
            tables_in_flight: reg!(
                "tables_in_flight",
                "Tables assigned to this host and not yet reported finished or failed",
                Gauge::default()
            ),
            table_slots_in_use: reg!(
                "table_slots_in_use",
                "Rounds running (a retry waiting for its backoff takes no slot)",
                Gauge::default()
            ),
            table_slots: reg!(
                "table_slots",
                "Rounds that may run at once (lake.tiering.max-concurrent-tables)",
                Gauge::default()
            ),
            rounds_waiting_backoff: reg!(
                "rounds_waiting_backoff",
                "Rounds waiting to retry a table that failed before",
                Gauge::default()
            ),
            ready: reg!(
                "ready",
                "1 when /readyz says ready: plugins loaded and heartbeats succeeding",
                Gauge::default()
            ),
            tables: Mutex::new(HashMap::new()),
            registry: Registry::default(),
        };
        r.register(
            "build",
            "The host's version",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        Metrics { registry: r, ..m }
    }

    /// The exposition, in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        self.refresh_ages();
        self.ready.set(i64::from(health::health().is_ready()));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    fn refresh_ages(&self) {
        let now_ms = now_millis();
        let tables = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        for t in tables.values() {
            if let Some(at) = t.last_commit {
                self.last_commit_age
                    .get_or_create(&t.labels)
                    .set(at.elapsed().as_secs_f64());
            }
            if let Some(ms) = t.newest_record_ms {
                self.freshness
                    .get_or_create(&t.labels)
                    .set((now_ms - ms).max(0) as f64 / 1000.0);
            }
        }
    }

    /// The handle a round records through. A table's gauges live under the labels of its
    /// latest round: when a table moves to another plugin (hot swap, a new route), the gauges
    /// under its previous labels are dropped, so no stale series keeps aging.
    pub fn table(&'static self, labels: TableLabels) -> TableMetrics {
        let key = (labels.database.clone(), labels.table.clone());
        let mut tables = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        let entry = tables.entry(key).or_insert_with(|| TableTimes {
            labels: labels.clone(),
            last_commit: None,
            newest_record_ms: None,
        });
        if entry.labels != labels {
            self.remove_table_gauges(&entry.labels);
            entry.labels = labels.clone();
        }
        TableMetrics {
            m: self,
            records_read: self.records_read.get_or_create_owned(&labels),
            read_bytes: self.read_bytes.get_or_create_owned(&labels),
            labels,
        }
    }

    /// Drops every gauge of a table (it was dropped or is no longer this host's to tier);
    /// counters stay, as counters do.
    pub fn forget_table(&self, database: &str, table: &str) {
        let mut tables = self.tables.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = tables.remove(&(database.to_string(), table.to_string())) {
            self.remove_table_gauges(&t.labels);
        }
    }

    fn remove_table_gauges(&self, labels: &TableLabels) {
        self.lag_records.remove(labels);
        self.log_gap_records.remove(labels);
        self.freshness.remove(labels);
        self.last_commit_age.remove(labels);
        self.lake_size.remove(labels);
        self.lake_records.remove(labels);
        self.freshness_target.remove(labels);
        self.maintenance_over_budget.remove(labels);
    }

    /// A round that failed before it was routed to a plugin.
    pub fn round_failed_unrouted(&self, database: &str, table: &str, reason: &str) {
        let labels = TableLabels {
            database: database.to_string(),
            table: table.to_string(),
            ..TableLabels::default()
        };
        self.rounds_failed
            .get_or_create(&TableReasonLabels {
                table: labels,
                reason: reason.to_string(),
            })
            .inc();
    }

    pub fn plugin(&'static self, labels: PluginLabels) -> PluginMetrics {
        PluginMetrics { m: self, labels }
    }

    /// The plugins serving new rounds now (replacing what was set before).
    pub fn set_loaded_plugins<'a>(
        &self,
        plugins: impl IntoIterator<Item = (PluginLabels, &'a str, &'a str)>,
    ) {
        self.plugin_info.clear();
        for (plugin, version, source) in plugins {
            self.plugin_info
                .get_or_create(&PluginInfoLabels {
                    plugin,
                    version: version.to_string(),
                    source: source.to_string(),
                })
                .set(1);
        }
    }

    pub fn heartbeat(&self, ok: bool) {
        self.heartbeats_sent.inc();
        if !ok {
            self.heartbeats_failed.inc();
        }
    }

    /// The encoded sizes of one heartbeat's request and, when one came, its response: what
    /// the host sends grows with its rounds in flight and reports, never with the cluster's
    /// tables.
    pub fn heartbeat_sizes(&self, request: usize, response: Option<usize>) {
        let observe = |histogram: &Histogram, largest: &Gauge, bytes: usize| {
            histogram.observe(bytes as f64);
            let inner: &AtomicI64 = largest.inner();
            inner.fetch_max(i64::try_from(bytes).unwrap_or(i64::MAX), Ordering::Relaxed);
        };
        observe(
            &self.heartbeat_request_bytes,
            &self.heartbeat_request_max_bytes,
            request,
        );
        if let Some(bytes) = response {
            observe(
                &self.heartbeat_response_bytes,
                &self.heartbeat_response_max_bytes,
                bytes,
            );
        }
    }

    /// A round planned its splits `took` after it started.
    pub fn round_planned(&self, took: Duration) {
        self.round_plan_duration.observe(took.as_secs_f64());
    }

    /// A round's plugin wrote its first byte to the lake store `took` after the round started.
    pub fn round_first_write(&self, took: Duration) {
        self.round_first_write.observe(took.as_secs_f64());
    }

    pub fn set_coordinator_epoch(&self, epoch: i32) {
        self.coordinator_epoch.set(i64::from(epoch));
    }

    /// The heartbeat loop's view of its rounds.
    pub fn set_rounds(&self, in_flight: usize, running: usize, waiting_backoff: usize) {
        self.tables_in_flight.set(in_flight as i64);
        self.table_slots_in_use.set(running as i64);
        self.rounds_waiting_backoff.set(waiting_backoff as i64);
    }

    pub fn set_fluss_cached_tables(&self, tables: usize) {
        self.fluss_cached_tables.set(tables as i64);
    }

    pub fn set_table_slots(&self, slots: usize) {
        self.table_slots.set(slots as i64);
    }
}

/// What one table's rounds record.
#[derive(Clone)]
pub struct TableMetrics {
    m: &'static Metrics,
    labels: TableLabels,
    /// Counted for every batch: looked up once per round, not per batch.
    records_read: Counter,
    read_bytes: Counter,
}

/// What one maintenance call did, as the metrics count it.
#[derive(Debug, Default, Clone, Copy)]
pub struct MaintenanceCounts {
    pub snapshots_expired: u64,
    pub files_deleted: u64,
    pub bytes_deleted: u64,
    pub files_compacted: u64,
    pub files_written: u64,
    /// Parts of the table whose due compaction does not fit the call's input budget; `None`
    /// for a call that failed (the gauge keeps its last value).
    pub over_budget: Option<u32>,
}

impl TableMetrics {
    pub fn labels(&self) -> &TableLabels {
        &self.labels
    }

    pub fn round_started(&self) {
        self.m.rounds_started.get_or_create(&self.labels).inc();
    }

    pub fn round_empty(&self) {
        self.m.rounds_empty.get_or_create(&self.labels).inc();
    }

    pub fn round_failed(&self, reason: &str) {
        self.m
            .rounds_failed
            .get_or_create(&TableReasonLabels {
                table: self.labels.clone(),
                reason: reason.to_string(),
            })
            .inc();
    }

    pub fn round_force_finished(&self, reason: &str) {
        self.m
            .rounds_force_finished
            .get_or_create(&TableReasonLabels {
                table: self.labels.clone(),
                reason: reason.to_string(),
            })
            .inc();
    }

    pub fn round_duration(&self, d: Duration) {
        self.m
            .round_duration
            .get_or_create(&self.labels)
            .observe(d.as_secs_f64());
    }

    /// A batch read from Fluss.
    pub fn read(&self, records: u64, bytes: u64) {
        self.records_read.inc_by(records);
        self.read_bytes.inc_by(bytes);
    }

    /// The table's configured freshness (`table.datalake.freshness`).
    pub fn freshness_target(&self, freshness: Duration) {
        self.m
            .freshness_target
            .get_or_create(&self.labels)
            .set(freshness.as_secs_f64());
    }

    pub fn lag(&self, records: u64) {
        self.m
            .lag_records
            .get_or_create(&self.labels)
            .set(i64::try_from(records).unwrap_or(i64::MAX));
    }

    /// Records lost in the buckets the last round refused for a log gap.
    pub fn log_gap(&self, records: u64) {
        self.m
            .log_gap_records
            .get_or_create(&self.labels)
            .set(i64::try_from(records).unwrap_or(i64::MAX));
    }

    /// A committed round tiered past accepted log gaps of `records` records.
    pub fn log_gap_skipped(&self, records: u64) {
        self.m
            .log_gap_skipped_records
            .get_or_create(&self.labels)
            .inc_by(records);
    }

    /// A committed round rebuilt `buckets` primary-key buckets from their KV snapshots.
    pub fn buckets_rebuilt(&self, buckets: u64) {
        self.m
            .buckets_rebuilt
            .get_or_create(&self.labels)
            .inc_by(buckets);
    }

    /// A committed round: what it wrote, how long its commit took, the newest record it
    /// tiered and the lake table's size after it.
    pub fn committed(&self, c: &CommittedRound) {
        let m = self.m;
        m.rounds_committed.get_or_create(&self.labels).inc();
        m.records_written
            .get_or_create(&self.labels)
            .inc_by(c.records);
        m.written_bytes.get_or_create(&self.labels).inc_by(c.bytes);
        m.files_written.get_or_create(&self.labels).inc_by(c.files);
        m.commit_duration
            .get_or_create(&self.labels)
            .observe(c.commit_duration.as_secs_f64());
        if let Some(size) = c.lake_size_bytes {
            m.lake_size.get_or_create(&self.labels).set(size);
        }
        if let Some(records) = c.lake_records {
            m.lake_records.get_or_create(&self.labels).set(records);
        }
        let mut tables = m.tables.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = tables.get_mut(&(self.labels.database.clone(), self.labels.table.clone()))
            && t.labels == self.labels
        {
            t.last_commit = Some(Instant::now());
            t.newest_record_ms = t.newest_record_ms.max(c.newest_record_ms);
        }
    }

    pub fn maintained(&self, ok: bool, counts: MaintenanceCounts, duration: Duration) {
        let m = self.m;
        m.maintenance_runs
            .get_or_create(&TableResultLabels {
                table: self.labels.clone(),
                result: if ok { "ok" } else { "failed" }.to_string(),
            })
            .inc();
        m.maintenance_duration
            .get_or_create(&self.labels)
            .observe(duration.as_secs_f64());
        for (family, n) in [
            (&m.maintenance_snapshots_expired, counts.snapshots_expired),
            (&m.maintenance_files_deleted, counts.files_deleted),
            (&m.maintenance_deleted_bytes, counts.bytes_deleted),
            (&m.maintenance_files_compacted, counts.files_compacted),
            (&m.maintenance_files_written, counts.files_written),
        ] {
            family.get_or_create(&self.labels).inc_by(n);
        }
        if let Some(parts) = counts.over_budget {
            m.maintenance_over_budget
                .get_or_create(&self.labels)
                .set(i64::from(parts));
        }
    }
}

/// What a committed round reports to the metrics.
#[derive(Debug, Default, Clone)]
pub struct CommittedRound {
    pub records: u64,
    pub bytes: u64,
    pub files: u64,
    pub commit_duration: Duration,
    pub newest_record_ms: Option<i64>,
    pub lake_size_bytes: Option<i64>,
    pub lake_records: Option<i64>,
}

/// What one plugin's instances record.
#[derive(Clone)]
pub struct PluginMetrics {
    m: &'static Metrics,
    labels: PluginLabels,
}

/// How a call into a plugin ended, as the metrics count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEnd {
    Returned,
    /// A trap: a panic in the plugin, a sandbox limit.
    Trapped,
    /// Guest code ran past the call's deadline and was interrupted (a trap too).
    DeadlineExceeded,
    /// Blocked in a host import past the deadline and abandoned (not a trap: the guest
    /// never got control back).
    Abandoned,
    Cancelled,
}

impl PluginMetrics {
    pub fn call(&self, function: &str, took: Duration, end: CallEnd) {
        let labels = PluginCallLabels {
            plugin: self.labels.clone(),
            function: function.to_string(),
        };
        self.m
            .plugin_call_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if matches!(end, CallEnd::Trapped | CallEnd::DeadlineExceeded) {
            self.m.plugin_traps.get_or_create(&labels).inc();
        }
        if matches!(end, CallEnd::DeadlineExceeded | CallEnd::Abandoned) {
            self.m
                .plugin_deadline_interruptions
                .get_or_create(&labels)
                .inc();
        }
    }

    pub fn instantiated(&self, took: Duration) {
        self.m
            .plugin_instantiate_duration
            .get_or_create(&self.labels)
            .observe(took.as_secs_f64());
    }

    /// An instance's linear memory, recorded when it is dropped (memory never shrinks, so
    /// that is its peak).
    pub fn memory(&self, bytes: usize) {
        let gauge = self.m.plugin_memory_high_water.get_or_create(&self.labels);
        let inner: &AtomicI64 = gauge.inner();
        inner.fetch_max(i64::try_from(bytes).unwrap_or(i64::MAX), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(table: &str, digest: &str) -> TableLabels {
        TableLabels {
            database: "db".into(),
            table: table.into(),
            format: "paimon".into(),
            plugin_digest: digest.into(),
        }
    }

    /// The exposition lines of one metric family, for assertions.
    fn lines(name: &str) -> Vec<String> {
        metrics()
            .encode()
            .lines()
            .filter(|l| l.starts_with(name))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn counters_and_histograms_are_exposed_under_prometheus_names() {
        let t = metrics().table(labels("exposed", "aaaaaaaaaaaa"));
        t.round_started();
        t.read(10, 1000);
        t.committed(&CommittedRound {
            records: 10,
            bytes: 4096,
            files: 3,
            commit_duration: Duration::from_millis(30),
            newest_record_ms: Some(now_millis() - 2_000),
            lake_size_bytes: Some(8192),
            lake_records: Some(10),
        });
        t.round_failed("plugin");
        let l = r#"{database="db",table="exposed",format="paimon",plugin_digest="aaaaaaaaaaaa"}"#;
        let text = metrics().encode();
        for want in [
            format!("fluss_lake_table_rounds_started_total{l} 1"),
            format!("fluss_lake_table_records_written_total{l} 10"),
            format!("fluss_lake_table_written_bytes_total{l} 4096"),
            format!("fluss_lake_table_files_written_total{l} 3"),
            format!("fluss_lake_table_lake_size_bytes{l} 8192"),
            format!("fluss_lake_table_commit_duration_seconds_count{l} 1"),
        ] {
            assert!(text.contains(&want), "missing {want} in\n{text}");
        }
        assert!(text.contains(
            r#"fluss_lake_table_rounds_failed_total{database="db",table="exposed",format="paimon",plugin_digest="aaaaaaaaaaaa",reason="plugin"} 1"#
        ));
        let freshness =
            lines("fluss_lake_table_freshness_seconds{database=\"db\",table=\"exposed\"");
        let value: f64 = freshness[0].rsplit(' ').next().unwrap().parse().unwrap();
        assert!((1.5..60.0).contains(&value), "{freshness:?}");
        assert!(text.contains("# TYPE fluss_lake_heartbeats_sent counter"));
        assert!(text.contains("fluss_lake_build_info{version="));
        assert!(text.ends_with("# EOF\n"));
    }

    /// Heartbeat sizes and round start-up times are host series: however many tables the host
    /// tiers, there is one of each, and the largest heartbeat is kept.
    #[test]
    fn heartbeat_sizes_keep_their_largest_and_round_times_are_host_series() {
        metrics().heartbeat_sizes(5_000, Some(300));
        metrics().heartbeat_sizes(40, None);
        metrics().round_planned(Duration::from_millis(20));
        metrics().round_first_write(Duration::from_millis(90));
        let value = |name: &str| -> i64 {
            let l = lines(name);
            assert_eq!(l.len(), 1, "{l:?}");
            l[0].rsplit(' ').next().unwrap().parse().unwrap()
        };
        assert!(value("fluss_lake_heartbeat_request_max_bytes ") >= 5_000);
        assert!(value("fluss_lake_heartbeat_response_max_bytes ") >= 300);
        assert!(value("fluss_lake_heartbeat_request_bytes_count ") >= 2);
        assert!(value("fluss_lake_heartbeat_response_bytes_count ") >= 1);
        assert!(value("fluss_lake_round_plan_duration_seconds_count ") >= 1);
        assert!(value("fluss_lake_round_first_write_seconds_count ") >= 1);
        // No labels: one series per bucket bound, whatever the tables.
        assert!(
            lines("fluss_lake_round_plan_duration_seconds_bucket{")
                .iter()
                .all(|l| l.starts_with("fluss_lake_round_plan_duration_seconds_bucket{le=")),
        );
    }

    #[test]
    fn a_table_moving_to_another_plugin_drops_its_old_gauges() {
        let old = metrics().table(labels("moved", "111111111111"));
        old.lag(5);
        old.committed(&CommittedRound::default());
        assert_eq!(
            lines("fluss_lake_table_lag_records{database=\"db\",table=\"moved\"").len(),
            1
        );
        let new = metrics().table(labels("moved", "222222222222"));
        new.lag(0);
        let lag = lines("fluss_lake_table_lag_records{database=\"db\",table=\"moved\"");
        assert_eq!(lag.len(), 1, "{lag:?}");
        assert!(lag[0].contains("222222222222"));
        // The table's last commit moves with it: its age is the table's, whichever plugin.
        let age = lines("fluss_lake_table_last_commit_age_seconds{database=\"db\",table=\"moved\"");
        assert_eq!(age.len(), 1, "{age:?}");
        assert!(age[0].contains("222222222222"));
        metrics().forget_table("db", "moved");
        assert!(lines("fluss_lake_table_lag_records{database=\"db\",table=\"moved\"").is_empty());
    }

    /// The over-budget gauge holds what the last successful maintenance call reported: a
    /// failed call says nothing about the table's parts, so it keeps the value.
    #[test]
    fn over_budget_parts_follow_the_last_successful_maintenance_call() {
        let t = metrics().table(labels("budget", "333333333333"));
        let gauge = || {
            lines("fluss_lake_table_maintenance_over_budget_parts{database=\"db\",table=\"budget\"")
        };
        let call = |over_budget| MaintenanceCounts {
            over_budget,
            ..MaintenanceCounts::default()
        };
        t.maintained(true, call(Some(3)), Duration::from_millis(5));
        assert!(gauge()[0].ends_with("} 3"), "{:?}", gauge());
        t.maintained(false, call(None), Duration::from_millis(5));
        assert!(gauge()[0].ends_with("} 3"), "{:?}", gauge());
        t.maintained(true, call(Some(0)), Duration::from_millis(5));
        assert!(gauge()[0].ends_with("} 0"), "{:?}", gauge());
        metrics().forget_table("db", "budget");
        assert!(gauge().is_empty());
    }

    /// A plugin's version is the one plugin-chosen text in a label: whatever it holds, the
    /// exposition stays one line per series (the loader already bounds it and escapes
    /// control characters; the encoder escapes quotes and backslashes).
    #[test]
    fn a_hostile_plugin_version_cannot_break_the_exposition() {
        let version = crate::plugin::sandbox::plugin_text(
            "1\"} 1\nfluss_lake_injected 1\n# EOF\n\\",
            crate::plugin::sandbox::MAX_INFO_FIELD_BYTES,
        );
        metrics().set_loaded_plugins([(
            PluginLabels::new("hostile", "ffffffffffff"),
            version.as_str(),
            "file",
        )]);
        let text = metrics().encode();
        let line = lines("fluss_lake_plugin_info{format=\"hostile\"");
        assert_eq!(line.len(), 1, "{text}");
        assert!(line[0].ends_with("} 1"), "{line:?}");
        assert_eq!(text.lines().filter(|l| *l == "# EOF").count(), 1, "{text}");
        assert!(
            !text.lines().any(|l| l.starts_with("fluss_lake_injected")),
            "{text}"
        );
        metrics().set_loaded_plugins([]);
    }

    #[test]
    fn plugin_calls_count_traps_and_deadlines_and_keep_the_memory_peak() {
        let p = metrics().plugin(PluginLabels::new("evil", "0123456789abcdef"));
        p.call("write", Duration::from_millis(2), CallEnd::Returned);
        p.call("write", Duration::from_millis(2), CallEnd::Trapped);
        p.call("commit", Duration::from_secs(1), CallEnd::DeadlineExceeded);
        p.call("write", Duration::from_secs(2), CallEnd::Abandoned);
        p.memory(2 << 20);
        p.memory(1 << 20);
        let text = metrics().encode();
        let l = r#"format="evil",plugin_digest="0123456789ab""#;
        for want in [
            format!("fluss_lake_plugin_traps_total{{{l},function=\"write\"}} 1"),
            format!("fluss_lake_plugin_traps_total{{{l},function=\"commit\"}} 1"),
            format!("fluss_lake_plugin_deadline_interruptions_total{{{l},function=\"commit\"}} 1"),
            format!("fluss_lake_plugin_deadline_interruptions_total{{{l},function=\"write\"}} 1"),
            format!("fluss_lake_plugin_call_duration_seconds_count{{{l},function=\"write\"}} 3"),
            format!(
                "fluss_lake_plugin_memory_high_water_bytes{{{l}}} {}",
                2 << 20
            ),
        ] {
            assert!(text.contains(&want), "missing {want} in\n{text}");
        }
    }
}
