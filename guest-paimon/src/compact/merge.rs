//! The streaming merge of a primary-key compaction (Paimon `MergeTreeCompactRewriter` with the
//! deduplicate merge function): the sorted runs of each section are read a batch at a time
//! and merged by key; of each key's records the one with the highest sequence number wins,
//! keeping its sequence number and row kind (with `ignore-delete`, the highest that is not a
//! retraction); with `drop_delete` a winning retraction is dropped (Paimon's
//! `DropDeleteReader`, when nothing older can be shadowed any more).
//!
//! Memory: one decoded batch (and the row group it comes from) per run being merged, plus
//! one output batch — bounded by the number of runs, not by their size.

use arrow_array::Array;
use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int64Type};
use fluss_lake_guest_sdk::arrow_util::interleave_batches;
use fluss_lake_guest_sdk::ord::{SortKeys, sort_keys};
use fluss_lake_guest_sdk::parquet_read::ParquetFileReader;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result};

use super::file_rows;
use super::levels::KeyedFile;
use crate::merge_tree::kv::{KvLayout, RowKind};

/// Rows per output batch handed to the file writer.
const OUTPUT_ROWS: usize = 4096;

/// How records of one key are merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergePolicy {
    /// Drop keys whose winning record is a retraction.
    pub drop_delete: bool,
    /// `ignore-delete`: retractions never win.
    pub ignore_delete: bool,
}

/// What a merge read and wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MergeCounts {
    pub rows_read: u64,
    pub rows_written: u64,
}

/// A decoded batch of a run and the position of its head record.
struct Loaded {
    batch: RecordBatch,
    keys: SortKeys,
    pos: usize,
}

/// Reads one sorted run (key-ordered, key-disjoint files) record by record.
struct RunCursor<'a> {
    storage: &'a dyn Storage,
    dir: &'a str,
    layout: &'a KvLayout,
    files: std::vec::IntoIter<KeyedFile>,
    reader: Option<ParquetFileReader<'a>>,
    current: Option<Loaded>,
    /// The last key of the previous batch, to check the run is strictly ordered.
    previous_key: Vec<u8>,
    rows_read: u64,
}

impl<'a> RunCursor<'a> {
    fn open(
        storage: &'a dyn Storage,
        dir: &'a str,
        layout: &'a KvLayout,
        files: Vec<KeyedFile>,
    ) -> Result<Self> {
        let mut cursor = RunCursor {
            storage,
            dir,
            layout,
            files: files.into_iter(),
            reader: None,
            current: None,
            previous_key: Vec::new(),
            rows_read: 0,
        };
        cursor.load()?;
        Ok(cursor)
    }

    /// Replaces the current batch by the run's next non-empty one (`None` at the end).
    fn load(&mut self) -> Result<()> {
        if let Some(done) = self.current.take()
            && let Some(last) = done.keys.len().checked_sub(1)
        {
            self.previous_key.clear();
            self.previous_key.extend_from_slice(done.keys.row(last));
        }
        loop {
            if self.reader.is_none() {
                let Some(file) = self.files.next() else {
                    return Ok(());
                };
                self.reader = Some(file_rows::open(self.storage, self.dir, &file.meta)?);
            }
            let reader = self.reader.as_mut().expect("a file is open");
            let Some(batch) = reader.next_batch()? else {
                self.reader = None;
                continue;
            };
            if batch.num_rows() == 0 {
                continue;
            }
            let batch = file_rows::conform(&batch, self.layout.schema())?;
            let key_columns: Vec<&dyn Array> = (0..self.layout.num_keys())
                .map(|c| batch.column(c).as_ref())
                .collect();
            let keys = sort_keys(&key_columns)?;
            self.rows_read += batch.num_rows() as u64;
            let loaded = Loaded {
                batch,
                keys,
                pos: 0,
            };
            if !self.previous_key.is_empty() && loaded.keys.row(0) <= &self.previous_key[..] {
                return Err(self.unordered());
            }
            self.current = Some(loaded);
            return Ok(());
        }
    }

    fn unordered(&self) -> Error {
        Error::corrupt(format!(
            "a sorted run in {} repeats or reorders keys; it cannot be merged",
            self.dir
        ))
    }

    fn head_key(&self) -> Option<&[u8]> {
        self.current.as_ref().map(|c| c.keys.row(c.pos))
    }

    fn head(&self) -> Option<(&RecordBatch, usize)> {
        self.current.as_ref().map(|c| (&c.batch, c.pos))
    }

    /// True when advancing replaces the current batch.
    fn at_batch_end(&self) -> bool {
        self.current
            .as_ref()
            .is_some_and(|c| c.pos + 1 >= c.batch.num_rows())
    }

    fn advance(&mut self) -> Result<()> {
        let Some(c) = self.current.as_mut() else {
            return Ok(());
        };
        if c.pos + 1 < c.batch.num_rows() {
            c.pos += 1;
            if c.keys.row(c.pos) <= c.keys.row(c.pos - 1) {
                return Err(self.unordered());
            }
            return Ok(());
        }
        self.load()
    }
}

fn sequence(layout: &KvLayout, batch: &RecordBatch, row: usize) -> i64 {
    batch
        .column(layout.sequence_column())
        .as_primitive::<Int64Type>()
        .value(row)
}

fn is_retract(layout: &KvLayout, batch: &RecordBatch, row: usize) -> bool {
    RowKind::is_retract(
        batch
            .column(layout.kind_column())
            .as_primitive::<Int8Type>()
            .value(row),
    )
}

/// Winning records waiting to be written: rows of the cursors' current batches.
struct Output<'o> {
    layout: &'o KvLayout,
    rows: Vec<(usize, usize)>,
    written: u64,
    sink: &'o mut dyn FnMut(&RecordBatch) -> Result<()>,
}

impl Output<'_> {
    fn flush(&mut self, cursors: &[RunCursor<'_>]) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let schema = self.layout.schema();
        let batches: Vec<RecordBatch> = cursors
            .iter()
            .map(|c| {
                c.head().map_or_else(
                    || RecordBatch::new_empty(schema.clone()),
                    |(b, _)| b.clone(),
                )
            })
            .collect();
        let batch = interleave_batches(schema, &batches, &self.rows)?;
        self.written += batch.num_rows() as u64;
        self.rows.clear();
        (self.sink)(&batch)
    }
}

/// Merges `sections` (in key order) of the bucket directory `dir` into `sink`, in key order.
pub fn merge_sections(
    storage: &dyn Storage,
    dir: &str,
    layout: &KvLayout,
    sections: Vec<Vec<Vec<KeyedFile>>>,
    policy: MergePolicy,
    sink: &mut dyn FnMut(&RecordBatch) -> Result<()>,
) -> Result<MergeCounts> {
    let mut counts = MergeCounts::default();
    let mut output = Output {
        layout,
        rows: Vec::new(),
        written: 0,
        sink,
    };
    for runs in sections {
        let mut cursors = runs
            .into_iter()
            .map(|files| RunCursor::open(storage, dir, layout, files))
            .collect::<Result<Vec<_>>>()?;
        let mut same_key: Vec<usize> = Vec::with_capacity(cursors.len());
        loop {
            // The smallest head key and every run holding it.
            same_key.clear();
            let mut smallest: Option<&[u8]> = None;
            for (i, c) in cursors.iter().enumerate() {
                let Some(key) = c.head_key() else { continue };
                match smallest.map(|s| key.cmp(s)) {
                    None | Some(std::cmp::Ordering::Less) => {
                        smallest = Some(key);
                        same_key.clear();
                        same_key.push(i);
                    }
                    Some(std::cmp::Ordering::Equal) => same_key.push(i),
                    Some(std::cmp::Ordering::Greater) => {}
                }
            }
            if same_key.is_empty() {
                break;
            }
            // The record with the highest sequence number wins (the first run on a tie).
            let mut winner: Option<(usize, i64)> = None;
            for &i in &same_key {
                let (batch, row) = cursors[i].head().expect("a head");
                if policy.ignore_delete && is_retract(layout, batch, row) {
                    continue;
                }
                let seq = sequence(layout, batch, row);
                if winner.is_none_or(|(_, best)| seq > best) {
                    winner = Some((i, seq));
                }
            }
            if let Some((i, _)) = winner {
                let (batch, row) = cursors[i].head().expect("a head");
                if !(policy.drop_delete && is_retract(layout, batch, row)) {
                    output.rows.push((i, row));
                }
            }
            for &i in &same_key {
                if cursors[i].at_batch_end() {
                    output.flush(&cursors)?;
                }
                cursors[i].advance()?;
            }
            if output.rows.len() >= OUTPUT_ROWS {
                output.flush(&cursors)?;
            }
        }
        output.flush(&cursors)?;
        counts.rows_read += cursors.iter().map(|c| c.rows_read).sum::<u64>();
    }
    counts.rows_written = output.written;
    Ok(counts)
}
