//! Writing Parquet data files through [`Storage`].
//!
//! Each file is encoded straight into an [`ObjectWriter`] (an upload in parts), so a plugin
//! holds one row group being encoded (at most [`ParquetOptions::row_group_bytes`]) and one
//! part, whatever the file's size. The writer *rolls*: once a file reaches the target file
//! size it is completed and a new one starts. Column statistics are collected on the way (see
//! [`crate::stats`]) so formats can describe files in their metadata without reading them
//! back.
//!
//! The files of a `batch-writer` may be encoded by the host instead ([`Encoding::Host`]), with
//! the same encoder (`fluss-lake-columns`) and the same options, from the rows it holds.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fluss_lake_columns::encode::{EncodedFile, FileEncoder};
pub use fluss_lake_columns::encode::{ParquetOptions, parse_compression};
use fluss_lake_columns::file_columns::FileColumns;

use crate::data_plane::{HostFile, KeptBatch, SplitRows};
use crate::error::{Error, Result, ResultExt};
use crate::stats::ColumnStats;
use crate::storage::{ObjectWriter, Storage};

/// What was written to one finished data file.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFileInfo {
    /// Storage path the file was `put` to.
    pub path: String,
    /// Encoded size in bytes.
    pub size: u64,
    /// Rows in the file.
    pub row_count: u64,
    /// Statistics per column, in schema order.
    pub column_stats: Vec<ColumnStats>,
}

/// Who encodes a writer's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// This plugin, in WebAssembly.
    Guest,
    /// The host's native data plane (contract 0.3.8), from the rows it holds: only for a
    /// `batch-writer`, whose rows are [`SplitRows::Host`].
    Host,
}

enum Encoder {
    Guest(Box<FileEncoder<ObjectWriter>>),
    Host(HostFile),
}

struct OpenFile {
    path: String,
    encoder: Encoder,
    rows: u64,
}

/// Writes record batches into Parquet files of roughly `target_file_size` bytes.
pub struct RollingParquetWriter<S: Storage> {
    storage: S,
    schema: SchemaRef,
    options: ParquetOptions,
    /// How split rows fill the files' columns, and the bucket they were read from; set by
    /// [`Self::for_columns`].
    columns: Option<(FileColumns, i32)>,
    encoding: Encoding,
    next_path: Box<dyn FnMut() -> String>,
    open: Option<OpenFile>,
}

impl<S: Storage> RollingParquetWriter<S> {
    /// A writer of files with `schema` (carry field ids with
    /// [`crate::arrow_util::field_with_id`]), encoded here; `next_path` names each new file.
    /// It takes record batches of the files' schema ([`Self::write`]).
    pub fn new(
        storage: S,
        schema: SchemaRef,
        options: ParquetOptions,
        next_path: impl FnMut() -> String + 'static,
    ) -> Self {
        RollingParquetWriter {
            storage,
            schema,
            options,
            columns: None,
            encoding: Encoding::Guest,
            next_path: Box::new(next_path),
            open: None,
        }
    }

    /// A writer of a split's rows into files with `columns`, whose bucket columns hold
    /// `bucket`, encoded as `encoding` says. It takes split rows ([`Self::write_rows`]).
    pub fn for_columns(
        storage: S,
        columns: FileColumns,
        bucket: i32,
        options: ParquetOptions,
        encoding: Encoding,
        next_path: impl FnMut() -> String + 'static,
    ) -> Self {
        RollingParquetWriter {
            storage,
            schema: columns.schema().clone(),
            options,
            columns: Some((columns, bucket)),
            encoding,
            next_path: Box::new(next_path),
            open: None,
        }
    }

    /// The schema of written files.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Opens the next file unless one is open, and returns its path: rows written next land
    /// in this file at positions from [`Self::open_rows`] on (position deletes need them).
    pub fn ensure_open(&mut self) -> Result<&str> {
        if self.open.is_none() {
            let path = (self.next_path)();
            let encoder = match (self.encoding, &self.columns) {
                (Encoding::Host, Some((columns, bucket))) => Encoder::Host(
                    HostFile::start(&path, columns, *bucket, &self.options)
                        .with_context(|| format!("starting {path}"))?,
                ),
                (Encoding::Host, None) => {
                    return Err(Error::internal(
                        "the host encodes only files whose columns it knows",
                    ));
                }
                (Encoding::Guest, _) => {
                    let sink = ObjectWriter::create(&self.storage, &path)
                        .with_context(|| format!("starting {path}"))?;
                    Encoder::Guest(Box::new(FileEncoder::new(
                        sink,
                        self.schema.clone(),
                        &self.options,
                    )?))
                }
            };
            self.open = Some(OpenFile {
                path,
                encoder,
                rows: 0,
            });
        }
        Ok(&self.open.as_ref().expect("file is open").path)
    }

    /// Rows buffered in the file currently open.
    pub fn open_rows(&self) -> u64 {
        self.open.as_ref().map_or(0, |f| f.rows)
    }

    /// Appends a batch (its schema must equal the writer's). Returns the file that was
    /// finished and uploaded if the batch made the current file reach the target size.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<Option<DataFileInfo>> {
        if batch.num_rows() == 0 {
            return Ok(None);
        }
        if batch.schema().fields() != self.schema.fields() {
            return Err(Error::internal(format!(
                "batch schema {:?} differs from file schema {:?}",
                batch.schema(),
                self.schema
            )));
        }
        self.ensure_open()?;
        let file = self.open.as_mut().expect("file is open");
        let Encoder::Guest(encoder) = &mut file.encoder else {
            return Err(Error::internal(
                "rows in guest memory for a file the host encodes",
            ));
        };
        encoder
            .write(batch)
            .map_err(Error::from)
            .with_context(|| format!("encoding {}", file.path))?;
        file.rows += batch.num_rows() as u64;
        let size = encoder.size();
        self.roll_at(size)
    }

    /// Appends a split's rows as [`Self::for_columns`] laid the files out: the host encodes
    /// the rows it holds when the writer's encoding is [`Encoding::Host`]; otherwise they
    /// are assembled and encoded here. Returns the file finished if it reached the target
    /// size.
    pub fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<Option<DataFileInfo>> {
        if rows.num_rows() == 0 {
            return Ok(None);
        }
        let Some((columns, bucket)) = &self.columns else {
            return Err(Error::internal("split rows for a writer of record batches"));
        };
        match (rows, self.encoding) {
            (SplitRows::Host(batch), Encoding::Host) => {
                self.ensure_open()?;
                let file = self.open.as_mut().expect("file is open");
                let Encoder::Host(host) = &file.encoder else {
                    return Err(Error::internal("a guest file for host rows"));
                };
                let size = host
                    .append(&batch)
                    .with_context(|| format!("encoding {}", file.path))?;
                file.rows += batch.num_rows() as u64;
                self.roll_at(size)
            }
            (SplitRows::Decoded(_), Encoding::Host) => Err(Error::internal(
                "rows in guest memory for a writer whose files the host encodes",
            )),
            (rows, Encoding::Guest) => {
                let decoded = rows.into_decoded()?;
                let batch = columns.assemble(
                    &decoded.batch,
                    &decoded.log_offsets,
                    &decoded.timestamps,
                    *bucket,
                )?;
                self.write(&batch)
            }
        }
    }

    /// Appends rows of kept batches in the order of `picks`, with the files' computed columns
    /// (`computed`, one row per pick; `None` when [`Self::for_columns`] laid the files out
    /// without [`ColumnSource::Computed`](crate::file_columns::ColumnSource::Computed)
    /// columns); only for a writer whose encoding is [`Encoding::Host`] (contract 0.3.9).
    /// Returns the file finished if it reached the target size.
    pub fn write_picked(
        &mut self,
        kept: &[&KeptBatch],
        picks: &[(u32, u32)],
        computed: Option<&RecordBatch>,
    ) -> Result<Option<DataFileInfo>> {
        if picks.is_empty() {
            return Ok(None);
        }
        if self.encoding != Encoding::Host || self.columns.is_none() {
            return Err(Error::internal(
                "picked rows for a writer whose files the host does not encode",
            ));
        }
        self.ensure_open()?;
        let file = self.open.as_mut().expect("file is open");
        let Encoder::Host(host) = &file.encoder else {
            return Err(Error::internal("a guest file for picked rows"));
        };
        let size = host
            .append_picked(kept, picks, computed)
            .with_context(|| format!("encoding {}", file.path))?;
        file.rows += picks.len() as u64;
        self.roll_at(size)
    }

    /// Finishes the open file once it reached the target size.
    fn roll_at(&mut self, size: u64) -> Result<Option<DataFileInfo>> {
        if size >= self.options.target_file_size {
            self.finish_file()
        } else {
            Ok(None)
        }
    }

    /// Finishes and uploads the open file, if any rows were written to it.
    pub fn finish_file(&mut self) -> Result<Option<DataFileInfo>> {
        let Some(file) = self.open.take() else {
            return Ok(None);
        };
        if file.rows == 0 {
            // Opened by `ensure_open` but never written: dropping it aborts the upload.
            return Ok(None);
        }
        let (size, encoded) = match file.encoder {
            Encoder::Guest(encoder) => {
                let (sink, encoded) = encoder
                    .finish()
                    .map_err(Error::from)
                    .with_context(|| format!("finishing {}", file.path))?;
                let size = sink
                    .finish()
                    .with_context(|| format!("uploading {}", file.path))?;
                (size, encoded)
            }
            Encoder::Host(host) => host
                .finish()
                .with_context(|| format!("finishing {}", file.path))?,
        };
        let EncodedFile {
            row_count,
            column_stats,
        } = encoded;
        Ok(Some(DataFileInfo {
            path: file.path,
            size,
            row_count,
            column_stats,
        }))
    }

    /// The storage files go to.
    pub fn storage(&self) -> &S {
        &self.storage
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    /// Every codec the writer offers produces a file Parquet reads back.
    #[test]
    fn every_codec_writes_a_readable_file() {
        use parquet::file::reader::FileReader;
        let schema = Arc::new(Schema::new(vec![field_with_id(
            "id",
            DataType::Int64,
            false,
            0,
        )]));
        for name in ["zstd", "snappy", "lz4", "gzip", "uncompressed"] {
            let storage = MemoryStorage::new();
            let options = ParquetOptions {
                compression: parse_compression(name, None, "c").unwrap(),
                ..Default::default()
            };
            let mut w =
                RollingParquetWriter::new(&storage, schema.clone(), options, || "f.parquet".into());
            let b = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(Int64Array::from_iter_values(0..1000))],
            )
            .unwrap();
            w.write(&b).unwrap();
            let file = w.finish_file().unwrap().unwrap();
            assert_eq!(file.row_count, 1000, "{name}");
            let tmp = std::env::temp_dir().join(format!("sdk-pq-{}.parquet", uuid::Uuid::new_v4()));
            std::fs::write(&tmp, storage.get("f.parquet").unwrap()).unwrap();
            let reader = parquet::file::reader::SerializedFileReader::new(
                std::fs::File::open(&tmp).unwrap(),
            )
            .unwrap();
            std::fs::remove_file(&tmp).unwrap();
            assert_eq!(reader.metadata().file_metadata().num_rows(), 1000, "{name}");
            let codec = reader.metadata().row_group(0).column(0).compression();
            assert_eq!(
                codec
                    .to_string()
                    .to_ascii_lowercase()
                    .split('(')
                    .next()
                    .unwrap(),
                name,
                "{name}"
            );
        }
    }

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Schema};

    use super::*;
    use crate::arrow_util::field_with_id;
    use crate::stats::Datum;
    use crate::storage::MemoryStorage;

    #[test]
    fn rolls_and_uploads() {
        let schema = Arc::new(Schema::new(vec![
            field_with_id("id", DataType::Int64, false, 0),
            field_with_id("s", DataType::Utf8, true, 1),
        ]));
        let storage = MemoryStorage::new();
        let mut n = 0;
        let options = ParquetOptions {
            target_file_size: 1,
            ..Default::default()
        };
        let mut w = RollingParquetWriter::new(&storage, schema.clone(), options, move || {
            n += 1;
            format!("f-{n}.parquet")
        });
        let mut files = Vec::new();
        for i in 0..3i64 {
            let b = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(vec![i * 10, i * 10 + 1])),
                    Arc::new(StringArray::from(vec![Some("x"), None])),
                ],
            )
            .unwrap();
            files.extend(w.write(&b).unwrap());
        }
        files.extend(w.finish_file().unwrap());
        assert_eq!(files.len(), 3);
        assert_eq!(files[2].path, "f-3.parquet");
        assert_eq!(files[2].row_count, 2);
        assert_eq!(files[2].column_stats[0].min, Some(Datum::Int64(20)));
        assert_eq!(files[2].column_stats[1].null_count, 1);
        let bytes = storage.get("f-1.parquet").unwrap();
        assert_eq!(bytes.len() as u64, files[0].size);
        assert_eq!(&bytes[..4], b"PAR1");
        let tmp = std::env::temp_dir().join(format!("sdk-pq-{}.parquet", uuid::Uuid::new_v4()));
        std::fs::write(&tmp, &bytes).unwrap();
        let reader =
            parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&tmp).unwrap())
                .unwrap();
        std::fs::remove_file(&tmp).unwrap();
        use parquet::file::reader::FileReader;
        let schema = reader.metadata().file_metadata().schema_descr();
        assert_eq!(schema.column(1).self_type().get_basic_info().id(), 1);
    }
}
