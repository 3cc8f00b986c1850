//! The native data plane (contract 0.3.8): a split's rows stay in host memory as `batch`
//! handles, and a plugin's Parquet files are encoded here, natively, with the same encoder
//! the guest SDK runs as WebAssembly (`fluss-lake-columns`), so the heavy bytes never cross
//! into the sandbox unless the plugin asks for them.
//!
//! A plugin that orders rows itself (a primary-key table's sorted runs, 0.3.9) takes only the
//! columns it orders them by (`batch.columns`), keeps the batches in the host (`batch.keep`,
//! reserved against its memory limit until dropped), and has the host encode the rows in the
//! order it picks them, with columns it computes itself (`parquet-file.append-picked`).
//!
//! The plugin still decides every byte of format logic: the file's schema (names, types,
//! nullability, field ids), where each column comes from, the codec and row groups, and the
//! path. What it hands over is bounded before the host spends anything on it: the schema
//! message's size and field count, row-group sizes and rows, codec levels; every path goes
//! through the instance's [`ScopedStorage`] (the same checks and the same quota as a
//! `storage.upload`); an open file counts as an open upload; and the memory an open file may
//! hold (its row group being encoded, and its parts on their way to the store) is reserved
//! against the instance's memory limit when the file starts, so a plugin cannot make the host
//! hold more for it than it could hold itself.

use std::io::Cursor;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, SchemaRef, TimeUnit};
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use fluss_lake_columns::encode::{EncodedFile, FileEncoder, ParquetOptions};
use fluss_lake_columns::file_columns::{ColumnSource, FileColumns};
use fluss_lake_columns::stats::{ColumnStats, Datum};
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use wasmtime::component::Resource;

use super::batch_write_bindings::fluss::lake::data_plane as dp;
use super::bindings::fluss::lake::types;
use super::host_api::InstanceState;
use super::sandbox::MAX_OPEN_UPLOADS;
use super::storage::{
    StorageError, StorageErrorKind, UPLOAD_PART_SIZE, UPLOAD_PARTS_IN_FLIGHT, Upload,
};
use crate::error::{Error, ErrorKind, Result};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Largest schema message a plugin may describe a file with.
pub const MAX_SCHEMA_BYTES: usize = 1 << 20;
/// Most fields (nested ones included) of one file.
pub const MAX_FILE_FIELDS: usize = 10_000;
/// Largest row group a plugin may ask for, in encoded bytes; a quarter of the instance's
/// memory limit when that is less.
pub const MAX_ROW_GROUP_BYTES: u64 = 256 << 20;
/// Most rows of one row group a plugin may ask for.
pub const MAX_ROW_GROUP_ROWS: u64 = 1 << 24;
/// Most picks of one `append-picked` call.
pub const MAX_PICKS_PER_CALL: usize = 1 << 16;
/// Host bytes a kept batch costs besides its columns, per row: its change type, log offset
/// and commit time.
const KEPT_BYTES_PER_ROW: usize = 1 + 8 + 8;

/// One batch of a split's rows, held by the host for the `batch-writer.write` call it is
/// handed to: the consecutive Arrow batches read meanwhile, kept apart (an encoder takes them
/// one after the other, so joining them would only copy every row once more).
#[derive(Clone)]
pub struct HostRows {
    parts: Vec<RecordBatch>,
    change_types: Vec<u8>,
    offsets: Vec<i64>,
    timestamps: Vec<i64>,
    /// Whether `batch.keep` kept these rows already: a batch is kept at most once, so a
    /// plugin cannot make the host hold the same rows many times over.
    kept: bool,
}

impl HostRows {
    /// Consecutive batches of rows (one schema), with the change type (empty: all `+A`), log
    /// offset and commit time of each of their rows, in order; refused unless there is one of
    /// each per row.
    pub fn from_parts(
        parts: Vec<RecordBatch>,
        change_types: Vec<u8>,
        offsets: Vec<i64>,
        timestamps: Vec<i64>,
    ) -> Result<Self> {
        let rows: usize = parts.iter().map(RecordBatch::num_rows).sum();
        if offsets.len() != rows
            || timestamps.len() != rows
            || !(change_types.is_empty() || change_types.len() == rows)
        {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "{rows} rows with {} offsets, {} timestamps and {} change types",
                    offsets.len(),
                    timestamps.len(),
                    change_types.len()
                ),
            ));
        }
        Ok(HostRows {
            parts,
            change_types,
            offsets,
            timestamps,
            kept: false,
        })
    }

    pub fn num_rows(&self) -> usize {
        self.offsets.len()
    }

    /// Bytes of column data the rows refer to.
    pub fn column_bytes(&self) -> usize {
        self.parts.iter().map(column_bytes).sum()
    }

    /// The rows as one Arrow batch (joined when they are several).
    fn joined(&self) -> Result<RecordBatch> {
        match self.parts.as_slice() {
            [one] => Ok(one.clone()),
            parts => {
                let schema = parts
                    .first()
                    .map(|p| p.schema())
                    .ok_or_else(|| Error::new(ErrorKind::Internal, "a batch of no rows"))?;
                arrow::compute::concat_batches(&schema, parts).map_err(|e| {
                    Error::new(ErrorKind::Internal, "concatenating batches").with_source(e)
                })
            }
        }
    }

    /// Each part with the log offsets and commit times of its rows.
    fn parts_with_rows(&self) -> impl Iterator<Item = (&RecordBatch, &[i64], &[i64])> {
        let mut first = 0;
        self.parts.iter().map(move |part| {
            let rows = first..first + part.num_rows();
            first = rows.end;
            (part, &self.offsets[rows.clone()], &self.timestamps[rows])
        })
    }

    /// The rows as the contract's `row-batch` (`writer.write`'s argument).
    pub fn to_row_batch(&self) -> Result<types::RowBatch> {
        Ok(types::RowBatch {
            ipc: encode_ipc(&self.joined()?)?,
            change_types: self.change_types.clone(),
            log_offsets: self.offsets.clone(),
            timestamps: self.timestamps.clone(),
        })
    }

    /// The columns at `positions` (each at most once) as the contract's `row-batch`: the
    /// projection is zero-copy, only the projected columns are joined and encoded.
    fn projected_row_batch(&self, positions: &[u32]) -> Result<types::RowBatch, types::LakeError> {
        let width = self.parts.first().map_or(0, RecordBatch::num_columns);
        let mut seen = vec![false; width];
        let mut indices = Vec::with_capacity(positions.len());
        for &p in positions {
            let i = p as usize;
            match seen.get_mut(i) {
                Some(s) if !*s => *s = true,
                Some(_) => return Err(invalid(format!("column {p} asked for twice"))),
                None => {
                    return Err(invalid(format!(
                        "no column {p}: the rows have {width} columns"
                    )));
                }
            }
            indices.push(i);
        }
        if indices.is_empty() {
            return Err(invalid("no column asked for"));
        }
        let parts = self
            .parts
            .iter()
            .map(|p| p.project(&indices))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("projecting columns {positions:?}: {e}")))?;
        let projected = HostRows {
            parts,
            change_types: Vec::new(),
            offsets: Vec::new(),
            timestamps: Vec::new(),
            kept: false,
        };
        let internal = |e: Error| types::LakeError {
            kind: types::ErrorKind::Internal,
            message: e.to_string(),
        };
        Ok(types::RowBatch {
            ipc: encode_ipc(&projected.joined().map_err(internal)?).map_err(internal)?,
            change_types: self.change_types.clone(),
            log_offsets: self.offsets.clone(),
            timestamps: self.timestamps.clone(),
        })
    }

    /// Memory a kept copy of the rows holds: their columns and their per-row values.
    fn kept_bytes(&self) -> usize {
        self.column_bytes()
            .saturating_add(self.num_rows().saturating_mul(KEPT_BYTES_PER_ROW))
    }

    /// The first row of each part, and the row count after the last.
    fn part_starts(&self) -> Vec<usize> {
        let mut starts = Vec::with_capacity(self.parts.len() + 1);
        let mut at = 0;
        starts.push(0);
        for p in &self.parts {
            at += p.num_rows();
            starts.push(at);
        }
        starts
    }

    /// The rows as the contract's `row-batch`, consuming them.
    pub fn into_row_batch(self) -> Result<types::RowBatch> {
        Ok(types::RowBatch {
            ipc: encode_ipc(&self.joined()?)?,
            change_types: self.change_types,
            log_offsets: self.offsets,
            timestamps: self.timestamps,
        })
    }
}

/// The bytes of column data a batch (possibly a slice of a larger one) refers to.
pub fn column_bytes(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
        .sum()
}

/// One Arrow IPC stream: schema, the batch, end-of-stream.
pub fn encode_ipc(batch: &RecordBatch) -> Result<Vec<u8>> {
    let ipc_err = |e: arrow::error::ArrowError| {
        Error::new(ErrorKind::Internal, "Arrow IPC encoding").with_source(e)
    };
    let mut writer = StreamWriter::try_new(Vec::new(), &batch.schema()).map_err(ipc_err)?;
    writer.write(batch).map_err(ipc_err)?;
    writer.finish().map_err(ipc_err)?;
    writer.into_inner().map_err(ipc_err)
}

/// A Parquet file a plugin has the host encode.
pub struct NativeFile {
    path: String,
    columns: FileColumns,
    /// The value of the file's `bucket` columns.
    bucket: i32,
    /// None once the file is finished or aborted.
    open: Option<OpenFile>,
    /// Memory reserved against the instance's limit while the file is open.
    reserved: usize,
}

/// A batch a plugin keeps past its `write` call (`batch.keep`), for `append-picked`.
pub struct KeptRows {
    rows: HostRows,
    /// Memory reserved against the instance's limit until the handle is dropped.
    reserved: usize,
}

struct OpenFile {
    /// None while an `append` encodes on a blocking thread (or after one was abandoned).
    encoder: Option<FileEncoder<ChunkSink>>,
    /// The task that owns the file's upload and writes what the encoder hands it; aborting
    /// it drops the upload unfinished, which leaves nothing.
    uploader: JoinHandle<Result<u64, StorageError>>,
}

/// Bytes the encoder hands to its file's uploader at a time: under the allocator's threshold
/// for mapping fresh pages (`cli.rs`), so chunks reuse the heap.
const CHUNK_BYTES: usize = 512 << 10;
/// Chunks on their way to the uploader; the encoder waits beyond them.
const CHUNKS_IN_FLIGHT: usize = 2;

/// What the encoder hands its file's uploader.
enum Chunk {
    Data(Vec<u8>),
    /// Everything was sent: make the object visible.
    Finish,
}

/// The encoder's sink: hands the encoded bytes to the file's uploader a chunk at a time and
/// waits while [`CHUNKS_IN_FLIGHT`] are on their way, so that besides its open row group a file
/// holds a chunk or two and its upload's parts, never a row group's bytes twice. It waits only
/// while `may_block` is set, which the encoder's calls on a blocking thread set around
/// themselves; anywhere else (the header written when the encoder is created, what an encoder
/// dropped unfinished flushes) it only buffers.
struct ChunkSink {
    tx: mpsc::Sender<Chunk>,
    buf: Vec<u8>,
    may_block: bool,
}

impl ChunkSink {
    fn send(&mut self, chunk: Chunk) -> std::io::Result<()> {
        self.tx
            .blocking_send(chunk)
            .map_err(|_| std::io::Error::other("the file's upload ended"))
    }

    fn send_buffered(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.send(Chunk::Data(chunk))
    }

    /// Sends what is buffered and the order to make the object visible.
    fn finish(mut self) -> std::io::Result<()> {
        self.send_buffered()?;
        self.send(Chunk::Finish)
    }
}

impl std::io::Write for ChunkSink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.may_block && self.buf.len() >= CHUNK_BYTES {
            self.send_buffered()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the chunks it receives to `upload` and completes it on [`Chunk::Finish`]; an encoder
/// that goes away without finishing leaves nothing of the object.
async fn upload_chunks(
    mut upload: Upload,
    mut rx: mpsc::Receiver<Chunk>,
) -> Result<u64, StorageError> {
    while let Some(chunk) = rx.recv().await {
        match chunk {
            Chunk::Data(bytes) => upload.write(&bytes).await?,
            Chunk::Finish => return upload.complete().await,
        }
    }
    upload.abort().await?;
    Err(StorageError::new(
        StorageErrorKind::Io,
        "the file was abandoned before it was finished",
    ))
}

/// Runs `work` with the encoder on a blocking thread: encoding a batch takes milliseconds of
/// CPU, which belong neither on the plugin's fiber stack (where host calls run) nor on a
/// runtime worker, and the encoder's sink may wait there for its uploader.
async fn off_the_fiber<E: Send + 'static, T: Send + 'static>(
    mut encoder: E,
    work: impl FnOnce(&mut E) -> T + Send + 'static,
) -> Result<(E, T), types::LakeError> {
    on_a_blocking_thread(move || {
        let out = work(&mut encoder);
        (encoder, out)
    })
    .await
}

/// Runs `work` on a blocking thread (see [`off_the_fiber`]).
async fn on_a_blocking_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, types::LakeError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| types::LakeError {
            kind: types::ErrorKind::Internal,
            message: format!("the native encoder failed: {e}"),
        })
}

/// Why an encoder failed: the uploader's error when its upload failed first (the encoder then
/// only saw its sink closed), the encoder's own otherwise.
async fn encoder_error(
    e: fluss_lake_columns::Error,
    uploader: &mut JoinHandle<Result<u64, StorageError>>,
) -> types::LakeError {
    if uploader.is_finished()
        && let Ok(Err(stored)) = uploader.await
    {
        return super::host_api::storage_error(stored);
    }
    plugin_error(e)
}

fn invalid(message: impl Into<String>) -> types::LakeError {
    types::LakeError {
        kind: types::ErrorKind::InvalidInput,
        message: message.into(),
    }
}

fn plugin_error(e: fluss_lake_columns::Error) -> types::LakeError {
    use fluss_lake_columns::Error as E;
    let kind = match &e {
        E::InvalidInput(_) | E::Arrow(_) => types::ErrorKind::InvalidInput,
        E::Unsupported(_) => types::ErrorKind::Unsupported,
        E::Parquet(_) => types::ErrorKind::Io,
    };
    types::LakeError {
        kind,
        message: e.to_string(),
    }
}

/// The file's schema from its IPC schema message, bounded.
fn file_schema(ipc: &[u8]) -> Result<SchemaRef, types::LakeError> {
    if ipc.len() > MAX_SCHEMA_BYTES {
        return Err(invalid(format!(
            "a file schema of {} bytes, over the {MAX_SCHEMA_BYTES}-byte limit",
            ipc.len()
        )));
    }
    let reader = StreamReader::try_new(Cursor::new(ipc), None)
        .map_err(|e| invalid(format!("the file schema is not an Arrow IPC schema: {e}")))?;
    let schema = reader.schema();
    let fields: usize = schema.fields().iter().map(|f| count_fields(f)).sum();
    if fields > MAX_FILE_FIELDS {
        return Err(invalid(format!(
            "a file of {fields} fields, over the limit of {MAX_FILE_FIELDS}"
        )));
    }
    Ok(schema)
}

/// A field and every field nested in it.
fn count_fields(field: &Field) -> usize {
    1 + match field.data_type() {
        DataType::Struct(children) => children.iter().map(|c| count_fields(c)).sum(),
        DataType::List(child)
        | DataType::LargeList(child)
        | DataType::FixedSizeList(child, _)
        | DataType::Map(child, _) => count_fields(child),
        _ => 0,
    }
}

/// The encoder's options from the plugin's settings, bounded; `memory_limit` is the
/// instance's.
fn parquet_options(
    settings: &dp::ParquetSettings,
    memory_limit: usize,
) -> Result<ParquetOptions, types::LakeError> {
    let compression = match settings.compression {
        dp::Compression::Uncompressed => Compression::UNCOMPRESSED,
        dp::Compression::Snappy => Compression::SNAPPY,
        dp::Compression::Lz4 => Compression::LZ4,
        dp::Compression::Lz4Raw => Compression::LZ4_RAW,
        dp::Compression::Zstd(level) => Compression::ZSTD(
            ZstdLevel::try_new(level).map_err(|e| invalid(format!("zstd level {level}: {e}")))?,
        ),
        dp::Compression::Gzip(level) => Compression::GZIP(
            GzipLevel::try_new(level).map_err(|e| invalid(format!("gzip level {level}: {e}")))?,
        ),
    };
    let max_group_bytes = MAX_ROW_GROUP_BYTES.min(memory_limit as u64 / 4);
    if settings.row_group_bytes == 0 || settings.row_group_bytes > max_group_bytes {
        return Err(invalid(format!(
            "row groups of {} bytes: between 1 and {max_group_bytes} bytes",
            settings.row_group_bytes
        )));
    }
    if settings.max_row_group_rows == 0 || settings.max_row_group_rows > MAX_ROW_GROUP_ROWS {
        return Err(invalid(format!(
            "row groups of {} rows: between 1 and {MAX_ROW_GROUP_ROWS} rows",
            settings.max_row_group_rows
        )));
    }
    Ok(ParquetOptions {
        // The plugin rolls its files itself, from the sizes `append` returns.
        target_file_size: u64::MAX,
        compression,
        max_row_group_rows: settings.max_row_group_rows as usize,
        row_group_bytes: settings.row_group_bytes as usize,
        embed_arrow_schema: settings.embed_arrow_schema,
        struct_field_stats: settings.struct_field_stats,
    })
}

/// The file's column sources, and the value of its bucket columns (one value per file).
fn column_sources(
    sources: &[dp::ColumnSource],
) -> Result<(Vec<ColumnSource>, i32), types::LakeError> {
    let picked: Vec<dp::PickedSource> = sources
        .iter()
        .map(|s| match *s {
            dp::ColumnSource::Fluss(c) => dp::PickedSource::Fluss(c),
            dp::ColumnSource::Null => dp::PickedSource::Null,
            dp::ColumnSource::Bucket(b) => dp::PickedSource::Bucket(b),
            dp::ColumnSource::LogOffset => dp::PickedSource::LogOffset,
            dp::ColumnSource::CommitTimestamp => dp::PickedSource::CommitTimestamp,
        })
        .collect();
    picked_sources(&picked)
}

/// The column sources of a file started with `start-picked` (0.3.8's sources and `computed`), and
/// the value of its bucket columns (one value per file).
fn picked_sources(
    sources: &[dp::PickedSource],
) -> Result<(Vec<ColumnSource>, i32), types::LakeError> {
    let mut bucket = None;
    let sources = sources
        .iter()
        .map(|s| {
            Ok(match *s {
                dp::PickedSource::Fluss(c) => ColumnSource::Fluss(c as usize),
                dp::PickedSource::Null => ColumnSource::Null,
                dp::PickedSource::Bucket(b) => {
                    if bucket.is_some_and(|seen| seen != b) {
                        return Err(invalid("a file's bucket columns must hold one value"));
                    }
                    bucket = Some(b);
                    ColumnSource::Bucket
                }
                dp::PickedSource::LogOffset => ColumnSource::Offset,
                dp::PickedSource::CommitTimestamp => ColumnSource::Timestamp,
                dp::PickedSource::Computed(c) => ColumnSource::Computed(c as usize),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((sources, bucket.unwrap_or(0)))
}

/// The picked rows of kept batches, in the order of `picks` (an index into `kept`, a row of
/// that batch), with their log offsets and commit times; every pick is checked first.
fn gather_picks(
    kept: &[&HostRows],
    picks: &[(u32, u32)],
) -> Result<(RecordBatch, Vec<i64>, Vec<i64>), types::LakeError> {
    let starts: Vec<Vec<usize>> = kept.iter().map(|k| k.part_starts()).collect();
    let mut parts: Vec<&RecordBatch> = Vec::new();
    let mut first_part = Vec::with_capacity(kept.len());
    for k in kept {
        first_part.push(parts.len());
        parts.extend(k.parts.iter());
    }
    let mut indices = Vec::with_capacity(picks.len());
    let mut offsets = Vec::with_capacity(picks.len());
    let mut timestamps = Vec::with_capacity(picks.len());
    for &(b, r) in picks {
        let (b, r) = (b as usize, r as usize);
        let k = kept
            .get(b)
            .ok_or_else(|| invalid(format!("pick of batch {b}: {} batches given", kept.len())))?;
        if r >= k.num_rows() {
            return Err(invalid(format!(
                "pick of row {r} of batch {b}, which has {} rows",
                k.num_rows()
            )));
        }
        // The part holding row r: the last whose first row is not after it.
        let part = starts[b].partition_point(|s| *s <= r) - 1;
        indices.push((first_part[b] + part, r - starts[b][part]));
        offsets.push(k.offsets[r]);
        timestamps.push(k.timestamps[r]);
    }
    let rows = arrow::compute::interleave_record_batch(&parts, &indices)
        .map_err(|e| invalid(format!("gathering the picked rows: {e}")))?;
    Ok((rows, offsets, timestamps))
}

/// The plugin's computed columns of an `append-picked` call as one batch, each with one value per
/// pick (`rows`).
fn computed_rows(
    columns: Vec<dp::ComputedColumn>,
    rows: usize,
) -> Result<RecordBatch, types::LakeError> {
    use arrow::array::{
        ArrayRef, BinaryArray, Int8Array, Int16Array, Int32Array, Int64Array, StringArray,
    };
    let columns: Vec<ArrayRef> = columns
        .into_iter()
        .map(|c| -> ArrayRef {
            match c {
                dp::ComputedColumn::Int8(v) => std::sync::Arc::new(Int8Array::from(v)),
                dp::ComputedColumn::Int16(v) => std::sync::Arc::new(Int16Array::from(v)),
                dp::ComputedColumn::Int32(v) => std::sync::Arc::new(Int32Array::from(v)),
                dp::ComputedColumn::Int64(v) => std::sync::Arc::new(Int64Array::from(v)),
                dp::ComputedColumn::Utf8(v) => std::sync::Arc::new(StringArray::from(v)),
                dp::ComputedColumn::Binary(v) => {
                    std::sync::Arc::new(BinaryArray::from_iter_values(v))
                }
            }
        })
        .collect();
    if let Some((i, c)) = columns.iter().enumerate().find(|(_, c)| c.len() != rows) {
        return Err(invalid(format!(
            "computed column {i} has {} values for {rows} picks",
            c.len()
        )));
    }
    let fields: Vec<Field> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| Field::new(format!("computed{i}"), c.data_type().clone(), false))
        .collect();
    RecordBatch::try_new_with_options(
        std::sync::Arc::new(arrow::datatypes::Schema::new(fields)),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| invalid(format!("computed columns: {e}")))
}

/// Memory an open file may hold: its row group being encoded (the columns' buffers and the
/// encoded pages, up to twice the row group's size), the chunks on their way to its uploader,
/// and the upload's part being filled and parts on their way.
fn file_memory(options: &ParquetOptions) -> usize {
    options
        .row_group_bytes
        .saturating_mul(2)
        .saturating_add(CHUNK_BYTES * (CHUNKS_IN_FLIGHT + 2))
        .saturating_add(UPLOAD_PART_SIZE * (UPLOAD_PARTS_IN_FLIGHT + 1))
}

fn datum(d: &Datum) -> dp::Datum {
    let unit = |u: &arrow::datatypes::TimeUnit| match u {
        TimeUnit::Second => dp::TimeUnit::Second,
        TimeUnit::Millisecond => dp::TimeUnit::Millisecond,
        TimeUnit::Microsecond => dp::TimeUnit::Microsecond,
        TimeUnit::Nanosecond => dp::TimeUnit::Nanosecond,
    };
    match d {
        Datum::Boolean(v) => dp::Datum::Boolean(*v),
        Datum::Int8(v) => dp::Datum::Int8(*v),
        Datum::Int16(v) => dp::Datum::Int16(*v),
        Datum::Int32(v) => dp::Datum::Int32(*v),
        Datum::Int64(v) => dp::Datum::Int64(*v),
        Datum::Float32(v) => dp::Datum::Float32(*v),
        Datum::Float64(v) => dp::Datum::Float64(*v),
        Datum::Utf8(v) => dp::Datum::Utf8(v.clone()),
        Datum::Binary(v) => dp::Datum::Binary(v.clone()),
        Datum::Decimal(v) => dp::Datum::Decimal(((*v >> 64) as i64, *v as u64)),
        Datum::Date32(v) => dp::Datum::Date32(*v),
        Datum::Time(v, u) => dp::Datum::Time((*v, unit(u))),
        Datum::Timestamp(v, u) => dp::Datum::Timestamp((*v, unit(u))),
    }
}

/// Statistics in the contract's order: each column, then its fields' entries.
fn flatten_stats(stats: &[ColumnStats], out: &mut Vec<dp::ColumnStats>) {
    for s in stats {
        out.push(dp::ColumnStats {
            null_count: s.null_count,
            min: s.min.as_ref().map(datum),
            max: s.max.as_ref().map(datum),
            fields: s.fields.len() as u32,
        });
        flatten_stats(&s.fields, out);
    }
}

fn encoded_file(size: u64, file: &EncodedFile) -> dp::EncodedFile {
    let mut column_stats = Vec::new();
    flatten_stats(&file.column_stats, &mut column_stats);
    dp::EncodedFile {
        size,
        row_count: file.row_count,
        column_stats,
    }
}

impl InstanceState {
    fn native_file(
        &mut self,
        file: &Resource<NativeFile>,
    ) -> Result<&mut NativeFile, types::LakeError> {
        self.table
            .get_mut(file)
            .map_err(|e| invalid(format!("not a parquet-file handle: {e}")))
    }

    fn host_rows(&self, rows: &Resource<HostRows>) -> Result<&HostRows, types::LakeError> {
        self.table
            .get(rows)
            .map_err(|e| invalid(format!("not a batch handle: {e}")))
    }

    /// Encodes the batch's rows into the file; the file's size so far.
    async fn append_rows(
        &mut self,
        file: &Resource<NativeFile>,
        rows: &Resource<HostRows>,
    ) -> Result<u64, types::LakeError> {
        let parts = {
            let r = self.host_rows(rows)?;
            let f = self
                .table
                .get(file)
                .map_err(|e| invalid(format!("not a parquet-file handle: {e}")))?;
            if f.columns.has_computed() {
                return Err(invalid(format!(
                    "{} has computed columns: it takes append-picked",
                    f.path
                )));
            }
            r.parts_with_rows()
                .map(|(part, offsets, timestamps)| {
                    f.columns.assemble(part, offsets, timestamps, f.bucket)
                })
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(plugin_error)?
        };
        self.encode_parts(file, parts).await
    }

    /// Encodes rows of kept batches in the order of `picks`, with the plugin's computed columns;
    /// everything is checked before anything is gathered.
    async fn append_picked_rows(
        &mut self,
        file: &Resource<NativeFile>,
        batches: &[Resource<KeptRows>],
        picks: &[(u32, u32)],
        computed: Vec<dp::ComputedColumn>,
    ) -> Result<u64, types::LakeError> {
        if picks.len() > MAX_PICKS_PER_CALL {
            return Err(invalid(format!(
                "{} picks in one call, over the limit of {MAX_PICKS_PER_CALL}",
                picks.len()
            )));
        }
        let computed = computed_rows(computed, picks.len())?;
        let assembled = {
            let kept = batches
                .iter()
                .map(|b| {
                    self.table
                        .get(b)
                        .map(|k| &k.rows)
                        .map_err(|e| invalid(format!("not a kept-batch handle: {e}")))
                })
                .collect::<Result<Vec<&HostRows>, _>>()?;
            let f = self
                .table
                .get(file)
                .map_err(|e| invalid(format!("not a parquet-file handle: {e}")))?;
            if picks.is_empty() {
                return Ok(f
                    .open
                    .as_ref()
                    .and_then(|o| o.encoder.as_ref())
                    .map_or(0, |e| e.size()));
            }
            let (rows, offsets, timestamps) = gather_picks(&kept, picks)?;
            f.columns
                .assemble_with_computed(&rows, &offsets, &timestamps, f.bucket, Some(&computed))
                .map_err(plugin_error)?
        };
        self.encode_parts(file, vec![assembled]).await
    }

    /// Encodes assembled file rows into the file; the file's size so far.
    async fn encode_parts(
        &mut self,
        file: &Resource<NativeFile>,
        parts: Vec<RecordBatch>,
    ) -> Result<u64, types::LakeError> {
        let f = self.native_file(file)?;
        let path = f.path.clone();
        let encoder = f
            .open
            .as_mut()
            .and_then(|o| o.encoder.take())
            .ok_or_else(|| invalid(format!("{path} is finished")))?;
        let (encoder, written) = off_the_fiber(encoder, move |e| {
            e.sink_mut().may_block = true;
            let written = parts.iter().try_for_each(|part| e.write(part));
            e.sink_mut().may_block = false;
            written
        })
        .await?;
        let f = self.native_file(file)?;
        let open = f
            .open
            .as_mut()
            .ok_or_else(|| invalid(format!("{path} is finished")))?;
        let encoder = open.encoder.insert(encoder);
        if let Err(e) = written {
            return Err(encoder_error(e, &mut open.uploader).await);
        }
        Ok(encoder.size())
    }

    /// Starts encoding a file at `path` with `schema` (an IPC schema message) and `sources`.
    async fn start_file(
        &mut self,
        path: String,
        schema: &[u8],
        sources: (Vec<ColumnSource>, i32),
        settings: dp::ParquetSettings,
    ) -> Result<Resource<NativeFile>, types::LakeError> {
        if self.open_uploads >= MAX_OPEN_UPLOADS {
            return Err(invalid(format!(
                "more than {MAX_OPEN_UPLOADS} uploads or files open at once: finish or abort one first"
            )));
        }
        let options = parquet_options(&settings, self.limits.memory_limit())?;
        let schema = file_schema(schema)?;
        let (sources, bucket) = sources;
        let columns = FileColumns::new(schema, sources).map_err(plugin_error)?;
        let reserved = file_memory(&options);
        self.limits.reserve(reserved).map_err(|(held, limit)| {
            invalid(format!(
                "a file encoded with row groups of {} bytes needs {reserved} bytes of the instance's memory, which holds {held} of its {limit}",
                options.row_group_bytes
            ))
        })?;
        let storage = self.storage().cloned();
        let opened = async {
            let upload = storage?
                .start_upload(&path)
                .await
                .map_err(super::host_api::storage_error)?;
            let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
            let sink = ChunkSink {
                tx,
                buf: Vec::with_capacity(CHUNK_BYTES),
                may_block: false,
            };
            // Created before the uploader: a refused schema leaves the upload to be dropped.
            let encoder =
                FileEncoder::new(sink, columns.schema().clone(), &options).map_err(plugin_error)?;
            Ok::<_, types::LakeError>(OpenFile {
                encoder: Some(encoder),
                uploader: tokio::spawn(upload_chunks(upload, rx)),
            })
        }
        .await;
        let open = match opened {
            Ok(open) => open,
            Err(e) => {
                self.limits.release(reserved);
                return Err(e);
            }
        };
        let file = NativeFile {
            path,
            columns,
            bucket,
            open: Some(open),
            reserved,
        };
        match self.table.push(file) {
            Ok(handle) => {
                self.open_uploads += 1;
                Ok(handle)
            }
            Err(e) => {
                self.limits.release(reserved);
                Err(invalid(format!("too many handles: {e}")))
            }
        }
    }

    /// Ends an open file: releases its memory and its upload slot.
    fn close_native_file(
        &mut self,
        file: &Resource<NativeFile>,
    ) -> Result<Option<OpenFile>, types::LakeError> {
        let f = self.native_file(file)?;
        let open = f.open.take();
        let reserved = std::mem::take(&mut f.reserved);
        self.limits.release(reserved);
        if open.is_some() {
            self.open_uploads = self.open_uploads.saturating_sub(1);
        }
        Ok(open)
    }
}

impl dp::Host for InstanceState {}

impl dp::HostBatch for InstanceState {
    async fn row_count(&mut self, rows: Resource<HostRows>) -> u32 {
        self.host_rows(&rows)
            .map(|r| u32::try_from(r.num_rows()).unwrap_or(u32::MAX))
            .unwrap_or(0)
    }

    async fn change_types(&mut self, rows: Resource<HostRows>) -> Vec<u8> {
        self.host_rows(&rows)
            .map(|r| r.change_types.clone())
            .unwrap_or_default()
    }

    async fn offset_range(&mut self, rows: Resource<HostRows>) -> Option<(i64, i64)> {
        let r = self.host_rows(&rows).ok()?;
        let min = r.offsets.iter().min()?;
        let max = r.offsets.iter().max()?;
        Some((*min, *max))
    }

    async fn rows(
        &mut self,
        rows: Resource<HostRows>,
    ) -> Result<types::RowBatch, types::LakeError> {
        let r = self.host_rows(&rows)?;
        r.to_row_batch().map_err(|e| types::LakeError {
            kind: types::ErrorKind::Internal,
            message: e.to_string(),
        })
    }

    async fn columns(
        &mut self,
        rows: Resource<HostRows>,
        positions: Vec<u32>,
    ) -> Result<types::RowBatch, types::LakeError> {
        self.host_rows(&rows)?.projected_row_batch(&positions)
    }

    async fn keep(
        &mut self,
        rows: Resource<HostRows>,
    ) -> Result<Resource<KeptRows>, types::LakeError> {
        let r = self.host_rows(&rows)?;
        if r.kept {
            return Err(invalid(
                "this batch is kept already: a batch is kept at most once",
            ));
        }
        let reserved = r.kept_bytes();
        let kept = r.clone();
        self.limits.reserve(reserved).map_err(|(held, limit)| {
            invalid(format!(
                "keeping a batch needs {reserved} bytes of the instance's memory, which holds {held} of its {limit}"
            ))
        })?;
        let handle = self
            .table
            .push(KeptRows {
                rows: kept,
                reserved,
            })
            .map_err(|e| {
                self.limits.release(reserved);
                invalid(format!("too many handles: {e}"))
            })?;
        if let Ok(r) = self.table.get_mut(&rows) {
            r.kept = true;
        }
        Ok(handle)
    }

    async fn drop(&mut self, rows: Resource<HostRows>) -> wasmtime::Result<()> {
        // Batches are only lent to the plugin, which never drops one; the host deletes each
        // after the call it was lent to.
        let _ = self.table.delete(rows);
        Ok(())
    }
}

impl dp::HostKeptBatch for InstanceState {
    async fn row_count(&mut self, kept: Resource<KeptRows>) -> u32 {
        self.table
            .get(&kept)
            .map(|k| u32::try_from(k.rows.num_rows()).unwrap_or(u32::MAX))
            .unwrap_or(0)
    }

    async fn memory_bytes(&mut self, kept: Resource<KeptRows>) -> u64 {
        self.table
            .get(&kept)
            .map(|k| k.reserved as u64)
            .unwrap_or(0)
    }

    async fn drop(&mut self, kept: Resource<KeptRows>) -> wasmtime::Result<()> {
        let k = self.table.delete(kept)?;
        self.limits.release(k.reserved);
        Ok(())
    }
}

impl dp::HostParquetFile for InstanceState {
    async fn start(
        &mut self,
        path: String,
        columns: dp::FileColumns,
        settings: dp::ParquetSettings,
    ) -> Result<Resource<NativeFile>, types::LakeError> {
        let sources = column_sources(&columns.sources)?;
        self.start_file(path, &columns.schema, sources, settings)
            .await
    }

    async fn start_picked(
        &mut self,
        path: String,
        columns: dp::PickedColumns,
        settings: dp::ParquetSettings,
    ) -> Result<Resource<NativeFile>, types::LakeError> {
        let sources = picked_sources(&columns.sources)?;
        self.start_file(path, &columns.schema, sources, settings)
            .await
    }

    async fn append_picked(
        &mut self,
        file: Resource<NativeFile>,
        batches: Vec<Resource<KeptRows>>,
        picks: Vec<(u32, u32)>,
        computed: Vec<dp::ComputedColumn>,
    ) -> Result<u64, types::LakeError> {
        let outcome = self
            .append_picked_rows(&file, &batches, &picks, computed)
            .await;
        if outcome.is_err() {
            // As `append`: a file that failed to take rows is unusable.
            if let Some(open) = self.close_native_file(&file)? {
                open.uploader.abort();
            }
        }
        outcome
    }

    async fn append(
        &mut self,
        file: Resource<NativeFile>,
        rows: Resource<HostRows>,
    ) -> Result<u64, types::LakeError> {
        let outcome = self.append_rows(&file, &rows).await;
        if outcome.is_err() {
            // A file that failed to take rows is unusable: nothing of it may appear.
            if let Some(open) = self.close_native_file(&file)? {
                open.uploader.abort();
            }
        }
        outcome
    }

    async fn row_count(&mut self, file: Resource<NativeFile>) -> u64 {
        self.native_file(&file)
            .ok()
            .and_then(|f| f.open.as_ref())
            .and_then(|o| o.encoder.as_ref().map(FileEncoder::rows))
            .unwrap_or(0)
    }

    async fn finish(
        &mut self,
        file: Resource<NativeFile>,
    ) -> Result<dp::EncodedFile, types::LakeError> {
        let path = self.native_file(&file)?.path.clone();
        let Some(open) = self.close_native_file(&file)? else {
            return Err(invalid(format!("{path} is finished")));
        };
        let OpenFile {
            encoder,
            mut uploader,
        } = open;
        let Some(encoder) = encoder else {
            uploader.abort();
            return Err(invalid(format!("{path} was abandoned while encoding")));
        };
        let finished = on_a_blocking_thread(move || {
            let mut encoder = encoder;
            encoder.sink_mut().may_block = true;
            let (sink, encoded) = encoder.finish()?;
            sink.finish()
                .map_err(|e| fluss_lake_columns::Error::Parquet(e.into()))?;
            Ok::<_, fluss_lake_columns::Error>(encoded)
        })
        .await;
        let encoded = match finished {
            Ok(Ok(encoded)) => encoded,
            Ok(Err(e)) => {
                let e = encoder_error(e, &mut uploader).await;
                uploader.abort();
                return Err(e);
            }
            Err(e) => {
                uploader.abort();
                return Err(e);
            }
        };
        let size = uploader
            .await
            .map_err(|e| types::LakeError {
                kind: types::ErrorKind::Internal,
                message: format!("the upload of {path} failed: {e}"),
            })?
            .map_err(super::host_api::storage_error)?;
        Ok(encoded_file(size, &encoded))
    }

    async fn abort(&mut self, file: Resource<NativeFile>) -> Result<(), types::LakeError> {
        // The uploader, dropped with its upload unfinished, leaves nothing.
        if let Some(open) = self.close_native_file(&file)? {
            open.uploader.abort();
        }
        Ok(())
    }

    async fn drop(&mut self, file: Resource<NativeFile>) -> wasmtime::Result<()> {
        // Dropping an unfinished file aborts its upload (`Upload`'s `Drop`, with its uploader).
        if let Ok(Some(open)) = self.close_native_file(&file) {
            open.uploader.abort();
        }
        self.table.delete(file)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_kept_only_with_one_offset_and_timestamp_per_row() {
        let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(vec![Field::new(
            "v",
            DataType::Int64,
            false,
        )]));
        let part = |n: i64| {
            let values = arrow::array::Int64Array::from((0..n).collect::<Vec<_>>());
            RecordBatch::try_new(schema.clone(), vec![std::sync::Arc::new(values)]).unwrap()
        };
        let two_parts = || vec![part(2), part(3)];
        let kept = HostRows::from_parts(two_parts(), vec![], (0..5).collect(), vec![7; 5]);
        assert_eq!(kept.unwrap().num_rows(), 5);
        for (change_types, offsets, timestamps) in [
            (vec![], (0..4).collect(), vec![7; 5]),
            (vec![], (0..5).collect(), vec![7; 6]),
            (vec![0; 3], (0..5).collect(), vec![7; 5]),
        ] {
            let e = HostRows::from_parts(two_parts(), change_types, offsets, timestamps);
            assert_eq!(e.err().map(|e| e.kind()), Some(ErrorKind::Internal));
        }
    }

    fn ints(schema: &SchemaRef, values: std::ops::Range<i64>) -> RecordBatch {
        let v = arrow::array::Int64Array::from(values.collect::<Vec<_>>());
        RecordBatch::try_new(schema.clone(), vec![std::sync::Arc::new(v)]).unwrap()
    }

    fn one_column() -> SchemaRef {
        std::sync::Arc::new(arrow::datatypes::Schema::new(vec![Field::new(
            "v",
            DataType::Int64,
            false,
        )]))
    }

    #[test]
    fn picks_gather_rows_across_batches_and_parts_in_the_order_given() {
        use arrow::array::AsArray;
        let schema = one_column();
        // Batch 0: rows 0..2 and 2..5 in two parts; batch 1: rows 100..103.
        let a = HostRows::from_parts(
            vec![ints(&schema, 0..2), ints(&schema, 2..5)],
            vec![],
            (10..15).collect(),
            vec![1; 5],
        )
        .unwrap();
        let b = HostRows::from_parts(
            vec![ints(&schema, 100..103)],
            vec![],
            (20..23).collect(),
            vec![2; 3],
        )
        .unwrap();
        let (rows, offsets, timestamps) =
            gather_picks(&[&a, &b], &[(1, 2), (0, 4), (0, 1), (0, 2), (1, 0)]).unwrap();
        let v = rows.column(0).as_primitive::<arrow::datatypes::Int64Type>();
        assert_eq!(v.values(), &[102, 4, 1, 2, 100]);
        assert_eq!(offsets, vec![22, 14, 11, 12, 20]);
        assert_eq!(timestamps, vec![2, 1, 1, 1, 2]);

        let e = gather_picks(&[&a, &b], &[(2, 0)]).unwrap_err();
        assert!(
            e.message.contains("pick of batch 2: 2 batches given"),
            "{}",
            e.message
        );
        let e = gather_picks(&[&a], &[(0, 5)]).unwrap_err();
        assert!(
            e.message.contains("row 5 of batch 0, which has 5 rows"),
            "{}",
            e.message
        );
        assert!(matches!(e.kind, types::ErrorKind::InvalidInput));
    }

    #[test]
    fn columns_are_projected_once_each_and_in_range() {
        let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Int64, false),
        ]));
        let part = |r: std::ops::Range<i64>| {
            let v = || {
                std::sync::Arc::new(arrow::array::Int64Array::from(
                    r.clone().collect::<Vec<_>>(),
                ))
            };
            RecordBatch::try_new(schema.clone(), vec![v(), v()]).unwrap()
        };
        let rows = HostRows::from_parts(
            vec![part(0..2), part(2..3)],
            vec![0, 1, 2],
            (0..3).collect(),
            vec![5; 3],
        )
        .unwrap();
        let batch = rows.projected_row_batch(&[1]).unwrap();
        let decoded = StreamReader::try_new(Cursor::new(batch.ipc), None)
            .unwrap()
            .map(|b| b.unwrap())
            .collect::<Vec<_>>();
        assert_eq!(decoded.len(), 1);
        assert_eq!(decoded[0].num_columns(), 1);
        assert_eq!(decoded[0].num_rows(), 3);
        assert_eq!(decoded[0].schema().field(0).name(), "b");
        assert_eq!(batch.change_types, vec![0, 1, 2]);
        assert_eq!(batch.log_offsets, vec![0, 1, 2]);
        for (bad, why) in [
            (vec![0, 0], "asked for twice"),
            (vec![2], "no column 2: the rows have 2 columns"),
            (vec![], "no column asked for"),
        ] {
            let e = rows.projected_row_batch(&bad).unwrap_err();
            assert!(e.message.contains(why), "{bad:?}: {}", e.message);
        }
    }

    #[test]
    fn computed_columns_need_one_value_per_pick() {
        let computed = computed_rows(
            vec![
                dp::ComputedColumn::Int64(vec![1, 2]),
                dp::ComputedColumn::Int8(vec![0, 3]),
            ],
            2,
        )
        .unwrap();
        assert_eq!(computed.num_columns(), 2);
        assert_eq!(computed.column(1).data_type(), &DataType::Int8);
        let e = computed_rows(vec![dp::ComputedColumn::Utf8(vec!["x".into()])], 2).unwrap_err();
        assert!(
            e.message
                .contains("computed column 0 has 1 values for 2 picks"),
            "{}",
            e.message
        );
        assert_eq!(computed_rows(vec![], 3).unwrap().num_rows(), 3);
    }

    fn settings() -> dp::ParquetSettings {
        dp::ParquetSettings {
            compression: dp::Compression::Zstd(1),
            max_row_group_rows: 1 << 20,
            row_group_bytes: 16 << 20,
            embed_arrow_schema: false,
            struct_field_stats: true,
        }
    }

    fn scoped(dir: &std::path::Path) -> super::super::storage::ScopedStorage {
        crate::warehouse::Warehouse::open(&dir.display().to_string(), &Default::default())
            .unwrap()
            .scope("db/t")
            .unwrap()
    }

    /// Bytes written through the sink (waiting on a blocking thread, as the encoder does) reach
    /// the object in order and whole once finished; an unfinished sink leaves no object.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn chunks_reach_the_object_whole_only_when_finished() {
        let dir = std::env::temp_dir().join(format!("dp-chunks-{}", std::process::id()));
        let storage = scoped(&dir);
        let data: Vec<u8> = (0..3 * CHUNK_BYTES + 123)
            .map(|i| (i % 251) as u8)
            .collect();
        for finish in [true, false] {
            let path = format!("data/f-{finish}");
            let upload = storage.start_upload(&path).await.unwrap();
            let (tx, rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
            let uploader = tokio::spawn(upload_chunks(upload, rx));
            let mut sink = ChunkSink {
                tx,
                buf: Vec::new(),
                may_block: false,
            };
            // Outside a blocking section the sink only buffers.
            std::io::Write::write_all(&mut sink, &data[..CHUNK_BYTES + 1]).unwrap();
            assert_eq!(sink.buf.len(), CHUNK_BYTES + 1);
            let rest = data[CHUNK_BYTES + 1..].to_vec();
            tokio::task::spawn_blocking(move || {
                sink.may_block = true;
                std::io::Write::write_all(&mut sink, &rest).unwrap();
                assert!(sink.buf.len() < CHUNK_BYTES, "sent as it fills");
                if finish {
                    sink.finish().unwrap();
                }
            })
            .await
            .unwrap();
            let outcome = uploader.await.unwrap();
            let stored = storage.get(&path, u64::MAX).await;
            if finish {
                assert_eq!(outcome.unwrap(), data.len() as u64);
                assert!(
                    stored.unwrap() == data,
                    "the object holds the bytes in order"
                );
            } else {
                assert!(outcome.unwrap_err().message.contains("abandoned"));
                assert!(stored.is_err(), "nothing of an unfinished file remains");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn settings_out_of_bounds_are_refused_before_anything_is_held() {
        let limit = 2 << 30;
        assert!(parquet_options(&settings(), limit).is_ok());
        for bad in [
            dp::ParquetSettings {
                row_group_bytes: 1 << 40,
                ..settings()
            },
            dp::ParquetSettings {
                row_group_bytes: 0,
                ..settings()
            },
            dp::ParquetSettings {
                max_row_group_rows: 0,
                ..settings()
            },
            dp::ParquetSettings {
                max_row_group_rows: u64::MAX,
                ..settings()
            },
            dp::ParquetSettings {
                compression: dp::Compression::Zstd(99),
                ..settings()
            },
            dp::ParquetSettings {
                compression: dp::Compression::Gzip(u32::MAX),
                ..settings()
            },
        ] {
            let e = parquet_options(&bad, limit).unwrap_err();
            assert_eq!(e.kind, types::ErrorKind::InvalidInput, "{}", e.message);
        }
        // A small instance cannot ask for row groups over a quarter of its memory.
        let e = parquet_options(&settings(), 32 << 20).unwrap_err();
        assert!(e.message.contains("between 1 and"), "{}", e.message);
    }

    #[test]
    fn schemas_that_are_not_ipc_or_too_large_are_refused() {
        let e = file_schema(b"not arrow").unwrap_err();
        assert!(
            e.message.contains("not an Arrow IPC schema"),
            "{}",
            e.message
        );
        let e = file_schema(&vec![0u8; MAX_SCHEMA_BYTES + 1]).unwrap_err();
        assert!(e.message.contains("over the"), "{}", e.message);
        let fields: Vec<Field> = (0..MAX_FILE_FIELDS + 1)
            .map(|i| Field::new(format!("f{i}"), DataType::Int32, true))
            .collect();
        let schema = arrow::datatypes::Schema::new(fields);
        let mut w = StreamWriter::try_new(Vec::new(), &schema).unwrap();
        w.finish().unwrap();
        let e = file_schema(&w.into_inner().unwrap()).unwrap_err();
        assert!(
            e.message.contains("fields, over the limit"),
            "{}",
            e.message
        );
    }

    #[test]
    fn one_file_holds_one_bucket_value() {
        let (_, b) =
            column_sources(&[dp::ColumnSource::Bucket(3), dp::ColumnSource::Null]).unwrap();
        assert_eq!(b, 3);
        let e = column_sources(&[dp::ColumnSource::Bucket(3), dp::ColumnSource::Bucket(4)])
            .unwrap_err();
        assert!(e.message.contains("one value"), "{}", e.message);
    }

    #[test]
    fn statistics_are_flattened_with_their_fields_after_each_column() {
        let stats = vec![
            ColumnStats {
                null_count: 1,
                min: Some(Datum::Decimal(-(1i128 << 70))),
                max: Some(Datum::Utf8("z".into())),
                fields: vec![ColumnStats::default(), ColumnStats::default()],
            },
            ColumnStats::default(),
        ];
        let mut out = Vec::new();
        flatten_stats(&stats, &mut out);
        assert_eq!(
            out.iter().map(|s| s.fields).collect::<Vec<_>>(),
            vec![2, 0, 0, 0]
        );
        let Some(dp::Datum::Decimal((hi, lo))) = out[0].min.clone() else {
            panic!("{:?}", out[0].min)
        };
        assert_eq!(((hi as i128) << 64) | lo as i128, -(1i128 << 70));
    }
}
