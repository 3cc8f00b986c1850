//! Hot swap: the set of loaded plugins, replaced whole when plugin files change.
//!
//! A round takes the plugin it needs from [`PluginSet::current`] once, when it resolves its
//! table, and keeps that `Arc<Plugin>` to the end: rounds in flight finish on the version
//! they started with while the next rounds get the new one. A file whose new contents fail
//! to load (corrupt, wrong contract, digest pin, a format another plugin serves) is refused
//! and the version loaded before keeps serving. Reloads are triggered by SIGHUP and by a
//! poll of the files' identities ([`source::Fingerprint`]: size, times, inode). A file whose
//! identity has not moved since it was read is not read again, whether it was loaded or
//! refused.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use super::engine::PluginEngine;
use super::registry::{Plugin, PluginRegistry, log_loaded};
use super::sandbox::shown;
use super::source::{self, FileIdentity, Fingerprint, PluginSource};
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::health::health;
use crate::metrics::{PluginLabels, metrics};

pub struct PluginSet {
    engine: Arc<PluginEngine>,
    sources: Vec<PluginSource>,
    /// Built-in plugins, serving every format no plugin file serves (never reloaded).
    builtins: Vec<Arc<Plugin>>,
    current: RwLock<Arc<PluginRegistry>>,
    /// Serializes reloads (SIGHUP and the poll may race).
    reloading: tokio::sync::Mutex<ReloadState>,
}

/// What reloads remember between them.
struct ReloadState {
    /// The sources as the last reload looked at them.
    fingerprint: Fingerprint,
    /// What each file held when it was last read, by path.
    seen: HashMap<PathBuf, Seen>,
    /// When unused compiled code was last looked for when nothing changed.
    evicted_at: std::time::Instant,
}

impl Default for ReloadState {
    fn default() -> Self {
        Self {
            fingerprint: Fingerprint::default(),
            seen: HashMap::new(),
            evicted_at: std::time::Instant::now(),
        }
    }
}

/// How often a poll that found nothing changed looks for unused compiled code.
const EVICT_EVERY: Duration = Duration::from_secs(60);

/// A file as it was last read: the digest of a version that loaded, or why it was refused.
struct Seen {
    identity: FileIdentity,
    read_at: SystemTime,
    /// The digest of what was read; `None` when the file could not be read whole.
    digest: Option<String>,
    outcome: std::result::Result<String, String>,
}

impl Seen {
    /// Whether the file at `path` still holds what was read, as far as its identity tells.
    fn holds(&self, path: &std::path::Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| {
            FileIdentity::of(&m) == self.identity && !self.identity.is_recent(self.read_at)
        })
    }
}

/// What one reload did, for logs and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReloadReport {
    /// Files whose new version now serves (path, `format version sha256:…`).
    pub loaded: Vec<(PathBuf, String)>,
    /// Files whose new version was refused, with why; the previous version keeps serving.
    pub refused: Vec<(PathBuf, String)>,
    /// Files that disappeared; their format is no longer served.
    pub removed: Vec<PathBuf>,
}

impl PluginSet {
    /// Loads every plugin at startup, where any failure stops the host: the plugin files,
    /// and the built-in plugins of the formats no file serves.
    pub async fn load(
        engine: Arc<PluginEngine>,
        sources: Vec<PluginSource>,
        builtins: Vec<Arc<Plugin>>,
    ) -> Result<Self> {
        let fingerprint = Fingerprint::of(&sources);
        let files = source::expand(&sources)?;
        let mut registry = PluginRegistry::load(engine.clone(), &files).await?;
        for b in &builtins {
            if let Some(file) = registry.get(b.format()) {
                tracing::info!(path = %shown(file.path()), format = b.format(), "plugin file replaces the built-in plugin of its format");
            }
        }
        registry.add_builtins(&builtins);
        publish(&registry);
        let set = Self {
            engine,
            sources,
            builtins,
            current: RwLock::new(Arc::new(registry)),
            reloading: tokio::sync::Mutex::new(ReloadState {
                fingerprint,
                ..ReloadState::default()
            }),
        };
        set.evict_unused_code().await;
        Ok(set)
    }

    /// Removes from the compiled-plugin cache the code of plugins neither loaded nor built in
    /// (once unused for a while: hosts sharing the cache keep theirs).
    async fn evict_unused_code(&self) {
        let current = self.current();
        let in_use = current.plugins().chain(self.builtins.iter());
        self.engine.evict_cache(in_use.map(|p| p.digest())).await;
    }

    /// A single fixed registry (tests, `plugins inspect`).
    pub fn fixed(engine: Arc<PluginEngine>, registry: PluginRegistry) -> Self {
        Self {
            engine,
            sources: Vec::new(),
            builtins: Vec::new(),
            current: RwLock::new(Arc::new(registry)),
            reloading: tokio::sync::Mutex::new(ReloadState::default()),
        }
    }

    /// The plugins serving new rounds now.
    pub fn current(&self) -> Arc<PluginRegistry> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Re-reads the sources if their files changed since the last look (or always, when
    /// `force`), loads what changed and swaps the registry.
    pub async fn reload(&self, force: bool) -> ReloadReport {
        let mut state = self.reloading.lock().await;
        let fingerprint = Fingerprint::of(&self.sources);
        if !force && !state.fingerprint.differs(&fingerprint) {
            // The code of a plugin swapped out a while ago goes once its keep time is over.
            if state.evicted_at.elapsed() >= EVICT_EVERY {
                state.evicted_at = std::time::Instant::now();
                self.evict_unused_code().await;
            }
            return ReloadReport::default();
        }
        state.fingerprint = fingerprint;
        if force {
            // SIGHUP: the operator asks for everything to be tried again, refused files too
            // (a compile cut by a deadline on a host that was overloaded then).
            state.seen.retain(|_, seen| seen.outcome.is_ok());
        }
        let old = self.current();
        let mut report = ReloadReport::default();
        let files = match source::expand(&self.sources) {
            Ok(f) => f,
            Err(e) => {
                tracing::error!("plugin reload: {e}; keeping every plugin as it is");
                return report;
            }
        };
        // What is remembered of files no longer there goes (names are the user's to choose).
        state
            .seen
            .retain(|path, _| files.iter().any(|f| &f.path == path));
        let mut next = PluginRegistry::default();
        for file in &files {
            let previous = old.by_path(&file.path);
            let plugin = match self
                .load_if_changed(&mut state.seen, file, previous.as_ref())
                .await
            {
                Ok(Some(new)) => {
                    report.loaded.push((file.path.clone(), new.describe()));
                    new
                }
                Ok(None) => previous.expect("unchanged means it was loaded"),
                Err(e) => {
                    tracing::error!(path = %shown(&file.path), "refused the new version of a plugin, the previous one keeps serving: {e}");
                    report.refused.push((file.path.clone(), e.to_string()));
                    match previous {
                        Some(p) => p,
                        None => continue,
                    }
                }
            };
            if let Err(e) = next.insert(plugin.clone()) {
                tracing::error!("refused a plugin on reload: {e}");
                report.refused.push((file.path.clone(), e.to_string()));
                // The format keeps its previous plugin if it had one.
                if let Some(prev) = old.get(plugin.format())
                    && next.get(prev.format()).is_none()
                {
                    let _ = next.insert(prev);
                }
            }
        }
        next.add_builtins(&self.builtins);
        for plugin in old.plugins().filter(|p| !p.is_builtin()) {
            if !files.iter().any(|f| f.path == plugin.path()) {
                let now = if next.get(plugin.format()).is_some_and(|p| p.is_builtin()) {
                    "the built-in plugin serves its format again"
                } else {
                    "its format is no longer served"
                };
                tracing::warn!(path = %shown(plugin.path()), format = plugin.format(), "plugin file removed; {now}");
                report.removed.push(plugin.path().to_path_buf());
            }
        }
        publish(&next);
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        for (path, what) in &report.loaded {
            tracing::info!(path = %shown(path), plugin = %what, "plugin swapped in; rounds in flight finish on the previous version");
        }
        self.evict_unused_code().await;
        report
    }

    /// Loads `file` unless it still holds the version `previous` was loaded from. A file
    /// whose identity has not moved since it was last read is not read again: unchanged, or
    /// refused again for the reason it was refused.
    async fn load_if_changed(
        &self,
        seen: &mut HashMap<PathBuf, Seen>,
        file: &source::PluginFile,
        previous: Option<&Arc<Plugin>>,
    ) -> Result<Option<Arc<Plugin>>> {
        if let Some(last) = seen.get(&file.path)
            && last.holds(&file.path)
        {
            match &last.outcome {
                Ok(digest) if previous.is_some_and(|p| p.digest() == digest) => return Ok(None),
                Ok(_) => {}
                Err(refused) => return Err(Error::new(ErrorKind::PluginLoad, refused.clone())),
            }
        }
        let identity = std::fs::metadata(&file.path)
            .ok()
            .map(|m| FileIdentity::of(&m));
        let read_at = SystemTime::now();
        let (digest, loaded) = self.load_file(file, previous, seen.get(&file.path)).await;
        // Remembered under the identity seen before the read: a write during it moves the
        // identity, so the file is read again next time.
        if let Some(identity) = identity {
            let outcome = match &loaded {
                Ok(Some(p)) => Ok(p.digest().to_string()),
                Ok(None) => Ok(previous.map(|p| p.digest().to_string()).unwrap_or_default()),
                Err(e) if e.kind() == ErrorKind::PluginLoad => Err(e.message().to_string()),
                // Anything else (the host could not start a thread or a process) is no verdict
                // on the file: try it again next time. Compile limits are verdicts: a bomb is
                // not compiled again until it changes (or SIGHUP asks).
                Err(_) => {
                    seen.remove(&file.path);
                    return loaded;
                }
            };
            seen.insert(
                file.path.clone(),
                Seen {
                    identity,
                    read_at,
                    digest,
                    outcome,
                },
            );
        }
        loaded
    }

    /// Reads `file` and loads it unless it holds what `previous` was loaded from, or what
    /// was refused when `last` read it (a file re-read only because it had changed just
    /// before that read, git's "racily clean" case, is not compiled again). Also returns the
    /// digest read.
    async fn load_file(
        &self,
        file: &source::PluginFile,
        previous: Option<&Arc<Plugin>>,
        last: Option<&Seen>,
    ) -> (Option<String>, Result<Option<Arc<Plugin>>>) {
        let read =
            match source::read_pinned_blocking(file, self.engine.settings().max_file_bytes).await {
                Ok(read) => read,
                Err(e) => return (None, Err(e)),
            };
        let digest = Some(read.digest.clone());
        if previous.is_some_and(|p| p.digest() == read.digest) {
            return (digest, Ok(None));
        }
        if let Some(Seen {
            digest: Some(d),
            outcome: Err(refused),
            ..
        }) = last
            && *d == read.digest
        {
            return (
                digest,
                Err(Error::new(ErrorKind::PluginLoad, refused.clone())),
            );
        }
        let loaded =
            Plugin::from_bytes(self.engine.clone(), &file.path, &read.bytes, read.digest).await;
        (
            digest,
            loaded.map(|plugin| {
                log_loaded(&plugin);
                Some(Arc::new(plugin))
            }),
        )
    }

    /// Reloads on SIGHUP and whenever the files change (polled every `interval`; zero turns
    /// polling off). Runs until the process exits.
    pub async fn watch(self: Arc<Self>, interval: Duration) {
        #[cfg(unix)]
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        let poll = if interval.is_zero() {
            Duration::from_secs(3600 * 24 * 365)
        } else {
            interval
        };
        loop {
            #[cfg(unix)]
            let force = match hup.as_mut() {
                Some(h) => tokio::select! {
                    _ = h.recv() => true,
                    _ = tokio::time::sleep(poll) => false,
                },
                None => {
                    tokio::time::sleep(poll).await;
                    false
                }
            };
            #[cfg(not(unix))]
            let force = {
                tokio::time::sleep(poll).await;
                false
            };
            if force {
                tracing::info!("SIGHUP: reloading plugins");
            }
            // A reload that panics (a bug: nothing a plugin returns may panic the host) must
            // not end the watch, or hot swap would stop without a word.
            let reload = std::panic::AssertUnwindSafe(self.reload(force));
            if let Err(panic) = futures::FutureExt::catch_unwind(reload).await {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(
                    "plugin reload panicked ({what}); the plugins loaded before keep serving"
                );
            }
        }
    }
}

/// Tells the metrics and the readiness check which plugins serve new rounds.
fn publish(registry: &PluginRegistry) {
    metrics().set_loaded_plugins(registry.plugins().map(|p| {
        (
            PluginLabels::new(p.format(), p.digest()),
            p.version(),
            p.origin(),
        )
    }));
    health().set_plugins(registry.plugins().count());
}
