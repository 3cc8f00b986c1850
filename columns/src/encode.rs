//! Encoding one Parquet data file: the writer settings a plugin chooses, and the encoder both
//! the guest SDK and the host's native data plane write files with.
//!
//! The encoder holds one row group being encoded: it closes the row group (and hands its
//! bytes to the sink) once it reaches [`ParquetOptions::row_group_bytes`], which bounds its
//! memory whatever the file's size. Column statistics are collected on the way, so formats
//! describe files in their metadata without reading them back.

use std::io::Write;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};

use crate::error::{Error, Result};
use crate::stats::ColumnStats;

/// What written files say wrote them (`created_by`), whichever side encoded them.
pub const CREATED_BY: &str = "fluss-lake";

/// Settings of the files a writer encodes.
#[derive(Debug, Clone, PartialEq)]
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
    /// Whether the statistics have those of the fields of struct columns (Iceberg's and
    /// Delta's metrics have them; Paimon keeps none for nested columns, so computing them would
    /// only cost time).
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

impl ParquetOptions {
    /// The Parquet writer's properties for these options.
    pub fn writer_properties(&self) -> WriterProperties {
        WriterProperties::builder()
            .set_compression(self.compression)
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_max_row_group_row_count(Some(self.max_row_group_rows.max(1)))
            .set_created_by(CREATED_BY.to_string())
            .build()
    }
}

/// The Parquet codec a table option names, spelled as Java's Parquet writers spell it
/// (`zstd`, `snappy`, `lz4`, `gzip`, `uncompressed` or `none`; any case), at `level` where
/// the codec has levels (zstd 1–22, gzip 0–10; the codec's default
/// level when `None`). `option` names the table option, for the error: an unknown codec or a
/// codec this encoder does not have (`lzo`) is `unsupported`, a bad level `invalid-input`.
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

/// What an encoded file holds, besides its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedFile {
    /// Rows in the file.
    pub row_count: u64,
    /// Statistics per column, in schema order.
    pub column_stats: Vec<ColumnStats>,
}

/// Encodes record batches into one Parquet file written to `W`.
pub struct FileEncoder<W: Write + Send> {
    writer: ArrowWriter<W>,
    schema: SchemaRef,
    rows: u64,
    stats: Vec<ColumnStats>,
    row_group_bytes: usize,
    struct_field_stats: bool,
}

impl<W: Write + Send> FileEncoder<W> {
    /// An encoder of a file with `schema` (field ids in the fields' `PARQUET:field_id`
    /// metadata) into `sink`.
    pub fn new(sink: W, schema: SchemaRef, options: &ParquetOptions) -> Result<Self> {
        let writer_options = ArrowWriterOptions::new()
            .with_properties(options.writer_properties())
            .with_skip_arrow_metadata(!options.embed_arrow_schema);
        let writer = ArrowWriter::try_new_with_options(sink, schema.clone(), writer_options)?;
        Ok(FileEncoder {
            writer,
            stats: vec![ColumnStats::default(); schema.fields().len()],
            schema,
            rows: 0,
            row_group_bytes: options.row_group_bytes,
            struct_field_stats: options.struct_field_stats,
        })
    }

    /// The schema of the file.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Encodes a batch, whose fields must be the file's. Closes the row group once it
    /// reaches the options' `row_group_bytes`.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if batch.schema().fields() != self.schema.fields() {
            return Err(Error::invalid_input(format!(
                "batch schema {:?} differs from file schema {:?}",
                batch.schema(),
                self.schema
            )));
        }
        self.writer.write(batch)?;
        self.rows += batch.num_rows() as u64;
        for (s, col) in self.stats.iter_mut().zip(batch.columns()) {
            s.merge(&ColumnStats::of_array(
                col.as_ref(),
                self.struct_field_stats,
            ));
        }
        if self.writer.in_progress_size() >= self.row_group_bytes {
            self.writer.flush()?;
        }
        Ok(())
    }

    /// Rows encoded so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes encoded so far: those handed to the sink plus the open row group's estimate.
    pub fn size(&self) -> u64 {
        self.writer.bytes_written() as u64 + self.writer.in_progress_size() as u64
    }

    /// Memory the open row group holds.
    pub fn buffered_bytes(&self) -> usize {
        self.writer.memory_size()
    }

    /// The sink, to take the bytes written to it so far (the encoder counts offsets itself).
    pub fn sink_mut(&mut self) -> &mut W {
        self.writer.inner_mut()
    }

    /// Writes the footer and returns the sink and what the file holds.
    pub fn finish(self) -> Result<(W, EncodedFile)> {
        let sink = self.writer.into_inner()?;
        Ok((
            sink,
            EncodedFile {
                row_count: self.rows,
                column_stats: self.stats,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int64Array};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::stats::Datum;

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
            assert!(matches!(e, Error::Unsupported(_)), "{e}");
            assert!(e.to_string().contains("file.compression"), "{e}");
        }
        let e = parse_compression("zstd", Some(99), opt).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    }

    #[test]
    fn an_encoded_file_has_its_rows_statistics_and_row_groups() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("x", DataType::Float64, true),
        ]));
        let options = ParquetOptions {
            row_group_bytes: 1,
            ..Default::default()
        };
        let mut encoder = FileEncoder::new(Vec::new(), schema.clone(), &options).unwrap();
        for i in 0..3i64 {
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(vec![i, i + 10])),
                    Arc::new(Float64Array::from(vec![Some(f64::NAN), None])),
                ],
            )
            .unwrap();
            encoder.write(&batch).unwrap();
        }
        assert_eq!(encoder.rows(), 6);
        let wrong = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from(vec![1]))],
        )
        .unwrap();
        assert!(matches!(encoder.write(&wrong), Err(Error::InvalidInput(_))));
        let (bytes, file) = encoder.finish().unwrap();
        assert_eq!(file.row_count, 6);
        assert_eq!(file.column_stats[0].min, Some(Datum::Int64(0)));
        assert_eq!(file.column_stats[0].max, Some(Datum::Int64(12)));
        assert_eq!(file.column_stats[1].null_count, 3);
        let reader =
            parquet::file::serialized_reader::SerializedFileReader::new(bytes::Bytes::from(bytes))
                .unwrap();
        use parquet::file::reader::FileReader;
        let meta = reader.metadata();
        assert_eq!(meta.num_row_groups(), 3);
        assert_eq!(meta.file_metadata().created_by(), Some(CREATED_BY));
    }
}
