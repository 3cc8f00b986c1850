//! Compaction of a bucket of an append (log) table with fixed buckets, as Paimon's
//! `BucketedAppendCompactManager` does it: the bucket's files in sequence order are scanned
//! with a window; once `compaction.min.file-num` files are in it they are rewritten into
//! files of `target-file-size`, rows in order, sequence numbers renumbered consecutively from
//! the window's first; while the window is not full but reaches the target size, its oldest
//! file leaves it (large files are never rewritten).

use std::collections::VecDeque;

use fluss_lake_guest_sdk::Result;
use fluss_lake_guest_sdk::parquet::{DataFileInfo, ParquetOptions, RollingParquetWriter};
use fluss_lake_guest_sdk::storage::Storage;

use super::file_rows;
use crate::append_writer::describe_file;
use crate::manifest::{DataFileMeta, FileSource};
use crate::rows::table_file_schema;
use crate::schema::{TableLayout, TableSchema};
use crate::stats::{dense_store, stats_modes};

/// A bucket's files waiting for compaction, in sequence order (Paimon's `toCompact` queue).
#[derive(Debug, Clone, Default)]
pub struct AppendQueue {
    files: VecDeque<DataFileMeta>,
}

impl AppendQueue {
    /// The queue of a bucket's live files.
    pub fn new(mut files: Vec<DataFileMeta>) -> AppendQueue {
        files.sort_by_key(|f| f.min_sequence_number);
        AppendQueue {
            files: files.into(),
        }
    }

    /// Queues a file again (the last file a compaction wrote, when it is small).
    pub fn push(&mut self, file: DataFileMeta) {
        let at = self
            .files
            .partition_point(|f| f.min_sequence_number <= file.min_sequence_number);
        self.files.insert(at, file);
    }

    /// Paimon's `pickCompactBefore`: the first window of `min_file_num` files whose first
    /// `min_file_num - 1` stay under `target_file_size`. Files the window slid past leave
    /// the queue either way (as in Paimon, until the next writer restores the bucket).
    pub fn pick(
        &mut self,
        min_file_num: usize,
        target_file_size: u64,
    ) -> Option<Vec<DataFileMeta>> {
        let mut window: VecDeque<DataFileMeta> = VecDeque::new();
        let mut size = 0u64;
        while let Some(file) = self.files.pop_front() {
            size += file.file_size.max(0) as u64;
            window.push_back(file);
            if window.len() >= min_file_num {
                return Some(window.into());
            }
            if size >= target_file_size {
                let oldest = window.pop_front().expect("the window is not empty");
                size -= oldest.file_size.max(0) as u64;
            }
        }
        self.files = window;
        None
    }
}

/// Rewrites `files` (in sequence order) of the bucket directory `dir` into new files named by
/// `next_path`, rows in order, numbered consecutively from the first file's sequence number.
pub fn rewrite(
    storage: &dyn Storage,
    schema: &TableSchema,
    dir: &str,
    files: &[DataFileMeta],
    parquet: ParquetOptions,
    next_path: impl FnMut() -> String + 'static,
) -> Result<Vec<DataFileMeta>> {
    let layout = TableLayout::of(schema)?;
    let names: Vec<&str> = layout.fields.iter().map(|(n, _, _)| n.as_str()).collect();
    let modes = stats_modes(&names, &schema.options)?;
    let dense = dense_store(&schema.options);
    let file_schema = table_file_schema(&layout);
    let mut writer = RollingParquetWriter::new(storage, file_schema.clone(), parquet, next_path);
    let mut next_sequence = files.first().map_or(0, |f| f.min_sequence_number);
    let mut written = Vec::new();
    let mut describe = |info: DataFileInfo, written: &mut Vec<DataFileMeta>| -> Result<()> {
        let first = next_sequence;
        next_sequence += info.row_count as i64;
        let mut meta = describe_file(
            &layout,
            &modes,
            dense,
            schema.id,
            &info,
            (first, next_sequence - 1),
        )?;
        meta.file_source = Some(FileSource::Compact as i32);
        written.push(meta);
        Ok(())
    };
    for file in files {
        let mut reader = file_rows::open(storage, dir, file)?;
        while let Some(batch) = reader.next_batch()? {
            let batch = file_rows::conform(&batch, &file_schema)?;
            if let Some(info) = writer.write(&batch)? {
                describe(info, &mut written)?;
            }
        }
    }
    if let Some(info) = writer.finish_file()? {
        describe(info, &mut written)?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::tests::entry;

    fn file(name: &str, seq: i64, size: i64) -> DataFileMeta {
        let mut f = entry(name, 0, 10).file;
        f.min_sequence_number = seq;
        f.max_sequence_number = seq + 9;
        f.file_size = size;
        f
    }

    fn names(files: &[DataFileMeta]) -> Vec<&str> {
        files.iter().map(|f| f.file_name.as_str()).collect()
    }

    /// Cases of Paimon's `BucketedAppendCompactManagerTest.testPickCompactBefore`.
    #[test]
    fn picks_the_first_window_of_small_files() {
        let mut q = AppendQueue::new(vec![
            file("c", 20, 10),
            file("a", 0, 10),
            file("b", 10, 10),
            file("d", 30, 10),
        ]);
        assert_eq!(q.pick(5, 100), None, "four small files are not enough");
        assert_eq!(q.files.len(), 4);
        q.push(file("e", 40, 10));
        assert_eq!(names(&q.pick(5, 100).unwrap()), ["a", "b", "c", "d", "e"]);
        assert!(q.files.is_empty());

        // A large file lets the window slide past it.
        let mut q = AppendQueue::new(vec![
            file("a", 0, 10),
            file("big", 10, 1000),
            file("b", 20, 10),
            file("c", 30, 10),
            file("d", 40, 10),
            file("e", 50, 10),
            file("f", 60, 10),
        ]);
        assert_eq!(names(&q.pick(5, 100).unwrap()), ["b", "c", "d", "e", "f"]);
        // Once the window reaches the target, its oldest file leaves it.
        let files: Vec<DataFileMeta> = (0..6).map(|i| file(&i.to_string(), i * 10, 30)).collect();
        let mut q = AppendQueue::new(files.clone());
        assert_eq!(q.pick(5, 100), None);
        assert_eq!(names(&Vec::from(q.files.clone())), ["3", "4", "5"]);
        let mut q = AppendQueue::new(files);
        assert_eq!(names(&q.pick(5, 1000).unwrap()), ["0", "1", "2", "3", "4"]);
    }
}
