//! [`Storage`] backed by the host's WIT `storage` imports: what plugins use inside the sandbox.

use super::{ObjectMeta, Storage};
use crate::bindings::fluss::lake::storage as wit;
use crate::error::Result;

/// The host storage of the current call's table. Zero-sized: the host scopes every call.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostStorage;

fn meta(m: crate::bindings::fluss::lake::types::ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        path: m.path,
        size: m.size,
        last_modified: m.last_modified,
    }
}

impl Storage for HostStorage {
    fn get(&self, path: &str) -> Result<Vec<u8>> {
        Ok(wit::get(path)?)
    }
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        Ok(wit::put(path, data)?)
    }
    fn put_if_absent(&self, path: &str, data: &[u8]) -> Result<()> {
        Ok(wit::put_if_absent(path, data)?)
    }
    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        Ok(wit::list_objects(prefix)?.into_iter().map(meta).collect())
    }
    fn delete(&self, path: &str) -> Result<()> {
        Ok(wit::delete_object(path)?)
    }
    fn head(&self, path: &str) -> Result<Option<ObjectMeta>> {
        Ok(wit::head(path)?.map(meta))
    }
}
