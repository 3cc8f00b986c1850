//! One sandboxed instance of a plugin, with typed calls into it.
//!
//! An instance serves one table at a time (its storage is scoped to that table) and is
//! single-threaded; the host runs one instance per concurrently written split plus one for
//! the commit. After a trap an instance is poisoned and must be dropped.
//!
//! Every call runs under the [`sandbox`](super::sandbox) limits: a deadline, the memory
//! ceiling and a bound on the size of what it returns. The deadline is enforced twice: the
//! epoch interrupts guest code that runs past it, and a host-side timer abandons a call that
//! is stuck inside a host import (a WASI timer, a slow store), where epochs never fire. A call
//! also ends when its round is cancelled. An abandoned or trapped instance is poisoned: every
//! later call fails at once, and the instance is dropped with its round.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::batch_write_bindings::LakeBatchWrite;
use super::batch_write_bindings::exports::fluss::lake::batch_writer;
use super::bindings::LakePlugin;
use super::bindings::exports::fluss::lake::plugin::PluginInfo;
use super::data_plane::HostRows;
use super::host_api::{InstanceState, MaintenanceStatus};
use super::maintenance_bindings::LakeMaintenance;
use super::registry::Plugin;
use super::replace_bindings::LakeBucketReplace;
use super::sandbox::{
    self, DeadlineExceeded, MAX_INFO_FIELD_BYTES, check_result_size, truncate_message,
};
use super::storage::ScopedStorage;
use super::{MaintenanceReport, MaintenanceRequest, wit};
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::registry::CallEnd;
use crate::metrics::{PluginLabels, PluginMetrics, metrics};

/// Calls into the guest with the call's deadline armed, raced against the host-side timer
/// and the round's cancellation; a trap becomes a host [`Error`].
macro_rules! guest_call {
    ($self:ident, $name:expr, |$b:ident, $s:ident| $call:expr) => {
        guest_call!($self, $name, $self.call_timeout, |$b, $s| $call)
    };
    ($self:ident, $name:expr, $timeout:expr, |$b:ident, $s:ident| $call:expr) => {{
        $self.check_usable($name)?;
        let started = Instant::now();
        let timeout = $timeout;
        let deadline = Instant::now() + timeout;
        $self.store.data_mut().deadline = Some(deadline);
        let outcome = {
            let $b = &$self.bindings;
            let $s = &mut $self.store;
            let call = async { $call.await };
            tokio::select! {
                biased;
                r = call => CallOutcome::Done(r),
                _ = $self.cancel.cancelled() => CallOutcome::Cancelled,
                _ = tokio::time::sleep_until((deadline + BLOCKED_CALL_GRACE).into()) => CallOutcome::Blocked,
            }
        };
        $self.store.data_mut().deadline = None;
        $self.finish_call($name, timeout, started, outcome)
    }};
}

/// How a call into the guest ended.
enum CallOutcome<T> {
    Done(wasmtime::Result<T>),
    Cancelled,
    /// Still running past its deadline plus [`BLOCKED_CALL_GRACE`]: blocked in a host import.
    Blocked,
}

/// The host-side timer fires this long after the call's deadline, so that guest code running
/// past it is reported by the epoch ("ran past its deadline") and only a call blocked in a
/// host import by the timer.
const BLOCKED_CALL_GRACE: Duration = Duration::from_secs(1);

/// Deadline of the calls made while loading a plugin (instantiation and `info`), which do
/// no work: a plugin that blocks there must not hold startup or a hot swap for long.
pub const LOAD_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes the host lifts out of an instance in one crossing (an import's arguments, a call's
/// result) at most, as wasmtime's hostcall fuel counts them: what the largest legitimate
/// payload needs (`--plugin-max-result-size`, and at least 64 MiB for a `put` of a whole
/// object), plus room for the rest of the call's values. Beyond it the lift traps before the
/// host allocates anything.
fn call_fuel(max_result_bytes: usize) -> usize {
    max_result_bytes.max(64 << 20).saturating_add(1 << 20)
}

/// The fuel of `info`: its strings are cut to [`MAX_INFO_FIELD_BYTES`] each, so a plugin
/// never needs more than a few KiB to say who it is; a huge or aliased string traps instead
/// of costing the host its size.
const INFO_FUEL: usize = 64 << 10;

pub type Config = Vec<(String, String)>;

/// Snapshots one `maintenance.maintain` call may report committing: compaction commits once
/// per partition at most, so more is a plugin misbehaving.
pub const MAX_MAINTENANCE_SNAPSHOTS: usize = 10_000;

pub struct PluginInstance {
    store: Store<InstanceState>,
    bindings: LakePlugin,
    /// The optional `maintenance` export.
    maintenance: Option<LakeMaintenance>,
    /// The optional `bucket-replace` export.
    replace: Option<LakeBucketReplace>,
    /// The optional `batch-writer` export (0.3.8).
    batch_write: Option<LakeBatchWrite>,
    plugin_name: String,
    call_timeout: Duration,
    max_result_bytes: usize,
    /// Ends any call in progress when cancelled (the round was cancelled, or, for a
    /// maintenance call, the host began to shut down).
    cancel: CancellationToken,
    /// Why the instance may not be called again (a trap, an abandoned call).
    poisoned: Option<String>,
    /// Where its calls are counted; none while the plugin is being loaded (its format is
    /// not known yet).
    metrics: Option<PluginMetrics>,
}

/// What a maintenance call did: its report, and what it reported while it ran.
#[derive(Debug)]
pub struct Maintained {
    pub report: MaintenanceReport,
    pub status: MaintenanceStatus,
}

/// A writer resource living inside a [`PluginInstance`].
pub struct WriterHandle(ResourceAny);

/// A `batch-writer` resource living inside a [`PluginInstance`] (contract 0.3.8): a writer
/// whose batches stay in the host.
pub struct BatchWriterHandle(ResourceAny);

/// A committer resource living inside a [`PluginInstance`].
pub struct CommitterHandle(ResourceAny);

impl PluginInstance {
    pub async fn new(plugin: &Plugin, log_context: String) -> Result<Self> {
        let settings = plugin.engine_settings();
        let mut state = InstanceState::new(settings, log_context);
        state.limits.count_fixed(plugin.instance_bytes());
        let mut store = Store::new(plugin.engine(), state);
        store.limiter(|s| &mut s.limits);
        store.set_max_component_handles(sandbox::MAX_HANDLES);
        store.set_hostcall_fuel(call_fuel(settings.max_result_bytes));
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|ctx| sandbox::on_epoch(ctx.data().deadline));
        let timeout = settings.call_timeout.min(LOAD_CALL_TIMEOUT);
        store.data_mut().deadline = Some(Instant::now() + timeout);
        let name = plugin.name();
        let started = Instant::now();
        let instantiated = tokio::time::timeout(timeout + BLOCKED_CALL_GRACE, async {
            let instance = plugin.pre().instantiate_async(&mut store).await?;
            let bindings = plugin.indices().load(&mut store, &instance)?;
            let maintenance = match plugin.maintenance() {
                Some(indices) => Some(indices.load(&mut store, &instance)?),
                None => None,
            };
            let replace = match plugin.bucket_replace() {
                Some(indices) => Some(indices.load(&mut store, &instance)?),
                None => None,
            };
            let batch_write = match plugin.batch_write() {
                Some(indices) => Some(indices.load(&mut store, &instance)?),
                None => None,
            };
            Ok::<_, wasmtime::Error>((bindings, maintenance, replace, batch_write))
        })
        .await;
        let (bindings, maintenance, replace, batch_write) = match instantiated {
            Ok(Ok(b)) => b,
            // A trap in a start function (a deadline, a limit, a panic): one line, as in a call.
            Ok(Err(e))
                if e.downcast_ref::<wasmtime::Trap>().is_some()
                    || e.downcast_ref::<DeadlineExceeded>().is_some()
                    || store.data().limits.memory_exceeded.is_some() =>
            {
                return Err(describe_trap(
                    name,
                    "instantiation",
                    timeout,
                    store.hostcall_fuel(),
                    store.data(),
                    e,
                ));
            }
            Ok(Err(e)) => {
                return Err(Error::new(
                    ErrorKind::Plugin,
                    format!(
                        "cannot instantiate plugin {name}: {}",
                        sandbox::plugin_text(&format!("{e:#}"), sandbox::MAX_MESSAGE_CHARS)
                    ),
                ));
            }
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::PluginLimit,
                    format!("plugin {name} blocked for over {timeout:?} while being instantiated"),
                ));
            }
        };
        store.data_mut().deadline = None;
        let plugin_metrics = (!plugin.format().is_empty())
            .then(|| metrics().plugin(PluginLabels::new(plugin.format(), plugin.digest())));
        if let Some(m) = &plugin_metrics {
            m.instantiated(started.elapsed());
        }
        Ok(Self {
            store,
            bindings,
            maintenance,
            replace,
            batch_write,
            plugin_name: plugin.name().to_string(),
            call_timeout: settings.call_timeout,
            max_result_bytes: settings.max_result_bytes,
            cancel: CancellationToken::new(),
            poisoned: None,
            metrics: plugin_metrics,
        })
    }

    /// What the plugin's log lines are prefixed with (an instance reused for another split
    /// names that split).
    pub fn set_log_context(&mut self, log_context: String) {
        self.store.data_mut().log_context = log_context;
    }

    /// Ends calls in progress (and fails later ones) once `cancel` is cancelled.
    pub fn set_cancel(&mut self, cancel: CancellationToken) {
        self.cancel = cancel;
    }

    fn check_usable(&self, call: &str) -> Result<()> {
        match &self.poisoned {
            None => Ok(()),
            Some(why) => Err(Error::new(
                ErrorKind::Plugin,
                format!(
                    "plugin {} cannot be called ({call}) after {why}",
                    self.plugin_name
                ),
            )),
        }
    }

    /// Turns how a call ended into its result, poisoning the instance where it must not be
    /// entered again, and failing the call when the round's storage quota was hit during it
    /// (whether or not the plugin passed that error on).
    fn finish_call<T>(
        &mut self,
        call: &str,
        timeout: Duration,
        started: Instant,
        outcome: CallOutcome<T>,
    ) -> Result<T> {
        if let Some(m) = &self.metrics {
            let end = match &outcome {
                CallOutcome::Done(Ok(_)) => CallEnd::Returned,
                CallOutcome::Done(Err(e)) if e.downcast_ref::<DeadlineExceeded>().is_some() => {
                    CallEnd::DeadlineExceeded
                }
                CallOutcome::Done(Err(_)) => CallEnd::Trapped,
                CallOutcome::Cancelled => CallEnd::Cancelled,
                CallOutcome::Blocked => CallEnd::Abandoned,
            };
            m.call(call, started.elapsed(), end);
        }
        let name = &self.plugin_name;
        let result = match outcome {
            CallOutcome::Done(Ok(v)) => Ok(v),
            CallOutcome::Done(Err(e)) => {
                let e = self.trap(call, timeout, e);
                self.poisoned = Some(format!("a trap in {call}"));
                Err(e)
            }
            CallOutcome::Cancelled => {
                self.poisoned = Some(format!("{call} was cancelled"));
                Err(Error::new(
                    ErrorKind::Cancelled,
                    format!(
                        "plugin {name}: {call} stopped: its round was cancelled or the host is shutting down"
                    ),
                ))
            }
            CallOutcome::Blocked => {
                self.poisoned = Some(format!("{call} was abandoned"));
                Err(Error::new(
                    ErrorKind::PluginLimit,
                    format!(
                        "plugin {name} blocked in a host call past its {timeout:?} call deadline in {call} and was abandoned"
                    ),
                ))
            }
        };
        let quota = self
            .store
            .data()
            .storage
            .as_ref()
            .and_then(|s| s.quota().exceeded());
        match quota {
            Some(why) if !matches!(result, Err(ref e) if e.kind() == ErrorKind::Cancelled) => {
                Err(Error::new(
                    ErrorKind::PluginLimit,
                    format!("plugin {name} wrote {why} (in {call})"),
                ))
            }
            _ => result,
        }
    }

    /// Confines this instance's storage calls to `storage` (one table's lake location).
    pub fn set_storage(&mut self, storage: ScopedStorage) {
        self.store.data_mut().storage = Some(storage);
    }

    /// The catalog this instance's table is kept by (the `table-catalog` import).
    pub fn set_catalog(&mut self, catalog: super::table_catalog::TableCatalogScope) {
        self.store.data_mut().catalog = catalog;
    }

    /// Names the limit a trap came from, if any.
    /// A trap of `call`, whose deadline was `timeout` after it started (the call timeout, or
    /// a shorter budget such as maintenance's).
    fn trap(&self, call: &str, timeout: Duration, e: wasmtime::Error) -> Error {
        describe_trap(
            &self.plugin_name,
            call,
            timeout,
            self.store.hostcall_fuel(),
            self.store.data(),
            e,
        )
    }

    /// [`plugin_error`](Self::plugin_error), except that the plugin's `kind` keeps its own
    /// kind (a lost race, an operation the plugin does not do): the lake's answer, not a
    /// failure of the plugin.
    fn plugin_error_as(&self, call: &str, e: wit::LakeError, kind: wit::ErrorKind) -> Error {
        let keep = e.kind == kind;
        let err = self.plugin_error(call, e);
        match kind {
            wit::ErrorKind::Conflict if keep => {
                Error::new(ErrorKind::Conflict, err.message().to_string())
            }
            wit::ErrorKind::Unsupported if keep => {
                Error::new(ErrorKind::Unsupported, err.message().to_string())
            }
            _ => err,
        }
    }

    fn plugin_error(&self, call: &str, e: wit::LakeError) -> Error {
        Error::new(
            ErrorKind::Plugin,
            format!(
                "plugin {} failed in {call} ({:?}): {}",
                self.plugin_name,
                e.kind,
                truncate_message(e.message)
            ),
        )
    }

    fn check_size(&self, call: &str, what: &str, len: usize) -> Result<()> {
        check_result_size(&self.plugin_name, call, what, len, self.max_result_bytes)
    }

    pub async fn info(&mut self) -> Result<PluginInfo> {
        self.check_usable("info")?;
        let fuel = self.store.hostcall_fuel();
        self.store.set_hostcall_fuel(INFO_FUEL);
        let info = self.info_call().await;
        self.store.set_hostcall_fuel(fuel);
        let mut info = info?;
        for field in [
            &mut info.format,
            &mut info.plugin_version,
            &mut info.contract_version,
        ] {
            *field = sandbox::plugin_text(field, MAX_INFO_FIELD_BYTES);
        }
        Ok(info)
    }

    /// `info` itself, under whatever fuel the caller set.
    async fn info_call(&mut self) -> Result<PluginInfo> {
        guest_call!(
            self,
            "info",
            self.call_timeout.min(LOAD_CALL_TIMEOUT),
            |b, s| b.fluss_lake_plugin().call_info(s)
        )
    }

    pub async fn validate_table(&mut self, table: &wit::TableInfo, config: &Config) -> Result<()> {
        let r = guest_call!(self, "validate-table", |b, s| b
            .fluss_lake_plugin()
            .call_validate_table(s, table, config))?;
        r.map_err(|e| self.plugin_error("validate-table", e))
    }

    pub async fn create_table_if_missing(
        &mut self,
        table: &wit::TableInfo,
        config: &Config,
    ) -> Result<bool> {
        let r = guest_call!(self, "create-table-if-missing", |b, s| b
            .fluss_lake_catalog()
            .call_create_table_if_missing(s, table, config))?;
        r.map_err(|e| self.plugin_error("create-table-if-missing", e))
    }

    /// Bytes of linear memory the instance has grown to (it never shrinks).
    pub fn memory_bytes(&self) -> usize {
        self.store.data().limits.memory_bytes()
    }

    pub async fn open_writer(&mut self, context: &wit::WriterContext) -> Result<WriterHandle> {
        let r = guest_call!(self, "writer.open", |b, s| b
            .fluss_lake_writer()
            .lake_writer()
            .call_open(s, context))?;
        r.map(WriterHandle)
            .map_err(|e| self.plugin_error("writer.open", e))
    }

    pub async fn write(&mut self, writer: &WriterHandle, batch: &wit::RowBatch) -> Result<()> {
        let r = guest_call!(self, "writer.write", |b, s| b
            .fluss_lake_writer()
            .lake_writer()
            .call_write(s, writer.0, batch))?;
        r.map_err(|e| self.plugin_error("writer.write", e))
    }

    /// Completes and drops the writer.
    pub async fn complete(&mut self, writer: WriterHandle) -> Result<wit::WriteResult> {
        let r = guest_call!(self, "writer.complete", |b, s| b
            .fluss_lake_writer()
            .lake_writer()
            .call_complete(s, writer.0))?;
        guest_call!(self, "writer drop", |_b, s| writer.0.resource_drop_async(s))?;
        let result = r.map_err(|e| self.plugin_error("writer.complete", e))?;
        self.check_size("writer.complete", "write result", result.payload.len())?;
        Ok(result)
    }

    /// Whether the plugin exports `batch-writer` (contract 0.3.8): its splits can be written
    /// with their rows kept in the host.
    pub fn writes_batches(&self) -> bool {
        self.batch_write.is_some()
    }

    fn batch_writer(&self) -> Result<batch_writer::Guest> {
        self.batch_write
            .as_ref()
            .map(|b| b.fluss_lake_batch_writer().clone())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "plugin {} does not export batch-writer (contract 0.3.8)",
                        self.plugin_name
                    ),
                )
            })
    }

    /// Opens a `batch-writer` (the plugin must export it: [`writes_batches`](Self::writes_batches)).
    pub async fn open_batch_writer(
        &mut self,
        context: &wit::WriterContext,
    ) -> Result<BatchWriterHandle> {
        let guest = self.batch_writer()?;
        let r = guest_call!(self, "batch-writer.open", |_b, s| guest
            .lake_batch_writer()
            .call_open(s, context))?;
        r.map(BatchWriterHandle)
            .map_err(|e| self.plugin_error("batch-writer.open", e))
    }

    /// Lends `rows` to the writer for one `write` call; they are gone afterwards.
    pub async fn write_batch(&mut self, writer: &BatchWriterHandle, rows: HostRows) -> Result<()> {
        let guest = self.batch_writer()?;
        let handle = self.store.data_mut().table.push(rows).map_err(|e| {
            Error::new(
                ErrorKind::PluginLimit,
                format!("plugin {}: cannot lend a batch: {e}", self.plugin_name),
            )
        })?;
        let lent = wasmtime::component::Resource::<HostRows>::new_borrow(handle.rep());
        let r = guest_call!(self, "batch-writer.write", |_b, s| guest
            .lake_batch_writer()
            .call_write(s, writer.0, lent));
        let _ = self.store.data_mut().table.delete(handle);
        r?.map_err(|e| self.plugin_error("batch-writer.write", e))
    }

    /// Completes and drops the batch writer.
    pub async fn complete_batch_writer(
        &mut self,
        writer: BatchWriterHandle,
    ) -> Result<wit::WriteResult> {
        let guest = self.batch_writer()?;
        let r = guest_call!(self, "batch-writer.complete", |_b, s| guest
            .lake_batch_writer()
            .call_complete(s, writer.0))?;
        guest_call!(self, "batch writer drop", |_b, s| writer
            .0
            .resource_drop_async(s))?;
        let result = r.map_err(|e| self.plugin_error("batch-writer.complete", e))?;
        self.check_size(
            "batch-writer.complete",
            "write result",
            result.payload.len(),
        )?;
        Ok(result)
    }

    pub async fn open_committer(
        &mut self,
        context: &wit::CommitterContext,
    ) -> Result<CommitterHandle> {
        let r = guest_call!(self, "committer.open", |b, s| b
            .fluss_lake_committer()
            .lake_committer()
            .call_open(s, context))?;
        r.map(CommitterHandle)
            .map_err(|e| self.plugin_error("committer.open", e))
    }

    pub async fn to_committable(
        &mut self,
        c: &CommitterHandle,
        results: &[Vec<u8>],
    ) -> Result<Vec<u8>> {
        let r = guest_call!(self, "committer.to-committable", |b, s| b
            .fluss_lake_committer()
            .lake_committer()
            .call_to_committable(s, c.0, results))?;
        let committable = r.map_err(|e| self.plugin_error("committer.to-committable", e))?;
        self.check_size("committer.to-committable", "committable", committable.len())?;
        Ok(committable)
    }

    pub async fn commit(
        &mut self,
        c: &CommitterHandle,
        committable: &[u8],
        properties: &Config,
        tiered_base: Option<i64>,
    ) -> Result<wit::CommitResult> {
        let r = guest_call!(self, "committer.commit", |b, s| b
            .fluss_lake_committer()
            .lake_committer()
            .call_commit(s, c.0, committable, properties, tiered_base))?;
        // A lost race is the lake's answer, not the plugin's failure: transient.
        r.map_err(|e| self.plugin_error_as("committer.commit", e, wit::ErrorKind::Conflict))
    }

    pub async fn abort(&mut self, c: &CommitterHandle, committable: &[u8]) -> Result<()> {
        let r = guest_call!(self, "committer.abort", |b, s| b
            .fluss_lake_committer()
            .lake_committer()
            .call_abort(s, c.0, committable))?;
        r.map_err(|e| self.plugin_error("committer.abort", e))
    }

    pub async fn get_missing_lake_snapshot(
        &mut self,
        c: &CommitterHandle,
        latest_fluss_snapshot_id: Option<i64>,
    ) -> Result<Option<wit::CommittedSnapshot>> {
        let r = guest_call!(self, "committer.get-missing-lake-snapshot", |b, s| b
            .fluss_lake_committer()
            .lake_committer()
            .call_get_missing_lake_snapshot(s, c.0, latest_fluss_snapshot_id))?;
        let snapshot =
            r.map_err(|e| self.plugin_error("committer.get-missing-lake-snapshot", e))?;
        if let Some(s) = &snapshot {
            let len = s.properties.iter().map(|(k, v)| k.len() + v.len()).sum();
            self.check_size(
                "committer.get-missing-lake-snapshot",
                "snapshot properties",
                len,
            )?;
        }
        Ok(snapshot)
    }

    /// The plugin's `bucket-replace` export, or why it has none.
    fn bucket_replace(
        &self,
    ) -> Result<super::replace_bindings::exports::fluss::lake::bucket_replace::Guest> {
        self.replace
            .as_ref()
            .map(|m| m.fluss_lake_bucket_replace().clone())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "plugin {} does not export bucket-replace (contract 0.3.7): rebuild it on the current SDK",
                        self.plugin_name
                    ),
                )
            })
    }

    /// Whether this plugin can replace the buckets of the context's table (`bucket-replace`
    /// exported and its `check-replace` accepting); why not, when it cannot.
    pub async fn check_replace(&mut self, context: &wit::CommitterContext) -> Result<()> {
        let guest = self.bucket_replace()?;
        let r = guest_call!(self, "bucket-replace.check-replace", |_b, s| guest
            .call_check_replace(s, context))?;
        r.map_err(|e| {
            self.plugin_error_as(
                "bucket-replace.check-replace",
                e,
                wit::ErrorKind::Unsupported,
            )
        })
    }

    /// As [`commit`](Self::commit), with `replace`'s buckets holding only the committable's
    /// files in the published snapshot (`bucket-replace.commit-replacing`).
    pub async fn commit_replacing(
        &mut self,
        context: &wit::CommitterContext,
        committable: &[u8],
        properties: &Config,
        tiered_base: Option<i64>,
        replace: &[super::BucketRef],
    ) -> Result<wit::CommitResult> {
        let guest = self.bucket_replace()?;
        let r = guest_call!(self, "bucket-replace.commit-replacing", |_b, s| guest
            .call_commit_replacing(
                s,
                context,
                committable,
                properties,
                tiered_base,
                replace
            ))?;
        r.map_err(|e| {
            self.plugin_error_as(
                "bucket-replace.commit-replacing",
                e,
                wit::ErrorKind::Conflict,
            )
        })
    }

    /// Whether the plugin exports `maintenance` (snapshot expiry, compaction).
    pub fn maintains_tables(&self) -> bool {
        self.maintenance.is_some()
    }

    /// Maintains the table the instance serves, under `timeout` (the request's own deadline is
    /// what the plugin aims at; this one interrupts it). `None` when the plugin does not
    /// export `maintenance`.
    pub async fn maintain(
        &mut self,
        context: &wit::CommitterContext,
        request: MaintenanceRequest,
        timeout: Duration,
    ) -> Result<Option<Maintained>> {
        let Some(guest) = self
            .maintenance
            .as_ref()
            .map(|m| m.fluss_lake_maintenance().clone())
        else {
            return Ok(None);
        };
        self.store.data_mut().maintenance_status = Some(MaintenanceStatus::default());
        let r = guest_call!(self, "maintenance.maintain", timeout, |_b, s| guest
            .call_maintain(s, context, request));
        let status = self
            .store
            .data_mut()
            .maintenance_status
            .take()
            .unwrap_or_default();
        let r = r?;
        // A plugin that does not maintain tables says so; that is no failure.
        let report = r.map_err(|e| {
            self.plugin_error_as("maintenance.maintain", e, wit::ErrorKind::Unsupported)
        })?;
        if report.committed_snapshots.len() > MAX_MAINTENANCE_SNAPSHOTS {
            return Err(Error::new(
                ErrorKind::PluginLimit,
                format!(
                    "plugin {} reported {} snapshots committed by one maintenance call (at most {MAX_MAINTENANCE_SNAPSHOTS})",
                    self.plugin_name,
                    report.committed_snapshots.len()
                ),
            ));
        }
        Ok(Some(Maintained { report, status }))
    }

    /// Drops the committer resource.
    pub async fn close_committer(&mut self, c: CommitterHandle) -> Result<()> {
        guest_call!(self, "committer drop", |_b, s| c.0.resource_drop_async(s))
    }
}

impl Drop for PluginInstance {
    fn drop(&mut self) {
        self.store.data_mut().report_dropped_logs();
        if let Some(m) = &self.metrics {
            m.memory(self.memory_bytes());
        }
    }
}

/// One line saying how a call (or the instantiation) of plugin `name` ended in a trap: the
/// limit it hit, if any, else the trap, followed by the end of what the plugin wrote to its
/// stderr (a panic's message). The wasm backtrace goes to the debug log only.
fn describe_trap(
    name: &str,
    call: &str,
    call_timeout: Duration,
    hostcall_fuel: usize,
    state: &InstanceState,
    e: wasmtime::Error,
) -> Error {
    let error = describe_trap_alone(name, call, call_timeout, hostcall_fuel, state, e);
    match state.stderr.tail() {
        Some(tail) => Error::new(
            error.kind(),
            format!("{}; its stderr ended with: {tail}", error.message()),
        ),
        None => error,
    }
}

fn describe_trap_alone(
    name: &str,
    call: &str,
    call_timeout: Duration,
    hostcall_fuel: usize,
    state: &InstanceState,
    e: wasmtime::Error,
) -> Error {
    if e.downcast_ref::<DeadlineExceeded>().is_some() {
        return Error::new(
            ErrorKind::PluginLimit,
            format!(
                "plugin {name} ran past its {:?} call deadline in {call} and was interrupted",
                call_timeout
            ),
        );
    }
    // WASI's resource table says so by type, the component's handle tables in words.
    let handles_full = e
        .downcast_ref::<wasmtime::component::ResourceTableError>()
        .is_some_and(|t| matches!(t, wasmtime::component::ResourceTableError::Full))
        || e.chain()
            .any(|c| c.to_string().contains("store handle limit exceeded"));
    if handles_full {
        return Error::new(
            ErrorKind::PluginLimit,
            format!(
                "plugin {name} exceeded its limit of {} resource handles in {call}",
                sandbox::MAX_HANDLES
            ),
        );
    }
    // wasmtime's words for hostcall fuel running out: a lift over what one call may carry.
    if e.chain().any(|c| {
        c.to_string()
            .contains("fuel allocated for hostcalls has been exhausted")
    }) {
        return Error::new(
            ErrorKind::PluginLimit,
            format!(
                "plugin {name} handed the host more than the {hostcall_fuel} bytes one call may \
                 carry in {call}{}; refused before it was copied",
                if call == "info" {
                    " (what says who a plugin is)"
                } else {
                    " (--plugin-max-result-size)"
                }
            ),
        );
    }
    if let Some(requested) = state.limits.memory_exceeded {
        return Error::new(
            ErrorKind::PluginLimit,
            format!(
                "plugin {name} exceeded its memory limit of {} bytes in {call} (asked for {requested})",
                state.limits.memory_limit()
            ),
        );
    }
    // One line for the operator; the wasm backtrace goes to the debug log.
    tracing::debug!(plugin = %name, call, "plugin trap: {e:?}");
    let what = match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::UnreachableCodeReached) => {
            "wasm `unreachable` executed (a panic or abort in the plugin)".to_string()
        }
        Some(trap) => trap.to_string(),
        None => e.root_cause().to_string(),
    };
    Error::new(
        ErrorKind::Plugin,
        format!("plugin {name} trapped in {call}: {what}"),
    )
}
