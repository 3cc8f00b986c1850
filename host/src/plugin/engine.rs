//! The wasmtime engine and the on-disk cache of compiled components.
//!
//! Compiling a component with Cranelift takes over a second; loading a precompiled one takes
//! under a millisecond. Compiled code is cached by the SHA-256 of the `.wasm` file and the
//! engine's compatibility hash (wasmtime version and settings), so a changed plugin or a
//! new host version never loads stale code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use super::sandbox::LogRate;
use crate::error::{Error, ErrorKind, Result};

/// Most objects one listing returns: far more than any table's metadata directory holds
/// (a Paimon table keeps a few files per retained snapshot), few enough that a listing
/// costs the host at most some tens of MiB.
pub const DEFAULT_MAX_LIST_ENTRIES: usize = 100_000;

/// Settings shared by every plugin instance.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Whether to write a perf map (`/tmp/perf-<pid>.map`) naming compiled plugin code.
    pub perf_map: bool,
    /// Linear-memory ceiling of one plugin instance, in bytes.
    pub instance_memory_limit: usize,
    /// Longest time one call into a plugin may run before it is interrupted.
    pub call_timeout: Duration,
    /// Largest byte payload (write result, committable, location, properties) a plugin may
    /// hand back to the host from one call.
    pub max_result_bytes: usize,
    /// How fast one instance may log.
    pub log_rate: LogRate,
    /// Most entries one `list-objects` call may return.
    pub max_list_entries: usize,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            cache_dir: None,
            perf_map: false,
            instance_memory_limit: 2 << 30,
            call_timeout: Duration::from_secs(600),
            max_result_bytes: 64 << 20,
            log_rate: LogRate::default(),
            max_list_entries: DEFAULT_MAX_LIST_ENTRIES,
        }
    }
}

/// How often the engine's epoch advances. Every tick running guest code yields to the async
/// runtime (so a long `write` never starves other tables) and checks its call deadline (so an
/// endless loop is interrupted); 10 ms keeps the cost of both far below 1%.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

pub struct PluginEngine {
    engine: Engine,
    settings: EngineSettings,
}

impl PluginEngine {
    pub fn new(settings: EngineSettings) -> Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        if settings.perf_map {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("cannot create the wasm engine: {e:#}"),
            )
        })?;
        spawn_epoch_ticker(&engine)?;
        Ok(Self { engine, settings })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn settings(&self) -> &EngineSettings {
        &self.settings
    }

    /// Loads a component from `bytes` (read from `origin`, SHA-256 `digest`), through the
    /// cache when enabled.
    pub fn load(&self, origin: &Path, bytes: &[u8], digest: &str) -> Result<Component> {
        let load_err = |what: String| {
            Error::new(
                ErrorKind::PluginLoad,
                format!("{}: {what}", origin.display()),
            )
        };
        if !bytes.starts_with(b"\0asm") {
            return Err(load_err("not a WebAssembly file".into()));
        }
        // Components have layer 1 in the header (bytes 6..8); core modules have layer 0.
        if bytes.len() < 8 || bytes[6..8] != [1, 0] {
            return Err(load_err(
                "a core WebAssembly module, not a component; build it for wasm32-wasip2".into(),
            ));
        }
        let cached = self.settings.cache_dir.as_ref().map(|dir| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&self.engine.precompile_compatibility_hash(), &mut h);
            let engine_tag = std::hash::Hasher::finish(&h);
            dir.join(format!("{digest}-{engine_tag:016x}.cwasm"))
        });
        if let Some(path) = &cached
            && path.exists()
        {
            // SAFETY: the file was written by `precompile_component` of an engine with the same
            // compatibility hash (it is in the name) into the host's own cache directory.
            match unsafe { Component::deserialize_file(&self.engine, path) } {
                Ok(component) => {
                    tracing::debug!(plugin = %origin.display(), cache = %path.display(), "loaded compiled plugin from cache");
                    return Ok(component);
                }
                Err(e) => {
                    tracing::warn!(cache = %path.display(), "ignoring unusable cached plugin: {e:#}");
                }
            }
        }
        let started = std::time::Instant::now();
        let compiled = self
            .engine
            .precompile_component(bytes)
            .map_err(|e| load_err(format!("not a valid component: {e:#}")))?;
        tracing::info!(plugin = %origin.display(), elapsed_ms = started.elapsed().as_millis() as u64, "compiled plugin");
        if let Some(path) = &cached
            && let Err(e) = write_atomically(path, &compiled)
        {
            tracing::warn!(cache = %path.display(), "cannot cache compiled plugin: {e}");
        }
        // SAFETY: `compiled` was just produced by this engine's `precompile_component`.
        let component = unsafe { Component::deserialize(&self.engine, &compiled) }
            .map_err(|e| load_err(format!("cannot load compiled component: {e:#}")))?;
        Ok(component)
    }
}

/// Advances the engine's epoch every [`EPOCH_TICK`] for as long as the engine lives.
fn spawn_epoch_ticker(engine: &Engine) -> Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .map(|_| ())
        .map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("cannot start the wasm epoch thread: {e}"),
            )
        })
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Unique per process and per call: two engines of one process (or two threads) may
    // cache the same plugin at once.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(tmp, path)
}
