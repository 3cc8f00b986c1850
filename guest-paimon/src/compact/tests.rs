//! Compaction end to end through the crate's own writer and committer: tables written in
//! rounds with churn, compacted, read back by a merge of their data files.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int8Type, Int32Type, Int64Type};
use arrow_array::{Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch, make_row_batch};
use fluss_lake_guest_sdk::parquet_read::read_all;
use fluss_lake_guest_sdk::storage::{MemoryStorage, Storage};
use fluss_lake_guest_sdk::testing::{RacingStorage, log_table, pairs, pk_table, writer_context};
use fluss_lake_guest_sdk::wit::{MaintenanceRequest, TableInfo};
use fluss_lake_guest_sdk::{ErrorKind, FLUSS_COMMIT_USER};

use super::*;
use crate::binary_row::Value;
use crate::bucket::bucket_of;
use crate::catalog::create_table_if_missing;
use crate::committer::to_committable;
use crate::manifest::FileSource;
use crate::manifest::read_manifest_list;
use crate::merge_tree::kv::RowKind;
use crate::schema::{load_latest_schema, schema_path};
use crate::snapshot::snapshot_path;
use crate::writer::PaimonWriter;

const NO_DEADLINE: i64 = i64::MAX;
const BUCKETS: i32 = 2;

fn now() -> i64 {
    fluss_lake_guest_sdk::clock::now_millis()
}

fn pk() -> TableInfo {
    pk_table(
        "db",
        "pk",
        &[("id", "INT", false), ("v", "STRING", true)],
        &["id"],
        BUCKETS,
        &[],
    )
}

fn bucket(id: i32) -> i32 {
    let int = PaimonType::parse("INT NOT NULL").unwrap();
    bucket_of(&[(&int, Some(&Value::Int(id)))], BUCKETS).unwrap()
}

fn batch(ids: &[i32], values: &[String]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("v", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int32Array::from(ids.to_vec())),
            Arc::new(StringArray::from(values.to_vec())),
        ],
    )
    .unwrap()
}

/// A primary-key table tiered round after round, with a model of its rows.
struct PkTable {
    storage: Rc<MemoryStorage>,
    table: TableInfo,
    /// id → value.
    model: BTreeMap<i32, String>,
    /// The model after each snapshot (index = id - 1).
    history: Vec<BTreeMap<i32, String>>,
    offsets: BTreeMap<i32, i64>,
}

impl PkTable {
    fn new() -> PkTable {
        let storage = Rc::new(MemoryStorage::new());
        let table = pk();
        create_table_if_missing(&*storage, &table, &[]).unwrap();
        PkTable {
            storage,
            table,
            model: BTreeMap::new(),
            history: Vec::new(),
            offsets: BTreeMap::new(),
        }
    }

    /// Round `r`'s changes: keys `r*3..r*3+12` upserted, every fifth live key deleted, some
    /// updated as `-U`/`+U` pairs.
    fn changes(&self, r: i32) -> Vec<(i32, ChangeType, String)> {
        let mut changes = Vec::new();
        for id in r * 3..r * 3 + 12 {
            let id = id % 40;
            let value = format!("v{id}-r{r}");
            match self.model.get(&id) {
                Some(old) if id % 3 == 0 => {
                    changes.push((id, ChangeType::UpdateBefore, old.clone()));
                    changes.push((id, ChangeType::UpdateAfter, value));
                }
                Some(_) => changes.push((id, ChangeType::UpdateAfter, value)),
                None => changes.push((id, ChangeType::Insert, value)),
            }
        }
        for (id, old) in &self.model {
            if (id + r) % 5 == 0 && !changes.iter().any(|c| c.0 == *id) {
                changes.push((*id, ChangeType::Delete, old.clone()));
            }
        }
        changes
    }

    /// Writes and commits one round through `storage` (this table's, or a racing view of it).
    fn round_on(&mut self, storage: &dyn Storage, r: i32) -> i64 {
        let changes = self.changes(r);
        self.commit_round(storage, r, changes)
    }

    /// Writes and commits round `r` of `changes` (per key one change, or a `-U` then its `+U`)
    /// through `storage`, and applies them to the model.
    fn commit_round(
        &mut self,
        storage: &dyn Storage,
        r: i32,
        changes: Vec<(i32, ChangeType, String)>,
    ) -> i64 {
        let mut results = Vec::new();
        for b in 0..BUCKETS {
            let mine: Vec<&(i32, ChangeType, String)> =
                changes.iter().filter(|c| bucket(c.0) == b).collect();
            if mine.is_empty() {
                continue;
            }
            let ids: Vec<i32> = mine.iter().map(|c| c.0).collect();
            let values: Vec<String> = mine.iter().map(|c| c.2.clone()).collect();
            let kinds: Vec<ChangeType> = mine.iter().map(|c| c.1).collect();
            let offset = self.offsets.entry(b).or_insert(0);
            let mut w =
                PaimonWriter::open(&writer_context(&self.table, b, None, &[]), storage).unwrap();
            w.write(make_changelog_batch(&batch(&ids, &values), &kinds, *offset, 1).unwrap())
                .unwrap();
            *offset += ids.len() as i64;
            results.push(w.complete().unwrap().payload);
        }
        for (id, kind, value) in &changes {
            match kind {
                ChangeType::Delete => {
                    self.model.remove(id);
                }
                ChangeType::UpdateBefore => {}
                _ => {
                    self.model.insert(*id, value.clone());
                }
            }
        }
        let mut c = PaimonCommitter::new(storage, vec![]);
        let base = fluss_lake_guest_sdk::testing::tiered_base(&c);
        let id = c
            .commit(
                &to_committable(&results).unwrap(),
                &[("fluss-offsets".to_string(), format!("/o/{r}"))],
                base,
            )
            .unwrap()
            .snapshot_id;
        self.snapshot_committed(id);
        id
    }

    fn round(&mut self, r: i32) -> i64 {
        let storage = self.storage.clone();
        self.round_on(&*storage, r)
    }

    /// Records the model for every snapshot up to `id` (compactions keep the content).
    fn snapshot_committed(&mut self, id: i64) {
        while self.history.len() < id as usize {
            self.history.push(self.model.clone());
        }
    }

    fn compact(&mut self, config: &[(&str, &str)]) -> Compacted {
        let schema = load_latest_schema(&*self.storage).unwrap().unwrap();
        let config = fluss_lake_guest_sdk::testing::pairs(config);
        let done = compact(&*self.storage, &config, &schema, &now, NO_DEADLINE).unwrap();
        if let Some(id) = done.committed_snapshots.last() {
            self.snapshot_committed(*id);
        }
        done
    }
}

fn snapshot(storage: &dyn Storage, id: i64) -> Snapshot {
    read_snapshot(storage, id).unwrap().unwrap()
}

fn latest(storage: &dyn Storage) -> Snapshot {
    snapshot(storage, latest_snapshot_id(storage).unwrap().unwrap())
}

/// The rows of a primary-key table at snapshot `id`, as a reader merges them: per key the
/// record with the highest sequence number, unless it is a retraction.
fn pk_rows(storage: &dyn Storage, id: i64) -> BTreeMap<i32, String> {
    let schema = load_latest_schema(storage).unwrap().unwrap();
    let mut latest: BTreeMap<i32, (i64, bool, String)> = BTreeMap::new();
    for e in live_files::live_entries(storage, &snapshot(storage, id), None).unwrap() {
        let dir = bucket_dir(
            &Partition::from_row(&schema, &e.partition).unwrap(),
            e.bucket,
        );
        for b in read_all(storage, &format!("{dir}/{}", e.file.file_name)).unwrap() {
            let ids = b.column_by_name("id").unwrap().as_primitive::<Int32Type>();
            let seqs = b
                .column_by_name("_SEQUENCE_NUMBER")
                .unwrap()
                .as_primitive::<Int64Type>();
            let kinds = b
                .column_by_name("_VALUE_KIND")
                .unwrap()
                .as_primitive::<Int8Type>();
            let values = b.column_by_name("v").unwrap().as_string::<i32>();
            for i in 0..b.num_rows() {
                let (seq, retract) = (seqs.value(i), RowKind::is_retract(kinds.value(i)));
                let row = (seq, retract, values.value(i).to_string());
                match latest.get(&ids.value(i)) {
                    Some((s, _, _)) if *s >= seq => {}
                    _ => {
                        latest.insert(ids.value(i), row);
                    }
                }
            }
        }
    }
    latest
        .into_iter()
        .filter(|(_, (_, retract, _))| !retract)
        .map(|(id, (_, _, v))| (id, v))
        .collect()
}

/// The live files of each bucket at the latest snapshot, by level.
fn files_by_level(storage: &dyn Storage) -> BTreeMap<i32, BTreeMap<i32, Vec<DataFileMeta>>> {
    let mut out: BTreeMap<i32, BTreeMap<i32, Vec<DataFileMeta>>> = BTreeMap::new();
    for e in live_files::live_entries(storage, &latest(storage), None).unwrap() {
        out.entry(e.bucket)
            .or_default()
            .entry(e.file.level)
            .or_default()
            .push(e.file);
    }
    out
}

/// Sorted runs per bucket: each level-0 file plus each non-empty level.
fn sorted_runs(storage: &dyn Storage) -> Vec<usize> {
    files_by_level(storage)
        .values()
        .map(|levels| {
            levels
                .iter()
                .map(|(level, files)| if *level == 0 { files.len() } else { 1 })
                .sum()
        })
        .collect()
}

/// Data files in storage that no snapshot references.
fn orphans(storage: &dyn Storage) -> Vec<String> {
    let mut referenced = BTreeSet::new();
    let (Some(first), Some(last)) = (
        crate::snapshot::earliest_snapshot_id(storage).unwrap(),
        latest_snapshot_id(storage).unwrap(),
    ) else {
        return Vec::new();
    };
    for id in first..=last {
        let s = snapshot(storage, id);
        for e in live_files::live_entries(storage, &s, None).unwrap() {
            referenced.insert(e.file.file_name);
        }
        if let Some(list) = &s.changelog_manifest_list {
            for m in read_manifest_list(storage, list).unwrap() {
                for e in crate::manifest::read_manifest(storage, &m.file_name).unwrap() {
                    referenced.insert(e.file.file_name);
                }
            }
        }
    }
    storage
        .list("bucket-0")
        .unwrap()
        .into_iter()
        .chain(storage.list("bucket-1").unwrap())
        .map(|o| file_name_of(&o.path).to_string())
        .filter(|name| !referenced.contains(name))
        .collect()
}

fn file_name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap()
}

#[test]
fn primary_key_churn_is_compacted_as_universal_compaction_does() {
    let mut t = PkTable::new();
    for r in 0..8 {
        t.round(r);
    }
    assert_eq!(
        sorted_runs(&*t.storage),
        [8, 8],
        "one level-0 file per round and bucket"
    );
    let before = latest(&*t.storage);
    let l0: Vec<DataFileMeta> = files_by_level(&*t.storage)
        .values()
        .flat_map(|l| l[&0].clone())
        .collect();
    assert!(
        l0.iter().any(|f| f.delete_row_count > Some(0)),
        "the rounds hold deletes"
    );

    let done = t.compact(&[]);
    // Eight runs of similar size: size amplification makes it a full compaction per bucket.
    assert_eq!(done.committed_snapshots, [9]);
    assert_eq!(done.files_compacted, 16);
    assert_eq!(done.files_written, 2);
    assert!(!done.more_to_do);
    assert_eq!(sorted_runs(&*t.storage), [1, 1]);
    for levels in files_by_level(&*t.storage).values() {
        let top = &levels[&5];
        assert_eq!(levels.len(), 1);
        assert_eq!(
            top[0].delete_row_count,
            Some(0),
            "retractions dropped at the top level"
        );
        assert_eq!(top[0].file_source, Some(FileSource::Compact as i32));
        assert!(top[0].file_name.starts_with("data-") && top[0].file_name.ends_with(".parquet"));
    }
    let s = latest(&*t.storage);
    assert_eq!(s.commit_kind, "COMPACT");
    assert_eq!(s.commit_user, MAINTENANCE_COMMIT_USER);
    assert_eq!(
        s.properties, None,
        "no fluss-offsets in a compaction snapshot"
    );
    assert_eq!(s.log_offsets, before.log_offsets);
    assert_eq!(s.watermark, before.watermark);
    let live_rows: i64 = live_files::live_entries(&*t.storage, &s, None)
        .unwrap()
        .iter()
        .map(|e| e.file.row_count)
        .sum();
    assert_eq!(s.total_record_count, Some(live_rows));
    assert_eq!(
        s.delta_record_count,
        Some(live_rows - before.total_record_count.unwrap())
    );
    assert_eq!(live_rows, t.model.len() as i64, "one row per live key");

    // The content is the same at the new snapshot, and every old snapshot still time-travels.
    for id in 1..=9 {
        assert_eq!(
            pk_rows(&*t.storage, id),
            t.history[id as usize - 1],
            "snapshot {id}"
        );
    }
    // Fluss still finds its own last snapshot, not the compaction.
    let c = PaimonCommitter::new(&*t.storage, vec![]);
    assert_eq!(
        c.get_missing_lake_snapshot(None)
            .unwrap()
            .unwrap()
            .snapshot_id,
        8
    );
    // Nothing more to do; tiering goes on after the compaction, sequence numbers continue.
    assert_eq!(t.compact(&[]), Compacted::default());
    let id = t.round(8);
    assert_eq!(id, 10);
    assert_eq!(pk_rows(&*t.storage, 10), t.model);
    for levels in files_by_level(&*t.storage).values() {
        let top = levels[&5][0].max_sequence_number;
        assert!(levels[&0][0].min_sequence_number > top);
    }
    assert!(orphans(&*t.storage).is_empty());
}

#[test]
fn compaction_converges_and_respects_the_input_budget_and_deadline() {
    let mut t = PkTable::new();
    for r in 0..4 {
        t.round(r);
    }
    // Four runs: under the trigger, nothing to do.
    assert_eq!(t.compact(&[]), Compacted::default());
    t.round(4);
    // A budget smaller than any 2 files: the buckets are over budget (warned and counted),
    // not retried.
    let done = t.compact(&[(options::MAX_INPUT_BYTES, "1kb")]);
    assert_eq!(
        done,
        Compacted {
            over_budget: 2,
            ..Compacted::default()
        }
    );
    // A deadline already past: nothing started, more to do.
    let schema = load_latest_schema(&*t.storage).unwrap().unwrap();
    let done = compact(&*t.storage, &[], &schema, &now, 0).unwrap();
    assert_eq!(
        done,
        Compacted {
            more_to_do: true,
            ..Compacted::default()
        }
    );
    assert_eq!(sorted_runs(&*t.storage), [5, 5]);
    // A lower trigger: universal compaction runs until nothing is picked any more.
    let done = t.compact(&[("num-sorted-run.compaction-trigger", "2")]);
    assert_eq!(done.committed_snapshots.len(), 1);
    let options = CompactionOptions::of(
        &fluss_lake_guest_sdk::testing::pairs(&[("num-sorted-run.compaction-trigger", "2")]),
        &schema,
    )
    .unwrap();
    for levels in files_by_level(&*t.storage).values() {
        let runs: Vec<LevelRun> = levels
            .iter()
            .flat_map(|(level, files)| {
                let size = |f: &DataFileMeta| f.file_size as u64;
                if *level == 0 {
                    files
                        .iter()
                        .map(|f| LevelRun {
                            level: 0,
                            size: size(f),
                        })
                        .collect::<Vec<_>>()
                } else {
                    vec![LevelRun {
                        level: *level as usize,
                        size: files.iter().map(size).sum(),
                    }]
                }
            })
            .collect();
        assert_eq!(universal::pick(&options, 3, &runs), None, "{runs:?}");
    }
    let id = latest_snapshot_id(&*t.storage).unwrap().unwrap();
    assert_eq!(pk_rows(&*t.storage, id), t.model);
    assert!(orphans(&*t.storage).is_empty());
}

#[test]
fn a_lost_race_is_retried_and_a_concurrently_compacted_input_aborts_cleanly() {
    // Another tiering round takes the snapshot id first: the compaction commits after it.
    let mut t = PkTable::new();
    for r in 0..5 {
        t.round(r);
    }
    let inner = t.storage.clone();
    let rival = std::cell::RefCell::new(PkTable {
        storage: inner.clone(),
        table: t.table.clone(),
        model: t.model.clone(),
        history: Vec::new(),
        offsets: t.offsets.clone(),
    });
    let racing = RacingStorage::new(
        &inner,
        |p| p == snapshot_path(6),
        || {
            let mut r = rival.borrow_mut();
            let storage = r.storage.clone();
            r.round_on(&*storage, 5);
        },
    );
    let schema = load_latest_schema(&*inner).unwrap().unwrap();
    let done = compact(&racing, &[], &schema, &now, NO_DEADLINE).unwrap();
    assert_eq!(done.committed_snapshots, [7]);
    assert_eq!(snapshot(&*inner, 6).commit_user, FLUSS_COMMIT_USER);
    assert_eq!(pk_rows(&*inner, 7), rival.borrow().model);
    assert!(orphans(&*inner).is_empty());

    // Another writer compacts (here: removes) one of the inputs first: the compaction gives
    // up, deletes what it wrote and leaves the table as the other writer left it.
    let mut t = PkTable::new();
    for r in 0..5 {
        t.round(r);
    }
    let inner = t.storage.clone();
    let victim = live_files::live_entries(&*inner, &latest(&*inner), Some(0))
        .unwrap()
        .remove(0);
    let racing = RacingStorage::new(
        &inner,
        |p| p == snapshot_path(6),
        || {
            let mut gone = victim.clone();
            gone.kind = FileKind::Delete;
            let message = CommitMessage {
                data_files: vec![gone],
                changelog_files: Vec::new(),
            };
            PaimonCommitter::new(&*inner, vec![])
                .commit_compaction(&message, &[], "another-compactor", &mut |_, _| Ok(()))
                .unwrap();
        },
    );
    let data_files = || -> BTreeSet<String> {
        ["bucket-0", "bucket-1"]
            .iter()
            .flat_map(|d| inner.list(d).unwrap())
            .map(|o| o.path)
            .collect()
    };
    let files_before = data_files();
    let done = compact(&racing, &[], &schema, &now, NO_DEADLINE).unwrap();
    assert_eq!(
        done,
        Compacted {
            more_to_do: true,
            ..Compacted::default()
        }
    );
    assert_eq!(latest_snapshot_id(&*inner).unwrap(), Some(6));
    assert_eq!(latest(&*inner).commit_user, "another-compactor");
    assert_eq!(
        data_files(),
        files_before,
        "the compaction's files are gone again"
    );
    assert!(orphans(&*inner).is_empty(), "{:?}", orphans(&*inner));
}

/// A bucketed append table of 7 tiering rounds, one file of 10 rows each: the storage and
/// the ids in the order they were written.
/// One tiering round of an append table: `rows` (Fluss offsets from `first_offset`) written
/// into bucket 0 and committed as round `round`.
fn append_round(
    storage: &MemoryStorage,
    table: &TableInfo,
    rows: &RecordBatch,
    first_offset: i64,
    round: i64,
) {
    let mut w = PaimonWriter::open(&writer_context(table, 0, None, &[]), storage).unwrap();
    w.write(make_row_batch(rows, first_offset, 1).unwrap())
        .unwrap();
    let mut c = PaimonCommitter::new(storage, vec![]);
    let base = fluss_lake_guest_sdk::testing::tiered_base(&c);
    c.commit(
        &to_committable(&[w.complete().unwrap().payload]).unwrap(),
        &[("fluss-offsets".to_string(), format!("/o/{round}"))],
        base,
    )
    .unwrap();
}

fn append_table_of_seven_files() -> (MemoryStorage, Vec<i32>) {
    let storage = MemoryStorage::new();
    let table = log_table(
        "db",
        "log",
        &[("id", "INT", false), ("name", "STRING", true)],
        &["id"],
        1,
        &[],
    );
    create_table_if_missing(&storage, &table, &[]).unwrap();
    let mut written = Vec::new();
    for r in 0..7 {
        let ids: Vec<i32> = (r * 10..r * 10 + 10).rev().collect();
        let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
        append_round(
            &storage,
            &table,
            &batch(&ids, &names),
            (r * 10) as i64,
            r as i64,
        );
        written.extend(ids);
    }
    (storage, written)
}

#[test]
fn append_tables_compact_small_files_in_row_order() {
    let (storage, written) = append_table_of_seven_files();
    let schema = load_latest_schema(&storage).unwrap().unwrap();
    let done = compact(&storage, &[], &schema, &now, NO_DEADLINE).unwrap();
    assert_eq!(done.committed_snapshots, [8]);
    assert_eq!(done.files_compacted, 5);
    assert_eq!(done.files_written, 1);
    let mut files: Vec<DataFileMeta> = live_files::live_entries(&storage, &latest(&storage), None)
        .unwrap()
        .into_iter()
        .map(|e| e.file)
        .collect();
    files.sort_by_key(|f| f.min_sequence_number);
    assert_eq!(files.len(), 3, "the five oldest files became one");
    assert_eq!(files[0].file_source, Some(FileSource::Compact as i32));
    assert_eq!(
        (files[0].min_sequence_number, files[0].max_sequence_number),
        (0, 49)
    );
    assert_eq!(files[1].min_sequence_number, 50);
    let mut read: Vec<i32> = Vec::new();
    for f in &files {
        for b in read_all(&storage, &format!("bucket-0/{}", f.file_name)).unwrap() {
            read.extend(
                b.column_by_name("id")
                    .unwrap()
                    .as_primitive::<Int32Type>()
                    .values(),
            );
        }
    }
    assert_eq!(read, written, "rows keep their order");
    let s = latest(&storage);
    assert_eq!(
        (s.commit_kind.as_str(), s.total_record_count),
        ("COMPACT", Some(70))
    );
    assert_eq!(s.delta_record_count, Some(0));

    // Bucket-unaware tables are left to Paimon's own (non-)compaction.
    let storage = MemoryStorage::new();
    let table = log_table("db", "unaware", &[("id", "INT", false)], &[], 1, &[]);
    create_table_if_missing(&storage, &table, &[]).unwrap();
    let schema = load_latest_schema(&storage).unwrap().unwrap();
    let done = compact(&storage, &[], &schema, &now, NO_DEADLINE).unwrap();
    assert_eq!(done, Compacted::default());
}

/// An append bucket whose window (5 files) reads more than the budget compacts the longest
/// start of it that fits (2 files or more) and reports more to do; when not even its 2 oldest
/// files fit a whole call's budget, the bucket is counted over budget and nothing is written.
#[test]
fn an_append_window_over_the_budget_compacts_what_fits_or_is_counted() {
    let (storage, written) = append_table_of_seven_files();
    let schema = load_latest_schema(&storage).unwrap().unwrap();
    let mut files: Vec<DataFileMeta> = live_files::live_entries(&storage, &latest(&storage), None)
        .unwrap()
        .into_iter()
        .map(|e| e.file)
        .collect();
    files.sort_by_key(|f| f.min_sequence_number);
    let size = |n: usize| files[..n].iter().map(|f| f.file_size as u64).sum::<u64>();

    let tiny = (size(2) - 1).to_string();
    let done = compact(
        &storage,
        &pairs(&[(options::MAX_INPUT_BYTES, tiny.as_str())]),
        &schema,
        &now,
        NO_DEADLINE,
    )
    .unwrap();
    assert_eq!(
        done,
        Compacted {
            over_budget: 1,
            ..Compacted::default()
        }
    );
    assert_eq!(latest(&storage).id, 7, "nothing committed");

    let three = size(3).to_string();
    let done = compact(
        &storage,
        &pairs(&[(options::MAX_INPUT_BYTES, three.as_str())]),
        &schema,
        &now,
        NO_DEADLINE,
    )
    .unwrap();
    assert_eq!(
        (done.files_compacted, done.more_to_do, done.over_budget),
        (3, true, 0)
    );
    let mut live: Vec<DataFileMeta> = live_files::live_entries(&storage, &latest(&storage), None)
        .unwrap()
        .into_iter()
        .map(|e| e.file)
        .collect();
    live.sort_by_key(|f| f.min_sequence_number);
    assert_eq!(
        (
            live.len(),
            live[0].min_sequence_number,
            live[0].max_sequence_number
        ),
        (5, 0, 29),
        "the 3 oldest files became one"
    );
    let mut read: Vec<i32> = Vec::new();
    for f in &live {
        for b in read_all(&storage, &format!("bucket-0/{}", f.file_name)).unwrap() {
            read.extend(
                b.column_by_name("id")
                    .unwrap()
                    .as_primitive::<Int32Type>()
                    .values(),
            );
        }
    }
    assert_eq!(read, written, "rows keep their order");
}

/// Rewrites the table's schema with an extra option, as `ALTER TABLE ... SET` would.
fn set_option(storage: &dyn Storage, key: &str, value: &str) {
    let mut schema = load_latest_schema(storage).unwrap().unwrap();
    schema.options.insert(key.to_string(), value.to_string());
    storage
        .put(&schema_path(schema.id), &schema.to_json().unwrap())
        .unwrap();
}

fn request(compact: bool, expire: bool, keep_since: Option<i64>) -> MaintenanceRequest {
    MaintenanceRequest {
        expire_snapshots: expire,
        compact,
        keep_since,
        deadline_millis: NO_DEADLINE,
    }
}

#[test]
fn merge_engines_it_cannot_reproduce_are_refused_touching_nothing() {
    for (key, value) in [
        ("merge-engine", "partial-update"),
        ("merge-engine", "aggregation"),
        ("merge-engine", "first-row"),
        ("changelog-producer", "lookup"),
        ("deletion-vectors.enabled", "true"),
    ] {
        let mut t = PkTable::new();
        for r in 0..6 {
            t.round(r);
        }
        set_option(&*t.storage, key, value);
        let files = t.storage.list("").unwrap();
        let schema = load_latest_schema(&*t.storage).unwrap().unwrap();
        let e = compact(&*t.storage, &[], &schema, &now, NO_DEADLINE).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{key}={value}: {e}");
        assert_eq!(t.storage.list("").unwrap(), files, "{key}={value}");
        let e = crate::maintenance::maintain(&*t.storage, &[], &request(true, false, None))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
    }
}

#[test]
fn expiry_in_the_same_call_deletes_what_compaction_replaced_once_its_snapshots_go() {
    let mut t = PkTable::new();
    for r in 0..6 {
        t.round(r);
    }
    let replaced: Vec<String> = files_by_level(&*t.storage)
        .values()
        .flat_map(|l| l[&0].iter().map(|f| f.file_name.clone()))
        .collect();
    let config = [
        ("snapshot.num-retained.min", "1"),
        ("snapshot.time-retained", "1 ms"),
    ];
    let config = fluss_lake_guest_sdk::testing::pairs(&config);
    std::thread::sleep(std::time::Duration::from_millis(5));
    // Fluss still needs snapshot 6: the compaction's inputs stay, as snapshot 6 uses them.
    let report =
        crate::maintenance::maintain(&*t.storage, &config, &request(true, true, Some(6))).unwrap();
    assert_eq!(report.committed_snapshots, [7]);
    assert_eq!(report.snapshots_expired, 5);
    let exists = |name: &String| {
        let s = &*t.storage;
        s.head(&format!("bucket-0/{name}")).unwrap().is_some()
            || s.head(&format!("bucket-1/{name}")).unwrap().is_some()
    };
    assert!(replaced.iter().all(exists));
    assert_eq!(pk_rows(&*t.storage, 6), t.model);
    // Once snapshot 6 may go too, the replaced files are deleted with it.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let report =
        crate::maintenance::maintain(&*t.storage, &config, &request(true, true, None)).unwrap();
    assert_eq!(report.committed_snapshots, Vec::<i64>::new());
    assert_eq!(report.snapshots_expired, 1);
    assert!(!replaced.iter().any(exists));
    assert_eq!(pk_rows(&*t.storage, 7), t.model);
    assert!(orphans(&*t.storage).is_empty());
    // A refused compaction does not stop expiry asked for in the same call.
    set_option(&*t.storage, "merge-engine", "first-row");
    crate::maintenance::maintain(&*t.storage, &config, &request(true, true, None)).unwrap();
}

/// Hundreds of small rounds with compaction and expiry: the metadata (snapshots, manifest
/// lists, manifests) goes up and down as manifests pile up and Paimon's minor merge (30 small
/// manifests) folds them with their ADD/DELETE pairs cancelled, but never grows with the
/// round count.
#[test]
fn metadata_stays_bounded_over_hundreds_of_compacted_rounds() {
    let storage = MemoryStorage::new();
    let table = log_table(
        "db",
        "log",
        &[("id", "INT", false), ("name", "STRING", true)],
        &["id"],
        2,
        &[],
    );
    create_table_if_missing(&storage, &table, &[]).unwrap();
    let config: Vec<(String, String)> = vec![
        ("snapshot.num-retained.min".into(), "3".into()),
        ("snapshot.num-retained.max".into(), "5".into()),
        ("snapshot.time-retained".into(), "1 ms".into()),
    ];
    let mut peaks = [0u64; 2];
    for r in 0..600 {
        let ids: Vec<i32> = (r * 10..r * 10 + 10).collect();
        let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
        let mut payloads = Vec::new();
        for b in 0..2 {
            let mut w =
                PaimonWriter::open(&writer_context(&table, b, None, &[]), &storage).unwrap();
            w.write(make_row_batch(&batch(&ids, &names), (r * 10) as i64, 1).unwrap())
                .unwrap();
            payloads.push(w.complete().unwrap().payload);
        }
        let mut c = PaimonCommitter::new(&storage, config.clone());
        let base = fluss_lake_guest_sdk::testing::tiered_base(&c);
        let res = c
            .commit(
                &to_committable(&payloads).unwrap(),
                &[("fluss-offsets".to_string(), format!("/o/{r}"))],
                base,
            )
            .unwrap();
        let request = MaintenanceRequest {
            expire_snapshots: true,
            compact: true,
            keep_since: Some(res.snapshot_id),
            deadline_millis: NO_DEADLINE,
        };
        crate::maintenance::maintain(&storage, &config, &request).unwrap();
        let bytes: u64 = ["snapshot/", "manifest/"]
            .iter()
            .flat_map(|p| storage.list(p).unwrap())
            .map(|o| o.size)
            .sum();
        let half = &mut peaks[r as usize / 300];
        *half = (*half).max(bytes);
    }
    // The second 300 rounds need no more room than the first: peaks of about 90 KB here
    // (a 30-manifest cycle takes about 140 rounds).
    assert!(
        peaks[1] <= peaks[0] + peaks[0] / 5 && peaks[1] < 128 << 10,
        "metadata grows with the rounds: peak {} B in rounds 0-299, {} B in 300-599",
        peaks[0],
        peaks[1]
    );
}

/// Paimon's upgrade records a file of the snapshot at a higher level under the same name.
/// When a later compaction of the same call rewrites it, the file stays: every published
/// snapshot reads it at its old level. The commit deletes it at that level and adds the
/// rewritten file, with no entry for the intermediate level.
#[test]
fn a_file_moved_up_a_level_then_rewritten_in_one_call_is_not_deleted() {
    let storage = MemoryStorage::new();
    let dir = "bucket-0";
    let f = levels::tests::file("data-f.parquet", 0, 100, (0, 9), (0, 9)).meta;
    let f_up = KeyedFile::new(f.clone(), &[PaimonType::parse("INT NOT NULL").unwrap()])
        .unwrap()
        .upgraded(3)
        .meta;
    let g = levels::tests::file("data-g.parquet", 5, 100, (0, 9), (0, 9)).meta;
    for name in [&f.file_name, &g.file_name] {
        storage.put(&format!("{dir}/{name}"), b"data").unwrap();
    }
    let mut changes = BucketChanges::new(Vec::new(), 0, 1);
    // Compaction 1 moves F from level 0 to level 3; compaction 2 rewrites F@3 into G.
    changes.record(&storage, dir, vec![f.clone()], vec![f_up.clone()]);
    changes.record(&storage, dir, vec![f_up], vec![g.clone()]);

    for name in [&f.file_name, &g.file_name] {
        assert!(
            storage.head(&format!("{dir}/{name}")).unwrap().is_some(),
            "{name} was deleted"
        );
    }
    assert_eq!(changes.before, [f]);
    assert_eq!(changes.after, [g]);
    let entries: Vec<(FileKind, String, i32)> = changes
        .entries()
        .map(|e| (e.kind, e.file.file_name, e.file.level))
        .collect();
    assert_eq!(
        entries,
        [
            (FileKind::Delete, "data-f.parquet".to_string(), 0),
            (FileKind::Add, "data-g.parquet".to_string(), 5),
        ]
    );
}

/// SplitMix64: a seeded generator for the property test, no dependency needed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform enough in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random value of 100 to 300 letters: rows, not Parquet's fixed overhead of about 2 KB,
/// make up much of a file's size, so that run sizes follow their row counts.
fn random_value(rng: &mut SplitMix) -> String {
    let len = 100 + rng.below(201);
    (0..len)
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect()
}

/// Keys of the random workload.
const RANDOM_KEYS: i32 = 96;

/// Round `r` of a random workload over keys `0..RANDOM_KEYS`: round 0 loads every key (a
/// large run, once compacted the top level); each later round changes up to 8 keys of a random
/// window (inserted, updated with or without `-U`, or deleted), so that its level-0 files
/// overlap some files of the levels above and not others.
fn random_changes(
    model: &BTreeMap<i32, String>,
    rng: &mut SplitMix,
    r: i32,
) -> Vec<(i32, ChangeType, String)> {
    let window = if r == 0 {
        0..RANDOM_KEYS
    } else {
        let lo = rng.below(RANDOM_KEYS as u64) as i32;
        lo..(lo + 2 + rng.below(7) as i32).min(RANDOM_KEYS)
    };
    let mut changes = Vec::new();
    for id in window {
        let value = random_value(rng);
        match model.get(&id) {
            None => changes.push((id, ChangeType::Insert, value)),
            Some(old) => match rng.below(4) {
                0 => changes.push((id, ChangeType::Delete, old.clone())),
                1 => {
                    changes.push((id, ChangeType::UpdateBefore, old.clone()));
                    changes.push((id, ChangeType::UpdateAfter, value));
                }
                _ => changes.push((id, ChangeType::UpdateAfter, value)),
            },
        }
    }
    changes
}

/// The paths of the data files (and changelog files) snapshot `id` references.
fn referenced_paths(storage: &dyn Storage, id: i64) -> BTreeSet<String> {
    let schema = load_latest_schema(storage).unwrap().unwrap();
    let s = snapshot(storage, id);
    let mut entries = live_files::live_entries(storage, &s, None).unwrap();
    if let Some(list) = &s.changelog_manifest_list {
        for m in read_manifest_list(storage, list).unwrap() {
            entries.extend(crate::manifest::read_manifest(storage, &m.file_name).unwrap());
        }
    }
    entries
        .into_iter()
        .map(|e| {
            let partition = Partition::from_row(&schema, &e.partition).unwrap();
            format!("{}/{}", bucket_dir(&partition, e.bucket), e.file.file_name)
        })
        .collect()
}

/// Every data file of every snapshot the table lists is in storage, and every data file in
/// storage is one of them. `seen` keeps each snapshot's files (snapshots never change).
fn assert_data_files_match_snapshots(
    storage: &dyn Storage,
    seen: &mut BTreeMap<i64, BTreeSet<String>>,
    context: &str,
) {
    let first = crate::snapshot::earliest_snapshot_id(storage)
        .unwrap()
        .unwrap();
    let last = latest_snapshot_id(storage).unwrap().unwrap();
    for id in first..=last {
        let paths = seen
            .entry(id)
            .or_insert_with(|| referenced_paths(storage, id));
        for path in paths.iter() {
            assert!(
                storage.head(path).unwrap().is_some(),
                "{context}: snapshot {id} references {path}, which is gone"
            );
        }
    }
    let referenced: BTreeSet<&String> = seen.range(first..=last).flat_map(|(_, p)| p).collect();
    let orphans: Vec<String> = (0..BUCKETS)
        .flat_map(|b| storage.list(&format!("bucket-{b}")).unwrap())
        .map(|o| o.path)
        .filter(|path| !referenced.contains(path))
        .collect();
    assert!(
        orphans.is_empty(),
        "{context}: no snapshot references {orphans:?}"
    );
}

/// Random tiering rounds of a primary-key table, compacted through the plugin's maintenance
/// after every second round with `num-sorted-run.compaction-trigger = 2` and a small
/// `target-file-size`. Two new level-0 files per bucket and call are what lets one call move
/// files up to level 1 (Paimon's upgrade: the same file at another level) and, once level 1
/// outgrows the top level, rewrite them into it in a second compaction. After every call
/// every snapshot still finds all its data files, no data file is left that none references
/// (files only this call wrote are still deleted), and the table reads back as written.
/// Seeds 0, 2 and 3 lost a level-0 file that way before compaction told files it wrote from
/// files it moved. Few seeds: each reads many Avro manifests, slow in the dev profile.
#[test]
fn random_rounds_compacted_never_lose_a_file_any_snapshot_references() {
    for seed in 0..4u64 {
        let mut rng = SplitMix(seed);
        let mut t = PkTable::new();
        let storage = t.storage.clone();
        set_option(&*storage, "num-sorted-run.compaction-trigger", "2");
        let target = ["1kb", "2kb"][rng.below(2) as usize];
        set_option(&*storage, "target-file-size", target);
        let mut seen = BTreeMap::new();
        for r in 0..=12 {
            let changes = random_changes(&t.model, &mut rng, r);
            t.commit_round(&*storage, r, changes);
            if r == 0 || r % 2 == 1 {
                continue;
            }
            let report =
                crate::maintenance::maintain(&*storage, &[], &request(true, false, None)).unwrap();
            if let Some(id) = report.committed_snapshots.last() {
                t.snapshot_committed(*id);
            }
            let context = format!("seed {seed} (target-file-size {target}), round {r}");
            assert_data_files_match_snapshots(&*storage, &mut seen, &context);
            let id = latest_snapshot_id(&*storage).unwrap().unwrap();
            assert_eq!(pk_rows(&*storage, id), t.model, "{context}");
        }
    }
}

/// The store applies the put of the compaction's snapshot but the answer is lost (an I/O
/// error, or "already exists" to the store's own retry): the compaction is recognised as
/// published and none of its files is deleted. When whether it was published cannot be told,
/// the call fails and its new files stay.
#[test]
fn a_lost_acknowledgement_of_a_compaction_is_recognised_as_published() {
    use fluss_lake_guest_sdk::testing::{LostAck, LostAckStorage};
    for how in [LostAck::Io, LostAck::AlreadyExists, LostAck::Unreadable] {
        let mut t = PkTable::new();
        for r in 0..5 {
            t.round(r);
        }
        let inner = t.storage.clone();
        let model = t.model.clone();
        let before: BTreeSet<String> = ["bucket-0", "bucket-1"]
            .iter()
            .flat_map(|d| inner.list(d).unwrap())
            .map(|o| o.path)
            .collect();
        let lossy = LostAckStorage::new(&*inner, |p| p == snapshot_path(6), how);
        let schema = load_latest_schema(&*inner).unwrap().unwrap();
        let result = compact(&lossy, &[], &schema, &now, NO_DEADLINE);
        assert!(lossy.lost().is_some(), "{how:?}");
        if how == LostAck::Unreadable {
            let e = result.unwrap_err();
            assert!(
                e.message()
                    .contains(fluss_lake_guest_sdk::commit::UNKNOWN_OUTCOME),
                "{e}"
            );
            let after: BTreeSet<String> = ["bucket-0", "bucket-1"]
                .iter()
                .flat_map(|d| inner.list(d).unwrap())
                .map(|o| o.path)
                .collect();
            assert!(after.len() > before.len(), "the new files are kept");
            continue;
        }
        assert_eq!(result.unwrap().committed_snapshots, [6], "{how:?}");
        assert_eq!(latest_snapshot_id(&*inner).unwrap(), Some(6));
        assert_eq!(pk_rows(&*inner, 6), model, "{how:?}");
        for id in 1..=6 {
            pk_rows(&*inner, id);
        }
        assert!(orphans(&*inner).is_empty(), "{:?}", orphans(&*inner));
    }
}

/// Issue item 6: a primary-key bucket whose full compaction reads more than
/// `maintenance.compaction.max-input-bytes` was never compacted again (the pick was skipped
/// and the next call picked it again), and its sorted runs grew every round. Now the biggest
/// compaction of at least 2 of the picked runs that fits the budget is done, the rest waits:
/// round after round the runs stay under `num-sorted-run.stop-trigger`, the rows stay exact
/// and no snapshot loses a file.
#[test]
fn a_bucket_whose_full_compaction_is_over_the_budget_compacts_what_fits() {
    let mut t = PkTable::new();
    let storage = t.storage.clone();
    for r in 0..5 {
        t.round(r);
    }
    let sizes: Vec<i64> = files_by_level(&*storage)
        .values()
        .flat_map(|l| l[&0].iter().map(|f| f.file_size))
        .collect();
    let largest = *sizes.iter().max().unwrap() as u64;
    // Room for a few files per call, far from the 10 files a full compaction of both reads.
    let budget = (largest * 7 / 2).to_string();
    let config = [(options::MAX_INPUT_BYTES, budget.as_str())];
    assert!(sizes.iter().sum::<i64>() as u64 / 2 > largest * 7 / 2);
    let stop_trigger = 5 + 3;
    let mut seen = BTreeMap::new();
    let (mut compacted, mut more_to_do) = (0, false);
    for r in 5..30 {
        let done = t.compact(&config);
        compacted += done.files_compacted;
        more_to_do |= done.more_to_do;
        let context = format!("after round {r}: {done:?}");
        let runs = sorted_runs(&*storage);
        assert!(
            runs.iter().all(|&n| n <= stop_trigger),
            "{context}: sorted runs {runs:?}"
        );
        assert_data_files_match_snapshots(&*storage, &mut seen, &context);
        let id = latest_snapshot_id(&*storage).unwrap().unwrap();
        assert_eq!(pk_rows(&*storage, id), t.model, "{context}");
        t.round(r);
    }
    assert!(
        compacted > 0 && more_to_do,
        "compacted {compacted}, more to do {more_to_do}"
    );
    let last = latest_snapshot_id(&*storage).unwrap().unwrap();
    for id in 1..=last {
        assert_eq!(
            pk_rows(&*storage, id),
            t.history[id as usize - 1],
            "snapshot {id}"
        );
    }
}

/// The rows of a batch of the shared nested table (canonical JSON of `columns`), as the host
/// hands them over.
fn nested_rows_batch(
    columns: &[fluss_lake_guest_sdk::testing::ColumnSpec<'_>],
    rows: &[serde_json::Value],
) -> RecordBatch {
    use fluss_lake_guest_sdk::datatype::ColumnType;
    use fluss_lake_guest_sdk::testing::json_array;
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, t, nullable)| {
            Field::new(*n, ColumnType::parse(t).unwrap().arrow_type(), *nullable)
        })
        .collect();
    let arrays = fields
        .iter()
        .map(|f| {
            let values: Vec<serde_json::Value> = rows.iter().map(|r| r[f.name()].clone()).collect();
            json_array(&values, f.data_type())
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// The live data files of the latest snapshot, in sequence order.
fn live_in_sequence_order(storage: &dyn Storage) -> Vec<DataFileMeta> {
    let mut files: Vec<DataFileMeta> = live_files::live_entries(storage, &latest(storage), None)
        .unwrap()
        .into_iter()
        .map(|e| e.file)
        .collect();
    files.sort_by_key(|f| (f.min_sequence_number, f.level));
    files
}

/// The atomic columns of the nested table's files, the only ones with value statistics.
const NESTED_STATS_COLUMNS: [&str; 4] = ["id", "__bucket", "__offset", "__timestamp"];

/// Nested columns (the shared ARRAY / MAP / ROW table, nulls and empty collections at every
/// level) through both compactions, which read nested Parquet back, merge it and write it
/// again: an append bucket's rows come back identical and in order, a primary-key table's
/// merged rows (the newest record of each key, whole) are those before compaction, and every
/// compacted file has the tiering writer's Parquet schema (Paimon's nested field ids) and
/// `_VALUE_STATS` without the nested columns. pypaimon and Java Paimon read such tables in
/// `tests/pypaimon_nested_compaction.rs`; this runs without them.
#[test]
fn nested_columns_are_compacted_with_their_values_field_ids_and_no_statistics() {
    use fluss_lake_guest_sdk::deps::arrow_select::concat::concat_batches;
    use fluss_lake_guest_sdk::parquet_read::{ParquetFileReader, ReadLimits};
    use fluss_lake_guest_sdk::testing::{NESTED_COLUMNS, nested_batch, nested_row};
    let parquet_schema = |storage: &dyn Storage, path: &str| {
        let reader = ParquetFileReader::open(storage, path, None, ReadLimits::default()).unwrap();
        reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .root_schema()
            .clone()
    };
    let check_files = |storage: &dyn Storage, tiered: &str| {
        let want = parquet_schema(storage, tiered);
        for e in live_files::live_entries(storage, &latest(storage), None).unwrap() {
            let path = format!("bucket-{}/{}", e.bucket, e.file.file_name);
            assert_eq!(parquet_schema(storage, &path), want, "{path}");
            assert_eq!(
                e.file.value_stats_cols.as_deref(),
                Some(&NESTED_STATS_COLUMNS.map(String::from)[..]),
                "{path}"
            );
        }
    };

    // An append bucket of six small files.
    let storage = MemoryStorage::new();
    let table = log_table("db", "nested", &NESTED_COLUMNS, &["id"], 1, &[]);
    create_table_if_missing(&storage, &table, &[]).unwrap();
    for r in 0..6i64 {
        append_round(&storage, &table, &nested_batch(r * 10, 10), r * 10, r);
    }
    let rows = |storage: &dyn Storage| -> RecordBatch {
        let batches: Vec<RecordBatch> = live_in_sequence_order(storage)
            .iter()
            .flat_map(|f| read_all(storage, &format!("bucket-0/{}", f.file_name)).unwrap())
            .collect();
        concat_batches(&batches[0].schema(), &batches).unwrap()
    };
    let before = rows(&storage);
    let tiered = format!("bucket-0/{}", live_in_sequence_order(&storage)[0].file_name);
    let schema = load_latest_schema(&storage).unwrap().unwrap();
    let done = compact(&storage, &[], &schema, &now, NO_DEADLINE).unwrap();
    assert_eq!((done.files_compacted, done.files_written), (5, 1));
    assert_eq!(rows(&storage), before, "the append bucket's rows, in order");
    check_files(&storage, &tiered);

    // A primary-key table: keys updated to other nested values (their nulls elsewhere) and
    // deleted over six rounds, each a level-0 run per bucket.
    let mut columns = NESTED_COLUMNS.to_vec();
    columns[0].2 = false;
    let table = pk_table("db", "nested_pk", &columns, &["id"], BUCKETS, &[]);
    let storage = MemoryStorage::new();
    create_table_if_missing(&storage, &table, &[]).unwrap();
    let mut offsets: BTreeMap<i32, i64> = BTreeMap::new();
    let value = |id: i32, version: i32| {
        let mut row = nested_row(i64::from(id + 100 * version));
        row["id"] = serde_json::json!(id);
        row
    };
    let mut live: BTreeMap<i32, i32> = BTreeMap::new();
    for r in 0..6 {
        let mut results = Vec::new();
        for b in 0..BUCKETS {
            let mut changes: Vec<(ChangeType, serde_json::Value)> = Vec::new();
            for id in (0..16).filter(|id| bucket(*id) == b && (id + r) % 3 != 0) {
                match (live.get(&id).copied(), (id * 7 + r * 3) % 4) {
                    (None, _) => {
                        changes.push((ChangeType::Insert, value(id, r)));
                        live.insert(id, r);
                    }
                    (Some(old), 0) => {
                        changes.push((ChangeType::Delete, value(id, old)));
                        live.remove(&id);
                    }
                    (Some(old), 1) => {
                        changes.push((ChangeType::UpdateBefore, value(id, old)));
                        changes.push((ChangeType::UpdateAfter, value(id, r)));
                        live.insert(id, r);
                    }
                    _ => {
                        changes.push((ChangeType::UpdateAfter, value(id, r)));
                        live.insert(id, r);
                    }
                }
            }
            if changes.is_empty() {
                continue;
            }
            let rows: Vec<serde_json::Value> = changes.iter().map(|c| c.1.clone()).collect();
            let kinds: Vec<ChangeType> = changes.iter().map(|c| c.0).collect();
            let offset = offsets.entry(b).or_insert(0);
            let batch = nested_rows_batch(&columns, &rows);
            let mut w =
                PaimonWriter::open(&writer_context(&table, b, None, &[]), &storage).unwrap();
            w.write(make_changelog_batch(&batch, &kinds, *offset, 1).unwrap())
                .unwrap();
            *offset += rows.len() as i64;
            results.push(w.complete().unwrap().payload);
        }
        let mut c = PaimonCommitter::new(&storage, vec![]);
        let base = fluss_lake_guest_sdk::testing::tiered_base(&c);
        c.commit(
            &to_committable(&results).unwrap(),
            &[("fluss-offsets".to_string(), format!("/o/{r}"))],
            base,
        )
        .unwrap();
    }
    // Per key, the whole row of its newest record, unless that is a retraction.
    let merged = |storage: &dyn Storage| -> BTreeMap<i32, RecordBatch> {
        let mut newest: BTreeMap<i32, (i64, bool, RecordBatch)> = BTreeMap::new();
        for e in live_files::live_entries(storage, &latest(storage), None).unwrap() {
            let path = format!("bucket-{}/{}", e.bucket, e.file.file_name);
            for b in read_all(storage, &path).unwrap() {
                let keys = b
                    .column_by_name("_KEY_id")
                    .unwrap()
                    .as_primitive::<Int32Type>();
                let seqs = b
                    .column_by_name("_SEQUENCE_NUMBER")
                    .unwrap()
                    .as_primitive::<Int64Type>();
                let kinds = b
                    .column_by_name("_VALUE_KIND")
                    .unwrap()
                    .as_primitive::<Int8Type>();
                for i in 0..b.num_rows() {
                    let seq = seqs.value(i);
                    if newest.get(&keys.value(i)).is_none_or(|(s, _, _)| *s < seq) {
                        let retract = RowKind::is_retract(kinds.value(i));
                        newest.insert(keys.value(i), (seq, retract, b.slice(i, 1)));
                    }
                }
            }
        }
        newest
            .into_iter()
            .filter(|(_, (_, retract, _))| !retract)
            .map(|(k, (_, _, row))| (k, row))
            .collect()
    };
    let before = merged(&storage);
    assert_eq!(
        before.keys().copied().collect::<Vec<_>>(),
        live.keys().copied().collect::<Vec<_>>()
    );
    let tiered = &live_files::live_entries(&storage, &latest(&storage), None).unwrap()[0];
    let tiered = format!("bucket-{}/{}", tiered.bucket, tiered.file.file_name);
    let schema = load_latest_schema(&storage).unwrap().unwrap();
    let done = compact(&storage, &[], &schema, &now, NO_DEADLINE).unwrap();
    assert!(done.files_compacted >= 12, "{done:?}");
    assert_eq!(merged(&storage), before, "the merged rows");
    check_files(&storage, &tiered);
}

/// A bucket rebuilt from its KV snapshot after a log gap (the `bucket-replace` export): the
/// round's files become the bucket's only live files, in an `OVERWRITE` snapshot, and the
/// files removed are those of the base the commit publishes on, so a compaction that wins
/// the race is replaced too; the other buckets keep theirs, and nothing is deleted from
/// storage.
#[test]
fn a_replaced_bucket_holds_only_its_snapshot_image_even_after_a_racing_compaction() {
    use fluss_lake_guest_sdk::replace::ReplaceSet;
    use fluss_lake_guest_sdk::wit::BucketRef;

    let mut t = PkTable::new();
    for r in 0..8 {
        t.round(r);
    }
    // The gap: round 8's changes never reach the lake; bucket 0 is rebuilt from the state
    // after them, as INSERTs at no offset (what a KV snapshot holds).
    let lake = t.model.clone();
    let mut truth = t.model.clone();
    for (id, kind, value) in t.changes(8) {
        match kind {
            ChangeType::Delete => {
                truth.remove(&id);
            }
            ChangeType::UpdateBefore => {}
            _ => {
                truth.insert(id, value);
            }
        }
    }
    let image: BTreeMap<i32, String> = truth
        .iter()
        .filter(|(id, _)| bucket(**id) == 0)
        .map(|(id, v)| (*id, v.clone()))
        .collect();
    assert!(
        lake.keys()
            .any(|id| bucket(*id) == 0 && !image.contains_key(id)),
        "the gap deletes a key of bucket 0"
    );
    let inner = t.storage.clone();
    let ids: Vec<i32> = image.keys().copied().collect();
    let values: Vec<String> = image.values().cloned().collect();
    let mut w = PaimonWriter::open(&writer_context(&t.table, 0, None, &[]), &*inner).unwrap();
    let inserts = vec![ChangeType::Insert; ids.len()];
    w.write(make_changelog_batch(&batch(&ids, &values), &inserts, -1, -1).unwrap())
        .unwrap();
    let committable = to_committable(&[w.complete().unwrap().payload]).unwrap();
    let files_before = referenced_paths(&*inner, latest_snapshot_id(&*inner).unwrap().unwrap());

    // A compaction of the table lands just before the replace publishes its first attempt.
    let base = latest_snapshot_id(&*inner).unwrap();
    let racing = RacingStorage::new(
        &inner,
        |p| p == snapshot_path(base.unwrap() + 1),
        || {
            let schema = load_latest_schema(&*inner).unwrap().unwrap();
            let done = compact(&*inner, &[], &schema, &now, NO_DEADLINE).unwrap();
            assert_eq!(done.committed_snapshots.len(), 1, "{done:?}");
        },
    );
    let replace = ReplaceSet::new(
        &t.table,
        &[BucketRef {
            partition_id: None,
            partition_name: None,
            bucket: 0,
            num_buckets: BUCKETS,
        }],
    )
    .unwrap();
    let mut c = PaimonCommitter::new(&racing, vec![]);
    c.check_replace().unwrap();
    let res = c
        .commit_replacing(
            &committable,
            &[("fluss-offsets".to_string(), "/o/8".to_string())],
            base,
            &replace,
        )
        .unwrap();
    assert_eq!(
        res.snapshot_id,
        base.unwrap() + 2,
        "retried after the compaction"
    );
    let replaced = snapshot(&*inner, res.snapshot_id);
    assert_eq!(replaced.commit_kind, "OVERWRITE");
    assert_eq!(replaced.commit_user, FLUSS_COMMIT_USER);
    assert_eq!(
        snapshot(&*inner, res.snapshot_id - 1).commit_kind,
        "COMPACT"
    );
    let mut expected: BTreeMap<i32, String> = lake
        .into_iter()
        .filter(|(id, _)| bucket(*id) != 0)
        .collect();
    expected.extend(image);
    assert_eq!(pk_rows(&*inner, res.snapshot_id), expected);
    // Bucket 0 holds the image's file alone; the counters follow the live files.
    let live = live_files::live_entries(&*inner, &replaced, None).unwrap();
    assert_eq!(live.iter().filter(|e| e.bucket == 0).count(), 1);
    let rows: i64 = live.iter().map(|e| e.file.row_count).sum();
    assert_eq!(replaced.total_record_count, Some(rows));
    assert_eq!(res.stats.record_count, Some(rows));
    // The replaced files stay in storage for older snapshots (expiry removes them).
    for path in files_before {
        assert!(inner.get(&path).is_ok(), "{path} was deleted");
    }

    // An empty image (every key of bucket 1 deleted in a gap) empties the bucket; another
    // tiering round in between makes the replace a conflict that is not retried.
    let empty = to_committable(&[]).unwrap();
    let one = |b: i32| {
        ReplaceSet::new(
            &t.table,
            &[BucketRef {
                partition_id: None,
                partition_name: None,
                bucket: b,
                num_buckets: BUCKETS,
            }],
        )
        .unwrap()
    };
    let mut c = PaimonCommitter::new(&*inner, vec![]);
    let err = c.commit_replacing(&empty, &[], base, &one(1)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    let res = c
        .commit_replacing(&empty, &[], Some(res.snapshot_id), &one(1))
        .unwrap();
    let rows = pk_rows(&*inner, res.snapshot_id);
    assert!(rows.keys().all(|id| bucket(*id) == 0), "{rows:?}");
    assert!(!rows.is_empty());
    assert!(orphans(&*inner).is_empty(), "{:?}", orphans(&*inner));
}

/// A replaced bucket of a partitioned table: only that partition's bucket loses its files.
#[test]
fn a_replaced_bucket_of_one_partition_leaves_the_other_partitions_alone() {
    use fluss_lake_guest_sdk::replace::ReplaceSet;
    use fluss_lake_guest_sdk::wit::BucketRef;

    let storage = MemoryStorage::new();
    let table = pk_table(
        "db",
        "parted",
        &[
            ("id", "INT", false),
            ("v", "STRING", true),
            ("p", "STRING", false),
        ],
        &["id", "p"],
        1,
        &["p"],
    );
    create_table_if_missing(&storage, &table, &[]).unwrap();
    let write = |partition: &str, ids: &[i32], value: &str| {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("v", DataType::Utf8, true),
            Field::new("p", DataType::Utf8, false),
        ]));
        let rows = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(ids.to_vec())),
                Arc::new(StringArray::from_iter_values(ids.iter().map(|_| value))),
                Arc::new(StringArray::from_iter_values(ids.iter().map(|_| partition))),
            ],
        )
        .unwrap();
        let context = writer_context(&table, 0, Some(partition), &[]);
        let mut w = PaimonWriter::open(&context, &storage).unwrap();
        w.write(make_row_batch(&rows, 0, 1).unwrap()).unwrap();
        w.complete().unwrap().payload
    };
    let round = to_committable(&[write("a", &[1, 2, 3], "old"), write("b", &[11, 12], "old")]);
    let mut c = PaimonCommitter::new(&storage, vec![]);
    let base = c.commit(&round.unwrap(), &[], None).unwrap().snapshot_id;
    let image = to_committable(&[write("a", &[2], "new")]).unwrap();
    let replace = ReplaceSet::new(
        &table,
        &[BucketRef {
            partition_id: Some(1),
            partition_name: Some("a".into()),
            bucket: 0,
            num_buckets: 1,
        }],
    )
    .unwrap();
    let id = c
        .commit_replacing(&image, &[], Some(base), &replace)
        .unwrap()
        .snapshot_id;
    let rows = pk_rows(&storage, id);
    let expected: BTreeMap<i32, String> = [(2, "new"), (11, "old"), (12, "old")]
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect();
    assert_eq!(rows, expected);
}
