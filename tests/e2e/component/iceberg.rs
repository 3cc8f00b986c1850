//! The Iceberg plugin's `.wasm`, run by the host's plugin runtime against a temporary
//! warehouse (no Fluss), writes tables that independent Iceberg readers read exactly:
//! pyiceberg (every snapshot by time travel, file pruning by bounds and partition values)
//! and DuckDB's iceberg extension (equality and position deletes of primary-key tables).
//!
//! Needs `scripts/build-plugins.sh` (target/plugins/iceberg.wasm) and the Python venv.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Float64Array, Int32Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use fluss_lake_e2e::all_types::{ALL_TYPES, all_types};
use fluss_lake_e2e::component::{
    ComponentDriver, SplitInput, TS_MS, offsets_property, row_batch, sorted, table, with_system,
};
use fluss_lake_e2e::host::plugin;
use fluss_lake_e2e::iceberg::{
    iceberg_bucket, java_check, plan, read_batch, read_one, rows, snapshots,
};
use fluss_lake_e2e::unique_name;
use serde_json::{Value, json};

fn parquet_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join("data")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test]
async fn log_table_every_snapshot_reads_back_exactly() {
    let wh = std::env::temp_dir().join(unique_name("iceberg-wh"));
    let driver = ComponentDriver::load(&plugin("iceberg"), &wh).await;
    let t = table("iceberg", "log_all_types", ALL_TYPES, &[], &[], 3, &[]);
    assert!(driver.create(&t).await);
    assert!(!driver.create(&t).await, "create is idempotent");
    let dir = driver.table_dir(&t).await;

    // rounds 1 and 2 write every bucket; round 3 is empty (offsets still persist)
    let mut expected: Vec<Vec<Value>> = Vec::new();
    let mut all = Vec::new();
    let mut next_offset = [0i64; 3];
    let mut next_id = 0;
    for round in 1..=3usize {
        let mut splits = Vec::new();
        if round < 3 {
            for bucket in 0..3 {
                let n = 40 + 25 * bucket + 10 * round as i32;
                let ids: Vec<i32> = (next_id..next_id + n).collect();
                next_id += n;
                let (batch, rows) = all_types(&ids, None);
                let off = next_offset[bucket as usize];
                next_offset[bucket as usize] += n as i64;
                all.extend(with_system(rows, bucket, off));
                splits.push(SplitInput {
                    bucket,
                    partition: None,
                    // two batches per split: one boundary crossing per batch
                    batches: vec![
                        row_batch(&batch.slice(0, 10), Vec::new(), off, TS_MS),
                        row_batch(
                            &batch.slice(10, n as usize - 10),
                            Vec::new(),
                            off + 10,
                            TS_MS,
                        ),
                    ],
                });
            }
        }
        let result = driver.round(&t, splits, offsets_property(round)).await;
        assert_eq!(result.stats.record_count, Some(all.len() as i64));
        expected.push(sorted(all.clone()));
    }

    let snaps = snapshots(&dir);
    assert_eq!(snaps.len(), 3);
    for (k, s) in snaps.iter().enumerate() {
        assert_eq!(s["sequence-number"], json!(k + 1));
        assert_eq!(s["operation"], "append");
        assert_eq!(s["summary"]["commit-user"], "__fluss_lake_tiering");
        assert_eq!(
            s["summary"]["fluss-offsets"],
            json!(offsets_property(k + 1)[0].1)
        );
        assert_eq!(
            s["summary"]["total-records"],
            json!(expected[k].len().to_string())
        );
        if k > 0 {
            assert_eq!(s["parent-snapshot-id"], snaps[k - 1]["snapshot-id"]);
        }
    }
    let ids: Vec<i64> = snaps
        .iter()
        .map(|s| s["snapshot-id"].as_i64().unwrap())
        .collect();

    // time travel to every snapshot, with both readers
    let mut commands = Vec::new();
    for id in &ids {
        for reader in ["pyiceberg", "duckdb"] {
            commands.push(vec![
                "rows".to_string(),
                dir.display().to_string(),
                "--snapshot".into(),
                id.to_string(),
                "--reader".into(),
                reader.into(),
            ]);
        }
    }
    let results = read_batch(&commands);
    for (k, r) in results.into_iter().enumerate() {
        let got = sorted(r.unwrap_or_else(|e| panic!("{:?}: {e}", commands[k])));
        assert_eq!(got.len(), expected[k / 2].len(), "{:?}", commands[k]);
        assert!(got == expected[k / 2], "{:?}: rows differ", commands[k]);
    }

    // pruning: bounds exclude absent ids, partition values select one bucket's files
    let files = parquet_files(&dir).len() as i64;
    assert_eq!(files, 6, "one data file per split and round");
    let full = plan(&dir, None, None);
    assert_eq!(full["files"], json!(files));
    assert_eq!(
        plan(&dir, None, Some(("id", "=", json!(-5))))["files"],
        json!(0)
    );
    assert_eq!(
        plan(&dir, None, Some(("id", ">", json!(100_000))))["files"],
        json!(0)
    );
    let one = plan(&dir, None, Some(("id", "=", json!(5))));
    assert_eq!(
        one["files"],
        json!(1),
        "only the file whose bounds hold id 5"
    );
    let bucket1 = plan(&dir, None, Some(("__bucket", "=", json!(1))));
    assert_eq!(
        bucket1["files"],
        json!(2),
        "bucket 1's files of rounds 1 and 2"
    );
    assert_eq!(
        plan(&dir, None, Some(("name", "=", json!("zzz"))))["files"],
        json!(0),
        "string bounds prune"
    );

    // every Parquet column carries its Iceberg field id
    let schema = &read_one(&["schema", &dir.display().to_string()])[0];
    let field_ids: BTreeMap<String, i64> = schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["id"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(field_ids.len(), ALL_TYPES.len() + 3);
    assert_eq!(field_ids["__timestamp"], ALL_TYPES.len() as i64 + 3);
    let pf = parquet_files(&dir);
    let in_file = &read_one(&["parquet-field-ids", &pf[0].display().to_string()])[0];
    for f in in_file["fields"].as_array().unwrap() {
        assert_eq!(
            f["field_id"].as_i64(),
            Some(field_ids[f["name"].as_str().unwrap()]),
            "{f}"
        );
    }

    // Java Iceberg (what Fluss and the engines run) reads the same history and plans the
    // same files at every snapshot
    let java = &java_check(&[&dir])[0];
    let java_snaps = java["snapshots"].as_array().unwrap();
    assert_eq!(java_snaps.len(), 3);
    for (k, js) in java_snaps.iter().enumerate() {
        assert_eq!(js["id"].as_i64(), Some(ids[k]));
        assert_eq!(js["sequence"], json!(k + 1));
        assert_eq!(
            js["summary"]["fluss-offsets"],
            json!(offsets_property(k + 1)[0].1)
        );
        let tasks = js["tasks"].as_array().unwrap();
        let planned: i64 = tasks.iter().map(|t| t["rows"].as_i64().unwrap()).sum();
        assert_eq!(
            planned,
            expected[k].len() as i64,
            "Java plan of snapshot {}",
            k + 1
        );
        assert_eq!(tasks.len(), if k == 0 { 3 } else { 6 });
    }
    for f in java["fields"].as_array().unwrap() {
        assert_eq!(
            f["id"].as_i64(),
            Some(field_ids[f["name"].as_str().unwrap()])
        );
    }

    // recovery: the newest snapshot Fluss has not registered, by sequence number
    let missing = driver.missing_snapshot(&t, None).await.unwrap();
    assert_eq!(missing, (ids[2], Some(offsets_property(3)[0].1.clone())));
    assert_eq!(
        driver.missing_snapshot(&t, Some(ids[0])).await.unwrap().0,
        ids[2]
    );
    assert!(driver.missing_snapshot(&t, Some(ids[2])).await.is_none());
    std::fs::remove_dir_all(&wh).ok();
}

#[tokio::test]
async fn partitioned_table_with_bucket_key_uses_iceberg_bucket_partitions() {
    let wh = std::env::temp_dir().join(unique_name("iceberg-wh"));
    let driver = ComponentDriver::load(&plugin("iceberg"), &wh).await;
    let mut cols = ALL_TYPES.to_vec();
    cols.push(("dt", "STRING", true));
    let t = table(
        "iceberg",
        "log_partitioned",
        &cols,
        &[],
        &["id"],
        4,
        &["dt"],
    );
    assert!(driver.create(&t).await);
    let dir = driver.table_dir(&t).await;
    let mut expected = Vec::new();
    let mut splits = Vec::new();
    for dt in ["2026-11-28", "2026-11-29 x/y"] {
        for bucket in 0..4 {
            let ids: Vec<i32> = (0..200)
                .filter(|i| iceberg_bucket(*i as i64, 4) == bucket)
                .collect();
            let (batch, rows) = all_types(&ids, Some(("dt", dt)));
            expected.extend(with_system(rows, bucket, 0));
            splits.push(SplitInput {
                bucket,
                partition: Some(dt.to_string()),
                batches: vec![row_batch(&batch, Vec::new(), 0, TS_MS)],
            });
        }
    }
    driver.round(&t, splits, offsets_property(1)).await;
    assert_eq!(
        sorted(rows(&dir, None, "pyiceberg")),
        sorted(expected.clone())
    );
    assert_eq!(sorted(rows(&dir, None, "duckdb")), sorted(expected));
    // pyiceberg prunes by the bucket transform and the identity partition
    assert_eq!(
        plan(&dir, None, Some(("id", "=", json!(17))))["files"],
        json!(2)
    );
    assert_eq!(
        plan(&dir, None, Some(("dt", "=", json!("2026-11-29 x/y"))))["files"],
        json!(4)
    );
    let java = &java_check(&[&dir])[0];
    let tasks = java["snapshots"][0]["tasks"].as_array().unwrap();
    assert_eq!(
        tasks.len(),
        8,
        "Java plans one file per partition and bucket"
    );
    assert!(
        tasks
            .iter()
            .any(|t| t["partition"].as_str().unwrap().contains("2026-11-29 x/y")),
        "{tasks:?}"
    );
    let data = wh.join("fluss/log_partitioned/data");
    assert!(
        data.join("dt=2026-11-29+x%2Fy/id_bucket=3").is_dir(),
        "Java's partition paths"
    );
    std::fs::remove_dir_all(&wh).ok();
}

/// One change of the primary-key test: (change type byte, id, name).
type Change = (u8, i32, &'static str);
const INSERT: u8 = 1;
const UPDATE_BEFORE: u8 = 2;
const UPDATE_AFTER: u8 = 3;
const DELETE: u8 = 4;

#[tokio::test]
async fn primary_key_table_deltas_read_back_through_equality_and_position_deletes() {
    let wh = std::env::temp_dir().join(unique_name("iceberg-wh"));
    let driver = ComponentDriver::load(&plugin("iceberg"), &wh).await;
    let cols = [
        ("id", "INT", false),
        ("name", "STRING", true),
        ("score", "DOUBLE", true),
    ];
    let t = table("iceberg", "pk", &cols, &["id"], &["id"], 2, &[]);
    assert!(driver.create(&t).await);
    let dir = driver.table_dir(&t).await;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
    ]));

    let inserts: Vec<Change> = (0..20).map(|i| (INSERT, i, "v1")).collect();
    let mut round2: Vec<Change> = Vec::new();
    for i in 0..5 {
        round2.extend([(UPDATE_BEFORE, i, "v1"), (UPDATE_AFTER, i, "v2")]); // older rows: equality deletes
    }
    for i in 5..8 {
        round2.push((DELETE, i, "v1"));
    }
    round2.extend([
        (INSERT, 20, "v1"),
        (UPDATE_BEFORE, 20, "v1"), // this round's row: position delete
        (UPDATE_AFTER, 20, "v2"),
        (INSERT, 21, "v1"),
        (DELETE, 21, "v1"),
        (INSERT, 22, "v1"),
    ]);
    let round3: Vec<Change> = vec![
        (UPDATE_BEFORE, 0, "v2"),
        (UPDATE_AFTER, 0, "v3"),
        (DELETE, 20, "v2"),
        (INSERT, 5, "again"),
    ];

    let mut model: BTreeMap<i32, &str> = BTreeMap::new();
    let mut offsets = [0i64; 2];
    let mut states = Vec::new();
    for (round, changes) in [inserts, round2, round3].into_iter().enumerate() {
        let mut splits = Vec::new();
        for bucket in 0..2 {
            let mine: Vec<&Change> = changes
                .iter()
                .filter(|(_, id, _)| iceberg_bucket(*id as i64, 2) == bucket)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int32Array::from_iter_values(mine.iter().map(|c| c.1))),
                    Arc::new(StringArray::from_iter_values(mine.iter().map(|c| c.2))),
                    Arc::new(Float64Array::from_iter_values(
                        mine.iter().map(|c| c.1 as f64),
                    )),
                ],
            )
            .unwrap();
            let kinds = mine.iter().map(|c| c.0).collect();
            splits.push(SplitInput {
                bucket,
                partition: None,
                batches: vec![row_batch(&batch, kinds, offsets[bucket as usize], TS_MS)],
            });
            offsets[bucket as usize] += mine.len() as i64;
        }
        for (kind, id, name) in &changes {
            match *kind {
                INSERT | UPDATE_AFTER => {
                    model.insert(*id, name);
                }
                _ => {
                    model.remove(id);
                }
            }
        }
        driver.round(&t, splits, offsets_property(round + 1)).await;
        states.push(
            model
                .iter()
                .map(|(id, name)| json!({"id": id, "name": name, "score": *id as f64}))
                .collect::<Vec<_>>(),
        );
    }

    let snaps = snapshots(&dir);
    let ops: Vec<&str> = snaps
        .iter()
        .map(|s| s["operation"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["append", "overwrite", "overwrite"]);
    let s2 = &snaps[1]["summary"];
    assert_eq!(
        s2["added-equality-deletes"], "8",
        "5 updates + 3 deletes of older rows"
    );
    assert_eq!(
        s2["added-position-deletes"], "2",
        "the rows of 20 and 21 this round wrote"
    );
    let dir_s = dir.display().to_string();
    let mut commands = Vec::new();
    for s in &snaps {
        commands.push(vec![
            "rows".to_string(),
            dir_s.clone(),
            "--snapshot".into(),
            s["snapshot-id"].to_string(),
            "--reader".into(),
            "duckdb".into(),
            "--drop-system".into(),
        ]);
    }
    for s in &snaps[..2] {
        commands.push(vec![
            "rows".to_string(),
            dir_s.clone(),
            "--snapshot".into(),
            s["snapshot-id"].to_string(),
            "--drop-system".into(),
        ]);
    }
    let results = read_batch(&commands);
    for k in 0..3 {
        let got = results[k]
            .clone()
            .unwrap_or_else(|e| panic!("duckdb snapshot {k}: {e}"));
        assert_eq!(
            sorted(got),
            sorted(states[k].clone()),
            "DuckDB at snapshot {}",
            k + 1
        );
    }
    // pyiceberg reads the insert-only snapshot and refuses equality deletes (0.12): assert
    // that, so a pyiceberg upgrade that learns them flips this test on purpose
    assert_eq!(
        sorted(results[3].clone().unwrap()),
        sorted(states[0].clone())
    );
    let err = results[4].clone().unwrap_err();
    assert!(err.contains("equality deletes"), "{err}");

    // Java Iceberg attaches the deletes as the spec says: round 2's equality deletes to
    // round 1's files only, its position deletes to its own files.
    let java = &java_check(&[&dir])[0];
    let js = java["snapshots"].as_array().unwrap();
    assert_eq!(js.len(), 3);
    let tasks = |k: usize| js[k]["tasks"].as_array().unwrap().clone();
    assert!(
        tasks(0)
            .iter()
            .all(|t| t["equality_deletes"] == 0 && t["position_deletes"] == 0)
    );
    let round1_files: Vec<Value> = tasks(0).iter().map(|t| t["file"].clone()).collect();
    for t in tasks(1) {
        let older = round1_files.contains(&t["file"]);
        assert_eq!(t["equality_deletes"].as_i64().unwrap() > 0, older, "{t}");
    }
    assert!(
        tasks(1)
            .iter()
            .any(|t| t["position_deletes"].as_i64().unwrap() > 0)
    );
    assert_eq!(java["identifier_field_ids"], json!([1]));
    std::fs::remove_dir_all(&wh).ok();
}

/// Nested columns with nulls and empty collections at every level, over two splits of two
/// batches: pyiceberg and DuckDB read exactly the rows written, and the data files carry the
/// fresh field ids and Java's metrics (struct leaves yes, list and map contents no).
#[tokio::test]
async fn nested_columns_read_back_exactly() {
    use fluss_lake_e2e::nested::{CONTRACT_COLUMNS, as_pyiceberg_reads, component_splits};
    let wh = std::env::temp_dir().join(unique_name("iceberg-nested-wh"));
    let driver = ComponentDriver::load(&plugin("iceberg"), &wh).await;
    let t = table("iceberg", "nested", &CONTRACT_COLUMNS, &[], &[], 2, &[]);
    assert!(driver.create(&t).await);
    let dir = driver.table_dir(&t).await;
    let (splits, expected) = component_splits();
    driver.round(&t, splits, offsets_property(1)).await;
    for reader in ["pyiceberg", "duckdb"] {
        let want = match reader {
            "pyiceberg" => sorted(expected.iter().cloned().map(as_pyiceberg_reads).collect()),
            _ => sorted(expected.clone()),
        };
        let got = sorted(rows(&dir, None, reader));
        if let Some((g, w)) = got.iter().zip(&want).find(|(g, w)| g != w) {
            panic!("{reader}: the first row that differs\n got {g}\nwant {w}");
        }
        assert_eq!(got.len(), want.len(), "{reader}");
    }
}

/// A Fluss `ADD COLUMN` as Fluss 1.0's coordinator pushes it to a table with system columns
/// (0.9.1's refuses it for Iceberg, so this runs without a cluster): Java Iceberg adds the
/// nullable column before `__bucket` (`moveBefore`), with the next field id, above the
/// system columns'. The next round, whose Fluss table has the column, writes it; earlier
/// rows read it as null, and every reader reads both rounds exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_column_fluss_1_0_adds_before_the_system_columns_is_written() {
    let wh = std::env::temp_dir().join(unique_name("iceberg-add-column-wh"));
    let driver = ComponentDriver::load(&plugin("iceberg"), &wh).await;
    let before = [("id", "INT", false), ("name", "STRING", true)];
    let t0 = table("iceberg", "added", &before, &[], &[], 1, &[]);
    assert!(driver.create(&t0).await);
    let dir = driver.table_dir(&t0).await;
    let schema = |extra: bool| {
        let mut fields = vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true),
        ];
        if extra {
            fields.push(Field::new("extra", DataType::Utf8, true));
        }
        Arc::new(Schema::new(fields))
    };
    let ids = |r: std::ops::Range<i32>| Arc::new(Int32Array::from_iter_values(r));
    let names = |r: std::ops::Range<i32>| {
        Arc::new(StringArray::from_iter(r.map(|i| Some(format!("n{i}")))))
    };
    let first = RecordBatch::try_new(schema(false), vec![ids(0..40), names(0..40)]).unwrap();
    driver
        .round(
            &t0,
            vec![SplitInput {
                bucket: 0,
                partition: None,
                batches: vec![row_batch(&first, Vec::new(), 0, TS_MS)],
            }],
            offsets_property(1),
        )
        .await;

    let altered = fluss_lake_e2e::iceberg::java_alter(&dir, &["add-before-bucket:extra:string"]);
    let columns = altered["columns"].as_array().unwrap();
    let id_of = |name: &str| {
        columns
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["id"].as_i64().unwrap())
            .unwrap()
    };
    let names_now: Vec<&str> = columns
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names_now,
        ["id", "name", "extra", "__bucket", "__offset", "__timestamp"]
    );
    assert!(id_of("extra") > id_of("__timestamp"), "{altered}");

    let mut after = before.to_vec();
    after.push(("extra", "STRING", true));
    let mut t1 = table("iceberg", "added", &after, &[], &[], 1, &[]);
    t1.schema_id = 1;
    let extras = Arc::new(StringArray::from_iter(
        (40..70).map(|i| (i % 3 != 0).then(|| format!("x{i}"))),
    ));
    let second =
        RecordBatch::try_new(schema(true), vec![ids(40..70), names(40..70), extras]).unwrap();
    driver
        .round(
            &t1,
            vec![SplitInput {
                bucket: 0,
                partition: None,
                batches: vec![row_batch(&second, Vec::new(), 40, TS_MS)],
            }],
            offsets_property(2),
        )
        .await;

    let rows_of = |range: std::ops::Range<i32>, extra: bool| -> Vec<Value> {
        let first_offset = range.start as i64;
        let rows = range
            .map(|i| {
                let extra = (extra && i % 3 != 0).then(|| format!("x{i}"));
                json!({"id": i, "name": format!("n{i}"), "extra": extra})
            })
            .collect();
        with_system(rows, 0, first_offset)
    };
    let mut expected = rows_of(0..40, false);
    expected.extend(rows_of(40..70, true));
    let expected = sorted(expected);
    for reader in ["pyiceberg", "duckdb"] {
        assert_eq!(sorted(rows(&dir, None, reader)), expected, "{reader}");
    }
    let java = fluss_lake_e2e::iceberg::java_rows(&dir, &["id", "name", "extra"]);
    let mut java_rows: Vec<Value> = java["rows"].as_array().unwrap().clone();
    java_rows.sort_by_key(|r| r["id"].as_i64());
    let mut business: Vec<Value> = expected
        .iter()
        .map(|r| json!({"id": r["id"], "name": r["name"], "extra": r["extra"]}))
        .collect();
    business.sort_by_key(|r| r["id"].as_i64());
    assert_eq!(java_rows, business, "Java Iceberg");
    std::fs::remove_dir_all(&wh).unwrap();
}
