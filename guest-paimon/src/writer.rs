//! Writing one bucket's rows of one round into Paimon data files (Fluss `PaimonLakeWriter`
//! with Paimon's `AppendOnlyWriter`): rows go into rolling Parquet files named
//! `data-<uuid>-<n>.parquet` under `[partition/]bucket-<b>/`, and `complete` describes them
//! as Paimon `ManifestEntry`s (ADD), serialized as an Avro container: the write result.
//!
//! Sequence numbers: Paimon's append writer numbers rows consecutively per writer; here the
//! Fluss log offsets are used, which are consecutive per bucket too and keep growing across
//! rounds, so files of a fixed bucket stay ordered by sequence number as Paimon expects.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use fluss_lake_guest_sdk::arrow_util::PARQUET_FIELD_ID_KEY;
use fluss_lake_guest_sdk::ipc::decode_row_batch;
use fluss_lake_guest_sdk::parquet::{DataFileInfo, ParquetOptions, RollingParquetWriter};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{RowBatch, WriteResult, WriterContext};
use fluss_lake_guest_sdk::{Error, Result, ResultExt, clock, config};

use crate::binary_row::empty_row;
use crate::convert::{constant_i32, i64_column, millis_column, to_file_array};
use crate::manifest::{DataFileMeta, FileKind, ManifestEntry, encode_entries};
use crate::schema::{TableLayout, check_compatible, load_latest_schema};
use crate::stats::{SimpleStats, StatsMode, stats_modes, value_stats};
use crate::table::{BucketMode, Partition, bucket_dir, check_supported};
use crate::types::PaimonType;

/// Default rolling size (Paimon uses 256 MB for append tables; 128 MB keeps guest memory
/// lower). Overridden by the plugin config or the table option `target-file-size`.
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 128 << 20;

/// The target data file size: plugin config, else table option, else the default.
pub fn target_file_size(
    config: &[(String, String)],
    options: &BTreeMap<String, String>,
) -> Result<u64> {
    if let Some(v) = config::get(config, "target-file-size") {
        return config::parse_size(v);
    }
    match options.get("target-file-size") {
        Some(v) => config::parse_size(v),
        None => Ok(DEFAULT_TARGET_FILE_SIZE),
    }
}

/// Writes one bucket (of one partition) for one round.
pub struct PaimonWriter<S: Storage> {
    layout: TableLayout,
    schema_id: i64,
    fluss_columns: usize,
    fluss_bucket: i32,
    bucket: i32,
    total_buckets: i32,
    partition: Partition,
    file_schema: SchemaRef,
    modes: Vec<StatsMode>,
    dense_stats: bool,
    writer: RollingParquetWriter<S>,
    /// Sequence range of the rows in the open file.
    open_seq: Option<(i64, i64)>,
    files: Vec<DataFileMeta>,
    records: u64,
}

impl<S: Storage> PaimonWriter<S> {
    /// Opens a writer: reads the latest schema and resolves bucket and partition.
    pub fn open(context: &WriterContext, storage: S) -> Result<Self> {
        let schema = load_latest_schema(&storage)?.ok_or_else(|| {
            Error::not_found(format!(
                "Paimon table {}.{} has no schema",
                context.table.path.database, context.table.path.table
            ))
        })?;
        check_supported(&schema, Some(&context.table))?;
        let layout = check_compatible(&schema, &context.table)?;
        let (bucket, total_buckets) = BucketMode::of(&schema)?.place(context.bucket)?;
        let partition = Partition::from_fluss_name(&schema, context.partition_name.as_deref())?;
        let names: Vec<&str> = layout.fields.iter().map(|(n, _, _)| n.as_str()).collect();
        let modes = stats_modes(&names, &schema.options)?;
        let dense_stats = schema
            .option("metadata.stats-dense-store")
            .is_none_or(|v| !v.eq_ignore_ascii_case("false"));
        let file_schema = Arc::new(Schema::new(
            layout
                .fields
                .iter()
                .map(|(name, ty, id)| {
                    let mut md = ty.arrow_field_metadata();
                    md.insert(PARQUET_FIELD_ID_KEY.to_string(), id.to_string());
                    Field::new(name, ty.arrow_file_type(), ty.nullable).with_metadata(md)
                })
                .collect::<Vec<_>>(),
        ));
        let options = ParquetOptions {
            target_file_size: target_file_size(&context.config, &schema.options)?,
            ..Default::default()
        };
        let dir = bucket_dir(&partition, bucket);
        let prefix = schema
            .option("data-file.prefix")
            .unwrap_or("data-")
            .to_string();
        let uuid = uuid::Uuid::new_v4();
        let mut counter = 0u64;
        let writer = RollingParquetWriter::new(storage, file_schema.clone(), options, move || {
            counter += 1;
            format!("{dir}/{prefix}{uuid}-{}.parquet", counter - 1)
        });
        Ok(PaimonWriter {
            fluss_columns: context.table.columns.len(),
            layout,
            schema_id: schema.id,
            fluss_bucket: context.bucket,
            bucket,
            total_buckets,
            partition,
            file_schema,
            modes,
            dense_stats,
            writer,
            open_seq: None,
            files: Vec::new(),
            records: 0,
        })
    }

    /// Converts a Fluss batch to the file schema, filling system columns and padding columns
    /// the lake has but Fluss does not send.
    fn to_file_batch(
        &self,
        batch: &RecordBatch,
        offsets: &[i64],
        timestamps: &[i64],
    ) -> Result<RecordBatch> {
        if batch.num_columns() != self.fluss_columns {
            return Err(Error::invalid_input(format!(
                "batch has {} columns, the Fluss table {}",
                batch.num_columns(),
                self.fluss_columns
            )));
        }
        let n = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.layout.fields.len());
        for (i, (name, ty, _)) in self.layout.fields.iter().enumerate() {
            let target = self.file_schema.field(i).data_type();
            let col = if i < self.fluss_columns {
                to_file_array(batch.column(i), target, ty.nullable, name)?
            } else if i < self.layout.business_columns {
                arrow_array::new_null_array(target, n)
            } else {
                match i - self.layout.business_columns {
                    0 => constant_i32(self.fluss_bucket, n),
                    1 => i64_column(offsets),
                    _ => millis_column(timestamps, target)?,
                }
            };
            columns.push(col);
        }
        Ok(RecordBatch::try_new(self.file_schema.clone(), columns)?)
    }

    /// Appends a row batch (log tables: every row must be `+A` or `+I`).
    pub fn write(&mut self, row_batch: RowBatch) -> Result<()> {
        let decoded = decode_row_batch(row_batch)?;
        if decoded.num_rows() == 0 {
            return Ok(());
        }
        if !decoded.is_insert_only() {
            let bad = (0..decoded.num_rows())
                .map(|i| decoded.change_type(i))
                .find(|c| !matches!(c, Ok(c) if c.is_addition()));
            return Err(Error::invalid_input(format!(
                "append-only Paimon tables only take +A/+I rows, got {bad:?}"
            )));
        }
        let file_batch =
            self.to_file_batch(&decoded.batch, &decoded.log_offsets, &decoded.timestamps)?;
        let (first, last) = decoded.offset_range().expect("non-empty batch");
        self.open_seq = Some(match self.open_seq {
            None => (first, last),
            Some((lo, hi)) => (lo.min(first), hi.max(last)),
        });
        self.records += decoded.num_rows() as u64;
        if let Some(info) = self.writer.write(&file_batch)? {
            self.add_file(info)?;
        }
        Ok(())
    }

    fn add_file(&mut self, info: DataFileInfo) -> Result<()> {
        let (min_seq, max_seq) = self
            .open_seq
            .take()
            .unwrap_or((0, info.row_count as i64 - 1));
        let fields: Vec<(&str, PaimonType)> = self
            .layout
            .fields
            .iter()
            .map(|(n, t, _)| (n.as_str(), *t))
            .collect();
        let (cols, stats) =
            value_stats(&fields, &info.column_stats, &self.modes, self.dense_stats)?;
        let file_name = info
            .path
            .rsplit('/')
            .next()
            .unwrap_or(&info.path)
            .to_string();
        self.files.push(DataFileMeta {
            file_name,
            file_size: info.size as i64,
            row_count: info.row_count as i64,
            min_key: empty_row(),
            max_key: empty_row(),
            key_stats: SimpleStats::empty(),
            value_stats: stats,
            min_sequence_number: min_seq,
            max_sequence_number: max_seq,
            schema_id: self.schema_id,
            level: 0,
            extra_files: Vec::new(),
            creation_time: Some(clock::now_millis()),
            delete_row_count: Some(0),
            embedded_index: None,
            file_source: Some(0),
            value_stats_cols: cols,
            external_path: None,
            first_row_id: None,
            write_cols: None,
        });
        Ok(())
    }

    /// Flushes the open file and returns the write result (possibly without files).
    pub fn complete(mut self) -> Result<WriteResult> {
        if let Some(info) = self
            .writer
            .finish_file()
            .context("completing the last data file")?
        {
            self.add_file(info)?;
        }
        let entries: Vec<ManifestEntry> = self
            .files
            .iter()
            .map(|f| ManifestEntry {
                kind: FileKind::Add,
                partition: self.partition.row.clone(),
                bucket: self.bucket,
                total_buckets: self.total_buckets,
                file: f.clone(),
            })
            .collect();
        Ok(WriteResult {
            payload: encode_entries(&entries)?,
            record_count: self.records,
            file_bytes: self.files.iter().map(|f| f.file_size as u64).sum(),
        })
    }
}
