//! The wasmtime engine and the on-disk cache of compiled components.
//!
//! Compiling a component with Cranelift takes over a second; loading a precompiled one takes
//! under a millisecond. Compiled code is cached ([`super::cache`], authenticated) by the
//! SHA-256 of the `.wasm` file and the engine's compatibility hash (wasmtime version and
//! settings), so a changed plugin or a new host version never loads stale code.

use std::path::Path;
use std::time::Duration;

use wasmtime::component::Component;
use wasmtime::{Config, Engine};

use super::cache::{CacheSettings, PluginCache};
use super::compile::{self, CompileLimits, Compiler, Structure};
use super::sandbox::{LogRate, shown};
use crate::error::{Error, ErrorKind, Result};

/// Most objects one listing returns: far more than any table's metadata directory holds
/// (a Paimon table keeps a few files per retained snapshot), few enough that a listing
/// costs the host at most some tens of MiB.
pub const DEFAULT_MAX_LIST_ENTRIES: usize = 100_000;

/// Largest plugin file the host reads by default (`--plugin-max-file-size`): the standard
/// plugins are under 8 MiB.
pub const DEFAULT_MAX_PLUGIN_FILE_BYTES: u64 = 128 << 20;

/// Why the first bytes of a file are not a WebAssembly component; `None` when they are.
/// Checked before anything else is read or compiled.
pub fn header_problem(head: &[u8]) -> Option<&'static str> {
    if !head.starts_with(b"\0asm") {
        return Some("not a WebAssembly file");
    }
    // Components have layer 1 in the header (bytes 6..8); core modules have layer 0.
    if head.len() < 8 || head[6..8] != [1, 0] {
        return Some("a core WebAssembly module, not a component; build it for wasm32-wasip2");
    }
    None
}

/// Settings shared by every plugin instance.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Where compiled components are cached, and the key that authenticates them; `None`
    /// disables the cache.
    pub cache: Option<CacheSettings>,
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
    /// Largest plugin file read; a larger one is refused before it is read.
    pub max_file_bytes: u64,
    /// Where plugins are compiled, and the bounds of a compilation.
    pub compiler: Compiler,
    pub compile_limits: CompileLimits,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            cache: None,
            perf_map: false,
            instance_memory_limit: 2 << 30,
            call_timeout: Duration::from_secs(600),
            max_result_bytes: 64 << 20,
            log_rate: LogRate::default(),
            max_list_entries: DEFAULT_MAX_LIST_ENTRIES,
            max_file_bytes: DEFAULT_MAX_PLUGIN_FILE_BYTES,
            compiler: Compiler::default(),
            compile_limits: CompileLimits::default(),
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
    cache: Option<PluginCache>,
    /// The engine's compatibility (wasmtime version and settings), in every cache entry's name
    /// so a new host version never loads code compiled for another.
    engine_tag: String,
}

impl PluginEngine {
    pub fn new(settings: EngineSettings) -> Result<Self> {
        let engine = new_engine(settings.perf_map).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("cannot create the wasm engine: {e:#}"),
            )
        })?;
        spawn_epoch_ticker(&engine)?;
        let cache = settings.cache.as_ref().map(PluginCache::open).transpose()?;
        let engine_tag = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut h);
            format!("{:016x}", std::hash::Hasher::finish(&h))
        };
        Ok(Self {
            engine,
            settings,
            cache,
            engine_tag,
        })
    }

    /// Removes the cached code of plugins other than `in_use` (digests) once unused for a
    /// while (see [`PluginCache::evict`]), on a blocking thread.
    pub async fn evict_cache<'a>(&self, in_use: impl IntoIterator<Item = &'a str>) {
        if let Some(cache) = self.cache.clone() {
            let keep = in_use
                .into_iter()
                .map(|digest| cache.name(digest, &self.engine_tag))
                .collect();
            let _ = tokio::task::spawn_blocking(move || cache.evict(&keep)).await;
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn settings(&self) -> &EngineSettings {
        &self.settings
    }

    /// Loads a component from `bytes` (read from `origin`, SHA-256 `digest`), through the
    /// cache when enabled, after checking its structure against the compile limits and its
    /// instances' host structures against the memory limit.
    pub async fn load(&self, origin: &Path, bytes: &[u8], digest: &str) -> Result<Loaded> {
        let load_err =
            |what: String| Error::new(ErrorKind::PluginLoad, format!("{}: {what}", shown(origin)));
        if let Some(problem) = header_problem(bytes) {
            return Err(load_err(problem.into()));
        }
        // The structural pass, the cache's read and check and the deserialisation read or
        // map up to hundreds of MiB: on a blocking thread, never on a runtime worker.
        let name = self
            .cache
            .as_ref()
            .map(|cache| cache.name(digest, &self.engine_tag));
        let looked = {
            let (engine, cache, name) = (self.engine.clone(), self.cache.clone(), name.clone());
            let (limits, memory_limit) = (
                self.settings.compile_limits.clone(),
                self.settings.instance_memory_limit as u64,
            );
            let owned = bytes.to_vec();
            let origin = shown(origin);
            tokio::task::spawn_blocking(move || {
                let structure = Structure::of(&owned)?;
                if let Some(why) = structure.over(&limits.structure) {
                    return Err(why);
                }
                let instance_bytes = structure.instance_bytes();
                if instance_bytes > memory_limit {
                    return Err(format!(
                        "each instance would take {instance_bytes} bytes of host structures ({} \
                         globals, {} functions, {} core instances), over the instance memory \
                         limit of {memory_limit} bytes; refused",
                        structure.globals, structure.functions, structure.core_instances
                    ));
                }
                let (Some(cache), Some(name)) = (cache, name) else {
                    return Ok((structure, None));
                };
                let Some(artifact) = cache.get(&name, limits.max_artifact_bytes) else {
                    return Ok((structure, None));
                };
                // SAFETY: these bytes, read into memory, carry the tag of this host's cache
                // key over their name, which holds the engine's compatibility hash: they are
                // what `precompile_component` of an engine like this one wrote
                // (PluginCache::get).
                match unsafe { Component::deserialize(&engine, &artifact) } {
                    Ok(component) => {
                        tracing::debug!(plugin = %origin, cache = %name, "loaded compiled plugin from cache");
                        Ok((structure, Some(component)))
                    }
                    Err(e) => {
                        tracing::warn!(cache = %name, "ignoring unusable cached plugin: {e:#}");
                        Ok((structure, None))
                    }
                }
            })
            .await
            .map_err(|e| Error::new(ErrorKind::Internal, format!("plugin load thread: {e}")))?
        };
        let structure = match looked {
            Ok((structure, Some(component))) => {
                return Ok(Loaded {
                    component,
                    structure,
                });
            }
            Ok((structure, None)) => structure,
            Err(why) => return Err(load_err(why)),
        };
        tracing::info!(plugin = %shown(origin), bytes = bytes.len(), "compiling plugin");
        let started = std::time::Instant::now();
        let compiled = compile::compile(
            &self.engine,
            self.settings.perf_map,
            &self.settings.compiler,
            &self.settings.compile_limits,
            bytes,
        )
        .await
        .map_err(|e| match e.kind() {
            ErrorKind::PluginLoad => load_err(e.message().to_string()),
            _ => e,
        })?;
        tracing::info!(plugin = %shown(origin), elapsed_ms = started.elapsed().as_millis() as u64, "compiled plugin");
        let (engine, cache) = (self.engine.clone(), self.cache.clone());
        let component = tokio::task::spawn_blocking(move || {
            if let (Some(cache), Some(name)) = (&cache, &name)
                && let Err(e) = cache.put(name, &compiled)
            {
                tracing::warn!(cache = %shown(&cache.dir().join(name)), "cannot cache compiled plugin: {e}");
            }
            // SAFETY: `compiled` was just produced by `precompile_component` of this engine,
            // or of an engine with the same settings in the compile child, through a pipe
            // only the two processes hold.
            unsafe { Component::deserialize(&engine, &compiled) }
        })
        .await
        .map_err(|e| Error::new(ErrorKind::Internal, format!("plugin load thread: {e}")))?
        .map_err(|e| load_err(format!("cannot load compiled component: {e:#}")))?;
        Ok(Loaded {
            component,
            structure,
        })
    }
}

/// A compiled component and what its file holds.
pub struct Loaded {
    pub component: Component,
    pub structure: Structure,
}

/// The wasmtime engine plugins run on. The compile child ([`super::compile`]) builds its own
/// from the same settings, so that what it compiles loads here.
pub fn new_engine(perf_map: bool) -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    if perf_map {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    Engine::new(&config)
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
