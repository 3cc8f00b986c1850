//! One sandboxed instance of a plugin, with typed calls into it.
//!
//! An instance serves one table at a time (its storage is scoped to that table) and is
//! single-threaded; the host runs one instance per concurrently written split plus one for
//! the commit. After a trap an instance is poisoned and must be dropped.
//!
//! Every call runs under the [`sandbox`](super::sandbox) limits: a deadline, the memory
//! ceiling and a bound on the size of what it returns.

use std::time::{Duration, Instant};

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::bindings::LakePlugin;
use super::bindings::exports::fluss::lake::plugin::PluginInfo;
use super::host_api::InstanceState;
use super::registry::Plugin;
use super::sandbox::{
    self, DeadlineExceeded, MAX_INFO_FIELD_BYTES, check_result_size, truncate_message,
};
use super::storage::ScopedStorage;
use super::wit;
use crate::error::{Error, ErrorKind, Result};

/// Calls into the guest with the call's deadline armed; a trap becomes a host [`Error`].
macro_rules! guest_call {
    ($self:ident, $name:expr, |$b:ident, $s:ident| $call:expr) => {{
        $self.store.data_mut().deadline = Some(Instant::now() + $self.call_timeout);
        let $b = &$self.bindings;
        let $s = &mut $self.store;
        let r = $call.await;
        $self.store.data_mut().deadline = None;
        r.map_err(|e| $self.trap($name, e))
    }};
}

pub type Config = Vec<(String, String)>;

pub struct PluginInstance {
    store: Store<InstanceState>,
    bindings: LakePlugin,
    plugin_name: String,
    call_timeout: Duration,
    max_result_bytes: usize,
}

/// A writer resource living inside a [`PluginInstance`].
pub struct WriterHandle(ResourceAny);

/// A committer resource living inside a [`PluginInstance`].
pub struct CommitterHandle(ResourceAny);

impl PluginInstance {
    pub async fn new(plugin: &Plugin, log_context: String) -> Result<Self> {
        let settings = plugin.engine_settings();
        let mut store = Store::new(
            plugin.engine(),
            InstanceState::new(settings.instance_memory_limit, log_context),
        );
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|ctx| sandbox::on_epoch(ctx.data().deadline));
        store.data_mut().deadline = Some(Instant::now() + settings.call_timeout);
        let bindings = plugin
            .pre()
            .instantiate_async(&mut store)
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Plugin,
                    format!("cannot instantiate plugin {}: {e:#}", plugin.name()),
                )
            })?;
        store.data_mut().deadline = None;
        Ok(Self {
            store,
            bindings,
            plugin_name: plugin.name().to_string(),
            call_timeout: settings.call_timeout,
            max_result_bytes: settings.max_result_bytes,
        })
    }

    /// Confines this instance's storage calls to `storage` (one table's lake location).
    pub fn set_storage(&mut self, storage: ScopedStorage) {
        self.store.data_mut().storage = Some(storage);
    }

    /// Names the limit a trap came from, if any.
    fn trap(&self, call: &str, e: wasmtime::Error) -> Error {
        let name = &self.plugin_name;
        if e.downcast_ref::<DeadlineExceeded>().is_some() {
            return Error::new(
                ErrorKind::PluginLimit,
                format!(
                    "plugin {name} ran past its {:?} call deadline in {call} and was interrupted",
                    self.call_timeout
                ),
            );
        }
        if let Some(requested) = self.store.data().limits.memory_exceeded {
            return Error::new(
                ErrorKind::PluginLimit,
                format!(
                    "plugin {name} exceeded its memory limit of {} bytes in {call} (asked for {requested})",
                    self.store.data().limits.memory_limit()
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
        let mut info = guest_call!(self, "info", |b, s| b.fluss_lake_plugin().call_info(s))?;
        for field in [
            &mut info.format,
            &mut info.plugin_version,
            &mut info.contract_version,
        ] {
            *field = sandbox::plugin_text(field, MAX_INFO_FIELD_BYTES);
        }
        Ok(info)
    }

    pub async fn table_location(
        &mut self,
        table: &wit::TableInfo,
        config: &Config,
    ) -> Result<String> {
        let r = guest_call!(self, "table-location", |b, s| b
            .fluss_lake_plugin()
            .call_table_location(s, table, config))?;
        let location = r.map_err(|e| self.plugin_error("table-location", e))?;
        if location.len() > sandbox::MAX_LOCATION_CHARS {
            return Err(Error::new(
                ErrorKind::PluginLimit,
                format!(
                    "plugin {} returned a {}-byte table location",
                    self.plugin_name,
                    location.len()
                ),
            ));
        }
        Ok(location)
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
    ) -> Result<wit::CommitResult> {
        let r = guest_call!(self, "committer.commit", |b, s| b
            .fluss_lake_committer()
            .lake_committer()
            .call_commit(s, c.0, committable, properties))?;
        r.map_err(|e| self.plugin_error("committer.commit", e))
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

    /// Drops the committer resource.
    pub async fn close_committer(&mut self, c: CommitterHandle) -> Result<()> {
        guest_call!(self, "committer drop", |_b, s| c.0.resource_drop_async(s))
    }
}
