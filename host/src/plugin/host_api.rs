//! What the host gives a plugin instance: storage, logging, a clock and, during a maintenance
//! call, a place to report what it left undone — nothing else.
//!
//! WASI is linked only because Rust's standard library for wasm32-wasip2 imports it; the
//! WASI context grants no directories, no environment, no arguments, no sockets and no name
//! lookups, and its clocks are frozen at the epoch, so the `storage` import below is a
//! plugin's only way to data and the `clock` import its only time. Randomness stays (UUIDs
//! of data files need it; it reveals nothing).

use std::time::{Duration, Instant};

use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use super::bindings::fluss::lake::{clock, logging, storage, types};
use super::engine::EngineSettings;
use super::maintenance_bindings::fluss::lake::maintenance_status;
use super::sandbox::{
    LogAdmission, LogRateLimit, MAX_HANDLES, MAX_OPEN_UPLOADS, SandboxLimits, StderrTail,
    truncate_message,
};
use super::storage::{ObjectInfo, ScopedStorage, StorageError, StorageErrorKind, Upload};
use super::table_catalog::TableCatalogScope;

/// WASI's clocks as the sandbox shows them: always the epoch.
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// Per-instance state: the sandbox's WASI context, its limits and the table scope.
pub struct InstanceState {
    wasi: WasiCtx,
    pub(super) table: ResourceTable,
    pub(super) limits: SandboxLimits,
    /// When the call in progress must end; checked on every epoch tick.
    pub(super) deadline: Option<Instant>,
    /// The table this instance works for; `None` until a round gives it one, and every
    /// storage call fails until then.
    pub(super) storage: Option<ScopedStorage>,
    /// Prefix of the plugin's log lines: plugin name and table.
    pub(super) log_context: String,
    log_limit: LogRateLimit,
    /// Most entries one `list-objects` page may hold.
    max_list_entries: usize,
    /// Uploads (and natively encoded files) started and not yet finished or dropped.
    pub(super) open_uploads: usize,
    /// What the `maintenance.maintain` call in progress reported through `maintenance-status`;
    /// `None` outside such a call, where reports are ignored.
    pub(super) maintenance_status: Option<MaintenanceStatus>,
    /// The end of what the plugin wrote to its WASI stderr, for the error of a trap.
    pub(super) stderr: StderrTail,
    /// The catalog of the table this instance works for.
    pub(super) catalog: TableCatalogScope,
}

/// What a maintenance call reported through the `maintenance-status` import (contract 0.3.2):
/// all zero for a plugin that does not import it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MaintenanceStatus {
    /// Parts of the table whose due compaction does not fit the call's input budget.
    pub over_budget: u32,
}

impl InstanceState {
    pub fn new(settings: &EngineSettings, log_context: String) -> Self {
        let stderr = StderrTail::default();
        let wasi = WasiCtx::builder()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .wall_clock(FrozenClock)
            .monotonic_clock(FrozenClock)
            .stderr(stderr.clone())
            .build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_HANDLES);
        Self {
            wasi,
            table,
            limits: SandboxLimits::new(settings.instance_memory_limit),
            deadline: None,
            storage: None,
            log_context,
            log_limit: LogRateLimit::new(settings.log_rate),
            max_list_entries: settings.max_list_entries,
            open_uploads: 0,
            maintenance_status: None,
            stderr,
            catalog: TableCatalogScope::default(),
        }
    }

    /// Reports log lines dropped by the rate limit and not reported yet (the instance ends).
    pub(super) fn report_dropped_logs(&mut self) {
        let dropped = self.log_limit.take_dropped();
        warn_dropped(&self.log_context, dropped);
    }

    pub(super) fn storage(&self) -> Result<&ScopedStorage, types::LakeError> {
        self.storage.as_ref().ok_or_else(|| types::LakeError {
            kind: types::ErrorKind::InvalidInput,
            message: "storage is not available outside a table's round".into(),
        })
    }
}

impl WasiView for InstanceState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The one line that stands for `dropped` plugin log lines the rate limit dropped.
fn warn_dropped(ctx: &str, dropped: u64) {
    if dropped > 0 {
        tracing::warn!(target: "plugin", "[{ctx}] {dropped} log lines dropped: over the plugin log rate");
    }
}

/// A storage error as the contract's error.
pub(super) fn storage_error(e: StorageError) -> types::LakeError {
    let kind = match e.kind {
        StorageErrorKind::InvalidPath => types::ErrorKind::InvalidInput,
        StorageErrorKind::NotFound => types::ErrorKind::NotFound,
        StorageErrorKind::AlreadyExists => types::ErrorKind::AlreadyExists,
        StorageErrorKind::LimitExceeded => types::ErrorKind::InvalidInput,
        StorageErrorKind::Io => types::ErrorKind::Io,
    };
    types::LakeError {
        kind,
        message: e.message,
    }
}

fn meta(o: ObjectInfo) -> types::ObjectMeta {
    types::ObjectMeta {
        path: o.path,
        size: o.size,
        last_modified: o.last_modified_ms,
    }
}

impl types::Host for InstanceState {}

impl storage::Host for InstanceState {
    async fn get(&mut self, path: String) -> Result<Vec<u8>, types::LakeError> {
        // The object lands in guest memory: more than the instance may hold cannot be wanted.
        let max = self.limits.memory_limit() as u64;
        self.storage()?.get(&path, max).await.map_err(storage_error)
    }

    async fn put(&mut self, path: String, data: Vec<u8>) -> Result<(), types::LakeError> {
        self.storage()?
            .put(&path, data)
            .await
            .map_err(storage_error)
    }

    async fn put_if_absent(&mut self, path: String, data: Vec<u8>) -> Result<(), types::LakeError> {
        self.storage()?
            .put_if_absent(&path, data)
            .await
            .map_err(storage_error)
    }

    async fn get_range(
        &mut self,
        path: String,
        offset: u64,
        length: u64,
    ) -> Result<Vec<u8>, types::LakeError> {
        // The range lands in guest memory, as a whole object does.
        let max = self.limits.memory_limit() as u64;
        self.storage()?
            .get_range(&path, offset, length, max)
            .await
            .map_err(storage_error)
    }

    async fn list_objects(
        &mut self,
        prefix: String,
        start_after: Option<String>,
        max_entries: u32,
    ) -> Result<types::ObjectPage, types::LakeError> {
        let max = (max_entries as usize).min(self.max_list_entries);
        let page = self
            .storage()?
            .list_page(&prefix, start_after.as_deref(), max)
            .await
            .map_err(storage_error)?;
        Ok(types::ObjectPage {
            objects: page.objects.into_iter().map(meta).collect(),
            next: page.next,
        })
    }

    async fn delete_object(&mut self, path: String) -> Result<(), types::LakeError> {
        self.storage()?.delete(&path).await.map_err(storage_error)
    }

    async fn head(&mut self, path: String) -> Result<Option<types::ObjectMeta>, types::LakeError> {
        Ok(self
            .storage()?
            .head(&path)
            .await
            .map_err(storage_error)?
            .map(meta))
    }
}

impl storage::HostUpload for InstanceState {
    async fn start(&mut self, path: String) -> Result<Resource<Upload>, types::LakeError> {
        // Each open upload holds parts in host memory: a bounded number per instance.
        if self.open_uploads >= MAX_OPEN_UPLOADS {
            return Err(types::LakeError {
                kind: types::ErrorKind::InvalidInput,
                message: format!(
                    "more than {MAX_OPEN_UPLOADS} uploads open at once: complete or abort one first"
                ),
            });
        }
        let upload = self
            .storage()?
            .start_upload(&path)
            .await
            .map_err(storage_error)?;
        let handle = self.table.push(upload).map_err(|e| types::LakeError {
            kind: types::ErrorKind::InvalidInput,
            message: format!("too many handles: {e}"),
        })?;
        self.open_uploads += 1;
        Ok(handle)
    }

    async fn write(
        &mut self,
        upload: Resource<Upload>,
        data: Vec<u8>,
    ) -> Result<(), types::LakeError> {
        self.upload(&upload)?
            .write(&data)
            .await
            .map_err(storage_error)
    }

    async fn complete(&mut self, upload: Resource<Upload>) -> Result<u64, types::LakeError> {
        self.upload(&upload)?
            .complete()
            .await
            .map_err(storage_error)
    }

    async fn abort(&mut self, upload: Resource<Upload>) -> Result<(), types::LakeError> {
        self.upload(&upload)?.abort().await.map_err(storage_error)
    }

    async fn drop(&mut self, upload: Resource<Upload>) -> wasmtime::Result<()> {
        // Dropping an unfinished upload aborts it (`Upload`'s `Drop`).
        self.table.delete(upload)?;
        self.open_uploads = self.open_uploads.saturating_sub(1);
        Ok(())
    }
}

impl InstanceState {
    fn upload(&mut self, upload: &Resource<Upload>) -> Result<&mut Upload, types::LakeError> {
        self.table.get_mut(upload).map_err(|e| types::LakeError {
            kind: types::ErrorKind::InvalidInput,
            message: format!("not an upload handle: {e}"),
        })
    }
}

impl logging::Host for InstanceState {
    async fn log(&mut self, level: logging::Level, message: String) {
        let dropped = match self.log_limit.admit(Instant::now()) {
            LogAdmission::Drop => return,
            LogAdmission::Log { dropped_before } => dropped_before,
        };
        let ctx = &self.log_context;
        warn_dropped(ctx, dropped);
        let message = truncate_message(message);
        match level {
            logging::Level::Trace => tracing::trace!(target: "plugin", "[{ctx}] {message}"),
            logging::Level::Debug => tracing::debug!(target: "plugin", "[{ctx}] {message}"),
            logging::Level::Info => tracing::info!(target: "plugin", "[{ctx}] {message}"),
            logging::Level::Warn => tracing::warn!(target: "plugin", "[{ctx}] {message}"),
            logging::Level::Error => tracing::error!(target: "plugin", "[{ctx}] {message}"),
        }
    }
}

impl clock::Host for InstanceState {
    async fn now_millis(&mut self) -> i64 {
        crate::time::now_millis()
    }
}

impl maintenance_status::Host for InstanceState {
    /// A `u32` bounds itself; outside a `maintain` call the report is ignored, so another
    /// call cannot set a table's maintenance figures.
    fn over_budget(&mut self, parts: u32) {
        if let Some(status) = &mut self.maintenance_status {
            status.over_budget = parts;
        }
    }
}
