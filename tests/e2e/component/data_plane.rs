//! The native data plane (contract 0.3.8) in the host's plugin runtime: a split written
//! through a plugin's `batch-writer`, whose rows stay in the host and whose Parquet files the
//! host encodes as the plugin lays them out, gives the same files and the same statistics as
//! the same split written through `writer`, where the plugin encodes its files itself in
//! WebAssembly. For a primary-key table (0.3.9) the plugin takes only the keys, keeps the
//! batches in the host and has it encode the rows it picks, in its order, with the sequence
//! numbers and row kinds it computes. The e2e suite reads the tables the native path writes
//! with every reader.

use std::collections::BTreeMap;
use std::path::Path;

use arrow::array::RecordBatch;
use fluss_lake_e2e::all_types::{ALL_TYPES, all_types};
use fluss_lake_e2e::component::{ComponentDriver, table};
use fluss_lake_e2e::host::plugin;
use fluss_lake_e2e::unique_name;

/// Every Parquet file under `dir`, by its content: (size, bytes).
fn parquet_files(dir: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(std::fs::read(&p).unwrap());
            }
        }
    }
    out.sort();
    out
}

fn batches() -> Vec<RecordBatch> {
    // Nulls, both signs, several batches (one data file holds them all).
    (0..4)
        .map(|k| {
            let ids: Vec<i32> = (k * 50..k * 50 + 50).collect();
            all_types(&ids, None).0
        })
        .collect()
}

/// A changelog over 80 keys in four batches: every key inserted, a third of them updated
/// (`-U`, `+U`) in later batches, every seventh deleted, some several times in one batch.
fn changes() -> Vec<(RecordBatch, Vec<u8>)> {
    const INSERT: u8 = 1;
    const UPDATE_BEFORE: u8 = 2;
    const UPDATE_AFTER: u8 = 3;
    const DELETE: u8 = 4;
    let mut out = vec![((0..80).rev().collect::<Vec<i32>>(), vec![INSERT; 80])];
    for k in 1..4 {
        let mut ids = Vec::new();
        let mut kinds = Vec::new();
        for id in (0..80).filter(|id| id % 3 == k % 3) {
            ids.extend([id, id]);
            kinds.extend([UPDATE_BEFORE, UPDATE_AFTER]);
            if id % 7 == 0 {
                ids.push(id);
                kinds.push(DELETE);
            }
        }
        out.push((ids, kinds));
    }
    out.into_iter()
        .map(|(ids, kinds)| (all_types(&ids, None).0, kinds))
        .collect()
}

/// Both paths of one format: (guest payload, guest files), (native payload, native files).
async fn both_paths(format: &str) -> [(Vec<u8>, u64, u64, Vec<Vec<u8>>); 2] {
    let t = table(format, "log_all_types", ALL_TYPES, &[], &[], 1, &[]);
    let changes: Vec<_> = batches().into_iter().map(|b| (b, Vec::new())).collect();
    both_paths_of(format, &t, &changes).await
}

/// Both paths of one format writing `changes` into table `t`.
async fn both_paths_of(
    format: &str,
    t: &fluss_lake_host::plugin::wit::TableInfo,
    changes: &[(RecordBatch, Vec<u8>)],
) -> [(Vec<u8>, u64, u64, Vec<Vec<u8>>); 2] {
    let mut out = Vec::new();
    for native in [false, true] {
        let warehouse = std::env::temp_dir().join(unique_name(&format!("dp-{format}")));
        let driver = ComponentDriver::load(&plugin(format), &warehouse).await;
        driver.create(t).await;
        let result = driver
            .write_changes(t, changes, 1_700_000_000_000, native)
            .await;
        let files = parquet_files(&driver.table_dir(t).await);
        out.push((
            result.payload,
            result.record_count,
            result.file_bytes,
            files,
        ));
        let _ = std::fs::remove_dir_all(&warehouse);
    }
    out.try_into().unwrap()
}

#[tokio::test]
async fn paimon_log_files_are_the_same_bytes_whichever_side_encodes_them() {
    let [guest, native] = both_paths("paimon").await;
    assert_eq!(native.1, 200, "records");
    assert_eq!((guest.1, guest.2), (native.1, native.2));
    assert_eq!(native.3.len(), 1);
    assert!(
        native.3 == guest.3,
        "the native file differs from the guest's"
    );
}

#[tokio::test]
async fn iceberg_log_files_and_their_metrics_are_the_same_whichever_side_encodes_them() {
    let [guest, native] = both_paths("iceberg").await;
    assert_eq!(native.1, 200, "records");
    assert_eq!((guest.1, guest.2), (native.1, native.2));
    assert!(
        native.3 == guest.3,
        "the native file differs from the guest's"
    );
    // The write result describes each file with its metrics (counts, bounds): the same,
    // except for the file's name and location.
    let described = |payload: &[u8]| -> Vec<BTreeMap<String, serde_json::Value>> {
        let v: serde_json::Value = serde_json::from_slice(payload).unwrap();
        v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let mut f: BTreeMap<String, serde_json::Value> =
                    serde_json::from_value(f.clone()).unwrap();
                f.remove("file_path");
                f
            })
            .collect()
    };
    let (g, n) = (described(&guest.0), described(&native.0));
    assert_eq!(g.len(), 1);
    assert!(
        g[0].keys().any(|k| k.contains("bound")),
        "metrics with bounds: {:?}",
        g[0].keys()
    );
    assert_eq!(g, n);
}

/// A Paimon primary-key bucket (`changelog-producer = input`, as Fluss creates them): the sorted run's data file
/// and the changelog file the host encodes from the rows the plugin picks are the same bytes as
/// the files the plugin encodes itself.
#[tokio::test]
async fn paimon_primary_key_files_are_the_same_bytes_whichever_side_encodes_them() {
    let t = table(
        "paimon",
        "pk_all_types",
        ALL_TYPES,
        &["id"],
        &["id"],
        1,
        &[],
    );
    let changes = changes();
    let records: usize = changes.iter().map(|(b, _)| b.num_rows()).sum();
    let [guest, native] = both_paths_of("paimon", &t, &changes).await;
    assert_eq!(native.1, records as u64, "records");
    assert_eq!((guest.1, guest.2), (native.1, native.2));
    assert_eq!(native.3.len(), 2, "a data file and a changelog file");
    assert!(
        native.3 == guest.3,
        "the native files differ from the guest's"
    );
}
