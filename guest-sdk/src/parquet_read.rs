//! Reading Parquet data files back through [`Storage`], for compaction.
//!
//! A file is read a row group at a time: the footer first (one ranged read), then, for each
//! row group, the byte range of its column chunks (one ranged read), decoded into Arrow
//! batches of at most [`ReadLimits::batch_rows`] rows. A plugin therefore holds one row
//! group's compressed bytes plus one decoded batch, whatever the file's size — the bound that
//! lets compaction stream inputs of any size. Files from other writers are read too, but a
//! footer or row group larger than its limit is refused before anything is fetched for it
//! (a corrupt or hostile file cannot make the plugin allocate without bound).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::{Buf, Bytes};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::reader::{ChunkReader, Length};

use crate::error::{Error, Result, ResultExt};
use crate::storage::Storage;

/// Bytes at the end of every Parquet file: footer length (4) and `PAR1` (4).
const FOOTER_TAIL: u64 = 8;
const MAGIC: &[u8; 4] = b"PAR1";

/// What one reader may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// Rows per decoded batch.
    pub batch_rows: usize,
    /// Largest footer (file metadata) read.
    pub max_footer_bytes: u64,
    /// Largest row group (compressed bytes of its column chunks) read.
    pub max_row_group_bytes: u64,
}

impl Default for ReadLimits {
    /// 8 Ki rows per batch, 16 MiB footers, 256 MiB row groups (writers' defaults are 128 MiB
    /// for Java Parquet and 16 MiB for this SDK's writer).
    fn default() -> Self {
        ReadLimits {
            batch_rows: 8192,
            max_footer_bytes: 16 << 20,
            max_row_group_bytes: 256 << 20,
        }
    }
}

/// A Parquet file being read, row group by row group.
pub struct ParquetFileReader<'a> {
    storage: &'a dyn Storage,
    path: String,
    metadata: ArrowReaderMetadata,
    limits: ReadLimits,
    next_row_group: usize,
    current: Option<ParquetRecordBatchReader>,
}

impl<'a> ParquetFileReader<'a> {
    /// Opens `path` (of `size` bytes when known, else looked up) and reads its footer.
    pub fn open(
        storage: &'a dyn Storage,
        path: &str,
        size: Option<u64>,
        limits: ReadLimits,
    ) -> Result<Self> {
        let size = match size {
            Some(size) => size,
            None => {
                storage
                    .head(path)?
                    .ok_or_else(|| Error::not_found(format!("data file {path} does not exist")))?
                    .size
            }
        };
        let metadata = read_footer(storage, path, size, limits.max_footer_bytes)
            .with_context(|| format!("reading the footer of {path}"))?;
        let metadata = ArrowReaderMetadata::try_new(Arc::new(metadata), ArrowReaderOptions::new())
            .with_context(|| format!("reading the schema of {path}"))?;
        Ok(ParquetFileReader {
            storage,
            path: path.to_string(),
            metadata,
            limits: ReadLimits {
                batch_rows: limits.batch_rows.max(1),
                ..limits
            },
            next_row_group: 0,
            current: None,
        })
    }

    /// The file's Arrow schema (as embedded by the writer, or derived from the Parquet one).
    pub fn schema(&self) -> SchemaRef {
        self.metadata.schema().clone()
    }

    /// The file's Parquet metadata.
    pub fn metadata(&self) -> &ParquetMetaData {
        self.metadata.metadata()
    }

    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        self.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// The next batch of rows, in file order; `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(reader) = &mut self.current {
                match reader.next() {
                    Some(batch) => {
                        return batch
                            .map(Some)
                            .with_context(|| format!("decoding {}", self.path));
                    }
                    None => self.current = None,
                }
            }
            if self.next_row_group >= self.metadata().num_row_groups() {
                return Ok(None);
            }
            let index = self.next_row_group;
            self.next_row_group += 1;
            self.current = Some(self.open_row_group(index)?);
        }
    }

    fn open_row_group(&self, index: usize) -> Result<ParquetRecordBatchReader> {
        let row_group = self.metadata().row_group(index);
        let ranges = row_group.columns().iter().map(|c| c.byte_range());
        let start = ranges.clone().map(|(s, _)| s).min().unwrap_or(0);
        let end = ranges.map(|(s, l)| s.saturating_add(l)).max().unwrap_or(0);
        let length = end.saturating_sub(start);
        if length > self.limits.max_row_group_bytes {
            return Err(Error::unsupported(format!(
                "row group {index} of {} holds {length} bytes, more than the {} a plugin reads at once",
                self.path, self.limits.max_row_group_bytes
            )));
        }
        let data = self.storage.get_range(&self.path, start, length)?;
        if (data.len() as u64) < length {
            return Err(Error::corrupt(format!(
                "{} ends inside row group {index}",
                self.path
            )));
        }
        let chunk = RowGroupBytes {
            start,
            data: Bytes::from(data),
            file_len: end,
        };
        ParquetRecordBatchReaderBuilder::new_with_metadata(chunk, self.metadata.clone())
            .with_row_groups(vec![index])
            .with_batch_size(self.limits.batch_rows)
            .build()
            .with_context(|| format!("reading row group {index} of {}", self.path))
    }
}

impl Iterator for ParquetFileReader<'_> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}

/// Reads and decodes the footer of the `size`-byte file at `path`.
fn read_footer(
    storage: &dyn Storage,
    path: &str,
    size: u64,
    max_footer_bytes: u64,
) -> Result<ParquetMetaData> {
    if size < FOOTER_TAIL + MAGIC.len() as u64 {
        return Err(Error::corrupt(format!(
            "{size} bytes is too small for a Parquet file"
        )));
    }
    let tail = storage.get_range(path, size - FOOTER_TAIL, FOOTER_TAIL)?;
    if tail.len() as u64 != FOOTER_TAIL || &tail[4..] != MAGIC {
        return Err(Error::corrupt("no Parquet magic at the end of the file"));
    }
    let footer_len = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as u64;
    if footer_len > max_footer_bytes {
        return Err(Error::unsupported(format!(
            "a footer of {footer_len} bytes is more than the {max_footer_bytes} a plugin reads"
        )));
    }
    if footer_len + FOOTER_TAIL + MAGIC.len() as u64 > size {
        return Err(Error::corrupt(format!(
            "a footer of {footer_len} bytes does not fit a file of {size}"
        )));
    }
    let footer = storage.get_range(path, size - FOOTER_TAIL - footer_len, footer_len)?;
    if footer.len() as u64 != footer_len {
        return Err(Error::corrupt("the file ends inside its footer"));
    }
    Ok(ParquetMetaDataReader::decode_metadata(&footer)?)
}

/// One row group's column chunks in memory, as the Parquet reader asks for them (by file
/// offset).
struct RowGroupBytes {
    /// File offset of `data[0]`.
    start: u64,
    data: Bytes,
    /// Offset just past `data`: the reader never asks beyond it.
    file_len: u64,
}

impl RowGroupBytes {
    fn slice(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let from = start
            .checked_sub(self.start)
            .map(|o| o as usize)
            .filter(|o| o.saturating_add(length) <= self.data.len())
            .ok_or_else(|| {
                ParquetError::General(format!(
                    "bytes {start}+{length} are outside the row group read ({}+{})",
                    self.start,
                    self.data.len()
                ))
            })?;
        Ok(self.data.slice(from..from + length))
    }
}

impl Length for RowGroupBytes {
    fn len(&self) -> u64 {
        self.file_len
    }
}

impl ChunkReader for RowGroupBytes {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let rest = self.file_len.saturating_sub(start) as usize;
        Ok(self.slice(start, rest)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.slice(start, length)
    }
}

/// Reads every batch of a file (for tests and small files: the whole content in memory).
pub fn read_all(storage: &dyn Storage, path: &str) -> Result<Vec<RecordBatch>> {
    ParquetFileReader::open(storage, path, None, ReadLimits::default())?.collect()
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::parquet::{ParquetOptions, RollingParquetWriter};
    use crate::storage::MemoryStorage;

    fn batch(from: i64, n: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let ids: Vec<i64> = (from..from + n).collect();
        let names: Vec<Option<String>> = ids
            .iter()
            .map(|i| (i % 3 != 0).then(|| format!("n{i}")))
            .collect();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap()
    }

    #[test]
    fn reads_back_every_row_a_row_group_at_a_time() {
        let storage = MemoryStorage::new();
        let first = batch(0, 5000);
        let options = ParquetOptions {
            max_row_group_rows: 3000,
            ..ParquetOptions::default()
        };
        let mut writer = RollingParquetWriter::new(&storage, first.schema(), options, || {
            "data/f.parquet".to_string()
        });
        writer.write(&first).unwrap();
        writer.write(&batch(5000, 3000)).unwrap();
        let info = writer.finish_file().unwrap().unwrap();

        let limits = ReadLimits {
            batch_rows: 1000,
            ..ReadLimits::default()
        };
        let reader = ParquetFileReader::open(&storage, &info.path, None, limits).unwrap();
        assert!(reader.metadata().num_row_groups() > 1, "several row groups");
        assert_eq!(reader.num_rows(), 8000);
        let batches: Vec<RecordBatch> = reader.collect::<Result<_>>().unwrap();
        assert!(batches.iter().all(|b| b.num_rows() <= 1000));
        let ids: Vec<i64> = batches
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(ids, (0..8000).collect::<Vec<_>>());
        let nulls: usize = batches.iter().map(|b| b.column(1).null_count()).sum();
        assert_eq!(nulls, (0..8000).filter(|i| i % 3 == 0).count());
    }

    #[test]
    fn refuses_row_groups_and_footers_over_the_limits_and_corrupt_tails() {
        let storage = MemoryStorage::new();
        let mut writer = RollingParquetWriter::new(
            &storage,
            batch(0, 1).schema(),
            ParquetOptions::default(),
            || "f.parquet".to_string(),
        );
        writer.write(&batch(0, 1000)).unwrap();
        let path = writer.finish_file().unwrap().unwrap().path;

        let tiny_groups = ReadLimits {
            max_row_group_bytes: 10,
            ..ReadLimits::default()
        };
        let mut reader = ParquetFileReader::open(&storage, &path, None, tiny_groups).unwrap();
        let err = reader.next_batch().unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Unsupported, "{err}");

        let tiny_footer = ReadLimits {
            max_footer_bytes: 10,
            ..ReadLimits::default()
        };
        let err = ParquetFileReader::open(&storage, &path, None, tiny_footer)
            .err()
            .unwrap();
        assert_eq!(err.kind(), crate::ErrorKind::Unsupported, "{err}");

        storage
            .put("junk.parquet", b"not a parquet file at all")
            .unwrap();
        let err = ParquetFileReader::open(&storage, "junk.parquet", None, ReadLimits::default())
            .err()
            .unwrap();
        assert_eq!(err.kind(), crate::ErrorKind::Corrupt, "{err}");
    }
}
