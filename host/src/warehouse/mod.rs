//! Where lake tables live: a warehouse URL — a local directory (`/path`, `file:///path`), an
//! S3-compatible bucket and prefix (`s3://bucket/prefix`, `s3a://…`), an Azure container
//! (`abfss://container@account.dfs.core.windows.net/prefix`, `wasbs://…`, `az://…`) or a GCS
//! bucket (`gs://bucket/prefix`) — opened as an object store, and checked once for the atomic
//! create (`put-if-absent`) every lake commit rests on.
//!
//! - [`options`]: which configuration keys configure storage (credentials, endpoint, …);
//!   they are split off the plugin configuration here, so no plugin ever sees them.
//! - [`s3`], [`azure`], [`gcs`]: each store's settings under the option names Fluss and its
//!   Java lake plugins use.
//! - [`probe`]: the startup check that the store refuses a second create of one object.
//! - [`open`]: warehouses opened and checked once per process, shared by every round.

pub mod azure;
pub mod gcs;
mod lookup;
pub mod open;
pub mod options;
pub mod probe;
pub mod s3;

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::plugin::storage::{
    LOCAL_UPLOAD_PART_SIZE, ScopedStorage, UPLOAD_PART_SIZE, validate_relative,
};

pub use open::Warehouses;
pub use options::{StorageOptions, is_storage_key};

/// An opened warehouse: its store and the prefix of the warehouse inside it.
pub struct Warehouse {
    /// The URL as configured, for logs and errors (it holds no credentials).
    url: String,
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// How paths print: `s3://bucket/prefix` or the local directory.
    display_base: String,
    /// The store lists in path order (S3, Azure and GCS do; a local directory does not).
    ordered_listing: bool,
    /// The part size of uploads (smaller for a local directory, which has no minimum).
    upload_part_size: usize,
}

/// What a warehouse URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarehouseUrl {
    /// An absolute local directory.
    Local(String),
    /// A bucket and a prefix inside it (no leading or trailing `/`; may be empty).
    S3 { bucket: String, prefix: String },
    /// An Azure Blob Storage / ADLS Gen2 container, its account and a prefix.
    Azure(azure::AzureUrl),
    /// A GCS bucket and a prefix inside it.
    Gcs { bucket: String, prefix: String },
}

impl WarehouseUrl {
    pub fn parse(url: &str) -> Result<Self> {
        let config =
            |why: String| Error::new(ErrorKind::Config, format!("warehouse '{url}' {why}"));
        if let Some((scheme, rest)) = url.split_once("://") {
            match scheme.to_ascii_lowercase().as_str() {
                "file" => return Self::parse_local(url, rest),
                "s3" | "s3a" | "gs" => {
                    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                    if bucket.is_empty() {
                        return Err(config("names no bucket".into()));
                    }
                    let prefix = prefix.trim_matches('/');
                    if !prefix.is_empty() {
                        validate_relative(prefix).map_err(|e| config(e.message))?;
                    }
                    let (bucket, prefix) = (bucket.to_string(), prefix.to_string());
                    return Ok(if scheme.eq_ignore_ascii_case("gs") {
                        Self::Gcs { bucket, prefix }
                    } else {
                        Self::S3 { bucket, prefix }
                    });
                }
                scheme @ ("abfs" | "abfss" | "wasb" | "wasbs" | "az") => {
                    let parsed = azure::AzureUrl::parse(scheme, rest).map_err(config)?;
                    if !parsed.prefix.is_empty() {
                        validate_relative(&parsed.prefix).map_err(|e| config(e.message))?;
                    }
                    return Ok(Self::Azure(parsed));
                }
                other => {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "warehouse '{url}': scheme '{other}' is not supported (supported: a local path, file://, s3://, s3a://, abfs://, abfss://, wasb://, wasbs://, az://, gs://)"
                        ),
                    ));
                }
            }
        }
        Self::parse_local(url, url)
    }

    fn parse_local(url: &str, dir: &str) -> Result<Self> {
        if !dir.starts_with('/') {
            return Err(Error::new(
                ErrorKind::Config,
                format!("warehouse '{url}' must be an absolute path"),
            ));
        }
        Ok(Self::Local(dir.trim_end_matches('/').to_string()))
    }
}

/// A store's settings error, prefixed with the warehouse it is about.
fn in_warehouse(url: &str, e: Error) -> Error {
    Error::new(e.kind(), format!("warehouse '{url}': {}", e.message()))
}

impl Warehouse {
    /// Opens the warehouse at `url` with the storage options it needs (ignored for a local
    /// directory). Connects to nothing yet: [`probe::check_atomic_create`] is the first call.
    pub fn open(url: &str, options: &StorageOptions) -> Result<Self> {
        match WarehouseUrl::parse(url)? {
            WarehouseUrl::Local(dir) => {
                std::fs::create_dir_all(&dir).map_err(|e| {
                    Error::new(
                        ErrorKind::Storage,
                        format!("cannot create warehouse directory {dir}"),
                    )
                    .with_source(e)
                })?;
                let store = object_store::local::LocalFileSystem::new_with_prefix(&dir)?;
                Ok(Self {
                    url: url.to_string(),
                    store: Arc::new(store),
                    root: Path::default(),
                    display_base: dir,
                    ordered_listing: false,
                    upload_part_size: LOCAL_UPLOAD_PART_SIZE,
                })
            }
            WarehouseUrl::S3 { bucket, prefix } => {
                let store = s3::S3Settings::from_options(options)
                    .and_then(|settings| settings.build(&bucket))
                    .map_err(|e| in_warehouse(url, e))?;
                Ok(Self::in_store(url, Arc::new(store), "s3", &bucket, &prefix))
            }
            WarehouseUrl::Azure(location) => {
                let store = azure::AzureSettings::resolve(&location, options)
                    .and_then(|settings| settings.build())
                    .map_err(|e| in_warehouse(url, e))?;
                Ok(Self {
                    url: url.to_string(),
                    store: Arc::new(store),
                    root: Path::from(location.prefix.as_str()),
                    display_base: location.display(),
                    ordered_listing: true,
                    upload_part_size: UPLOAD_PART_SIZE,
                })
            }
            WarehouseUrl::Gcs { bucket, prefix } => {
                let store = gcs::GcsSettings::from_options(options)
                    .and_then(|settings| settings.build(&bucket))
                    .map_err(|e| in_warehouse(url, e))?;
                Ok(Self::in_store(url, Arc::new(store), "gs", &bucket, &prefix))
            }
        }
    }

    /// A warehouse at `<scheme>://<bucket>/<prefix>` of `store`.
    fn in_store(
        url: &str,
        store: Arc<dyn ObjectStore>,
        scheme: &str,
        bucket: &str,
        prefix: &str,
    ) -> Self {
        Self {
            url: url.to_string(),
            store,
            root: Path::from(prefix),
            display_base: if prefix.is_empty() {
                format!("{scheme}://{bucket}")
            } else {
                format!("{scheme}://{bucket}/{prefix}")
            },
            ordered_listing: true,
            upload_part_size: UPLOAD_PART_SIZE,
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Storage confined to the warehouse's root itself (a table's location opened as a
    /// warehouse of its own: [`open::Warehouses::open_for_round`]).
    pub fn whole(&self) -> ScopedStorage {
        ScopedStorage::new(
            self.store.clone(),
            self.ordered_listing,
            self.upload_part_size,
            self.root.clone(),
            self.display_base.clone(),
        )
    }

    /// Storage confined to `location`, a table location composed by the host
    /// ([`crate::plugin::layout`]), relative to the warehouse.
    pub fn scope(&self, location: &str) -> Result<ScopedStorage> {
        let rel = validate_relative(location).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("invalid table location '{location}': {}", e.message),
            )
        })?;
        let root: Path = self.root.parts().chain(rel.parts()).collect();
        Ok(ScopedStorage::new(
            self.store.clone(),
            self.ordered_listing,
            self.upload_part_size,
            root,
            format!("{}/{location}", self.display_base),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            WarehouseUrl::parse("s3://b/wh/paimon/").unwrap(),
            WarehouseUrl::S3 {
                bucket: "b".into(),
                prefix: "wh/paimon".into()
            }
        );
        assert_eq!(
            WarehouseUrl::parse("s3a://b").unwrap(),
            WarehouseUrl::S3 {
                bucket: "b".into(),
                prefix: "".into()
            }
        );
        assert_eq!(
            WarehouseUrl::parse("gs://b/wh/iceberg/").unwrap(),
            WarehouseUrl::Gcs {
                bucket: "b".into(),
                prefix: "wh/iceberg".into()
            }
        );
        for (url, container, account, prefix) in [
            (
                "abfss://lake@acct.dfs.core.windows.net/wh/",
                "lake",
                Some("acct"),
                "wh",
            ),
            (
                "ABFS://lake@acct.dfs.core.windows.net",
                "lake",
                Some("acct"),
                "",
            ),
            (
                "wasbs://lake@acct.blob.core.windows.net/a/b",
                "lake",
                Some("acct"),
                "a/b",
            ),
            ("az://lake/wh", "lake", None, "wh"),
        ] {
            let WarehouseUrl::Azure(a) = WarehouseUrl::parse(url).unwrap() else {
                panic!("{url}: not Azure");
            };
            assert_eq!(
                (a.container.as_str(), a.account(), a.prefix.as_str()),
                (container, account, prefix),
                "{url}"
            );
        }
        assert_eq!(
            WarehouseUrl::parse("file:///tmp/wh/").unwrap(),
            WarehouseUrl::Local("/tmp/wh".into())
        );
        assert_eq!(
            WarehouseUrl::parse("/tmp/wh").unwrap(),
            WarehouseUrl::Local("/tmp/wh".into())
        );
        for (bad, kind) in [
            ("s3://", ErrorKind::Config),
            ("s3:///wh", ErrorKind::Config),
            ("s3://b/a/../c", ErrorKind::Config),
            ("gs://", ErrorKind::Config),
            ("gs://b/a/../c", ErrorKind::Config),
            (
                "abfss://lake@acct.dfs.core.windows.net/a/../c",
                ErrorKind::Config,
            ),
            ("abfss://acct.dfs.core.windows.net/wh", ErrorKind::Config),
            ("wasbs://lake/wh", ErrorKind::Config),
            ("relative/wh", ErrorKind::Config),
            ("oss://b/wh", ErrorKind::Unsupported),
            ("hdfs://nn/wh", ErrorKind::Unsupported),
        ] {
            assert_eq!(WarehouseUrl::parse(bad).unwrap_err().kind(), kind, "{bad}");
        }
    }
}
