//! The values a round is made of, shared by the modules it flows through: what every round
//! shares ([`TieringContext`]), what the coordinator assigned ([`Assignment`]), the table a
//! round resolved ([`ResolvedTable`]), what each split produced ([`SplitResult`]) and how a
//! round ended ([`RoundOutcome`]).

use std::sync::Arc;

use fluss::metadata::TablePath;
use tokio_util::sync::CancellationToken;

use crate::catalog::{CatalogOptions, PaimonRestCatalog, PaimonRestOptions, RestCatalog};
use crate::config::HostConfig;
use crate::coordinator::CoordinatorClient;
use crate::fluss::client::FlussClient;
use crate::fluss::cluster_config::ClusterConfig;
use crate::fluss::reader::BucketRange;
use crate::fluss::remote_dir::RemoteStorage;
use crate::plugin::sandbox::{LocationClaim, LocationClaims};
use crate::plugin::storage::ScopedStorage;
use crate::plugin::table_catalog::TableCatalogScope;
use crate::plugin::{Plugin, PluginSet, wit};
use crate::tiering::maintenance::{Keep, MaintenanceLedger, RefusedMaintenance};
use crate::tiering::routing::Route;
use crate::tiering::splits::LogGapSuspects;
use crate::warehouse::Warehouses;

/// What every round shares.
pub struct TieringContext {
    pub config: HostConfig,
    /// The connection to Fluss, repaired when its metadata goes bad.
    pub fluss: Arc<FlussClient>,
    pub coordinator: Arc<CoordinatorClient>,
    /// The cluster's remote storage (offsets files; fluss-rs's scanners read log segments
    /// through it too).
    pub remote_storage: Arc<RemoteStorage>,
    /// The plugins serving new rounds; swapped as a whole on hot swap.
    pub plugins: Arc<PluginSet>,
    /// The lake locations of the rounds in flight, which may never overlap.
    pub locations: LocationClaims,
    /// What the cluster says about tiering (remote data dir, its lake warehouses).
    pub cluster: ClusterConfig,
    /// The warehouses rounds write to, each opened and checked once.
    pub warehouses: Warehouses,
    /// The catalogs rounds commit through, each connected once.
    pub catalogs: Catalogs,
    /// Tables already told that their plugin does not maintain tables.
    pub refused_maintenance: RefusedMaintenance,
    /// Tables whose log was found shorter than their lake expected.
    pub log_gaps: LogGapSuspects,
    /// What each table's last commit asked Fluss to keep and when it was last maintained:
    /// decides whether a round with nothing to commit maintains the table.
    pub maintenance: MaintenanceLedger,
    /// Plugin instances writing splits, over every table (`--lake.tiering.max-concurrent-writers`):
    /// a writing instance holds a permit from its creation until it is dropped.
    pub writers: Arc<tokio::sync::Semaphore>,
    /// Cancelled when the host begins to shut down. Rounds in flight get the grace period to
    /// finish their writes and commits, but maintenance, which only ever runs after a round's
    /// commits and can always be left for later, stops at once so that the host exits promptly.
    pub stopping: CancellationToken,
}

/// The REST catalogs of the process (Iceberg's and Paimon's): one connection (configuration, token, HTTP pool) per
/// set of catalog options, shared by every round. A failed connection is not remembered, so a
/// catalog that was down is tried again by the next round.
#[derive(Default)]
pub struct Catalogs {
    connected: tokio::sync::Mutex<Vec<(CatalogOptions, RestCatalog)>>,
    paimon: tokio::sync::Mutex<Vec<(PaimonRestOptions, PaimonRestCatalog)>>,
}

impl Catalogs {
    /// The catalog `options` name, connected.
    pub async fn get(
        &self,
        options: &CatalogOptions,
        timeout: std::time::Duration,
    ) -> crate::error::Result<RestCatalog> {
        let mut connected = self.connected.lock().await;
        if let Some((_, catalog)) = connected.iter().find(|(o, _)| o == options) {
            return Ok(catalog.clone());
        }
        let catalog = RestCatalog::connect(options, timeout).await?;
        connected.push((options.clone(), catalog.clone()));
        Ok(catalog)
    }

    /// The Paimon REST catalog `options` name, connected.
    pub async fn paimon(
        &self,
        options: &PaimonRestOptions,
        timeout: std::time::Duration,
    ) -> crate::error::Result<PaimonRestCatalog> {
        let mut connected = self.paimon.lock().await;
        if let Some((_, catalog)) = connected.iter().find(|(o, _)| o == options) {
            return Ok(catalog.clone());
        }
        let catalog = PaimonRestCatalog::connect(options, timeout).await?;
        connected.push((options.clone(), catalog.clone()));
        Ok(catalog)
    }
}

/// A table the coordinator assigned to this host.
#[derive(Debug, Clone)]
pub struct Assignment {
    pub table_id: i64,
    pub path: TablePath,
    pub tiering_epoch: i64,
    /// The coordinator epoch the table was assigned under.
    pub coordinator_epoch: i32,
}

impl Assignment {
    /// Whether `other` is this very round: same table, same tiering epoch *and* same
    /// coordinator epoch (a new coordinator restarts tiering epochs, so the tiering epoch
    /// alone can name two different rounds).
    pub fn is_same_round(&self, other: &Assignment) -> bool {
        self.table_id == other.table_id
            && self.tiering_epoch == other.tiering_epoch
            && self.coordinator_epoch == other.coordinator_epoch
    }
}

/// How a successful round ended.
#[derive(Debug, Clone, Default)]
pub struct RoundOutcome {
    /// The lake snapshot created, none when there was nothing to tier.
    pub snapshot_id: Option<i64>,
    pub stats: Option<wit::TieringStats>,
    pub rows: u64,
    /// The round hit the table's freshness and committed only part of its splits.
    pub force_finished: bool,
    /// What Fluss keeps registered after this round's commit (the snapshot it registered,
    /// an older one it keeps for readers, or every one): maintenance keeps at least that.
    /// None when nothing was committed.
    pub keep: Option<Keep>,
}

/// A round's resolved table: metadata, plugin and storage scope.
pub struct ResolvedTable {
    pub info: fluss::metadata::TableInfo,
    pub wit_info: wit::TableInfo,
    pub plugin: Arc<Plugin>,
    pub plugin_config: Vec<(String, String)>,
    pub storage: ScopedStorage,
    /// The catalog that keeps the lake table (files alone, or a REST catalog).
    pub catalog: TableCatalogScope,
    pub route: Route,
    /// The metastore lock the table's writers commit under (Paimon's `lock.enabled` with a
    /// Hive Metastore), if any: the plugin's commit and maintenance run holding it.
    pub commit_lock: Option<CommitLock>,
    /// Held for the whole round: no other table may use this location meanwhile.
    pub(super) _location: LocationClaim,
}

/// A metastore's lock of one table.
#[derive(Debug, Clone)]
pub struct CommitLock {
    pub metastore: crate::catalog::HiveCatalog,
    pub database: String,
    pub table: String,
}

impl ResolvedTable {
    /// Runs `work` (a call that commits to the lake table) under the table's
    /// [`CommitLock`], or as it is when it has none. An error when the lock is not granted
    /// (then `work` has not run).
    pub async fn under_commit_lock<T>(
        &self,
        work: impl Future<Output = T>,
    ) -> crate::error::Result<T> {
        match &self.commit_lock {
            None => Ok(work.await),
            Some(l) => l.metastore.locked(&l.database, &l.table, work).await,
        }
    }

    /// What the plugin's committer (and its maintenance) is opened with: the table, its
    /// plugin configuration and the host's `lake.tiering.*` options.
    pub fn committer_context(&self, ctx: &TieringContext) -> wit::CommitterContext {
        wit::CommitterContext {
            table: self.wit_info.clone(),
            config: self.plugin_config.clone(),
            tiering_config: ctx
                .config
                .tiering_options
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

/// What one split produced.
pub struct SplitResult {
    pub range: BucketRange,
    /// Exclusive offset the bucket was read up to (its stop offset when complete); none when
    /// the round was force-finished before this split wrote anything.
    pub end_offset: Option<i64>,
    /// Newest commit timestamp of the rows written; none when no row carried one.
    pub max_timestamp: Option<i64>,
    pub rows: u64,
    pub write_result: wit::WriteResult,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_named_by_both_epochs() {
        let a = Assignment {
            table_id: 1,
            path: TablePath::new("fluss".to_string(), "t".to_string()),
            tiering_epoch: 1,
            coordinator_epoch: 0,
        };
        assert!(a.is_same_round(&a.clone()));
        // After a coordinator failover the new coordinator hands out tiering epoch 1 again.
        let after_failover = Assignment {
            coordinator_epoch: 1,
            ..a.clone()
        };
        assert!(!a.is_same_round(&after_failover));
        let next = Assignment {
            tiering_epoch: 2,
            ..a.clone()
        };
        assert!(!a.is_same_round(&next));
    }
}
