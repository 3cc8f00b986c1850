//! The write buffer of a primary-key writer (Paimon `SortBufferWriteBuffer`): key/value rows
//! accumulate in arrival order (= sequence order) up to a byte budget; a flush sorts them by
//! key, then sequence number, and merges each key's records with the deduplicate merge
//! function. Rows stay in their Arrow batches: sorting produces orders of row ids from which
//! files are gathered chunk by chunk, so a flush never copies the whole buffer.

use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use arrow_array::{Array, RecordBatch};
use fluss_lake_guest_sdk::arrow_util::{concat, slice_memory_size};
use fluss_lake_guest_sdk::ord::rows_comparator;
use fluss_lake_guest_sdk::{Error, Result};

use super::kv::{KvLayout, RowKind};

/// A buffered row: its position in arrival order (4 bytes, so that sort orders stay small).
pub type RowId = u32;

/// Bytes a row costs besides its table values: its sequence number and row kind, and its
/// entries in the sort order and the merged order of a flush. Counted so that the budget
/// bounds the memory a flush needs, as Paimon's sort buffer counts its index.
const ROW_OVERHEAD: u64 = 8 + 1 + 4 + 4;

/// The buffer's rows sorted by key, then sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortedRun {
    /// Every record: the changelog of the run.
    pub all: Vec<RowId>,
    /// The record each key keeps after merging: what the run's data files hold.
    pub merged: Vec<RowId>,
}

/// Buffered key/value batches, within a byte budget.
#[derive(Debug)]
pub struct WriteBuffer {
    budget: u64,
    batches: Vec<RecordBatch>,
    /// Row id of the first row of each batch.
    starts: Vec<usize>,
    bytes: u64,
    rows: usize,
}

impl WriteBuffer {
    /// An empty buffer of `budget` bytes (`write-buffer-size`).
    pub fn new(budget: u64) -> WriteBuffer {
        WriteBuffer {
            budget,
            batches: Vec::new(),
            starts: Vec::new(),
            bytes: 0,
            rows: 0,
        }
    }

    /// What a batch of table rows costs the buffer: its values plus [`ROW_OVERHEAD`] per row
    /// (key columns share the table columns' buffers).
    pub fn cost(rows: &RecordBatch) -> u64 {
        slice_memory_size(rows) as u64 + ROW_OVERHEAD * rows.num_rows() as u64
    }

    /// Bytes buffered.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Rows buffered.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// True when nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// How many more rows of `row_cost` bytes each fit.
    pub fn room(&self, row_cost: u64) -> usize {
        let by_bytes = self.budget.saturating_sub(self.bytes) / row_cost.max(1);
        let by_ids = RowId::MAX as usize - self.rows;
        (by_bytes.min(usize::MAX as u64) as usize).min(by_ids)
    }

    /// The buffered key/value batches.
    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    /// `(batch, row within the batch)` of a row id, as Arrow's `interleave` takes rows.
    pub fn locate(&self, id: RowId) -> (usize, usize) {
        let id = id as usize;
        let batch = self.starts.partition_point(|s| *s <= id) - 1;
        (batch, id - self.starts[batch])
    }

    /// Adds key/value rows whose sequence numbers follow every buffered row's; `cost` is
    /// [`WriteBuffer::cost`] of the table rows they wrap.
    pub fn push(&mut self, kv_rows: RecordBatch, cost: u64) -> Result<()> {
        let n = kv_rows.num_rows();
        if n == 0 {
            return Ok(());
        }
        if self.rows + n > RowId::MAX as usize {
            return Err(Error::internal("write buffer row ids exhausted"));
        }
        self.starts.push(self.rows);
        self.rows += n;
        self.bytes += cost;
        self.batches.push(kv_rows);
        Ok(())
    }

    /// Sorts the buffer by key then sequence number and merges every key's records: the last
    /// one wins (Paimon's `DeduplicateMergeFunction`), including a retraction, which must stay
    /// in level-0 files to shadow the key's older rows. With `ignore_delete` retractions never
    /// win, and a key with nothing but retractions is left out.
    pub fn sort(&self, layout: &KvLayout, ignore_delete: bool) -> Result<SortedRun> {
        self.sort_rows(layout.num_keys(), layout.kind_column(), ignore_delete)
    }

    /// [`Self::sort`] for buffered batches whose first `num_keys` columns are the key and
    /// whose row kinds are column `kind_column` (a writer whose rows stay in the host buffers
    /// only those).
    pub fn sort_rows(
        &self,
        num_keys: usize,
        kind_column: usize,
        ignore_delete: bool,
    ) -> Result<SortedRun> {
        let keys = (0..num_keys)
            .map(|c| {
                let arrays: Vec<&dyn Array> =
                    self.batches.iter().map(|b| b.column(c).as_ref()).collect();
                concat(&arrays)
            })
            .collect::<Result<Vec<_>>>()?;
        let key_refs: Vec<&dyn Array> = keys.iter().map(|k| k.as_ref()).collect();
        let cmp = rows_comparator(&key_refs)?;
        let same_key = |a: RowId, b: RowId| cmp(a as usize, b as usize).is_eq();
        // Row ids follow sequence numbers, so a stable sort on the key alone orders equal keys
        // by sequence number.
        let mut all: Vec<RowId> = (0..self.rows as RowId).collect();
        all.sort_by(|a, b| cmp(*a as usize, *b as usize));

        let is_retract = |id: RowId| {
            let (b, r) = self.locate(id);
            let kinds = self.batches[b].column(kind_column);
            RowKind::is_retract(kinds.as_primitive::<Int8Type>().value(r))
        };
        let mut merged = Vec::new();
        for group in all.chunk_by(|a, b| same_key(*a, *b)) {
            let winner = if ignore_delete {
                group.iter().rev().find(|id| !is_retract(**id))
            } else {
                group.last()
            };
            merged.extend(winner);
        }
        Ok(SortedRun { all, merged })
    }

    /// Empties the buffer after a flush.
    pub fn clear(&mut self) {
        self.batches.clear();
        self.starts.clear();
        self.bytes = 0;
        self.rows = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::types::{Int32Type, Int64Type};
    use arrow_array::{Int32Array, StringArray};
    use fluss_lake_guest_sdk::testing::pk_table;

    use super::*;
    use crate::rows::table_file_schema;
    use crate::schema::{TableLayout, schema_for_fluss_table};

    fn layout() -> (KvLayout, arrow_schema::SchemaRef) {
        let t = pk_table(
            "db",
            "t",
            &[
                ("k1", "STRING", false),
                ("k2", "INT", false),
                ("v", "INT", true),
            ],
            &["k1", "k2"],
            1,
            &[],
        );
        let schema = schema_for_fluss_table(&t, false, 0).unwrap();
        let l = TableLayout::of(&schema).unwrap();
        let rows_schema = table_file_schema(&l);
        (
            KvLayout::new(&schema, &l, &rows_schema).unwrap(),
            rows_schema,
        )
    }

    fn push(
        buf: &mut WriteBuffer,
        kv: &KvLayout,
        schema: &arrow_schema::SchemaRef,
        seq: i64,
        rows: &[(&str, i32, i32, RowKind)],
    ) {
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.2))),
            ],
        )
        .unwrap();
        let cost = WriteBuffer::cost(&batch);
        let kinds = rows.iter().map(|r| r.3 as i8).collect();
        buf.push(kv.wrap(&batch, seq, kinds).unwrap(), cost)
            .unwrap();
    }

    fn values(buf: &WriteBuffer, kv: &KvLayout, ids: &[RowId]) -> Vec<(i64, i32)> {
        ids.iter()
            .map(|&id| {
                let (b, r) = buf.locate(id);
                let batch = &buf.batches()[b];
                (
                    batch
                        .column(kv.sequence_column())
                        .as_primitive::<Int64Type>()
                        .value(r),
                    batch
                        .column(kv.value_start() + 2)
                        .as_primitive::<Int32Type>()
                        .value(r),
                )
            })
            .collect()
    }

    #[test]
    fn sorts_by_composite_key_then_sequence_and_keeps_the_last_record() {
        let (kv, schema) = layout();
        let mut buf = WriteBuffer::new(1 << 20);
        use RowKind::*;
        push(
            &mut buf,
            &kv,
            &schema,
            10,
            &[
                ("b", 1, 1, Insert),
                ("a", 2, 2, Insert),
                ("b", 1, 3, UpdateBefore),
            ],
        );
        push(
            &mut buf,
            &kv,
            &schema,
            13,
            &[
                ("b", 1, 4, UpdateAfter),
                ("a", 1, 5, Insert),
                ("a", 2, 6, Delete),
            ],
        );
        assert_eq!(buf.rows(), 6);
        assert_eq!(buf.locate(4), (1, 1));
        let per_row = buf.bytes() / 6;
        assert_eq!(
            buf.room(per_row),
            ((1 << 20) - buf.bytes() as usize) / per_row as usize
        );
        let run = buf.sort(&kv, false).unwrap();
        // Key order: (a,1) < (a,2) < (b,1); equal keys by sequence number.
        assert_eq!(
            values(&buf, &kv, &run.all),
            [(14, 5), (11, 2), (15, 6), (10, 1), (12, 3), (13, 4)]
        );
        // The delete of (a,2) wins and is kept so that it shadows older files.
        assert_eq!(values(&buf, &kv, &run.merged), [(14, 5), (15, 6), (13, 4)]);

        let ignoring = buf.sort(&kv, true).unwrap();
        assert_eq!(
            values(&buf, &kv, &ignoring.merged),
            [(14, 5), (11, 2), (13, 4)]
        );

        let mut only_delete = WriteBuffer::new(1 << 20);
        push(&mut only_delete, &kv, &schema, 0, &[("z", 0, 0, Delete)]);
        assert!(only_delete.sort(&kv, true).unwrap().merged.is_empty());
        assert_eq!(only_delete.sort(&kv, false).unwrap().merged, [0]);

        buf.clear();
        assert!(buf.is_empty() && buf.bytes() == 0);
    }
}
