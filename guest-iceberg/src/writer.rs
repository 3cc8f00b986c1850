//! The writer of one split (a Fluss bucket of a partition): log tables append data files;
//! primary-key tables write deltas as Fluss's Java `DeltaTaskWriter` (Iceberg's
//! `BaseEqualityDeltaWriter`) does:
//! - `+I` / `+U` rows go to data files; a key written earlier in this round gets a position
//!   delete for its earlier row;
//! - `-U` / `-D` rows delete the key's row written earlier in this round by position, or
//!   else every older row of the key by an equality delete (full row, `equality_ids` = the
//!   primary key), which applies to data files of earlier sequence numbers only.
//!
//! Each decision needs only a row's key and change type. So through the host's data plane
//! (`batch-writer`) a primary-key table's rows stay in the host as a log table's do: the
//! writer takes only the key columns, and the host encodes the data and equality-delete rows
//! it picks. Position deletes hold what the writer computes (paths and positions), and it
//! encodes them itself.

use std::collections::HashMap;

use arrow_array::{Array, BooleanArray, RecordBatch};
use fluss_lake_guest_sdk::arrow_util::row_keys;
use fluss_lake_guest_sdk::data_plane::SplitRows;
use fluss_lake_guest_sdk::deps::arrow_select::filter::filter_record_batch;
use fluss_lake_guest_sdk::file_columns::ColumnSource;
use fluss_lake_guest_sdk::ipc::{ChangeType, DecodedBatch};
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
    /// Positions of the identifier fields among the file's columns.
    key_columns: Vec<usize>,
    /// With the rows kept in the host: the identifier fields' Fluss columns, all this writer
    /// takes into guest memory.
    key_positions: Option<Vec<usize>>,
    eq_deletes: ContentWriter<S>,
    /// Keys written by this split, with where their latest row is.
    inserted: HashMap<Vec<u8>, (u32, i64)>,
    paths: Vec<String>,
    pos_deletes: Vec<(u32, i64)>,
}

/// Where the rows of one batch go, by their index in the batch, in arrival order.
struct Routed {
    data: Vec<u32>,
    eq_deletes: Vec<u32>,
}

impl<S: Storage> Delta<S> {
    /// Routes a batch's changes by their keys (`keys`, one per row of `changes`): additions
    /// to the data file `data` writes next (the key's row written earlier in this round gets
    /// a position delete); retractions of a key written earlier in this round to a position
    /// delete, of any other key to an equality delete. Needs only the keys and change types.
    fn route(
        &mut self,
        data: &mut ContentWriter<S>,
        keys: Vec<Vec<u8>>,
        changes: &DecodedBatch,
    ) -> Result<Routed> {
        let (path, base) = data.next_position()?;
        let path_index = match self.paths.last() {
            Some(p) if *p == path => self.paths.len() as u32 - 1,
            _ => {
                self.paths.push(path);
                self.paths.len() as u32 - 1
            }
        };
        let mut routed = Routed {
            data: Vec::new(),
            eq_deletes: Vec::new(),
        };
        for (i, key) in keys.into_iter().enumerate() {
            match changes.change_type(i)? {
                ChangeType::AppendOnly | ChangeType::Insert | ChangeType::UpdateAfter => {
                    let at = (path_index, base + routed.data.len() as i64);
                    if let Some(previous) = self.inserted.insert(key, at) {
                        self.pos_deletes.push(previous);
                    }
                    routed.data.push(i as u32);
                }
                ChangeType::UpdateBefore | ChangeType::Delete => match self.inserted.remove(&key) {
                    Some(previous) => self.pos_deletes.push(previous),
                    None => routed.eq_deletes.push(i as u32),
                },
            }
        }
        Ok(routed)
    }
}

pub struct IcebergWriter<S: Storage + Clone> {
    storage: S,
    target: SplitTarget,
    data: ContentWriter<S>,
    delta: Option<Delta<S>>,
    records: u64,
}

impl<S: Storage + Clone> IcebergWriter<S> {
    /// Opens the split's writer, whose files are encoded as `encoding` says. With
    /// [`Encoding::Host`] a primary-key table's rows stay in the host too: the writer takes
    /// their keys and change types, and has the host encode the rows it routes.
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
            let (eq_deletes, key_positions) = match encoding {
                Encoding::Guest => (
                    ContentWriter::rows(storage.clone(), &target, Some(ids.clone())),
                    None,
                ),
                Encoding::Host => (
                    ContentWriter::split_rows(
                        storage.clone(),
                        &target,
                        encoding,
                        Some(ids.clone()),
                    )?,
                    Some(fluss_positions(&target, &key_columns)?),
                ),
            };
            Some(Delta {
                key_columns,
                key_positions,
                eq_deletes,
                inserted: HashMap::new(),
                paths: Vec::new(),
                pos_deletes: Vec::new(),
            })
        };
        let data = match (&delta, encoding) {
            (Some(_), Encoding::Guest) => ContentWriter::rows(storage.clone(), &target, None),
            _ => ContentWriter::split_rows(storage.clone(), &target, encoding, None)?,
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

/// The Fluss columns of the file columns at `columns` (identifier fields are table columns).
fn fluss_positions(target: &SplitTarget, columns: &[usize]) -> Result<Vec<usize>> {
    let file_columns = target.layout.file_columns()?;
    columns
        .iter()
        .map(|c| match file_columns.sources().get(*c) {
            Some(ColumnSource::Fluss(p)) => Ok(*p),
            other => Err(Error::invalid_input(format!(
                "identifier field at column {c} is not a Fluss column ({other:?})"
            ))),
        })
        .collect()
}

impl<S: Storage + Clone> FormatWriter<S> for IcebergWriter<S> {
    fn open(context: &WriterContext, storage: S) -> Result<Self> {
        Self::open_encoded(context, storage, Encoding::Guest)
    }

    fn open_batches(context: &WriterContext, storage: S) -> Result<Self> {
        Self::open_encoded(context, storage, Encoding::Host)
    }

    fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<()> {
        let Some(delta) = self.delta.as_mut() else {
            // A log table: its rows go to data files as they are.
            if let Some(bad) = rows.first_non_addition()? {
                return Err(Error::invalid_input(format!(
                    "update or delete rows ({bad:?}) for an Iceberg table without identifier \
                     fields (a Fluss log table)"
                )));
            }
            self.records += rows.num_rows() as u64;
            return self.data.write_rows(rows);
        };
        let n = rows.num_rows();
        if n == 0 {
            return Ok(());
        }
        self.records += n as u64;
        match (rows, &delta.key_positions) {
            (SplitRows::Host(batch), Some(positions)) => {
                let keys = batch.columns(positions)?;
                let arrays: Vec<&dyn Array> =
                    keys.batch.columns().iter().map(|c| c.as_ref()).collect();
                let routed = delta.route(&mut self.data, row_keys(&arrays)?, &keys)?;
                if routed.data.is_empty() && routed.eq_deletes.is_empty() {
                    return Ok(());
                }
                let kept = batch.keep()?;
                let picks = |rows: &[u32]| rows.iter().map(|r| (0, *r)).collect::<Vec<_>>();
                self.data.write_picked(&[&kept], &picks(&routed.data))?;
                delta
                    .eq_deletes
                    .write_picked(&[&kept], &picks(&routed.eq_deletes))
            }
            (SplitRows::Decoded(_), Some(_)) => Err(Error::internal(
                "rows in guest memory for a writer whose rows stay in the host",
            )),
            (rows, None) => {
                let decoded = rows.into_decoded()?;
                let rows = self.target.to_file_batch(
                    &decoded.batch,
                    &decoded.log_offsets,
                    &decoded.timestamps,
                )?;
                let key_arrays: Vec<&dyn Array> = delta
                    .key_columns
                    .iter()
                    .map(|c| rows.column(*c).as_ref())
                    .collect();
                let routed = delta.route(&mut self.data, row_keys(&key_arrays)?, &decoded)?;
                let pick = |picked: &[u32]| -> Result<Option<RecordBatch>> {
                    if picked.is_empty() {
                        return Ok(None);
                    }
                    let mut mask = vec![false; n];
                    for r in picked {
                        mask[*r as usize] = true;
                    }
                    Ok(Some(filter_record_batch(&rows, &BooleanArray::from(mask))?))
                };
                if let Some(b) = pick(&routed.data)? {
                    self.data.write(&b)?;
                }
                if let Some(b) = pick(&routed.eq_deletes)? {
                    delta.eq_deletes.write(&b)?;
                }
                Ok(())
            }
        }
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
