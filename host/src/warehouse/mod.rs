//! Where lake tables live: a warehouse URL — a local directory (`/path`, `file:///path`) or an
//! S3-compatible bucket and prefix (`s3://bucket/prefix`, `s3a://…`) — opened as an object
//! store, and checked once for the atomic create (`put-if-absent`) every lake commit rests on.
//!
//! - [`options`]: which configuration keys configure storage (credentials, endpoint, …);
//!   they are split off the plugin configuration here, so no plugin ever sees them.
//! - [`s3`]: the S3 settings under the option names Fluss and its Java lake plugins use.
//! - [`probe`]: the startup check that the store refuses a second create of one object.
//! - [`open`]: warehouses opened and checked once per process, shared by every round.

pub mod open;
pub mod options;
pub mod probe;
pub mod s3;

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::plugin::storage::{ScopedStorage, validate_relative};

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
    /// The store lists in path order (S3 does; a local directory does not).
    ordered_listing: bool,
}

/// What a warehouse URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarehouseUrl {
    /// An absolute local directory.
    Local(String),
    /// A bucket and a prefix inside it (no leading or trailing `/`; may be empty).
    S3 { bucket: String, prefix: String },
}

impl WarehouseUrl {
    pub fn parse(url: &str) -> Result<Self> {
        let config =
            |why: String| Error::new(ErrorKind::Config, format!("warehouse '{url}' {why}"));
        if let Some((scheme, rest)) = url.split_once("://") {
            match scheme.to_ascii_lowercase().as_str() {
                "file" => return Self::parse_local(url, rest),
                "s3" | "s3a" => {
                    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                    if bucket.is_empty() {
                        return Err(config("names no bucket".into()));
                    }
                    let prefix = prefix.trim_matches('/');
                    if !prefix.is_empty() {
                        validate_relative(prefix).map_err(|e| config(e.message))?;
                    }
                    return Ok(Self::S3 {
                        bucket: bucket.to_string(),
                        prefix: prefix.to_string(),
                    });
                }
                other => {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "warehouse '{url}': scheme '{other}' is not supported (supported: a local path, file://, s3://, s3a://)"
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
                })
            }
            WarehouseUrl::S3 { bucket, prefix } => {
                let store = s3::S3Settings::from_options(options)
                    .and_then(|settings| settings.build(&bucket))
                    .map_err(|e| {
                        Error::new(e.kind(), format!("warehouse '{url}': {}", e.message()))
                    })?;
                Ok(Self {
                    url: url.to_string(),
                    store: Arc::new(store),
                    root: Path::from(prefix.as_str()),
                    display_base: if prefix.is_empty() {
                        format!("s3://{bucket}")
                    } else {
                        format!("s3://{bucket}/{prefix}")
                    },
                    ordered_listing: true,
                })
            }
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
            ("relative/wh", ErrorKind::Config),
            ("oss://b/wh", ErrorKind::Unsupported),
            ("hdfs://nn/wh", ErrorKind::Unsupported),
        ] {
            assert_eq!(WarehouseUrl::parse(bad).unwrap_err().kind(), kind, "{bad}");
        }
    }
}
