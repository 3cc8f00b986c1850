//! Writing one bucket's rows of one round (Fluss `PaimonLakeWriter`): log tables go through
//! [`AppendWriter`] (Paimon's `AppendOnlyWriter`), primary-key tables through
//! [`MergeTreeWriter`] (Paimon's `MergeTreeWriter`). Both write Parquet files under
//! `[partition/]bucket-<b>/` and describe them in a [`CommitMessage`], the write result.

use std::collections::BTreeMap;

use fluss_lake_guest_sdk::data_plane::SplitRows;
use fluss_lake_guest_sdk::ipc::decode_row_batch;
use fluss_lake_guest_sdk::parquet::{Encoding, ParquetOptions, parse_compression};
use fluss_lake_guest_sdk::plugin::FormatWriter;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{RowBatch, WriteResult, WriterContext};
use fluss_lake_guest_sdk::{Error, Result, config};

use crate::append_writer::AppendWriter;
use crate::commit_message::CommitMessage;
use crate::manifest::{DataFileMeta, FileKind, ManifestEntry};
use crate::merge_tree::MergeTreeWriter;
use crate::rows::TableRows;
use crate::schema::{TableSchema, check_compatible, load_latest_schema_of};
use crate::table::{BucketMode, DataFileNames, Partition, bucket_dir, check_supported};
use parquet::basic::Compression;

/// Default rolling size (Paimon uses 256 MB for append tables and 128 MB for primary-key
/// tables; 128 MB keeps guest memory lower). Overridden by the plugin config or the table
/// option `target-file-size`.
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 128 << 20;

/// The target data file size: plugin config, else table option, else the default.
pub fn target_file_size(
    config: &[(String, String)],
    options: &BTreeMap<String, String>,
) -> Result<u64> {
    target_file_size_or(config, options, DEFAULT_TARGET_FILE_SIZE)
}

/// The target data file size: plugin config, else table option, else `default`.
pub fn target_file_size_or(
    config: &[(String, String)],
    options: &BTreeMap<String, String>,
    default: u64,
) -> Result<u64> {
    if let Some(v) = config::get(config, "target-file-size") {
        return config::parse_size(v);
    }
    match options.get("target-file-size") {
        Some(v) => config::parse_size(v),
        None => Ok(default),
    }
}

/// The Parquet codec of new level-0 data files ([`file_compression_at`] level 0).
pub fn file_compression(
    config: &[(String, String)],
    options: &BTreeMap<String, String>,
) -> Result<Compression> {
    file_compression_at(config, options, 0)
}

/// The Parquet codec of data files written at `level`, as Java Paimon chooses it: the
/// level's entry of `file.compression.per.level` (`0:lz4,1:zstd`), else `file.compression`
/// (default zstd), at `file.compression.zstd-level` (default 1). Plugin config first, then
/// the table option.
pub fn file_compression_at(
    config: &[(String, String)],
    options: &BTreeMap<String, String>,
    level: i32,
) -> Result<Compression> {
    let get = |key: &str| config::get(config, key).or_else(|| options.get(key).map(String::as_str));
    let level = level.to_string();
    let per_level = get("file.compression.per.level").and_then(|v| {
        v.split(',').find_map(|entry| {
            let (l, codec) = entry.split_once(':')?;
            (l.trim() == level).then_some(codec.trim())
        })
    });
    let (name, option) = match per_level {
        Some(codec) => (codec, "file.compression.per.level"),
        None => (
            get("file.compression").unwrap_or("zstd"),
            "file.compression",
        ),
    };
    let level = match get("file.compression.zstd-level") {
        Some(v) => Some(v.trim().parse::<i32>().map_err(|_| {
            Error::invalid_input(format!(
                "file.compression.zstd-level = {v:?} is not a number"
            ))
        })?),
        None => Some(1),
    };
    let level = if name.trim().eq_ignore_ascii_case("zstd") {
        level
    } else {
        None
    };
    Ok(parse_compression(name, level, option)?)
}

/// Where and how one writer writes, resolved once when it opens.
pub struct BucketTarget {
    /// The latest table schema.
    pub schema: TableSchema,
    /// Converter of Fluss batches into table rows.
    pub rows: TableRows,
    /// The partition written.
    pub partition: Partition,
    /// The Paimon bucket written.
    pub bucket: i32,
    /// `_TOTAL_BUCKETS` of the files.
    pub total_buckets: i32,
    /// Names of new files in the bucket directory.
    pub names: DataFileNames,
    /// Parquet settings (target file size).
    pub parquet: ParquetOptions,
}

impl BucketTarget {
    /// Reads the latest schema, checks it, and resolves bucket and partition.
    pub fn open(context: &WriterContext, storage: &dyn Storage) -> Result<BucketTarget> {
        let schema = load_latest_schema_of(storage, context.table.table_id)?.ok_or_else(|| {
            Error::not_found(format!(
                "Paimon table {}.{} has no schema",
                context.table.path.database, context.table.path.table
            ))
        })?;
        check_supported(&schema, Some(&context.table))?;
        let layout = check_compatible(&schema, &context.table)?;
        let (bucket, total_buckets) =
            BucketMode::of(&schema)?.place(context.bucket, context.table.num_buckets)?;
        let partition = Partition::from_fluss_name(&schema, context.partition_name.as_deref())?;
        let parquet = ParquetOptions {
            target_file_size: target_file_size(&context.config, &schema.options)?,
            compression: file_compression(&context.config, &schema.options)?,
            // Paimon keeps no statistics of nested columns (`value_stats`).
            struct_field_stats: false,
            ..Default::default()
        };
        Ok(BucketTarget {
            rows: TableRows::new(layout, context.bucket)?,
            names: DataFileNames::new(bucket_dir(&partition, bucket)),
            schema,
            partition,
            bucket,
            total_buckets,
            parquet,
        })
    }

    /// The manifest entry adding `file` to this bucket.
    pub fn entry(&self, file: DataFileMeta) -> ManifestEntry {
        ManifestEntry {
            kind: FileKind::Add,
            partition: self.partition.row.clone(),
            bucket: self.bucket,
            total_buckets: self.total_buckets,
            file,
        }
    }

    /// The write result describing new data and changelog files of this bucket.
    pub fn write_result(
        &self,
        data_files: Vec<DataFileMeta>,
        changelog_files: Vec<DataFileMeta>,
        record_count: u64,
    ) -> Result<WriteResult> {
        let message = CommitMessage {
            data_files: data_files.into_iter().map(|f| self.entry(f)).collect(),
            changelog_files: changelog_files.into_iter().map(|f| self.entry(f)).collect(),
        };
        Ok(WriteResult {
            payload: message.encode()?,
            record_count,
            file_bytes: message.all_files().map(|e| e.file.file_size as u64).sum(),
        })
    }
}

/// Writes one bucket (of one partition) for one round. (Boxed: the writers are large and one
/// lives per call.)
pub enum PaimonWriter<S: Storage> {
    /// A log table.
    Append(Box<AppendWriter<S>>),
    /// A primary-key table.
    PrimaryKey(Box<MergeTreeWriter<S>>),
}

impl<S: Storage> PaimonWriter<S> {
    /// Opens the writer the table needs, encoding its files here.
    pub fn open(context: &WriterContext, storage: S) -> Result<Self> {
        Self::open_encoded(context, storage, Encoding::Guest)
    }

    /// Opens the writer the table needs, whose files are encoded as `encoding` says (a
    /// primary-key table's rows are sorted and merged here either way; with
    /// [`Encoding::Host`] only their keys come here).
    pub fn open_encoded(context: &WriterContext, storage: S, encoding: Encoding) -> Result<Self> {
        let target = BucketTarget::open(context, &storage)?;
        Ok(if target.schema.primary_keys.is_empty() {
            PaimonWriter::Append(Box::new(AppendWriter::new(target, storage, encoding)?))
        } else {
            PaimonWriter::PrimaryKey(Box::new(MergeTreeWriter::new(
                target,
                &context.config,
                storage,
                encoding,
            )?))
        })
    }

    /// Appends a row batch, in log order.
    pub fn write(&mut self, batch: RowBatch) -> Result<()> {
        self.write_rows(SplitRows::Decoded(decode_row_batch(batch)?))
    }

    /// Appends a batch of rows, in log order.
    pub fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<()> {
        match self {
            PaimonWriter::Append(w) => w.write(rows),
            PaimonWriter::PrimaryKey(w) => w.write(rows),
        }
    }

    /// Flushes everything and returns the write result (possibly without files).
    pub fn complete(self) -> Result<WriteResult> {
        match self {
            PaimonWriter::Append(w) => w.complete(),
            PaimonWriter::PrimaryKey(w) => w.complete(),
        }
    }
}

/// The SDK's writer interface (the WIT adapter drives it): a log table's files are encoded by
/// the host when it keeps the rows (`open_batches`).
impl<S: Storage> FormatWriter<S> for PaimonWriter<S> {
    fn open(context: &WriterContext, storage: S) -> Result<Self> {
        PaimonWriter::open(context, storage)
    }
    fn open_batches(context: &WriterContext, storage: S) -> Result<Self> {
        PaimonWriter::open_encoded(context, storage, Encoding::Host)
    }
    fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<()> {
        PaimonWriter::write_rows(self, rows)
    }
    fn complete(self) -> Result<WriteResult> {
        PaimonWriter::complete(self)
    }
}

#[cfg(test)]
mod tests {
    use parquet::basic::ZstdLevel;

    use super::*;

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn data_files_use_the_codec_java_paimon_would() {
        let zstd1 = Compression::ZSTD(ZstdLevel::try_new(1).unwrap());
        assert_eq!(file_compression(&[], &options(&[])).unwrap(), zstd1);
        assert_eq!(
            file_compression(&[], &options(&[("file.compression", "snappy")])).unwrap(),
            Compression::SNAPPY
        );
        assert_eq!(
            file_compression(&[], &options(&[("file.compression.zstd-level", "3")])).unwrap(),
            Compression::ZSTD(ZstdLevel::try_new(3).unwrap())
        );
        // Level 0 of `file.compression.per.level` wins for the level-0 files tiering writes.
        let per_level = options(&[
            ("file.compression", "zstd"),
            ("file.compression.per.level", "0:lz4,1:zstd"),
        ]);
        assert_eq!(file_compression(&[], &per_level).unwrap(), Compression::LZ4);
        // The plugin configuration overrides the table.
        let config = vec![("file.compression".to_string(), "none".to_string())];
        assert_eq!(
            file_compression(&config, &options(&[("file.compression", "snappy")])).unwrap(),
            Compression::UNCOMPRESSED
        );
        let e = file_compression(&[], &options(&[("file.compression", "lzo")])).unwrap_err();
        assert_eq!(e.kind(), fluss_lake_guest_sdk::ErrorKind::Unsupported);
        assert!(e.message().contains("file.compression"), "{e}");
    }
}
