//! Writing a sorted run of key/value rows into rolling Parquet files and describing each file
//! the way Paimon's `KeyValueDataFileWriter` does: `_MIN_KEY` / `_MAX_KEY` are the first and
//! last key written (rows arrive sorted), `_KEY_STATS` covers every key column (Paimon's "all
//! mode"), `_VALUE_STATS` the table columns (dense store), the sequence range comes from the
//! `_SEQUENCE_NUMBER` column and `_DELETE_ROW_COUNT` counts retractions. Data files and
//! changelog files are written the same way; only their names and statistics modes differ.
//! Compaction writes its output through the same writer, at its output level and with
//! `FileSource.COMPACT`.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use fluss_lake_guest_sdk::data_plane::KeptBatch;
use fluss_lake_guest_sdk::file_columns::FileColumns;
use fluss_lake_guest_sdk::parquet::{DataFileInfo, Encoding, ParquetOptions, RollingParquetWriter};
use fluss_lake_guest_sdk::stats::{ColumnStats, Datum};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result};

use super::kv::{KvLayout, RowKind};
use crate::manifest::{DataFileMeta, FileSource};
use crate::stats::{StatsMode, dense_store, stats_modes_with, value_stats};
use crate::table::file_name;
use crate::types::PaimonType;

/// What every file of one kind (data or changelog) of a table is written with.
#[derive(Debug, Clone)]
pub struct KvFileSettings {
    /// Schema id recorded in the files' metadata.
    pub schema_id: i64,
    /// Statistics mode per key/value column.
    pub modes: Vec<StatsMode>,
    /// `metadata.stats-dense-store`.
    pub dense_stats: bool,
    /// Parquet settings (target file size).
    pub parquet: ParquetOptions,
    /// LSM level of the files (0 for what writers flush).
    pub level: i32,
    /// Why the files are written (`FileSource.APPEND` for writers, `COMPACT` for compaction).
    pub file_source: FileSource,
}

impl KvFileSettings {
    /// Settings for files whose default statistics mode is `stats_mode`; per-column options
    /// (`fields.<name>.stats-mode`, `metadata.stats-keep-first-n-columns`) apply on top.
    pub fn new(
        layout: &KvLayout,
        schema_id: i64,
        options: &BTreeMap<String, String>,
        stats_mode: &str,
        parquet: ParquetOptions,
    ) -> Result<KvFileSettings> {
        Ok(KvFileSettings {
            schema_id,
            modes: stats_modes_with(&layout.names(), options, stats_mode)?,
            dense_stats: dense_store(options),
            parquet,
            level: 0,
            file_source: FileSource::Append,
        })
    }

    /// These settings for files a compaction writes at `level`.
    pub fn for_compaction(self, level: i32) -> KvFileSettings {
        KvFileSettings {
            level,
            file_source: FileSource::Compact,
            ..self
        }
    }
}

/// Keys and retractions of the file being written.
struct OpenFile {
    min_key: Vec<u8>,
    max_key: Vec<u8>,
    delete_rows: i64,
}

/// Writes one sorted run into files.
pub struct KvFileWriter<'a, S: Storage + ?Sized> {
    layout: &'a KvLayout,
    settings: &'a KvFileSettings,
    writer: RollingParquetWriter<&'a S>,
    open: Option<OpenFile>,
    files: Vec<DataFileMeta>,
}

impl<'a, S: Storage + ?Sized> KvFileWriter<'a, S> {
    /// A writer of files named by `next_path`.
    pub fn new(
        storage: &'a S,
        layout: &'a KvLayout,
        settings: &'a KvFileSettings,
        next_path: impl FnMut() -> String + 'static,
    ) -> Self {
        KvFileWriter {
            layout,
            settings,
            writer: RollingParquetWriter::new(
                storage,
                layout.schema().clone(),
                settings.parquet.clone(),
                next_path,
            ),
            open: None,
            files: Vec::new(),
        }
    }

    /// A writer whose files the host encodes (contract 0.3.9) with `columns`: the key/value
    /// layout's columns, whose key and table columns come from the rows the host keeps and whose
    /// `_SEQUENCE_NUMBER` and `_VALUE_KIND` are computed here (`ColumnSource::Computed(0)` and
    /// `Computed(1)`), read from Fluss bucket `bucket`.
    pub fn on_host(
        storage: &'a S,
        layout: &'a KvLayout,
        settings: &'a KvFileSettings,
        columns: FileColumns,
        bucket: i32,
        next_path: impl FnMut() -> String + 'static,
    ) -> Self {
        KvFileWriter {
            layout,
            settings,
            writer: RollingParquetWriter::for_columns(
                storage,
                columns,
                bucket,
                settings.parquet.clone(),
                Encoding::Host,
                next_path,
            ),
            open: None,
            files: Vec::new(),
        }
    }

    /// Appends key/value rows that sort after every row written before.
    pub fn write(&mut self, rows: &RecordBatch) -> Result<()> {
        if rows.num_rows() == 0 {
            return Ok(());
        }
        self.note_rows(rows)?;
        if let Some(info) = self.writer.write(rows)? {
            self.finish_file(info)?;
        }
        Ok(())
    }

    /// Appends rows the host keeps (`picks` of `kept`) that sort after every row written
    /// before, whose keys, sequence numbers and row kinds are `keys` (the key/value layout's
    /// first columns, up to `_VALUE_KIND`, one row per pick).
    pub fn write_picked(
        &mut self,
        keys: &RecordBatch,
        kept: &[&KeptBatch],
        picks: &[(u32, u32)],
    ) -> Result<()> {
        if picks.is_empty() {
            return Ok(());
        }
        if keys.num_rows() != picks.len() {
            return Err(Error::internal("one key row per pick expected"));
        }
        self.note_rows(keys)?;
        let own = keys.project(&[self.layout.sequence_column(), self.layout.kind_column()])?;
        if let Some(info) = self.writer.write_picked(kept, picks, Some(&own))? {
            self.finish_file(info)?;
        }
        Ok(())
    }

    /// Keeps the open file's key range and retractions up to date with `rows` (key/value rows,
    /// or their first columns up to `_VALUE_KIND`).
    fn note_rows(&mut self, rows: &RecordBatch) -> Result<()> {
        let n = rows.num_rows();
        let deletes = rows
            .column(self.layout.kind_column())
            .as_primitive::<Int8Type>()
            .values()
            .iter()
            .filter(|k| RowKind::is_retract(**k))
            .count() as i64;
        let max_key = self.layout.key_row(rows, n - 1)?;
        match &mut self.open {
            Some(f) => {
                f.max_key = max_key;
                f.delete_rows += deletes;
            }
            None => {
                self.open = Some(OpenFile {
                    min_key: self.layout.key_row(rows, 0)?,
                    max_key,
                    delete_rows: deletes,
                })
            }
        }
        Ok(())
    }

    fn finish_file(&mut self, info: DataFileInfo) -> Result<()> {
        let open = self
            .open
            .take()
            .ok_or_else(|| Error::internal("a file finished that was never opened"))?;
        let layout = self.layout;
        let names = layout.names();
        let stats = &info.column_stats;
        let modes = &self.settings.modes;
        let (k, v) = (layout.num_keys(), layout.value_start());

        let key_fields: Vec<(&str, PaimonType)> = names[..k]
            .iter()
            .copied()
            .zip(layout.key_types().iter().cloned())
            .collect();
        let (_, key_stats) = value_stats(&key_fields, &stats[..k], &modes[..k], false)?;
        let value_fields: Vec<(&str, PaimonType)> = names[v..]
            .iter()
            .copied()
            .zip(layout.value_types().iter().cloned())
            .collect();
        let (value_stats_cols, value_stats) = value_stats(
            &value_fields,
            &stats[v..],
            &modes[v..],
            self.settings.dense_stats,
        )?;
        let (min_seq, max_seq) = sequence_range(&stats[layout.sequence_column()])?;

        self.files.push(DataFileMeta {
            min_key: open.min_key,
            max_key: open.max_key,
            key_stats,
            value_stats,
            value_stats_cols,
            min_sequence_number: min_seq,
            max_sequence_number: max_seq,
            delete_row_count: Some(open.delete_rows),
            level: self.settings.level,
            file_source: Some(self.settings.file_source as i32),
            ..DataFileMeta::new_file(
                file_name(&info.path).to_string(),
                info.size as i64,
                info.row_count as i64,
                self.settings.schema_id,
            )
        });
        Ok(())
    }

    /// Finishes the last file and describes every file written.
    pub fn finish(mut self) -> Result<Vec<DataFileMeta>> {
        if let Some(info) = self.writer.finish_file()? {
            self.finish_file(info)?;
        }
        Ok(self.files)
    }
}

fn sequence_range(stats: &ColumnStats) -> Result<(i64, i64)> {
    match (&stats.min, &stats.max) {
        (Some(Datum::Int64(lo)), Some(Datum::Int64(hi))) => Ok((*lo, *hi)),
        _ => Err(Error::internal("a key/value file without sequence numbers")),
    }
}
