//! Object storage confined to one table's lake location.
//!
//! A plugin names objects by paths relative to its table's location; this module is the only
//! place that turns those names into real object-store paths, and it refuses any name that
//! could leave the location (absolute paths, `..`, `.`, empty segments, backslashes).
//!
//! It also bounds what a plugin can make the host spend: every write is charged to the
//! round's [`StorageQuota`], a `get` of an object larger than the caller can hold is refused
//! before it is read, and a listing stops at a bounded number of entries.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

/// Storage for one table: an object store plus the prefix every path is resolved under.
#[derive(Clone)]
pub struct ScopedStorage {
    store: Arc<dyn ObjectStore>,
    root: Path,
    /// Human-readable location, for logs and errors.
    display_root: String,
    /// What the round these calls belong to may still write.
    quota: Arc<StorageQuota>,
}

/// How much one round may write through storage: bytes and objects, over every instance of
/// the round together. A write over the quota is refused before anything is stored, and the
/// quota remembers it, so the round fails even if the plugin ignores the error.
pub struct StorageQuota {
    max_bytes: u64,
    max_objects: u64,
    bytes: AtomicU64,
    objects: AtomicU64,
    exceeded: AtomicBool,
}

impl StorageQuota {
    pub fn new(max_bytes: u64, max_objects: u64) -> Arc<Self> {
        Arc::new(Self {
            max_bytes,
            max_objects,
            bytes: AtomicU64::new(0),
            objects: AtomicU64::new(0),
            exceeded: AtomicBool::new(false),
        })
    }

    pub fn unlimited() -> Arc<Self> {
        Self::new(u64::MAX, u64::MAX)
    }

    /// Charges one object of `len` bytes; refuses it when the round would go over.
    fn charge(&self, path: &str, len: u64) -> Result<(), StorageError> {
        let objects = self
            .objects
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1);
        let bytes = self
            .bytes
            .fetch_add(len, Ordering::Relaxed)
            .saturating_add(len);
        if objects > self.max_objects || bytes > self.max_bytes {
            self.exceeded.store(true, Ordering::Relaxed);
            return Err(StorageError::new(
                StorageErrorKind::LimitExceeded,
                format!("{path}: {}", self.describe()),
            ));
        }
        Ok(())
    }

    /// The quota was hit: what it is, for the round's error.
    pub fn exceeded(&self) -> Option<String> {
        self.exceeded
            .load(Ordering::Relaxed)
            .then(|| self.describe())
    }

    fn describe(&self) -> String {
        format!(
            "over the round's storage quota of {} bytes in {} objects",
            self.max_bytes, self.max_objects
        )
    }
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
    /// The request is over a sandbox bound (quota, object size, listing size).
    LimitExceeded,
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

#[derive(Debug)]
pub struct ObjectInfo {
    pub path: String,
    pub size: u64,
    pub last_modified_ms: i64,
}

impl ScopedStorage {
    /// Storage for the objects under `root` in `store`; `display_root` names the location in
    /// logs and errors. Built by [`crate::warehouse::Warehouse::scope`].
    pub fn new(store: Arc<dyn ObjectStore>, root: Path, display_root: String) -> Self {
        Self {
            store,
            root,
            display_root,
            quota: StorageQuota::unlimited(),
        }
    }

    /// Charges every write through this storage (and its clones) to `quota`.
    pub fn with_quota(mut self, quota: Arc<StorageQuota>) -> Self {
        self.quota = quota;
        self
    }

    pub fn quota(&self) -> &StorageQuota {
        &self.quota
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

    /// Reads a whole object of at most `max_bytes` bytes (what the caller can hold); a larger
    /// one is refused before it is read. The bytes are not copied on the way.
    pub async fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, StorageError> {
        let p = self.resolve(path)?;
        let result = self.store.get(&p).await.map_err(|e| map_err(path, e))?;
        if result.meta.size > max_bytes {
            return Err(StorageError::new(
                StorageErrorKind::LimitExceeded,
                format!(
                    "{path} is {} bytes, more than the {max_bytes} bytes a plugin instance may hold",
                    result.meta.size
                ),
            ));
        }
        let bytes = result.bytes().await.map_err(|e| map_err(path, e))?;
        Ok(Vec::from(bytes))
    }

    pub async fn put(&self, path: &str, data: Vec<u8>) -> Result<(), StorageError> {
        let p = self.resolve(path)?;
        self.quota.charge(path, data.len() as u64)?;
        self.store
            .put(&p, PutPayload::from(data))
            .await
            .map_err(|e| map_err(path, e))?;
        Ok(())
    }

    pub async fn put_if_absent(&self, path: &str, data: Vec<u8>) -> Result<(), StorageError> {
        let p = self.resolve(path)?;
        self.quota.charge(path, data.len() as u64)?;
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

    /// Lists the objects under `prefix`; more than `max_entries` is an error, found without
    /// holding more than `max_entries` entries.
    pub async fn list(
        &self,
        prefix: &str,
        max_entries: usize,
    ) -> Result<Vec<ObjectInfo>, StorageError> {
        let p = self.resolve_prefix(prefix)?;
        let mut listing = self.store.list(Some(&p));
        let mut out = Vec::new();
        loop {
            let meta = match listing.try_next().await {
                Ok(Some(m)) => m,
                Ok(None) | Err(object_store::Error::NotFound { .. }) => break,
                Err(e) => return Err(map_err(prefix, e)),
            };
            if out.len() == max_entries {
                return Err(StorageError::new(
                    StorageErrorKind::LimitExceeded,
                    format!(
                        "more than {max_entries} objects under '{prefix}': list a narrower prefix"
                    ),
                ));
            }
            out.push(ObjectInfo {
                path: self.relative(&meta.location),
                size: meta.size,
                last_modified_ms: meta.last_modified.timestamp_millis(),
            });
        }
        Ok(out)
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
        other => StorageError::new(
            StorageErrorKind::Io,
            format!("{path}: {}", crate::error::store_message(&other)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(warehouse: &str, location: &str) -> ScopedStorage {
        crate::warehouse::Warehouse::open(warehouse, &Default::default())
            .unwrap()
            .scope(location)
            .unwrap()
    }

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
        let s = local(dir.to_str().unwrap(), "db.db/t");
        s.put("a/b.txt", b"hello".to_vec()).await.unwrap();
        assert!(dir.join("db.db/t/a/b.txt").exists());
        assert_eq!(s.get("a/b.txt", 5).await.unwrap(), b"hello");
        assert_eq!(
            s.get("a/b.txt", 4).await.unwrap_err().kind,
            StorageErrorKind::LimitExceeded,
            "an object larger than the caller can hold is refused"
        );
        s.put_if_absent("snap-1", b"1".to_vec()).await.unwrap();
        let e = s.put_if_absent("snap-1", b"2".to_vec()).await.unwrap_err();
        assert_eq!(e.kind, StorageErrorKind::AlreadyExists);
        assert_eq!(s.get("snap-1", 1).await.unwrap(), b"1");
        let mut listed: Vec<_> = s
            .list("", 2)
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.path)
            .collect();
        listed.sort();
        assert_eq!(listed, vec!["a/b.txt", "snap-1"]);
        assert_eq!(
            s.list("", 1).await.unwrap_err().kind,
            StorageErrorKind::LimitExceeded
        );
        assert!(s.list("missing/", 1).await.unwrap().is_empty());
        assert_eq!(
            s.get("nope", 1).await.unwrap_err().kind,
            StorageErrorKind::NotFound
        );
        assert!(s.head("nope").await.unwrap().is_none());
        s.delete("a/b.txt").await.unwrap();
        s.delete("a/b.txt").await.unwrap();
        let wh =
            crate::warehouse::Warehouse::open(dir.to_str().unwrap(), &Default::default()).unwrap();
        assert!(wh.scope("../escape").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_round_cannot_write_past_its_quota() {
        let dir = std::env::temp_dir().join(format!("quota-storage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let quota = StorageQuota::new(10, 3);
        let a = local(dir.to_str().unwrap(), "db/t").with_quota(quota.clone());
        let b = a.clone();
        a.put("1", vec![0; 4]).await.unwrap();
        b.put_if_absent("2", vec![0; 4]).await.unwrap();
        assert!(quota.exceeded().is_none());
        // 12 bytes: over, and nothing is written.
        let e = a.put("3", vec![0; 4]).await.unwrap_err();
        assert_eq!(e.kind, StorageErrorKind::LimitExceeded);
        assert!(!dir.join("db/t/3").exists());
        assert!(quota.exceeded().unwrap().contains("10 bytes in 3 objects"));
        // Objects count too.
        let quota = StorageQuota::new(u64::MAX, 1);
        let c = a.with_quota(quota.clone());
        c.put("4", Vec::new()).await.unwrap();
        assert!(c.put("5", Vec::new()).await.is_err());
        assert!(quota.exceeded().is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
