//! Writing a primary-key table's changelog the way Fluss's Java plugin does through Paimon's
//! `MergeTreeWriter` in write-only mode (no compaction): every record gets the next sequence
//! number of its bucket and its `RowKind` from the Fluss change type; records are buffered up
//! to `write-buffer-size`, then each buffer is flushed as one sorted run — level-0 data files
//! holding the last record per key (retractions included, so they shadow older files), and,
//! with `changelog-producer = input`, changelog files holding every record of the run.
//!
//! * [`options`] — the table options honoured and refused,
//! * [`kv`] — the key/value row layout of the files,
//! * [`buffer`] — buffering, sorting and merging,
//! * [`file_writer`] — the files of one sorted run and their metadata,
//! * [`sequence`] — where a bucket's sequence numbers continue.

pub mod buffer;
pub mod file_writer;
pub mod kv;
pub mod options;
pub mod sequence;

use fluss_lake_guest_sdk::Error;
use fluss_lake_guest_sdk::arrow_util::interleave_batches;
use fluss_lake_guest_sdk::data_plane::{HostBatch, KeptBatch, SplitRows};
use fluss_lake_guest_sdk::file_columns::{ColumnSource, FileColumns};
use fluss_lake_guest_sdk::parquet::Encoding;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::WriteResult;
use fluss_lake_guest_sdk::{Result, ResultExt};

use crate::manifest::DataFileMeta;
use crate::writer::BucketTarget;
use buffer::{RowId, WriteBuffer};
use file_writer::{KvFileSettings, KvFileWriter};
use kv::{KvLayout, RowKind};
use options::MergeTreeOptions;

/// Rows gathered from the buffer per Parquet write: small enough to add little memory on top
/// of the buffer, large enough to keep per-batch overhead negligible.
const CHUNK_ROWS: usize = 4096;

/// Writes one bucket of a primary-key table for one round.
pub struct MergeTreeWriter<S: Storage> {
    storage: S,
    target: BucketTarget,
    options: MergeTreeOptions,
    layout: KvLayout,
    data_settings: KvFileSettings,
    changelog_settings: KvFileSettings,
    buffer: WriteBuffer,
    /// Sequence number of the next record.
    next_sequence: i64,
    data_files: Vec<DataFileMeta>,
    changelog_files: Vec<DataFileMeta>,
    records: u64,
    /// Set when the rows stay in the host (contract 0.3.9): the buffer then holds only each
    /// row's key and row kind (its sequence number follows from its place in the buffer), and
    /// the host encodes the files.
    on_host: Option<OnHost>,
}

/// A writer whose rows stay in the host: it takes only the key columns of each batch, keeps
/// the batch in the host, sorts and merges the keys here, and has the host encode the rows it
/// picks, with their sequence numbers and row kinds.
struct OnHost {
    /// The Fluss positions of the key columns (what `batch.columns` is asked for).
    key_positions: Vec<usize>,
    /// Converts the fetched key columns to the files' key types.
    keys: FileColumns,
    /// The files' columns: keys and table columns from the kept rows, `_SEQUENCE_NUMBER` and
    /// `_VALUE_KIND` computed here (`Computed(0)`, `Computed(1)`).
    files: FileColumns,
    /// The kept batch of each buffered batch, in the buffer's order.
    kept: Vec<KeptBatch>,
}

impl OnHost {
    fn new(layout: &KvLayout, table: &FileColumns) -> Result<OnHost> {
        let k = layout.num_keys();
        let key_positions = layout
            .key_columns()
            .iter()
            .map(|&c| match table.sources().get(c) {
                Some(ColumnSource::Fluss(p)) => Ok(*p),
                other => Err(Error::internal(format!(
                    "primary key column {c} is not a Fluss column ({other:?})"
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        let key_schema = layout.key_schema();
        let keys = FileColumns::new(
            std::sync::Arc::new(arrow_schema::Schema::new(key_schema.fields()[..k].to_vec())),
            (0..k).map(ColumnSource::Fluss).collect(),
        )?;
        let mut sources: Vec<ColumnSource> = key_positions
            .iter()
            .map(|p| ColumnSource::Fluss(*p))
            .collect();
        sources.extend([ColumnSource::Computed(0), ColumnSource::Computed(1)]);
        sources.extend(table.sources().iter().copied());
        let files = FileColumns::new(layout.schema().clone(), sources)?;
        Ok(OnHost {
            key_positions,
            keys,
            files,
            kept: Vec::new(),
        })
    }
}

impl<S: Storage> MergeTreeWriter<S> {
    /// A writer into `target`, numbering records after the bucket's restored sequence
    /// numbers; `plugin_config` may override `write-buffer-size`.
    /// With [`Encoding::Host`], the rows stay in the host (each `write` must then get
    /// [`SplitRows::Host`]) and the host encodes the files.
    pub fn new(
        target: BucketTarget,
        plugin_config: &[(String, String)],
        storage: S,
        encoding: Encoding,
    ) -> Result<Self> {
        let options = MergeTreeOptions::of(&target.schema)?.with_config(plugin_config)?;
        let layout = KvLayout::new(&target.schema, target.rows.layout(), target.rows.schema())?;
        let settings = |mode: &str| {
            KvFileSettings::new(
                &layout,
                target.schema.id,
                &target.schema.options,
                mode,
                target.parquet.clone(),
            )
        };
        let data_settings = settings(&options.data_stats_mode)?;
        let changelog_settings = settings(&options.changelog_stats_mode)?;
        let max_sequence = sequence::restore_max_sequence_number(
            &storage,
            &target.partition.row,
            target.bucket,
            target.total_buckets,
        )
        .context("restoring the bucket's sequence numbers")?;
        let on_host = match encoding {
            Encoding::Host => Some(OnHost::new(&layout, target.rows.columns())?),
            Encoding::Guest => None,
        };
        Ok(MergeTreeWriter {
            storage,
            target,
            layout,
            data_settings,
            changelog_settings,
            buffer: WriteBuffer::new(options.write_buffer_size),
            options,
            next_sequence: max_sequence + 1,
            data_files: Vec::new(),
            changelog_files: Vec::new(),
            records: 0,
            on_host,
        })
    }

    /// Buffers a batch of the bucket's changelog (rows in log order), flushing sorted runs
    /// whenever the buffer is full.
    pub fn write(&mut self, rows: SplitRows<'_>) -> Result<()> {
        if self.on_host.is_some() {
            return match rows {
                SplitRows::Host(batch) => self.write_on_host(&batch),
                SplitRows::Decoded(_) => Err(Error::internal(
                    "rows in guest memory for a writer whose rows stay in the host",
                )),
            };
        }
        let decoded = rows.into_decoded()?;
        let n = decoded.num_rows();
        if n == 0 {
            return Ok(());
        }
        let kinds = RowKind::of_batch(&decoded)?;
        let rows =
            self.target
                .rows
                .convert(&decoded.batch, &decoded.log_offsets, &decoded.timestamps)?;
        self.records += n as u64;

        // Rows go in as slices that fit the buffer's room, flushing whenever it is full, so a
        // large batch cannot overshoot the budget (a row larger than the whole budget goes
        // alone).
        let per_row = (WriteBuffer::cost(&rows) / n as u64).max(1);
        let mut start = 0;
        while start < n {
            let take = match self.buffer.room(per_row).min(n - start) {
                0 if !self.buffer.is_empty() => {
                    self.flush()?;
                    continue;
                }
                0 => 1,
                take => take,
            };
            let slice = rows.slice(start, take);
            let cost = WriteBuffer::cost(&slice);
            let kinds = kinds[start..start + take].to_vec();
            let kv = self.layout.wrap(&slice, self.next_sequence, kinds)?;
            self.buffer.push(kv, cost)?;
            self.next_sequence += take as i64;
            start += take;
        }
        Ok(())
    }

    /// Buffers the keys of a batch the host keeps (the whole batch: a host batch is small),
    /// flushing first when it does not fit.
    fn write_on_host(&mut self, batch: &HostBatch<'_>) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let on = self.on_host.as_ref().expect("a writer on the host");
        let keys = batch.columns(&on.key_positions)?;
        let kinds = RowKind::of_batch(&keys)?;
        let converted = on.keys.assemble(
            &keys.batch,
            &keys.log_offsets,
            &keys.timestamps,
            self.target.rows.fluss_bucket(),
        )?;
        let kept = batch.keep()?;
        let kv = self.layout.buffered_keys(&converted, kinds)?;
        // The buffer counts the rows the host keeps, so `write-buffer-size` bounds the same
        // rows as when they are buffered here.
        let cost = WriteBuffer::cost(&kv) + kept.memory_bytes();
        if !self.buffer.is_empty() && self.buffer.room(cost / n as u64) < n {
            self.flush()?;
        }
        self.buffer.push(kv, cost)?;
        self.on_host
            .as_mut()
            .expect("a writer on the host")
            .kept
            .push(kept);
        self.next_sequence += n as i64;
        self.records += n as u64;
        Ok(())
    }

    /// Sorts and merges the buffer into level-0 files (and changelog files).
    fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let run = match self.on_host {
            // Its buffer holds the keys and row kinds only.
            Some(_) => self.buffer.sort_rows(
                self.layout.num_keys(),
                self.layout.num_keys(),
                self.options.ignore_delete,
            )?,
            None => self.buffer.sort(&self.layout, self.options.ignore_delete)?,
        };
        if self.options.input_changelog {
            let files = self.write_files(
                &run.all,
                &self.options.changelog_file_prefix,
                &self.changelog_settings,
            )?;
            self.changelog_files.extend(files);
        }
        let files = self.write_files(
            &run.merged,
            &self.options.data_file_prefix,
            &self.data_settings,
        )?;
        self.data_files.extend(files);
        fluss_lake_guest_sdk::debug!(
            "flushed {} records ({} keys, {} bytes buffered) of bucket {}",
            run.all.len(),
            run.merged.len(),
            self.buffer.bytes(),
            self.target.bucket
        );
        self.buffer.clear();
        if let Some(on) = &mut self.on_host {
            // The host gives back what it kept for these rows.
            on.kept.clear();
        }
        Ok(())
    }

    /// Writes buffered rows in the given order into files named `<prefix><uuid>-<n>.parquet`.
    fn write_files(
        &self,
        order: &[RowId],
        prefix: &str,
        settings: &KvFileSettings,
    ) -> Result<Vec<DataFileMeta>> {
        if let Some(on) = &self.on_host {
            return self.write_files_on_host(on, order, prefix, settings);
        }
        let mut writer = KvFileWriter::new(
            &self.storage,
            &self.layout,
            settings,
            self.target.names.paths(prefix),
        );
        for chunk in order.chunks(CHUNK_ROWS) {
            let rows: Vec<(usize, usize)> =
                chunk.iter().map(|id| self.buffer.locate(*id)).collect();
            let rows = interleave_batches(self.layout.schema(), self.buffer.batches(), &rows)?;
            writer.write(&rows)?;
        }
        writer.finish()
    }

    /// [`Self::write_files`] for rows the host keeps: each chunk of the order goes to the host
    /// as picks of the kept batches it uses, with its keys, sequence numbers and row kinds.
    fn write_files_on_host(
        &self,
        on: &OnHost,
        order: &[RowId],
        prefix: &str,
        settings: &KvFileSettings,
    ) -> Result<Vec<DataFileMeta>> {
        let mut writer = KvFileWriter::on_host(
            &self.storage,
            &self.layout,
            settings,
            on.files.clone(),
            self.target.rows.fluss_bucket(),
            self.target.names.paths(prefix),
        );
        let buffered_schema = self.buffer.batches()[0].schema();
        // Row ids follow sequence numbers: the buffer's first row has the run's first one.
        let first_sequence = self.next_sequence - self.buffer.rows() as i64;
        // Each call names only the kept batches its picks use.
        let mut local: Vec<Option<u32>> = vec![None; on.kept.len()];
        for chunk in order.chunks(CHUNK_ROWS) {
            let rows: Vec<(usize, usize)> =
                chunk.iter().map(|id| self.buffer.locate(*id)).collect();
            let keys = interleave_batches(&buffered_schema, self.buffer.batches(), &rows)?;
            let keys = self
                .layout
                .with_sequences(&keys, chunk.iter().map(|id| first_sequence + *id as i64))?;
            let mut used: Vec<&KeptBatch> = Vec::new();
            let mut picks = Vec::with_capacity(rows.len());
            for &(b, r) in &rows {
                let i = *local[b].get_or_insert_with(|| {
                    used.push(&on.kept[b]);
                    (used.len() - 1) as u32
                });
                picks.push((i, r as u32));
            }
            writer.write_picked(&keys, &used, &picks)?;
            local.iter_mut().for_each(|l| *l = None);
        }
        writer.finish()
    }

    /// Flushes the buffer and describes the round's files.
    pub fn complete(mut self) -> Result<WriteResult> {
        self.flush().context("flushing the write buffer")?;
        self.target
            .write_result(self.data_files, self.changelog_files, self.records)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use fluss_lake_guest_sdk::ErrorKind;
    use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{pk_table, writer_context};
    use fluss_lake_guest_sdk::wit::TableInfo;

    use crate::catalog::{create_table_if_missing, validate_table};
    use crate::commit_message::CommitMessage;
    use crate::committer::PaimonCommitter;
    use crate::manifest::{FileKind, ManifestEntry};
    use crate::writer::PaimonWriter;

    fn table(buckets: i32) -> TableInfo {
        pk_table(
            "db",
            "t",
            &[("id", "INT", false), ("v", "STRING", true)],
            &["id"],
            buckets,
            &[],
        )
    }

    /// Writes `changes` (in log order) into `bucket` and returns the write result's files.
    fn write(
        storage: &MemoryStorage,
        table: &TableInfo,
        bucket: i32,
        config: &[(&str, &str)],
        changes: &[(i32, ChangeType)],
    ) -> CommitMessage {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("v", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from_iter_values(changes.iter().map(|c| c.0))),
                Arc::new(StringArray::from_iter_values(
                    changes
                        .iter()
                        .map(|c| format!("value of {} ({:?})", c.0, c.1)),
                )),
            ],
        )
        .unwrap();
        let kinds: Vec<ChangeType> = changes.iter().map(|c| c.1).collect();
        let mut w =
            PaimonWriter::open(&writer_context(table, bucket, None, config), storage).unwrap();
        w.write(make_changelog_batch(&batch, &kinds, 0, 1).unwrap())
            .unwrap();
        let result = w.complete().unwrap();
        assert_eq!(result.record_count, changes.len() as u64);
        CommitMessage::decode(&result.payload).unwrap()
    }

    fn commit(storage: &MemoryStorage, message: &CommitMessage) {
        let mut c = PaimonCommitter::new(storage, vec![]);
        let base = fluss_lake_guest_sdk::testing::tiered_base(&c);
        c.commit(
            &message.encode().unwrap(),
            &[("fluss-offsets".into(), "/o".into())],
            base,
        )
        .unwrap();
    }

    fn seq_ranges(files: &[ManifestEntry]) -> Vec<(i64, i64)> {
        files
            .iter()
            .map(|e| (e.file.min_sequence_number, e.file.max_sequence_number))
            .collect()
    }

    #[test]
    fn sequence_numbers_continue_from_the_live_files_of_the_bucket() {
        use ChangeType::*;
        let storage = MemoryStorage::new();
        let t = table(2);
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let r1 = write(
            &storage,
            &t,
            0,
            &[],
            &[(1, Insert), (2, Insert), (1, UpdateAfter)],
        );
        // Key 1 keeps its update (sequence 2), key 2 its insert (sequence 1).
        assert_eq!(seq_ranges(&r1.data_files), [(1, 2)]);
        assert_eq!(seq_ranges(&r1.changelog_files), [(0, 2)]);
        assert_eq!(r1.data_files[0].file.row_count, 2);
        commit(&storage, &r1);

        // A writer that never commits does not advance the bucket.
        write(&storage, &t, 0, &[], &[(9, Insert)]);
        let mut r2 = write(&storage, &t, 0, &[], &[(3, Insert), (2, Delete)]);
        assert_eq!(seq_ranges(&r2.data_files), [(3, 4)]);
        assert_eq!(r2.data_files[0].file.delete_row_count, Some(1));
        let other = write(&storage, &t, 1, &[], &[(4, Insert)]);
        assert_eq!(seq_ranges(&other.data_files), [(0, 0)]);
        r2.extend(other);
        commit(&storage, &r2);
        assert_eq!(
            seq_ranges(&write(&storage, &t, 0, &[], &[(5, Insert)]).data_files),
            [(5, 5)]
        );

        // Only live files count: once round 2's file of bucket 0 is deleted (as compaction
        // would), numbering continues after round 1's file.
        let mut deleted = r2.data_files[0].clone();
        deleted.kind = FileKind::Delete;
        commit(
            &storage,
            &CommitMessage {
                data_files: vec![deleted],
                changelog_files: Vec::new(),
            },
        );
        assert_eq!(
            seq_ranges(&write(&storage, &t, 0, &[], &[(5, Insert)]).data_files),
            [(3, 3)]
        );
    }

    #[test]
    fn a_small_write_buffer_flushes_several_sorted_runs() {
        let storage = MemoryStorage::new();
        let t = table(1);
        create_table_if_missing(&storage, &t, &[]).unwrap();
        // One large batch: 300 records over 50 keys, every key several times.
        let changes: Vec<(i32, ChangeType)> = (0..300)
            .map(|i| {
                (
                    (i * 37) % 50,
                    if i % 7 == 0 {
                        ChangeType::Delete
                    } else {
                        ChangeType::UpdateAfter
                    },
                )
            })
            .collect();
        let m = write(&storage, &t, 0, &[("write-buffer-size", "2kb")], &changes);
        let runs = m.data_files.len();
        assert!(runs >= 5, "{runs} sorted runs");
        assert_eq!(
            m.changelog_files.len(),
            runs,
            "one changelog file per flush"
        );
        // Runs follow each other in sequence order and cover every record exactly once.
        let ranges = seq_ranges(&m.changelog_files);
        assert_eq!(ranges.first().unwrap().0, 0);
        assert_eq!(ranges.last().unwrap().1, 299);
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].1 + 1, pair[1].0);
        }
        let changelog_rows: i64 = m.changelog_files.iter().map(|e| e.file.row_count).sum();
        assert_eq!(changelog_rows, 300);
        // Each run's data file holds one record per key of the run.
        for (data, changelog) in m.data_files.iter().zip(&m.changelog_files) {
            assert!(data.file.row_count <= 50.min(changelog.file.row_count));
        }
        commit(&storage, &m);
    }

    #[test]
    fn refuses_a_bucket_written_with_another_bucket_count() {
        let storage = MemoryStorage::new();
        let t = table(2);
        create_table_if_missing(&storage, &t, &[]).unwrap();
        let mut m = write(&storage, &t, 0, &[], &[(1, ChangeType::Insert)]);
        m.data_files[0].total_buckets = 4;
        commit(&storage, &m);
        let err = PaimonWriter::open(&writer_context(&t, 0, None, &[]), &storage)
            .err()
            .unwrap();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }

    #[test]
    fn validation_accepts_primary_key_tables_it_can_write() {
        let storage = MemoryStorage::new();
        let mut t = table(2);
        create_table_if_missing(&storage, &t, &[]).unwrap();
        validate_table(&storage, &t).unwrap();

        let other = MemoryStorage::new();
        t.properties
            .push(("paimon.merge-engine".into(), "first-row".into()));
        create_table_if_missing(&other, &t, &[]).unwrap();
        let err = validate_table(&other, &t).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert!(err.to_string().contains("merge-engine=first-row"), "{err}");
    }
}
