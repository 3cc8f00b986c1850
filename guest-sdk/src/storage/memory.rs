//! In-memory [`Storage`], for unit tests and for native benchmarks that must not measure disks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::upload::PutOnComplete;
use super::{ObjectMeta, Storage, Upload, normalize_prefix, validate_path};
use crate::error::{Error, Result};

/// Path → (bytes, last modified).
type Objects = BTreeMap<String, (Vec<u8>, i64)>;

/// A map of path → bytes behind a mutex.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    /// Shared with the uploads in progress, which store their object when completed.
    objects: Arc<Mutex<Objects>>,
}

impl MemoryStorage {
    /// An empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of stored objects (for tests).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Objects> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Storage for MemoryStorage {
    fn upload(&self, path: &str) -> Result<Box<dyn Upload>> {
        validate_path(path)?;
        let objects = self.objects.clone();
        let path = path.to_string();
        Ok(Box::new(PutOnComplete {
            data: Vec::new(),
            put: Some(move |data| {
                objects
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(path, (data, crate::clock::now_millis()));
                Ok(())
            }),
        }))
    }
    fn get(&self, path: &str) -> Result<Vec<u8>> {
        validate_path(path)?;
        self.lock()
            .get(path)
            .map(|(d, _)| d.clone())
            .ok_or_else(|| Error::not_found(format!("object {path} does not exist")))
    }
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        validate_path(path)?;
        self.lock().insert(
            path.to_string(),
            (data.to_vec(), crate::clock::now_millis()),
        );
        Ok(())
    }
    fn put_if_absent(&self, path: &str, data: &[u8]) -> Result<()> {
        validate_path(path)?;
        let mut objects = self.lock();
        if objects.contains_key(path) {
            return Err(Error::already_exists(format!(
                "object {path} already exists"
            )));
        }
        objects.insert(
            path.to_string(),
            (data.to_vec(), crate::clock::now_millis()),
        );
        Ok(())
    }
    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let prefix = normalize_prefix(prefix)?;
        Ok(self
            .lock()
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, (d, t))| ObjectMeta {
                path: k.clone(),
                size: d.len() as u64,
                last_modified: *t,
            })
            .collect())
    }
    fn delete(&self, path: &str) -> Result<()> {
        validate_path(path)?;
        self.lock().remove(path);
        Ok(())
    }
    fn head(&self, path: &str) -> Result<Option<ObjectMeta>> {
        validate_path(path)?;
        Ok(self.lock().get(path).map(|(d, t)| ObjectMeta {
            path: path.to_string(),
            size: d.len() as u64,
            last_modified: *t,
        }))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn conforms() {
        super::super::conformance::check(&super::MemoryStorage::new());
    }
}
