//! Writing a log table's rows (Paimon `AppendOnlyWriter`): rows go into rolling Parquet files
//! named `data-<uuid>-<n>.parquet` in arrival order.
//!
//! Sequence numbers: Paimon's append writer numbers rows consecutively per writer; here the
//! Fluss log offsets are used, which are consecutive per bucket too and keep growing across
//! rounds, so files of a fixed bucket stay ordered by sequence number as Paimon expects.

use fluss_lake_guest_sdk::data_plane::SplitRows;
use fluss_lake_guest_sdk::parquet::{DataFileInfo, Encoding, RollingParquetWriter};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::WriteResult;
use fluss_lake_guest_sdk::{Error, Result, ResultExt};

use crate::manifest::DataFileMeta;
use crate::schema::TableLayout;
use crate::stats::{StatsMode, dense_store, stats_modes, value_stats};
use crate::table::file_name;
use crate::types::PaimonType;
use crate::writer::BucketTarget;

/// Writes one bucket of a log table for one round.
pub struct AppendWriter<S: Storage> {
    target: BucketTarget,
    modes: Vec<StatsMode>,
    dense_stats: bool,
    writer: RollingParquetWriter<S>,
    /// Sequence range of the rows in the open file.
    open_seq: Option<(i64, i64)>,
    files: Vec<DataFileMeta>,
    records: u64,
}

impl<S: Storage> AppendWriter<S> {
    /// A writer into `target`, whose files are encoded as `encoding` says.
    pub fn new(target: BucketTarget, storage: S, encoding: Encoding) -> Result<Self> {
        let layout = target.rows.layout();
        let names: Vec<&str> = layout.fields.iter().map(|(n, _, _)| n.as_str()).collect();
        let modes = stats_modes(&names, &target.schema.options)?;
        let dense_stats = dense_store(&target.schema.options);
        let prefix = target.schema.option("data-file.prefix").unwrap_or("data-");
        let writer = RollingParquetWriter::for_columns(
            storage,
            target.rows.columns().clone(),
            target.rows.fluss_bucket(),
            target.parquet.clone(),
            encoding,
            target.names.paths(prefix),
        );
        Ok(AppendWriter {
            target,
            modes,
            dense_stats,
            writer,
            open_seq: None,
            files: Vec::new(),
            records: 0,
        })
    }

    /// Appends a batch of rows (log tables: every row must be `+A` or `+I`).
    pub fn write(&mut self, rows: SplitRows<'_>) -> Result<()> {
        let n = rows.num_rows();
        if n == 0 {
            return Ok(());
        }
        if let Some(bad) = rows.first_non_addition()? {
            return Err(Error::invalid_input(format!(
                "append-only Paimon tables only take +A/+I rows, got {bad:?}"
            )));
        }
        let (first, last) = rows.offset_range().expect("non-empty batch");
        if let SplitRows::Decoded(d) = &rows {
            self.target.rows.check_columns(&d.batch)?;
        }
        self.open_seq = Some(match self.open_seq {
            None => (first, last),
            Some((lo, hi)) => (lo.min(first), hi.max(last)),
        });
        self.records += n as u64;
        if let Some(info) = self.writer.write_rows(rows)? {
            self.add_file(info)?;
        }
        Ok(())
    }

    fn add_file(&mut self, info: DataFileInfo) -> Result<()> {
        let sequence = self
            .open_seq
            .take()
            .unwrap_or((0, info.row_count as i64 - 1));
        let file = describe_file(
            self.target.rows.layout(),
            &self.modes,
            self.dense_stats,
            self.target.schema.id,
            &info,
            sequence,
        )?;
        self.files.push(file);
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
        self.target
            .write_result(self.files, Vec::new(), self.records)
    }
}

/// Describes a data file of an append table (written by this writer or by compaction) the
/// way Paimon's `RowDataFileWriter` does: value statistics of every column (per the table's
/// statistics modes), the given sequence range, level 0, `FileSource.APPEND`.
pub fn describe_file(
    layout: &TableLayout,
    modes: &[StatsMode],
    dense_stats: bool,
    schema_id: i64,
    info: &DataFileInfo,
    (min_seq, max_seq): (i64, i64),
) -> Result<DataFileMeta> {
    let fields: Vec<(&str, PaimonType)> = layout
        .fields
        .iter()
        .map(|(n, t, _)| (n.as_str(), t.clone()))
        .collect();
    let (cols, stats) = value_stats(&fields, &info.column_stats, modes, dense_stats)?;
    Ok(DataFileMeta {
        value_stats: stats,
        value_stats_cols: cols,
        min_sequence_number: min_seq,
        max_sequence_number: max_seq,
        ..DataFileMeta::new_file(
            file_name(&info.path).to_string(),
            info.size as i64,
            info.row_count as i64,
            schema_id,
        )
    })
}
