//! Rolling Parquet writers for one split's data, equality-delete and position-delete files,
//! turning the SDK's per-file statistics into Iceberg's metrics (value / null counts and
//! truncated lower / upper bounds by field id) so readers prune files.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::SchemaRef;
use fluss_lake_guest_sdk::Result;
use fluss_lake_guest_sdk::data_plane::{KeptBatch, SplitRows};
use fluss_lake_guest_sdk::parquet::{DataFileInfo, Encoding, ParquetOptions, RollingParquetWriter};
use fluss_lake_guest_sdk::stats::ColumnStats;
use fluss_lake_guest_sdk::storage::Storage;

use crate::manifest::{DataFile, FileContent};
use crate::partition::{PartitionSpec, PartitionValue};
use crate::schema::{NestedField, TableLayout, file_schema};
use crate::types::{IcebergType, single_value, truncate_lower, truncate_upper};

/// Field ids and names of position-delete files (Iceberg's reserved `file_path` and `pos`).
pub const DELETE_FILE_PATH_ID: i32 = 2147483546;
pub const DELETE_POS_ID: i32 = 2147483545;

/// Where one split's files go: its table, partition tuple and directory.
#[derive(Debug, Clone)]
pub struct SplitTarget {
    pub layout: TableLayout,
    pub spec: PartitionSpec,
    pub partition: Vec<Option<PartitionValue>>,
    /// The table's absolute location (metadata `location`), prefix of every file URI.
    pub location: String,
    /// The data directory relative to the table: `data/<partition path>`.
    pub dir: String,
    pub bucket: i32,
    pub parquet: ParquetOptions,
    /// Shared by all the split's writers so file names never collide.
    pub file_counter: Rc<Cell<u32>>,
    pub operation_id: String,
}

impl SplitTarget {
    /// The next file's path relative to the table, named like Java's `OutputFileFactory`:
    /// `<partitionId>-<taskId>-<operationId>-<fileCount>`.
    fn namer(&self) -> impl FnMut() -> String + 'static {
        let (dir, bucket, op, counter) = (
            self.dir.clone(),
            self.bucket,
            self.operation_id.clone(),
            self.file_counter.clone(),
        );
        move || {
            let n = counter.get() + 1;
            counter.set(n);
            format!("{dir}/{bucket:05}-0-{op}-{n:05}.parquet")
        }
    }

    pub fn uri(&self, relative: &str) -> String {
        format!("{}/{relative}", self.location)
    }

    /// Converts a Fluss batch into the table's file schema, filling the system columns.
    pub fn to_file_batch(
        &self,
        batch: &RecordBatch,
        offsets: &[i64],
        timestamps_ms: &[i64],
    ) -> Result<RecordBatch> {
        Ok(self
            .layout
            .file_columns()?
            .assemble(batch, offsets, timestamps_ms, self.bucket)?)
    }
}

/// Writes files of one content class for a split and describes them as [`DataFile`]s.
pub struct ContentWriter<S: Storage> {
    parquet: RollingParquetWriter<S>,
    content: FileContent,
    equality_ids: Option<Vec<i32>>,
    fields: Vec<(i32, IcebergType)>,
    target: SplitTarget,
    files: Vec<DataFile>,
}

impl<S: Storage> ContentWriter<S> {
    /// Data files, or equality-delete files (full rows, as Fluss's Java plugin writes them)
    /// when `equality_ids` is set.
    pub fn rows(storage: S, target: &SplitTarget, equality_ids: Option<Vec<i32>>) -> Self {
        let fields = &target.layout.schema.fields;
        Self::new(
            storage,
            target,
            target.layout.file_schema.clone(),
            fields,
            rows_content(&equality_ids),
            equality_ids,
        )
    }

    /// Files of a split's rows ([`SplitRows`]) laid out as the table's data files, encoded as
    /// `encoding` says: data files, or equality-delete files when `equality_ids` is set.
    pub fn split_rows(
        storage: S,
        target: &SplitTarget,
        encoding: Encoding,
        equality_ids: Option<Vec<i32>>,
    ) -> Result<Self> {
        let parquet = RollingParquetWriter::for_columns(
            storage,
            target.layout.file_columns()?,
            target.bucket,
            target.parquet.clone(),
            encoding,
            target.namer(),
        );
        Ok(Self::with_parquet(
            parquet,
            target,
            &target.layout.schema.fields,
            rows_content(&equality_ids),
            equality_ids,
        ))
    }

    /// Position-delete files (`file_path`, `pos`).
    pub fn position_deletes(storage: S, target: &SplitTarget) -> Self {
        let fields = position_delete_fields();
        Self::new(
            storage,
            target,
            file_schema(&fields),
            &fields,
            FileContent::PositionDeletes,
            None,
        )
    }

    fn new(
        storage: S,
        target: &SplitTarget,
        schema: SchemaRef,
        fields: &[NestedField],
        content: FileContent,
        equality_ids: Option<Vec<i32>>,
    ) -> Self {
        let parquet =
            RollingParquetWriter::new(storage, schema, target.parquet.clone(), target.namer());
        Self::with_parquet(parquet, target, fields, content, equality_ids)
    }

    fn with_parquet(
        parquet: RollingParquetWriter<S>,
        target: &SplitTarget,
        fields: &[NestedField],
        content: FileContent,
        equality_ids: Option<Vec<i32>>,
    ) -> Self {
        ContentWriter {
            parquet,
            content,
            equality_ids,
            fields: fields.iter().map(|f| (f.id, f.ty.clone())).collect(),
            target: target.clone(),
            files: Vec::new(),
        }
    }

    /// The absolute URI of the file the next written row goes to, and that row's position.
    pub fn next_position(&mut self) -> Result<(String, i64)> {
        let path = self.parquet.ensure_open()?.to_string();
        Ok((self.target.uri(&path), self.parquet.open_rows() as i64))
    }

    /// Appends a split's rows (a writer of [`Self::split_rows`]).
    pub fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<()> {
        if let Some(info) = self.parquet.write_rows(rows)? {
            let f = self.describe(info);
            self.files.push(f);
        }
        Ok(())
    }

    /// Appends rows the host keeps, in the order of `picks` (a writer of [`Self::split_rows`]
    /// encoded by the host).
    pub fn write_picked(&mut self, kept: &[&KeptBatch], picks: &[(u32, u32)]) -> Result<()> {
        if let Some(info) = self.parquet.write_picked(kept, picks, None)? {
            let f = self.describe(info);
            self.files.push(f);
        }
        Ok(())
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if let Some(info) = self.parquet.write(batch)? {
            let f = self.describe(info);
            self.files.push(f);
        }
        Ok(())
    }

    pub fn rows_written(&self) -> i64 {
        self.files.iter().map(|f| f.record_count).sum::<i64>() + self.parquet.open_rows() as i64
    }

    pub fn finish(mut self) -> Result<Vec<DataFile>> {
        if let Some(info) = self.parquet.finish_file()? {
            let f = self.describe(info);
            self.files.push(f);
        }
        Ok(self.files)
    }

    fn describe(&self, info: DataFileInfo) -> DataFile {
        let rows = info.row_count as i64;
        let mut f = DataFile {
            content: self.content,
            file_path: self.target.uri(&info.path),
            record_count: rows,
            file_size_in_bytes: info.size as i64,
            spec_id: self.target.spec.spec_id,
            partition: self.target.partition.clone(),
            value_counts: Vec::new(),
            null_value_counts: Vec::new(),
            lower_bounds: Vec::new(),
            upper_bounds: Vec::new(),
            equality_ids: self.equality_ids.clone(),
            sort_order_id: None,
            referenced_data_file: None,
        };
        // Position deletes keep full `file_path` bounds: readers match them to data files.
        let full = self.content == FileContent::PositionDeletes;
        for ((id, ty), stats) in self.fields.iter().zip(&info.column_stats) {
            field_metrics(&mut f, *id, ty, stats, full);
        }
        f
    }
}

/// Files of full rows: equality deletes when they have equality ids, else data.
fn rows_content(equality_ids: &Option<Vec<i32>>) -> FileContent {
    if equality_ids.is_some() {
        FileContent::EqualityDeletes
    } else {
        FileContent::Data
    }
}

/// The metrics of field `id` of a data file, as Java's `ParquetMetrics` keeps them: value and
/// null counts and bounds of every primitive field, at any depth of structs (a field of a null
/// struct counted null); none of a list or map, nor of what they hold (Java keeps only their
/// column sizes, which no manifest here records), nor of a struct itself.
fn field_metrics(f: &mut DataFile, id: i32, ty: &IcebergType, stats: &ColumnStats, full: bool) {
    match ty {
        IcebergType::Struct(fields) => {
            for (field, field_stats) in fields.iter().zip(&stats.fields) {
                field_metrics(f, field.id, &field.ty, field_stats, full);
            }
        }
        IcebergType::List(_) | IcebergType::Map(_) => {}
        _ => {
            f.value_counts.push((id, f.record_count));
            f.null_value_counts.push((id, stats.null_count as i64));
            let lower = stats
                .min
                .as_ref()
                .map(|d| if full { d.clone() } else { truncate_lower(d) });
            if let Some(lo) = lower.and_then(|d| single_value(&d, ty)) {
                f.lower_bounds.push((id, lo));
            }
            let upper = stats.max.as_ref().and_then(|d| {
                if full {
                    Some(d.clone())
                } else {
                    truncate_upper(d)
                }
            });
            if let Some(hi) = upper.and_then(|d| single_value(&d, ty)) {
                f.upper_bounds.push((id, hi));
            }
        }
    }
}

fn position_delete_fields() -> Vec<NestedField> {
    vec![
        NestedField {
            id: DELETE_FILE_PATH_ID,
            name: "file_path".into(),
            required: true,
            ty: IcebergType::String,
            doc: None,
        },
        NestedField {
            id: DELETE_POS_ID,
            name: "pos".into(),
            required: true,
            ty: IcebergType::Long,
            doc: None,
        },
    ]
}

/// Writes sorted `(file, position)` deletes as one position-delete file (set
/// `referenced_data_file` when they all hit one data file, as Iceberg does).
pub fn write_position_deletes<S: Storage>(
    storage: S,
    target: &SplitTarget,
    mut deletes: Vec<(String, i64)>,
) -> Result<Vec<DataFile>> {
    if deletes.is_empty() {
        return Ok(Vec::new());
    }
    deletes.sort();
    deletes.dedup();
    let single = deletes
        .iter()
        .all(|(p, _)| *p == deletes[0].0)
        .then(|| deletes[0].0.clone());
    let mut w = ContentWriter::position_deletes(storage, target);
    let schema = file_schema(&position_delete_fields());
    for chunk in deletes.chunks(64 * 1024) {
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(
                    chunk.iter().map(|(p, _)| p.as_str()),
                )),
                Arc::new(Int64Array::from_iter_values(chunk.iter().map(|(_, i)| *i))),
            ],
        )?;
        w.write(&batch)?;
    }
    let mut files = w.finish()?;
    for f in &mut files {
        f.referenced_data_file = single.clone();
    }
    Ok(files)
}
