//! The native data plane (contract 0.3.8) in the host's plugin runtime: a split written
//! through a plugin's `batch-writer`, whose rows stay in the host and whose Parquet files the
//! host encodes as the plugin lays them out, gives the same files and the same statistics as
//! the same split written through `writer`, where the plugin encodes its files itself in
//! WebAssembly. For a Paimon primary-key table (0.3.9) the plugin takes only the keys, keeps
//! the batches in the host and has it encode the rows it picks, in its order, with the
//! sequence numbers and row kinds it computes; an Iceberg primary-key table's writer takes the
//! keys and change types and has the host encode the data and equality-delete rows it routes.
//! The e2e suite reads the tables the native path writes with every reader.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Int32Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use fluss_lake_e2e::all_types::{ALL_TYPES, all_types};
use fluss_lake_e2e::component::{ComponentDriver, table};
use fluss_lake_e2e::host::plugin;
use fluss_lake_e2e::unique_name;

/// Every Parquet file under `dir`: its name and bytes, ordered by bytes.
fn parquet_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                out.push((name, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// The files an Iceberg write result describes, each as its fields.
fn iceberg_files(payload: &[u8]) -> Vec<BTreeMap<String, serde_json::Value>> {
    let v: serde_json::Value = serde_json::from_slice(payload).unwrap();
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| serde_json::from_value(f.clone()).unwrap())
        .collect()
}

/// The files' bytes, in order.
fn contents(files: &[(String, Vec<u8>)]) -> Vec<&[u8]> {
    files.iter().map(|(_, b)| b.as_slice()).collect()
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

/// What one path wrote.
struct Written {
    /// The write result's payload, records and file bytes.
    payload: Vec<u8>,
    records: u64,
    file_bytes: u64,
    /// The Parquet files in the table, ordered by bytes ([`parquet_files`]).
    files: Vec<(String, Vec<u8>)>,
    /// Bytes of linear memory the writer's instance grew to.
    memory: usize,
}

/// Both paths of one format: the guest's, then the native one's.
async fn both_paths(format: &str) -> [Written; 2] {
    let t = table(format, "log_all_types", ALL_TYPES, &[], &[], 1, &[]);
    let changes: Vec<_> = batches().into_iter().map(|b| (b, Vec::new())).collect();
    both_paths_of(format, &t, &changes).await
}

/// Both paths of one format writing `changes` into table `t`.
async fn both_paths_of(
    format: &str,
    t: &fluss_lake_host::plugin::wit::TableInfo,
    changes: &[(RecordBatch, Vec<u8>)],
) -> [Written; 2] {
    let mut out = Vec::new();
    for native in [false, true] {
        let warehouse = std::env::temp_dir().join(unique_name(&format!("dp-{format}")));
        let driver = ComponentDriver::load(&plugin(format), &warehouse).await;
        driver.create(t).await;
        let (result, memory) = driver
            .write_changes(t, changes, 1_700_000_000_000, native)
            .await;
        out.push(Written {
            payload: result.payload,
            records: result.record_count,
            file_bytes: result.file_bytes,
            files: parquet_files(&driver.table_dir(t).await),
            memory,
        });
        let _ = std::fs::remove_dir_all(&warehouse);
    }
    let Ok(both) = out.try_into() else {
        unreachable!("one result per path")
    };
    both
}

#[tokio::test]
async fn paimon_log_files_are_the_same_bytes_whichever_side_encodes_them() {
    let [guest, native] = both_paths("paimon").await;
    assert_eq!(native.records, 200, "records");
    assert_eq!(
        (guest.records, guest.file_bytes),
        (native.records, native.file_bytes)
    );
    assert_eq!(native.files.len(), 1);
    assert!(
        contents(&native.files) == contents(&guest.files),
        "the native file differs from the guest's"
    );
}

#[tokio::test]
async fn iceberg_log_files_and_their_metrics_are_the_same_whichever_side_encodes_them() {
    let [guest, native] = both_paths("iceberg").await;
    assert_eq!(native.records, 200, "records");
    assert_eq!(
        (guest.records, guest.file_bytes),
        (native.records, native.file_bytes)
    );
    assert!(
        contents(&native.files) == contents(&guest.files),
        "the native file differs from the guest's"
    );
    // The write result describes each file with its metrics (counts, bounds): the same,
    // except for the file's name and location.
    let described = |payload: &[u8]| -> Vec<BTreeMap<String, serde_json::Value>> {
        iceberg_files(payload)
            .into_iter()
            .map(|mut f| {
                f.remove("file_path");
                f
            })
            .collect()
    };
    let (g, n) = (described(&guest.payload), described(&native.payload));
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
    assert_eq!(native.records, records as u64, "records");
    assert_eq!(
        (guest.records, guest.file_bytes),
        (native.records, native.file_bytes)
    );
    assert_eq!(native.files.len(), 2, "a data file and a changelog file");
    assert!(
        contents(&native.files) == contents(&guest.files),
        "the native files differ from the guest's"
    );
}

/// An Iceberg primary-key bucket (Fluss's `DeltaTaskWriter` semantics): the data files and
/// the equality-delete files the host encodes from the rows the plugin routes by key and
/// change type are the same bytes, with the same metrics, as the files the plugin encodes
/// itself; the position deletes (paths and positions the plugin computes, which it encodes
/// either way) delete the same rows.
#[tokio::test]
async fn iceberg_primary_key_data_and_delete_files_are_the_same_whichever_side_encodes_them() {
    const DELETE: u8 = 4;
    let t = table(
        "iceberg",
        "pk_all_types",
        ALL_TYPES,
        &["id"],
        &["id"],
        1,
        &[],
    );
    // Deletes of keys this round never wrote: equality deletes.
    let mut changes = changes();
    let older: Vec<i32> = (100..110).collect();
    changes.push((all_types(&older, None).0, vec![DELETE; older.len()]));
    let records: usize = changes.iter().map(|(b, _)| b.num_rows()).sum();
    let [guest, native] = both_paths_of("iceberg", &t, &changes).await;
    assert_eq!(native.records, records as u64, "records");
    assert_eq!(guest.records, native.records, "records");
    // Each file the write result describes: its content, its bytes and its metrics but its
    // name; of position deletes, which hold the data files' paths, neither bytes nor size.
    type Described = (String, Option<Vec<u8>>, BTreeMap<String, serde_json::Value>);
    let described = |w: &Written| -> Vec<Described> {
        let mut out: Vec<Described> = iceberg_files(&w.payload)
            .into_iter()
            .map(|mut f| {
                let content = f["content"].as_str().unwrap().to_string();
                let path = f.remove("file_path").unwrap();
                let name = path.as_str().unwrap().rsplit('/').next().unwrap();
                let bytes = w.files.iter().find(|(n, _)| n == name).unwrap().1.clone();
                if content != "PositionDeletes" {
                    return (content, Some(bytes), f);
                }
                // Its paths are the data files', whose names differ by a random id.
                f.remove("referenced_data_file");
                f.remove("file_size_in_bytes");
                for bounds in ["lower_bounds", "upper_bounds"] {
                    // The bounds of `file_path` (field 2147483546) are paths.
                    let kept: Vec<serde_json::Value> = f[bounds]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|b| b[0] != 2147483546)
                        .cloned()
                        .collect();
                    f.insert(bounds.to_string(), kept.into());
                }
                (content, None, f)
            })
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        out
    };
    let (g, n) = (described(&guest), described(&native));
    let kinds: Vec<&str> = n.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        kinds,
        ["Data", "EqualityDeletes", "PositionDeletes"],
        "a data file, an equality-delete file and a position-delete file"
    );
    assert!(g == n, "the native files differ from the guest's");
}

/// The rows of an Iceberg primary-key split never enter the plugin: through `batch-writer`
/// it takes their keys and change types, and the host encodes the rows, so 32 MiB of changes
/// leave its linear memory under a third of what the same split takes through `writer`, where
/// the plugin encodes them itself (10 and 46 MiB when written).
#[tokio::test]
async fn an_iceberg_primary_key_splits_rows_stay_out_of_the_plugin() {
    const INSERT: u8 = 1;
    const BATCHES: i32 = 8;
    const ROWS: i32 = 8192;
    const PAYLOAD: usize = 512;
    let t = table(
        "iceberg",
        "pk_wide",
        &[("id", "INT", false), ("payload", "STRING", true)],
        &["id"],
        &["id"],
        1,
        &[],
    );
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("payload", DataType::Utf8, true),
    ]));
    // Letters and digits from a xorshift generator: about 5 bits of entropy per byte.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = || -> String {
        (0..PAYLOAD)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[(state % 36) as usize])
            })
            .collect()
    };
    let changes: Vec<(RecordBatch, Vec<u8>)> = (0..BATCHES)
        .map(|b| {
            let ids: Vec<i32> = (b * ROWS..(b + 1) * ROWS).collect();
            let payloads: Vec<String> = ids.iter().map(|_| noise()).collect();
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int32Array::from(ids)),
                    Arc::new(StringArray::from(payloads)),
                ],
            )
            .unwrap();
            (batch, vec![INSERT; ROWS as usize])
        })
        .collect();
    let [guest, native] = both_paths_of("iceberg", &t, &changes).await;
    for path in [&guest, &native] {
        assert_eq!(path.records, (BATCHES * ROWS) as u64, "records");
    }
    let (guest, native) = (guest.memory, native.memory);
    assert!(
        native * 3 < guest,
        "linear memory: {native} bytes through batch-writer, {guest} through writer"
    );
}
