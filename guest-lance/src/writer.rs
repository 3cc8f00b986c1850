//! The writer of one split: converts the Fluss rows to the dataset's Arrow types and writes
//! Lance 2.0 data files (rolled at the target size), each becoming one fragment at commit.

use arrow_array::RecordBatch;
use fluss_lake_guest_sdk::convert::to_file_array;
use fluss_lake_guest_sdk::data_plane::SplitRows;
use fluss_lake_guest_sdk::plugin::FormatWriter;
use fluss_lake_guest_sdk::storage::{ObjectWriter, Storage};
use fluss_lake_guest_sdk::wit::{WriteResult, WriterContext};
use fluss_lake_guest_sdk::{Error, Result, config};
use serde::{Deserialize, Serialize};

use crate::file_writer::LanceFileWriter;
use crate::proto::lance::file as pbfile;
use crate::schema::{arrow_schema, check_compatible};
use crate::versions;

/// Plugin config / Fluss Lance option bounding a data file (Lance's `max_bytes_per_file`).
pub const MAX_BYTES_PER_FILE: &str = "max_bytes_per_file";
/// Files are built in guest memory, so the default is far below Lance's 90 GB.
pub const DEFAULT_MAX_BYTES_PER_FILE: u64 = 128 << 20;
/// Plugin config / Fluss Lance option bounding the rows of a data file.
pub const MAX_ROWS_PER_FILE: &str = "max_row_per_file";

/// A data file a split wrote (a fragment to be).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WrittenFile {
    /// Relative to the dataset's `data/` directory.
    pub path: String,
    pub rows: u64,
    pub size: u64,
}

/// What a split hands to the committer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WritePayload {
    pub files: Vec<WrittenFile>,
}

impl WritePayload {
    pub fn encode(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::internal(format!("encoding write result: {e}")))
    }
    pub fn decode(bytes: &[u8]) -> Result<WritePayload> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::invalid_input(format!("not a Lance write result: {e}")))
    }
}

pub struct LanceWriter<S: Storage> {
    storage: S,
    fields: Vec<pbfile::Field>,
    schema: arrow_schema::SchemaRef,
    /// The file being written and its name under `data/`.
    open: Option<(String, LanceFileWriter)>,
    files: Vec<WrittenFile>,
    max_bytes: u64,
    max_rows: u64,
    records: u64,
}

impl<S: Storage> LanceWriter<S> {
    fn roll(&mut self) -> Result<()> {
        let Some((name, w)) = self.open.take() else {
            return Ok(());
        };
        if w.rows() == 0 {
            return Ok(()); // dropping the writer aborts its upload
        }
        let rows = w.rows();
        let size = w.finish()?;
        self.files.push(WrittenFile {
            path: name,
            rows,
            size,
        });
        Ok(())
    }

    /// The file being written, started if none is.
    fn open_file(&mut self) -> Result<&mut LanceFileWriter> {
        if self.open.is_none() {
            let name = format!("{}.lance", uuid::Uuid::new_v4());
            let out = ObjectWriter::create(&self.storage, &format!("data/{name}"))?;
            self.open = Some((name, LanceFileWriter::new(self.fields.clone(), out)));
        }
        Ok(&mut self.open.as_mut().expect("a file is open").1)
    }
}

impl<S: Storage> FormatWriter<S> for LanceWriter<S> {
    fn open(context: &WriterContext, storage: S) -> Result<Self> {
        let table = &context.table;
        crate::catalog::check_log_table(table)?;
        let (version, naming) = versions::latest(&storage)?.ok_or_else(|| {
            Error::not_found(format!(
                "Lance dataset {}.{} does not exist (no _versions/)",
                table.path.database, table.path.table
            ))
        })?;
        let manifest = versions::read(&storage, version, naming)?;
        check_compatible(&manifest.fields, table)?;
        let size = |k: &str, default: u64| -> Result<u64> {
            match config::get(&context.config, k)
                .or_else(|| config::get(&table.custom_properties, k))
            {
                Some(v) => config::parse_size(v),
                None => Ok(default),
            }
        };
        Ok(LanceWriter {
            schema: arrow_schema(&manifest.fields)?,
            fields: manifest.fields,
            storage,
            open: None,
            files: Vec::new(),
            max_bytes: size(MAX_BYTES_PER_FILE, DEFAULT_MAX_BYTES_PER_FILE)?.max(1),
            max_rows: size(MAX_ROWS_PER_FILE, u64::MAX)?.max(1),
            records: 0,
        })
    }

    fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<()> {
        let decoded = rows.into_decoded()?;
        if !decoded.is_insert_only() {
            return Err(Error::invalid_input(
                "update or delete rows for a Lance dataset (Lance tables are log tables)",
            ));
        }
        let n = decoded.num_rows();
        if n == 0 {
            return Ok(());
        }
        let columns = self
            .schema
            .fields()
            .iter()
            .zip(decoded.batch.columns())
            .map(|(f, c)| Ok(to_file_array(c, f.data_type(), f.is_nullable(), f.name())?))
            .collect::<Result<Vec<_>>>()?;
        let rows = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.records += n as u64;
        let mut start = 0;
        while start < n {
            let max_rows = self.max_rows;
            let w = self.open_file()?;
            let room = (max_rows - w.rows()).min((n - start) as u64) as usize;
            w.write(&rows.slice(start, room))?;
            start += room;
            if w.rows() >= max_rows || w.size() >= self.max_bytes {
                self.roll()?;
            }
        }
        Ok(())
    }

    fn complete(mut self) -> Result<WriteResult> {
        self.roll()?;
        let file_bytes = self.files.iter().map(|f| f.size).sum();
        Ok(WriteResult {
            payload: WritePayload { files: self.files }.encode()?,
            record_count: self.records,
            file_bytes,
        })
    }
}
