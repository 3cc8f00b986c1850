//! The host's client of catalog services: the Apache Iceberg REST catalog protocol
//! (`open-api/rest-catalog-open-api.yaml` in apache/iceberg), AWS Glue, the Hive Metastore,
//! and Paimon's REST catalog.
//!
//! # Why the host speaks the protocol, not the plugin
//!
//! A catalog service is a network endpoint with credentials (an OAuth2 client secret, a
//! bearer token, API-key headers), and it can change any table it serves. Plugins are hostile
//! by the project's stance: they never open sockets and never see a credential. So the host
//! holds the connection, and a plugin gets a *table-scoped capability*, the contract's
//! `table-catalog` import (WIT 0.3.5): load, create or commit to the one table its instance
//! serves. The plugin says *what* to change; the host decides *where* and *whether*:
//!
//! - the host names the table (namespace = the Fluss database), the endpoint and the
//!   credentials; nothing the plugin sends can name another table;
//! - every commit carries the host's `assert-table-uuid`, so a table dropped and created again
//!   under the same name is never committed to by a round planned on the old one;
//! - what a plugin sends is bounded in bytes and entries, must be the JSON shape the spec
//!   gives, and may only hold the requirements and updates a tiering plugin makes (snapshots,
//!   references, properties, statistics); files it references must lie under the table's
//!   location ([`validate`]);
//! - answers are bounded while they are read, and one whose metadata file lies outside the
//!   table's location is refused;
//! - every call runs under a deadline, and a commit whose outcome cannot be told (a 5xx, a
//!   lost answer) is reported as such ([`ErrorKind::CommitUnknown`]) so the caller keeps
//!   every file.
//!
//! # Parts
//!
//! - [`options`]: the catalog options (`datalake.iceberg.type=rest`, `uri`, `credential`, ...),
//!   the refusal of catalogs not implemented yet, and which keys are kept from plugins.
//! - [`rest`]: [`RestCatalog`] (one connection per catalog: `/v1/config` once, OAuth2 tokens
//!   fetched and refreshed) and [`RestTable`] (one table's load, create and commit).
//! - [`validate`]: the checks of what a plugin hands the catalog.
//! - [`pointer`]: Iceberg tables kept by a metastore that points at each table's current
//!   metadata file ([`PointerTable`]): the checks of a new metadata file and the conditional
//!   swap, the same for every such metastore.
//! - [`glue`]: the AWS Glue Data Catalog as Iceberg's `GlueCatalog` uses it ([`GlueCatalog`]:
//!   `GetTable`, `UpdateTable` under the table's `VersionId`, signed with SigV4).
//! - [`hive`]: the Hive Metastore as Iceberg's `HiveCatalog` uses it ([`HiveCatalog`]:
//!   `get_table`, `alter_table_with_environment_context` with the expected metadata location),
//!   over [`thrift`], the binary protocol's values kept whole.
//! - [`paimon_rest`]: Paimon's REST catalog ([`PaimonRestCatalog`]: a table's location and id,
//!   its latest snapshot, and the commit of a new one, which the catalog's server writes); the
//!   plugin's capability is the contract's `version-catalog` import (WIT 0.3.6).
//! - `auth`: bearer tokens (static, or OAuth2 client credentials refreshed before expiry).
//!
//! [`ErrorKind::CommitUnknown`]: crate::error::ErrorKind::CommitUnknown

mod auth;
pub mod glue;
pub mod hive;
pub mod options;
pub mod paimon_rest;
pub mod pointer;
pub mod rest;
pub mod thrift;
pub mod validate;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod glue_tests;
#[cfg(test)]
mod hive_tests;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};

pub use glue::{GlueCatalog, GlueOptions};
pub use hive::{HiveCatalog, HiveOptions};
pub use options::{CatalogAuth, CatalogKind, CatalogOptions, LakeCatalog, Secret};
pub use paimon_rest::{PaimonRestCatalog, PaimonRestOptions, PaimonRestTable};
pub use pointer::{Metastore, PointerTable};
pub use rest::{RestCatalog, RestTable};

/// A table as an Iceberg REST catalog answered it (`LoadTableResult`, `CommitTableResponse`).
#[derive(Clone)]
pub struct LoadedTable {
    /// The current metadata file, absolute, as the catalog answered it; checked to lie under
    /// [`LoadedTable::location`].
    pub metadata_location: String,
    /// The answer's `metadata` object: its exact bytes (the table metadata JSON).
    pub metadata: bytes::Bytes,
    /// The table's location (`metadata.location`), as the catalog answered it.
    pub location: String,
    /// The table's UUID (`metadata.table-uuid`).
    pub uuid: String,
    /// The answer's `config` (for a load or create), overlaid by the `storage-credentials`
    /// entry with the longest prefix of the table's location: storage settings and vended
    /// credentials (e.g. `s3.access-key-id`). Never logged by value. A table-scoped `token`
    /// is not here: the [`RestTable`] keeps it for its own requests.
    pub config: Vec<(String, String)>,
}

impl LoadedTable {
    /// The current metadata file relative to the table's location (e.g.
    /// `metadata/00003-<uuid>.metadata.json`, what the `table-catalog` import answers), whatever
    /// the spelling of either (`s3a://` or `s3://`, `file:/` or `file:///`). Always `Some` for a
    /// table this module answered: it refuses a metadata file outside the location.
    pub fn metadata_file(&self) -> Option<String> {
        validate::TableLocation::new(&self.location)?.relative(&self.metadata_location)
    }
}

impl fmt::Debug for LoadedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedTable")
            .field("metadata_location", &self.metadata_location)
            .field("metadata", &format_args!("{} bytes", self.metadata.len()))
            .field("location", &self.location)
            .field("uuid", &self.uuid)
            .field(
                "config",
                &self.config.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Longest time spent connecting to a catalog, within a call's deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client of one catalog (`catalog`, e.g. "the Glue catalog", names it in errors):
/// every request ends within `deadline` (a zero deadline is refused); redirects are never
/// followed, since they would carry the credentials elsewhere.
pub(crate) fn http_client(catalog: &str, deadline: Duration) -> Result<reqwest::Client> {
    if deadline.is_zero() {
        return Err(Error::new(
            ErrorKind::Internal,
            format!("the deadline of {catalog} is zero"),
        ));
    }
    reqwest::Client::builder()
        .timeout(deadline)
        .connect_timeout(deadline.min(CONNECT_TIMEOUT))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("fluss-lake-host/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("cannot build the HTTP client of {catalog}: {e}"),
            )
        })
}

/// The `header.<name>` options ([`options::parse_headers`]) as headers marked sensitive, so
/// that no debug output of a request shows their values.
pub(crate) fn sensitive_headers(
    headers: &[(String, Secret)],
) -> Result<reqwest::header::HeaderMap> {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        // Checked in the options already.
        let invalid = |what: &str| Error::new(ErrorKind::Config, format!("header.{name}: {what}"));
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("invalid"))?;
        let mut value =
            HeaderValue::from_str(value.expose()).map_err(|_| invalid("invalid value"))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

/// Runs one catalog call (`op` of `catalog`, e.g. "Glue catalog <endpoint>") under `deadline`.
/// When it elapses, a call that changes the table (`may_be_unknown`) and may have been sent
/// (`sent`) has an unknown outcome ([`ErrorKind::CommitUnknown`]); anything else is
/// `Unavailable`. Shared by the REST and Glue clients.
pub(crate) async fn within<T>(
    catalog: &str,
    op: &str,
    may_be_unknown: bool,
    deadline: Duration,
    sent: &AtomicBool,
    call: impl Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(deadline, call).await {
        Ok(r) => r,
        Err(_) if may_be_unknown && sent.load(Ordering::SeqCst) => Err(Error::new(
            ErrorKind::CommitUnknown,
            format!(
                "{catalog}: no answer to the {op} within {}; it may or may not have been applied",
                humantime::format_duration(deadline)
            ),
        )),
        Err(_) => Err(Error::new(
            ErrorKind::Unavailable,
            format!(
                "{catalog}: the {op} did not end within {}",
                humantime::format_duration(deadline)
            ),
        )),
    }
}
