//! Bringing the host up: plugins first (a broken plugin must stop the host before it takes
//! any table), then the configured warehouses (a store that refuses the credentials or cannot
//! make creates atomic must stop it too), then Fluss and the coordinator.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::config::HostConfig;
use crate::coordinator::CoordinatorClient;
use crate::coordinator::client::CoordinatorLocator;
use crate::error::{Error, ErrorKind, Result};
use crate::fluss::client::{CONNECT_TIMEOUT, FlussClient, coordinator_address};
use crate::fluss::cluster_config::ClusterConfig;
use crate::fluss::remote_dir::RemoteStorage;
use crate::fluss::remote_log::SegmentReader;
use crate::plugin::compile::{CompileLimits, Compiler};
use crate::plugin::engine::{EngineSettings, PluginEngine};
use crate::plugin::sandbox::LogRate;
use crate::plugin::{PluginSet, builtin};
use crate::tiering::context::TieringContext;
use crate::warehouse::{Warehouses, options};

pub async fn load_plugins(config: &HostConfig) -> Result<Arc<PluginSet>> {
    let engine = Arc::new(PluginEngine::new(EngineSettings {
        cache: config.plugin_cache.clone(),
        perf_map: config.plugin_perf_map,
        instance_memory_limit: config.plugin_memory_limit,
        call_timeout: config.plugin_call_timeout,
        max_result_bytes: config.plugin_max_result_size,
        max_file_bytes: config.plugin_max_file_size,
        compiler: Compiler::this_binary()?,
        compile_limits: CompileLimits {
            timeout: config.plugin_compile_timeout,
            memory_bytes: config.plugin_compile_memory_limit,
            ..CompileLimits::default()
        },
        log_rate: LogRate {
            per_second: config.plugin_log_rate,
            burst: config.plugin_log_rate.saturating_mul(10),
        },
        ..EngineSettings::default()
    })?);
    let builtins = if config.builtin_plugins {
        builtin::load(&engine).await?
    } else {
        Vec::new()
    };
    let plugins = PluginSet::load(engine, config.plugins.clone(), builtins).await?;
    let registry = plugins.current();
    if registry.is_empty() {
        return Err(Error::new(
            ErrorKind::NoPlugin,
            "no plugin found: --plugin-dir holds no *.wasm file",
        ));
    }
    if let Some(format) = &config.required_format
        && registry.get(format).is_none()
    {
        return Err(Error::new(
            ErrorKind::NoPlugin,
            format!(
                "--datalake.format {format}: no --plugin serves it (loaded: {})",
                registry.formats().join(", ")
            ),
        ));
    }
    Ok(Arc::new(plugins))
}

/// Opens every warehouse the host's own options name (`--datalake.<format>.warehouse`, with
/// that format's storage options) and checks each makes creates atomic. Warehouses that only
/// table properties name are opened and checked by their first round.
pub async fn open_warehouses(config: &HostConfig) -> Result<Warehouses> {
    let warehouses = Warehouses::default();
    for (format, lake_options) in &config.lake_options {
        let Some(url) = lake_options.get("warehouse") else {
            continue;
        };
        let pairs = lake_options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let (_, storage) = options::split(pairs);
        patiently("the lake store", config.startup_timeout, || async {
            warehouses.get(url, &storage).await.map_err(|e| {
                Error::new(
                    e.kind(),
                    format!("--datalake.{format}.warehouse: {}", e.message()),
                )
            })
        })
        .await?;
    }
    Ok(warehouses)
}

/// Runs `attempt` until it succeeds or fails for good: a failure that waiting may cure (the
/// cluster or store cannot be reached, is not ready, answers errors) is tried again after a
/// pause (0.5 s doubling to 5 s, one warning each) while `patience` (`--startup.timeout`)
/// lasts, so a host started with its cluster, during a coordinator failover or a store's bad
/// minute does not exit; anything else (refused credentials, a store that cannot make creates
/// atomic, a bad option) fails at once.
async fn patiently<T, F, Fut>(what: &str, patience: Duration, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let started = Instant::now();
    let mut pause = Duration::from_millis(500);
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(e)
                if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Storage)
                    && started.elapsed() + pause < patience =>
            {
                tracing::warn!(
                    "{e}; trying again in {pause:?} (startup waits up to {patience:?} for {what}: \
                     --startup.timeout)"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Finds the coordinator through fluss-rs's view of the cluster's server nodes (re-read on
/// every call, so a coordinator that moved is found).
struct AdminLocator {
    fluss: Arc<FlussClient>,
}

#[async_trait]
impl CoordinatorLocator for AdminLocator {
    async fn locate(&self) -> Result<String> {
        let nodes = self.fluss.admin().get_server_nodes().await?;
        coordinator_address(&nodes)
    }
}

pub async fn connect(
    config: HostConfig,
    plugins: Arc<PluginSet>,
    warehouses: Warehouses,
) -> Result<Arc<TieringContext>> {
    // fluss-rs's scanners read remote log segments through the host's stores; the storage
    // asks the coordinator for the cluster's credentials once both exist.
    let remote_storage = Arc::new(RemoteStorage::new(config.client_fs_options()));
    let mut client_config = config.fluss_client_config()?;
    client_config.remote_log_fetcher = Some(Arc::new(SegmentReader::new(remote_storage.clone())?));
    let fluss = Arc::new(
        patiently("the Fluss cluster", config.startup_timeout, || {
            FlussClient::connect(client_config.clone())
        })
        .await?,
    );
    let locator = Arc::new(AdminLocator {
        fluss: fluss.clone(),
    });
    let coordinator = Arc::new(
        CoordinatorClient::new(locator, config.rpc_timeout).with_sasl_plain(config.sasl_plain()?),
    );
    remote_storage.attach(coordinator.clone());
    let mut cluster =
        tokio::time::timeout(CONNECT_TIMEOUT, ClusterConfig::describe(&fluss.admin()))
            .await
            .unwrap_or_default();
    if let Some(dir) = config.fluss_options.get("remote.data.dir") {
        cluster.remote_data_dir = Some(dir.clone());
    }
    tracing::info!(remote_data_dir = ?cluster.remote_data_dir, warehouses = ?cluster.warehouses, "cluster configuration");
    let writers = Arc::new(tokio::sync::Semaphore::new(config.max_concurrent_writers));
    Ok(Arc::new(TieringContext {
        writers,
        config,
        fluss,
        coordinator,
        remote_storage,
        plugins,
        locations: Default::default(),
        warehouses,
        catalogs: Default::default(),
        cluster,
        refused_maintenance: Default::default(),
        log_gaps: Default::default(),
        maintenance: Default::default(),
        stopping: Default::default(),
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// Attempts that fail with `kind` until the `ok_at`-th, counted in `tries`.
    async fn attempt(tries: &AtomicU32, kind: ErrorKind, ok_at: u32) -> Result<u32> {
        let n = tries.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= ok_at {
            Ok(n)
        } else {
            Err(Error::new(kind, "not yet"))
        }
    }

    #[tokio::test]
    async fn what_waiting_may_cure_is_tried_again_within_the_patience() {
        let tries = AtomicU32::new(0);
        let patience = Duration::from_secs(10);
        let got = patiently("the cluster", patience, || {
            attempt(&tries, ErrorKind::Unavailable, 3)
        })
        .await
        .unwrap();
        assert_eq!(got, 3);

        let tries = AtomicU32::new(0);
        let got = patiently("the store", patience, || {
            attempt(&tries, ErrorKind::Storage, 2)
        })
        .await
        .unwrap();
        assert_eq!(got, 2);
    }

    #[tokio::test]
    async fn refusals_and_an_exhausted_patience_fail_at_once() {
        let tries = AtomicU32::new(0);
        let e = patiently("the cluster", Duration::from_secs(10), || {
            attempt(&tries, ErrorKind::Authentication, 2)
        })
        .await
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Authentication);
        assert_eq!(tries.load(Ordering::SeqCst), 1);

        let tries = AtomicU32::new(0);
        let e = patiently("the cluster", Duration::ZERO, || {
            attempt(&tries, ErrorKind::Unavailable, 2)
        })
        .await
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert_eq!(tries.load(Ordering::SeqCst), 1);
    }
}
