//! The host's connection to Fluss (fluss-rs), and its repair.
//!
//! fluss-rs caches the cluster's metadata. After a tablet server crashes, that cache can
//! lose the coordinator for good ("Coordinator server not found in cluster metadata"), and
//! every admin call of every table then fails until the process restarts. The client here
//! can be repaired: [`FlussClient::repair`] replaces the whole connection (metadata from
//! the bootstrap servers, server connections; scanners are created per split, so new splits
//! use the new one) once the new one sees a coordinator. Rounds in flight keep the
//! connection they started with.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use fluss::client::{FlussAdmin, FlussConnection};

use crate::error::{Error, ErrorKind, Result};

/// How long connecting or checking the cluster may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Repairs are at most this frequent, however many rounds fail meanwhile.
const MIN_REPAIR_INTERVAL: Duration = Duration::from_secs(5);

struct Connected {
    conn: Arc<FlussConnection>,
    admin: Arc<FlussAdmin>,
}

pub struct FlussClient {
    config: fluss::config::Config,
    current: RwLock<Arc<Connected>>,
    last_repair: tokio::sync::Mutex<Option<Instant>>,
}

impl FlussClient {
    /// Connects to the cluster at `config.bootstrap_servers` (one attempt; startup retries).
    pub async fn connect(config: fluss::config::Config) -> Result<Self> {
        let connected = open(&config).await?;
        Ok(Self {
            config,
            current: RwLock::new(Arc::new(connected)),
            last_repair: tokio::sync::Mutex::new(None),
        })
    }

    fn current(&self) -> Arc<Connected> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn conn(&self) -> Arc<FlussConnection> {
        self.current().conn.clone()
    }

    pub fn admin(&self) -> Arc<FlussAdmin> {
        self.current().admin.clone()
    }

    /// Drops what the client cached of `path` (its info, partitions, bucket leaders). fluss-rs
    /// keeps every table it was ever asked about and copies that whole cache on each refresh,
    /// which every offsets and table-info request forces: kept for every table ever tiered,
    /// a host serving a thousand tables spent a third of its CPU copying it, each round
    /// costing more the more tables came before. A round forgets its table when it ends (its
    /// next round asks Fluss afresh anyway), so the cache holds the tables in flight.
    pub fn forget_table(&self, path: &fluss::metadata::TablePath) {
        self.current()
            .conn
            .get_metadata()
            .evict_table_metadata(path);
    }

    /// Tables the client's metadata cache holds now.
    pub fn cached_tables(&self) -> usize {
        self.current()
            .conn
            .get_metadata()
            .get_cluster()
            .get_table_info_by_path()
            .len()
    }

    /// Replaces the connection with a new one that sees the cluster (a coordinator among its
    /// servers). At most once per [`MIN_REPAIR_INTERVAL`]; returns whether it was replaced.
    pub async fn repair(&self) -> bool {
        let mut last = self.last_repair.lock().await;
        if last.is_some_and(|t| t.elapsed() < MIN_REPAIR_INTERVAL) {
            return false;
        }
        *last = Some(Instant::now());
        match open(&self.config).await {
            Ok(connected) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(connected);
                tracing::warn!("replaced the Fluss client: new metadata and connections");
                true
            }
            Err(e) => {
                tracing::warn!("cannot reconnect to Fluss yet: {e}");
                false
            }
        }
    }
}

/// A new connection that sees a coordinator.
async fn open(config: &fluss::config::Config) -> Result<Connected> {
    let servers = config.bootstrap_servers.clone();
    let unreachable = |e: Option<fluss::error::Error>| {
        if let Some(fluss::error::Error::FlussAPIError { api_error }) = &e
            && api_error.code == crate::coordinator::api::errors::AUTHENTICATE_EXCEPTION
        {
            return Error::new(
                ErrorKind::Authentication,
                crate::coordinator::client::sasl_refusal(
                    &format!("the Fluss cluster at {servers}"),
                    &config.security_sasl_username,
                    &api_error.message,
                ),
            );
        }
        let err = Error::new(
            ErrorKind::Unavailable,
            format!("cannot reach the Fluss cluster at {servers}"),
        );
        match e {
            Some(e) => err.with_source(e),
            None => err,
        }
    };
    let conn = tokio::time::timeout(CONNECT_TIMEOUT, FlussConnection::new(config.clone()))
        .await
        .map_err(|_| unreachable(None))?
        .map_err(|e| unreachable(Some(e)))?;
    let admin = conn.get_admin().map_err(|e| unreachable(Some(e)))?;
    sees_coordinator(&admin).await?;
    Ok(Connected {
        conn: Arc::new(conn),
        admin,
    })
}

/// Re-reads the cluster's servers (fluss-rs re-bootstraps its metadata for this) and checks
/// a coordinator is among them.
async fn sees_coordinator(admin: &FlussAdmin) -> Result<()> {
    let nodes = tokio::time::timeout(CONNECT_TIMEOUT, admin.get_server_nodes())
        .await
        .map_err(|_| {
            Error::new(
                ErrorKind::Unavailable,
                "listing the Fluss servers timed out",
            )
        })?
        .map_err(|e| {
            Error::new(ErrorKind::Unavailable, "cannot list the Fluss servers").with_source(e)
        })?;
    coordinator_address(&nodes).map(|_| ())
}

/// `host:port` of the coordinator among the cluster's `nodes`.
pub fn coordinator_address(nodes: &[fluss::ServerNode]) -> Result<String> {
    nodes
        .iter()
        .find(|n| *n.server_type() == fluss::ServerType::CoordinatorServer)
        .map(|n| format!("{}:{}", n.host(), n.port()))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                "the Fluss cluster reports no coordinator",
            )
        })
}
