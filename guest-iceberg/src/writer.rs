//! The writer of one split (a Fluss bucket of a partition): log tables append data files;
//! primary-key tables write deltas as Fluss's Java `DeltaTaskWriter` (Iceberg's
//! `BaseEqualityDeltaWriter`) does:
//! - `+I` / `+U` rows go to data files; a key written earlier in this round gets a position
//!   delete for its earlier row;
//! - `-U` / `-D` rows delete the key's row written earlier in this round by position, or
//!   else every older row of the key by an equality delete (full row, `equality_ids` = the
//!   primary key), which applies to data files of earlier sequence numbers only.

use std::collections::HashMap;

use arrow_array::{BooleanArray, RecordBatch};
use fluss_lake_guest_sdk::arrow_util::row_keys;
use fluss_lake_guest_sdk::data_plane::SplitRows;
use fluss_lake_guest_sdk::deps::arrow_select::filter::filter_record_batch;
use fluss_lake_guest_sdk::ipc::ChangeType;
use fluss_lake_guest_sdk::parquet::{Encoding, ParquetOptions, parse_compression};
use fluss_lake_guest_sdk::plugin::FormatWriter;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{WriteResult, WriterContext};
use fluss_lake_guest_sdk::{Error, Result, config};
use parquet::basic::Compression;
use serde::{Deserialize, Serialize};

use crate::file_writer::{ContentWriter, SplitTarget, write_position_deletes};
use crate::manifest::DataFile;
use crate::schema::TableLayout;
use crate::tables;

/// Table properties of the Parquet codec (Iceberg's defaults: zstd, at parquet-mr's default
/// zstd level 3).
pub const COMPRESSION_CODEC: &str = "write.parquet.compression-codec";
/// See [`COMPRESSION_CODEC`].
pub const COMPRESSION_LEVEL: &str = "write.parquet.compression-level";

/// The Parquet codec of new data and delete files: plugin config, else table property, else
/// Iceberg's default, as Java's `Parquet.write` resolves it.
pub fn data_compression<'a>(
    config: &'a [(String, String)],
    property: impl Fn(&str) -> Option<&'a str>,
) -> Result<Compression> {
    let get = |key: &str| config::get(config, key).or_else(|| property(key));
    let codec = get(COMPRESSION_CODEC).unwrap_or("zstd");
    let level = match get(COMPRESSION_LEVEL) {
        Some(v) => Some(v.trim().parse::<i32>().map_err(|_| {
            Error::invalid_input(format!("{COMPRESSION_LEVEL} = {v:?} is not a number"))
        })?),
        None if codec.trim().eq_ignore_ascii_case("zstd") => Some(3),
        None => None,
    };
    Ok(parse_compression(codec, level, COMPRESSION_CODEC)?)
}

/// Plugin config / table property for the target data file size.
pub const TARGET_FILE_SIZE: &str = "write.target-file-size-bytes";
/// Files are built in guest memory before upload, so the default stays well below Iceberg's
/// 512 MiB to keep several concurrent splits within the plugin memory limit.
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 128 << 20;

/// The size new data files roll at: the plugin config wins; the table's own
/// `write.target-file-size-bytes` (`table_value`) is capped by [`DEFAULT_TARGET_FILE_SIZE`].
pub fn target_file_size(config: &[(String, String)], table_value: Option<&str>) -> Result<u64> {
    Ok(match (config::get(config, TARGET_FILE_SIZE), table_value) {
        (Some(v), _) => config::parse_size(v)?,
        (None, Some(v)) => config::parse_size(v)?.min(DEFAULT_TARGET_FILE_SIZE),
        (None, None) => DEFAULT_TARGET_FILE_SIZE,
    })
}

/// What a split hands to the committer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WritePayload {
    pub files: Vec<DataFile>,
}

impl WritePayload {
    pub fn encode(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::internal(format!("encoding write result: {e}")))
    }
    pub fn decode(bytes: &[u8]) -> Result<WritePayload> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::invalid_input(format!("not an Iceberg write result: {e}")))
    }
}

struct Delta<S: Storage> {
    key_columns: Vec<usize>,
    eq_deletes: ContentWriter<S>,
    /// Keys written by this split, with where their latest row is.
    inserted: HashMap<Vec<u8>, (u32, i64)>,
    paths: Vec<String>,
    pos_deletes: Vec<(u32, i64)>,
}

pub struct IcebergWriter<S: Storage + Clone> {
    storage: S,
    target: SplitTarget,
    data: ContentWriter<S>,
    delta: Option<Delta<S>>,
    records: u64,
}

impl<S: Storage + Clone> IcebergWriter<S> {
    /// Opens the split's writer; a log table's data files are encoded as `encoding` says (a
    /// primary-key table's rows are routed here by key, so they are always encoded here).
    pub fn open_encoded(context: &WriterContext, storage: S, encoding: Encoding) -> Result<Self> {
        let table = &context.table;
        let loaded = tables::load_for_writer(&storage, table.table_id)?.ok_or_else(|| {
            Error::not_found(format!(
                "Iceberg table {}.{} does not exist (no metadata/v<N>.metadata.json)",
                table.path.database, table.path.table
            ))
        })?;
        let m = &loaded.metadata;
        let schema = m.current_schema()?;
        let spec = m.default_spec()?;
        let layout = TableLayout::new(&schema, table)?;
        let partition = spec.values_for_split(
            &schema,
            table,
            context.partition_name.as_deref(),
            context.bucket,
        )?;
        let dir = match spec.path(&partition) {
            p if p.is_empty() => "data".to_string(),
            p => format!("data/{p}"),
        };
        let target_file_size = target_file_size(&context.config, m.property(TARGET_FILE_SIZE))?;
        let target = SplitTarget {
            layout,
            spec,
            partition,
            location: m.location()?.to_string(),
            dir,
            bucket: context.bucket,
            parquet: ParquetOptions {
                target_file_size,
                compression: data_compression(&context.config, |k| m.property(k))?,
                ..Default::default()
            },
            file_counter: Default::default(),
            operation_id: uuid::Uuid::new_v4().to_string(),
        };
        let ids = &schema.identifier_field_ids;
        let delta = if ids.is_empty() {
            None
        } else {
            let key_columns = ids
                .iter()
                .map(|id| {
                    schema
                        .fields
                        .iter()
                        .position(|f| f.id == *id)
                        .ok_or_else(|| {
                            Error::corrupt(format!("identifier field {id} is not a column"))
                        })
                })
                .collect::<Result<Vec<_>>>()?;
            Some(Delta {
                key_columns,
                eq_deletes: ContentWriter::rows(storage.clone(), &target, Some(ids.clone())),
                inserted: HashMap::new(),
                paths: Vec::new(),
                pos_deletes: Vec::new(),
            })
        };
        let data = match (&delta, encoding) {
            (None, _) => ContentWriter::split_rows(storage.clone(), &target, encoding)?,
            _ => ContentWriter::rows(storage.clone(), &target, None),
        };
        Ok(IcebergWriter {
            data,
            storage,
            target,
            delta,
            records: 0,
        })
    }
}

impl<S: Storage + Clone> FormatWriter<S> for IcebergWriter<S> {
    fn open(context: &WriterContext, storage: S) -> Result<Self> {
        Self::open_encoded(context, storage, Encoding::Guest)
    }

    fn open_batches(context: &WriterContext, storage: S) -> Result<Self> {
        Self::open_encoded(context, storage, Encoding::Host)
    }

    fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<()> {
        if self.delta.is_none() {
            // A log table: its rows go to data files as they are.
            if let Some(bad) = rows.first_non_addition()? {
                return Err(Error::invalid_input(format!(
                    "update or delete rows ({bad:?}) for an Iceberg table without identifier \
                     fields (a Fluss log table)"
                )));
            }
            self.records += rows.num_rows() as u64;
            return self.data.write_rows(rows);
        }
        let decoded = rows.into_decoded()?;
        let n = decoded.num_rows();
        if n == 0 {
            return Ok(());
        }
        let rows =
            self.target
                .to_file_batch(&decoded.batch, &decoded.log_offsets, &decoded.timestamps)?;
        self.records += n as u64;
        let Some(delta) = self.delta.as_mut() else {
            return Err(Error::internal("a log table's rows were written above"));
        };
        let key_arrays: Vec<&dyn arrow_array::Array> = delta
            .key_columns
            .iter()
            .map(|c| rows.column(*c).as_ref())
            .collect();
        let keys = row_keys(&key_arrays)?;
        let (path, base) = self.data.next_position()?;
        let path_index = match delta.paths.last() {
            Some(p) if *p == path => delta.paths.len() as u32 - 1,
            _ => {
                delta.paths.push(path);
                delta.paths.len() as u32 - 1
            }
        };
        let mut insert = Vec::with_capacity(n);
        let mut eq_delete = Vec::with_capacity(n);
        let mut written = 0i64;
        for (i, key) in keys.into_iter().enumerate() {
            match decoded.change_type(i)? {
                ChangeType::AppendOnly | ChangeType::Insert | ChangeType::UpdateAfter => {
                    let at = (path_index, base + written);
                    written += 1;
                    if let Some(previous) = delta.inserted.insert(key, at) {
                        delta.pos_deletes.push(previous);
                    }
                    insert.push(true);
                    eq_delete.push(false);
                }
                ChangeType::UpdateBefore | ChangeType::Delete => {
                    match delta.inserted.remove(&key) {
                        Some(previous) => {
                            delta.pos_deletes.push(previous);
                            eq_delete.push(false);
                        }
                        None => eq_delete.push(true),
                    }
                    insert.push(false);
                }
            }
        }
        let pick = |mask: Vec<bool>| -> Result<Option<RecordBatch>> {
            if !mask.iter().any(|b| *b) {
                return Ok(None);
            }
            Ok(Some(filter_record_batch(&rows, &BooleanArray::from(mask))?))
        };
        if let Some(b) = pick(insert)? {
            self.data.write(&b)?;
        }
        if let Some(b) = pick(eq_delete)? {
            delta.eq_deletes.write(&b)?;
        }
        Ok(())
    }

    fn complete(self) -> Result<WriteResult> {
        let mut files = self.data.finish()?;
        if let Some(delta) = self.delta {
            files.extend(delta.eq_deletes.finish()?);
            let deletes = delta
                .pos_deletes
                .into_iter()
                .map(|(p, pos)| (delta.paths[p as usize].clone(), pos))
                .collect();
            files.extend(write_position_deletes(
                self.storage.clone(),
                &self.target,
                deletes,
            )?);
        }
        let file_bytes = files.iter().map(|f| f.file_size_in_bytes as u64).sum();
        Ok(WriteResult {
            payload: WritePayload { files }.encode()?,
            record_count: self.records,
            file_bytes,
        })
    }
}

#[cfg(test)]
mod compression_tests {
    use parquet::basic::ZstdLevel;

    use super::*;

    #[test]
    fn data_files_use_the_codec_java_iceberg_would() {
        let none = |_: &str| None;
        assert_eq!(
            data_compression(&[], none).unwrap(),
            Compression::ZSTD(ZstdLevel::try_new(3).unwrap())
        );
        let table = |k: &str| match k {
            COMPRESSION_CODEC => Some("zstd"),
            COMPRESSION_LEVEL => Some("9"),
            _ => None,
        };
        assert_eq!(
            data_compression(&[], table).unwrap(),
            Compression::ZSTD(ZstdLevel::try_new(9).unwrap())
        );
        let config = vec![(COMPRESSION_CODEC.to_string(), "snappy".to_string())];
        assert_eq!(
            data_compression(&config, none).unwrap(),
            Compression::SNAPPY
        );
        let e =
            data_compression(&[], |k: &str| (k == COMPRESSION_CODEC).then_some("lzo")).unwrap_err();
        assert_eq!(e.kind(), fluss_lake_guest_sdk::ErrorKind::Unsupported);
        assert!(e.message().contains(COMPRESSION_CODEC), "{e}");
    }
}
