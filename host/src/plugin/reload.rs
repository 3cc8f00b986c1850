//! Hot swap: the set of loaded plugins, replaced whole when plugin files change.
//!
//! A round takes the plugin it needs from [`PluginSet::current`] once, when it resolves its
//! table, and keeps that `Arc<Plugin>` to the end: rounds in flight finish on the version
//! they started with while the next rounds get the new one. A file whose new contents fail
//! to load (corrupt, wrong contract, digest pin, a format another plugin serves) is refused
//! and the version loaded before keeps serving. Reloads are triggered by SIGHUP and by a
//! poll of the files' size and modification time.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use super::engine::PluginEngine;
use super::registry::{Plugin, PluginRegistry, log_loaded};
use super::source::{self, PluginSource};
use crate::error::Result;
use crate::metrics::health::health;
use crate::metrics::{PluginLabels, metrics};

pub struct PluginSet {
    engine: Arc<PluginEngine>,
    sources: Vec<PluginSource>,
    /// Built-in plugins, serving every format no plugin file serves (never reloaded).
    builtins: Vec<Arc<Plugin>>,
    current: RwLock<Arc<PluginRegistry>>,
    /// Serializes reloads (SIGHUP and the poll may race).
    reloading: tokio::sync::Mutex<Fingerprint>,
}

type Fingerprint = Vec<(PathBuf, u64, Option<SystemTime>)>;

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
        let fingerprint = source::fingerprint(&sources);
        let files = source::expand(&sources)?;
        let mut registry = PluginRegistry::load(engine.clone(), &files).await?;
        for b in &builtins {
            if let Some(file) = registry.get(b.format()) {
                tracing::info!(path = %file.path().display(), format = b.format(), "plugin file replaces the built-in plugin of its format");
            }
        }
        registry.add_builtins(&builtins);
        publish(&registry);
        Ok(Self {
            engine,
            sources,
            builtins,
            current: RwLock::new(Arc::new(registry)),
            reloading: tokio::sync::Mutex::new(fingerprint),
        })
    }

    /// A single fixed registry (tests, `plugins inspect`).
    pub fn fixed(engine: Arc<PluginEngine>, registry: PluginRegistry) -> Self {
        Self {
            engine,
            sources: Vec::new(),
            builtins: Vec::new(),
            current: RwLock::new(Arc::new(registry)),
            reloading: tokio::sync::Mutex::new(Vec::new()),
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
        let mut last = self.reloading.lock().await;
        let fingerprint = source::fingerprint(&self.sources);
        if !force && *last == fingerprint {
            return ReloadReport::default();
        }
        *last = fingerprint;
        let old = self.current();
        let mut report = ReloadReport::default();
        let files = match source::expand(&self.sources) {
            Ok(f) => f,
            Err(e) => {
                tracing::error!("plugin reload: {e}; keeping every plugin as it is");
                return report;
            }
        };
        let mut next = PluginRegistry::default();
        for file in &files {
            let previous = old.by_path(&file.path);
            let plugin = match self.load_if_changed(file, previous.as_ref()).await {
                Ok(Some(new)) => {
                    report.loaded.push((file.path.clone(), new.describe()));
                    new
                }
                Ok(None) => previous.expect("unchanged means it was loaded"),
                Err(e) => {
                    tracing::error!(path = %file.path.display(), "refused the new version of a plugin, the previous one keeps serving: {e}");
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
                tracing::warn!(path = %plugin.path().display(), format = plugin.format(), "plugin file removed; {now}");
                report.removed.push(plugin.path().to_path_buf());
            }
        }
        publish(&next);
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(next);
        for (path, what) in &report.loaded {
            tracing::info!(path = %path.display(), plugin = %what, "plugin swapped in; rounds in flight finish on the previous version");
        }
        report
    }

    /// Loads `file` unless it still holds the version `previous` was loaded from.
    async fn load_if_changed(
        &self,
        file: &source::PluginFile,
        previous: Option<&Arc<Plugin>>,
    ) -> Result<Option<Arc<Plugin>>> {
        let (bytes, digest) = source::read_pinned(file)?;
        if previous.is_some_and(|p| p.digest() == digest) {
            return Ok(None);
        }
        let plugin = Plugin::from_bytes(self.engine.clone(), &file.path, &bytes, digest).await?;
        log_loaded(&plugin);
        Ok(Some(Arc::new(plugin)))
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
