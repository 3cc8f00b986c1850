//! Objects written in parts (the WIT `upload` resource): a format encodes a data file straight
//! into an [`ObjectWriter`], which hands the host a part at a time, so a plugin holds one part
//! (plus what its encoder buffers, e.g. one Parquet row group) instead of the whole file.

use std::io;

use crate::error::{Error, Result};

/// Bytes the writer gathers before handing them to the upload: one host part.
pub const PART_SIZE: usize = 8 << 20;

/// An object being written: invisible until [`Upload::complete`]; nothing remains after
/// [`Upload::abort`] or when it is dropped unfinished.
pub trait Upload: Send {
    /// Appends `data`.
    fn write(&mut self, data: &[u8]) -> Result<()>;
    /// Makes the object visible; its size.
    fn complete(self: Box<Self>) -> Result<u64>;
    /// Discards what was written.
    fn abort(self: Box<Self>) -> Result<()>;
}

/// [`io::Write`] into an object of storage, in parts of [`PART_SIZE`] bytes: what encoders
/// (Parquet's `ArrowWriter`, the Lance file writer) write to. [`ObjectWriter::finish`] makes
/// the object visible; dropping the writer unfinished aborts it.
pub struct ObjectWriter {
    path: String,
    upload: Option<Box<dyn Upload>>,
    buf: Vec<u8>,
    position: u64,
}

impl ObjectWriter {
    /// Starts writing `path` in `storage`.
    pub fn create<S: super::Storage + ?Sized>(storage: &S, path: &str) -> Result<Self> {
        Ok(Self {
            path: path.to_string(),
            upload: Some(storage.upload(path)?),
            buf: Vec::new(),
            position: 0,
        })
    }

    /// The object's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.position
    }

    fn upload(&mut self) -> Result<&mut Box<dyn Upload>> {
        let path = &self.path;
        self.upload
            .as_mut()
            .ok_or_else(|| Error::internal(format!("the upload of {path} is finished")))
    }

    fn send_part(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let part = std::mem::take(&mut self.buf);
            self.upload()?.write(&part)?;
            self.buf = part;
            self.buf.clear();
        }
        Ok(())
    }

    /// Sends what is buffered and makes the object visible; its size.
    pub fn finish(mut self) -> Result<u64> {
        self.send_part()?;
        let upload = self.upload.take().expect("the upload is open until finish");
        upload.complete()
    }

    /// Discards the object.
    pub fn abort(mut self) -> Result<()> {
        match self.upload.take() {
            Some(u) => u.abort(),
            None => Ok(()),
        }
    }
}

impl io::Write for ObjectWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(PART_SIZE);
        }
        let room = PART_SIZE - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        self.position += n as u64;
        if self.buf.len() == PART_SIZE {
            self.send_part().map_err(io::Error::other)?;
        }
        Ok(n)
    }

    /// Parts go out as they fill; `finish` sends the rest.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if let Some(u) = self.upload.take() {
            let _ = u.abort();
        }
    }
}

/// An upload that gathers the object and stores it whole with `put` on completion: for
/// native storages whose objects live in memory.
pub(crate) struct PutOnComplete<F: FnOnce(Vec<u8>) -> Result<()> + Send> {
    pub(crate) data: Vec<u8>,
    pub(crate) put: Option<F>,
}

impl<F: FnOnce(Vec<u8>) -> Result<()> + Send> Upload for PutOnComplete<F> {
    fn write(&mut self, data: &[u8]) -> Result<()> {
        self.data.extend_from_slice(data);
        Ok(())
    }
    fn complete(mut self: Box<Self>) -> Result<u64> {
        let data = std::mem::take(&mut self.data);
        let size = data.len() as u64;
        (self.put.take().expect("completed once"))(data)?;
        Ok(size)
    }
    fn abort(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
