//! Tests of compaction and manifest merging: tables written round after round through the
//! plugin's own writer and committer, maintained, then read back with a reader written here
//! from the spec's rules (every snapshot, deletes applied), so content, time travel, file
//! counts and leftovers are checked independently of the code under test.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
use fluss_lake_guest_sdk::layout::relative_path;
use fluss_lake_guest_sdk::parquet_read::read_all;
use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
use fluss_lake_guest_sdk::storage::{MemoryStorage, Storage};
use fluss_lake_guest_sdk::testing::{
    RacingStorage, committer_context, log_table, pairs, pk_table, tiered_base, writer_context,
};
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest, TableInfo};
use fluss_lake_guest_sdk::{ErrorKind, FLUSS_COMMIT_USER, FLUSS_OFFSETS_PROPERTY};

use crate::catalog::create_table_if_missing;
use crate::committer::{COMMIT_USER, IcebergCommitter, to_committable};
use crate::file_writer::{SplitTarget, write_position_deletes};
use crate::hadoop_tables;
use crate::maintenance::maintain_at;
use crate::manifest::{
    DataFile, FileContent, ManifestEntry, ManifestFile, read_entries, read_manifest_list,
};
use crate::metadata::Snapshot;
use crate::schema::TableLayout;
use crate::summary::MAINTENANCE_COMMIT_USER;
use crate::writer::{IcebergWriter, WritePayload};

const FAR_FUTURE: i64 = i64::MAX / 2;

/// A row of the test tables: `(id, name, __bucket, __offset)`.
type Row = (i32, String, i32, i64);

/// A batch of the test tables' columns `id INT NOT NULL, name STRING`.
fn id_name_batch<'a>(rows: impl Iterator<Item = (i32, &'a str)> + Clone) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int32Array::from_iter_values(rows.clone().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.map(|r| r.1))),
        ],
    )
    .unwrap()
}

/// A Fluss table tiered into an Iceberg table in memory, round by round.
struct Lake {
    storage: Rc<MemoryStorage>,
    table: TableInfo,
    config: Vec<(&'static str, &'static str)>,
    offsets: HashMap<i32, i64>,
}

impl Lake {
    fn new(table: TableInfo, config: &[(&'static str, &'static str)]) -> Lake {
        let storage = MemoryStorage::new();
        let mut all = vec![("warehouse", "/wh")];
        all.extend_from_slice(config);
        create_table_if_missing(&storage, &table, &pairs(&all)).unwrap();
        Lake {
            storage: Rc::new(storage),
            table,
            config: all,
            offsets: HashMap::new(),
        }
    }

    /// A log table `id INT, name STRING` with `buckets` buckets (identity on `__bucket`).
    fn log(buckets: i32, config: &[(&'static str, &'static str)]) -> Lake {
        let t = log_table(
            "db",
            "t",
            &[("id", "INT", false), ("name", "STRING", true)],
            &[],
            buckets,
            &[],
        );
        Lake::new(t, config)
    }

    /// A primary-key table on `id` with `buckets` buckets (`bucket[n](id)`; rows of key `k`
    /// go to bucket `k % n` here, consistently, which is all deletes need).
    fn pk(buckets: i32, config: &[(&'static str, &'static str)]) -> Lake {
        let t = pk_table(
            "db",
            "t",
            &[("id", "INT", false), ("name", "STRING", true)],
            &["id"],
            buckets,
            &[],
        );
        Lake::new(t, config)
    }

    fn plugin_config(&self) -> Vec<(String, String)> {
        pairs(&self.config)
    }

    fn committer<'s>(&self, storage: &'s dyn Storage) -> IcebergCommitter<&'s dyn Storage> {
        IcebergCommitter::open(committer_context(&self.table, &self.config), storage).unwrap()
    }

    /// Tiers one round of changes `(kind, id, name)` into `storage` (the lake's own unless a
    /// test races), each row to bucket `id % buckets`; the committed snapshot.
    fn round_into(&mut self, storage: &dyn Storage, changes: &[(ChangeType, i32, &str)]) -> i64 {
        let buckets = self.table.num_buckets;
        let mut payloads = Vec::new();
        for b in 0..buckets {
            let rows: Vec<_> = changes.iter().filter(|c| c.1 % buckets == b).collect();
            if rows.is_empty() {
                continue;
            }
            let batch = id_name_batch(rows.iter().map(|r| (r.1, r.2)));
            let kinds: Vec<ChangeType> = rows.iter().map(|r| r.0).collect();
            let offset = self.offsets.entry(b).or_default();
            let rb = make_changelog_batch(&batch, &kinds, *offset, 1_000).unwrap();
            *offset += rows.len() as i64;
            let mut w =
                IcebergWriter::open(&writer_context(&self.table, b, None, &self.config), storage)
                    .unwrap();
            w.write(rb).unwrap();
            payloads.push(w.complete().unwrap().payload);
        }
        let mut c = self.committer(storage);
        let base = tiered_base(&c);
        let n = self.offsets.values().sum::<i64>();
        c.commit(
            &to_committable(&payloads).unwrap(),
            &[(FLUSS_OFFSETS_PROPERTY.into(), format!("/offsets/{n}"))],
            base,
        )
        .unwrap()
        .snapshot_id
    }

    fn round(&mut self, changes: &[(ChangeType, i32, &str)]) -> i64 {
        let storage = self.storage.clone();
        self.round_into(&*storage, changes)
    }

    fn inserts(&mut self, ids: std::ops::Range<i32>) -> i64 {
        let names: Vec<String> = ids.clone().map(|i| format!("n{i}")).collect();
        let changes: Vec<_> = ids
            .zip(&names)
            .map(|(i, n)| (ChangeType::Insert, i, n.as_str()))
            .collect();
        self.round(&changes)
    }

    fn maintain(&self, compact: bool, expire: bool) -> MaintenanceReport {
        self.maintain_on(&*self.storage, compact, expire).unwrap()
    }

    fn maintain_on(
        &self,
        storage: &dyn Storage,
        compact: bool,
        expire: bool,
    ) -> fluss_lake_guest_sdk::Result<MaintenanceReport> {
        let request = MaintenanceRequest {
            expire_snapshots: expire,
            compact,
            keep_since: None,
            deadline_millis: i64::MAX,
        };
        let now = if expire { || FAR_FUTURE } else { || 0 };
        maintain_at(storage, &self.plugin_config(), &request, &now)
    }
}

// ---- an independent reader ----------------------------------------------------------------

fn loaded(s: &MemoryStorage) -> crate::tables::Loaded {
    crate::tables::load(s).unwrap().unwrap()
}

fn rel(uri: &str) -> String {
    relative_path("/wh/db/t", uri).unwrap().to_string()
}

fn snapshots(s: &MemoryStorage) -> Vec<Snapshot> {
    loaded(s).metadata.snapshots().unwrap()
}

fn current(s: &MemoryStorage) -> Snapshot {
    loaded(s).metadata.current_snapshot().unwrap().unwrap()
}

fn manifests(s: &MemoryStorage, snap: &Snapshot) -> Vec<ManifestFile> {
    read_manifest_list(&s.get(&rel(&snap.manifest_list)).unwrap()).unwrap()
}

/// Every entry (live or not) the snapshot's manifests hold.
fn entries(s: &MemoryStorage, snap: &Snapshot) -> Vec<ManifestEntry> {
    let m = loaded(s).metadata;
    manifests(s, snap)
        .iter()
        .flat_map(|mf| {
            let spec = m.partition_spec(mf.partition_spec_id).unwrap();
            read_entries(&s.get(&rel(&mf.manifest_path)).unwrap(), mf, &spec).unwrap()
        })
        .collect()
}

fn live(s: &MemoryStorage, snap: &Snapshot, content: FileContent) -> Vec<ManifestEntry> {
    entries(s, snap)
        .into_iter()
        .filter(|e| e.is_live() && e.file.content == content)
        .collect()
}

/// The rows of `snap` as the spec's scan planning defines them.
fn rows_at(s: &MemoryStorage, snap: &Snapshot) -> Vec<Row> {
    let eq: Vec<(Vec<_>, i64, i32)> = live(s, snap, FileContent::EqualityDeletes)
        .iter()
        .flat_map(|e| {
            let seq = e.sequence_number.unwrap();
            read_all(s, &rel(&e.file.file_path))
                .unwrap()
                .into_iter()
                .flat_map(move |b| {
                    let ids = b
                        .column_by_name("id")
                        .unwrap()
                        .as_primitive::<Int32Type>()
                        .clone();
                    (0..b.num_rows())
                        .map(move |i| ids.value(i))
                        .collect::<Vec<_>>()
                })
                .map(move |id| (e.file.partition.clone(), seq, id))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut pos: HashMap<(String, i64), i64> = HashMap::new();
    for e in live(s, snap, FileContent::PositionDeletes) {
        for b in read_all(s, &rel(&e.file.file_path)).unwrap() {
            let paths = b
                .column_by_name("file_path")
                .unwrap()
                .as_string::<i32>()
                .clone();
            let p = b
                .column_by_name("pos")
                .unwrap()
                .as_primitive::<Int64Type>()
                .clone();
            for i in 0..b.num_rows() {
                let seq = pos
                    .entry((paths.value(i).to_string(), p.value(i)))
                    .or_default();
                *seq = (*seq).max(e.sequence_number.unwrap());
            }
        }
    }
    let mut out = Vec::new();
    for e in live(s, snap, FileContent::Data) {
        let seq = e.sequence_number.unwrap();
        let mut row = 0i64;
        for b in read_all(s, &rel(&e.file.file_path)).unwrap() {
            let ids = b.column_by_name("id").unwrap().as_primitive::<Int32Type>();
            let names = b.column_by_name("name").unwrap().as_string::<i32>();
            let buckets = b
                .column_by_name("__bucket")
                .unwrap()
                .as_primitive::<Int32Type>();
            let offsets = b
                .column_by_name("__offset")
                .unwrap()
                .as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                let at = row + i as i64;
                let by_pos = pos
                    .get(&(e.file.file_path.clone(), at))
                    .is_some_and(|d| *d >= seq);
                let by_eq = eq
                    .iter()
                    .any(|(p, d, id)| *p == e.file.partition && *d > seq && *id == ids.value(i));
                if !by_pos && !by_eq {
                    out.push((
                        ids.value(i),
                        names.value(i).to_string(),
                        buckets.value(i),
                        offsets.value(i),
                    ));
                }
            }
            row += b.num_rows() as i64;
        }
    }
    out.sort();
    out
}

/// The rows of every snapshot, by id.
fn all_rows(s: &MemoryStorage) -> BTreeMap<i64, Vec<Row>> {
    snapshots(s)
        .iter()
        .map(|snap| (snap.snapshot_id, rows_at(s, snap)))
        .collect()
}

/// Data, delete, manifest and manifest-list files no snapshot uses (relative paths); panics
/// when a used one is missing.
fn unreferenced(s: &MemoryStorage) -> Vec<String> {
    let mut used = HashSet::new();
    for snap in snapshots(s) {
        used.insert(rel(&snap.manifest_list));
        for m in manifests(s, &snap) {
            used.insert(rel(&m.manifest_path));
        }
        for e in entries(s, &snap).iter().filter(|e| e.is_live()) {
            used.insert(rel(&e.file.file_path));
        }
    }
    for p in &used {
        assert!(s.head(p).unwrap().is_some(), "{p} is used but gone");
    }
    s.list("")
        .unwrap()
        .into_iter()
        .map(|m| m.path)
        .filter(|p| p.ends_with(".avro") || p.ends_with(".parquet"))
        .filter(|p| !used.contains(p))
        .collect()
}

fn summary_of<'a>(snap: &'a Snapshot, key: &str) -> Option<&'a str> {
    snap.summary_value(key)
}

/// Checks a maintenance snapshot: `replace` by the maintenance user, no Fluss offsets, the
/// running totals right for what it lists.
fn assert_maintenance_snapshot(s: &MemoryStorage, snap: &Snapshot) {
    assert_eq!(summary_of(snap, "operation"), Some("replace"));
    assert_eq!(summary_of(snap, COMMIT_USER), Some(MAINTENANCE_COMMIT_USER));
    assert_eq!(summary_of(snap, FLUSS_OFFSETS_PROPERTY), None);
    let data = live(s, snap, FileContent::Data);
    let deletes: Vec<_> = entries(s, snap)
        .into_iter()
        .filter(|e| e.is_live() && e.file.content != FileContent::Data)
        .collect();
    let n = |k: &str| summary_of(snap, k).unwrap().parse::<i64>().unwrap();
    assert_eq!(n("total-data-files"), data.len() as i64);
    assert_eq!(n("total-delete-files"), deletes.len() as i64);
    assert_eq!(
        n("total-records"),
        data.iter().map(|e| e.file.record_count).sum::<i64>()
    );
    assert_eq!(
        n("total-files-size"),
        data.iter()
            .chain(&deletes)
            .map(|e| e.file.file_size_in_bytes)
            .sum::<i64>()
    );
}

fn request_report(r: &MaintenanceReport) -> (u64, u64, usize, bool) {
    (
        r.files_compacted,
        r.files_written,
        r.committed_snapshots.len(),
        r.more_to_do,
    )
}

// ---- manifest merging -------------------------------------------------------------------

#[test]
fn tiering_commits_merge_manifests_as_merge_append_does() {
    let mut merged = Lake::log(2, &[("commit.manifest.min-count-to-merge", "5")]);
    let mut fast = Lake::log(2, &[("commit.manifest-merge.enabled", "false")]);
    for r in 0..12 {
        merged.inserts(r * 10..r * 10 + 4);
        fast.inserts(r * 10..r * 10 + 4);
        let count = manifests(&merged.storage, &current(&merged.storage)).len();
        assert!(count < 5, "round {r}: {count} manifests");
    }
    assert_eq!(manifests(&fast.storage, &current(&fast.storage)).len(), 12);
    // Merging changes no snapshot's rows, and a merged manifest keeps each file's snapshot
    // and sequence number.
    let in_order = |s: &MemoryStorage| -> Vec<Vec<Row>> {
        snapshots(s).iter().map(|snap| rows_at(s, snap)).collect()
    };
    assert_eq!(in_order(&merged.storage), in_order(&fast.storage));
    let s = &merged.storage;
    let by_path: HashMap<String, (Option<i64>, Option<i64>)> =
        live(s, &current(s), FileContent::Data)
            .into_iter()
            .map(|e| (e.file.file_path, (e.snapshot_id, e.sequence_number)))
            .collect();
    for snap in snapshots(s) {
        for e in entries(s, &snap).into_iter().filter(|e| e.is_live()) {
            assert_eq!(
                by_path[&e.file.file_path],
                (e.snapshot_id, e.sequence_number)
            );
        }
    }
    assert!(unreferenced(s).is_empty());
}

#[test]
fn maintenance_merges_manifests_in_a_replace_snapshot_fluss_recovery_skips() {
    // Merging off on commit, files never small: only the maintenance merge can act.
    let mut lake = Lake::log(
        2,
        &[
            ("commit.manifest-merge.enabled", "false"),
            ("commit.manifest.min-count-to-merge", "4"),
            ("read.split.target-size", "1"),
        ],
    );
    for r in 0..3 {
        lake.inserts(r * 10..r * 10 + 3);
    }
    assert_eq!(
        request_report(&lake.maintain(true, false)),
        (0, 0, 0, false),
        "3 ≤ 4"
    );
    let tiered = lake.inserts(30..33);
    lake.inserts(40..43);
    let tiering = current(&lake.storage);
    let before = rows_at(&lake.storage, &tiering);
    let report = lake.maintain(true, false);
    assert_eq!(request_report(&report), (0, 0, 1, false));
    let s = &lake.storage;
    let replace = current(s);
    assert_eq!(replace.snapshot_id, report.committed_snapshots[0]);
    assert_eq!(replace.parent_snapshot_id, Some(tiering.snapshot_id));
    assert_eq!(manifests(s, &replace).len(), 1);
    assert_eq!(summary_of(&replace, "manifests-created"), Some("1"));
    assert_eq!(summary_of(&replace, "manifests-replaced"), Some("5"));
    assert_maintenance_snapshot(s, &replace);
    assert_eq!(rows_at(s, &replace), before);
    // Fluss's recovery still finds the last tiering snapshot, and the next round commits
    // on top of the replace snapshot with the tiering snapshot as its base.
    let c = lake.committer(&**s);
    assert_eq!(
        c.get_missing_lake_snapshot(Some(tiered))
            .unwrap()
            .unwrap()
            .snapshot_id,
        tiering.snapshot_id
    );
    assert!(
        c.get_missing_lake_snapshot(Some(tiering.snapshot_id))
            .unwrap()
            .is_none()
    );
    lake.inserts(50..51);
    let s = &lake.storage;
    assert_eq!(current(s).parent_snapshot_id, Some(replace.snapshot_id));
    assert_eq!(rows_at(s, &current(s)).len(), before.len() + 1);
    assert!(unreferenced(s).is_empty());
}

// ---- data file compaction ---------------------------------------------------------------

#[test]
fn small_files_of_each_bucket_are_rewritten_into_one() {
    let mut lake = Lake::log(2, &[]);
    for r in 0..5 {
        lake.inserts(r * 10..r * 10 + 6);
    }
    let s = &lake.storage;
    let start = current(s);
    assert_eq!(live(s, &start, FileContent::Data).len(), 10);
    let before = all_rows(s);

    let report = lake.maintain(true, false);
    assert_eq!(request_report(&report), (10, 2, 1, false));
    assert!(report.bytes_written > 0);
    let replace = current(s);
    assert_eq!(replace.snapshot_id, report.committed_snapshots[0]);
    assert_maintenance_snapshot(s, &replace);
    assert_eq!(summary_of(&replace, "deleted-data-files"), Some("10"));
    assert_eq!(summary_of(&replace, "added-data-files"), Some("2"));
    let files = live(s, &replace, FileContent::Data);
    assert_eq!(files.len(), 2);
    // The new files keep the sequence number the rewrite started from, are one per bucket
    // in its directory, and hold their rows in `__offset` order.
    for f in &files {
        assert_eq!(f.sequence_number, Some(start.sequence_number));
        assert_eq!(f.snapshot_id, Some(replace.snapshot_id));
        let bucket = f.file.partition[0].clone().unwrap();
        assert!(f.file.file_path.contains(&format!(
            "__bucket={}",
            match bucket {
                crate::partition::PartitionValue::Int(b) => b,
                _ => unreachable!(),
            }
        )));
        let offsets: Vec<i64> = read_all(&**s, &rel(&f.file.file_path))
            .unwrap()
            .iter()
            .flat_map(|b| {
                b.column_by_name("__offset")
                    .unwrap()
                    .as_primitive::<Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
        assert!(!f.file.lower_bounds.is_empty() && !f.file.value_counts.is_empty());
    }
    // Same rows now, and every earlier snapshot still reads as before (time travel).
    let after = all_rows(s);
    assert_eq!(after[&replace.snapshot_id], before[&start.snapshot_id]);
    for (id, rows) in &before {
        assert_eq!(&after[id], rows);
    }
    assert!(unreferenced(s).is_empty());
    // Nothing left to compact.
    assert_eq!(
        request_report(&lake.maintain(true, false)),
        (0, 0, 0, false)
    );
}

/// Nested columns (the shared ARRAY / MAP / ROW table, nulls and empty collections at every
/// level) through compaction, which reads nested Parquet back and writes it again: each
/// bucket's rows come back identical and in `__offset` order, and the new file's metrics
/// cover the fields the tiered files' covered (struct leaves, not what lists and maps hold),
/// their counts summed. pyiceberg, DuckDB and Java Iceberg read such tables (field ids and
/// metrics checked against Java's) in `tests/compaction_readers.rs`; this runs without them.
#[test]
fn nested_columns_are_rewritten_with_their_values_and_metrics() {
    use arrow_array::UInt32Array;
    use fluss_lake_guest_sdk::deps::arrow_select::concat::concat_batches;
    use fluss_lake_guest_sdk::deps::arrow_select::take::take_record_batch;
    use fluss_lake_guest_sdk::testing::{NESTED_COLUMNS, nested_batch};

    use crate::partition::PartitionValue;
    use crate::types::IcebergType;
    let t = log_table("db", "t", &NESTED_COLUMNS, &[], 2, &[]);
    let mut lake = Lake::new(t, &[]);
    for r in 0..4i64 {
        let mut payloads = Vec::new();
        for b in 0..2 {
            let first = r * 20 + i64::from(b) * 10;
            let batch = nested_batch(first, 10);
            let kinds = vec![ChangeType::Insert; 10];
            let offset = lake.offsets.entry(b).or_default();
            let rb = make_changelog_batch(&batch, &kinds, *offset, 1_000).unwrap();
            *offset += 10;
            let ctx = writer_context(&lake.table, b, None, &lake.config);
            let mut w = IcebergWriter::open(&ctx, &*lake.storage).unwrap();
            w.write(rb).unwrap();
            payloads.push(w.complete().unwrap().payload);
        }
        let mut c = lake.committer(&*lake.storage);
        let base = tiered_base(&c);
        c.commit(
            &to_committable(&payloads).unwrap(),
            &[(FLUSS_OFFSETS_PROPERTY.into(), format!("/offsets/{r}"))],
            base,
        )
        .unwrap();
    }
    let s = &*lake.storage;
    let bucket_of = |e: &ManifestEntry| match e.file.partition[0] {
        Some(PartitionValue::Int(b)) => b,
        ref other => panic!("partition {other:?}"),
    };
    // Per bucket: its rows in `__offset` order, and its metrics summed by field id.
    let by_bucket = |snap: &Snapshot| {
        let mut files: BTreeMap<i32, Vec<ManifestEntry>> = BTreeMap::new();
        for e in live(s, snap, FileContent::Data) {
            files.entry(bucket_of(&e)).or_default().push(e);
        }
        files
            .into_iter()
            .map(|(b, entries)| {
                let batches: Vec<RecordBatch> = entries
                    .iter()
                    .flat_map(|e| read_all(s, &rel(&e.file.file_path)).unwrap())
                    .collect();
                let rows = concat_batches(&batches[0].schema(), &batches).unwrap();
                let offsets = rows
                    .column_by_name("__offset")
                    .unwrap()
                    .as_primitive::<Int64Type>()
                    .clone();
                let mut order: Vec<u32> = (0..rows.num_rows() as u32).collect();
                order.sort_by_key(|i| offsets.value(*i as usize));
                let rows = take_record_batch(&rows, &UInt32Array::from(order)).unwrap();
                let mut counts: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
                for e in &entries {
                    for (id, n) in &e.file.value_counts {
                        counts.entry(*id).or_default().0 += n;
                    }
                    for (id, n) in &e.file.null_value_counts {
                        counts.entry(*id).or_default().1 += n;
                    }
                }
                (b, (entries.len(), rows, counts))
            })
            .collect::<BTreeMap<_, _>>()
    };
    let before = by_bucket(&current(s));
    assert!(before.values().all(|(files, _, _)| *files == 4));
    let report = lake.maintain(true, false);
    assert_eq!(request_report(&report), (8, 2, 1, false));
    let after = by_bucket(&current(s));
    let schema = loaded(s).metadata.current_schema().unwrap();
    let point = schema.field("point").unwrap();
    let IcebergType::Struct(point_fields) = &point.ty else {
        panic!("point is a struct")
    };
    let IcebergType::List(tags) = &schema.field("tags").unwrap().ty else {
        panic!("tags is a list")
    };
    for (b, (files, rows, counts)) in &after {
        let (_, rows_before, counts_before) = &before[b];
        assert_eq!(*files, 1, "bucket {b}");
        assert_eq!(rows, rows_before, "bucket {b}: rows");
        assert_eq!(counts, counts_before, "bucket {b}: value and null counts");
        for f in point_fields {
            assert_eq!(counts[&f.id].0, 40, "bucket {b}: {} is counted", f.name);
        }
        assert!(!counts.contains_key(&point.id) && !counts.contains_key(&tags.element_id));
    }
}

#[test]
fn primary_key_deletes_are_applied_and_later_ones_still_apply() {
    use ChangeType::*;
    let mut lake = Lake::pk(2, &[]);
    let mut model: BTreeMap<i32, String> = BTreeMap::new();
    let apply = |lake: &mut Lake,
                 model: &mut BTreeMap<i32, String>,
                 changes: &[(ChangeType, i32, &str)]| {
        for (k, id, name) in changes {
            match k {
                Insert | UpdateAfter => {
                    model.insert(*id, name.to_string());
                }
                Delete => {
                    model.remove(id);
                }
                _ => {}
            }
        }
        lake.round(changes)
    };
    apply(
        &mut lake,
        &mut model,
        &[
            (Insert, 1, "a"),
            (Insert, 2, "b"),
            (Insert, 3, "c"),
            (Insert, 4, "d"),
        ],
    );
    // An update within the round (position delete) and across rounds (equality delete).
    apply(
        &mut lake,
        &mut model,
        &[
            (Insert, 5, "e"),
            (UpdateBefore, 5, "e"),
            (UpdateAfter, 5, "e2"),
            (UpdateBefore, 1, "a"),
            (UpdateAfter, 1, "a2"),
        ],
    );
    apply(
        &mut lake,
        &mut model,
        &[
            (Delete, 2, "b"),
            (Insert, 6, "f"),
            (UpdateBefore, 3, "c"),
            (UpdateAfter, 3, "c2"),
        ],
    );
    apply(
        &mut lake,
        &mut model,
        &[
            (UpdateBefore, 4, "d"),
            (UpdateAfter, 4, "d2"),
            (Insert, 7, "g"),
            (Insert, 8, "h"),
        ],
    );
    let names = |rows: &[Row]| -> BTreeMap<i32, String> {
        rows.iter().map(|r| (r.0, r.1.clone())).collect()
    };
    let s = lake.storage.clone();
    let start = current(&s);
    assert_eq!(names(&rows_at(&s, &start)), model);
    let deletes_before = entries(&s, &start)
        .iter()
        .filter(|e| e.is_live() && e.file.content != FileContent::Data)
        .count();
    assert!(deletes_before >= 3, "{deletes_before}");
    let before = all_rows(&s);

    let report = lake.maintain(true, false);
    assert_eq!(request_report(&report), (7, 2, 1, false));
    let replace = current(&s);
    assert_maintenance_snapshot(&s, &replace);
    assert_eq!(rows_at(&s, &replace), before[&start.snapshot_id]);
    assert_eq!(live(&s, &replace, FileContent::Data).len(), 2);
    // Every delete applied to rewritten files only: all dangling now, dropped.
    assert_eq!(
        entries(&s, &replace)
            .iter()
            .filter(|e| e.is_live() && e.file.content != FileContent::Data)
            .count(),
        0
    );
    assert!(summary_of(&replace, "removed-delete-files").is_some());
    for (id, rows) in &before {
        assert_eq!(&all_rows(&s)[id], rows, "time travel to {id}");
    }
    // Updates after the compaction: their equality deletes (a higher sequence number than
    // the rewritten files') still apply to the rewritten rows.
    apply(
        &mut lake,
        &mut model,
        &[
            (UpdateBefore, 1, "a2"),
            (UpdateAfter, 1, "a3"),
            (Delete, 6, "f"),
            (Delete, 8, "h"),
        ],
    );
    assert_eq!(names(&rows_at(&s, &current(&s))), model);
    // A second compaction applies them and drops them in turn.
    apply(
        &mut lake,
        &mut model,
        &[(Insert, 9, "i"), (Insert, 10, "j")],
    );
    lake.maintain(true, false);
    let again = current(&s);
    assert_eq!(
        summary_of(&again, COMMIT_USER),
        Some(MAINTENANCE_COMMIT_USER)
    );
    assert_eq!(names(&rows_at(&s, &again)), model);
    assert!(unreferenced(&s).is_empty());
}

// ---- races ------------------------------------------------------------------------------

#[test]
fn a_race_with_a_tiering_round_is_retried_and_one_with_another_compaction_abandons() {
    let mut lake = Lake::pk(1, &[]);
    for r in 0..4 {
        lake.round(&[
            (ChangeType::Insert, r, "x"),
            (ChangeType::Insert, r + 10, "y"),
        ]);
    }
    lake.round(&[(ChangeType::Delete, 0, "x")]);
    let inner = lake.storage.clone();
    let start = current(&inner);
    // A tiering round lands while the compaction commits: compatible, retried on it (its
    // equality delete of key 1 still applies to the rewritten file).
    let rival_lake = std::cell::RefCell::new(Lake {
        storage: inner.clone(),
        table: lake.table.clone(),
        config: lake.config.clone(),
        offsets: lake.offsets.clone(),
    });
    let racing = RacingStorage::new(
        &inner,
        |p| p.starts_with("metadata/v"),
        || {
            rival_lake
                .borrow_mut()
                .round(&[(ChangeType::Delete, 1, "x"), (ChangeType::Insert, 20, "z")]);
        },
    );
    let report = lake.maintain_on(&racing, true, false).unwrap();
    assert_eq!(request_report(&report), (4, 1, 1, false));
    let replace = current(&inner);
    assert_eq!(snapshots(&inner).len(), 7);
    assert_ne!(
        replace.parent_snapshot_id,
        Some(start.snapshot_id),
        "rebased"
    );
    let ids: Vec<i32> = rows_at(&inner, &replace).iter().map(|r| r.0).collect();
    assert_eq!(ids, [2, 3, 10, 11, 12, 13, 20]);
    assert!(unreferenced(&inner).is_empty());

    // Two compactions race for the same files: the loser abandons and deletes what it wrote.
    for r in 0..3 {
        lake.round(&[(ChangeType::Insert, 30 + r, "w")]);
    }
    let before = rows_at(&inner, &current(&inner));
    let rival_config = lake.plugin_config();
    let racing = RacingStorage::new(
        &inner,
        |p| p.starts_with("metadata/v"),
        || {
            let request = MaintenanceRequest {
                expire_snapshots: false,
                compact: true,
                keep_since: None,
                deadline_millis: i64::MAX,
            };
            let r = maintain_at(&*inner, &rival_config, &request, &|| 0).unwrap();
            assert_eq!(r.committed_snapshots.len(), 1);
        },
    );
    let snapshots_before = snapshots(&inner).len();
    let report = lake.maintain_on(&racing, true, false).unwrap();
    assert_eq!(request_report(&report), (0, 0, 0, true), "abandoned");
    assert_eq!(
        snapshots(&inner).len(),
        snapshots_before + 1,
        "the rival's only"
    );
    assert_eq!(rows_at(&inner, &current(&inner)), before);
    assert!(
        unreferenced(&inner).is_empty(),
        "{:?}",
        unreferenced(&inner)
    );
}

/// Commits a position delete of row 0 of `data_file` through the tiering committer.
fn delete_first_row_of(lake: &Lake, storage: &MemoryStorage, data_file: &DataFile) {
    let m = loaded(storage).metadata;
    let schema = m.current_schema().unwrap();
    let target = SplitTarget {
        layout: TableLayout::of_table_rows(&schema),
        spec: m.default_spec().unwrap(),
        partition: data_file.partition.clone(),
        location: "/wh/db/t".into(),
        dir: "data/rival".into(),
        bucket: 0,
        parquet: Default::default(),
        file_counter: Default::default(),
        operation_id: "rival".into(),
    };
    let files =
        write_position_deletes(storage, &target, vec![(data_file.file_path.clone(), 0)]).unwrap();
    let mut c = lake.committer(storage);
    let base = tiered_base(&c);
    let payload = WritePayload { files }.encode().unwrap();
    c.commit(&to_committable(&[payload]).unwrap(), &[], base)
        .unwrap();
}

#[test]
fn a_concurrent_position_delete_of_a_rewritten_file_abandons_the_rewrite() {
    let mut lake = Lake::log(1, &[]);
    for r in 0..3 {
        lake.inserts(r * 10..r * 10 + 3);
    }
    let inner = lake.storage.clone();
    let victim = live(&inner, &current(&inner), FileContent::Data)[0]
        .file
        .clone();
    let racing = RacingStorage::new(
        &inner,
        |p| p.starts_with("metadata/v"),
        || delete_first_row_of(&lake, &inner, &victim),
    );
    let report = lake.maintain_on(&racing, true, false).unwrap();
    assert_eq!(request_report(&report), (0, 0, 0, true));
    let head = current(&inner);
    assert_eq!(summary_of(&head, COMMIT_USER), Some(FLUSS_COMMIT_USER));
    assert_eq!(rows_at(&inner, &head).len(), 8, "the rival's delete holds");
    assert!(
        unreferenced(&inner).is_empty(),
        "{:?}",
        unreferenced(&inner)
    );
    // The next call plans on the new head and applies the delete.
    let report = lake.maintain(true, false);
    assert_eq!(request_report(&report), (3, 1, 1, false));
    assert_eq!(rows_at(&inner, &current(&inner)).len(), 8);
    assert_eq!(
        live(&inner, &current(&inner), FileContent::PositionDeletes).len(),
        0
    );
}

// ---- bounds, expiry ---------------------------------------------------------------------

#[test]
fn input_and_deadline_bounds_leave_work_for_later_calls() {
    let mut lake = Lake::log(3, &[]);
    for r in 0..4 {
        lake.inserts(r * 10..r * 10 + 9);
    }
    let s = lake.storage.clone();
    let file_size = live(&s, &current(&s), FileContent::Data)[0]
        .file
        .file_size_in_bytes;
    // The deadline passed: nothing started.
    let request = MaintenanceRequest {
        expire_snapshots: false,
        compact: true,
        keep_since: None,
        deadline_millis: 10,
    };
    let r = maintain_at(&*s, &lake.plugin_config(), &request, &|| 20).unwrap();
    assert_eq!(request_report(&r), (0, 0, 0, true));
    // Room for about one bucket's files per call.
    let budget = (file_size * 5).to_string();
    let budget: &'static str = Box::leak(budget.into_boxed_str());
    lake.config
        .push(("maintenance.compaction.max-input-bytes", budget));
    let before = rows_at(&s, &current(&s));
    let mut calls = 0;
    loop {
        let r = lake.maintain(true, false);
        calls += 1;
        assert!(r.files_compacted <= 5, "{r:?}");
        if !r.more_to_do {
            break;
        }
        assert!(calls < 10);
    }
    assert!(calls >= 3, "{calls} calls");
    assert_eq!(live(&s, &current(&s), FileContent::Data).len(), 3);
    assert_eq!(rows_at(&s, &current(&s)), before);
    assert!(unreferenced(&s).is_empty());
}

#[test]
fn deletes_over_the_bound_are_refused_without_leftovers_and_expiry_still_runs() {
    let mut lake = Lake::pk(1, &[("maintenance.compaction.max-delete-bytes", "10")]);
    lake.round(&[(ChangeType::Insert, 1, "a"), (ChangeType::Insert, 2, "b")]);
    lake.round(&[(ChangeType::Insert, 3, "c")]);
    lake.round(&[(ChangeType::Delete, 1, "a"), (ChangeType::Delete, 2, "b")]);
    lake.round(&[(ChangeType::Insert, 4, "d")]);
    let s = lake.storage.clone();
    let e = lake.maintain_on(&*s, true, true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(
        e.message()
            .contains("maintenance.compaction.max-delete-bytes"),
        "{e}"
    );
    assert_eq!(snapshots(&s).len(), 1, "expiry ran");
    assert!(unreferenced(&s).is_empty(), "{:?}", unreferenced(&s));
}

#[test]
fn expiry_after_compaction_deletes_the_replaced_files() {
    let mut lake = Lake::log(1, &[]);
    for r in 0..4 {
        lake.inserts(r * 10..r * 10 + 2);
    }
    let s = lake.storage.clone();
    let old: Vec<String> = live(&s, &current(&s), FileContent::Data)
        .iter()
        .map(|e| rel(&e.file.file_path))
        .collect();
    let report = lake.maintain(true, false);
    assert_eq!(report.files_compacted, 4);
    // Kept while a snapshot uses them (time travel).
    assert!(old.iter().all(|p| s.head(p).unwrap().is_some()));
    lake.inserts(100..101);
    let rows = rows_at(&s, &current(&s));
    let report = lake.maintain(false, true);
    assert_eq!(report.snapshots_expired, 5);
    assert!(
        old.iter().all(|p| s.head(p).unwrap().is_none()),
        "replaced files deleted"
    );
    assert_eq!(snapshots(&s).len(), 1);
    assert_eq!(rows_at(&s, &current(&s)), rows);
    assert!(unreferenced(&s).is_empty(), "{:?}", unreferenced(&s));
}

#[test]
fn a_failed_delete_of_a_replaced_file_does_not_stop_expiry_cleanup() {
    let mut lake = Lake::log(1, &[]);
    for r in 0..4 {
        lake.inserts(r * 10..r * 10 + 2);
    }
    let s = lake.storage.clone();
    let old: Vec<String> = live(&s, &current(&s), FileContent::Data)
        .iter()
        .map(|e| rel(&e.file.file_path))
        .collect();
    assert_eq!(lake.maintain(true, false).files_compacted, 4);
    lake.inserts(100..101);
    let rows = rows_at(&s, &current(&s));
    let stuck = old[1].clone();
    let failing = crate::expire::tests::FailingDeletes::new(&s, |p| p == stuck);
    let report = lake.maintain_on(&failing, false, true).unwrap();
    assert_eq!(*failing.failed.borrow(), std::slice::from_ref(&stuck));
    assert_eq!(report.snapshots_expired, 5);
    // The other replaced files, the manifests and manifest lists only the expired snapshots
    // used went all the same.
    for p in old.iter().filter(|p| **p != stuck) {
        assert!(s.head(p).unwrap().is_none(), "{p} left behind");
    }
    assert_eq!(snapshots(&s).len(), 1);
    assert_eq!(rows_at(&s, &current(&s)), rows);
    assert_eq!(unreferenced(&s), std::slice::from_ref(&stuck));
    // As in Java, no metadata names it any more: a later expiry does not find it, it is an
    // orphan for orphan-file removal.
    let report = lake.maintain(false, true);
    assert_eq!((report.snapshots_expired, report.files_deleted), (0, 0));
    assert_eq!(unreferenced(&s), std::slice::from_ref(&stuck));
}

#[test]
fn expiry_keeps_what_a_rolled_back_snapshot_still_uses() {
    let mut lake = Lake::log(1, &[]);
    for r in 0..5 {
        lake.inserts(r * 10..r * 10 + 2);
    }
    let s = lake.storage.clone();
    let all = snapshots(&s);
    // Roll main back one snapshot (as Iceberg's `rollback_to_snapshot` does): the last one
    // stays in the metadata, off main's line.
    let l = loaded(&s);
    let mut json: serde_json::Value =
        serde_json::from_slice(&l.metadata.to_bytes().unwrap()).unwrap();
    json["current-snapshot-id"] = all[3].snapshot_id.into();
    json["refs"]["main"]["snapshot-id"] = all[3].snapshot_id.into();
    let rolled_back =
        crate::metadata::TableMetadata::parse(&serde_json::to_vec(&json).unwrap()).unwrap();
    hadoop_tables::publish(&*s, Some(l.version), &rolled_back).unwrap();
    let off_line = rows_at(&s, &all[4]);
    // The compaction's replace snapshot lists none of the older manifests.
    assert_eq!(lake.maintain(true, false).files_compacted, 4);
    let rows = rows_at(&s, &current(&s));
    let report = lake.maintain(false, true);
    assert_eq!(report.snapshots_expired, 4);
    let left: Vec<i64> = snapshots(&s).iter().map(|x| x.snapshot_id).collect();
    assert_eq!(left, [all[4].snapshot_id, current(&s).snapshot_id]);
    assert_eq!(rows_at(&s, &current(&s)), rows);
    assert_eq!(
        rows_at(&s, &all[4]),
        off_line,
        "the rolled-back snapshot reads whole"
    );
    assert!(unreferenced(&s).is_empty(), "{:?}", unreferenced(&s));
}

/// Lost acknowledgements of the final put of Iceberg's commits: a tiering round (its manifests
/// merged on commit), a compaction (rewrite) and an expiry. The store applies the put of the
/// next metadata version but the plugin sees an I/O error or "already exists" (the store's
/// own retry got 412): each commit is recognised as published, nothing it references is
/// deleted, no round is stored twice, and every snapshot reads as the model says.
#[test]
fn lost_acknowledgements_of_commits_are_recognised_as_published() {
    use fluss_lake_guest_sdk::testing::{LostAck, LostAckStorage};
    for how in [LostAck::Io, LostAck::AlreadyExists] {
        let mut lake = Lake::pk(1, &[("commit.manifest.min-count-to-merge", "2")]);
        for r in 0..4 {
            lake.round(&[
                (ChangeType::Insert, r, "x"),
                (ChangeType::Insert, r + 10, "y"),
            ]);
        }
        let inner = lake.storage.clone();
        let next_version = || {
            let v = loaded(&inner).version + 1;
            hadoop_tables::metadata_path(v)
        };

        // A tiering round.
        let path = next_version();
        let lossy = LostAckStorage::new(&*inner, |p| p == path, how);
        let before = snapshots(&inner).len();
        lake.round_into(
            &lossy,
            &[(ChangeType::Delete, 0, "x"), (ChangeType::Insert, 20, "z")],
        );
        assert_eq!(lossy.lost(), Some(path.clone()), "{how:?}");
        assert_eq!(
            snapshots(&inner).len(),
            before + 1,
            "one snapshot ({how:?})"
        );
        let ids: Vec<i32> = rows_at(&inner, &current(&inner))
            .iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(ids, [1, 2, 3, 10, 11, 12, 13, 20], "{how:?}");
        let c = lake.committer(&*inner);
        let missing = c.get_missing_lake_snapshot(None).unwrap().unwrap();
        assert_eq!(missing.snapshot_id, current(&inner).snapshot_id);
        assert!(unreferenced(&inner).is_empty(), "{how:?}");

        // A compaction, then (after one more round, so the files the compaction replaced are
        // used by expired snapshots only) an expiry of everything before the newest.
        for maintenance in ["compaction", "expiry"] {
            if maintenance == "expiry" {
                lake.round(&[(ChangeType::Insert, 30, "w")]);
            }
            let rows = rows_at(&inner, &current(&inner));
            let path = next_version();
            let lossy = LostAckStorage::new(&*inner, |p| p == path, how);
            let (compact, expire) = (maintenance == "compaction", maintenance == "expiry");
            let report = lake.maintain_on(&lossy, compact, expire).unwrap();
            assert_eq!(lossy.lost(), Some(path.clone()), "{maintenance} {how:?}");
            if compact {
                assert_eq!(report.committed_snapshots.len(), 1, "{report:?}");
                assert_eq!(current(&inner).snapshot_id, report.committed_snapshots[0]);
            } else {
                assert!(report.snapshots_expired > 0, "{report:?}");
                assert_eq!(snapshots(&inner).len(), 1, "{how:?}");
            }
            assert_eq!(
                rows_at(&inner, &current(&inner)),
                rows,
                "{maintenance} {how:?}"
            );
            for snap in snapshots(&inner) {
                rows_at(&inner, &snap);
            }
            assert!(
                unreferenced(&inner).is_empty(),
                "{maintenance} {how:?} {:?}",
                unreferenced(&inner)
            );
        }
    }
}

/// When neither the put of a compaction's metadata nor reading it back answers, whether the
/// rewrite was published cannot be told: the call fails and its new data files stay.
#[test]
fn an_unknown_compaction_outcome_keeps_its_new_files() {
    use fluss_lake_guest_sdk::testing::{LostAck, LostAckStorage};
    let mut lake = Lake::log(1, &[]);
    for r in 0..4 {
        lake.inserts(r * 10..r * 10 + 3);
    }
    let inner = lake.storage.clone();
    let path = hadoop_tables::metadata_path(loaded(&inner).version + 1);
    let lossy = LostAckStorage::new(&*inner, |p| p == path, LostAck::Unreadable);
    let files_before = inner.list("data").unwrap().len();
    let e = lake.maintain_on(&lossy, true, false).unwrap_err();
    assert!(
        e.message()
            .contains(fluss_lake_guest_sdk::commit::UNKNOWN_OUTCOME),
        "{e}"
    );
    assert!(
        inner.list("data").unwrap().len() > files_before,
        "the rewrite's new files are kept"
    );
}

/// Faults at random (I/O errors, lost acknowledgements) in every storage call of tiering
/// rounds, compactions, manifest merges and expiries, replayable by seed: after each seed
/// every snapshot the table lists reads, and the one Fluss registered holds every registered
/// round's rows exactly once.
#[test]
fn random_faults_never_lose_or_duplicate_a_row() {
    use fluss_lake_guest_sdk::testing::{
        FAULT_RUN_SEEDS, FaultRunFormat, FaultRunTotals, FaultyStorage, fault_run, id_name_table,
    };
    let config = pairs(&[
        ("warehouse", "/wh"),
        ("history.expire.max-snapshot-age-ms", "1"),
        ("history.expire.min-snapshots-to-keep", "2"),
        ("commit.manifest.min-count-to-merge", "2"),
        ("write.metadata.delete-after-commit.enabled", "true"),
    ]);
    let mut totals = FaultRunTotals::default();
    for seed in FAULT_RUN_SEEDS {
        let inner = MemoryStorage::new();
        let table = id_name_table();
        let format = FaultRunFormat {
            table: table.clone(),
            config: config.clone(),
            create: &|s| create_table_if_missing(s, &table, &config).map(|_| ()),
            maintain: &|s, r| maintain_at(s, &config, r, &fluss_lake_guest_sdk::clock::now_millis),
            snapshots: &|_| snapshots(&inner).iter().map(|s| s.snapshot_id).collect(),
            rows: &|_, id| {
                let snap = snapshots(&inner)
                    .into_iter()
                    .find(|s| s.snapshot_id == id)
                    .unwrap();
                let mut ids: Vec<i32> = rows_at(&inner, &snap).iter().map(|r| r.0).collect();
                ids.sort_unstable();
                ids
            },
        };
        let faulty = FaultyStorage::new(&inner, seed, 40);
        let report = fault_run::<IcebergWriter<_>, IcebergCommitter<_>>(&format, &faulty, 10);
        totals.add(&report);
    }
    totals.assert_exercised();
}

/// A bucket rebuilt from its KV snapshot after a log gap (the `bucket-replace` export): an
/// `overwrite` snapshot in which the bucket's partition holds only the round's files (its data
/// and equality deletes of the parent are `DELETED`, never merged with the image, which would
/// duplicate every key); the files removed are those of the base actually published on, so a
/// compaction that wins the race is replaced too; the other bucket keeps its files.
#[test]
fn a_replaced_bucket_holds_only_its_snapshot_image_even_after_a_racing_compaction() {
    use ChangeType::*;
    use fluss_lake_guest_sdk::replace::ReplaceSet;
    use fluss_lake_guest_sdk::wit::BucketRef;
    let mut lake = Lake::pk(2, &[]);
    for r in 0..4 {
        lake.inserts(r * 10..r * 10 + 10);
    }
    lake.round(&[
        (Delete, 2, ""),
        (UpdateBefore, 6, ""),
        (UpdateAfter, 6, "u6"),
        (Delete, 3, ""),
    ]);
    let before = rows_at(&lake.storage, &current(&lake.storage));
    // The gap: keys 4 and 8 deleted, 10 updated, 50 inserted, none of it reached the lake.
    // Bucket 0's image (even keys) as a KV snapshot holds it: INSERTs at no offset.
    let image: Vec<(i32, String)> = before
        .iter()
        .filter(|r| r.0 % 2 == 0 && r.0 != 4 && r.0 != 8)
        .map(|r| {
            (
                r.0,
                if r.0 == 10 {
                    "u10".to_string()
                } else {
                    r.1.clone()
                },
            )
        })
        .chain([(50, "n50".to_string())])
        .collect();
    let batch = id_name_batch(image.iter().map(|r| (r.0, r.1.as_str())));
    let inner = lake.storage.clone();
    let mut w =
        IcebergWriter::open(&writer_context(&lake.table, 0, None, &lake.config), &*inner).unwrap();
    w.write(make_changelog_batch(&batch, &vec![Insert; image.len()], -1, -1).unwrap())
        .unwrap();
    let committable = to_committable(&[w.complete().unwrap().payload]).unwrap();
    let base = tiered_base(&lake.committer(&*inner));

    // A compaction lands just before the replace publishes.
    let racing = RacingStorage::new(
        &inner,
        |p| p.starts_with("metadata/v"),
        || {
            let report = lake.maintain_on(&*inner, true, false).unwrap();
            assert_eq!(report.committed_snapshots.len(), 1, "{report:?}");
        },
    );
    let replace = ReplaceSet::new(
        &lake.table,
        &[BucketRef {
            partition_id: None,
            partition_name: None,
            bucket: 0,
            num_buckets: 2,
        }],
    )
    .unwrap();
    let mut c = lake.committer(&racing);
    c.check_replace().unwrap();
    let res = c
        .commit_replacing(
            &committable,
            &[(FLUSS_OFFSETS_PROPERTY.into(), "/offsets/gap".into())],
            base,
            &replace,
        )
        .unwrap();
    let snap = current(&inner);
    assert_eq!(snap.snapshot_id, res.snapshot_id);
    assert_eq!(summary_of(&snap, "operation"), Some("overwrite"));
    assert_eq!(summary_of(&snap, "replace-partitions"), Some("true"));
    assert_eq!(summary_of(&snap, COMMIT_USER), Some(FLUSS_COMMIT_USER));
    let parent = snapshots(&inner)
        .into_iter()
        .find(|s| Some(s.snapshot_id) == snap.parent_snapshot_id)
        .unwrap();
    assert_eq!(
        summary_of(&parent, COMMIT_USER),
        Some(MAINTENANCE_COMMIT_USER),
        "rebased on the compaction"
    );
    let ids_names = |rows: Vec<Row>| -> BTreeMap<i32, String> {
        rows.into_iter().map(|r| (r.0, r.1)).collect()
    };
    let mut expected = ids_names(before.into_iter().filter(|r| r.0 % 2 == 1).collect());
    expected.extend(image.iter().cloned());
    let got = rows_at(&inner, &snap);
    assert_eq!(got.len(), expected.len(), "no key twice: {got:?}");
    assert_eq!(ids_names(got), expected);
    // Bucket 0's partition holds the image's data file alone, no delete file.
    let bucket0 = |e: &ManifestEntry| {
        e.file.partition.last().cloned().flatten() == Some(crate::partition::PartitionValue::Int(0))
    };
    let live0: Vec<FileContent> = entries(&inner, &snap)
        .into_iter()
        .filter(|e| e.is_live() && bucket0(e))
        .map(|e| e.file.content)
        .collect();
    assert_eq!(live0, [FileContent::Data]);
    assert_eq!(
        summary_of(&snap, "total-records").and_then(|v| v.parse::<usize>().ok()),
        Some(
            entries(&inner, &snap)
                .iter()
                .filter(|e| e.is_live() && e.file.content == FileContent::Data)
                .map(|e| e.file.record_count as usize)
                .sum()
        )
    );
    // A tiering round since the base: the replace is refused, not retried.
    let mut c = lake.committer(&*inner);
    let err = c
        .commit_replacing(&to_committable(&[]).unwrap(), &[], base, &replace)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    // A log table has no bucket to replace.
    let log = Lake::log(2, &[]);
    let err = log.committer(&*log.storage).check_replace().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
}
