//! The LSM levels of one primary-key bucket (Paimon `Levels`): level-0 files each a sorted
//! run of their own, newest first (by max sequence number, then min sequence number,
//! creation time and name); every level from 1 up one sorted run of key-disjoint files
//! ordered by key.

use std::cmp::Ordering;

use fluss_lake_guest_sdk::{Error, Result};

use crate::binary_row::{BinaryRowReader, Value};
use crate::manifest::{DataFileMeta, cmp_values};
use crate::types::PaimonType;

use super::universal::LevelRun;

/// A primary key decoded from a serialized `BinaryRow` (`_MIN_KEY` / `_MAX_KEY`).
pub type Key = Vec<Option<Value>>;

/// Orders keys as Paimon's key comparator does: field by field, nulls first.
pub fn cmp_keys(a: &Key, b: &Key) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => cmp_values(x, y).unwrap_or(Ordering::Equal),
        };
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Decodes a serialized key row of the given key types.
pub fn decode_key(row: &[u8], types: &[PaimonType]) -> Result<Key> {
    let reader = BinaryRowReader::new(row)?;
    if reader.arity() != types.len() {
        return Err(Error::corrupt(format!(
            "a key of {} fields in a table whose primary key has {}",
            reader.arity(),
            types.len()
        )));
    }
    types
        .iter()
        .enumerate()
        .map(|(i, ty)| reader.get(i, ty))
        .collect()
}

/// A data file with its key range decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedFile {
    pub meta: DataFileMeta,
    pub min_key: Key,
    pub max_key: Key,
}

impl KeyedFile {
    /// Decodes the key range of `meta`.
    pub fn new(meta: DataFileMeta, key_types: &[PaimonType]) -> Result<KeyedFile> {
        Ok(KeyedFile {
            min_key: decode_key(&meta.min_key, key_types)?,
            max_key: decode_key(&meta.max_key, key_types)?,
            meta,
        })
    }

    /// The file at another level (Paimon `DataFileMeta.upgrade`: the same file, moved).
    pub fn upgraded(&self, level: usize) -> KeyedFile {
        let mut moved = self.clone();
        moved.meta.level = level as i32;
        moved
    }

    fn level(&self) -> usize {
        self.meta.level.max(0) as usize
    }
}

/// Level-0 order: newest first (Paimon's `Levels.level0` tree set).
fn cmp_level0(a: &KeyedFile, b: &KeyedFile) -> Ordering {
    let (a, b) = (&a.meta, &b.meta);
    b.max_sequence_number
        .cmp(&a.max_sequence_number)
        .then(a.min_sequence_number.cmp(&b.min_sequence_number))
        .then(a.creation_time.cmp(&b.creation_time))
        .then(a.file_name.cmp(&b.file_name))
}

/// A sorted run and its level.
#[derive(Debug, Clone, PartialEq)]
pub struct SortedRun {
    pub level: usize,
    pub files: Vec<KeyedFile>,
}

impl SortedRun {
    /// What universal compaction sees of the run.
    pub fn summary(&self) -> LevelRun {
        LevelRun {
            level: self.level,
            size: self
                .files
                .iter()
                .map(|f| f.meta.file_size.max(0) as u64)
                .sum(),
        }
    }
}

/// The levels of one bucket.
#[derive(Debug, Clone)]
pub struct Levels {
    level0: Vec<KeyedFile>,
    /// `upper[i]` is level `i + 1`, ordered by key.
    upper: Vec<Vec<KeyedFile>>,
}

impl Levels {
    /// The levels of a bucket's live files; `num_levels` grows to hold the highest file level
    /// (as Paimon restores it). Fails with `corrupt` when the files of a level above 0
    /// overlap (two writers compacted the bucket at once).
    pub fn new(files: Vec<KeyedFile>, num_levels: usize) -> Result<Levels> {
        let highest = files.iter().map(KeyedFile::level).max().unwrap_or(0);
        let num_levels = num_levels.max(highest + 1).max(2);
        let mut levels = Levels {
            level0: Vec::new(),
            upper: vec![Vec::new(); num_levels - 1],
        };
        levels.add(files);
        levels.check()?;
        Ok(levels)
    }

    fn add(&mut self, files: Vec<KeyedFile>) {
        for f in files {
            match f.level() {
                0 => self.level0.push(f),
                level => self.upper[level - 1].push(f),
            }
        }
        self.level0.sort_by(cmp_level0);
        for run in &mut self.upper {
            run.sort_by(|a, b| cmp_keys(&a.min_key, &b.min_key));
        }
    }

    fn check(&self) -> Result<()> {
        for (i, run) in self.upper.iter().enumerate() {
            for pair in run.windows(2) {
                if cmp_keys(&pair[0].max_key, &pair[1].min_key).is_ge() {
                    return Err(Error::corrupt(format!(
                        "files {} and {} of level {} overlap",
                        pair[0].meta.file_name,
                        pair[1].meta.file_name,
                        i + 1
                    )));
                }
            }
        }
        Ok(())
    }

    /// Number of levels (the highest is one less).
    pub fn num_levels(&self) -> usize {
        self.upper.len() + 1
    }

    /// The highest level holding files (Paimon `nonEmptyHighestLevel`), `None` when empty.
    pub fn non_empty_highest_level(&self) -> Option<usize> {
        match self.upper.iter().rposition(|run| !run.is_empty()) {
            Some(i) => Some(i + 1),
            None => (!self.level0.is_empty()).then_some(0),
        }
    }

    /// The sorted runs, newest first (Paimon `levelSortedRuns`).
    pub fn sorted_runs(&self) -> Vec<SortedRun> {
        let mut runs: Vec<SortedRun> = self
            .level0
            .iter()
            .map(|f| SortedRun {
                level: 0,
                files: vec![f.clone()],
            })
            .collect();
        for (i, files) in self.upper.iter().enumerate() {
            if !files.is_empty() {
                runs.push(SortedRun {
                    level: i + 1,
                    files: files.clone(),
                });
            }
        }
        runs
    }

    /// Replaces `before` by `after` (the result of a compaction).
    pub fn update(&mut self, before: &[KeyedFile], after: Vec<KeyedFile>) -> Result<()> {
        let gone = |f: &KeyedFile| {
            before
                .iter()
                .any(|b| b.meta.file_name == f.meta.file_name && b.meta.level == f.meta.level)
        };
        self.level0.retain(|f| !gone(f));
        for run in &mut self.upper {
            run.retain(|f| !gone(f));
        }
        let highest = after.iter().map(KeyedFile::level).max().unwrap_or(0);
        while self.upper.len() < highest {
            self.upper.push(Vec::new());
        }
        self.add(after);
        self.check()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::binary_row::to_serialized_row;
    use crate::manifest::tests::entry;

    /// A file of `size` bytes at `level` holding keys `lo..=hi` with sequence numbers
    /// `seq.0..=seq.1`.
    pub(crate) fn file(
        name: &str,
        level: usize,
        size: i64,
        (lo, hi): (i32, i32),
        seq: (i64, i64),
    ) -> KeyedFile {
        let int = PaimonType::parse("INT NOT NULL").unwrap();
        let key = |k: i32| to_serialized_row(&[(&int, Some(&Value::Int(k)))]).unwrap();
        let mut meta = entry(name, 0, 10).file;
        meta.level = level as i32;
        meta.file_size = size;
        meta.min_key = key(lo);
        meta.max_key = key(hi);
        meta.min_sequence_number = seq.0;
        meta.max_sequence_number = seq.1;
        KeyedFile::new(meta, &[int]).unwrap()
    }

    #[test]
    fn runs_are_level0_files_newest_first_then_levels() {
        let levels = Levels::new(
            vec![
                file("old", 0, 10, (0, 9), (0, 4)),
                file("l3b", 3, 10, (5, 9), (0, 1)),
                file("new", 0, 10, (0, 9), (10, 14)),
                file("l3a", 3, 10, (0, 4), (0, 1)),
                file("l1", 1, 10, (0, 9), (5, 9)),
            ],
            6,
        )
        .unwrap();
        let runs = levels.sorted_runs();
        let names: Vec<Vec<&str>> = runs
            .iter()
            .map(|r| r.files.iter().map(|f| f.meta.file_name.as_str()).collect())
            .collect();
        assert_eq!(
            names,
            [vec!["new"], vec!["old"], vec!["l1"], vec!["l3a", "l3b"]]
        );
        assert_eq!(
            runs.iter().map(|r| r.level).collect::<Vec<_>>(),
            [0, 0, 1, 3]
        );
        assert_eq!(levels.non_empty_highest_level(), Some(3));
        assert_eq!(levels.num_levels(), 6);

        let overlapping = Levels::new(
            vec![
                file("a", 2, 1, (0, 5), (0, 0)),
                file("b", 2, 1, (5, 9), (1, 1)),
            ],
            6,
        );
        assert!(overlapping.is_err());
    }
}
