//! One sandboxed instance of a plugin, with typed calls into it.
//!
//! An instance serves one table at a time (its storage is scoped to that table) and is
//! single-threaded; the host runs one instance per concurrently written split plus one for
//! the commit. After a trap an instance is poisoned and must be dropped.

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::bindings::LakePlugin;
use super::bindings::exports::fluss::lake::plugin::PluginInfo;
use super::host_api::InstanceState;
use super::registry::Plugin;
use super::storage::ScopedStorage;
use super::wit;
use crate::error::{Error, ErrorKind, Result};

pub type Config = Vec<(String, String)>;

pub struct PluginInstance {
    store: Store<InstanceState>,
    bindings: LakePlugin,
    plugin_name: String,
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
        Ok(Self {
            store,
            bindings,
            plugin_name: plugin.name().to_string(),
        })
    }

    /// Confines this instance's storage calls to `storage` (one table's lake location).
    pub fn set_storage(&mut self, storage: ScopedStorage) {
        self.store.data_mut().storage = Some(storage);
    }

    fn trap(&self, call: &str, e: wasmtime::Error) -> Error {
        Error::new(
            ErrorKind::Plugin,
            format!("plugin {} trapped in {call}: {e:#}", self.plugin_name),
        )
    }

    fn plugin_error(&self, call: &str, e: wit::LakeError) -> Error {
        Error::new(
            ErrorKind::Plugin,
            format!(
                "plugin {} failed in {call} ({:?}): {}",
                self.plugin_name, e.kind, e.message
            ),
        )
    }

    pub async fn info(&mut self) -> Result<PluginInfo> {
        self.bindings
            .fluss_lake_plugin()
            .call_info(&mut self.store)
            .await
            .map_err(|e| self.trap("info", e))
    }

    pub async fn table_location(
        &mut self,
        table: &wit::TableInfo,
        config: &Config,
    ) -> Result<String> {
        let r = self
            .bindings
            .fluss_lake_plugin()
            .call_table_location(&mut self.store, table, config)
            .await
            .map_err(|e| self.trap("table-location", e))?;
        r.map_err(|e| self.plugin_error("table-location", e))
    }

    pub async fn validate_table(&mut self, table: &wit::TableInfo, config: &Config) -> Result<()> {
        let r = self
            .bindings
            .fluss_lake_plugin()
            .call_validate_table(&mut self.store, table, config)
            .await
            .map_err(|e| self.trap("validate-table", e))?;
        r.map_err(|e| self.plugin_error("validate-table", e))
    }

    pub async fn create_table_if_missing(
        &mut self,
        table: &wit::TableInfo,
        config: &Config,
    ) -> Result<bool> {
        let r = self
            .bindings
            .fluss_lake_catalog()
            .call_create_table_if_missing(&mut self.store, table, config)
            .await
            .map_err(|e| self.trap("create-table-if-missing", e))?;
        r.map_err(|e| self.plugin_error("create-table-if-missing", e))
    }

    pub async fn open_writer(&mut self, context: &wit::WriterContext) -> Result<WriterHandle> {
        let r = self
            .bindings
            .fluss_lake_writer()
            .lake_writer()
            .call_open(&mut self.store, context)
            .await
            .map_err(|e| self.trap("writer.open", e))?;
        r.map(WriterHandle)
            .map_err(|e| self.plugin_error("writer.open", e))
    }

    pub async fn write(&mut self, writer: &WriterHandle, batch: &wit::RowBatch) -> Result<()> {
        let r = self
            .bindings
            .fluss_lake_writer()
            .lake_writer()
            .call_write(&mut self.store, writer.0, batch)
            .await
            .map_err(|e| self.trap("writer.write", e))?;
        r.map_err(|e| self.plugin_error("writer.write", e))
    }

    /// Completes and drops the writer.
    pub async fn complete(&mut self, writer: WriterHandle) -> Result<wit::WriteResult> {
        let r = self
            .bindings
            .fluss_lake_writer()
            .lake_writer()
            .call_complete(&mut self.store, writer.0)
            .await
            .map_err(|e| self.trap("writer.complete", e))?;
        writer
            .0
            .resource_drop_async(&mut self.store)
            .await
            .map_err(|e| self.trap("writer drop", e))?;
        r.map_err(|e| self.plugin_error("writer.complete", e))
    }

    pub async fn open_committer(
        &mut self,
        context: &wit::CommitterContext,
    ) -> Result<CommitterHandle> {
        let r = self
            .bindings
            .fluss_lake_committer()
            .lake_committer()
            .call_open(&mut self.store, context)
            .await
            .map_err(|e| self.trap("committer.open", e))?;
        r.map(CommitterHandle)
            .map_err(|e| self.plugin_error("committer.open", e))
    }

    pub async fn to_committable(
        &mut self,
        c: &CommitterHandle,
        results: &[Vec<u8>],
    ) -> Result<Vec<u8>> {
        let r = self
            .bindings
            .fluss_lake_committer()
            .lake_committer()
            .call_to_committable(&mut self.store, c.0, results)
            .await
            .map_err(|e| self.trap("committer.to-committable", e))?;
        r.map_err(|e| self.plugin_error("committer.to-committable", e))
    }

    pub async fn commit(
        &mut self,
        c: &CommitterHandle,
        committable: &[u8],
        properties: &Config,
    ) -> Result<wit::CommitResult> {
        let r = self
            .bindings
            .fluss_lake_committer()
            .lake_committer()
            .call_commit(&mut self.store, c.0, committable, properties)
            .await
            .map_err(|e| self.trap("committer.commit", e))?;
        r.map_err(|e| self.plugin_error("committer.commit", e))
    }

    pub async fn abort(&mut self, c: &CommitterHandle, committable: &[u8]) -> Result<()> {
        let r = self
            .bindings
            .fluss_lake_committer()
            .lake_committer()
            .call_abort(&mut self.store, c.0, committable)
            .await
            .map_err(|e| self.trap("committer.abort", e))?;
        r.map_err(|e| self.plugin_error("committer.abort", e))
    }

    pub async fn get_missing_lake_snapshot(
        &mut self,
        c: &CommitterHandle,
        latest_fluss_snapshot_id: Option<i64>,
    ) -> Result<Option<wit::CommittedSnapshot>> {
        let r = self
            .bindings
            .fluss_lake_committer()
            .lake_committer()
            .call_get_missing_lake_snapshot(&mut self.store, c.0, latest_fluss_snapshot_id)
            .await
            .map_err(|e| self.trap("committer.get-missing-lake-snapshot", e))?;
        r.map_err(|e| self.plugin_error("committer.get-missing-lake-snapshot", e))
    }

    /// Drops the committer resource.
    pub async fn close_committer(&mut self, c: CommitterHandle) -> Result<()> {
        c.0.resource_drop_async(&mut self.store)
            .await
            .map_err(|e| self.trap("committer drop", e))
    }
}
