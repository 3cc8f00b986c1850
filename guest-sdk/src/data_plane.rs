//! The host's native data plane (contract 0.3.8, and 0.3.9's kept batches and picked rows)
//! as format code sees it.
//!
//! A `batch-writer` gets each batch as a [`HostBatch`]: the rows stay in the host, and a
//! format that only lays its files out (names, columns, system columns, codec) has the host
//! encode them with [`HostFile`], with this crate's own encoder (`fluss-lake-columns`), so a
//! file is the same whichever side encodes it. A format that needs to see the rows (to sort,
//! merge or route them) takes them with [`HostBatch::rows`] and encodes them itself.
//! [`SplitRows`] is what a format's writer takes either way.
//!
//! Off wasm the imports do not exist: native tests and benchmarks write through
//! [`SplitRows::Decoded`] and guest encoding only.

use arrow_schema::{SchemaRef, TimeUnit};
use fluss_lake_columns::encode::{EncodedFile, ParquetOptions};
use fluss_lake_columns::file_columns::{ColumnSource, FileColumns};
use fluss_lake_columns::stats::{ColumnStats, Datum};
use parquet::basic::Compression;

use crate::bindings::fluss::lake::data_plane as dp;
use crate::error::{Error, Result};
use crate::ipc::{ChangeType, DecodedBatch, decode_row_batch};

/// A batch of the split's rows held by the host, lent for one `write` call.
pub struct HostBatch<'a>(&'a dp::Batch);

impl<'a> HostBatch<'a> {
    /// The batch the host lent.
    pub fn new(batch: &'a dp::Batch) -> Self {
        HostBatch(batch)
    }

    /// Rows in the batch.
    pub fn num_rows(&self) -> usize {
        self.0.row_count() as usize
    }

    /// Smallest and largest log offset of the rows, if any.
    pub fn offset_range(&self) -> Option<(i64, i64)> {
        self.0.offset_range()
    }

    /// The change-type bytes of the rows (empty: all `+A`).
    pub fn change_types(&self) -> Vec<u8> {
        self.0.change_types()
    }

    /// The rows themselves, decoded in guest memory.
    pub fn rows(&self) -> Result<DecodedBatch> {
        decode_row_batch(self.0.rows()?)
    }

    /// Only the Fluss columns at `positions` (each at most once), in that order, decoded in
    /// guest memory with the rows' change types, offsets and timestamps: what a format orders
    /// and merges rows by, without their other values.
    pub fn columns(&self, positions: &[usize]) -> Result<DecodedBatch> {
        let positions = positions
            .iter()
            .map(|p| u32::try_from(*p).map_err(|_| Error::invalid_input(format!("no column {p}"))))
            .collect::<Result<Vec<_>>>()?;
        decode_row_batch(self.0.columns(&positions)?)
    }

    /// Keeps the batch in the host past this `write` call, for [`HostFile::append_picked`].
    pub fn keep(&self) -> Result<KeptBatch> {
        let kept = self.0.keep()?;
        Ok(KeptBatch {
            rows: kept.row_count() as usize,
            memory_bytes: kept.memory_bytes(),
            kept,
        })
    }
}

/// A batch the host keeps for the writer (counted against the instance's memory limit until
/// dropped).
pub struct KeptBatch {
    kept: dp::KeptBatch,
    rows: usize,
    memory_bytes: u64,
}

impl KeptBatch {
    /// Rows in the batch.
    pub fn num_rows(&self) -> usize {
        self.rows
    }

    /// Bytes the host holds for it.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }
}

/// Most picks one [`HostFile::append_picked`] call takes (the contract's bound).
pub const MAX_PICKS_PER_CALL: usize = 65536;

/// The rows of one `write` call, wherever they are.
pub enum SplitRows<'a> {
    /// Decoded in guest memory (`writer.write`, native tests).
    Decoded(DecodedBatch),
    /// Held by the host (`batch-writer.write`).
    Host(HostBatch<'a>),
}

impl SplitRows<'_> {
    /// Rows in the batch.
    pub fn num_rows(&self) -> usize {
        match self {
            SplitRows::Decoded(d) => d.num_rows(),
            SplitRows::Host(h) => h.num_rows(),
        }
    }

    /// First (smallest) and last (largest) log offset, if any row.
    pub fn offset_range(&self) -> Option<(i64, i64)> {
        match self {
            SplitRows::Decoded(d) => d.offset_range(),
            SplitRows::Host(h) => h.offset_range(),
        }
    }

    /// The first row that does not only add data (anything but `+A`/`+I`), if any: log
    /// tables take none.
    pub fn first_non_addition(&self) -> Result<Option<ChangeType>> {
        let types = match self {
            SplitRows::Decoded(d) => return first_non_addition(&d.change_types),
            SplitRows::Host(h) => h.change_types(),
        };
        first_non_addition(&types)
    }

    /// The rows decoded in guest memory (fetched from the host when it holds them).
    pub fn into_decoded(self) -> Result<DecodedBatch> {
        match self {
            SplitRows::Decoded(d) => Ok(d),
            SplitRows::Host(h) => h.rows(),
        }
    }
}

fn first_non_addition(types: &[u8]) -> Result<Option<ChangeType>> {
    for b in types {
        let c = ChangeType::from_byte(*b)?;
        if !c.is_addition() {
            return Ok(Some(c));
        }
    }
    Ok(None)
}

/// A Parquet file the host encodes; dropped unfinished, the host discards it.
pub struct HostFile {
    file: Option<dp::ParquetFile>,
}

impl HostFile {
    /// Starts a file at `path` (relative to the table) with `columns`, whose bucket columns
    /// hold `bucket`, encoded as `options` say.
    pub fn start(
        path: &str,
        columns: &FileColumns,
        bucket: i32,
        options: &ParquetOptions,
    ) -> Result<HostFile> {
        let position =
            |c: usize| u32::try_from(c).map_err(|_| Error::invalid_input(format!("no column {c}")));
        let schema = schema_message(columns.schema())?;
        let sources = columns
            .sources()
            .iter()
            .map(|s| {
                Ok(match *s {
                    ColumnSource::Fluss(c) => dp::PickedSource::Fluss(position(c)?),
                    ColumnSource::Null => dp::PickedSource::Null,
                    ColumnSource::Bucket => dp::PickedSource::Bucket(bucket),
                    ColumnSource::Offset => dp::PickedSource::LogOffset,
                    ColumnSource::Timestamp => dp::PickedSource::CommitTimestamp,
                    ColumnSource::Computed(c) => dp::PickedSource::Computed(position(c)?),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let file = if columns.has_computed() {
            let columns = dp::PickedColumns { schema, sources };
            dp::ParquetFile::start_picked(path, &columns, settings(options)?)?
        } else {
            // Files without computed columns keep 0.3.8's `start`, so hosts of 0.3.8 serve them.
            let sources = sources
                .into_iter()
                .map(|s| {
                    Ok(match s {
                        dp::PickedSource::Fluss(c) => dp::ColumnSource::Fluss(c),
                        dp::PickedSource::Null => dp::ColumnSource::Null,
                        dp::PickedSource::Bucket(b) => dp::ColumnSource::Bucket(b),
                        dp::PickedSource::LogOffset => dp::ColumnSource::LogOffset,
                        dp::PickedSource::CommitTimestamp => dp::ColumnSource::CommitTimestamp,
                        dp::PickedSource::Computed(c) => {
                            return Err(Error::internal(format!("computed column {c} unexpected")));
                        }
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let columns = dp::FileColumns { schema, sources };
            dp::ParquetFile::start(path, &columns, settings(options)?)?
        };
        Ok(HostFile { file: Some(file) })
    }

    fn file(&self) -> Result<&dp::ParquetFile> {
        self.file
            .as_ref()
            .ok_or_else(|| Error::internal("the host file is finished"))
    }

    /// Encodes the batch's rows; the file's size so far.
    pub fn append(&self, rows: &HostBatch<'_>) -> Result<u64> {
        Ok(self.file()?.append(rows.0)?)
    }

    /// Encodes rows of kept batches in the order of `picks` (an index into `batches`, a row
    /// of that batch), with `computed` holding the file's computed columns (one row per
    /// pick; none when the file has no computed column); the file's size so far. Picks go in
    /// calls of at most [`MAX_PICKS_PER_CALL`].
    pub fn append_picked(
        &self,
        batches: &[&KeptBatch],
        picks: &[(u32, u32)],
        computed: Option<&arrow_array::RecordBatch>,
    ) -> Result<u64> {
        let handles: Vec<&dp::KeptBatch> = batches.iter().map(|b| &b.kept).collect();
        let mut size = 0;
        let mut start = 0;
        for chunk in picks.chunks(MAX_PICKS_PER_CALL) {
            let columns = match computed {
                Some(c) => computed_columns(&c.slice(start, chunk.len()))?,
                None => Vec::new(),
            };
            size = self.file()?.append_picked(&handles, chunk, &columns)?;
            start += chunk.len();
        }
        Ok(size)
    }

    /// Rows appended so far.
    pub fn rows(&self) -> u64 {
        self.file().map_or(0, |f| f.row_count())
    }

    /// Finishes the file: its size and what it holds.
    pub fn finish(mut self) -> Result<(u64, EncodedFile)> {
        let file = self
            .file
            .take()
            .ok_or_else(|| Error::internal("the host file is finished"))?;
        let done = file.finish()?;
        Ok((
            done.size,
            EncodedFile {
                row_count: done.row_count,
                column_stats: unflatten_stats(&done.column_stats)?,
            },
        ))
    }

    /// Discards the file.
    pub fn abort(mut self) -> Result<()> {
        match self.file.take() {
            Some(f) => Ok(f.abort()?),
            None => Ok(()),
        }
    }
}

/// The contract's computed columns of `batch`: integers, strings or bytes, none null.
fn computed_columns(batch: &arrow_array::RecordBatch) -> Result<Vec<dp::ComputedColumn>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int8Type, Int16Type, Int32Type, Int64Type};
    use arrow_schema::DataType;
    batch
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if c.null_count() > 0 {
                return Err(Error::invalid_input(format!("computed column {i} holds nulls")));
            }
            Ok(match c.data_type() {
                DataType::Int8 => {
                    dp::ComputedColumn::Int8(c.as_primitive::<Int8Type>().values().to_vec())
                }
                DataType::Int16 => {
                    dp::ComputedColumn::Int16(c.as_primitive::<Int16Type>().values().to_vec())
                }
                DataType::Int32 => {
                    dp::ComputedColumn::Int32(c.as_primitive::<Int32Type>().values().to_vec())
                }
                DataType::Int64 => {
                    dp::ComputedColumn::Int64(c.as_primitive::<Int64Type>().values().to_vec())
                }
                DataType::Utf8 => dp::ComputedColumn::Utf8(
                    c.as_string::<i32>()
                        .iter()
                        .map(|v| v.unwrap_or_default().to_string())
                        .collect(),
                ),
                DataType::Binary => dp::ComputedColumn::Binary(
                    c.as_binary::<i32>()
                        .iter()
                        .map(|v| v.unwrap_or_default().to_vec())
                        .collect(),
                ),
                other => {
                    return Err(Error::unsupported(format!(
                        "computed column {i} of type {other}: the host takes integers, strings and bytes"
                    )));
                }
            })
        })
        .collect()
}

/// An Arrow IPC stream holding only `schema`.
fn schema_message(schema: &SchemaRef) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, schema)?;
    w.finish()?;
    drop(w);
    Ok(out)
}

fn settings(options: &ParquetOptions) -> Result<dp::ParquetSettings> {
    let compression = match options.compression {
        Compression::UNCOMPRESSED => dp::Compression::Uncompressed,
        Compression::SNAPPY => dp::Compression::Snappy,
        Compression::LZ4 => dp::Compression::Lz4,
        Compression::LZ4_RAW => dp::Compression::Lz4Raw,
        Compression::ZSTD(l) => dp::Compression::Zstd(l.compression_level()),
        Compression::GZIP(l) => dp::Compression::Gzip(l.compression_level()),
        other => {
            return Err(Error::unsupported(format!(
                "the host does not encode {other:?}"
            )));
        }
    };
    Ok(dp::ParquetSettings {
        compression,
        max_row_group_rows: options.max_row_group_rows as u64,
        row_group_bytes: options.row_group_bytes as u64,
        embed_arrow_schema: options.embed_arrow_schema,
        struct_field_stats: options.struct_field_stats,
    })
}

fn datum(d: &dp::Datum) -> Datum {
    let unit = |u: &dp::TimeUnit| match u {
        dp::TimeUnit::Second => TimeUnit::Second,
        dp::TimeUnit::Millisecond => TimeUnit::Millisecond,
        dp::TimeUnit::Microsecond => TimeUnit::Microsecond,
        dp::TimeUnit::Nanosecond => TimeUnit::Nanosecond,
    };
    match d {
        dp::Datum::Boolean(v) => Datum::Boolean(*v),
        dp::Datum::Int8(v) => Datum::Int8(*v),
        dp::Datum::Int16(v) => Datum::Int16(*v),
        dp::Datum::Int32(v) => Datum::Int32(*v),
        dp::Datum::Int64(v) => Datum::Int64(*v),
        dp::Datum::Float32(v) => Datum::Float32(*v),
        dp::Datum::Float64(v) => Datum::Float64(*v),
        dp::Datum::Utf8(v) => Datum::Utf8(v.clone()),
        dp::Datum::Binary(v) => Datum::Binary(v.clone()),
        dp::Datum::Decimal((hi, lo)) => Datum::Decimal(((*hi as i128) << 64) | *lo as i128),
        dp::Datum::Date32(v) => Datum::Date32(*v),
        dp::Datum::Time((v, u)) => Datum::Time(*v, unit(u)),
        dp::Datum::Timestamp((v, u)) => Datum::Timestamp(*v, unit(u)),
    }
}

/// The statistics of the contract's flat list (each column, then its fields' entries) as a
/// tree.
fn unflatten_stats(flat: &[dp::ColumnStats]) -> Result<Vec<ColumnStats>> {
    fn take(flat: &[dp::ColumnStats], at: &mut usize) -> Result<ColumnStats> {
        let s = flat
            .get(*at)
            .ok_or_else(|| Error::invalid_input("the host's statistics end early"))?;
        *at += 1;
        let fields = (0..s.fields)
            .map(|_| take(flat, at))
            .collect::<Result<Vec<_>>>()?;
        Ok(ColumnStats {
            null_count: s.null_count,
            min: s.min.as_ref().map(datum),
            max: s.max.as_ref().map(datum),
            fields,
        })
    }
    let mut at = 0;
    let mut out = Vec::new();
    while at < flat.len() {
        out.push(take(flat, &mut at)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_statistics_become_a_tree_again() {
        let entry = |null_count, fields| dp::ColumnStats {
            null_count,
            min: Some(dp::Datum::Decimal((-1, u64::MAX - 5))),
            max: None,
            fields,
        };
        let flat = vec![
            entry(1, 2),
            entry(2, 1),
            entry(3, 0),
            entry(4, 0),
            entry(5, 0),
        ];
        let tree = unflatten_stats(&flat).unwrap();
        assert_eq!(tree.len(), 2);
        assert_eq!(tree[0].fields.len(), 2);
        assert_eq!(tree[0].fields[0].fields[0].null_count, 3);
        assert_eq!(tree[0].fields[1].null_count, 4);
        assert_eq!(tree[1].null_count, 5);
        assert_eq!(tree[0].min, Some(Datum::Decimal(-6)));
        let e = unflatten_stats(&[entry(1, 3)]).unwrap_err();
        assert!(e.message().contains("end early"), "{e}");
    }
}
