//! Seeded fault runs (the SDK's [`fault_run`]): tiering rounds of a bucketed append table,
//! each followed by snapshot expiry and compaction, under random I/O errors and lost
//! acknowledgements; read back with a reader written here from the manifests.

use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use fluss_lake_guest_sdk::parquet_read::read_all;
use fluss_lake_guest_sdk::storage::{MemoryStorage, Storage};
use fluss_lake_guest_sdk::testing::{
    FAULT_RUN_SEEDS, FaultRunFormat, FaultRunTotals, FaultyStorage, fault_run, log_table, pairs,
};

use crate::catalog::create_table_if_missing;
use crate::committer::PaimonCommitter;
use crate::manifest::{FileKind, read_manifest, read_manifest_list};
use crate::schema::load_latest_schema;
use crate::snapshot::{earliest_snapshot_id, latest_snapshot_id, read_snapshot};
use crate::table::{Partition, bucket_dir};
use crate::writer::PaimonWriter;

/// The snapshots the table lists.
fn snapshot_ids(s: &dyn Storage) -> Vec<i64> {
    let (Some(first), Some(last)) = (
        earliest_snapshot_id(s).unwrap(),
        latest_snapshot_id(s).unwrap(),
    ) else {
        return Vec::new();
    };
    (first..=last)
        .filter(|id| read_snapshot(s, *id).unwrap().is_some())
        .collect()
}

/// The ids of snapshot `id`'s rows, sorted: every live data file read whole.
fn ids_at(s: &dyn Storage, id: i64) -> Vec<i32> {
    let snapshot = read_snapshot(s, id).unwrap().unwrap();
    let schema = load_latest_schema(s).unwrap().unwrap();
    let mut live: Vec<String> = Vec::new();
    let mut deleted: HashSet<String> = HashSet::new();
    for list in [&snapshot.base_manifest_list, &snapshot.delta_manifest_list] {
        for m in read_manifest_list(s, list).unwrap() {
            for e in read_manifest(s, &m.file_name).unwrap() {
                let partition = Partition::from_row(&schema, &e.partition).unwrap();
                let path = format!("{}/{}", bucket_dir(&partition, e.bucket), e.file.file_name);
                match e.kind {
                    FileKind::Add => live.push(path),
                    FileKind::Delete => {
                        deleted.insert(path);
                    }
                }
            }
        }
    }
    let mut ids = Vec::new();
    for path in live.iter().filter(|p| !deleted.contains(*p)) {
        for batch in read_all(s, path).unwrap_or_else(|e| panic!("{path} of snapshot {id}: {e}")) {
            let column = batch
                .column_by_name("id")
                .unwrap()
                .as_primitive::<Int32Type>();
            ids.extend(column.values().iter().copied());
        }
    }
    ids.sort_unstable();
    ids
}

#[test]
fn random_faults_never_lose_or_duplicate_a_row() {
    let table = log_table(
        "db",
        "t",
        &[("id", "INT", false), ("name", "STRING", true)],
        &["id"],
        1,
        &[],
    );
    let config = pairs(&[
        ("snapshot.num-retained.min", "1"),
        ("snapshot.num-retained.max", "3"),
        ("compaction.min.file-num", "3"),
    ]);
    let mut totals = FaultRunTotals::default();
    for seed in FAULT_RUN_SEEDS {
        let inner = MemoryStorage::new();
        let format = FaultRunFormat {
            table: table.clone(),
            config: config.clone(),
            create: &|s| create_table_if_missing(s, &table, &config).map(|_| ()),
            maintain: &|s, r| crate::maintenance::maintain(s, &config, r),
            snapshots: &snapshot_ids,
            rows: &ids_at,
        };
        let faulty = FaultyStorage::new(&inner, seed, 40);
        let report = fault_run::<PaimonWriter<_>, PaimonCommitter<_>>(&format, &faulty, 10);
        totals.add(&report);
    }
    totals.assert_exercised();
}
