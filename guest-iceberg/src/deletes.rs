//! The deletes that apply to the data files compaction rewrites, loaded for one bucket at a
//! time, in memory bounded by `maintenance.compaction.max-delete-bytes`, and applied row by
//! row exactly as the spec's scan planning applies them (so a rewritten file holds the rows a
//! reader saw):
//! - an equality delete removes a row whose equality columns equal one of its rows when its
//!   data sequence number is *greater* than the data file's;
//! - a position delete removes row `pos` of `file_path` when its data sequence number is at
//!   least the data file's.
//!
//! Both only apply within their partition (the caller hands over the partition's deletes and
//! the table's global ones, of an unpartitioned spec).

use std::collections::{HashMap, HashSet};

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_schema::DataType;
use fluss_lake_guest_sdk::arrow_util::row_keys;
use fluss_lake_guest_sdk::layout::relative_path;
use fluss_lake_guest_sdk::parquet_read::{ParquetFileReader, ReadLimits};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt};

use crate::file_rows::{column_of, columns_by_field_id, positions};
use crate::file_writer::{DELETE_FILE_PATH_ID, DELETE_POS_ID};
use crate::manifest::{FileContent, ManifestEntry};
use crate::schema::IcebergSchema;

/// Plugin option / table property: the memory the deletes applied to one bucket's rewrite
/// may take (equality keys and deleted positions); a bucket needing more is refused.
pub const MAX_DELETE_BYTES: &str = "maintenance.compaction.max-delete-bytes";
/// Default of [`MAX_DELETE_BYTES`]: 64 MiB.
pub const DEFAULT_MAX_DELETE_BYTES: u64 = 64 << 20;

/// Bookkeeping counted per key or position besides its own bytes (hash-table slot, length).
const ENTRY_OVERHEAD: u64 = 32;

/// Equality deletes on one set of columns.
struct EqualityKeys {
    field_ids: Vec<i32>,
    types: Vec<DataType>,
    /// Key → the highest data sequence number of a delete holding it.
    keys: HashMap<Vec<u8>, i64>,
    /// The highest of them all: data files at or above it are untouched.
    max_seq: i64,
}

/// The deletes applying to some data files of one bucket.
pub struct BucketDeletes {
    equality: Vec<EqualityKeys>,
    /// Deleted row positions by data file path.
    positions: HashMap<String, HashSet<i64>>,
    bytes: u64,
    limit: u64,
}

/// Where files live and how much memory their deletes may take.
pub struct DeleteSource<'a> {
    pub storage: &'a dyn Storage,
    pub location: &'a str,
    pub schema: &'a IcebergSchema,
    pub limit: u64,
}

impl DeleteSource<'_> {
    fn open(&self, e: &ManifestEntry) -> Result<ParquetFileReader<'_>> {
        if !e.carried.format().eq_ignore_ascii_case("PARQUET") {
            return Err(Error::unsupported(format!(
                "delete file {} is {}: this plugin reads Parquet delete files only",
                e.file.file_path,
                e.carried.format()
            )));
        }
        let rel = relative_path(self.location, &e.file.file_path)?;
        ParquetFileReader::open(
            self.storage,
            rel,
            Some(e.file.file_size_in_bytes.max(0) as u64),
            ReadLimits::default(),
        )
        .with_context(|| format!("reading delete file {rel}"))
    }
}

impl BucketDeletes {
    /// Loads the deletes among `deletes` that can apply to one of `data` (live entries).
    pub fn load(
        source: &DeleteSource<'_>,
        data: &[ManifestEntry],
        deletes: &[ManifestEntry],
    ) -> Result<BucketDeletes> {
        let mut out = BucketDeletes {
            equality: Vec::new(),
            positions: HashMap::new(),
            bytes: 0,
            limit: source.limit,
        };
        let Some(min_data_seq) = data.iter().map(ManifestEntry::data_sequence_number).min() else {
            return Ok(out);
        };
        let data_seq: HashMap<&str, i64> = data
            .iter()
            .map(|e| (e.file.file_path.as_str(), e.data_sequence_number()))
            .collect();
        for d in deletes {
            let seq = d.data_sequence_number();
            match d.file.content {
                FileContent::EqualityDeletes if seq > min_data_seq => {
                    out.load_equality(source, d)?;
                }
                FileContent::PositionDeletes if seq >= min_data_seq => {
                    if let Some(r) = &d.file.referenced_data_file
                        && !data_seq.contains_key(r.as_str())
                    {
                        continue;
                    }
                    out.load_positions(source, d, &data_seq)?;
                }
                _ => {}
            }
        }
        Ok(out)
    }

    fn charge(&mut self, bytes: u64) -> Result<()> {
        self.bytes += bytes + ENTRY_OVERHEAD;
        if self.bytes > self.limit {
            return Err(Error::unsupported(format!(
                "the deletes applying to a bucket being compacted take more than \
                 {MAX_DELETE_BYTES} = {} bytes; raise it (plugin option or table property) or \
                 compact the table with Iceberg",
                self.limit
            )));
        }
        Ok(())
    }

    fn load_equality(&mut self, source: &DeleteSource<'_>, d: &ManifestEntry) -> Result<()> {
        let ids = d.file.equality_ids.clone().unwrap_or_default();
        if ids.is_empty() {
            return Err(Error::corrupt(format!(
                "equality delete file {} has no equality_ids",
                d.file.file_path
            )));
        }
        let types = ids
            .iter()
            .map(|id| {
                source
                    .schema
                    .field_by_id(*id)
                    .map(|f| f.ty.arrow_type())
                    .ok_or_else(|| {
                        Error::unsupported(format!(
                            "equality delete file {} deletes by field {id}, which the current \
                             schema lacks",
                            d.file.file_path
                        ))
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let slot = match self.equality.iter().position(|k| k.field_ids == ids) {
            Some(i) => i,
            None => {
                self.equality.push(EqualityKeys {
                    field_ids: ids.clone(),
                    types,
                    keys: HashMap::new(),
                    max_seq: i64::MIN,
                });
                self.equality.len() - 1
            }
        };
        let seq = d.data_sequence_number();
        let slot_max = &mut self.equality[slot].max_seq;
        *slot_max = (*slot_max).max(seq);
        for batch in source.open(d)? {
            let batch = batch?;
            let keys = {
                let k = &self.equality[slot];
                key_columns(&batch, &k.field_ids, &k.types)?
                    .ok_or_else(|| {
                        Error::corrupt(format!(
                            "equality delete file {} lacks one of its equality columns",
                            d.file.file_path
                        ))
                    })
                    .and_then(|cols| {
                        let refs: Vec<&dyn Array> = cols.iter().map(|c| c.as_ref()).collect();
                        row_keys(&refs)
                    })?
            };
            for key in keys {
                let len = key.len() as u64;
                let map = &mut self.equality[slot].keys;
                match map.get_mut(&key) {
                    Some(s) => *s = (*s).max(seq),
                    None => {
                        map.insert(key, seq);
                        self.charge(len)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn load_positions(
        &mut self,
        source: &DeleteSource<'_>,
        d: &ManifestEntry,
        data_seq: &HashMap<&str, i64>,
    ) -> Result<()> {
        let seq = d.data_sequence_number();
        for batch in source.open(d)? {
            let batch = batch?;
            let (paths, pos) = position_columns(&batch, &d.file.file_path)?;
            let pos = positions(&pos)?;
            for i in 0..batch.num_rows() {
                if paths.is_null(i) || pos.is_null(i) {
                    continue;
                }
                let path = paths.value(i);
                if data_seq.get(path).is_some_and(|data| *data <= seq) {
                    let set = self.positions.entry(path.to_string()).or_default();
                    if set.insert(pos.value(i)) {
                        self.charge(8)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Which rows of `batch` survive: rows `first_row..` of data file `file`. `None` when
    /// every row does.
    pub fn live_rows(
        &self,
        file: &ManifestEntry,
        batch: &RecordBatch,
        first_row: i64,
    ) -> Result<Option<BooleanArray>> {
        let n = batch.num_rows();
        let mut keep = vec![true; n];
        let mut any = false;
        if let Some(deleted) = self.positions.get(&file.file.file_path) {
            for (i, k) in keep.iter_mut().enumerate() {
                if deleted.contains(&(first_row + i as i64)) {
                    *k = false;
                    any = true;
                }
            }
        }
        let data_seq = file.data_sequence_number();
        for eq in &self.equality {
            if eq.max_seq <= data_seq {
                continue;
            }
            let cols = key_columns(batch, &eq.field_ids, &eq.types)?.ok_or_else(|| {
                Error::unsupported(format!(
                    "data file {} lacks an equality delete column (fields {:?})",
                    file.file.file_path, eq.field_ids
                ))
            })?;
            let refs: Vec<&dyn Array> = cols.iter().map(|c| c.as_ref()).collect();
            for (i, key) in row_keys(&refs)?.into_iter().enumerate() {
                if keep[i] && eq.keys.get(&key).is_some_and(|s| *s > data_seq) {
                    keep[i] = false;
                    any = true;
                }
            }
        }
        Ok(any.then(|| BooleanArray::from(keep)))
    }
}

/// The columns of `ids` in `batch`, as `types`; `None` when one is missing.
fn key_columns(
    batch: &RecordBatch,
    ids: &[i32],
    types: &[DataType],
) -> Result<Option<Vec<ArrayRef>>> {
    let by_id = columns_by_field_id(&batch.schema());
    ids.iter()
        .zip(types)
        .map(|(id, ty)| column_of(batch, &by_id, *id, Some(ty)))
        .collect()
}

/// The `file_path` and `pos` columns of a position delete file (by field id, else by name).
fn position_columns(batch: &RecordBatch, file: &str) -> Result<(StringArray, ArrayRef)> {
    let by_id = columns_by_field_id(&batch.schema());
    let find = |id: i32, name: &str| -> Result<ArrayRef> {
        match by_id.get(&id) {
            Some(&i) => Ok(batch.column(i).clone()),
            None => batch.column_by_name(name).cloned().ok_or_else(|| {
                Error::corrupt(format!("position delete file {file} has no {name}"))
            }),
        }
    };
    let paths = find(DELETE_FILE_PATH_ID, "file_path")?;
    let paths = arrow_array::cast::AsArray::as_string_opt::<i32>(paths.as_ref())
        .cloned()
        .ok_or_else(|| {
            Error::corrupt(format!(
                "position delete file {file}: file_path is {}",
                paths.data_type()
            ))
        })?;
    Ok((paths, find(DELETE_POS_ID, "pos")?))
}

/// Whether position delete file `d` deletes rows of one of `paths` (for the rewrite's
/// validation): by its referenced file, its `file_path` bounds, else by reading it.
pub fn position_delete_references(
    source: &DeleteSource<'_>,
    d: &ManifestEntry,
    paths: &HashSet<&str>,
) -> Result<bool> {
    if let Some(r) = &d.file.referenced_data_file {
        return Ok(paths.contains(r.as_str()));
    }
    let bound = |bounds: &[(i32, Vec<u8>)]| {
        bounds
            .iter()
            .find(|(id, _)| *id == DELETE_FILE_PATH_ID)
            .map(|(_, b)| b.clone())
    };
    if let (Some(lo), Some(hi)) = (bound(&d.file.lower_bounds), bound(&d.file.upper_bounds))
        && !paths
            .iter()
            .any(|p| p.as_bytes() >= lo.as_slice() && p.as_bytes() <= hi.as_slice())
    {
        return Ok(false);
    }
    for batch in source.open(d)? {
        let batch = batch?;
        let (file_paths, _) = position_columns(&batch, &d.file.file_path)?;
        if file_paths.iter().flatten().any(|p| paths.contains(p)) {
            return Ok(true);
        }
    }
    Ok(false)
}
