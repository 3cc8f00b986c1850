//! What the host gives a plugin instance: storage, logging and a clock — nothing else.
//!
//! WASI is linked only because Rust's standard library for wasm32-wasip2 imports it; the
//! WASI context grants no directories, no environment, no arguments, no sockets and no name
//! lookups, and its clocks are frozen at the epoch, so the `storage` import below is a
//! plugin's only way to data and the `clock` import its only time. Randomness stays (UUIDs
//! of data files need it; it reveals nothing).

use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use super::bindings::fluss::lake::{clock, logging, storage, types};
use super::sandbox::{SandboxLimits, truncate_message};
use super::storage::{ObjectInfo, ScopedStorage, StorageError, StorageErrorKind};

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
    table: ResourceTable,
    pub(super) limits: SandboxLimits,
    /// When the call in progress must end; checked on every epoch tick.
    pub(super) deadline: Option<Instant>,
    /// The table this instance works for; `None` until a round gives it one, and every
    /// storage call fails until then.
    pub(super) storage: Option<ScopedStorage>,
    /// Prefix of the plugin's log lines: plugin name and table.
    pub(super) log_context: String,
}

impl InstanceState {
    pub fn new(memory_limit: usize, log_context: String) -> Self {
        let wasi = WasiCtx::builder()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .wall_clock(FrozenClock)
            .monotonic_clock(FrozenClock)
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limits: SandboxLimits::new(memory_limit),
            deadline: None,
            storage: None,
            log_context,
        }
    }

    fn storage(&self) -> Result<&ScopedStorage, types::LakeError> {
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

fn to_wit(e: StorageError) -> types::LakeError {
    let kind = match e.kind {
        StorageErrorKind::InvalidPath => types::ErrorKind::InvalidInput,
        StorageErrorKind::NotFound => types::ErrorKind::NotFound,
        StorageErrorKind::AlreadyExists => types::ErrorKind::AlreadyExists,
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
        self.storage()?.get(&path).await.map_err(to_wit)
    }

    async fn put(&mut self, path: String, data: Vec<u8>) -> Result<(), types::LakeError> {
        self.storage()?.put(&path, data).await.map_err(to_wit)
    }

    async fn put_if_absent(&mut self, path: String, data: Vec<u8>) -> Result<(), types::LakeError> {
        self.storage()?
            .put_if_absent(&path, data)
            .await
            .map_err(to_wit)
    }

    async fn list_objects(
        &mut self,
        prefix: String,
    ) -> Result<Vec<types::ObjectMeta>, types::LakeError> {
        let objects = self.storage()?.list(&prefix).await.map_err(to_wit)?;
        Ok(objects.into_iter().map(meta).collect())
    }

    async fn delete_object(&mut self, path: String) -> Result<(), types::LakeError> {
        self.storage()?.delete(&path).await.map_err(to_wit)
    }

    async fn head(&mut self, path: String) -> Result<Option<types::ObjectMeta>, types::LakeError> {
        Ok(self.storage()?.head(&path).await.map_err(to_wit)?.map(meta))
    }
}

impl logging::Host for InstanceState {
    async fn log(&mut self, level: logging::Level, message: String) {
        let message = truncate_message(message);
        let ctx = &self.log_context;
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
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}
