//! [`Storage`] over a local directory, so native tests can produce real tables that other
//! readers (pypaimon, pyiceberg...) open from disk, and native benchmarks can write real files.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::{ObjectMeta, Storage, Upload, normalize_prefix, validate_path};
use crate::error::{Error, Result, ResultExt};

/// A directory acting as the table location.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    root: PathBuf,
}

impl LocalStorage {
    /// Storage rooted at `root` (created lazily on first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LocalStorage { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn resolve(&self, path: &str) -> Result<PathBuf> {
        validate_path(path)?;
        Ok(self.root.join(path))
    }

    /// Creates a unique temporary sibling of `dest` (listings skip it), so the object
    /// appears whole when renamed into place.
    fn create_tmp(dest: &Path) -> Result<(PathBuf, fs::File)> {
        let dir = dest
            .parent()
            .ok_or_else(|| Error::invalid_input("path without parent"))?;
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let name = dest
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("object");
        let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let f = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        Ok((tmp, f))
    }

    /// Writes `data` to a temporary sibling of `dest`.
    fn write_tmp(&self, dest: &Path, data: &[u8]) -> Result<PathBuf> {
        let (tmp, mut f) = Self::create_tmp(dest)?;
        f.write_all(data)
            .with_context(|| format!("writing {}", tmp.display()))?;
        Ok(tmp)
    }

    fn meta(path: String, m: &fs::Metadata) -> ObjectMeta {
        let last_modified = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        ObjectMeta {
            path,
            size: m.len(),
            last_modified,
        }
    }

    fn walk(&self, dir: &Path, rel: &str, out: &mut Vec<ObjectMeta>) -> Result<()> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::from(e).context(format!("listing {}", dir.display()))),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".tmp") {
                continue;
            }
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let ft = entry.file_type()?;
            if ft.is_dir() {
                self.walk(&entry.path(), &child, out)?;
            } else {
                out.push(Self::meta(child, &entry.metadata()?));
            }
        }
        Ok(())
    }
}

/// An upload into a temporary file, renamed into place when completed.
struct LocalUpload {
    tmp: PathBuf,
    dest: PathBuf,
    file: Option<fs::File>,
}

impl Upload for LocalUpload {
    fn write(&mut self, data: &[u8]) -> Result<()> {
        let tmp = &self.tmp;
        self.file
            .as_mut()
            .ok_or_else(|| Error::internal("the upload is finished"))?
            .write_all(data)
            .with_context(|| format!("writing {}", tmp.display()))
    }
    fn complete(mut self: Box<Self>) -> Result<u64> {
        let file = self
            .file
            .take()
            .ok_or_else(|| Error::internal("the upload is finished"))?;
        let size = file.metadata()?.len();
        drop(file);
        fs::rename(&self.tmp, &self.dest)
            .with_context(|| format!("publishing {}", self.dest.display()))?;
        Ok(size)
    }
    fn abort(self: Box<Self>) -> Result<()> {
        Ok(()) // the temporary file goes with the drop
    }
}

impl Drop for LocalUpload {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl Storage for LocalStorage {
    fn upload(&self, path: &str) -> Result<Box<dyn Upload>> {
        let dest = self.resolve(path)?;
        let (tmp, file) = Self::create_tmp(&dest)?;
        Ok(Box::new(LocalUpload {
            tmp,
            dest,
            file: Some(file),
        }))
    }
    fn get(&self, path: &str) -> Result<Vec<u8>> {
        let p = self.resolve(path)?;
        fs::read(&p).with_context(|| format!("reading {path}"))
    }
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        let p = self.resolve(path)?;
        let tmp = self.write_tmp(&p, data)?;
        fs::rename(&tmp, &p).with_context(|| format!("publishing {path}"))
    }
    fn put_if_absent(&self, path: &str, data: &[u8]) -> Result<()> {
        let p = self.resolve(path)?;
        let tmp = self.write_tmp(&p, data)?;
        // A hard link fails atomically when the destination exists.
        let linked = fs::hard_link(&tmp, &p);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::already_exists(
                format!("object {path} already exists"),
            )),
            Err(e) => Err(Error::from(e).context(format!("publishing {path}"))),
        }
    }
    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let prefix = normalize_prefix(prefix)?;
        let rel = prefix.trim_end_matches('/');
        let mut out = Vec::new();
        self.walk(&self.root.join(rel), rel, &mut out)?;
        Ok(out)
    }
    fn delete(&self, path: &str) -> Result<()> {
        let p = self.resolve(path)?;
        match fs::remove_file(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::from(e).context(format!("deleting {path}"))),
        }
    }
    fn head(&self, path: &str) -> Result<Option<ObjectMeta>> {
        let p = self.resolve(path)?;
        match fs::metadata(&p) {
            Ok(m) if m.is_file() => Ok(Some(Self::meta(path.to_string(), &m))),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::from(e).context(format!("stat {path}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn conforms() {
        let dir = std::env::temp_dir().join(format!("sdk-local-{}", uuid::Uuid::new_v4()));
        super::super::conformance::check(&super::LocalStorage::new(&dir));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
