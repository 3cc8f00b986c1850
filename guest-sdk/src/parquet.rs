//! Writing Parquet data files through [`Storage`].
//!
//! Each file is encoded straight into an [`ObjectWriter`] (an upload in parts), so a plugin
//! holds one row group being encoded (at most [`ParquetOptions::row_group_bytes`]) and one
//! part, whatever the file's size. The writer *rolls*: once a file reaches the target file
//! size it is completed and a new one starts. Column statistics are collected on the way (see
//! [`crate::stats`]) so formats can describe files in their metadata without reading them
//! back.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};

use crate::error::{Error, Result, ResultExt};
use crate::stats::ColumnStats;
use crate::storage::{ObjectWriter, Storage};

/// Settings of a [`RollingParquetWriter`].
#[derive(Debug, Clone)]
pub struct ParquetOptions {
    /// Roll to a new file once the encoded size reaches this many bytes.
    pub target_file_size: u64,
    /// Compression codec: zstd level 1 unless the table says otherwise ([`parse_compression`]).
    pub compression: Compression,
    /// Maximum rows per row group.
    pub max_row_group_rows: usize,
    /// A row group is closed (and its bytes sent) once its encoded size reaches this: what
    /// bounds the writer's memory, with one upload part.
    pub row_group_bytes: usize,
    /// Whether to embed the Arrow schema (`ARROW:schema`) in the footer. Java writers do not.
    pub embed_arrow_schema: bool,
    /// Whether [`DataFileInfo::column_stats`] has statistics of the fields of struct columns
    /// (Iceberg's and Delta's metrics have them; Paimon keeps none for nested columns, so
    /// computing them would only cost time).
    pub struct_field_stats: bool,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            target_file_size: 128 << 20,
            compression: Compression::ZSTD(ZstdLevel::default()),
            max_row_group_rows: 1024 * 1024,
            row_group_bytes: 16 << 20,
            embed_arrow_schema: false,
            struct_field_stats: true,
        }
    }
}

/// The Parquet codec a table option names, spelled as Java's Parquet writers spell it
/// (`zstd`, `snappy`, `lz4`, `gzip`, `uncompressed` or `none`; any case), at `level` where
/// the codec has levels (zstd 1–22, gzip 0–10; the codec's default
/// level when `None`). `option` names the table option, for the error: an unknown codec or a
/// codec guests do not have (`lzo`) is `unsupported`, a bad level `invalid-input`.
pub fn parse_compression(name: &str, level: Option<i32>, option: &str) -> Result<Compression> {
    let bad_level = |e: parquet::errors::ParquetError| {
        Error::invalid_input(format!("{option}: {name} level {level:?}: {e}"))
    };
    let codec = match name.trim().to_ascii_lowercase().as_str() {
        "uncompressed" | "none" => Compression::UNCOMPRESSED,
        "snappy" => Compression::SNAPPY,
        "lz4" => Compression::LZ4,
        "lz4_raw" => Compression::LZ4_RAW,
        "zstd" => Compression::ZSTD(match level {
            Some(l) => ZstdLevel::try_new(l).map_err(bad_level)?,
            None => ZstdLevel::default(),
        }),
        "gzip" => Compression::GZIP(match level {
            Some(l) => {
                GzipLevel::try_new(u32::try_from(l).unwrap_or(u32::MAX)).map_err(bad_level)?
            }
            None => GzipLevel::default(),
        }),
        other => {
            return Err(Error::unsupported(format!(
                "{option} = {other:?}: this plugin writes Parquet with zstd, snappy, lz4, gzip or \
                 uncompressed; set {option} to one of them"
            )));
        }
    };
    Ok(codec)
}

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

struct OpenFile {
    path: String,
    writer: ArrowWriter<ObjectWriter>,
    rows: u64,
    stats: Vec<ColumnStats>,
}

/// Writes record batches into Parquet files of roughly `target_file_size` bytes.
pub struct RollingParquetWriter<S: Storage> {
    storage: S,
    schema: SchemaRef,
    options: ParquetOptions,
    properties: WriterProperties,
    next_path: Box<dyn FnMut() -> String>,
    open: Option<OpenFile>,
}

impl<S: Storage> RollingParquetWriter<S> {
    /// A writer of files with `schema` (carry field ids with
    /// [`crate::arrow_util::field_with_id`]); `next_path` names each new file.
    pub fn new(
        storage: S,
        schema: SchemaRef,
        options: ParquetOptions,
        next_path: impl FnMut() -> String + 'static,
    ) -> Self {
        let properties = WriterProperties::builder()
            .set_compression(options.compression)
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_max_row_group_row_count(Some(options.max_row_group_rows.max(1)))
            .set_created_by("fluss-lake guest sdk".to_string())
            .build();
        RollingParquetWriter {
            storage,
            schema,
            options,
            properties,
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
            let options = ArrowWriterOptions::new()
                .with_properties(self.properties.clone())
                .with_skip_arrow_metadata(!self.options.embed_arrow_schema);
            let sink = ObjectWriter::create(&self.storage, &path)
                .with_context(|| format!("starting {path}"))?;
            let writer = ArrowWriter::try_new_with_options(sink, self.schema.clone(), options)?;
            let stats = vec![ColumnStats::default(); self.schema.fields().len()];
            self.open = Some(OpenFile {
                path,
                writer,
                rows: 0,
                stats,
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
        file.writer
            .write(batch)
            .with_context(|| format!("encoding {}", file.path))?;
        file.rows += batch.num_rows() as u64;
        for (s, col) in file.stats.iter_mut().zip(batch.columns()) {
            s.merge(&ColumnStats::of_array(
                col.as_ref(),
                self.options.struct_field_stats,
            ));
        }
        if file.writer.in_progress_size() >= self.options.row_group_bytes {
            file.writer
                .flush()
                .with_context(|| format!("encoding {}", file.path))?;
        }
        let size = file.writer.bytes_written() as u64 + file.writer.in_progress_size() as u64;
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
            // opened by `ensure_open` but never written: dropping the writer aborts the upload
            return Ok(None);
        }
        let sink = file
            .writer
            .into_inner()
            .with_context(|| format!("finishing {}", file.path))?;
        let size = sink
            .finish()
            .with_context(|| format!("uploading {}", file.path))?;
        Ok(Some(DataFileInfo {
            path: file.path,
            size,
            row_count: file.rows,
            column_stats: file.stats,
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

    #[test]
    fn codec_names_and_levels_are_parsed_as_java_writers_spell_them() {
        let opt = "file.compression";
        assert_eq!(
            parse_compression("ZSTD", Some(1), opt).unwrap(),
            Compression::ZSTD(ZstdLevel::try_new(1).unwrap())
        );
        assert_eq!(
            parse_compression("zstd", None, opt).unwrap(),
            Compression::ZSTD(ZstdLevel::default())
        );
        assert_eq!(
            parse_compression("snappy", None, opt).unwrap(),
            Compression::SNAPPY
        );
        assert_eq!(
            parse_compression("lz4", None, opt).unwrap(),
            Compression::LZ4
        );
        assert_eq!(
            parse_compression("none", None, opt).unwrap(),
            Compression::UNCOMPRESSED
        );
        assert!(matches!(
            parse_compression("gzip", Some(9), opt).unwrap(),
            Compression::GZIP(_)
        ));
        // LZO and brotli: parquet-mr has no codec of its own for them (Hadoop codec classes
        // Paimon and Iceberg do not bundle), and the plugins lack them too.
        for name in ["lzo", "brotli"] {
            let e = parse_compression(name, None, opt).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
            assert!(e.message().contains("file.compression"), "{e}");
        }
        let e = parse_compression("zstd", Some(99), opt).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{e}");
    }

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
