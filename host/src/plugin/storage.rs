//! Object storage confined to one table's lake location.
//!
//! A plugin names objects by paths relative to its table's location; this module is the only
//! place that turns those names into real object-store paths, and it refuses any name that
//! could leave the location (absolute paths, `..`, `.`, empty segments, backslashes).

use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, ErrorKind, Result};

/// Storage for one table: an object store plus the prefix every path is resolved under.
#[derive(Clone)]
pub struct ScopedStorage {
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// Human-readable location, for logs and errors.
    display_root: String,
}

/// A storage failure as the contract reports it.
#[derive(Debug)]
pub struct StorageError {
    pub kind: StorageErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageErrorKind {
    InvalidPath,
    NotFound,
    AlreadyExists,
    Io,
}

impl StorageError {
    fn new(kind: StorageErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

pub struct ObjectInfo {
    pub path: String,
    pub size: u64,
    pub last_modified_ms: i64,
}

impl ScopedStorage {
    /// Opens the local-filesystem warehouse `warehouse` and scopes it to `location`, a
    /// relative path inside it that the plugin chose for the table.
    pub fn local(warehouse: &str, location: &str) -> Result<Self> {
        let dir = warehouse.strip_prefix("file://").unwrap_or(warehouse);
        if dir.contains("://") {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "warehouse '{warehouse}': only local filesystem warehouses are supported by this host version"
                ),
            ));
        }
        if !dir.starts_with('/') {
            return Err(Error::new(
                ErrorKind::Config,
                format!("warehouse '{warehouse}' must be an absolute path"),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::new(
                ErrorKind::Storage,
                format!("cannot create warehouse directory {dir}"),
            )
            .with_source(e)
        })?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(dir)?;
        let root = validate_relative(location).map_err(|e| {
            Error::new(
                ErrorKind::Plugin,
                format!(
                    "plugin returned an invalid table location '{location}': {}",
                    e.message
                ),
            )
        })?;
        Ok(Self {
            store: Arc::new(store),
            display_root: format!("{}/{}", dir.trim_end_matches('/'), root),
            root,
        })
    }

    pub fn display_root(&self) -> &str {
        &self.display_root
    }

    fn resolve(&self, path: &str) -> Result<Path, StorageError> {
        let rel = validate_relative(path)?;
        Ok(self.root.parts().chain(rel.parts()).collect())
    }

    fn resolve_prefix(&self, prefix: &str) -> Result<Path, StorageError> {
        let trimmed = prefix.trim_end_matches('/');
        if trimmed.is_empty() {
            return Ok(self.root.clone());
        }
        self.resolve(trimmed)
    }

    fn relative(&self, full: &Path) -> String {
        full.prefix_match(&self.root)
            .map(|parts| {
                parts
                    .map(|p| p.as_ref().to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_else(|| full.to_string())
    }

    pub async fn get(&self, path: &str) -> Result<Vec<u8>, StorageError> {
        let p = self.resolve(path)?;
        let result = self.store.get(&p).await.map_err(|e| map_err(path, e))?;
        let bytes = result.bytes().await.map_err(|e| map_err(path, e))?;
        Ok(bytes.to_vec())
    }

    pub async fn put(&self, path: &str, data: Vec<u8>) -> Result<(), StorageError> {
        let p = self.resolve(path)?;
        self.store
            .put(&p, PutPayload::from(data))
            .await
            .map_err(|e| map_err(path, e))?;
        Ok(())
    }

    pub async fn put_if_absent(&self, path: &str, data: Vec<u8>) -> Result<(), StorageError> {
        let p = self.resolve(path)?;
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        self.store
            .put_opts(&p, PutPayload::from(data), opts)
            .await
            .map_err(|e| map_err(path, e))?;
        Ok(())
    }

    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, StorageError> {
        let p = self.resolve_prefix(prefix)?;
        let metas: Vec<_> = match self.store.list(Some(&p)).try_collect().await {
            Ok(m) => m,
            Err(object_store::Error::NotFound { .. }) => Vec::new(),
            Err(e) => return Err(map_err(prefix, e)),
        };
        Ok(metas
            .into_iter()
            .map(|m| ObjectInfo {
                path: self.relative(&m.location),
                size: m.size,
                last_modified_ms: m.last_modified.timestamp_millis(),
            })
            .collect())
    }

    pub async fn delete(&self, path: &str) -> Result<(), StorageError> {
        let p = self.resolve(path)?;
        match self.store.delete(&p).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(map_err(path, e)),
        }
    }

    pub async fn head(&self, path: &str) -> Result<Option<ObjectInfo>, StorageError> {
        let p = self.resolve(path)?;
        match self.store.head(&p).await {
            Ok(m) => Ok(Some(ObjectInfo {
                path: path.to_string(),
                size: m.size,
                last_modified_ms: m.last_modified.timestamp_millis(),
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(map_err(path, e)),
        }
    }
}

/// Accepts only plain relative paths: `a/b/c`, no `.`/`..`/empty segments, no leading `/`.
pub fn validate_relative(path: &str) -> Result<Path, StorageError> {
    let invalid = |why: &str| {
        StorageError::new(
            StorageErrorKind::InvalidPath,
            format!("path '{path}' {why}"),
        )
    };
    if path.is_empty() {
        return Err(invalid("is empty"));
    }
    if path.starts_with('/') {
        return Err(invalid("is absolute"));
    }
    if path.contains('\\') || path.contains('\0') {
        return Err(invalid("contains a backslash or NUL"));
    }
    for segment in path.split('/') {
        match segment {
            "" => return Err(invalid("has an empty segment")),
            "." | ".." => return Err(invalid("escapes its directory")),
            _ => {}
        }
    }
    Path::parse(path).map_err(|e| invalid(&e.to_string()))
}

fn map_err(path: &str, e: object_store::Error) -> StorageError {
    match e {
        object_store::Error::NotFound { .. } => {
            StorageError::new(StorageErrorKind::NotFound, format!("{path} not found"))
        }
        object_store::Error::AlreadyExists { .. } => StorageError::new(
            StorageErrorKind::AlreadyExists,
            format!("{path} already exists"),
        ),
        other => StorageError::new(StorageErrorKind::Io, format!("{path}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_that_escape() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../b",
            "a//b",
            "./a",
            "a\\b",
            "a/.",
        ] {
            assert_eq!(
                validate_relative(bad).unwrap_err().kind,
                StorageErrorKind::InvalidPath,
                "{bad}"
            );
        }
        assert!(validate_relative("snapshot/snapshot-1").is_ok());
    }

    #[tokio::test]
    async fn scoped_operations_stay_inside_the_location() {
        let dir = std::env::temp_dir().join(format!("scoped-storage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = ScopedStorage::local(dir.to_str().unwrap(), "db.db/t").unwrap();
        s.put("a/b.txt", b"hello".to_vec()).await.unwrap();
        assert!(dir.join("db.db/t/a/b.txt").exists());
        assert_eq!(s.get("a/b.txt").await.unwrap(), b"hello");
        s.put_if_absent("snap-1", b"1".to_vec()).await.unwrap();
        let e = s.put_if_absent("snap-1", b"2".to_vec()).await.unwrap_err();
        assert_eq!(e.kind, StorageErrorKind::AlreadyExists);
        assert_eq!(s.get("snap-1").await.unwrap(), b"1");
        let mut listed: Vec<_> = s
            .list("")
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.path)
            .collect();
        listed.sort();
        assert_eq!(listed, vec!["a/b.txt", "snap-1"]);
        assert!(s.list("missing/").await.unwrap().is_empty());
        assert_eq!(
            s.get("nope").await.unwrap_err().kind,
            StorageErrorKind::NotFound
        );
        assert!(s.head("nope").await.unwrap().is_none());
        s.delete("a/b.txt").await.unwrap();
        s.delete("a/b.txt").await.unwrap();
        assert!(ScopedStorage::local(dir.to_str().unwrap(), "../escape").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
