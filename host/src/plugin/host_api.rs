//! What the host gives a plugin instance: storage, logging and a clock — nothing else.
//!
//! WASI is linked only because Rust's standard library for wasm32-wasip2 imports it; the
//! WASI context grants no directories, no environment, no arguments and no network, so the
//! `storage` import below is a plugin's only way to data.

use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::fluss::lake::{clock, logging, storage, types};
use super::storage::{ObjectInfo, ScopedStorage, StorageError, StorageErrorKind};

/// Per-instance state: the sandbox's WASI context, its limits and the table scope.
pub struct InstanceState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: StoreLimits,
    /// The table this instance works for; `None` until a round gives it one, and every
    /// storage call fails until then.
    pub(super) storage: Option<ScopedStorage>,
    /// Prefix of the plugin's log lines: plugin name and table.
    pub(super) log_context: String,
}

impl InstanceState {
    pub fn new(memory_limit: usize, log_context: String) -> Self {
        let wasi = WasiCtx::builder().build();
        let limits = StoreLimitsBuilder::new()
            .memory_size(memory_limit)
            .instances(4)
            .tables(64)
            .memories(4)
            .trap_on_grow_failure(true)
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limits,
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
