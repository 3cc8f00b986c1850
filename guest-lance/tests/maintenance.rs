//! Lance maintenance natively (no wasm): rounds tiered through the plugin's own writer and
//! committer, then compaction (`Rewrite` versions) and version cleanup through the committer's
//! `maintain`, checked with the plugin's own reader and with pylance (Lance's reader).

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use arrow_array::{BooleanArray, Int32Array, RecordBatch, UInt32Array};
use common::{COLUMNS, lance_read, python, try_lance_read, write_round};
use fluss_lake_guest_sdk::plugin::FormatCommitter;
use fluss_lake_guest_sdk::storage::{LocalStorage, MemoryStorage, Storage};
use fluss_lake_guest_sdk::testing::{RacingStorage, committer_context, log_table};
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest, TableInfo};
use fluss_lake_guest_sdk::{ErrorKind, Result};
use fluss_lake_lance::catalog::{LAYOUT, create_table_if_missing};
use fluss_lake_lance::cleanup::referenced_files;
use fluss_lake_lance::committer::LanceCommitter;
use fluss_lake_lance::compact::MAINTENANCE_COMMIT_USER;
use fluss_lake_lance::file_reader::LanceFileReader;
use fluss_lake_lance::proto::lance::encodings as pbenc;
use fluss_lake_lance::proto::lance::file::v2 as pbfile2;
use fluss_lake_lance::proto::lance::table::Manifest;
use fluss_lake_lance::{deletion, versions};
use prost::Message;
use serde_json::json;

const NO_DEADLINE: i64 = i64::MAX;

fn table() -> TableInfo {
    log_table("db", "t", COLUMNS, &[], 2, &[])
}

/// A new dataset in a temporary warehouse: (warehouse, dataset directory).
fn local_dataset(t: &TableInfo) -> (PathBuf, PathBuf) {
    let wh = std::env::temp_dir().join(format!("lance-maint-{}", uuid::Uuid::new_v4()));
    let dir = wh.join(LAYOUT.location(t).unwrap());
    assert!(create_table_if_missing(&LocalStorage::new(&dir), t).unwrap());
    (wh, dir)
}

fn maintain(
    storage: &dyn Storage,
    config: &[(&str, &str)],
    expire: bool,
    compact: bool,
    keep_since: Option<i64>,
) -> Result<MaintenanceReport> {
    let config = fluss_lake_guest_sdk::testing::pairs(config);
    fluss_lake_lance::maintenance::maintain(
        storage,
        &config,
        &MaintenanceRequest {
            expire_snapshots: expire,
            compact,
            keep_since,
            deadline_millis: NO_DEADLINE,
        },
    )
}

fn manifest(storage: &dyn Storage, version: u64) -> Manifest {
    let naming = versions::latest(storage).unwrap().unwrap().1;
    versions::read(storage, version, naming).unwrap()
}

/// Every live row of `version`, read with the plugin's own reader, sorted by id.
fn rows(storage: &dyn Storage, version: u64) -> RecordBatch {
    let m = manifest(storage, version);
    let schema = fluss_lake_lance::schema::arrow_schema(&m.fields).unwrap();
    let mut batches = Vec::new();
    for f in &m.fragments {
        let mut r = LanceFileReader::open(storage, &f.files[0], &m.fields).unwrap();
        let deleted = deletion::read(storage, f).unwrap();
        let mut row = 0u64;
        while let Some(columns) = r.next_batch(1000).unwrap() {
            let b = RecordBatch::try_new(schema.clone(), columns).unwrap();
            let n = b.num_rows() as u64;
            let keep: BooleanArray = (row..row + n)
                .map(|i| Some(!deleted.is_deleted(i)))
                .collect();
            batches.push(arrow_select::filter::filter_record_batch(&b, &keep).unwrap());
            row += n;
        }
    }
    let all = arrow_select::concat::concat_batches(&schema, &batches).unwrap();
    let ids = all.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
    let mut order: Vec<u32> = (0..all.num_rows() as u32).collect();
    order.sort_by_key(|i| ids.value(*i as usize));
    let order = UInt32Array::from(order);
    let columns = all
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), &order, None).unwrap())
        .collect();
    RecordBatch::try_new(schema, columns).unwrap()
}

/// Paths under `dir`.
fn files(storage: &dyn Storage, dir: &str) -> BTreeSet<String> {
    storage
        .list(dir)
        .unwrap()
        .into_iter()
        .map(|m| m.path)
        .collect()
}

/// Data, deletion and transaction files some manifest references.
fn referenced(storage: &dyn Storage) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (v, naming) in versions::all(storage).unwrap() {
        let raw = storage.get(&naming.path(v)).unwrap();
        let m = versions::decode_manifest(&raw).unwrap();
        out.extend(referenced_files(&raw, &m).unwrap());
    }
    out
}

/// Files no manifest references (what a failed commit would leave behind).
fn orphans(storage: &dyn Storage) -> Vec<String> {
    let refs = referenced(storage);
    ["data", "_deletions", "_transactions"]
        .iter()
        .flat_map(|d| files(storage, d))
        .filter(|p| !refs.contains(p))
        .collect()
}

fn version_list(storage: &dyn Storage) -> Vec<u64> {
    versions::all(storage)
        .unwrap()
        .into_iter()
        .map(|(v, _)| v)
        .collect()
}

fn pause() {
    // Cleanup compares file times with manifest times in milliseconds.
    std::thread::sleep(Duration::from_millis(20));
}

#[test]
fn compaction_keeps_every_row_and_cleanup_deletes_only_unreferenced_files() {
    let t = table();
    let (wh, dir) = local_dataset(&t);
    let s = LocalStorage::new(&dir);
    let d = dir.display().to_string();
    for round in 0..4 {
        assert_eq!(write_round(&s, &t, round, 2, 50), round as i64 + 2);
        pause();
    }
    let before = rows(&s, 5);
    let pylance_before = lance_read(&["rows", &d, "--version", "5"]);
    assert_eq!(manifest(&s, 5).fragments.len(), 8);
    assert_eq!(files(&s, "data").len(), 8);

    let report = maintain(&s, &[], false, true, Some(5)).unwrap();
    assert_eq!(report.committed_snapshots, vec![6]);
    assert_eq!((report.files_compacted, report.files_written), (8, 1));
    let m6 = manifest(&s, 6);
    assert_eq!(m6.fragments.len(), 1, "8 fragments became 1");
    assert_eq!(
        m6.fragments[0].id, 8,
        "the new fragment's id follows max_fragment_id"
    );
    assert_eq!(m6.max_fragment_id, Some(8));
    assert_eq!(m6.fragments[0].physical_rows, 400);
    assert_eq!(
        rows(&s, 6),
        before,
        "the plugin's reader reads the same rows"
    );
    assert_eq!(
        lance_read(&["rows", &d]),
        pylance_before,
        "pylance reads the same rows"
    );
    let tx = &lance_read(&["transaction", &d, "6"])[0];
    assert_eq!(tx["operation"], "Rewrite", "{tx}");
    assert!(tx.to_string().contains(MAINTENANCE_COMMIT_USER), "{tx}");
    eprintln!("{:?}", lance_read(&["info", &d]));
    // Fluss's recovery still finds the last tiering version, not the rewrite.
    let c = LanceCommitter::open(committer_context(&t, &[]), &s).unwrap();
    assert_eq!(
        c.get_missing_lake_snapshot(Some(4))
            .unwrap()
            .unwrap()
            .snapshot_id,
        5
    );
    assert!(c.get_missing_lake_snapshot(Some(5)).unwrap().is_none());
    // Nothing more to compact: one fragment is left alone.
    let again = maintain(&s, &[], false, true, Some(5)).unwrap();
    assert!(again.committed_snapshots.is_empty());

    // Time travel to a version before the rewrite still works, and tiering goes on on top.
    assert_eq!(
        lance_read(&["count", &d, "--version", "3"]),
        [json!({"count": 200})]
    );
    pause();
    assert_eq!(write_round(&s, &t, 4, 2, 50), 7);
    assert_eq!(lance_read(&["count", &d]), [json!({"count": 500})]);
    assert_eq!(
        manifest(&s, 7)
            .fragments
            .iter()
            .map(|f| f.id)
            .collect::<Vec<_>>(),
        [8, 9, 10]
    );
    let latest = rows(&s, 7);
    pause();

    // Cleanup keeps Fluss's version 5 and everything newer whatever the retention says.
    let retain_one = [
        ("lance.auto_cleanup.retain_versions", "1"),
        ("lance.auto_cleanup.older_than", "0s"),
    ];
    let report = maintain(&s, &retain_one, true, false, Some(5)).unwrap();
    assert_eq!(report.snapshots_expired, 4, "versions 1-4");
    assert_eq!(version_list(&s), [5, 6, 7]);
    assert_eq!(
        files(&s, "data").len(),
        8 + 1 + 2,
        "version 5 still needs the old files"
    );
    assert!(orphans(&s).is_empty(), "{:?}", orphans(&s));
    assert_eq!(lance_read(&["rows", &d, "--version", "5"]), pylance_before);
    assert!(
        try_lance_read(&["count", &d, "--version", "3"]).is_err(),
        "version 3 was cleaned up"
    );

    // Once Fluss moves on, the rewritten fragments' files go: only version 7's are left.
    let report = maintain(&s, &retain_one, true, false, Some(7)).unwrap();
    assert_eq!(report.snapshots_expired, 2);
    assert_eq!(version_list(&s), [7]);
    let left = files(&s, "data");
    assert_eq!(left.len(), 3);
    let needed: BTreeSet<String> = referenced(&s)
        .into_iter()
        .filter(|p| p.starts_with("data/"))
        .collect();
    assert_eq!(left, needed, "exactly the files version 7 references");
    assert_eq!(files(&s, "_transactions").len(), 1);
    assert_eq!(rows(&s, 7), latest);
    assert_eq!(lance_read(&["count", &d]), [json!({"count": 500})]);
    eprintln!(
        "data files: 8 after 4 rounds, 1 after compaction (+8 kept for time travel), {} at the end",
        left.len()
    );
    std::fs::remove_dir_all(&wh).ok();
}

#[test]
fn cleanup_honours_older_than_and_orphan_age() {
    let t = table();
    let (wh, dir) = local_dataset(&t);
    let s = LocalStorage::new(&dir);
    for round in 0..3 {
        write_round(&s, &t, round, 1, 10);
        pause();
    }
    // Default (14 days from the dataset's config): nothing is old enough.
    let r = maintain(&s, &[], true, false, None).unwrap();
    assert_eq!(r.snapshots_expired, 0);
    // An orphan data file (a failed commit's) goes only once it is 7 days old.
    let fresh = dir.join("data/fresh-orphan.lance");
    let old = dir.join("data/old-orphan.lance");
    std::fs::write(&fresh, b"x").unwrap();
    std::fs::write(&old, b"x").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(8 * 86_400))
        .unwrap();
    pause();
    let r = maintain(
        &s,
        &[("lance.auto_cleanup.older_than", "0s")],
        true,
        false,
        None,
    )
    .unwrap();
    assert_eq!(
        r.snapshots_expired, 3,
        "all but the latest, which tiering committed"
    );
    assert_eq!(version_list(&s), [4]);
    assert!(!old.exists(), "a 7-day-old orphan is deleted");
    assert!(fresh.exists(), "a fresh orphan may be a commit in progress");
    assert_eq!(rows(&s, 4).num_rows(), 30);
    std::fs::remove_dir_all(&wh).ok();
}

/// Deletes rows with pylance, compacts, and checks that both readers see the same rows.
fn delete_then_compact(s: &LocalStorage, d: &str, predicate: &str) -> BTreeSet<String> {
    python(
        "import lance, sys\nlance.dataset(sys.argv[1]).delete(sys.argv[2])",
        &[d, predicate],
    );
    let head = versions::latest(s).unwrap().unwrap().0;
    let deletion_files = files(s, "_deletions");
    let before = lance_read(&["rows", d]);
    let expected = rows(s, head);
    let report = maintain(s, &[], false, true, None).unwrap();
    assert_eq!(report.committed_snapshots, vec![head as i64 + 1]);
    let m = manifest(s, head + 1);
    assert_eq!(m.fragments.len(), 1);
    assert!(
        m.fragments[0].deletion_file.is_none(),
        "deletions are materialized"
    );
    assert_eq!(
        m.reader_feature_flags & 1,
        0,
        "no deletion files left in this version"
    );
    assert_eq!(m.fragments[0].physical_rows as usize, expected.num_rows());
    assert_eq!(rows(s, head + 1), expected);
    assert_eq!(lance_read(&["rows", d]), before);
    deletion_files
}

#[test]
fn deletions_written_by_pylance_are_applied() {
    let t = table();
    let (wh, dir) = local_dataset(&t);
    let s = LocalStorage::new(&dir);
    let d = dir.display().to_string();
    for round in 0..20 {
        write_round(&s, &t, round, 1, 999);
    }
    // Few deletions in each of 20 fragments: Arrow deletion files; 20 fragments become 1.
    let sparse = delete_then_compact(&s, &d, "id % 7 = 0");
    assert!(
        sparse.iter().all(|p| p.ends_with(".arrow")) && sparse.len() == 20,
        "{sparse:?}"
    );
    // Most rows of the one fragment: a Roaring bitmap; the fragment is rewritten on its own.
    let dense = delete_then_compact(&s, &d, "id >= 2000 AND id < 17000");
    assert!(dense.iter().any(|p| p.ends_with(".bin")), "{dense:?}");
    assert_eq!(lance_read(&["count", &d]), [json!({"count": 4281})]);
    std::fs::remove_dir_all(&wh).ok();
}

#[test]
fn a_race_lost_to_an_append_is_retried_and_one_lost_to_a_rewrite_leaves_no_files() {
    let t = table();
    let storage = MemoryStorage::new();
    assert!(create_table_if_missing(&storage, &t).unwrap());
    for round in 0..3 {
        write_round(&storage, &t, round, 2, 5);
    }
    // A tiering round commits version 5 while compaction publishes: compaction retries on it.
    let racing = RacingStorage::new(
        &storage,
        |p| p.starts_with(versions::VERSIONS_DIR),
        || {
            assert_eq!(write_round(&storage, &t, 3, 2, 5), 5);
        },
    );
    let r = maintain(&racing, &[], false, true, None).unwrap();
    assert_eq!(r.committed_snapshots, vec![6]);
    let m = manifest(&storage, 6);
    let ids: Vec<u64> = m.fragments.iter().map(|f| f.id).collect();
    assert_eq!(
        ids,
        [6, 7, 8],
        "the round's two fragments, then the rewrite of six"
    );
    assert_eq!(rows(&storage, 6).num_rows(), 40);
    let tx = versions::read_transaction(&storage, &m).unwrap().unwrap();
    assert_eq!(tx.read_version, 4, "planned on version 4");
    assert!(orphans(&storage).is_empty());

    // Another compaction rewrites the same fragments first: this one is abandoned (planned
    // again next call), its files deleted.
    write_round(&storage, &t, 4, 2, 5);
    let racing = RacingStorage::new(
        &storage,
        |p| p.starts_with(versions::VERSIONS_DIR),
        || {
            maintain(&storage, &[], false, true, None).unwrap();
        },
    );
    let r = maintain(&racing, &[], false, true, None).unwrap();
    assert!(r.committed_snapshots.is_empty() && r.more_to_do, "{r:?}");
    assert_eq!(
        versions::latest(&storage).unwrap().unwrap().0,
        8,
        "only the rival committed"
    );
    assert!(orphans(&storage).is_empty(), "{:?}", orphans(&storage));
    assert_eq!(rows(&storage, 8).num_rows(), 50);

    // A tiering round losing its race to a compaction retries on it: the rewrite is not a
    // tiering version, so the round's base check passes.
    write_round(&storage, &t, 5, 2, 5);
    let racing = RacingStorage::new(
        &storage,
        |p| p.starts_with(versions::VERSIONS_DIR),
        || {
            let r = maintain(&storage, &[], false, true, None).unwrap();
            assert_eq!(r.committed_snapshots, vec![10]);
        },
    );
    assert_eq!(write_round(&racing, &t, 6, 2, 5), 11);
    assert_eq!(rows(&storage, 11).num_rows(), 70);
    let c = LanceCommitter::open(committer_context(&t, &[]), &storage).unwrap();
    let found = c.get_missing_lake_snapshot(None).unwrap().unwrap();
    assert_eq!(found.snapshot_id, 11);
    assert!(
        found
            .properties
            .contains(&("fluss-offsets".to_string(), "/o/6".to_string()))
    );
}

/// Re-encodes a data file's column 0, page 0 with `encoding` (rewriting its metadata).
fn with_page_encoding(bytes: &[u8], encoding: pbenc::ArrayEncoding) -> Vec<u8> {
    let n = bytes.len();
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let (meta_start, cmo, gbo) = (
        u64_at(n - 40) as usize,
        u64_at(n - 32) as usize,
        u64_at(n - 24) as usize,
    );
    let columns = u32::from_le_bytes(bytes[n - 12..n - 8].try_into().unwrap()) as usize;
    let mut out = bytes[..meta_start].to_vec();
    let mut table = Vec::new();
    for c in 0..columns {
        let (pos, len) = (
            u64_at(cmo + 16 * c) as usize,
            u64_at(cmo + 16 * c + 8) as usize,
        );
        let mut meta = pbfile2::ColumnMetadata::decode(&bytes[pos..pos + len]).unwrap();
        if c == 0 {
            let any = prost_types::Any {
                type_url: "/lance.encodings.ArrayEncoding".into(),
                value: encoding.encode_to_vec(),
            };
            meta.pages[0].encoding = Some(pbfile2::Encoding {
                location: Some(pbfile2::encoding::Location::Direct(
                    pbfile2::DirectEncoding {
                        encoding: any.encode_to_vec(),
                    },
                )),
            });
        }
        let body = meta.encode_to_vec();
        table.push((out.len() as u64, body.len() as u64));
        out.extend_from_slice(&body);
    }
    let cmo_table = out.len() as u64;
    for (pos, len) in table {
        out.extend_from_slice(&pos.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
    }
    let gbo_table = out.len() as u64;
    out.extend_from_slice(&bytes[gbo..gbo + 16]);
    out.extend_from_slice(&(meta_start as u64).to_le_bytes());
    out.extend_from_slice(&cmo_table.to_le_bytes());
    out.extend_from_slice(&gbo_table.to_le_bytes());
    out.extend_from_slice(&bytes[n - 16..]);
    out
}

fn snapshot(storage: &MemoryStorage) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<(String, Vec<u8>)> = storage
        .list("")
        .unwrap()
        .into_iter()
        .map(|m| (m.path.clone(), storage.get(&m.path).unwrap()))
        .collect();
    all.sort();
    all
}

#[test]
fn files_this_reader_cannot_decode_are_refused_untouched() {
    let t = table();
    let storage = MemoryStorage::new();
    assert!(create_table_if_missing(&storage, &t).unwrap());
    for round in 0..3 {
        write_round(&storage, &t, round, 1, 5);
    }
    let m = manifest(&storage, 4);
    let path = format!("data/{}", m.fragments[1].files[0].path);
    let original = storage.get(&path).unwrap();
    // The helper rewrites a file's metadata faithfully: with the same encoding, same bytes.
    assert_eq!(
        with_page_encoding(&original, page_encoding(&original)),
        original
    );

    let dictionary = pbenc::ArrayEncoding {
        array_encoding: Some(pbenc::array_encoding::ArrayEncoding::Dictionary(
            Box::default(),
        )),
    };
    let mut newer_version = original.clone();
    let n = newer_version.len();
    newer_version[n - 6..n - 4].copy_from_slice(&4u16.to_le_bytes()); // on-disk 0.4: Lance 2.1
    for (file, what) in [
        (with_page_encoding(&original, dictionary), "dictionary"),
        (newer_version, "on-disk file version 0.4"),
    ] {
        storage.put(&path, &file).unwrap();
        // The manifest records the file's new size, as a writer of it would have.
        let mut m4 = manifest(&storage, 4);
        m4.fragments[1].files[0].file_size_bytes = file.len() as u64;
        let naming = versions::latest(&storage).unwrap().unwrap().1;
        storage
            .put(&naming.path(4), &versions::encode_manifest(&m4, None))
            .unwrap();
        let before = snapshot(&storage);
        let e = maintain(&storage, &[], false, true, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.to_string().contains(what), "{e}");
        assert_eq!(snapshot(&storage), before, "nothing written or deleted");
    }
}

/// Column 0, page 0's encoding in a file this plugin wrote.
fn page_encoding(bytes: &[u8]) -> pbenc::ArrayEncoding {
    let n = bytes.len();
    let cmo = u64::from_le_bytes(bytes[n - 32..n - 24].try_into().unwrap()) as usize;
    let pos = u64::from_le_bytes(bytes[cmo..cmo + 8].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(bytes[cmo + 8..cmo + 16].try_into().unwrap()) as usize;
    let meta = pbfile2::ColumnMetadata::decode(&bytes[pos..pos + len]).unwrap();
    let Some(pbfile2::encoding::Location::Direct(d)) =
        meta.pages[0].encoding.as_ref().unwrap().location.as_ref()
    else {
        panic!("direct encoding")
    };
    let any = prost_types::Any::decode(d.encoding.as_slice()).unwrap();
    pbenc::ArrayEncoding::decode(any.value.as_slice()).unwrap()
}

#[test]
fn the_deadline_and_the_source_budget_bound_a_call() {
    let t = table();
    let storage = MemoryStorage::new();
    assert!(create_table_if_missing(&storage, &t).unwrap());
    for round in 0..6 {
        write_round(&storage, &t, round, 1, 5);
    }
    let data_before = files(&storage, "data");
    // A passed deadline: nothing done, more to do.
    let r = fluss_lake_lance::maintenance::maintain(
        &storage,
        &[],
        &MaintenanceRequest {
            expire_snapshots: true,
            compact: true,
            keep_since: None,
            deadline_millis: 0,
        },
    )
    .unwrap();
    assert!(r.more_to_do && r.committed_snapshots.is_empty());
    assert_eq!(files(&storage, "data"), data_before);
    // At most three fragments per call: two calls compact six into two.
    let budget = [("lance.compaction.max_source_fragments", "3")];
    let r = maintain(&storage, &budget, false, true, None).unwrap();
    assert!(r.more_to_do);
    assert_eq!(r.files_compacted, 3);
    let r = maintain(&storage, &budget, false, true, None).unwrap();
    assert_eq!(r.files_compacted, 3);
    let head = versions::latest(&storage).unwrap().unwrap().0;
    assert_eq!(manifest(&storage, head).fragments.len(), 2);
    assert_eq!(rows(&storage, head).num_rows(), 30);
}

/// pylance 14 writes strings of a 2.0 dataset dictionary-encoded: a real file of another
/// writer, which compaction refuses without writing or deleting anything.
#[test]
fn a_fragment_pylance_appended_is_refused_untouched() {
    let t = table();
    let (wh, dir) = local_dataset(&t);
    let s = LocalStorage::new(&dir);
    let d = dir.display().to_string();
    for round in 0..2 {
        write_round(&s, &t, round, 2, 50);
    }
    lance_read(&["append-copy", &d, "100"]);
    let listing = |s: &LocalStorage| {
        s.list("")
            .unwrap()
            .into_iter()
            .map(|m| (m.path, m.size, m.last_modified))
            .collect::<BTreeSet<_>>()
    };
    let before = listing(&s);
    let e = maintain(&s, &[], false, true, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("dictionary page encoding"), "{e}");
    assert_eq!(listing(&s), before);
    assert_eq!(lance_read(&["count", &d]), [json!({"count": 300})]);
    std::fs::remove_dir_all(&wh).ok();
}

/// Faults at random (I/O errors, lost acknowledgements) in every storage call of tiering
/// rounds, compactions and version cleanups, replayable by seed: after each seed every
/// version the dataset lists reads, and the one Fluss registered holds every registered
/// round's rows exactly once.
#[test]
fn random_faults_never_lose_or_duplicate_a_row() {
    use fluss_lake_guest_sdk::testing::{
        FAULT_RUN_SEEDS, FaultRunFormat, FaultRunTotals, FaultyStorage, fault_run, pairs,
    };
    use fluss_lake_lance::writer::LanceWriter;
    let t = log_table(
        "db",
        "t",
        &[("id", "INT", false), ("name", "STRING", true)],
        &[],
        1,
        &[],
    );
    let config = pairs(&[
        ("lance.auto_cleanup.older_than", "0s"),
        ("lance.auto_cleanup.retain_versions", "2"),
    ]);
    let mut totals = FaultRunTotals::default();
    for seed in FAULT_RUN_SEEDS {
        let inner = MemoryStorage::new();
        let format = FaultRunFormat {
            table: t.clone(),
            config: config.clone(),
            create: &|s| create_table_if_missing(s, &t).map(|_| ()),
            // `older_than = 0s` expires versions written before the call's millisecond (as
            // Lance's cleanup, strictly older): on a fast machine a round and the maintenance
            // after it share one, so a little time passes first.
            maintain: &|s, r| {
                std::thread::sleep(std::time::Duration::from_millis(2));
                fluss_lake_lance::maintenance::maintain(s, &config, r)
            },
            snapshots: &|s| {
                versions::all(s)
                    .unwrap()
                    .into_iter()
                    .map(|(v, _)| v as i64)
                    .collect()
            },
            rows: &|s, v| {
                let batch = rows(s, v as u64);
                let ids = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int32Array>()
                    .unwrap();
                ids.values().to_vec()
            },
        };
        let faulty = FaultyStorage::new(&inner, seed, 40);
        let report = fault_run::<LanceWriter<_>, LanceCommitter<_>>(&format, &faulty, 10);
        totals.add(&report);
    }
    totals.assert_exercised();
}

/// The store applies the put of a tiering version's and of a compaction's manifest but the
/// answer is lost (an I/O error, or "already exists" to the store's own retry): each is
/// recognised as published, no file it references is deleted and nothing is committed twice.
/// When the outcome cannot be told, the compaction fails and keeps its new files.
#[test]
fn lost_acknowledgements_are_recognised_as_published() {
    use fluss_lake_guest_sdk::testing::{LostAck, LostAckStorage};
    let t = table();
    for how in [LostAck::Io, LostAck::AlreadyExists] {
        let storage = MemoryStorage::new();
        assert!(create_table_if_missing(&storage, &t).unwrap());
        for round in 0..4 {
            write_round(&storage, &t, round, 2, 5);
        }
        let next = |s: &MemoryStorage| {
            let (v, naming) = versions::latest(s).unwrap().unwrap();
            naming.path(v + 1)
        };
        let path = next(&storage);
        let lossy = LostAckStorage::new(&storage, |p| p == path, how);
        assert_eq!(write_round(&lossy, &t, 4, 2, 5), 6, "{how:?}");
        assert!(lossy.lost().is_some());
        assert_eq!(rows(&storage, 6).num_rows(), 50, "{how:?}");

        let path = next(&storage);
        let lossy = LostAckStorage::new(&storage, |p| p == path, how);
        let r = maintain(&lossy, &[], false, true, None).unwrap();
        assert!(lossy.lost().is_some());
        assert_eq!(r.committed_snapshots, vec![7], "{how:?}");
        assert_eq!(rows(&storage, 7).num_rows(), 50, "{how:?}");
        assert!(orphans(&storage).is_empty(), "{:?}", orphans(&storage));
    }
    let storage = MemoryStorage::new();
    assert!(create_table_if_missing(&storage, &t).unwrap());
    for round in 0..4 {
        write_round(&storage, &t, round, 2, 5);
    }
    let data_before = files(&storage, "data").len();
    let (v, naming) = versions::latest(&storage).unwrap().unwrap();
    let path = naming.path(v + 1);
    let lossy = LostAckStorage::new(&storage, |p| p == path, LostAck::Unreadable);
    let e = maintain(&lossy, &[], false, true, None).unwrap_err();
    assert!(
        e.message()
            .contains(fluss_lake_guest_sdk::commit::UNKNOWN_OUTCOME),
        "{e}"
    );
    assert!(
        files(&storage, "data").len() > data_before,
        "new files kept"
    );
}
