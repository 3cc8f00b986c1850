//! Loaded plugins and the lake format each one serves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::{HasSelf, InstancePre, Linker};

use super::batch_write_bindings::{LakeBatchWrite, LakeBatchWriteIndices};
use super::bindings::{LakePlugin, LakePluginIndices};
use super::engine::{EngineSettings, PluginEngine};
use super::host_api::InstanceState;
use super::layout::TableLayout;
use super::maintenance_bindings::{LakeMaintenance, LakeMaintenanceIndices};
use super::replace_bindings::LakeBucketReplaceIndices;
use super::sandbox::shown;
use super::source::{PluginFile, read_pinned_blocking};
use super::{CONTRACT_VERSION, PluginInstance};
use crate::error::{Error, ErrorKind, Result};

/// A loaded, compiled and linked plugin; instances are created from it per use.
pub struct Plugin {
    engine: Arc<PluginEngine>,
    pre: InstancePre<InstanceState>,
    /// Where the `lake-plugin` world's exports are, looked up once at load.
    indices: LakePluginIndices,
    /// The optional `maintenance` export; `None` when the plugin does not export it.
    maintenance: Option<LakeMaintenanceIndices>,
    /// The optional `bucket-replace` export (0.3.7); `None` when the plugin does not export it.
    replace: Option<LakeBucketReplaceIndices>,
    /// The optional `batch-writer` export (0.3.8); `None` when the plugin does not export it.
    batch_write: Option<LakeBatchWriteIndices>,
    path: PathBuf,
    digest: String,
    format: String,
    version: String,
    contract_version: String,
    layout: TableLayout,
    size: u64,
    /// How long creating the first instance took (pre-instantiated component).
    instantiate_time: Duration,
    /// Embedded in the binary (see [`builtin`](super::builtin)) rather than read from a file.
    builtin: bool,
    /// Its file's name, escaped: what errors call it until `info` says its format.
    file_name: String,
    /// Host memory each instance takes besides its linear memories (counted against the
    /// instance's memory limit; `Structure::instance_bytes`).
    instance_bytes: usize,
}

impl Plugin {
    /// Loads, compiles (or fetches from the cache) and links a plugin file, then asks it who
    /// it is. Any failure is a [`ErrorKind::PluginLoad`] error naming the file.
    pub async fn load(engine: Arc<PluginEngine>, path: &Path) -> Result<Self> {
        Self::load_file(
            engine,
            &PluginFile {
                path: path.to_path_buf(),
                sha256: None,
            },
        )
        .await
    }

    /// Like [`load`](Self::load), refusing a file whose digest differs from its pin.
    pub async fn load_file(engine: Arc<PluginEngine>, file: &PluginFile) -> Result<Self> {
        let read = read_pinned_blocking(file, engine.settings().max_file_bytes).await?;
        Self::from_bytes(engine, &file.path, &read.bytes, read.digest).await
    }

    /// Compiles (or fetches from the cache), links and identifies a plugin already read from
    /// `path`, whose SHA-256 is `digest`.
    pub async fn from_bytes(
        engine: Arc<PluginEngine>,
        path: &Path,
        bytes: &[u8],
        digest: String,
    ) -> Result<Self> {
        let load_err = |what: String| {
            Error::new(
                ErrorKind::PluginLoad,
                format!("plugin {}: {what}", shown(path)),
            )
        };
        let loaded = engine.load(path, bytes, &digest).await?;
        let component = loaded.component;
        let mut linker: Linker<InstanceState> = Linker::new(engine.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| load_err(format!("cannot link WASI: {e:#}")))?;
        LakePlugin::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(|e| load_err(format!("cannot link host imports: {e:#}")))?;
        LakeMaintenance::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(|e| load_err(format!("cannot link host imports: {e:#}")))?;
        LakeBatchWrite::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(|e| load_err(format!("cannot link host imports: {e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            match other_contract_version(&component, engine.engine()) {
                Some(theirs) => load_err(format!(
                    "built for contract fluss:lake@{theirs} but this host implements \
                     {CONTRACT_VERSION}: rebuild the plugin against fluss:lake@{CONTRACT_VERSION}"
                )),
                None => load_err(format!(
                    "does not match the fluss:lake@{CONTRACT_VERSION} contract: {e:#}"
                )),
            }
        })?;
        let indices = LakePluginIndices::new(&pre).map_err(|e| {
            load_err(format!(
                "does not export the fluss:lake@{CONTRACT_VERSION} world: {e:#}"
            ))
        })?;
        let maintenance = LakeMaintenanceIndices::new(&pre).ok();
        let replace = LakeBucketReplaceIndices::new(&pre).ok();
        let batch_write = LakeBatchWriteIndices::new(&pre).ok();
        let mut plugin = Self {
            engine,
            pre,
            indices,
            maintenance,
            replace,
            batch_write,
            path: path.to_path_buf(),
            digest,
            format: String::new(),
            version: String::new(),
            contract_version: String::new(),
            layout: TableLayout::default(),
            size: bytes.len() as u64,
            instantiate_time: Duration::ZERO,
            builtin: false,
            file_name: shown(Path::new(path.file_name().unwrap_or(path.as_os_str()))),
            instance_bytes: loaded.structure.instance_bytes() as usize,
        };
        let started = Instant::now();
        let mut instance = PluginInstance::new(&plugin, shown(path))
            .await
            .map_err(|e| load_err(e.message().to_string()))?;
        plugin.instantiate_time = started.elapsed();
        let info = instance
            .info()
            .await
            .map_err(|e| load_err(e.message().to_string()))?;
        if !contract_compatible(&info.contract_version, CONTRACT_VERSION) {
            return Err(load_err(format!(
                "built for contract {} but this host implements {CONTRACT_VERSION}",
                info.contract_version
            )));
        }
        if info.format.is_empty()
            || !info
                .format
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(load_err(format!("invalid format name '{}'", info.format)));
        }
        plugin.layout =
            TableLayout::from_wit(&info.layout).map_err(|e| load_err(e.message().to_string()))?;
        plugin.format = info.format.to_ascii_lowercase();
        plugin.version = info.plugin_version;
        plugin.contract_version = info.contract_version;
        Ok(plugin)
    }

    pub fn engine(&self) -> &Engine {
        self.engine.engine()
    }

    pub fn engine_settings(&self) -> &EngineSettings {
        self.engine.settings()
    }

    pub(super) fn pre(&self) -> &InstancePre<InstanceState> {
        &self.pre
    }

    pub(super) fn indices(&self) -> &LakePluginIndices {
        &self.indices
    }

    pub(super) fn maintenance(&self) -> Option<&LakeMaintenanceIndices> {
        self.maintenance.as_ref()
    }

    pub(super) fn bucket_replace(&self) -> Option<&LakeBucketReplaceIndices> {
        self.replace.as_ref()
    }

    pub(super) fn batch_write(&self) -> Option<&LakeBatchWriteIndices> {
        self.batch_write.as_ref()
    }

    /// Whether the plugin exports `batch-writer` (contract 0.3.8): writing splits whose rows
    /// stay in the host, encoded by the native data plane.
    pub fn writes_batches(&self) -> bool {
        self.batch_write.is_some()
    }

    /// Whether the plugin exports `bucket-replace` (contract 0.3.7): rebuilding a primary-key
    /// bucket from its KV snapshot after a log gap.
    pub fn replaces_buckets(&self) -> bool {
        self.replace.is_some()
    }

    /// Whether the plugin exports `maintenance` (contract 0.3.1): snapshot expiry, compaction.
    pub fn maintains_tables(&self) -> bool {
        self.maintenance.is_some()
    }

    /// The format it serves; while it loads (before `info` says), its file's name.
    pub fn name(&self) -> &str {
        if self.format.is_empty() {
            &self.file_name
        } else {
            &self.format
        }
    }

    pub fn format(&self) -> &str {
        &self.format
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn contract_version(&self) -> &str {
        &self.contract_version
    }

    /// Whether the plugin was built against contract `version` or a later compatible one (an
    /// import added in a patch version is only there from that version on).
    pub fn implements_contract(&self, version: &str) -> bool {
        contract_at_least(&self.contract_version, version)
    }

    /// Where the plugin's tables live (checked at load).
    pub fn layout(&self) -> &TableLayout {
        &self.layout
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn instance_bytes(&self) -> usize {
        self.instance_bytes
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn instantiate_time(&self) -> Duration {
        self.instantiate_time
    }

    /// Whether the plugin is embedded in the binary.
    pub fn is_builtin(&self) -> bool {
        self.builtin
    }

    pub(super) fn into_builtin(mut self) -> Self {
        self.builtin = true;
        self
    }

    /// `builtin` or `file`: where the plugin came from, for `plugins list` and metrics.
    pub fn origin(&self) -> &'static str {
        if self.builtin { "builtin" } else { "file" }
    }

    /// `format version sha256:<first 12 hex digits>`, for logs.
    pub fn describe(&self) -> String {
        format!(
            "{} {} sha256:{}",
            self.format,
            self.version,
            &self.digest[..12.min(self.digest.len())]
        )
    }
}

pub(super) fn log_loaded(plugin: &Plugin) {
    tracing::info!(
        format = plugin.format(),
        version = plugin.version(),
        contract = plugin.contract_version(),
        maintains_tables = plugin.maintains_tables(),
        origin = plugin.origin(),
        path = %shown(plugin.path()),
        sha256 = plugin.digest(),
        instantiate_us = plugin.instantiate_time().as_micros() as u64,
        "loaded plugin"
    );
}

/// The `fluss:lake` version a component imports or exports when it is not this host's, so
/// that a plugin built for another contract gets that said in one line instead of a link error.
fn other_contract_version(
    component: &wasmtime::component::Component,
    engine: &Engine,
) -> Option<String> {
    let ty = component.component_type();
    ty.imports(engine)
        .map(|(name, _)| name)
        .chain(ty.exports(engine).map(|(name, _)| name))
        .find_map(|name| {
            let version = name.strip_prefix("fluss:lake/")?.split_once('@')?.1;
            (!contract_compatible(version, CONTRACT_VERSION))
                .then(|| super::sandbox::plugin_text(version, 32))
        })
}

/// Same major version, and before 1.0 the same minor version (semver's rule for 0.x).
pub fn contract_compatible(plugin: &str, host: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64)> {
        let mut it = v.split('.');
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    };
    match (parse(plugin), parse(host)) {
        (Some((pm, pn)), Some((hm, hn))) => pm == hm && (hm > 0 || pn == hn),
        _ => false,
    }
}

/// Whether contract version `plugin` is `version` or later (by major, minor and patch).
fn contract_at_least(plugin: &str, version: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64, u64)> {
        let mut it = v.split('.').map(|p| p.parse().ok());
        Some((it.next()??, it.next()??, it.next().flatten().unwrap_or(0)))
    };
    match (parse(plugin), parse(version)) {
        (Some(p), Some(v)) => p >= v,
        _ => false,
    }
}

/// The plugins of this host, by format.
#[derive(Default)]
pub struct PluginRegistry {
    by_format: BTreeMap<String, Arc<Plugin>>,
}

impl PluginRegistry {
    /// Loads every plugin file; two plugins claiming one format is an error naming both.
    pub async fn load(engine: Arc<PluginEngine>, files: &[PluginFile]) -> Result<Self> {
        let mut registry = Self::default();
        for file in files {
            let plugin = Plugin::load_file(engine.clone(), file).await?;
            log_loaded(&plugin);
            registry.insert(Arc::new(plugin))?;
        }
        Ok(registry)
    }

    /// Adds a plugin; refuses one whose format another plugin already serves.
    pub fn insert(&mut self, plugin: Arc<Plugin>) -> Result<()> {
        if let Some(existing) = self.by_format.get(plugin.format()) {
            return Err(Error::new(
                ErrorKind::PluginLoad,
                format!(
                    "plugins {} and {} both claim format '{}'",
                    shown(existing.path()),
                    shown(plugin.path()),
                    plugin.format()
                ),
            ));
        }
        self.by_format.insert(plugin.format().to_string(), plugin);
        Ok(())
    }

    /// Adds the built-in plugins of the formats no plugin file serves; the files win.
    pub fn add_builtins(&mut self, builtins: &[Arc<Plugin>]) {
        for b in builtins {
            match self.by_format.get(b.format()) {
                Some(file) if !file.is_builtin() => {}
                _ => {
                    self.by_format.insert(b.format().to_string(), b.clone());
                }
            }
        }
    }

    /// The plugin loaded from the file `path`, if any.
    pub fn by_path(&self, path: &Path) -> Option<Arc<Plugin>> {
        self.by_format
            .values()
            .find(|p| !p.is_builtin() && p.path() == path)
            .cloned()
    }

    pub fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.by_format.values()
    }

    pub fn get(&self, format: &str) -> Option<Arc<Plugin>> {
        self.by_format.get(&format.to_ascii_lowercase()).cloned()
    }

    pub fn formats(&self) -> Vec<&str> {
        self.by_format.keys().map(String::as_str).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.by_format.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(component (import "<name>" (instance)))`.
    fn component_importing(engine: &Engine, name: &str) -> wasmtime::component::Component {
        use wasm_encoder::{
            Component, ComponentImportSection, ComponentTypeRef, ComponentTypeSection, InstanceType,
        };
        let mut types = ComponentTypeSection::new();
        types.instance(&InstanceType::new());
        let mut imports = ComponentImportSection::new();
        imports.import(name, ComponentTypeRef::Instance(0));
        let mut c = Component::new();
        c.section(&types);
        c.section(&imports);
        wasmtime::component::Component::new(engine, c.finish()).unwrap()
    }

    /// A component built for another contract version is named as such, not as a link error.
    #[test]
    fn another_contract_version_is_named() {
        let engine = Engine::default();
        let old = component_importing(&engine, "fluss:lake/logging@0.1.0");
        assert_eq!(
            other_contract_version(&old, &engine).as_deref(),
            Some("0.1.0")
        );
        let current =
            component_importing(&engine, &format!("fluss:lake/logging@{CONTRACT_VERSION}"));
        assert_eq!(other_contract_version(&current, &engine), None);
    }

    #[test]
    fn implements_contract_compares_patch_versions() {
        assert!(contract_at_least("0.3.6", "0.3.6"));
        assert!(contract_at_least("0.3.10", "0.3.6"));
        assert!(!contract_at_least("0.3.5", "0.3.6"));
        assert!(!contract_at_least("garbage", "0.3.6"));
    }

    #[test]
    fn contract_versions() {
        assert!(contract_compatible("0.3.0", "0.3.0"));
        assert!(contract_compatible("0.3.2", "0.3.0"));
        assert!(!contract_compatible("0.2.0", "0.3.0"));
        assert!(contract_compatible("1.4.0", "1.0.0"));
        assert!(!contract_compatible("2.0.0", "1.0.0"));
        assert!(!contract_compatible("garbage", "0.1.0"));
    }
}
