// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

use crate::client::ClientSchemaGetter;
use crate::client::connection::FlussConnection;
use crate::client::credentials::SecurityTokenManager;
use crate::client::metadata::Metadata;
use crate::client::table::batch_scanner::LimitBatchScanner;
use crate::client::table::log_fetch_buffer::{
    CompletedFetch, DefaultCompletedFetch, FetchErrorAction, FetchErrorContext, FetchErrorLogLevel,
    FetchResult, LogFetchBuffer, NO_FILTERED_END_OFFSET, RemotePendingFetch,
};
use crate::client::table::read_context_resolver::ReadContextResolver;
use crate::client::table::remote_log::{RemoteLogDownloader, RemoteLogFetchInfo};
use crate::config::Config;
use crate::error::Error::UnsupportedOperation;
use crate::error::{ApiError, Error, FlussError, Result};
use crate::metadata::{
    LogFormat, PhysicalTablePath, RowType, SchemaInfo, TableBucket, TableInfo, TablePath,
};
use crate::metrics::ScannerMetrics;
use crate::predicate::{Predicate, to_pb_predicate};
use crate::proto::{
    ErrorResponse, FetchLogRequest, FetchLogResponse, PbFetchLogReqForBucket,
    PbFetchLogReqForTable, PbPredicate,
};
use crate::record::{
    LogRecordsBatches, ReadContext, ScanBatch, ScanRecord, ScanRecords, to_arrow_schema,
};
use crate::rpc::{RpcClient, RpcError, message};
use crate::util::FairBucketStatusMap;
use crate::{PartitionId, TableId};
use arrow_schema::SchemaRef;
use log::{debug, warn};
use parking_lot::{Mutex, RwLock};
use prost::Message;
use std::{
    collections::{HashMap, HashSet},
    slice::from_ref,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

pub struct TableScan<'a> {
    conn: &'a FlussConnection,
    table_info: TableInfo,
    metadata: Arc<Metadata>,
    /// Column indices to project. None means all columns, Some(vec) means only the specified columns (non-empty).
    projected_fields: Option<Vec<usize>>,
    /// Whether to align evolved schemas back to the scanner creation schema.
    fixed_schema: bool,
    /// Optional row limit. When set, callers may construct a [`BatchScanner`] for a one-shot bounded scan.
    limit: Option<i32>,
    /// Filter pushed down to the server, encoded eagerly so that an unresolvable
    /// column is reported by [`Self::filter`] rather than at scanner creation.
    filter: Option<PbPredicate>,
}

impl<'a> TableScan<'a> {
    pub fn new(conn: &'a FlussConnection, table_info: TableInfo, metadata: Arc<Metadata>) -> Self {
        Self {
            conn,
            table_info,
            metadata,
            projected_fields: None,
            fixed_schema: true,
            limit: None,
            filter: None,
        }
    }

    /// Controls how log scanners handle schema evolution.
    ///
    /// When enabled, batches written with older schemas are decoded with their
    /// write-time schema and then aligned to the schema captured when the
    /// scanner is created; missing columns are returned as nulls. This is the
    /// default for both row and batch log scanners, ensuring that a scan exposes
    /// one stable schema. When explicitly disabled, records and batches keep
    /// their write-time schema and may have different column counts across
    /// schema changes. Log-table [`LimitBatchScanner`]s require fixed-schema mode
    /// because they return all decoded log batches as one `RecordBatch`.
    pub fn with_fixed_schema(mut self, fixed_schema: bool) -> Self {
        self.fixed_schema = fixed_schema;
        self
    }

    /// Sets a row limit for the scan, enabling [`Self::create_bucket_batch_scanner`].
    ///
    /// The limit must be positive. A limit is incompatible with the log
    /// scanners, which reject it.
    pub fn limit(mut self, n: i32) -> Result<Self> {
        if n <= 0 {
            return Err(Error::IllegalArgument {
                message: format!("Scan limit must be positive, got {n}"),
            });
        }
        self.limit = Some(n);
        Ok(self)
    }

    /// Pushes `predicate` down to the log scanners, which skip whole record
    /// batches whose statistics cannot match.
    ///
    /// This only reduces what is fetched, so a scan still returns a superset of
    /// the matching rows and callers needing exact results must filter again.
    ///
    /// # Errors
    /// Returns an error if a column is missing from the table, has no schema
    /// field id, or holds a literal its declared type cannot represent exactly.
    pub fn filter(mut self, predicate: Predicate) -> Result<Self> {
        // Resolve against the full row type: the server evaluates the filter
        // before projection, so projected indices would name the wrong columns.
        self.filter = Some(to_pb_predicate(&predicate, self.table_info.get_row_type())?);
        Ok(self)
    }

    /// Batch scanners have no predicate field in their request; reject a
    /// configured filter rather than silently ignoring it.
    fn reject_filter(&self, scanner: &str) -> Result<()> {
        if self.filter.is_some() {
            return Err(Error::UnsupportedOperation {
                message: format!(
                    "{scanner} doesn't support filter pushdown. Table: {}",
                    self.table_info.table_path
                ),
            });
        }
        Ok(())
    }

    /// Log scanners don't support limit pushdown; reject a configured limit
    /// rather than silently ignoring it.
    fn reject_limit(&self, scanner: &str) -> Result<()> {
        if let Some(limit) = self.limit {
            return Err(Error::UnsupportedOperation {
                message: format!(
                    "{scanner} doesn't support limit pushdown. Table: {}, requested limit: {limit}",
                    self.table_info.table_path
                ),
            });
        }
        Ok(())
    }

    /// Creates a one-shot bounded scan of `table_bucket`.
    ///
    /// Requires a previously-configured limit via [`Self::limit`]. Creation is
    /// cheap; the `LimitScanRequest` runs on the first
    /// [`LimitBatchScanner::next_batch`].
    pub fn create_bucket_batch_scanner(
        self,
        table_bucket: TableBucket,
    ) -> Result<LimitBatchScanner> {
        self.reject_filter("BatchScanner")?;
        let limit = self.limit.ok_or_else(|| Error::IllegalArgument {
            message: "create_bucket_batch_scanner requires a limit configured via .limit(n)"
                .to_string(),
        })?;
        validate_limit_scan_fixed_schema(&self.table_info, self.fixed_schema)?;
        if table_bucket.table_id() != self.table_info.table_id {
            return Err(Error::IllegalArgument {
                message: format!(
                    "Bucket table_id {} does not match scan table_id {}",
                    table_bucket.table_id(),
                    self.table_info.table_id
                ),
            });
        }
        let num_buckets = self.table_info.get_num_buckets();
        if table_bucket.bucket_id() < 0 || table_bucket.bucket_id() >= num_buckets {
            return Err(Error::IllegalArgument {
                message: format!(
                    "Bucket id {} out of range for table with {num_buckets} buckets",
                    table_bucket.bucket_id()
                ),
            });
        }
        // Log tables decode as Arrow IPC, so only ARROW format is supported (KV
        // tables use the value-record path and are exempt).
        if !self.table_info.has_primary_key() {
            validate_scan_support(&self.table_info.table_path, &self.table_info)?;
        }
        // Pre-seed the current schema; older versions are fetched lazily while
        // decoding log or KV batches. Mirrors `Table::new_lookup`.
        let latest = SchemaInfo::new(
            self.table_info.get_schema().clone(),
            self.table_info.get_schema_id(),
        );
        let schema_getter = Arc::new(ClientSchemaGetter::new(
            self.table_info.table_path.clone(),
            self.conn.get_admin()?,
            latest,
        ));
        Ok(LimitBatchScanner::new(
            self.conn.get_connections(),
            self.metadata.clone(),
            self.table_info,
            schema_getter,
            self.projected_fields,
            table_bucket,
            limit,
        ))
    }

    /// Projects the scan to only include specified columns by their indices.
    ///
    /// # Arguments
    /// * `column_indices` - Zero-based indices of columns to include in the scan
    ///
    /// # Errors
    /// Returns an error if `column_indices` is empty or if any column index is out of range.
    ///
    /// # Example
    /// ```
    /// # use fluss::client::FlussConnection;
    /// # use fluss::config::Config;
    /// # use fluss::error::Result;
    /// # use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
    /// # use fluss::row::{DataGetters, InternalRow};
    /// # use std::time::Duration;
    ///
    /// # pub async fn example() -> Result<()> {
    ///     let mut config = Config::default();
    ///     config.bootstrap_servers = "127.0.0.1:9123".to_string();
    ///     let conn = FlussConnection::new(config).await?;
    ///
    ///     let table_descriptor = TableDescriptor::builder()
    ///         .schema(
    ///             Schema::builder()
    ///                 .column("col1", DataTypes::int())
    ///                 .column("col2", DataTypes::string())
    ///                 .column("col3", DataTypes::string())
    ///                 .column("col4", DataTypes::string())
    ///             .build()?,
    ///         ).build()?;
    ///     let table_path = TablePath::new("fluss".to_owned(), "rust_test_long".to_owned());
    ///     let admin = conn.get_admin()?;
    ///     admin.create_table(&table_path, &table_descriptor, true)
    ///         .await?;
    ///     let table_info = admin.get_table_info(&table_path).await?;
    ///     let table = conn.get_table(&table_path).await?;
    ///
    ///     // Project columns by indices
    ///     let scanner = table.new_scan().project(&[0, 2, 3])?.create_log_scanner()?;
    ///     let scan_records = scanner.poll(Duration::from_secs(10)).await?;
    ///     for record in scan_records {
    ///         let row = record.row();
    ///         println!(
    ///             "{{{}, {}, {}}}@{}",
    ///             row.get_int(0)?,
    ///             row.get_string(2)?,
    ///             row.get_string(3)?,
    ///             record.offset()
    ///         );
    ///     }
    ///     # Ok(())
    /// # }
    /// ```
    pub fn project(mut self, column_indices: &[usize]) -> Result<Self> {
        if column_indices.is_empty() {
            return Err(Error::IllegalArgument {
                message: "Column indices cannot be empty".to_string(),
            });
        }
        let field_count = self.table_info.row_type().fields().len();
        for &idx in column_indices {
            if idx >= field_count {
                return Err(Error::IllegalArgument {
                    message: format!(
                        "Column index {} out of range (max: {})",
                        idx,
                        field_count - 1
                    ),
                });
            }
        }
        self.projected_fields = Some(column_indices.to_vec());
        Ok(self)
    }

    /// Projects the scan to only include specified columns by their names.
    ///
    /// # Arguments
    /// * `column_names` - Names of columns to include in the scan
    ///
    /// # Errors
    /// Returns an error if `column_names` is empty or if any column name is not found in the table schema.
    ///
    /// # Example
    /// ```
    /// # use fluss::client::FlussConnection;
    /// # use fluss::config::Config;
    /// # use fluss::error::Result;
    /// # use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
    /// # use fluss::row::{DataGetters, InternalRow};
    /// # use std::time::Duration;
    ///
    /// # pub async fn example() -> Result<()> {
    ///     let mut config = Config::default();
    ///     config.bootstrap_servers = "127.0.0.1:9123".to_string();
    ///     let conn = FlussConnection::new(config).await?;
    ///
    ///     let table_descriptor = TableDescriptor::builder()
    ///         .schema(
    ///             Schema::builder()
    ///                 .column("col1", DataTypes::int())
    ///                 .column("col2", DataTypes::string())
    ///                 .column("col3", DataTypes::string())
    ///             .build()?,
    ///         ).build()?;
    ///     let table_path = TablePath::new("fluss".to_owned(), "rust_test_long".to_owned());
    ///     let admin = conn.get_admin()?;
    ///     admin.create_table(&table_path, &table_descriptor, true)
    ///         .await?;
    ///     let table = conn.get_table(&table_path).await?;
    ///
    ///     // Project columns by column names
    ///     let scanner = table.new_scan().project_by_name(&["col1", "col3"])?.create_log_scanner()?;
    ///     let scan_records = scanner.poll(Duration::from_secs(10)).await?;
    ///     for record in scan_records {
    ///         let row = record.row();
    ///         println!(
    ///             "{{{}, {}}}@{}",
    ///             row.get_int(0)?,
    ///             row.get_string(1)?,
    ///             record.offset()
    ///         );
    ///     }
    ///     # Ok(())
    /// # }
    /// ```
    pub fn project_by_name(mut self, column_names: &[&str]) -> Result<Self> {
        if column_names.is_empty() {
            return Err(Error::IllegalArgument {
                message: "Column names cannot be empty".to_string(),
            });
        }
        let row_type = self.table_info.row_type();
        let mut indices = Vec::new();

        for name in column_names {
            let idx = row_type
                .fields()
                .iter()
                .position(|f| f.name() == *name)
                .ok_or_else(|| Error::IllegalArgument {
                    message: format!("Column '{name}' not found"),
                })?;
            indices.push(idx);
        }

        self.projected_fields = Some(indices);
        Ok(self)
    }

    /// Creates a record-mode log scanner, polled for individual [`ScanRecord`]s.
    ///
    /// Works on log tables and on primary-key (KV) tables. For a primary-key
    /// table this subscribes to its CDC changelog: each [`ScanRecord`] carries a
    /// [`ChangeType`](crate::record::ChangeType) — `+I` (insert), `-U`
    /// (update-before), `+U` (update-after) or `-D` (delete). A log table yields
    /// `+A` (append-only) for every record. Requires the ARROW log format.
    pub fn create_log_scanner(self) -> Result<LogScanner> {
        self.reject_limit("LogScanner")?;
        validate_scan_support_inner(&self.table_info.table_path, &self.table_info, true)?;
        let admin = self.conn.get_admin()?;
        let inner = LogScannerInner::new(
            &self.table_info,
            self.metadata.clone(),
            self.conn.get_connections(),
            self.conn.config(),
            self.projected_fields,
            self.fixed_schema,
            self.filter,
            admin,
        )?;
        Ok(LogScanner {
            inner: Arc::new(inner),
        })
    }

    /// Creates a batch-mode log scanner that yields Arrow `RecordBatch`es.
    ///
    /// Log tables only. Primary-key tables are rejected because the Arrow batch
    /// path carries no per-record change types; read a primary-key table's
    /// changelog with [`create_log_scanner`](Self::create_log_scanner) instead.
    /// Requires the ARROW log format.
    pub fn create_record_batch_log_scanner(self) -> Result<RecordBatchLogScanner> {
        self.reject_limit("RecordBatchLogScanner")?;
        validate_scan_support(&self.table_info.table_path, &self.table_info)?;
        let admin = self.conn.get_admin()?;
        let inner = LogScannerInner::new(
            &self.table_info,
            self.metadata.clone(),
            self.conn.get_connections(),
            self.conn.config(),
            self.projected_fields,
            self.fixed_schema,
            self.filter,
            admin,
        )?;
        Ok(RecordBatchLogScanner {
            inner: Arc::new(inner),
        })
    }
}

/// Scanner for reading log records one at a time with per-record metadata.
///
/// Use this scanner when you need access to individual record offsets and timestamps.
/// For batch-level access, use [`RecordBatchLogScanner`] instead.
pub struct LogScanner {
    inner: Arc<LogScannerInner>,
}

/// Scanner for reading log data as Arrow RecordBatches.
///
/// More efficient than [`LogScanner`] for batch-level analytics where per-record
/// metadata (offsets, timestamps) is not needed.
///
/// This type is intentionally **not** `Clone`. To perform a bounded read, move
/// the scanner into a [`crate::client::RecordBatchLogReader`] — the compiler
/// then prevents concurrent polls by construction.
pub struct RecordBatchLogScanner {
    inner: Arc<LogScannerInner>,
}

/// Private shared implementation for both scanner types
struct LogScannerInner {
    table_path: TablePath,
    table_id: TableId,
    num_buckets: i32,
    metadata: Arc<Metadata>,
    log_scanner_status: Arc<LogScannerStatus>,
    log_fetcher: LogFetcher,
    is_partitioned_table: bool,
    arrow_schema: SchemaRef,
    /// Guards against subscription changes while a
    /// [`crate::client::RecordBatchLogReader`] is iterating.
    reader_active: std::sync::atomic::AtomicBool,
    /// Serializes the active-reader transition with subscription mutations.
    ///
    /// Public subscribe methods await metadata before changing the status map.
    /// Without this lock, a subscribe call that passed the initial
    /// `reader_active` check could finish after a bounded reader became active.
    subscription_lock: Mutex<()>,
    /// Holds the snapshot fields used by [`PollGuard`] to derive the
    /// scanner poll-timing metrics. The mutex makes the state updates
    /// in `record_poll_start` / `record_poll_end` atomic; metric
    /// emission and `log::warn!` calls happen after the lock is
    /// released. The start↔end pairing depends on the single-consumer
    /// contract documented on [`LogScanner::poll`] and
    /// [`RecordBatchLogScanner::poll`] (mirrors Java's
    /// `LogScannerImpl.acquire()`). Overlapping polls on the same
    /// scanner trip a `debug_assert!` in `record_poll_start` (debug
    /// builds) or emit a `log::warn!` (release builds).
    poll_state: Mutex<PollState>,
    /// Per-table scanner metric handles, pre-bound with `database`/`table`
    /// labels.
    metrics: Arc<ScannerMetrics>,
    /// Wall-clock millis (since `UNIX_EPOCH`) of the most recent
    /// `record_poll_start`. Sentinel `0` means "no poll yet" — the
    /// `last_poll_seconds_ago` ticker skips emission while this is `0`,
    /// deviating from Java's unguarded `(now - 0)/1000` startup value.
    ///
    /// Written by `record_poll_start` with `Release` ordering, read by
    /// the ticker task with `Acquire` ordering. Cloned (`Arc`) into the
    /// ticker so the task does not hold a back-reference to
    /// `LogScannerInner` (avoids a reference cycle that would block
    /// `Drop`, and hence the ticker abort, until tokio runtime
    /// shutdown).
    last_poll_unix_ms: Arc<AtomicI64>,
    /// Handle to the 1-second background tokio task that pushes
    /// `last_poll_seconds_ago` into the gauge. Aborted from
    /// `impl Drop for LogScannerInner` so the gauge stops emitting once
    /// the scanner is closed.
    last_poll_seconds_ago_task: JoinHandle<()>,
}

/// Snapshot state used to derive the scanner poll-timing metrics.
///
/// The mutex makes the state updates in `record_poll_start` /
/// `record_poll_end` atomic with respect to themselves; metric
/// emission (`metrics::gauge!(...).set(...)`) and `log::warn!` calls
/// happen after the lock is released so a user-installed recorder or
/// logger cannot stall the critical section. The mutex does **not** by
/// itself preserve start↔end pairing across overlapping `poll()` calls
/// — that invariant relies on the single-consumer contract that
/// mirrors Java's `LogScannerImpl.acquire()`. Concurrent polls on the
/// same scanner are detected by a `debug_assert!` in
/// `record_poll_start` (panics in debug / tests) and a `log::warn!` on
/// both anomalous paths (`record_poll_start` sees a stale `Some`;
/// `record_poll_end` sees `None`) for release-build observability.
#[derive(Default, Debug)]
struct PollState {
    /// Instant captured at the most recent `record_poll_start()`. `None`
    /// before the first poll.
    last_poll_at: Option<Instant>,
    /// Instant captured at the start of the in-flight poll. `None` after
    /// the last `record_poll_end()`.
    poll_start_at: Option<Instant>,
    /// Cached ms between the two most recent poll starts, used to compute
    /// `poll_idle_ratio` in `record_poll_end`.
    time_between_poll_ms: f64,
}

/// Pairs `record_poll_start` with `record_poll_end`. Created
/// at the top of `poll_records` / `poll_batches`; `record_poll_end` runs on
/// drop, including the cancellation path (caller drops the future).
struct PollGuard<'a> {
    inner: &'a LogScannerInner,
}

impl<'a> PollGuard<'a> {
    fn new(inner: &'a LogScannerInner) -> Self {
        inner.record_poll_start();
        Self { inner }
    }
}

impl Drop for PollGuard<'_> {
    fn drop(&mut self) {
        self.inner.record_poll_end();
    }
}

/// Single-tick emission for the `last_poll_seconds_ago` gauge. Reads the
/// last-poll timestamp from the shared atomic and pushes the elapsed
/// integer-seconds into the gauge.
///
/// Emission is skipped while the atomic still holds the sentinel `0` (no
/// `record_poll_start` yet) — Java's `(System.currentTimeMillis() - 0) /
/// 1000` startup nonsense (see `ScannerMetricGroup.java:121`) would trip
/// every consumer-liveness alert on startup. Java parity note: Java's
/// expression is integer-truncating (`long / long`); we preserve that with
/// `i64` division before the `f64` cast so dashboards built against Java
/// behave the same.
///
/// Extracted from the ticker loop so unit tests can exercise the emission
/// logic without depending on real-time scheduling.
fn emit_last_poll_seconds_ago_once(last_poll_unix_ms: &AtomicI64, metrics: &ScannerMetrics) {
    let stored = last_poll_unix_ms.load(Ordering::Acquire);
    if stored == 0 {
        return;
    }
    let Ok(now_ms) = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
    else {
        return;
    };
    let seconds = ((now_ms - stored).max(0) / 1000) as f64;
    metrics.record_last_poll_seconds_ago(seconds);
}

/// Spawn the 1-second background tokio task that pushes
/// `last_poll_seconds_ago` into the gauge. The task holds only the shared
/// atomic timestamp and the metric handle — never an `Arc<LogScannerInner>`
/// — so it does not create a reference cycle that would block the scanner's
/// `Drop` (and hence the abort that stops this task).
///
/// `MissedTickBehavior::Delay` is used so a stalled runtime (e.g. test
/// pausing/advancing time) does not produce a burst of catch-up ticks when
/// it resumes.
fn spawn_last_poll_seconds_ago_ticker(
    last_poll_unix_ms: Arc<AtomicI64>,
    metrics: Arc<ScannerMetrics>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(Duration::from_secs(1));
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            emit_last_poll_seconds_ago_once(&last_poll_unix_ms, &metrics);
        }
    })
}

impl Drop for LogScannerInner {
    fn drop(&mut self) {
        self.last_poll_seconds_ago_task.abort();
    }
}

impl LogScannerInner {
    #[allow(clippy::too_many_arguments)]
    fn new(
        table_info: &TableInfo,
        metadata: Arc<Metadata>,
        connections: Arc<RpcClient>,
        config: &Config,
        projected_fields: Option<Vec<usize>>,
        fixed_schema: bool,
        filter: Option<PbPredicate>,
        admin: Arc<crate::client::admin::FlussAdmin>,
    ) -> Result<Self> {
        let log_scanner_status = Arc::new(LogScannerStatus::new());

        let full_row_type = table_info.get_row_type();
        let arrow_schema = match &projected_fields {
            Some(indices) => {
                let projected_fields_vec: Vec<_> = indices
                    .iter()
                    .map(|&i| full_row_type.fields()[i].clone())
                    .collect();
                let projected_row_type = crate::metadata::RowType::new(projected_fields_vec);
                to_arrow_schema(&projected_row_type)?
            }
            None => to_arrow_schema(full_row_type)?,
        };

        // Create schema getter for schema evolution support
        let latest_schema =
            SchemaInfo::new(table_info.get_schema().clone(), table_info.get_schema_id());
        let schema_getter = Arc::new(ClientSchemaGetter::new(
            table_info.table_path.clone(),
            admin,
            latest_schema,
        ));

        let metrics = Arc::new(ScannerMetrics::new(&table_info.table_path));
        let last_poll_unix_ms = Arc::new(AtomicI64::new(0));
        let last_poll_seconds_ago_task = spawn_last_poll_seconds_ago_ticker(
            Arc::clone(&last_poll_unix_ms),
            Arc::clone(&metrics),
        );
        Ok(Self {
            table_path: table_info.table_path.clone(),
            table_id: table_info.table_id,
            num_buckets: table_info.get_num_buckets(),
            is_partitioned_table: table_info.is_partitioned(),
            metadata: metadata.clone(),
            log_scanner_status: log_scanner_status.clone(),
            log_fetcher: LogFetcher::new(
                table_info.clone(),
                connections,
                metadata,
                log_scanner_status.clone(),
                config,
                projected_fields,
                fixed_schema,
                filter,
                Arc::clone(&metrics),
                schema_getter,
            )?,
            arrow_schema,
            reader_active: std::sync::atomic::AtomicBool::new(false),
            subscription_lock: Mutex::new(()),
            poll_state: Mutex::new(PollState::default()),
            metrics,
            last_poll_unix_ms,
            last_poll_seconds_ago_task,
        })
    }

    fn check_no_active_reader(&self) -> Result<()> {
        if self
            .reader_active
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err(Error::IllegalArgument {
                message: "Cannot modify subscriptions while a RecordBatchLogReader is active. \
                          Drop the reader first."
                    .to_string(),
            });
        }
        Ok(())
    }

    async fn poll_records(&self, timeout: Duration) -> Result<ScanRecords> {
        // Pairs record_poll_start (now) with record_poll_end
        // (drop). Runs on every exit, including the cancellation path
        // where the caller drops this future.
        let _poll_guard = PollGuard::new(self);
        let start = Instant::now();
        let deadline = start + timeout;

        loop {
            // Try to collect fetches
            let fetch_result = self.poll_for_fetches().await?;

            if !fetch_result.is_empty() {
                // We have data, send next round of fetches and return
                // This enables pipelining while user processes the data
                self.log_fetcher.send_fetches().await?;
                return Ok(ScanRecords::new(fetch_result));
            }

            // No data available, check if we should wait
            let now = Instant::now();
            if now >= deadline {
                // Timeout reached, return empty result
                return Ok(ScanRecords::new(HashMap::new()));
            }

            // Wait for buffer to become non-empty with remaining time
            let remaining = deadline - now;
            let has_data = self
                .log_fetcher
                .log_fetch_buffer
                .await_not_empty(remaining)
                .await?;

            if !has_data {
                // Timeout while waiting
                return Ok(ScanRecords::new(HashMap::new()));
            }

            // Buffer became non-empty, try again
        }
    }

    /// Records the start of a `poll()` call and emits
    /// `SCANNER_TIME_BETWEEN_POLL_MS`. The first poll emits `0.0`,
    /// matching Java's `ScannerMetricGroup.recordPollStart`
    /// (`timeMsBetweenPoll = lastPollMs != 0L ? pollStartMs - lastPollMs : 0L`).
    ///
    /// Single-consumer contract: a previous poll must have recorded its
    /// end before the next start. Java enforces this with
    /// `LogScannerImpl.acquire()` (throws `ConcurrentModificationException`).
    /// Rust surfaces violations as:
    /// - debug builds: `debug_assert!` panics (caught by tests),
    /// - release builds: `log::warn!` + the in-flight `poll_start_at` is
    ///   overwritten so the metric series keeps moving; the resulting
    ///   `time_between_poll_ms` / `poll_idle_ratio` values for the
    ///   overlapping polls are not meaningful until the overlap clears.
    fn record_poll_start(&self) {
        let now = Instant::now();
        // Compute under the lock; emit the metric outside the critical
        // section so a user-installed recorder cannot stall the next poll.
        let (between_ms, overlap) = {
            let mut state = self.poll_state.lock();
            let overlap = state.poll_start_at.is_some();
            debug_assert!(
                !overlap,
                "concurrent poll() detected on the same scanner; \
                 LogScanner / RecordBatchLogScanner are single-consumer \
                 (see LogScannerImpl.acquire() for Java parity)"
            );
            let between_ms = match state.last_poll_at {
                Some(prev) => now.duration_since(prev).as_secs_f64() * 1000.0,
                None => 0.0,
            };
            state.time_between_poll_ms = between_ms;
            state.last_poll_at = Some(now);
            state.poll_start_at = Some(now);
            (between_ms, overlap)
        };
        if overlap {
            warn!(
                "concurrent poll() detected on scanner; single-consumer \
                 contract violated, poll-timing metrics will be inaccurate \
                 until the overlap clears"
            );
        }
        self.metrics.record_time_between_poll_ms(between_ms);

        // Publish the wall-clock timestamp the ticker uses to compute
        // `last_poll_seconds_ago`. Use `SystemTime` rather than `Instant`
        // because the ticker needs an absolute clock to diff against
        // `SystemTime::now()` at arbitrary moments. `Release` pairs with the
        // ticker's `Acquire` load. If the system clock is somehow before
        // `UNIX_EPOCH` (vanishingly rare; pre-1970 wall clock), we keep the
        // existing value so we never publish a negative timestamp that would
        // produce a bogus gauge reading on the next tick.
        if let Ok(unix_ms) = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
        {
            self.last_poll_unix_ms.store(unix_ms, Ordering::Release);
        }
    }

    /// Computes `poll_idle_ratio = poll_time / (poll_time + between_time)`.
    /// On the first poll, `between_time` is 0 so the ratio is 1.0
    /// (poll-bound).
    ///
    /// Orphan call: if no matching `record_poll_start` is in flight,
    /// emits a `log::warn!` (single-consumer contract may have been
    /// violated, e.g. in release builds where the start-side
    /// `debug_assert!` is compiled out) and skips the metric update.
    fn record_poll_end(&self) {
        let now = Instant::now();
        // Compute under the lock; emit metric / warn outside the critical
        // section so neither the user-installed recorder nor the logger
        // can stall the next poll.
        let (orphan, ratio) = {
            let mut state = self.poll_state.lock();
            match state.poll_start_at.take() {
                None => (true, None),
                Some(start) => {
                    let poll_time_ms = now.duration_since(start).as_secs_f64() * 1000.0;
                    let total = poll_time_ms + state.time_between_poll_ms;
                    let r = (total > 0.0).then_some(poll_time_ms / total);
                    (false, r)
                }
            }
        };
        if orphan {
            warn!(
                "record_poll_end called without a matching record_poll_start; \
                 single-consumer contract may have been violated, idle ratio \
                 for this poll is not emitted"
            );
            return;
        }
        if let Some(r) = ratio {
            self.metrics.record_poll_idle_ratio(r);
        }
    }

    async fn subscribe(&self, bucket: i32, offset: i64) -> Result<()> {
        self.check_no_active_reader()?;
        if self.is_partitioned_table {
            return Err(Error::UnsupportedOperation {
                message: "The table is a partitioned table, please use \"subscribe_partition\" to \
                subscribe a partitioned bucket instead."
                    .to_string(),
            });
        }
        let table_bucket = TableBucket::new(self.table_id, bucket);
        self.metadata
            .check_and_update_table_metadata(from_ref(&self.table_path))
            .await?;
        let _subscription_guard = self.subscription_lock.lock();
        self.check_no_active_reader()?;
        self.log_scanner_status
            .assign_scan_bucket(table_bucket, offset);
        Ok(())
    }

    async fn subscribe_buckets(&self, bucket_offsets: &HashMap<i32, i64>) -> Result<()> {
        self.subscribe_buckets_internal(bucket_offsets, false).await
    }

    async fn subscribe_buckets_for_reader(&self, bucket_offsets: &HashMap<i32, i64>) -> Result<()> {
        self.subscribe_buckets_internal(bucket_offsets, true).await
    }

    /// `reader_is_active` is `false` for subscriptions initiated through the
    /// scanner API, which must reject an active reader, and `true` during reader
    /// construction, which already holds the active-reader guard.
    async fn subscribe_buckets_internal(
        &self,
        bucket_offsets: &HashMap<i32, i64>,
        reader_is_active: bool,
    ) -> Result<()> {
        if !reader_is_active {
            self.check_no_active_reader()?;
        }
        if self.is_partitioned_table {
            return Err(Error::UnsupportedOperation {
                message:
                    "The table is a partitioned table, please use \"subscribe_partition_buckets\" instead."
                        .to_string(),
            });
        }

        let mut scan_bucket_offsets = HashMap::new();
        for (bucket_id, offset) in bucket_offsets {
            let table_bucket = TableBucket::new(self.table_id, *bucket_id);
            scan_bucket_offsets.insert(table_bucket, *offset);
        }
        self.do_subscribe_buckets(scan_bucket_offsets, reader_is_active)
            .await
    }

    async fn subscribe_partition(
        &self,
        partition_id: PartitionId,
        bucket: i32,
        offset: i64,
    ) -> Result<()> {
        self.check_no_active_reader()?;
        if !self.is_partitioned_table {
            return Err(Error::UnsupportedOperation {
                message: "The table is not a partitioned table, please use \"subscribe\" to \
                subscribe a non-partitioned bucket instead."
                    .to_string(),
            });
        }
        let table_bucket =
            TableBucket::new_with_partition(self.table_id, Some(partition_id), bucket);
        self.metadata
            .check_and_update_partition_metadata_by_ids(&self.table_path, &[partition_id])
            .await?;
        let _subscription_guard = self.subscription_lock.lock();
        self.check_no_active_reader()?;
        self.log_scanner_status
            .assign_scan_bucket(table_bucket, offset);
        Ok(())
    }

    async fn subscribe_partition_buckets(
        &self,
        partition_bucket_offsets: &HashMap<(PartitionId, i32), i64>,
    ) -> Result<()> {
        self.subscribe_partition_buckets_internal(partition_bucket_offsets, false)
            .await
    }

    async fn subscribe_partition_buckets_for_reader(
        &self,
        partition_bucket_offsets: &HashMap<(PartitionId, i32), i64>,
    ) -> Result<()> {
        self.subscribe_partition_buckets_internal(partition_bucket_offsets, true)
            .await
    }

    /// `reader_is_active` is `false` for subscriptions initiated through the
    /// scanner API, which must reject an active reader, and `true` during reader
    /// construction, which already holds the active-reader guard.
    async fn subscribe_partition_buckets_internal(
        &self,
        partition_bucket_offsets: &HashMap<(PartitionId, i32), i64>,
        reader_is_active: bool,
    ) -> Result<()> {
        if !reader_is_active {
            self.check_no_active_reader()?;
        }
        if !self.is_partitioned_table {
            return Err(UnsupportedOperation {
                message: "The table is not a partitioned table, please use \"subscribe_buckets\" \
                    to subscribe to non-partitioned buckets instead."
                    .to_string(),
            });
        }

        let mut scan_bucket_offsets = HashMap::new();
        for (&(partition_id, bucket_id), &offset) in partition_bucket_offsets {
            let table_bucket =
                TableBucket::new_with_partition(self.table_id, Some(partition_id), bucket_id);
            scan_bucket_offsets.insert(table_bucket, offset);
        }
        self.do_subscribe_buckets(scan_bucket_offsets, reader_is_active)
            .await
    }

    async fn do_subscribe_buckets(
        &self,
        bucket_offsets: HashMap<TableBucket, i64>,
        reader_is_active: bool,
    ) -> Result<()> {
        if bucket_offsets.is_empty() {
            return Err(Error::UnexpectedError {
                message: "Bucket offsets are empty.".to_string(),
                source: None,
            });
        }

        if self.is_partitioned_table {
            let partition_ids: Vec<PartitionId> = bucket_offsets
                .keys()
                .filter_map(TableBucket::partition_id)
                .collect();
            self.metadata
                .check_and_update_partition_metadata_by_ids(&self.table_path, &partition_ids)
                .await?;
        } else {
            self.metadata
                .check_and_update_table_metadata(from_ref(&self.table_path))
                .await?;
        }

        let _subscription_guard = self.subscription_lock.lock();
        if reader_is_active {
            debug_assert!(
                self.reader_active
                    .load(std::sync::atomic::Ordering::Acquire),
                "reader-only subscription helper called without an active reader"
            );
        } else {
            self.check_no_active_reader()?;
        }
        self.log_scanner_status.assign_scan_buckets(bucket_offsets);
        Ok(())
    }

    async fn unsubscribe(&self, bucket: i32) -> Result<()> {
        let _subscription_guard = self.subscription_lock.lock();
        self.check_no_active_reader()?;
        if self.is_partitioned_table {
            return Err(Error::UnsupportedOperation {
                message:
                    "The table is a partitioned table, please use \"unsubscribe_partition\" to \
                    unsubscribe a partitioned bucket instead."
                        .to_string(),
            });
        }
        let table_bucket = TableBucket::new(self.table_id, bucket);
        self.log_scanner_status
            .unassign_scan_buckets(from_ref(&table_bucket));
        Ok(())
    }

    async fn unsubscribe_partition(&self, partition_id: PartitionId, bucket: i32) -> Result<()> {
        let _subscription_guard = self.subscription_lock.lock();
        self.check_no_active_reader()?;
        if !self.is_partitioned_table {
            return Err(Error::UnsupportedOperation {
                message: "Can't unsubscribe a partition for a non-partitioned table.".to_string(),
            });
        }
        let table_bucket =
            TableBucket::new_with_partition(self.table_id, Some(partition_id), bucket);
        self.log_scanner_status
            .unassign_scan_buckets(from_ref(&table_bucket));
        Ok(())
    }

    async fn poll_for_fetches(&self) -> Result<HashMap<TableBucket, Vec<ScanRecord>>> {
        let result = self.log_fetcher.collect_fetches().await?;
        if !result.is_empty() {
            return Ok(result);
        }

        // send any new fetches (won't resend pending fetches).
        self.log_fetcher.send_fetches().await?;

        // Collect completed fetches from buffer
        self.log_fetcher.collect_fetches().await
    }

    async fn poll_batches(&self, timeout: Duration) -> Result<Vec<ScanBatch>> {
        let _poll_guard = PollGuard::new(self);
        let start = Instant::now();
        let deadline = start + timeout;

        loop {
            let batches = self.poll_for_batches().await?;

            if !batches.is_empty() {
                self.log_fetcher.send_fetches().await?;
                return Ok(batches);
            }

            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }

            let remaining = deadline - now;
            let has_data = self
                .log_fetcher
                .log_fetch_buffer
                .await_not_empty(remaining)
                .await?;

            if !has_data {
                return Ok(Vec::new());
            }
        }
    }

    async fn poll_for_batches(&self) -> Result<Vec<ScanBatch>> {
        let result = self.log_fetcher.collect_batches().await?;
        if !result.is_empty() {
            return Ok(result);
        }

        self.log_fetcher.send_fetches().await?;
        self.log_fetcher.collect_batches().await
    }
}

// Implementation for LogScanner (records mode)
impl LogScanner {
    pub async fn poll(&self, timeout: Duration) -> Result<ScanRecords> {
        self.inner.poll_records(timeout).await
    }

    /// Returns all subscribed buckets with their next fetch offsets (which move past empty
    /// and control batches that yield no record). Patched in by fluss-lake-host.
    pub fn get_subscribed_buckets(&self) -> Vec<(TableBucket, i64)> {
        self.inner.log_scanner_status.get_all_subscriptions()
    }

    pub async fn subscribe(&self, bucket: i32, offset: i64) -> Result<()> {
        self.inner.subscribe(bucket, offset).await
    }

    pub async fn subscribe_buckets(&self, bucket_offsets: &HashMap<i32, i64>) -> Result<()> {
        self.inner.subscribe_buckets(bucket_offsets).await
    }

    pub async fn subscribe_partition(
        &self,
        partition_id: PartitionId,
        bucket: i32,
        offset: i64,
    ) -> Result<()> {
        self.inner
            .subscribe_partition(partition_id, bucket, offset)
            .await
    }

    pub async fn subscribe_partition_buckets(
        &self,
        partition_bucket_offsets: &HashMap<(PartitionId, i32), i64>,
    ) -> Result<()> {
        self.inner
            .subscribe_partition_buckets(partition_bucket_offsets)
            .await
    }

    pub async fn unsubscribe(&self, bucket: i32) -> Result<()> {
        self.inner.unsubscribe(bucket).await
    }

    pub async fn unsubscribe_partition(
        &self,
        partition_id: PartitionId,
        bucket: i32,
    ) -> Result<()> {
        self.inner.unsubscribe_partition(partition_id, bucket).await
    }
}

// Implementation for RecordBatchLogScanner (batches mode)
impl RecordBatchLogScanner {
    /// Poll for batches with metadata (bucket and offset information).
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<ScanBatch>> {
        self.inner.poll_batches(timeout).await
    }

    pub async fn subscribe(&self, bucket: i32, offset: i64) -> Result<()> {
        self.inner.subscribe(bucket, offset).await
    }

    pub async fn subscribe_buckets(&self, bucket_offsets: &HashMap<i32, i64>) -> Result<()> {
        self.inner.subscribe_buckets(bucket_offsets).await
    }

    pub async fn subscribe_partition(
        &self,
        partition_id: PartitionId,
        bucket: i32,
        offset: i64,
    ) -> Result<()> {
        self.inner
            .subscribe_partition(partition_id, bucket, offset)
            .await
    }

    /// Returns whether the table is partitioned
    pub fn is_partitioned(&self) -> bool {
        self.inner.is_partitioned_table
    }

    /// Returns all subscribed buckets with their current offsets
    pub fn get_subscribed_buckets(&self) -> Vec<(TableBucket, i64)> {
        self.inner.log_scanner_status.get_all_subscriptions()
    }

    pub async fn subscribe_partition_buckets(
        &self,
        partition_bucket_offsets: &HashMap<(PartitionId, i32), i64>,
    ) -> Result<()> {
        self.inner
            .subscribe_partition_buckets(partition_bucket_offsets)
            .await
    }

    pub async fn unsubscribe(&self, bucket: i32) -> Result<()> {
        self.inner.unsubscribe(bucket).await
    }

    pub async fn unsubscribe_partition(
        &self,
        partition_id: PartitionId,
        bucket: i32,
    ) -> Result<()> {
        self.inner.unsubscribe_partition(partition_id, bucket).await
    }

    /// Returns the Arrow schema for batches produced by this scanner.
    pub fn schema(&self) -> SchemaRef {
        self.inner.arrow_schema.clone()
    }

    pub fn table_path(&self) -> &TablePath {
        &self.inner.table_path
    }

    pub fn table_id(&self) -> TableId {
        self.inner.table_id
    }

    pub(crate) fn num_buckets(&self) -> i32 {
        self.inner.num_buckets
    }

    /// Subscribes non-partitioned ranges while the caller holds the active
    /// reader guard.
    pub(crate) async fn subscribe_buckets_for_reader(
        &self,
        bucket_offsets: &HashMap<i32, i64>,
    ) -> Result<()> {
        self.inner
            .subscribe_buckets_for_reader(bucket_offsets)
            .await
    }

    /// Subscribes partitioned ranges while the caller holds the active reader
    /// guard.
    pub(crate) async fn subscribe_partition_buckets_for_reader(
        &self,
        partition_bucket_offsets: &HashMap<(PartitionId, i32), i64>,
    ) -> Result<()> {
        self.inner
            .subscribe_partition_buckets_for_reader(partition_bucket_offsets)
            .await
    }

    /// Creates a new handle to the same underlying scanner state.
    ///
    /// Binding layers (Python, C++) that hold the scanner behind shared
    /// ownership (`Arc`) cannot move it into a [`crate::client::RecordBatchLogReader`].
    /// This method produces a second handle so the reader can take ownership
    /// while the binding retains its reference for subscription management.
    ///
    /// **Not intended for general use** — prefer moving the scanner directly.
    #[doc(hidden)]
    pub fn new_shared_handle(&self) -> Self {
        RecordBatchLogScanner {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Atomically marks the scanner as having an active reader.
    ///
    /// Returns `Err(IllegalArgument)` if another reader is already active on
    /// this scanner — only one [`crate::client::RecordBatchLogReader`] may
    /// iterate per scanner at a time. This mirrors Java's
    /// `LogScannerImpl.acquire()` single-consumer guard.
    pub(crate) fn try_set_reader_active(&self) -> Result<()> {
        use std::sync::atomic::Ordering;
        let _subscription_guard = self.inner.subscription_lock.lock();
        self.inner
            .reader_active
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|_| Error::IllegalArgument {
                message: "Another RecordBatchLogReader is already active on this scanner. \
                          Drop the existing reader first."
                    .to_string(),
            })
    }

    /// Clears the active-reader guard, re-enabling subscription changes.
    pub(crate) fn clear_reader_active(&self) {
        let _subscription_guard = self.inner.subscription_lock.lock();
        self.inner
            .reader_active
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Synchronous, infallible counterpart to [`unsubscribe`](Self::unsubscribe).
    ///
    /// Exists so [`crate::client::RecordBatchLogReader`]'s `Drop` impl can
    /// release lingering subscriptions without `.await`. The async version is
    /// also synchronous under the hood (it only acquires a lock and removes
    /// from a map — no IO), so this exposes the same work without the
    /// async wrapper. Silently no-ops on partitioned/non-partitioned mismatch
    /// because `Drop` cannot return errors; callers must pick the correct
    /// variant.
    ///
    /// **Not intended for general use** — prefer the async [`unsubscribe`].
    pub(crate) fn unsubscribe_sync(&self, bucket: i32) {
        let _subscription_guard = self.inner.subscription_lock.lock();
        if self.inner.is_partitioned_table {
            return;
        }
        let table_bucket = TableBucket::new(self.inner.table_id, bucket);
        self.inner
            .log_scanner_status
            .unassign_scan_buckets(from_ref(&table_bucket));
    }

    /// Synchronous, infallible counterpart to
    /// [`unsubscribe_partition`](Self::unsubscribe_partition). See
    /// [`unsubscribe_sync`](Self::unsubscribe_sync) for rationale.
    pub(crate) fn unsubscribe_partition_sync(&self, partition_id: PartitionId, bucket: i32) {
        let _subscription_guard = self.inner.subscription_lock.lock();
        if !self.inner.is_partitioned_table {
            return;
        }
        let table_bucket =
            TableBucket::new_with_partition(self.inner.table_id, Some(partition_id), bucket);
        self.inner
            .log_scanner_status
            .unassign_scan_buckets(from_ref(&table_bucket));
    }
}

struct LogFetcher {
    conns: Arc<RpcClient>,
    metadata: Arc<Metadata>,
    table_path: TablePath,
    is_partitioned: bool,
    log_scanner_status: Arc<LogScannerStatus>,
    resolver: Arc<ReadContextResolver>,
    remote_log_downloader: Arc<RemoteLogDownloader>,
    /// Background security token manager for remote filesystem access.
    /// Kept alive to run the background refresh task; stopped on drop.
    #[allow(dead_code)]
    security_token_manager: Arc<SecurityTokenManager>,
    log_fetch_buffer: Arc<LogFetchBuffer>,
    nodes_with_pending_fetch_requests: Arc<Mutex<HashSet<i32>>>,
    /// Per-table scanner metric handles shared with the owning
    /// `LogScannerInner` and `RemoteLogDownloader`.
    metrics: Arc<ScannerMetrics>,
    /// Encoded filter sent on every fetch request, paired with the schema id it
    /// was compiled against so the server can resolve its field ids.
    filter: Option<(PbPredicate, i32)>,
    max_poll_records: usize,
    fetch_max_bytes: i32,
    fetch_min_bytes: i32,
    fetch_wait_max_time_ms: i32,
    fetch_max_bytes_for_bucket: i32,
}

struct FetchResponseContext {
    metadata: Arc<Metadata>,
    log_fetch_buffer: Arc<LogFetchBuffer>,
    log_scanner_status: Arc<LogScannerStatus>,
    resolver: Arc<ReadContextResolver>,
    remote_log_downloader: Arc<RemoteLogDownloader>,
    /// Per-table scanner metric handles for `scanner.fetch_*` recording.
    metrics: Arc<ScannerMetrics>,
    /// `Instant` captured immediately before the FetchLog RPC; used to compute
    /// `scanner.fetch_latency_ms` on a successful response.
    request_start_time: Instant,
}

impl LogFetcher {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        table_info: TableInfo,
        conns: Arc<RpcClient>,
        metadata: Arc<Metadata>,
        log_scanner_status: Arc<LogScannerStatus>,
        config: &Config,
        projected_fields: Option<Vec<usize>>,
        fixed_schema: bool,
        filter: Option<PbPredicate>,
        metrics: Arc<ScannerMetrics>,
        schema_getter: Arc<ClientSchemaGetter>,
    ) -> Result<Self> {
        let full_row_type = table_info.get_row_type();
        let full_arrow_schema = to_arrow_schema(full_row_type)?;
        let projected_row_type = match &projected_fields {
            None => Arc::new(full_row_type.clone()),
            Some(fields) => Arc::new(RowType::new(
                fields
                    .iter()
                    .map(|&i| full_row_type.fields()[i].clone())
                    .collect(),
            )),
        };
        let read_context = Arc::new(
            Self::create_read_context(
                full_arrow_schema.clone(),
                projected_row_type.clone(),
                projected_fields.clone(),
                false,
            )?
            .with_fluss_row_type(projected_row_type.clone()),
        );
        let remote_read_context = Arc::new(
            Self::create_read_context(
                full_arrow_schema,
                projected_row_type.clone(),
                projected_fields.clone(),
                true,
            )?
            .with_fluss_row_type(projected_row_type),
        );

        let initial_schema_id = table_info.get_schema_id() as i16;
        let mut resolver = ReadContextResolver::new(
            initial_schema_id,
            read_context,
            remote_read_context,
            projected_fields,
        )
        .with_schema_getter(Arc::clone(&schema_getter));
        if fixed_schema {
            resolver = resolver.with_fixed_schema(table_info.get_schema());
        }
        let resolver = Arc::new(resolver);

        let log_fetch_buffer = Arc::new(LogFetchBuffer::new(Arc::clone(&resolver)));

        // Create security token manager for background token refresh
        let security_token_manager =
            Arc::new(SecurityTokenManager::new(conns.clone(), metadata.clone()));

        // Subscribe to credentials updates and pass to remote log downloader
        let credentials_rx = security_token_manager.subscribe();

        // The token manager is started when fluss-rs's own reader is first used (patched:
        // an application's reader of `config.remote_log_fetcher` may serve every segment).
        let remote_log_downloader = Arc::new(RemoteLogDownloader::new(
            config.scanner_remote_log_prefetch_num,
            config.remote_file_download_thread_num,
            config.scanner_remote_log_read_concurrency,
            credentials_rx,
            Arc::clone(&metrics),
            config.remote_log_fetcher.clone(),
            Arc::clone(&security_token_manager),
        )?);

        Ok(LogFetcher {
            conns: conns.clone(),
            metadata: metadata.clone(),
            table_path: table_info.table_path.clone(),
            is_partitioned: table_info.is_partitioned(),
            log_scanner_status,
            resolver,
            remote_log_downloader,
            security_token_manager,
            log_fetch_buffer,
            nodes_with_pending_fetch_requests: Arc::new(Mutex::new(HashSet::new())),
            metrics,
            filter: filter.map(|predicate| (predicate, table_info.get_schema_id())),
            max_poll_records: config.scanner_log_max_poll_records,
            fetch_max_bytes: config.scanner_log_fetch_max_bytes,
            fetch_min_bytes: config.scanner_log_fetch_min_bytes,
            fetch_wait_max_time_ms: config.scanner_log_fetch_wait_max_time_ms,
            fetch_max_bytes_for_bucket: config.scanner_log_fetch_max_bytes_for_bucket,
        })
    }

    fn create_read_context(
        full_arrow_schema: SchemaRef,
        row_type: Arc<RowType>,
        projected_fields: Option<Vec<usize>>,
        is_from_remote: bool,
    ) -> Result<ReadContext> {
        match projected_fields {
            None => Ok(ReadContext::new(
                full_arrow_schema,
                row_type,
                is_from_remote,
            )),
            Some(fields) => ReadContext::with_projection_pushdown(
                full_arrow_schema,
                row_type,
                fields,
                is_from_remote,
            ),
        }
    }

    fn describe_fetch_error(
        error: FlussError,
        table_bucket: &TableBucket,
        fetch_offset: i64,
        error_message: &str,
    ) -> FetchErrorContext {
        match error {
            FlussError::NotLeaderOrFollower
            | FlussError::LogStorageException
            | FlussError::KvStorageException
            | FlussError::StorageException
            | FlussError::FencedLeaderEpochException
            | FlussError::LeaderNotAvailableException => FetchErrorContext {
                action: FetchErrorAction::Ignore,
                log_level: FetchErrorLogLevel::Debug,
                log_message: format!(
                    "Error in fetch for bucket {table_bucket}: {error:?}: {error_message}"
                ),
            },
            FlussError::UnknownTableOrBucketException => FetchErrorContext {
                action: FetchErrorAction::Ignore,
                log_level: FetchErrorLogLevel::Warn,
                log_message: format!(
                    "Received unknown table or bucket error in fetch for bucket {table_bucket}"
                ),
            },
            FlussError::LogOffsetOutOfRangeException => FetchErrorContext {
                action: FetchErrorAction::LogOffsetOutOfRange,
                log_level: FetchErrorLogLevel::Debug,
                log_message: format!(
                    "The fetching offset {fetch_offset} is out of range for bucket {table_bucket}: {error_message}"
                ),
            },
            FlussError::AuthorizationException => FetchErrorContext {
                action: FetchErrorAction::Authorization,
                log_level: FetchErrorLogLevel::Debug,
                log_message: format!(
                    "Authorization error while fetching offset {fetch_offset} for bucket {table_bucket}: {error_message}"
                ),
            },
            FlussError::UnknownServerError => FetchErrorContext {
                action: FetchErrorAction::Ignore,
                log_level: FetchErrorLogLevel::Warn,
                log_message: format!(
                    "Unknown server error while fetching offset {fetch_offset} for bucket {table_bucket}: {error_message}"
                ),
            },
            FlussError::CorruptMessage => FetchErrorContext {
                action: FetchErrorAction::CorruptMessage,
                log_level: FetchErrorLogLevel::Debug,
                log_message: format!(
                    "Encountered corrupt message when fetching offset {fetch_offset} for bucket {table_bucket}: {error_message}"
                ),
            },
            _ => FetchErrorContext {
                action: FetchErrorAction::Unexpected,
                log_level: FetchErrorLogLevel::Debug,
                log_message: format!(
                    "Unexpected error code {error:?} while fetching at offset {fetch_offset} from bucket {table_bucket}: {error_message}"
                ),
            },
        }
    }

    fn should_invalidate_table_meta(error: FlussError) -> bool {
        matches!(
            error,
            FlussError::NotLeaderOrFollower
                | FlussError::LeaderNotAvailableException
                | FlussError::FencedLeaderEpochException
                | FlussError::UnknownTableOrBucketException
                | FlussError::InvalidCoordinatorException
        )
    }

    async fn check_and_update_metadata(&self, table_buckets: &[TableBucket]) -> Result<()> {
        let mut partition_ids = Vec::new();
        let mut need_update = false;

        for tb in table_buckets {
            if self.get_table_bucket_leader(tb).is_some() {
                continue;
            }

            if self.is_partitioned {
                partition_ids.push(tb.partition_id().unwrap());
            } else {
                need_update = true;
                break;
            }
        }

        let update_result = if self.is_partitioned && !partition_ids.is_empty() {
            self.metadata
                .update_tables_metadata(
                    &HashSet::from([&self.table_path]),
                    &HashSet::new(),
                    partition_ids,
                )
                .await
        } else if need_update {
            self.metadata.update_table_metadata(&self.table_path).await
        } else {
            Ok(())
        };

        update_result.or_else(|error| {
            if matches!(error.api_error(), Some(FlussError::PartitionNotExists)) {
                warn!(
                    "Received PartitionNotExists while updating scanner metadata; ignoring it: {error}"
                );
                Ok(())
            } else if let Error::RpcError { source, .. } = &error
                && matches!(source, RpcError::ConnectionError(_) | RpcError::Poisoned(_))
            {
                warn!(
                    "Retrying after encountering error while updating table metadata: {error}"
                );
                Ok(())
            } else {
                Err(error)
            }
        })?;
        Ok(())
    }

    /// Send fetch requests asynchronously without waiting for responses
    async fn send_fetches(&self) -> Result<()> {
        self.check_and_update_metadata(self.fetchable_buckets().as_slice())
            .await?;
        let fetch_request = self.prepare_fetch_log_requests().await;

        for (leader, fetch_request) in fetch_request {
            debug!("Adding pending request for node id {leader}");
            // Check if we already have a pending request for this node
            {
                self.nodes_with_pending_fetch_requests.lock().insert(leader);
            }

            let cluster = self.metadata.get_cluster().clone();

            let conns = Arc::clone(&self.conns);
            let log_fetch_buffer = self.log_fetch_buffer.clone();
            let log_scanner_status = self.log_scanner_status.clone();
            let resolver = Arc::clone(&self.resolver);
            let remote_log_downloader = Arc::clone(&self.remote_log_downloader);
            let nodes_with_pending = self.nodes_with_pending_fetch_requests.clone();
            let metadata = self.metadata.clone();
            let metrics = Arc::clone(&self.metrics);
            // Spawn async task to handle the fetch request
            // Note: These tasks are not explicitly tracked or cancelled when LogFetcher is dropped.
            // This is acceptable because:
            // 1. Tasks will naturally complete (network requests will return or timeout)
            // 2. Tasks use Arc references, so resources are properly shared
            // 3. When the program exits, tokio runtime will clean up all tasks
            // 4. Tasks are short-lived (network I/O operations)
            tokio::spawn(async move {
                // make sure it will always remove leader from pending nodes
                let _guard = scopeguard::guard((), |_| {
                    nodes_with_pending.lock().remove(&leader);
                });

                let server_node = match cluster.get_tablet_server(leader) {
                    Some(node) => node,
                    None => {
                        warn!("No server node found for leader {leader}, retrying");
                        Self::handle_fetch_failure(metadata, &leader, &fetch_request).await;
                        return;
                    }
                };

                let con = match conns.get_connection(server_node).await {
                    Ok(con) => con,
                    Err(e) => {
                        warn!("Retrying after error getting connection to destination node: {e:?}");
                        Self::handle_fetch_failure(metadata, &leader, &fetch_request).await;
                        return;
                    }
                };

                // Java increment the fetch counter and capture `requestStartTime` immediately
                // before the RPC. Failed connection acquisition above is not counted.
                let request_start_time = Instant::now();
                metrics.record_fetch_request();

                let fetch_response = match con
                    .request(message::FetchLogRequest::new(fetch_request.clone()))
                    .await
                {
                    Ok(resp) => resp,
                    Err(e) => {
                        warn!(
                            "Retrying after error fetching log from destination node {server_node:?}: {e:?}"
                        );
                        Self::handle_fetch_failure(metadata, &leader, &fetch_request).await;
                        return;
                    }
                };

                // Build the context after the RPC so `request_start_time` measures only RPC wall-clock
                // — not tablet-server lookup or connection acquisition, which is matching Java's bebaviour
                // Building it here also skips the allocation on the early-return error paths above.
                let response_context = FetchResponseContext {
                    metadata: metadata.clone(),
                    log_fetch_buffer,
                    log_scanner_status,
                    resolver,
                    remote_log_downloader,
                    metrics,
                    request_start_time,
                };
                Self::handle_fetch_response(fetch_response, response_context).await;
            });
        }

        Ok(())
    }

    async fn handle_fetch_failure(
        metadata: Arc<Metadata>,
        server_id: &i32,
        request: &FetchLogRequest,
    ) {
        let table_ids = request.tables_req.iter().map(|r| r.table_id).collect();
        metadata.invalidate_server(server_id, table_ids);
    }

    /// Handle fetch response and add completed fetches to buffer
    async fn handle_fetch_response(
        fetch_response: FetchLogResponse,
        context: FetchResponseContext,
    ) {
        let FetchResponseContext {
            metadata,
            log_fetch_buffer,
            log_scanner_status,
            resolver,
            remote_log_downloader,
            metrics,
            request_start_time,
        } = context;

        // `encoded_len()` mirrors Java's `fetchLogResponse.totalSize()`:
        // both report the serialized API message body size, excluding protocol
        // headers and framing. Recorded unconditionally (including zero-record
        // responses) to match Java's histogram semantics.
        metrics.record_fetch_latency_ms(request_start_time.elapsed().as_secs_f64() * 1000.0);
        metrics.record_bytes_per_request(fetch_response.encoded_len() as f64);

        for pb_fetch_log_resp in fetch_response.tables_resp {
            let table_id = pb_fetch_log_resp.table_id;
            let fetch_log_for_buckets = pb_fetch_log_resp.buckets_resp;

            for fetch_log_for_bucket in fetch_log_for_buckets {
                let bucket: i32 = fetch_log_for_bucket.bucket_id;
                let table_bucket = TableBucket::new_with_partition(
                    table_id,
                    fetch_log_for_bucket.partition_id,
                    bucket,
                );

                // todo: check fetch result code for per-bucket
                let Some(fetch_offset) = log_scanner_status.get_bucket_offset(&table_bucket) else {
                    debug!(
                        "Ignoring fetch log response for bucket {table_bucket} because the bucket has been unsubscribed."
                    );
                    continue;
                };

                if let Some(error_code) = fetch_log_for_bucket.error_code
                    && error_code != FlussError::None.code()
                {
                    let api_error: ApiError = ErrorResponse {
                        error_code,
                        error_message: fetch_log_for_bucket.error_message.clone(),
                    }
                    .into();

                    let error = FlussError::for_code(error_code);
                    if Self::should_invalidate_table_meta(error) {
                        let table_id = table_bucket.table_id();
                        let cluster = metadata.get_cluster();
                        if let Some(table_path) = cluster.get_table_path_by_id(table_id) {
                            let physical_table_path = match table_bucket.partition_id() {
                                Some(partition_id) => {
                                    match cluster.get_partition_name(partition_id) {
                                        Some(partition_name) => {
                                            Some(PhysicalTablePath::of_partitioned(
                                                Arc::new(table_path.clone()),
                                                Some(partition_name.clone()),
                                            ))
                                        }
                                        None => {
                                            warn!(
                                                "Partition id {partition_id} is missing from partition_name_by_id while invalidating metadata for table {table_path}"
                                            );
                                            None
                                        }
                                    }
                                }
                                None => Some(PhysicalTablePath::of(Arc::new(table_path.clone()))),
                            };
                            if let Some(physical_table_path) = physical_table_path {
                                metadata.invalidate_physical_table_meta(&HashSet::from([
                                    physical_table_path,
                                ]));
                            }
                        } else {
                            warn!(
                                "Table id {table_id} is missing from table_path_by_id while invalidating table metadata"
                            );
                        }
                    }
                    let error_context = Self::describe_fetch_error(
                        error,
                        &table_bucket,
                        fetch_offset,
                        api_error.message.as_str(),
                    );
                    log_scanner_status.move_bucket_to_end(table_bucket.clone());
                    match error_context.log_level {
                        FetchErrorLogLevel::Debug => {
                            debug!("{}", error_context.log_message);
                        }
                        FetchErrorLogLevel::Warn => {
                            warn!("{}", error_context.log_message);
                        }
                    }
                    log_fetch_buffer.add_api_error(
                        table_bucket.clone(),
                        api_error,
                        error_context,
                        fetch_offset,
                    );
                    continue;
                }

                // Check if this is a remote log fetch
                if let Some(ref remote_log_fetch_info) = fetch_log_for_bucket.remote_log_fetch_info
                {
                    // Remote fs props are already set by the background SecurityTokenManager
                    let remote_fetch_info =
                        RemoteLogFetchInfo::from_proto(remote_log_fetch_info, table_bucket.clone());

                    let high_watermark = fetch_log_for_bucket.high_watermark.unwrap_or(-1);
                    Self::pending_remote_fetches(
                        remote_log_downloader.clone(),
                        log_fetch_buffer.clone(),
                        Arc::clone(&resolver),
                        &table_bucket,
                        remote_fetch_info,
                        fetch_offset,
                        high_watermark,
                    );
                } else if fetch_log_for_bucket.records.is_some()
                    || fetch_log_for_bucket.filtered_end_offset.is_some()
                {
                    // Handle regular in-memory records - create completed fetch directly.
                    // A filtered response may arrive empty, or carry records with a
                    // pruned tail; either way the end offset is how far the server
                    // scanned, so the client skips that range instead of re-fetching it.
                    let high_watermark = fetch_log_for_bucket.high_watermark.unwrap_or(-1);
                    let filtered_end_offset = Self::validate_filtered_end_offset(
                        fetch_log_for_bucket.filtered_end_offset,
                        fetch_offset,
                        &table_bucket,
                    );
                    let records = fetch_log_for_bucket.records.unwrap_or(vec![]);
                    let size_in_bytes = records.len();

                    let log_record_batch = LogRecordsBatches::new(records);
                    let completed_fetch = DefaultCompletedFetch::new(
                        table_bucket.clone(),
                        log_record_batch,
                        size_in_bytes,
                        Arc::clone(&resolver),
                        false, // is_remote
                        fetch_offset,
                        high_watermark,
                    )
                    .with_filtered_end_offset(filtered_end_offset);
                    log_fetch_buffer.add(Box::new(completed_fetch));
                }
            }
        }
    }

    /// Drops a filtered end offset that would move the bucket backwards, since
    /// the server is only ever meant to report a range it has already scanned.
    fn validate_filtered_end_offset(
        filtered_end_offset: Option<i64>,
        fetch_offset: i64,
        table_bucket: &TableBucket,
    ) -> i64 {
        match filtered_end_offset {
            Some(end) if end >= fetch_offset => end,
            Some(end) => {
                warn!(
                    "Ignoring filtered end offset {end} for bucket {table_bucket} because it precedes the fetch offset {fetch_offset}"
                );
                NO_FILTERED_END_OFFSET
            }
            None => NO_FILTERED_END_OFFSET,
        }
    }

    fn pending_remote_fetches(
        remote_log_downloader: Arc<RemoteLogDownloader>,
        log_fetch_buffer: Arc<LogFetchBuffer>,
        resolver: Arc<ReadContextResolver>,
        table_bucket: &TableBucket,
        remote_fetch_info: RemoteLogFetchInfo,
        fetch_offset: i64,
        high_watermark: i64,
    ) {
        // Download and process remote log segments
        let mut pos_in_log_segment = remote_fetch_info.first_start_pos;
        let mut current_fetch_offset = fetch_offset;
        for (i, segment) in remote_fetch_info.remote_log_segments.iter().enumerate() {
            if i > 0 {
                pos_in_log_segment = 0;
                current_fetch_offset = segment.start_offset;
            }

            // todo:
            // 1: control the max threads to download remote segment
            // 2: introduce priority queue to priority highest for earliest segment
            let download_future = remote_log_downloader
                .request_remote_log(&remote_fetch_info.remote_log_tablet_dir, segment);

            // Register callback to be called when download completes
            // (similar to Java's downloadFuture.onComplete)
            // This must be done before creating RemotePendingFetch to avoid move issues
            let table_bucket = table_bucket.clone();
            let log_fetch_buffer_clone = log_fetch_buffer.clone();
            download_future.on_complete(move || {
                log_fetch_buffer_clone.try_complete(&table_bucket);
            });

            let pending_fetch = RemotePendingFetch::new(
                segment.clone(),
                download_future,
                pos_in_log_segment,
                current_fetch_offset,
                high_watermark,
                Arc::clone(&resolver),
            );
            // Add to pending fetches in buffer (similar to Java's logFetchBuffer.pend)
            log_fetch_buffer.pend(Box::new(pending_fetch));
        }
    }

    /// Collect completed fetches from buffer
    /// Reference: LogFetchCollector.collectFetch in Java
    async fn collect_fetches(&self) -> Result<HashMap<TableBucket, Vec<ScanRecord>>> {
        let mut result: HashMap<TableBucket, Vec<ScanRecord>> = HashMap::new();
        let mut records_remaining = self.max_poll_records;

        let collect_result: Result<()> = {
            while records_remaining > 0 {
                // Get the next in line fetch, or get a new one from buffer
                let next_in_line = self.log_fetch_buffer.next_in_line_fetch();

                if next_in_line.is_none() || next_in_line.as_ref().unwrap().is_consumed() {
                    // Get a new fetch from buffer
                    if let Some(completed_fetch) = self.log_fetch_buffer.poll() {
                        // Initialize the fetch if not already initialized
                        if !completed_fetch.is_initialized() {
                            let size_in_bytes = completed_fetch.size_in_bytes();
                            match self.initialize_fetch(completed_fetch) {
                                Ok(initialized) => {
                                    self.log_fetch_buffer.set_next_in_line_fetch(initialized);
                                    continue;
                                }
                                Err(e) => {
                                    // Remove a completedFetch upon a parse with exception if
                                    // (1) it contains no records, and
                                    // (2) there are no fetched records with actual content preceding this
                                    // exception.
                                    if result.is_empty() && size_in_bytes == 0 {
                                        // todo: do we need to consider it like java ?
                                        // self.log_fetch_buffer.poll();
                                    }
                                    return Err(e);
                                }
                            }
                        } else {
                            self.log_fetch_buffer
                                .set_next_in_line_fetch(Some(completed_fetch));
                        }
                        // Note: poll() already removed the fetch from buffer, so no need to call poll()
                    } else {
                        // No more fetches available
                        break;
                    }
                } else {
                    // Fetch records from next_in_line
                    if let Some(mut next_fetch) = next_in_line {
                        let fetch_result = match self
                            .fetch_records_from_fetch(&mut next_fetch, records_remaining)
                        {
                            Ok(fetch_result) => fetch_result,
                            Err(e) => {
                                if !next_fetch.is_consumed() {
                                    self.log_fetch_buffer
                                        .set_next_in_line_fetch(Some(next_fetch));
                                }
                                return Err(e);
                            }
                        };

                        match fetch_result {
                            FetchResult::Data(records) => {
                                if !records.is_empty() {
                                    let table_bucket = next_fetch.table_bucket().clone();
                                    // Merge with existing records for this bucket
                                    let existing = result.entry(table_bucket).or_default();
                                    let records_count = records.len();
                                    existing.extend(records);

                                    records_remaining =
                                        records_remaining.saturating_sub(records_count);
                                }
                            }
                            FetchResult::SchemaRequired(schema_id) => {
                                // Put the fetch back before awaiting. If this poll future is
                                // cancelled, the exact raw batch remains available for retry.
                                self.log_fetch_buffer
                                    .set_next_in_line_fetch(Some(next_fetch));

                                // Never await after collecting user-visible records: dropping
                                // the future at that point would otherwise lose the local result.
                                if !result.is_empty() {
                                    return Ok(result);
                                }

                                self.resolver.fetch_and_register(schema_id).await?;
                                continue;
                            }
                        }

                        // If the fetch is not fully consumed, put it back for the next round
                        if !next_fetch.is_consumed() {
                            self.log_fetch_buffer
                                .set_next_in_line_fetch(Some(next_fetch));
                        }
                        // If consumed, next_fetch will be dropped here (which is correct)
                    }
                }
            }
            Ok(())
        };

        match collect_result {
            Ok(()) => Ok(result),
            Err(e) => {
                if result.is_empty() {
                    Err(e)
                } else {
                    Ok(result)
                }
            }
        }
    }

    /// Initialize a completed fetch, checking offset match and updating high watermark
    fn initialize_fetch(
        &self,
        mut completed_fetch: Box<dyn CompletedFetch>,
    ) -> Result<Option<Box<dyn CompletedFetch>>> {
        if let Some(error) = completed_fetch.take_error() {
            return Err(error);
        }

        let table_bucket = completed_fetch.table_bucket().clone();
        let fetch_offset = completed_fetch.next_fetch_offset();

        if let Some(api_error) = completed_fetch.api_error() {
            let error = FlussError::for_code(api_error.code);
            let error_message = api_error.message.as_str();
            self.log_scanner_status
                .move_bucket_to_end(table_bucket.clone());
            let action = completed_fetch
                .fetch_error_context()
                .map(|context| context.action)
                .unwrap_or(FetchErrorAction::Unexpected);
            match action {
                FetchErrorAction::Ignore => {
                    return Ok(None);
                }
                FetchErrorAction::LogOffsetOutOfRange => {
                    return Err(Error::FlussAPIError {
                        api_error: ApiError {
                            code: api_error.code,
                            message: format!(
                                "The fetching offset {fetch_offset} is out of range for bucket {table_bucket}: {error_message}"
                            ),
                        },
                    });
                }
                FetchErrorAction::Authorization => {
                    return Err(Error::FlussAPIError {
                        api_error: ApiError {
                            code: api_error.code,
                            message: api_error.message.to_string(),
                        },
                    });
                }
                FetchErrorAction::CorruptMessage => {
                    return Err(Error::UnexpectedError {
                        message: format!(
                            "Encountered corrupt message when fetching offset {fetch_offset} for bucket {table_bucket}: {error_message}"
                        ),
                        source: None,
                    });
                }
                FetchErrorAction::Unexpected => {
                    return Err(Error::UnexpectedError {
                        message: format!(
                            "Unexpected error code {error:?} while fetching at offset {fetch_offset} from bucket {table_bucket}: {error_message}"
                        ),
                        source: None,
                    });
                }
            }
        }

        // Check if bucket is still subscribed
        let Some(current_offset) = self.log_scanner_status.get_bucket_offset(&table_bucket) else {
            warn!(
                "Discarding stale fetch response for bucket {table_bucket:?} since the bucket has been unsubscribed"
            );
            return Ok(None);
        };

        // Check if offset matches
        if fetch_offset != current_offset {
            warn!(
                "Discarding stale fetch response for bucket {table_bucket:?} since its offset {fetch_offset} does not match the expected offset {current_offset}"
            );
            return Ok(None);
        }

        // Update high watermark
        let high_watermark = completed_fetch.high_watermark();
        if high_watermark >= 0 {
            self.log_scanner_status
                .update_high_watermark(&table_bucket, high_watermark);
        }

        completed_fetch.set_initialized();
        Ok(Some(completed_fetch))
    }

    /// Fetch records from a completed fetch, checking offset match
    fn fetch_records_from_fetch(
        &self,
        next_in_line_fetch: &mut Box<dyn CompletedFetch>,
        max_records: usize,
    ) -> Result<FetchResult<Vec<ScanRecord>>> {
        let table_bucket = next_in_line_fetch.table_bucket().clone();
        let current_offset = self.log_scanner_status.get_bucket_offset(&table_bucket);

        if current_offset.is_none() {
            warn!(
                "Ignoring fetched records for {table_bucket:?} since the bucket has been unsubscribed"
            );
            next_in_line_fetch.drain();
            return Ok(FetchResult::Data(Vec::new()));
        }

        let current_offset = current_offset.unwrap();
        let fetch_offset = next_in_line_fetch.next_fetch_offset();

        // Check if this fetch is next in line
        if fetch_offset == current_offset {
            let fetch_result = next_in_line_fetch.fetch_records(max_records)?;
            if matches!(fetch_result, FetchResult::Data(_)) {
                let next_fetch_offset = next_in_line_fetch.next_fetch_offset();

                if next_fetch_offset > current_offset {
                    self.log_scanner_status
                        .update_offset(&table_bucket, next_fetch_offset);
                }

                if next_in_line_fetch.is_consumed() && next_in_line_fetch.records_read() > 0 {
                    self.log_scanner_status
                        .move_bucket_to_end(table_bucket.clone());
                }
            }

            Ok(fetch_result)
        } else {
            // These records aren't next in line, ignore them
            warn!(
                "Ignoring fetched records for {table_bucket:?} at offset {fetch_offset} since the current offset is {current_offset}"
            );
            next_in_line_fetch.drain();
            Ok(FetchResult::Data(Vec::new()))
        }
    }

    /// Collect completed fetches as ScanBatches (with bucket and offset metadata)
    async fn collect_batches(&self) -> Result<Vec<ScanBatch>> {
        // Limit memory usage with both batch count and byte size constraints.
        // Max 100 batches per poll, but also check total bytes (soft cap ~64MB).
        const MAX_BATCHES: usize = 100;
        const MAX_BYTES: usize = 64 * 1024 * 1024; // 64MB soft cap
        let mut result: Vec<ScanBatch> = Vec::new();
        let mut batches_remaining = MAX_BATCHES;
        let mut bytes_consumed: usize = 0;

        let collect_result: Result<()> = {
            while batches_remaining > 0 && bytes_consumed < MAX_BYTES {
                let next_in_line = self.log_fetch_buffer.next_in_line_fetch();

                match next_in_line {
                    Some(mut next_fetch) if !next_fetch.is_consumed() => {
                        let fetch_result =
                            self.fetch_batches_from_fetch(&mut next_fetch, batches_remaining)?;
                        match fetch_result {
                            FetchResult::Data(scan_batches) => {
                                let batch_count = scan_batches.len();

                                if !scan_batches.is_empty() {
                                    // Track bytes consumed (soft cap - may exceed by one fetch)
                                    let batch_bytes: usize = scan_batches
                                        .iter()
                                        .map(|sb| sb.batch().get_array_memory_size())
                                        .sum();
                                    bytes_consumed += batch_bytes;

                                    result.extend(scan_batches);
                                    batches_remaining =
                                        batches_remaining.saturating_sub(batch_count);
                                }
                            }
                            FetchResult::SchemaRequired(schema_id) => {
                                // Preserve the current file-backed batch across await/cancel.
                                self.log_fetch_buffer
                                    .set_next_in_line_fetch(Some(next_fetch));

                                // Return already decoded batches before doing another async RPC,
                                // keeping cancellation from discarding user-visible progress.
                                if !result.is_empty() {
                                    return Ok(result);
                                }

                                self.resolver.fetch_and_register(schema_id).await?;
                                continue;
                            }
                        }

                        if !next_fetch.is_consumed() {
                            self.log_fetch_buffer
                                .set_next_in_line_fetch(Some(next_fetch));
                        }
                    }
                    _ => {
                        if let Some(completed_fetch) = self.log_fetch_buffer.poll() {
                            if !completed_fetch.is_initialized() {
                                match self.initialize_fetch(completed_fetch) {
                                    Ok(initialized) => {
                                        self.log_fetch_buffer.set_next_in_line_fetch(initialized);
                                        continue;
                                    }
                                    // Raised, as Java's LogFetchCollector does and the record
                                    // scanner here does (patched: an error with no records was
                                    // dropped silently, so a failed remote segment read was
                                    // asked for again and again, never seen).
                                    Err(e) => return Err(e),
                                }
                            } else {
                                self.log_fetch_buffer
                                    .set_next_in_line_fetch(Some(completed_fetch));
                            }
                        } else {
                            break;
                        }
                    }
                }
            }
            Ok(())
        };

        match collect_result {
            Ok(()) => Ok(result),
            Err(e) => {
                if result.is_empty() {
                    Err(e)
                } else {
                    Ok(result)
                }
            }
        }
    }

    fn fetch_batches_from_fetch(
        &self,
        next_in_line_fetch: &mut Box<dyn CompletedFetch>,
        max_batches: usize,
    ) -> Result<FetchResult<Vec<ScanBatch>>> {
        let table_bucket = next_in_line_fetch.table_bucket().clone();
        let current_offset = self.log_scanner_status.get_bucket_offset(&table_bucket);

        if current_offset.is_none() {
            warn!(
                "Ignoring fetched batches for {table_bucket:?} since the bucket has been unsubscribed"
            );
            next_in_line_fetch.drain();
            return Ok(FetchResult::Data(Vec::new()));
        }

        let current_offset = current_offset.unwrap();
        let fetch_offset = next_in_line_fetch.next_fetch_offset();

        if fetch_offset == current_offset {
            match next_in_line_fetch.fetch_batches(max_batches)? {
                FetchResult::Data(batches_with_offsets) => {
                    let next_fetch_offset = next_in_line_fetch.next_fetch_offset();

                    if next_fetch_offset > current_offset {
                        self.log_scanner_status
                            .update_offset(&table_bucket, next_fetch_offset);
                    }

                    // Convert to ScanBatch with bucket info
                    Ok(FetchResult::Data(
                        batches_with_offsets
                            .into_iter()
                            .map(|(batch, base_offset, commit_timestamp)| {
                                ScanBatch::new(table_bucket.clone(), batch, base_offset)
                                    .with_commit_timestamp(commit_timestamp)
                            })
                            .collect(),
                    ))
                }
                FetchResult::SchemaRequired(schema_id) => {
                    Ok(FetchResult::SchemaRequired(schema_id))
                }
            }
        } else {
            warn!(
                "Ignoring fetched batches for {table_bucket:?} at offset {fetch_offset} since the current offset is {current_offset}"
            );
            next_in_line_fetch.drain();
            Ok(FetchResult::Data(Vec::new()))
        }
    }

    async fn prepare_fetch_log_requests(&self) -> HashMap<i32, FetchLogRequest> {
        let mut fetch_log_req_for_buckets = HashMap::new();
        let mut table_id = None;
        let mut ready_for_fetch_count = 0;
        for bucket in self.fetchable_buckets() {
            if table_id.is_none() {
                table_id = Some(bucket.table_id());
            }

            let offset = match self.log_scanner_status.get_bucket_offset(&bucket) {
                Some(offset) => offset,
                None => {
                    debug!(
                        "Skipping fetch request for bucket {bucket} because the bucket has been unsubscribed."
                    );
                    continue;
                }
            };

            match self.get_table_bucket_leader(&bucket) {
                None => {
                    log::trace!(
                        "Skipping fetch request for bucket {bucket} because leader is not available."
                    )
                }
                Some(leader) => {
                    if self
                        .nodes_with_pending_fetch_requests
                        .lock()
                        .contains(&leader)
                    {
                        log::trace!(
                            "Skipping fetch request for bucket {bucket} because previous request to server {leader} has not been processed."
                        )
                    } else {
                        let fetch_log_req_for_bucket = PbFetchLogReqForBucket {
                            partition_id: bucket.partition_id(),
                            bucket_id: bucket.bucket_id(),
                            fetch_offset: offset,
                            max_fetch_bytes: self.fetch_max_bytes_for_bucket,
                            routing_bucket_count: None,
                        };

                        fetch_log_req_for_buckets
                            .entry(leader)
                            .or_insert_with(Vec::new)
                            .push(fetch_log_req_for_bucket);
                        ready_for_fetch_count += 1;
                    }
                }
            }
        }

        if ready_for_fetch_count == 0 {
            HashMap::new()
        } else {
            let initial_ctx = self
                .resolver
                .resolve(self.resolver.initial_schema_id(), false)
                .expect("initial ReadContext must exist");
            let (projection_enabled, projected_fields) = match initial_ctx.project_fields_in_order()
            {
                None => (false, vec![]),
                Some(fields) => (true, fields.iter().map(|&i| i as i32).collect()),
            };

            fetch_log_req_for_buckets
                .into_iter()
                .map(|(leader_id, feq_for_buckets)| {
                    let req_for_table = PbFetchLogReqForTable {
                        table_id: table_id.unwrap(),
                        projection_pushdown_enabled: projection_enabled,
                        projected_fields: projected_fields.clone(),
                        buckets_req: feq_for_buckets,
                        // The proto requires both filter fields to be set together.
                        filter_predicate: self.filter.as_ref().map(|(p, _)| p.clone()),
                        filter_schema_id: self.filter.as_ref().map(|&(_, id)| id),
                    };

                    let fetch_log_request = FetchLogRequest {
                        follower_server_id: -1,
                        max_bytes: self.fetch_max_bytes,
                        tables_req: vec![req_for_table],
                        max_wait_ms: Some(self.fetch_wait_max_time_ms),
                        min_bytes: Some(self.fetch_min_bytes),
                        read_preference: None,
                    };
                    (leader_id, fetch_log_request)
                })
                .collect()
        }
    }

    fn fetchable_buckets(&self) -> Vec<TableBucket> {
        // Get buckets that are not already in the buffer
        let buffered = self.log_fetch_buffer.buffered_buckets();
        let buffered_set: HashSet<TableBucket> = buffered.into_iter().collect();
        self.log_scanner_status
            .fetchable_buckets(|tb| !buffered_set.contains(tb))
    }

    fn get_table_bucket_leader(&self, tb: &TableBucket) -> Option<i32> {
        let cluster = self.metadata.get_cluster();
        cluster.leader_for(tb).map(|leader| leader.id())
    }
}

pub struct LogScannerStatus {
    bucket_status_map: Arc<RwLock<FairBucketStatusMap<BucketScanStatus>>>,
}

#[allow(dead_code)]
impl LogScannerStatus {
    pub fn new() -> Self {
        Self {
            bucket_status_map: Arc::new(RwLock::new(FairBucketStatusMap::new())),
        }
    }

    pub fn prepare_to_poll(&self) -> bool {
        let map = self.bucket_status_map.read();
        map.size() > 0
    }

    pub fn move_bucket_to_end(&self, table_bucket: TableBucket) {
        let mut map = self.bucket_status_map.write();
        map.move_to_end(table_bucket);
    }

    /// Gets the offset of a bucket if it exists
    pub fn get_bucket_offset(&self, table_bucket: &TableBucket) -> Option<i64> {
        let map = self.bucket_status_map.read();
        map.status_value(table_bucket).map(|status| status.offset())
    }

    pub fn update_high_watermark(&self, table_bucket: &TableBucket, high_watermark: i64) {
        if let Some(status) = self.get_status(table_bucket) {
            status.set_high_watermark(high_watermark);
        }
    }

    pub fn update_offset(&self, table_bucket: &TableBucket, offset: i64) {
        if let Some(status) = self.get_status(table_bucket) {
            status.set_offset(offset);
        }
    }

    pub fn assign_scan_buckets(&self, scan_bucket_offsets: HashMap<TableBucket, i64>) {
        let mut map = self.bucket_status_map.write();
        for (bucket, offset) in scan_bucket_offsets {
            let status = map
                .status_value(&bucket)
                .cloned()
                .unwrap_or_else(|| Arc::new(BucketScanStatus::new(offset)));
            status.set_offset(offset);
            map.update(bucket, status);
        }
    }

    pub fn assign_scan_bucket(&self, table_bucket: TableBucket, offset: i64) {
        let status = Arc::new(BucketScanStatus::new(offset));
        self.bucket_status_map.write().update(table_bucket, status);
    }

    /// Unassigns scan buckets
    pub fn unassign_scan_buckets(&self, buckets: &[TableBucket]) {
        let mut map = self.bucket_status_map.write();
        for bucket in buckets {
            map.remove(bucket);
        }
    }

    /// Gets fetchable buckets based on availability predicate
    pub fn fetchable_buckets<F>(&self, is_available: F) -> Vec<TableBucket>
    where
        F: Fn(&TableBucket) -> bool,
    {
        let map = self.bucket_status_map.read();
        let mut result = Vec::new();
        map.for_each(|bucket, _| {
            if is_available(bucket) {
                result.push(bucket.clone());
            }
        });
        result
    }

    /// Returns all subscribed buckets with their current offsets
    pub fn get_all_subscriptions(&self) -> Vec<(TableBucket, i64)> {
        let map = self.bucket_status_map.read();
        let mut result = Vec::new();
        map.for_each(|bucket, status| {
            result.push((bucket.clone(), status.offset()));
        });
        result
    }

    /// Helper to get bucket status
    fn get_status(&self, table_bucket: &TableBucket) -> Option<Arc<BucketScanStatus>> {
        let map = self.bucket_status_map.read();
        map.status_value(table_bucket).cloned()
    }
}

impl Default for LogScannerStatus {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug)]
#[allow(dead_code)]
pub struct BucketScanStatus {
    offset: RwLock<i64>,
    high_watermark: RwLock<i64>,
}

#[allow(dead_code)]
impl BucketScanStatus {
    pub fn new(offset: i64) -> Self {
        Self {
            offset: RwLock::new(offset),
            high_watermark: RwLock::new(0),
        }
    }

    pub fn offset(&self) -> i64 {
        *self.offset.read()
    }

    pub fn set_offset(&self, offset: i64) {
        *self.offset.write() = offset
    }

    pub fn high_watermark(&self) -> i64 {
        *self.high_watermark.read()
    }

    pub fn set_high_watermark(&self, high_watermark: i64) {
        *self.high_watermark.write() = high_watermark
    }
}

/// Validates that `table_info` can be scanned as a log, rejecting primary-key
/// tables (the default for batch-mode scans).
fn validate_scan_support(table_path: &TablePath, table_info: &TableInfo) -> Result<()> {
    validate_scan_support_inner(table_path, table_info, false)
}

fn validate_limit_scan_fixed_schema(table_info: &TableInfo, fixed_schema: bool) -> Result<()> {
    if !fixed_schema && !table_info.has_primary_key() {
        return Err(Error::IllegalArgument {
            message: "LimitBatchScanner doesn't support with_fixed_schema(false) for log tables"
                .to_string(),
        });
    }
    Ok(())
}

/// Validates that `table_info` can be scanned as a log. ARROW log format is
/// required; INDEXED is not supported by the client decoder.
///
/// When `allow_primary_key` is set, a primary-key table is accepted and its
/// changelog is read as a CDC stream (each record carries a `ChangeType`). It is
/// cleared for the Arrow batch path, which has no slot for per-record change
/// types, so reading a changelog there would silently drop them.
fn validate_scan_support_inner(
    table_path: &TablePath,
    table_info: &TableInfo,
    allow_primary_key: bool,
) -> Result<()> {
    if !allow_primary_key && table_info.schema.primary_key().is_some() {
        return Err(UnsupportedOperation {
            message: format!(
                "Batch-mode log scan does not support primary-key table {table_path}; use create_log_scanner() to read its changelog record by record"
            ),
        });
    }

    let log_format = table_info.table_config.get_log_format()?;
    if LogFormat::ARROW != log_format {
        return Err(UnsupportedOperation {
            message: format!(
                "Log scan is only supported for ARROW log format, but table {table_path} uses {log_format} format"
            ),
        });
    }

    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::WriteRecord;
    use crate::client::admin::FlussAdmin;
    use crate::client::metadata::Metadata;
    use crate::client::table::read_context_resolver::ReadContextResolver;
    use crate::metadata::{DataTypes, PhysicalTablePath, Schema, TableInfo, TablePath};
    use crate::proto::{PbFetchLogRespForBucket, PbFetchLogRespForTable};
    use crate::record::MemoryLogRecordsArrowBuilder;
    use crate::row::{Datum, GenericRow};
    use crate::rpc::FlussError;
    use crate::test_utils::{
        assert_scanner_entries_labeled, build_cluster_arc, build_table_info, test_scanner_metrics,
        uncompressed_arrow_batch_config,
    };

    fn test_admin(metadata: &Arc<Metadata>) -> Arc<FlussAdmin> {
        Arc::new(FlussAdmin::new(
            Arc::new(RpcClient::new()),
            metadata.clone(),
        ))
    }

    fn test_schema_getter(
        table_info: &TableInfo,
        metadata: &Arc<Metadata>,
    ) -> Arc<ClientSchemaGetter> {
        let latest = SchemaInfo::new(table_info.get_schema().clone(), table_info.get_schema_id());
        Arc::new(ClientSchemaGetter::new(
            table_info.table_path.clone(),
            test_admin(metadata),
            latest,
        ))
    }

    fn test_resolver(table_info: &TableInfo) -> Arc<ReadContextResolver> {
        let row_type = table_info.get_row_type();
        let arrow_schema = to_arrow_schema(row_type).unwrap();
        let row_type_arc = Arc::new(row_type.clone());
        let local_ctx = Arc::new(
            ReadContext::new(arrow_schema.clone(), row_type_arc.clone(), false)
                .with_fluss_row_type(row_type_arc.clone()),
        );
        let remote_ctx = Arc::new(
            ReadContext::new(arrow_schema, row_type_arc.clone(), true)
                .with_fluss_row_type(row_type_arc),
        );
        Arc::new(ReadContextResolver::new(
            table_info.get_schema_id() as i16,
            local_ctx,
            remote_ctx,
            None,
        ))
    }

    fn build_records(table_info: &TableInfo, table_path: Arc<TablePath>) -> Result<Vec<u8>> {
        let mut builder = MemoryLogRecordsArrowBuilder::new(
            uncompressed_arrow_batch_config(1, table_info.get_row_type(), usize::MAX),
            false,
        )?;
        let physical_table_path = Arc::new(PhysicalTablePath::of(table_path));
        let row = GenericRow {
            values: vec![Datum::Int32(1)],
        };
        let record =
            WriteRecord::for_append(Arc::new(table_info.clone()), physical_table_path, 1, &row);
        builder.append(&record)?;
        builder.build()
    }

    #[test]
    fn limit_batch_scanner_rejects_dynamic_schema_for_log_table() {
        let table_info =
            build_table_info(TablePath::new("db".to_string(), "tbl".to_string()), 1, 1);

        let error = validate_limit_scan_fixed_schema(&table_info, false)
            .expect_err("dynamic schema must be rejected for a log limit scan");

        assert!(matches!(
            error,
            Error::IllegalArgument { message }
                if message.contains("with_fixed_schema(false)")
        ));
    }

    #[tokio::test]
    async fn collect_fetches_updates_offset() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        let fetcher = LogFetcher::new(
            table_info.clone(),
            Arc::new(RpcClient::new()),
            metadata.clone(),
            status.clone(),
            &Config::default(),
            None,
            false,
            None,
            test_scanner_metrics(&table_path),
            test_schema_getter(&table_info, &metadata),
        )?;

        let bucket = TableBucket::new(1, 0);
        status.assign_scan_bucket(bucket.clone(), 0);

        let data = build_records(&table_info, Arc::new(table_path))?;
        let log_records = LogRecordsBatches::new(data.clone());
        let resolver = test_resolver(&table_info);
        let completed = DefaultCompletedFetch::new(
            bucket.clone(),
            log_records,
            data.len(),
            resolver,
            false,
            0,
            0,
        );
        fetcher.log_fetch_buffer.add(Box::new(completed));

        let fetched = fetcher.collect_fetches().await?;
        assert_eq!(fetched.get(&bucket).unwrap().len(), 1);
        assert_eq!(status.get_bucket_offset(&bucket), Some(1));
        Ok(())
    }

    #[tokio::test]
    async fn fetch_records_from_fetch_drains_unassigned_bucket() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        let fetcher = LogFetcher::new(
            table_info.clone(),
            Arc::new(RpcClient::new()),
            metadata.clone(),
            status,
            &Config::default(),
            None,
            false,
            None,
            test_scanner_metrics(&table_path),
            test_schema_getter(&table_info, &metadata),
        )?;

        let bucket = TableBucket::new(1, 0);
        let data = build_records(&table_info, Arc::new(table_path))?;
        let log_records = LogRecordsBatches::new(data.clone());
        let resolver = test_resolver(&table_info);
        let mut completed: Box<dyn CompletedFetch> = Box::new(DefaultCompletedFetch::new(
            bucket,
            log_records,
            data.len(),
            resolver,
            false,
            0,
            0,
        ));

        let records = fetcher.fetch_records_from_fetch(&mut completed, 10)?;
        assert!(matches!(records, FetchResult::Data(records) if records.is_empty()));
        assert!(completed.is_consumed());
        Ok(())
    }

    #[tokio::test]
    async fn prepare_fetch_log_requests_skips_pending() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        status.assign_scan_bucket(TableBucket::new(1, 0), 0);
        let fetcher = LogFetcher::new(
            table_info.clone(),
            Arc::new(RpcClient::new()),
            metadata.clone(),
            status,
            &Config::default(),
            None,
            false,
            None,
            test_scanner_metrics(&table_path),
            test_schema_getter(&table_info, &metadata),
        )?;

        fetcher.nodes_with_pending_fetch_requests.lock().insert(1);

        let requests = fetcher.prepare_fetch_log_requests().await;
        assert!(requests.is_empty());
        Ok(())
    }

    /// Builds the fetcher used by the filter tests, encoding `predicate` the way
    /// `TableScan::filter` does.
    fn filtering_fetcher(
        table_info: &TableInfo,
        metadata: &Arc<Metadata>,
        status: Arc<LogScannerStatus>,
        predicate: Option<Predicate>,
    ) -> Result<LogFetcher> {
        let filter = predicate
            .map(|p| to_pb_predicate(&p, table_info.get_row_type()))
            .transpose()?;
        LogFetcher::new(
            table_info.clone(),
            Arc::new(RpcClient::new()),
            metadata.clone(),
            status,
            &Config::default(),
            None,
            false,
            filter,
            test_scanner_metrics(&table_info.table_path),
            test_schema_getter(table_info, metadata),
        )
    }

    #[tokio::test]
    async fn prepare_fetch_log_requests_carries_the_filter() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        status.assign_scan_bucket(TableBucket::new(1, 0), 0);
        let fetcher = filtering_fetcher(
            &table_info,
            &metadata,
            status,
            Some(crate::predicate::col("id").gt(5i32)),
        )?;

        let requests = fetcher.prepare_fetch_log_requests().await;
        let table_req = &requests.get(&1).expect("request for leader").tables_req[0];
        let predicate = table_req
            .filter_predicate
            .as_ref()
            .expect("filter predicate");
        assert_eq!(predicate.r#type, 0);
        assert_eq!(predicate.leaf.as_ref().expect("leaf").field_id, 0);
        // Both fields must travel together, and the id pins the field ids.
        assert_eq!(table_req.filter_schema_id, Some(table_info.get_schema_id()));
        Ok(())
    }

    #[tokio::test]
    async fn prepare_fetch_log_requests_omits_an_absent_filter() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        status.assign_scan_bucket(TableBucket::new(1, 0), 0);
        let fetcher = filtering_fetcher(&table_info, &metadata, status, None)?;

        let requests = fetcher.prepare_fetch_log_requests().await;
        let table_req = &requests.get(&1).expect("request for leader").tables_req[0];
        assert!(table_req.filter_predicate.is_none());
        assert!(table_req.filter_schema_id.is_none());
        Ok(())
    }

    #[tokio::test]
    async fn unresolvable_filter_column_is_rejected() {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let result = filtering_fetcher(
            &table_info,
            &metadata,
            Arc::new(LogScannerStatus::new()),
            Some(crate::predicate::col("nope").gt(5i32)),
        );
        assert!(matches!(result.err(), Some(Error::IllegalArgument { .. })));
    }

    /// Without this the bucket offset never advances and the scanner re-requests
    /// the same range forever whenever a filter prunes a whole fetch.
    #[tokio::test]
    async fn handle_fetch_response_advances_past_a_fully_filtered_range() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        let bucket = TableBucket::new(1, 0);
        status.assign_scan_bucket(bucket.clone(), 2);
        let fetcher = filtering_fetcher(
            &table_info,
            &metadata,
            status.clone(),
            Some(crate::predicate::col("id").gt(5i32)),
        )?;

        LogFetcher::handle_fetch_response(
            filtered_response(Some(11), Some(9)),
            test_response_context(&fetcher, &metadata),
        )
        .await;

        let fetched = fetcher.collect_fetches().await?;
        assert!(fetched.is_empty());
        assert_eq!(status.get_bucket_offset(&bucket), Some(11));
        Ok(())
    }

    #[tokio::test]
    async fn handle_fetch_response_ignores_a_filtered_range_behind_the_fetch_offset() -> Result<()>
    {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        let bucket = TableBucket::new(1, 0);
        status.assign_scan_bucket(bucket.clone(), 5);
        let fetcher = filtering_fetcher(
            &table_info,
            &metadata,
            status.clone(),
            Some(crate::predicate::col("id").gt(5i32)),
        )?;

        LogFetcher::handle_fetch_response(
            filtered_response(Some(3), None),
            test_response_context(&fetcher, &metadata),
        )
        .await;

        let fetched = fetcher.collect_fetches().await?;
        assert!(fetched.is_empty());
        assert_eq!(status.get_bucket_offset(&bucket), Some(5));
        Ok(())
    }

    /// The server reports a filtered range alongside records when it prunes only
    /// the tail of what it scanned, so the offset must clear the whole range.
    #[tokio::test]
    async fn handle_fetch_response_skips_a_pruned_tail_after_its_records() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        let bucket = TableBucket::new(1, 0);
        status.assign_scan_bucket(bucket.clone(), 0);
        let fetcher = filtering_fetcher(
            &table_info,
            &metadata,
            status.clone(),
            Some(crate::predicate::col("id").gt(5i32)),
        )?;

        let mut response = filtered_response(Some(8), Some(9));
        response.tables_resp[0].buckets_resp[0].records =
            Some(build_records(&table_info, Arc::new(table_path))?);
        LogFetcher::handle_fetch_response(response, test_response_context(&fetcher, &metadata))
            .await;

        let fetched = fetcher.collect_fetches().await?;
        assert_eq!(fetched.get(&bucket).expect("records").len(), 1);
        // The single record ends at offset 1, but the server scanned through 8.
        assert_eq!(status.get_bucket_offset(&bucket), Some(8));
        Ok(())
    }

    /// A response for bucket 0 of table 1 that carries no records, standing in
    /// for a fetch whose batches the server pruned entirely.
    fn filtered_response(
        filtered_end_offset: Option<i64>,
        high_watermark: Option<i64>,
    ) -> FetchLogResponse {
        FetchLogResponse {
            tables_resp: vec![PbFetchLogRespForTable {
                table_id: 1,
                buckets_resp: vec![PbFetchLogRespForBucket {
                    partition_id: None,
                    bucket_id: 0,
                    error_code: None,
                    error_message: None,
                    high_watermark,
                    log_start_offset: None,
                    remote_log_fetch_info: None,
                    records: None,
                    filtered_end_offset,
                    min_retain_offset: None,
                }],
            }],
        }
    }

    fn test_response_context(
        fetcher: &LogFetcher,
        metadata: &Arc<Metadata>,
    ) -> FetchResponseContext {
        FetchResponseContext {
            metadata: metadata.clone(),
            log_fetch_buffer: fetcher.log_fetch_buffer.clone(),
            log_scanner_status: fetcher.log_scanner_status.clone(),
            resolver: Arc::clone(&fetcher.resolver),
            remote_log_downloader: fetcher.remote_log_downloader.clone(),
            metrics: Arc::clone(&fetcher.metrics),
            request_start_time: Instant::now(),
        }
    }

    #[tokio::test]
    async fn handle_fetch_response_sets_error() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        status.assign_scan_bucket(TableBucket::new(1, 0), 5);
        let fetcher = LogFetcher::new(
            table_info.clone(),
            Arc::new(RpcClient::new()),
            metadata.clone(),
            status.clone(),
            &Config::default(),
            None,
            false,
            None,
            test_scanner_metrics(&table_path),
            test_schema_getter(&table_info, &metadata),
        )?;

        let response = FetchLogResponse {
            tables_resp: vec![PbFetchLogRespForTable {
                table_id: 1,
                buckets_resp: vec![PbFetchLogRespForBucket {
                    partition_id: None,
                    bucket_id: 0,
                    error_code: Some(FlussError::AuthorizationException.code()),
                    error_message: Some("denied".to_string()),
                    high_watermark: None,
                    log_start_offset: None,
                    remote_log_fetch_info: None,
                    records: None,
                    filtered_end_offset: None,
                    min_retain_offset: None,
                }],
            }],
        };

        let response_context = FetchResponseContext {
            metadata: metadata.clone(),
            log_fetch_buffer: fetcher.log_fetch_buffer.clone(),
            log_scanner_status: fetcher.log_scanner_status.clone(),
            resolver: Arc::clone(&fetcher.resolver),
            remote_log_downloader: fetcher.remote_log_downloader.clone(),
            metrics: Arc::clone(&fetcher.metrics),
            request_start_time: Instant::now(),
        };

        LogFetcher::handle_fetch_response(response, response_context).await;

        let completed = fetcher.log_fetch_buffer.poll().expect("completed fetch");
        let api_error = completed.api_error().expect("api error");
        assert_eq!(api_error.code, FlussError::AuthorizationException.code());
        Ok(())
    }

    #[tokio::test]
    async fn handle_fetch_response_invalidates_table_meta() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster.clone()));
        let status = Arc::new(LogScannerStatus::new());
        status.assign_scan_bucket(TableBucket::new(1, 0), 5);
        let fetcher = LogFetcher::new(
            table_info.clone(),
            Arc::new(RpcClient::new()),
            metadata.clone(),
            status.clone(),
            &Config::default(),
            None,
            false,
            None,
            test_scanner_metrics(&table_path),
            test_schema_getter(&table_info, &metadata),
        )?;

        let bucket = TableBucket::new(1, 0);
        assert!(metadata.leader_for(&table_path, &bucket).await?.is_some());

        let response = FetchLogResponse {
            tables_resp: vec![PbFetchLogRespForTable {
                table_id: 1,
                buckets_resp: vec![PbFetchLogRespForBucket {
                    partition_id: None,
                    bucket_id: 0,
                    error_code: Some(FlussError::NotLeaderOrFollower.code()),
                    error_message: Some("not leader".to_string()),
                    high_watermark: None,
                    log_start_offset: None,
                    remote_log_fetch_info: None,
                    records: None,
                    filtered_end_offset: None,
                    min_retain_offset: None,
                }],
            }],
        };

        let response_context = FetchResponseContext {
            metadata: metadata.clone(),
            log_fetch_buffer: fetcher.log_fetch_buffer.clone(),
            log_scanner_status: fetcher.log_scanner_status.clone(),
            resolver: Arc::clone(&fetcher.resolver),
            remote_log_downloader: fetcher.remote_log_downloader.clone(),
            metrics: Arc::clone(&fetcher.metrics),
            request_start_time: Instant::now(),
        };

        LogFetcher::handle_fetch_response(response, response_context).await;

        assert!(metadata.get_cluster().leader_for(&bucket).is_none());
        Ok(())
    }

    fn create_test_table_info(
        has_primary_key: bool,
        log_format: Option<&str>,
    ) -> (TableInfo, TablePath) {
        let mut schema_builder = Schema::builder()
            .column("id", DataTypes::int())
            .column("name", DataTypes::string());

        if has_primary_key {
            schema_builder = schema_builder.primary_key(vec!["id"]).unwrap();
        }

        let schema = schema_builder.build().unwrap();
        let table_path = TablePath::new("test_db", "test_table");

        let mut properties = HashMap::new();
        if let Some(format) = log_format {
            properties.insert("table.log.format".to_string(), format.to_string());
        }

        let table_info = TableInfo::new(
            table_path.clone(),
            1,
            1,
            schema,
            vec![],
            Arc::from(vec![]),
            1,
            properties,
            HashMap::new(),
            None,
            0,
            0,
        );

        (table_info, table_path)
    }

    #[test]
    fn test_validate_scan_support() {
        // Record mode (allow_primary_key = true): a primary-key table's changelog
        // is scannable on ARROW or the default format.
        let (table_info, table_path) = create_test_table_info(true, Some("ARROW"));
        assert!(validate_scan_support_inner(&table_path, &table_info, true).is_ok());
        let (table_info, table_path) = create_test_table_info(true, None);
        assert!(validate_scan_support_inner(&table_path, &table_info, true).is_ok());

        // Batch mode (allow_primary_key = false): a primary-key table is rejected.
        let (table_info, table_path) = create_test_table_info(true, Some("ARROW"));
        let err = validate_scan_support(&table_path, &table_info).unwrap_err();
        assert!(matches!(err, UnsupportedOperation { .. }));
        assert!(err.to_string().contains("primary-key table"));

        // INDEXED is unsupported regardless of table type or mode.
        for allow_primary_key in [false, true] {
            let (table_info, table_path) = create_test_table_info(false, Some("INDEXED"));
            let err = validate_scan_support_inner(&table_path, &table_info, allow_primary_key)
                .unwrap_err();
            assert!(matches!(err, UnsupportedOperation { .. }));
            assert!(err.to_string().contains("ARROW log format"));
        }

        // Log tables scan on ARROW or the default format.
        let (table_info, table_path) = create_test_table_info(false, None);
        assert!(validate_scan_support(&table_path, &table_info).is_ok());
        let (table_info, table_path) = create_test_table_info(false, Some("ARROW"));
        assert!(validate_scan_support(&table_path, &table_info).is_ok());
    }

    #[tokio::test]
    async fn prepare_fetch_log_requests_uses_configured_fetch_params() -> Result<()> {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let table_info = build_table_info(table_path.clone(), 1, 1);
        let cluster = build_cluster_arc(&table_path, 1, 1);
        let metadata = Arc::new(Metadata::new_for_test(cluster));
        let status = Arc::new(LogScannerStatus::new());
        status.assign_scan_bucket(TableBucket::new(1, 0), 0);

        let config = Config {
            scanner_log_fetch_max_bytes: 1234,
            scanner_log_fetch_min_bytes: 7,
            scanner_log_fetch_wait_max_time_ms: 89,
            scanner_log_fetch_max_bytes_for_bucket: 512,
            ..Config::default()
        };

        let fetcher = LogFetcher::new(
            table_info.clone(),
            Arc::new(RpcClient::new()),
            metadata.clone(),
            status,
            &config,
            None,
            false,
            None,
            test_scanner_metrics(&table_path),
            test_schema_getter(&table_info, &metadata),
        )?;

        let requests = fetcher.prepare_fetch_log_requests().await;
        // In this test cluster, leader id should exist; but even if it changes,
        // assert over all built requests.
        assert!(!requests.is_empty());
        for req in requests.values() {
            assert_eq!(req.max_bytes, 1234);
            assert_eq!(req.min_bytes, Some(7));
            assert_eq!(req.max_wait_ms, Some(89));

            for table_req in &req.tables_req {
                for bucket_req in &table_req.buckets_req {
                    assert_eq!(bucket_req.max_fetch_bytes, 512);
                }
            }
        }
        Ok(())
    }

    /// Builds a self-contained `LogScannerInner` for poll-timing tests
    /// inside a `current_thread` runtime so callers can drive `PollGuard`
    /// lifecycles synchronously.
    fn with_test_log_scanner_inner<F: FnOnce(&LogScannerInner)>(body: F) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build current_thread runtime");
        rt.block_on(async {
            let table_path = TablePath::new("db".to_string(), "tbl".to_string());
            let table_info = build_table_info(table_path.clone(), 1, 1);
            let cluster = build_cluster_arc(&table_path, 1, 1);
            let metadata = Arc::new(Metadata::new_for_test(cluster));
            let rpc_client = Arc::new(RpcClient::new());
            let admin = Arc::new(crate::client::admin::FlussAdmin::new(
                rpc_client.clone(),
                metadata.clone(),
            ));
            let inner = LogScannerInner::new(
                &table_info,
                metadata,
                rpc_client,
                &Config::default(),
                None,
                false,
                None,
                admin,
            )
            .expect("build LogScannerInner");
            body(&inner);
        });
    }

    fn snapshot_gauge(
        snapshotter: &metrics_util::debugging::Snapshotter,
        name: &str,
    ) -> Option<f64> {
        use metrics_util::debugging::DebugValue;
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .find_map(|(key, _, _, val)| {
                if key.key().name() == name {
                    if let DebugValue::Gauge(g) = val {
                        return Some(g.into_inner());
                    }
                }
                None
            })
    }

    /// Exercises the `PollGuard` lifecycle across two consecutive
    /// `record_poll_start` calls. Asserts both poll-timing gauges are
    /// emitted at the right moments and `record_poll_end` runs on guard
    /// drop (also the cancellation-safety path, since dropping the
    /// `poll()` future drops the guard).
    #[test]
    fn poll_guard_emits_time_between_poll_and_idle_ratio() {
        use crate::metrics::{SCANNER_POLL_IDLE_RATIO, SCANNER_TIME_BETWEEN_POLL_MS};
        use metrics_util::debugging::DebuggingRecorder;

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();

        metrics::with_local_recorder(&recorder, || {
            with_test_log_scanner_inner(|inner| {
                // First poll: emits time_between_poll_ms=0 (Java parity:
                // ScannerMetricGroup.recordPollStart emits 0 when there is
                // no previous poll). Idle ratio is also emitted as 1.0
                // on drop (poll_time / (poll_time + 0) = 1.0).
                {
                    let _g = PollGuard::new(inner);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }

                // Brief gap so time_between_poll_ms is observably > 0.
                std::thread::sleep(std::time::Duration::from_millis(5));

                // Second poll: refreshes both time_between_poll_ms (>0)
                // and a fresh idle ratio.
                {
                    let _g = PollGuard::new(inner);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            });
        });

        let between = snapshot_gauge(&snapshotter, SCANNER_TIME_BETWEEN_POLL_MS)
            .expect("time_between_poll_ms must be emitted on every poll");
        assert!(
            between > 0.0,
            "second-poll time_between_poll_ms must be positive, got {between}"
        );

        let ratio = snapshot_gauge(&snapshotter, SCANNER_POLL_IDLE_RATIO)
            .expect("poll_idle_ratio must be emitted on poll end");
        assert!(
            (0.0..=1.0).contains(&ratio),
            "poll_idle_ratio must be in [0, 1], got {ratio}"
        );

        // Both gauges must carry `database=db` / `table=tbl` (the fixture
        // values from `with_test_log_scanner_inner`).
        assert_scanner_entries_labeled(&snapshotter.snapshot().into_vec(), "db", "tbl");
    }

    /// Java parity: `ScannerMetricGroup.recordPollStart` emits
    /// `timeMsBetweenPoll = 0` on the very first poll. The Rust gauge
    /// must do the same so dashboards see the metric series from poll #1.
    #[test]
    fn time_between_poll_ms_emits_zero_on_first_poll() {
        use crate::metrics::SCANNER_TIME_BETWEEN_POLL_MS;
        use metrics_util::debugging::DebuggingRecorder;

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();

        metrics::with_local_recorder(&recorder, || {
            with_test_log_scanner_inner(|inner| {
                let _g = PollGuard::new(inner);
                // Drop at end of scope completes the poll; the value of
                // SCANNER_TIME_BETWEEN_POLL_MS was emitted at start, not end.
            });
        });

        let between = snapshot_gauge(&snapshotter, SCANNER_TIME_BETWEEN_POLL_MS)
            .expect("time_between_poll_ms must be emitted on the first poll");
        assert_eq!(
            between, 0.0,
            "first-poll time_between_poll_ms must be 0.0 (Java parity), got {between}"
        );
        assert_scanner_entries_labeled(&snapshotter.snapshot().into_vec(), "db", "tbl");
    }

    /// Pins the single-consumer contract: overlapping `PollGuard`s on the
    /// same scanner trip the `debug_assert!` in `record_poll_start`.
    /// Release builds skip the check, so the test is gated on
    /// `debug_assertions`.
    #[cfg(debug_assertions)]
    #[test]
    #[should_panic(expected = "concurrent poll() detected")]
    fn overlapping_polls_panic_in_debug_builds() {
        with_test_log_scanner_inner(|inner| {
            let _g1 = PollGuard::new(inner);
            // _g1 has not been dropped → poll_start_at is still Some,
            // so the second start must panic.
            let _g2 = PollGuard::new(inner);
        });
    }

    /// Drives `handle_fetch_response` against a local metrics recorder and
    /// asserts that latency + bytes-per-request histograms are emitted with
    /// values that mirror what Java would record. This complements the unit
    /// tests in `metrics.rs` (which only verify the facade) by exercising
    /// the actual instrumented call path.
    ///
    /// Note: uses a `current_thread` runtime inside `with_local_recorder`
    /// (rather than `#[tokio::test]`) because the metrics facade installs a
    /// thread-local recorder; running the async work on the same thread is
    /// the only way to observe the emitted metrics in the snapshot. Both
    /// the fetcher construction and the `handle_fetch_response` call run
    /// inside the runtime (the security-token manager and remote-log
    /// downloader require a Tokio reactor).
    #[test]
    fn handle_fetch_response_emits_latency_and_bytes_metrics() {
        use crate::metrics::{SCANNER_BYTES_PER_REQUEST, SCANNER_FETCH_LATENCY_MS};
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();

        let expected_bytes = metrics::with_local_recorder(&recorder, || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("build current_thread runtime");

            rt.block_on(async {
                let table_path = TablePath::new("db".to_string(), "tbl".to_string());
                let table_info = build_table_info(table_path.clone(), 1, 1);
                let cluster = build_cluster_arc(&table_path, 1, 1);
                let metadata = Arc::new(Metadata::new_for_test(cluster));
                let status = Arc::new(LogScannerStatus::new());
                status.assign_scan_bucket(TableBucket::new(1, 0), 5);
                let fetcher = LogFetcher::new(
                    table_info.clone(),
                    Arc::new(RpcClient::new()),
                    metadata.clone(),
                    status,
                    &Config::default(),
                    None,
                    false,
                    None,
                    test_scanner_metrics(&table_path),
                    test_schema_getter(&table_info, &metadata),
                )
                .expect("build LogFetcher");

                let response = FetchLogResponse {
                    tables_resp: vec![PbFetchLogRespForTable {
                        table_id: 1,
                        buckets_resp: vec![PbFetchLogRespForBucket {
                            partition_id: None,
                            bucket_id: 0,
                            error_code: Some(FlussError::None.code()),
                            error_message: None,
                            high_watermark: Some(7),
                            log_start_offset: Some(0),
                            remote_log_fetch_info: None,
                            records: None,
                            filtered_end_offset: None,
                            min_retain_offset: None,
                        }],
                    }],
                };
                let expected_bytes = response.encoded_len() as f64;
                let response_context = FetchResponseContext {
                    metadata: metadata.clone(),
                    log_fetch_buffer: fetcher.log_fetch_buffer.clone(),
                    log_scanner_status: fetcher.log_scanner_status.clone(),
                    resolver: Arc::clone(&fetcher.resolver),
                    remote_log_downloader: fetcher.remote_log_downloader.clone(),
                    metrics: Arc::clone(&fetcher.metrics),
                    request_start_time: Instant::now(),
                };

                LogFetcher::handle_fetch_response(response, response_context).await;
                expected_bytes
            })
        });

        let entries: Vec<_> = snapshotter.snapshot().into_vec();
        let find_histogram = |name: &str| -> Vec<f64> {
            entries
                .iter()
                .find_map(|(key, _, _, val)| {
                    if key.key().name() == name {
                        if let DebugValue::Histogram(v) = val {
                            return Some(v.iter().map(|f| f.into_inner()).collect());
                        }
                    }
                    None
                })
                .unwrap_or_default()
        };

        let latency_samples = find_histogram(SCANNER_FETCH_LATENCY_MS);
        assert_eq!(latency_samples.len(), 1, "expected one latency sample");
        assert!(
            latency_samples[0] >= 0.0,
            "latency must be non-negative, got {}",
            latency_samples[0]
        );

        let bytes_samples = find_histogram(SCANNER_BYTES_PER_REQUEST);
        assert_eq!(
            bytes_samples,
            vec![expected_bytes],
            "bytes histogram must record encoded_len() for parity with Java fetchLogResponse.totalSize()",
        );

        // Every emitted scanner metric must carry both `database` and `table`
        // labels — that's the whole point of `ScannerMetrics`. If a future
        // contributor adds a new `metrics::*!` macro inline (bypassing
        // `ScannerMetrics`), this assertion catches it.
        assert_scanner_entries_labeled(&entries, "db", "tbl");
    }

    /// `emit_last_poll_seconds_ago_once` must skip emission while the
    /// shared atomic still holds the sentinel `0` — that's the
    /// pre-first-poll guard that prevents Java's
    /// `(System.currentTimeMillis() - 0) / 1000` startup nonsense from
    /// tripping consumer-liveness alerts before any poll happens.
    ///
    /// `ScannerMetrics::new` already registers the gauge with the
    /// recorder, so it appears in the snapshot with the default `0.0`
    /// even without any emission. The discriminating assertion is that
    /// the value stays near zero rather than blowing up to ~1.7 billion
    /// (current Unix-epoch seconds), which is what a broken skip would
    /// produce.
    #[test]
    fn emit_last_poll_seconds_ago_skips_sentinel_value() {
        use crate::metrics::SCANNER_LAST_POLL_SECONDS_AGO;
        use metrics_util::debugging::DebuggingRecorder;

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();

        metrics::with_local_recorder(&recorder, || {
            let table_path = TablePath::new("db".to_string(), "tbl".to_string());
            let metrics = ScannerMetrics::new(&table_path);
            let last_poll = AtomicI64::new(0);

            for _ in 0..3 {
                emit_last_poll_seconds_ago_once(&last_poll, &metrics);
            }
        });

        let value = snapshot_gauge(&snapshotter, SCANNER_LAST_POLL_SECONDS_AGO)
            .expect("ScannerMetrics::new registers the gauge so it appears in the snapshot");
        assert!(
            value < 1.0,
            "pre-first-poll emission must be skipped; broken skip would push ~unix-epoch \
             seconds (~1.7e9) into the gauge, got {value}"
        );
    }

    /// Once a real timestamp has been published, the helper must emit
    /// `floor((now - stored) / 1000)` matching Java's integer-truncating
    /// `(System.currentTimeMillis() - lastPollMs) / 1000`. Tolerance
    /// allows for real wall-clock progression between the test setting
    /// up `stored` and the helper reading `SystemTime::now()`.
    ///
    /// Also covers the reset-after-fresh-poll case: updating the
    /// stored timestamp to "now" must drop the next emission back near
    /// zero, matching the property "gauge resets when a new poll
    /// happens".
    #[test]
    fn emit_last_poll_seconds_ago_publishes_integer_truncated_elapsed() {
        use crate::metrics::SCANNER_LAST_POLL_SECONDS_AGO;
        use metrics_util::debugging::DebuggingRecorder;

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();

        metrics::with_local_recorder(&recorder, || {
            let table_path = TablePath::new("db".to_string(), "tbl".to_string());
            let metrics = ScannerMetrics::new(&table_path);

            let now_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .expect("wall clock after UNIX_EPOCH");
            let last_poll = AtomicI64::new(now_ms - 5_500);

            emit_last_poll_seconds_ago_once(&last_poll, &metrics);

            let value = snapshot_gauge(&snapshotter, SCANNER_LAST_POLL_SECONDS_AGO)
                .expect("gauge must emit once a real timestamp is published");
            assert!(
                (5.0..=6.0).contains(&value),
                "gauge must be ~5 (5500ms truncated to 5s, plus test scheduling slack), got {value}"
            );

            // Simulate a fresh poll: update the shared atomic to "right
            // now". The next emission must collapse the gauge back near
            // zero.
            let fresh_now_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .expect("wall clock after UNIX_EPOCH");
            last_poll.store(fresh_now_ms, Ordering::Release);

            emit_last_poll_seconds_ago_once(&last_poll, &metrics);

            let reset = snapshot_gauge(&snapshotter, SCANNER_LAST_POLL_SECONDS_AGO)
                .expect("gauge must still be present after the second emission");
            assert!(
                (0.0..=1.0).contains(&reset),
                "fresh poll must reset gauge near zero, got {reset}"
            );
        });

        assert_scanner_entries_labeled(&snapshotter.snapshot().into_vec(), "db", "tbl");
    }

    /// Negative `now - stored` (e.g. wall-clock jumps backwards via NTP)
    /// must clamp to 0, not produce a negative gauge reading.
    #[test]
    fn emit_last_poll_seconds_ago_clamps_negative_delta_to_zero() {
        use crate::metrics::SCANNER_LAST_POLL_SECONDS_AGO;
        use metrics_util::debugging::DebuggingRecorder;

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();

        metrics::with_local_recorder(&recorder, || {
            let table_path = TablePath::new("db".to_string(), "tbl".to_string());
            let metrics = ScannerMetrics::new(&table_path);

            let now_ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .expect("wall clock after UNIX_EPOCH");
            // Stored timestamp in the future → negative delta.
            let last_poll = AtomicI64::new(now_ms + 60_000);

            emit_last_poll_seconds_ago_once(&last_poll, &metrics);
        });

        let value = snapshot_gauge(&snapshotter, SCANNER_LAST_POLL_SECONDS_AGO)
            .expect("gauge must emit even when delta is clamped to 0");
        assert_eq!(value, 0.0, "negative delta must clamp to 0, got {value}");
    }

    /// `spawn_last_poll_seconds_ago_ticker` returns a `JoinHandle` whose
    /// `abort()` cleanly terminates the loop. Pins the lifecycle pattern
    /// that `impl Drop for LogScannerInner` relies on.
    #[tokio::test(flavor = "current_thread")]
    async fn spawn_last_poll_seconds_ago_ticker_aborts_cleanly() {
        let table_path = TablePath::new("db".to_string(), "tbl".to_string());
        let metrics = Arc::new(ScannerMetrics::new(&table_path));
        let last_poll_unix_ms = Arc::new(AtomicI64::new(0));

        let handle = spawn_last_poll_seconds_ago_ticker(
            Arc::clone(&last_poll_unix_ms),
            Arc::clone(&metrics),
        );
        assert!(
            !handle.is_finished(),
            "freshly spawned ticker must be alive"
        );

        handle.abort();
        let join_result = handle.await;
        assert!(
            join_result.is_err() && join_result.unwrap_err().is_cancelled(),
            "abort must cancel the ticker, not let it complete normally"
        );
    }

    /// End-to-end test of the *spawned* ticker (not just the extracted
    /// `emit_last_poll_seconds_ago_once` helper): the interval loop must
    /// emit on its first tick and keep emitting on subsequent ticks,
    /// reflecting the latest published timestamp each time.
    ///
    /// Uses a paused-clock `current_thread` runtime so the second tick can
    /// be driven deterministically with `tokio::time::advance` instead of
    /// sleeping a real second. Note the elapsed value is derived from
    /// wall-clock `SystemTime`, which `advance` does *not* move — so the
    /// gauge value is controlled by what we store in the atomic (a known
    /// past / present wall-clock timestamp), and `advance` is used only to
    /// fire the parked 1-second interval timer.
    ///
    /// Built inside `with_local_recorder` (rather than `#[tokio::test]`)
    /// because the metrics facade installs a thread-local recorder; the
    /// spawned task is polled on the same thread during `block_on`, so its
    /// `gauge!` calls resolve to this local recorder.
    #[test]
    fn spawned_ticker_emits_on_first_and_subsequent_ticks() {
        use crate::metrics::SCANNER_LAST_POLL_SECONDS_AGO;
        use metrics_util::debugging::DebuggingRecorder;

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();

        metrics::with_local_recorder(&recorder, || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .expect("build paused current_thread runtime");

            rt.block_on(async {
                let table_path = TablePath::new("db".to_string(), "tbl".to_string());
                let metrics = Arc::new(ScannerMetrics::new(&table_path));
                let last_poll_unix_ms = Arc::new(AtomicI64::new(0));

                // Simulate a poll that started ~5s ago (wall clock) before
                // the ticker runs, so the first (immediate) tick emits ~5.
                let now_ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_millis() as i64)
                    .expect("wall clock after UNIX_EPOCH");
                last_poll_unix_ms.store(now_ms - 5_000, Ordering::Release);

                let handle = spawn_last_poll_seconds_ago_ticker(
                    Arc::clone(&last_poll_unix_ms),
                    Arc::clone(&metrics),
                );

                // `tokio::time::interval` fires its first tick immediately,
                // so a few yields let the spawned task run that first
                // emission without advancing the clock.
                for _ in 0..8 {
                    tokio::task::yield_now().await;
                }

                let first = snapshot_gauge(&snapshotter, SCANNER_LAST_POLL_SECONDS_AGO)
                    .expect("spawned ticker must emit on its first (immediate) tick");
                assert!(
                    (5.0..=6.0).contains(&first),
                    "first tick must reflect ~5s elapsed, got {first}"
                );

                // Simulate a fresh poll "now", then advance the paused clock
                // by 1s to fire the parked second interval tick. The loop
                // must emit again, this time near zero.
                let fresh_ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_millis() as i64)
                    .expect("wall clock after UNIX_EPOCH");
                last_poll_unix_ms.store(fresh_ms, Ordering::Release);

                tokio::time::advance(Duration::from_secs(1)).await;
                for _ in 0..8 {
                    tokio::task::yield_now().await;
                }

                let second = snapshot_gauge(&snapshotter, SCANNER_LAST_POLL_SECONDS_AGO)
                    .expect("spawned ticker must keep emitting on subsequent ticks");
                assert!(
                    (0.0..=1.0).contains(&second),
                    "second tick after a fresh poll must reset gauge near zero, got {second}"
                );

                handle.abort();
            });
        });

        assert_scanner_entries_labeled(&snapshotter.snapshot().into_vec(), "db", "tbl");
    }

    /// `LogScannerInner::drop` must abort the ticker task so the gauge
    /// stops emitting once the scanner is closed — mirrors Java's
    /// `ScannerMetricGroup.close()`. The atomic is shared with the task,
    /// so we use its `Arc::strong_count` as an indirect liveness probe:
    /// once the runtime processes the abort and drops the task's future,
    /// the task's clone of the `Arc` is released, leaving only the one
    /// we hold here.
    #[test]
    fn log_scanner_inner_drop_aborts_ticker_task() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build current_thread runtime");
        rt.block_on(async {
            let table_path = TablePath::new("db".to_string(), "tbl".to_string());
            let table_info = build_table_info(table_path.clone(), 1, 1);
            let cluster = build_cluster_arc(&table_path, 1, 1);
            let metadata = Arc::new(Metadata::new_for_test(cluster));
            let rpc_client = Arc::new(RpcClient::new());
            let admin = Arc::new(crate::client::admin::FlussAdmin::new(
                rpc_client.clone(),
                metadata.clone(),
            ));
            let inner = LogScannerInner::new(
                &table_info,
                metadata,
                rpc_client,
                &Config::default(),
                None,
                false,
                None,
                admin,
            )
            .expect("build LogScannerInner");

            let abort_handle = inner.last_poll_seconds_ago_task.abort_handle();
            assert!(
                !abort_handle.is_finished(),
                "ticker must be alive before scanner drop"
            );

            drop(inner);

            // Yield repeatedly so the runtime can process the abort.
            // Cap at a generous iteration count to avoid hanging the test
            // if Drop ever stops calling `abort()`.
            for _ in 0..32 {
                tokio::task::yield_now().await;
                if abort_handle.is_finished() {
                    break;
                }
            }
            assert!(
                abort_handle.is_finished(),
                "Drop for LogScannerInner must abort the last_poll_seconds_ago ticker"
            );
        });
    }
}
