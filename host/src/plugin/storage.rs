//! Object storage confined to one table's lake location.
//!
//! A plugin names objects by paths relative to its table's location; this module is the only
//! place that turns those names into real object-store paths, and it refuses any name that
//! could leave the location (absolute paths, `..`, `.`, empty segments, backslashes).
//!
//! It also bounds what a plugin can make the host spend: every write is charged to the
//! round's [`StorageQuota`], a `get` of an object (or range) larger than the caller can hold
//! is refused before it is read, a listing page holds a bounded number of entries, and an
//! [`Upload`] holds at most [`UPLOAD_PARTS_IN_FLIGHT`] parts of the store's part size (at most
//! [`UPLOAD_PART_SIZE`] bytes).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};

/// The part size of uploads to an object store: parts go to the store as they fill (S3's
/// minimum is 5 MiB). The largest part size of any store.
pub const UPLOAD_PART_SIZE: usize = 8 << 20;

/// The part size of uploads to a local directory: a part is a write at its offset, with no
/// minimum and no per-request cost, so an upload holds less while it waits.
pub const LOCAL_UPLOAD_PART_SIZE: usize = 1 << 20;

/// Parts of one upload on their way to the store at once; a `write` waits for room, so an
/// upload holds at most this many parts plus the one filling.
pub const UPLOAD_PARTS_IN_FLIGHT: usize = 2;

/// Storage for one table: an object store plus the prefix every path is resolved under.
#[derive(Clone)]
pub struct ScopedStorage {
    store: Arc<dyn ObjectStore>,
    /// The store lists in path order (S3): a listing page can stop at its end.
    ordered_listing: bool,
    /// The part size of its uploads.
    upload_part_size: usize,
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
    /// When the round first wrote (an object started, or bytes of one): how long a round
    /// takes to get going is measured up to here (`round_first_write_seconds`).
    first_write: OnceLock<Instant>,
}

impl StorageQuota {
    pub fn new(max_bytes: u64, max_objects: u64) -> Arc<Self> {
        Arc::new(Self {
            max_bytes,
            max_objects,
            bytes: AtomicU64::new(0),
            objects: AtomicU64::new(0),
            exceeded: AtomicBool::new(false),
            first_write: OnceLock::new(),
        })
    }

    pub fn unlimited() -> Arc<Self> {
        Self::new(u64::MAX, u64::MAX)
    }

    /// Charges one object of `len` bytes; refuses it when the round would go over.
    fn charge(&self, path: &str, len: u64) -> Result<(), StorageError> {
        self.charge_objects_and_bytes(path, 1, len)
    }

    /// Charges `objects` objects and `len` bytes (an upload: one object when it starts, its
    /// bytes as they are written).
    fn charge_objects_and_bytes(
        &self,
        path: &str,
        objects: u64,
        len: u64,
    ) -> Result<(), StorageError> {
        let objects = self
            .objects
            .fetch_add(objects, Ordering::Relaxed)
            .saturating_add(objects);
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
        if objects > 0 || bytes > 0 {
            self.first_write.get_or_init(Instant::now);
        }
        Ok(())
    }

    /// When the round first wrote something through storage; none while it has not.
    pub fn first_write(&self) -> Option<Instant> {
        self.first_write.get().copied()
    }

    /// Objects charged so far (data and metadata files the round wrote).
    pub fn objects_written(&self) -> u64 {
        self.objects.load(Ordering::Relaxed)
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
    pub(super) fn new(kind: StorageErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// One page of a listing ([`ScopedStorage::list_page`]).
#[derive(Debug)]
pub struct ListPage {
    pub objects: Vec<ObjectInfo>,
    pub next: Option<String>,
}

/// An object being written in parts: invisible until [`Upload::complete`]; aborted when
/// dropped unfinished (an instance that ends or is killed mid-upload leaves nothing).
pub struct Upload {
    path: String,
    part_size: usize,
    writer: Option<WriteMultipart>,
    quota: Arc<StorageQuota>,
    written: u64,
}

impl Upload {
    fn writer(&mut self) -> Result<&mut WriteMultipart, StorageError> {
        let path = &self.path;
        self.writer.as_mut().ok_or_else(|| {
            StorageError::new(
                StorageErrorKind::InvalidPath,
                format!("the upload of {path} is finished"),
            )
        })
    }

    /// Appends `data`, a part at a time: waits while [`UPLOAD_PARTS_IN_FLIGHT`] parts are on
    /// their way, so the upload never holds more.
    /// A write over the quota aborts the upload: nothing of it can become visible.
    pub async fn write(&mut self, data: &[u8]) -> Result<(), StorageError> {
        if let Err(e) = self
            .quota
            .charge_objects_and_bytes(&self.path, 0, data.len() as u64)
        {
            let _ = self.abort().await;
            return Err(e);
        }
        let path = self.path.clone();
        for chunk in data.chunks(self.part_size) {
            let writer = self.writer()?;
            writer
                .wait_for_capacity(UPLOAD_PARTS_IN_FLIGHT)
                .await
                .map_err(|e| map_err(&path, e))?;
            writer.write(chunk);
        }
        self.written += data.len() as u64;
        Ok(())
    }

    /// Makes the object visible; its size.
    pub async fn complete(&mut self) -> Result<u64, StorageError> {
        let path = self.path.clone();
        let writer = self.writer.take().ok_or_else(|| {
            StorageError::new(
                StorageErrorKind::InvalidPath,
                format!("the upload of {path} is finished"),
            )
        })?;
        writer.finish().await.map_err(|e| map_err(&path, e))?;
        Ok(self.written)
    }

    /// Discards the upload.
    pub async fn abort(&mut self) -> Result<(), StorageError> {
        match self.writer.take() {
            Some(w) => w.abort().await.map_err(|e| map_err(&self.path, e)),
            None => Ok(()),
        }
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let path = self.path.clone();
            runtime.spawn(async move {
                if let Err(e) = writer.abort().await {
                    tracing::warn!(
                        "could not abort the unfinished upload of {path}: {}",
                        crate::error::store_message(&e)
                    );
                }
            });
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
    pub fn new(
        store: Arc<dyn ObjectStore>,
        ordered_listing: bool,
        upload_part_size: usize,
        root: Path,
        display_root: String,
    ) -> Self {
        Self {
            store,
            ordered_listing,
            upload_part_size: upload_part_size.clamp(1, UPLOAD_PART_SIZE),
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

    /// The part size of uploads: an upload holds at most
    /// [`UPLOAD_PARTS_IN_FLIGHT`] + 1 parts of it.
    pub fn upload_part_size(&self) -> usize {
        self.upload_part_size
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

    /// Reads at most `length` bytes from `offset`: fewer at the end of the object, none from
    /// its end on. More than `max_bytes` (what the caller can hold) is refused before anything
    /// is read.
    pub async fn get_range(
        &self,
        path: &str,
        offset: u64,
        length: u64,
        max_bytes: u64,
    ) -> Result<Vec<u8>, StorageError> {
        let p = self.resolve(path)?;
        if length > max_bytes {
            return Err(StorageError::new(
                StorageErrorKind::LimitExceeded,
                format!(
                    "a range of {length} bytes of {path} is more than the {max_bytes} bytes a plugin instance may hold"
                ),
            ));
        }
        let size = self
            .store
            .head(&p)
            .await
            .map_err(|e| map_err(path, e))?
            .size;
        let end = offset.saturating_add(length).min(size);
        if offset >= end {
            return Ok(Vec::new());
        }
        let bytes = self
            .store
            .get_range(&p, offset..end)
            .await
            .map_err(|e| map_err(path, e))?;
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

    /// One page of the objects under `prefix` in path order: at most `max_entries` of those
    /// after `start_after`, and where the next page starts (none: this is the last). Holds at
    /// most `max_entries + 1` entries whatever the listing's size: stores that list in order
    /// (S3) stop there, others are read through keeping the smallest.
    pub async fn list_page(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        max_entries: usize,
    ) -> Result<ListPage, StorageError> {
        let max_entries = max_entries.max(1);
        let p = self.resolve_prefix(prefix)?;
        let offset = start_after.map(|a| self.resolve(a)).transpose()?;
        let mut listing = match &offset {
            Some(o) => self.store.list_with_offset(Some(&p), o),
            None => self.store.list(Some(&p)),
        };
        // The smallest `max_entries + 1` paths seen: one more than a page tells whether the
        // page is the last.
        let mut smallest: std::collections::BTreeMap<String, ObjectInfo> = Default::default();
        loop {
            let meta = match listing.try_next().await {
                Ok(Some(m)) => m,
                Ok(None) | Err(object_store::Error::NotFound { .. }) => break,
                Err(e) => return Err(map_err(prefix, e)),
            };
            let path = self.relative(&meta.location);
            if start_after.is_some_and(|a| path.as_str() <= a) {
                continue;
            }
            if smallest.len() > max_entries {
                if smallest.last_key_value().is_some_and(|(k, _)| *k <= path) {
                    if self.ordered_listing {
                        break;
                    }
                    continue;
                }
                smallest.pop_last();
            }
            smallest.insert(
                path.clone(),
                ObjectInfo {
                    path,
                    size: meta.size,
                    last_modified_ms: meta.last_modified.timestamp_millis(),
                },
            );
        }
        let more = smallest.len() > max_entries;
        let objects: Vec<ObjectInfo> = smallest.into_values().take(max_entries).collect();
        let next = more
            .then(|| objects.last().map(|o| o.path.clone()))
            .flatten();
        Ok(ListPage { objects, next })
    }

    /// Starts an upload of `path` (charged as one object now, its bytes as they are written).
    pub async fn start_upload(&self, path: &str) -> Result<Upload, StorageError> {
        let p = self.resolve(path)?;
        self.quota.charge_objects_and_bytes(path, 1, 0)?;
        let upload = self
            .store
            .put_multipart(&p)
            .await
            .map_err(|e| map_err(path, e))?;
        Ok(Upload {
            path: path.to_string(),
            part_size: self.upload_part_size,
            writer: Some(WriteMultipart::new_with_chunk_size(
                upload,
                self.upload_part_size,
            )),
            quota: self.quota.clone(),
            written: 0,
        })
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
        let page = s.list_page("", None, 2).await.unwrap();
        let listed: Vec<_> = page.objects.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(listed, vec!["a/b.txt", "snap-1"]);
        assert_eq!(page.next, None);
        let missing = s.list_page("missing/", None, 1).await.unwrap();
        assert!(missing.objects.is_empty() && missing.next.is_none());
        assert_eq!(s.get_range("a/b.txt", 1, 3, 3).await.unwrap(), b"ell");
        assert_eq!(s.get_range("a/b.txt", 3, 10, 10).await.unwrap(), b"lo");
        assert!(s.get_range("a/b.txt", 5, 10, 10).await.unwrap().is_empty());
        assert_eq!(
            s.get_range("a/b.txt", 0, 10, 4).await.unwrap_err().kind,
            StorageErrorKind::LimitExceeded,
            "a range larger than the caller can hold is refused"
        );
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
    async fn listings_come_in_ordered_pages() {
        let dir = std::env::temp_dir().join(format!("paged-storage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = local(dir.to_str().unwrap(), "db/t");
        let mut names: Vec<String> = (0..23).map(|i| format!("d{}/f{i:02}", i % 3)).collect();
        for n in &names {
            s.put(n, Vec::new()).await.unwrap();
        }
        names.sort();
        let (mut seen, mut start) = (Vec::new(), None::<String>);
        loop {
            let page = s.list_page("", start.as_deref(), 5).await.unwrap();
            assert!(page.objects.len() <= 5);
            seen.extend(page.objects.into_iter().map(|o| o.path));
            match page.next {
                Some(n) => start = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, names, "every object once, in path order");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn uploads_appear_whole_on_completion_and_leave_nothing_when_aborted() {
        let dir = std::env::temp_dir().join(format!("upload-storage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = local(dir.to_str().unwrap(), "db/t");
        let mut u = s.start_upload("data/f.parquet").await.unwrap();
        let part = vec![7u8; UPLOAD_PART_SIZE + 1];
        u.write(&part).await.unwrap();
        u.write(b"end").await.unwrap();
        assert!(
            s.head("data/f.parquet").await.unwrap().is_none(),
            "invisible before complete"
        );
        assert_eq!(u.complete().await.unwrap(), UPLOAD_PART_SIZE as u64 + 4);
        let got = s.get("data/f.parquet", u64::MAX).await.unwrap();
        assert_eq!(got.len(), UPLOAD_PART_SIZE + 4);
        assert!(got.ends_with(b"end"));
        assert!(
            u.write(b"x").await.is_err(),
            "a finished upload takes no more bytes"
        );

        let mut u = s.start_upload("data/aborted").await.unwrap();
        u.write(&part).await.unwrap();
        u.abort().await.unwrap();
        let mut dropped = s.start_upload("data/dropped").await.unwrap();
        dropped.write(b"x").await.unwrap();
        drop(dropped);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let left: Vec<_> = walk(&dir);
        assert_eq!(
            left,
            vec!["db/t/data/f.parquet".to_string()],
            "nothing else remains"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn walk(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p.strip_prefix(dir).unwrap().display().to_string());
                }
            }
        }
        out.sort();
        out
    }

    #[tokio::test]
    async fn a_round_cannot_write_past_its_quota() {
        let dir = std::env::temp_dir().join(format!("quota-storage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let quota = StorageQuota::new(10, 3);
        let a = local(dir.to_str().unwrap(), "db/t").with_quota(quota.clone());
        let b = a.clone();
        assert!(quota.first_write().is_none(), "nothing written yet");
        let before = Instant::now();
        a.put("1", vec![0; 4]).await.unwrap();
        let first = quota
            .first_write()
            .expect("the first write is when the round got going");
        assert!(first >= before);
        b.put_if_absent("2", vec![0; 4]).await.unwrap();
        assert_eq!(
            quota.first_write(),
            Some(first),
            "later writes keep the first"
        );
        assert!(quota.exceeded().is_none());
        // 12 bytes: over, and nothing is written.
        let e = a.put("3", vec![0; 4]).await.unwrap_err();
        assert_eq!(e.kind, StorageErrorKind::LimitExceeded);
        assert!(!dir.join("db/t/3").exists());
        assert!(quota.exceeded().unwrap().contains("10 bytes in 3 objects"));
        // Upload bytes count as they are written.
        let u = a.clone().with_quota(StorageQuota::new(10, 5));
        let mut up = u.start_upload("u").await.unwrap();
        up.write(&[0; 8]).await.unwrap();
        let e = up.write(&[0; 4]).await.unwrap_err();
        assert_eq!(e.kind, StorageErrorKind::LimitExceeded);
        assert!(
            up.complete().await.is_err(),
            "a refused upload cannot be completed"
        );
        assert!(!dir.join("db/t/u").exists());
        // Objects count too.
        let quota = StorageQuota::new(u64::MAX, 1);
        let c = a.with_quota(quota.clone());
        c.put("4", Vec::new()).await.unwrap();
        assert!(c.put("5", Vec::new()).await.is_err());
        assert!(quota.exceeded().is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
