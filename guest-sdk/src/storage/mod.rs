//! Object storage as format code sees it.
//!
//! Format code is written against the [`Storage`] trait, never against the raw WIT imports,
//! so that the very same code runs inside the WebAssembly sandbox ([`HostStorage`], backed by
//! the host's `storage` interface) and natively in tests and benchmarks ([`MemoryStorage`],
//! [`LocalStorage`]). All implementations follow the WIT semantics: paths are relative, `/`
//! separated, without `.`/`..` segments; a reader never sees a partial object (`put` is
//! whole, an [`Upload`] appears when completed).

mod host;
mod local;
mod memory;
mod upload;

pub use host::HostStorage;
pub use local::LocalStorage;
pub use memory::MemoryStorage;
pub use upload::{ObjectWriter, PART_SIZE, Upload};

use crate::error::{Error, Result};

/// Metadata of one stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Path relative to the storage root (the table's lake location).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification, epoch millis.
    pub last_modified: i64,
}

/// Object storage confined to one table location (the WIT `storage` interface).
pub trait Storage {
    /// Reads a whole object; fails with `not-found` when it does not exist.
    fn get(&self, path: &str) -> Result<Vec<u8>>;
    /// Reads at most `length` bytes from `offset` (fewer at the end, none past it); fails
    /// with `not-found` when the object does not exist.
    fn get_range(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>> {
        let data = self.get(path)?;
        let start = (offset.min(data.len() as u64)) as usize;
        let end = (offset.saturating_add(length).min(data.len() as u64)) as usize;
        Ok(data[start..end].to_vec())
    }
    /// Starts writing `path` in parts ([`ObjectWriter`] is the usual way in).
    fn upload(&self, path: &str) -> Result<Box<dyn Upload>>;
    /// Writes (or replaces) a whole object.
    fn put(&self, path: &str, data: &[u8]) -> Result<()>;
    /// Writes an object only if none exists, atomically; `already-exists` otherwise.
    fn put_if_absent(&self, path: &str, data: &[u8]) -> Result<()>;
    /// Lists the objects under a directory prefix, recursively, in no particular order.
    /// A missing prefix yields an empty list.
    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>>;
    /// Deletes an object; deleting a missing object succeeds.
    fn delete(&self, path: &str) -> Result<()>;
    /// The object's metadata, or `None` when it does not exist.
    fn head(&self, path: &str) -> Result<Option<ObjectMeta>>;

    /// Like [`Storage::get`] but `None` instead of a `not-found` error.
    fn get_opt(&self, path: &str) -> Result<Option<Vec<u8>>> {
        match self.get(path) {
            Ok(data) => Ok(Some(data)),
            Err(e) if e.kind() == crate::error::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl<S: Storage + ?Sized> Storage for &S {
    fn get(&self, path: &str) -> Result<Vec<u8>> {
        (**self).get(path)
    }
    fn get_range(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>> {
        (**self).get_range(path, offset, length)
    }
    fn upload(&self, path: &str) -> Result<Box<dyn Upload>> {
        (**self).upload(path)
    }
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        (**self).put(path, data)
    }
    fn put_if_absent(&self, path: &str, data: &[u8]) -> Result<()> {
        (**self).put_if_absent(path, data)
    }
    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        (**self).list(prefix)
    }
    fn delete(&self, path: &str) -> Result<()> {
        (**self).delete(path)
    }
    fn head(&self, path: &str) -> Result<Option<ObjectMeta>> {
        (**self).head(path)
    }
}

/// Checks a path the way the host does: relative, `/`-separated, no empty, `.` or `..`
/// segments. Native implementations call it so tests catch paths the host would refuse.
pub fn validate_path(path: &str) -> Result<()> {
    if path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(Error::invalid_input(format!(
            "invalid storage path {path:?}"
        )));
    }
    Ok(())
}

/// Normalises a list prefix to `""` (everything) or `"dir/"`.
pub(crate) fn normalize_prefix(prefix: &str) -> Result<String> {
    let trimmed = prefix.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    validate_path(trimmed)?;
    Ok(format!("{trimmed}/"))
}

/// Joins path segments with `/`, skipping empty ones.
pub fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_matches('/'))
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
pub(crate) mod conformance {
    //! One behavioural test suite run against every native implementation.
    use super::*;
    use crate::error::ErrorKind;

    pub fn check(s: &dyn Storage) {
        assert_eq!(s.get("a/b").unwrap_err().kind(), ErrorKind::NotFound);
        assert!(s.head("a/b").unwrap().is_none());
        assert!(s.list("a").unwrap().is_empty());
        s.put("a/b", b"one").unwrap();
        s.put("a/c/d", b"two!").unwrap();
        s.put("z", b"").unwrap();
        assert_eq!(s.get("a/b").unwrap(), b"one");
        assert_eq!(s.get_range("a/b", 1, 5).unwrap(), b"ne");
        assert!(s.get_range("a/b", 3, 5).unwrap().is_empty());
        let mut w = ObjectWriter::create(s, "up/loaded").unwrap();
        std::io::Write::write_all(&mut w, &vec![1u8; PART_SIZE + 3]).unwrap();
        assert!(
            s.head("up/loaded").unwrap().is_none(),
            "invisible until finished"
        );
        assert_eq!(w.finish().unwrap(), PART_SIZE as u64 + 3);
        assert_eq!(s.get("up/loaded").unwrap().len(), PART_SIZE + 3);
        let mut w = ObjectWriter::create(s, "up/dropped").unwrap();
        std::io::Write::write_all(&mut w, b"x").unwrap();
        drop(w);
        assert!(
            s.head("up/dropped").unwrap().is_none(),
            "a dropped upload leaves nothing"
        );
        s.delete("up/loaded").unwrap();
        assert_eq!(s.head("a/c/d").unwrap().unwrap().size, 4);
        s.put("a/b", b"uno").unwrap();
        assert_eq!(s.get("a/b").unwrap(), b"uno");
        assert_eq!(
            s.put_if_absent("a/b", b"x").unwrap_err().kind(),
            ErrorKind::AlreadyExists
        );
        s.put_if_absent("a/e", b"x").unwrap();
        let mut listed: Vec<_> = s.list("a/").unwrap().into_iter().map(|m| m.path).collect();
        listed.sort();
        assert_eq!(listed, vec!["a/b", "a/c/d", "a/e"]);
        assert_eq!(s.list("").unwrap().len(), 4);
        assert_eq!(s.list("a/c").unwrap().len(), 1);
        assert!(s.list("nope").unwrap().is_empty());
        s.delete("a/b").unwrap();
        s.delete("a/b").unwrap();
        assert!(s.head("a/b").unwrap().is_none());
        assert_eq!(s.get_opt("a/b").unwrap(), None);
        for bad in ["", "/abs", "a/../b", "a/./b", "a//b"] {
            assert_eq!(
                s.put(bad, b"x").unwrap_err().kind(),
                ErrorKind::InvalidInput,
                "{bad}"
            );
        }
    }
}
