//! [`Storage`] backed by the host's WIT `storage` imports: what plugins use inside the sandbox.

use super::{ObjectMeta, Storage, Upload};
use crate::bindings::fluss::lake::storage as wit;
use crate::error::Result;

/// Entries asked for per listing page (the host may return fewer).
const LIST_PAGE: u32 = 1000;

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

/// The host's upload handle.
struct HostUpload(wit::Upload);

// SAFETY: wasm32-wasip2 guests are single-threaded: the handle never crosses a thread. (Parquet's
// `ArrowWriter` asks its sink to be `Send`.)
unsafe impl Send for HostUpload {}

impl Upload for HostUpload {
    fn write(&mut self, data: &[u8]) -> Result<()> {
        Ok(self.0.write(data)?)
    }
    fn complete(self: Box<Self>) -> Result<u64> {
        Ok(self.0.complete()?)
    }
    fn abort(self: Box<Self>) -> Result<()> {
        Ok(self.0.abort()?)
    }
}

impl Storage for HostStorage {
    fn get(&self, path: &str) -> Result<Vec<u8>> {
        Ok(wit::get(path)?)
    }
    fn get_range(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>> {
        Ok(wit::get_range(path, offset, length)?)
    }
    fn upload(&self, path: &str) -> Result<Box<dyn Upload>> {
        Ok(Box::new(HostUpload(wit::Upload::start(path)?)))
    }
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        Ok(wit::put(path, data)?)
    }
    fn put_if_absent(&self, path: &str, data: &[u8]) -> Result<()> {
        Ok(wit::put_if_absent(path, data)?)
    }
    /// Every page of the listing.
    fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>> {
        let mut out = Vec::new();
        let mut start_after: Option<String> = None;
        loop {
            let page = wit::list_objects(prefix, start_after.as_deref(), LIST_PAGE)?;
            out.extend(page.objects.into_iter().map(meta));
            match page.next {
                Some(next) => start_after = Some(next),
                None => return Ok(out),
            }
        }
    }
    fn delete(&self, path: &str) -> Result<()> {
        Ok(wit::delete_object(path)?)
    }
    fn head(&self, path: &str) -> Result<Option<ObjectMeta>> {
        Ok(wit::head(path)?.map(meta))
    }
}
