//! The Delta plugin's `.wasm` (examples/guest-delta, a plugin built outside this workspace
//! on the guest SDK alone), run by the host's plugin runtime against a temporary warehouse
//! (no Fluss), writes Delta tables that delta-rs reads exactly: every version by time travel
//! through pyarrow and through delta-rs's own DataFusion scan, the Fluss commit properties in
//! `history()`, per-file statistics and partition values as delta-rs parses them, filters
//! pruned by them, and delta-rs's own writer appending between our rounds.
//!
//! Needs `scripts/build-plugins.sh` (which runs `examples/guest-delta/build.sh`, giving
//! target/plugins/delta.wasm) and the Python venv.

use std::path::Path;

use fluss_lake_e2e::all_types::{ALL_TYPES, all_types};
use fluss_lake_e2e::component::{
    ComponentDriver, SplitInput, TS_MS, offsets_property, row_batch, sorted, table, with_system,
};
use fluss_lake_e2e::delta::{self, READERS};
use fluss_lake_e2e::unique_name;
use fluss_lake_host::plugin::wit::TableInfo;
use serde_json::{Value, json};

/// Writes ids `next..next+n` as one split in two batches; adds the expected rows.
fn split(
    bucket: i32,
    partition: Option<(&str, &str)>,
    next: &mut i32,
    offset: &mut i64,
    n: i32,
    expected: &mut Vec<Value>,
) -> SplitInput {
    let ids: Vec<i32> = (*next..*next + n).collect();
    *next += n;
    let (batch, rows) = all_types(&ids, partition);
    expected.extend(with_system(rows, bucket, *offset));
    let s = SplitInput {
        bucket,
        partition: partition.map(|(_, v)| v.to_string()),
        batches: vec![
            row_batch(&batch.slice(0, 7), Vec::new(), *offset, TS_MS),
            row_batch(
                &batch.slice(7, n as usize - 7),
                Vec::new(),
                *offset + 7,
                TS_MS,
            ),
        ],
    };
    *offset += n as i64;
    s
}

/// Reads every version in `states` with both readers (one Python process) and compares.
fn check_versions(dir: &Path, states: &[Vec<Value>]) {
    let mut commands = Vec::new();
    for v in 0..states.len() as u64 {
        for reader in READERS {
            commands.push(delta::rows_command(dir, Some(v), reader));
        }
    }
    let results = delta::batch(&commands);
    for (command, rows) in commands.iter().zip(results) {
        let v: usize = command[3].parse().unwrap();
        assert_eq!(rows.len(), states[v].len(), "{command:?}");
        assert!(sorted(rows) == states[v], "rows differ: {command:?}");
    }
}

fn type_of<'a>(info: &'a Value, column: &str) -> &'a str {
    info["schema"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == column)
        .unwrap_or_else(|| panic!("{column} not in {info}"))["type"]
        .as_str()
        .unwrap()
}

#[tokio::test]
async fn log_table_every_version_reads_back_exactly_and_interoperates_with_delta_rs() {
    let wh = std::env::temp_dir().join(unique_name("delta-wh"));
    let driver = ComponentDriver::load(&delta::plugin(), &wh).await;
    let t = table("delta", "log_all_types", ALL_TYPES, &[], &[], 3, &[]);
    assert!(driver.create(&t).await);
    assert!(!driver.create(&t).await, "create is idempotent");
    let dir = driver.table_dir(&t).await;
    assert!(dir.ends_with("fluss/log_all_types"));
    assert!(dir.join("_delta_log/00000000000000000000.json").exists());

    let info = delta::info(&dir, None);
    assert_eq!(
        info["protocol"],
        json!({"min_reader_version": 3, "min_writer_version": 7,
            "reader_features": ["timestampNtz"], "writer_features": ["timestampNtz"]}),
        "TIMESTAMP columns need the timestampNtz feature"
    );
    for (column, ty) in [
        ("tiny", "byte"),
        ("small", "short"),
        ("amount", "decimal(10,2)"),
        ("ts", "timestamp_ntz"),
        ("ltz", "timestamp"),
        ("t", "integer"),
        ("bin", "binary"),
        ("code", "string"),
        ("__bucket", "integer"),
        ("__offset", "long"),
        ("__timestamp", "timestamp"),
    ] {
        assert!(
            type_of(&info, column).contains(&format!("\"{ty}\"")),
            "{column}: {info}"
        );
    }

    // Rounds 1 and 2 write every bucket; round 3 is empty (offsets still persist).
    let mut expected: Vec<Value> = Vec::new();
    let mut states = vec![Vec::new()]; // version 0: the empty table
    let (mut next, mut offsets) = (0, [0i64; 3]);
    for round in 1..=3usize {
        let sizes: &[i32] = if round < 3 { &[40, 65, 90] } else { &[] };
        let splits = sizes
            .iter()
            .enumerate()
            .map(|(b, &n)| split(b as i32, None, &mut next, &mut offsets[b], n, &mut expected))
            .collect();
        let result = driver.round(&t, splits, offsets_property(round)).await;
        assert_eq!(result.snapshot_id, round as i64, "one version per round");
        states.push(sorted(expected.clone()));
    }
    check_versions(&dir, &states);
    for (v, state) in states.iter().enumerate() {
        let n = state.len() as i64;
        assert_eq!(delta::count(&dir, Some(v as u64)), (n, n), "count at v{v}");
    }

    let history = delta::history(&dir);
    assert_eq!(history.len(), 4);
    assert_eq!(history[0]["operation"], "CREATE TABLE");
    for (v, h) in history.iter().enumerate().skip(1) {
        assert_eq!(h["version"], json!(v));
        assert_eq!(h["operation"], "WRITE", "{h}");
        assert_eq!(h["commit-user"], "__fluss_lake_tiering");
        assert_eq!(h["fluss-offsets"], json!(offsets_property(v)[0].1));
        assert_eq!(h["readVersion"], json!(v - 1));
    }

    // Statistics as delta-rs parses them, and filters it prunes with them.
    let files = delta::files(&dir, None);
    assert_eq!(files.len(), 6, "a file per split and round");
    for f in &files {
        let n = f["num_records"].as_i64().unwrap();
        assert_eq!(f["partition"], json!({}));
        assert_eq!(f["min"]["__bucket"], f["max"]["__bucket"], "{f}");
        assert_eq!(
            f["max"]["__offset"].as_i64().unwrap() - f["min"]["__offset"].as_i64().unwrap(),
            n - 1
        );
        assert_eq!(f["min"]["__timestamp"], json!(TS_MS * 1000));
        assert_eq!(f["null_count"]["id"], 0);
        assert!(f["min"]["id"].as_i64() <= f["max"]["id"].as_i64());
        assert!(f["null_count"]["name"].as_i64().unwrap() > 0, "{f}");
        // every column with orderable values has bounds delta-rs could parse
        for c in [
            "big", "name", "score", "amount", "day", "ts", "ltz", "tiny", "small", "f", "t", "code",
        ] {
            assert!(
                !f["min"][c].is_null() && !f["max"][c].is_null(),
                "no {c} bounds: {f}"
            );
        }
        let (lo, hi) = (
            f["min"]["ts"].as_i64().unwrap(),
            f["max"]["ts"].as_i64().unwrap(),
        );
        let in_file = expected.iter().filter(|r| {
            r["__bucket"] == f["min"]["__bucket"]
                && (f["min"]["__offset"].as_i64()..=f["max"]["__offset"].as_i64())
                    .contains(&r["__offset"].as_i64())
        });
        for r in in_file {
            if let Some(ts) = r["ts"].as_i64() {
                assert!(lo <= ts && ts <= hi, "ts {ts} outside [{lo}, {hi}]");
            }
        }
    }
    let pick = |f: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        sorted(expected.iter().filter(|r| f(r)).cloned().collect())
    };
    assert_eq!(
        sorted(delta::filtered(&dir, "id >= 300 AND name IS NULL")),
        pick(&|r| r["id"].as_i64().unwrap() >= 300 && r["name"].is_null())
    );
    assert_eq!(
        sorted(delta::filtered(&dir, "flag = true AND score < 10")),
        pick(&|r| r["flag"] == json!(true) && r["score"].as_f64().unwrap() < 10.0)
    );
    assert_eq!(
        sorted(delta::filtered(
            &dir,
            "ts >= TIMESTAMP '2020-09-13 12:31:00' AND amount > 100"
        )),
        pick(&|r| {
            r["ts"]
                .as_i64()
                .is_some_and(|ts| ts >= 1_600_000_260_000_000)
                && r["amount"].as_str().unwrap().parse::<f64>().unwrap() > 100.0
        })
    );

    // delta-rs's own writer appends to our table, and the plugin appends after it.
    assert_eq!(delta::append_copy(&dir, 10), 4);
    assert_eq!(delta::count(&dir, Some(4)).0, expected.len() as i64 + 10);
    let splits = vec![split(
        1,
        None,
        &mut next,
        &mut offsets[1],
        20,
        &mut expected,
    )];
    let result = driver.round(&t, splits, offsets_property(4)).await;
    assert_eq!(result.snapshot_id, 5);
    let latest = sorted(delta::rows(&dir, None, "datafusion"));
    assert_eq!(latest.len(), expected.len() + 10);
    for r in &expected {
        assert!(
            latest
                .binary_search_by_key(&r.to_string(), |x| x.to_string())
                .is_ok(),
            "{r} missing"
        );
    }

    // Recovery: the newest version Fluss committed (delta-rs's version 4 is skipped).
    let missing = driver.missing_snapshot(&t, None).await.unwrap();
    assert_eq!(missing, (5, Some(offsets_property(4)[0].1.clone())));
    assert_eq!(driver.missing_snapshot(&t, Some(3)).await.unwrap().0, 5);
    assert!(driver.missing_snapshot(&t, Some(5)).await.is_none());
    std::fs::remove_dir_all(&wh).ok();
}

fn partitioned_table() -> TableInfo {
    let mut columns = ALL_TYPES.to_vec();
    columns.push(("region", "STRING", false));
    table(
        "delta",
        "log_partitioned",
        &columns,
        &[],
        &[],
        2,
        &["region"],
    )
}

#[tokio::test]
async fn partitioned_table_keeps_partition_values_in_the_log() {
    let wh = std::env::temp_dir().join(unique_name("delta-wh"));
    let driver = ComponentDriver::load(&delta::plugin(), &wh).await;
    let t = partitioned_table();
    assert!(driver.create(&t).await);
    let dir = driver.table_dir(&t).await;
    assert_eq!(
        delta::info(&dir, None)["partition_columns"],
        json!(["region"])
    );

    const ODD: &str = "a b/c:d%=é";
    let mut expected = Vec::new();
    let mut states = vec![Vec::new()];
    let mut next = 0;
    let mut offsets = std::collections::HashMap::new();
    for round in 1..=2usize {
        let mut splits = Vec::new();
        for region in ["eu-west", ODD] {
            for bucket in 0..2 {
                let offset = offsets.entry((region, bucket)).or_insert(0i64);
                let n = 15 + 10 * bucket + round as i32;
                splits.push(split(
                    bucket,
                    Some(("region", region)),
                    &mut next,
                    offset,
                    n,
                    &mut expected,
                ));
            }
        }
        let result = driver.round(&t, splits, offsets_property(round)).await;
        assert_eq!(result.snapshot_id, round as i64);
        states.push(sorted(expected.clone()));
    }
    check_versions(&dir, &states);

    // Partition values come from the log; the files sit in Spark-escaped directories.
    let files = delta::files(&dir, None);
    assert_eq!(files.len(), 8);
    for f in &files {
        let region = f["partition"]["region"].as_str().unwrap();
        let path = f["path"].as_str().unwrap();
        let prefix = match region {
            "eu-west" => "region=eu-west/",
            ODD => "region=a%20b%252Fc%253Ad%2525%253D%C3%A9/",
            other => panic!("unexpected partition {other}"),
        };
        assert!(path.starts_with(prefix), "{path}");
        assert!(
            f["min"].get("region").is_none(),
            "partition columns have no file stats"
        );
    }
    assert!(dir.join("region=a b%2Fc%3Ad%25%3Dé").is_dir());
    assert!(dir.join("region=eu-west").is_dir());

    // Partition pruning.
    let odd: Vec<Value> = expected
        .iter()
        .filter(|r| r["region"] == ODD)
        .cloned()
        .collect();
    assert_eq!(
        sorted(delta::filtered(&dir, "region = 'a b/c:d%=é'")),
        sorted(odd)
    );
    std::fs::remove_dir_all(&wh).ok();
}

#[tokio::test]
async fn primary_key_tables_are_refused() {
    let wh = std::env::temp_dir().join(unique_name("delta-wh"));
    let driver = ComponentDriver::load(&delta::plugin(), &wh).await;
    let t = table(
        "delta",
        "pk",
        &[("id", "INT", false), ("v", "STRING", true)],
        &["id"],
        &["id"],
        2,
        &[],
    );
    let err = driver.try_create(&t).await.unwrap_err();
    assert!(err.contains("log tables only"), "{err}");
    assert!(err.contains("deletion vectors"), "{err}");
    assert!(!driver.table_dir(&t).await.exists(), "nothing written");
    std::fs::remove_dir_all(&wh).ok();
}

/// Nested columns (the shared nested table: ARRAY, MAP, ROW nested in each other, NOT NULL
/// inside and out, nulls and empty collections at every level) over two splits of two
/// batches: delta-rs reads back exactly the rows written through both readers, parses the
/// nested schema and the statistics (struct leaves with bounds, arrays and maps with a null
/// count only), and its DataFusion scan filters on a struct field.
#[tokio::test]
async fn nested_columns_read_back_exactly() {
    use fluss_lake_e2e::nested::{CONTRACT_COLUMNS, component_splits};
    let wh = std::env::temp_dir().join(unique_name("delta-nested-wh"));
    let driver = ComponentDriver::load(&delta::plugin(), &wh).await;
    let t = table("delta", "nested", &CONTRACT_COLUMNS, &[], &[], 2, &[]);
    assert!(driver.create(&t).await);
    let dir = driver.table_dir(&t).await;
    let (splits, expected) = component_splits();
    driver.round(&t, splits, offsets_property(1)).await;
    let expected = sorted(expected);

    let mut commands: Vec<Vec<String>> = READERS
        .iter()
        .map(|reader| delta::rows_command(&dir, None, reader))
        .collect();
    for a in [["info"], ["files"]] {
        commands.push(vec![a[0].to_string(), dir.display().to_string()]);
    }
    commands.push(vec![
        "rows".into(),
        dir.display().to_string(),
        "--filter".into(),
        "point['x'] >= 100".into(),
    ]);
    let mut results = delta::batch(&commands).into_iter();
    for reader in READERS {
        let got = sorted(results.next().unwrap());
        if let Some((g, w)) = got.iter().zip(&expected).find(|(g, w)| g != w) {
            panic!("{reader}: the first row that differs\n got {g}\nwant {w}");
        }
        assert_eq!(got.len(), expected.len(), "{reader}");
    }

    let info = results.next().unwrap().remove(0);
    assert_eq!(
        info["protocol"]["reader_features"],
        json!(["timestampNtz"]),
        "events.element.at is a timestamp_ntz"
    );
    // deltalake's spelling of the Delta types it parsed.
    for (column, spelled) in [
        (
            "tags",
            r#"ArrayType(PrimitiveType("string"), contains_null=True)"#,
        ),
        (
            "nums",
            r#"ArrayType(PrimitiveType("integer"), contains_null=False)"#,
        ),
        (
            "attrs",
            "MapType(PrimitiveType(\"string\"), PrimitiveType(\"integer\"), value_contains_null=True)",
        ),
        (
            "point",
            "Field(y, PrimitiveType(\"string\"), nullable=False, metadata={'comment': 'the label'})",
        ),
        (
            "events",
            "ArrayType(StructType([Field(at, PrimitiveType(\"timestamp_ntz\")",
        ),
    ] {
        assert!(type_of(&info, column).contains(spelled), "{column}: {info}");
    }

    let files = results.next().unwrap();
    assert_eq!(files.len(), 2, "a file per split");
    for f in &files {
        let in_file: Vec<&Value> = expected
            .iter()
            .filter(|r| r["__bucket"] == f["min"]["__bucket"])
            .collect();
        let nulls = |p: &dyn Fn(&Value) -> bool| json!(in_file.iter().filter(|r| p(r)).count());
        assert_eq!(
            f["null_count"]["tags"],
            nulls(&|r| r["tags"].is_null()),
            "{f}"
        );
        assert_eq!(
            f["null_count"]["attrs"],
            nulls(&|r| r["attrs"].is_null()),
            "{f}"
        );
        assert_eq!(
            f["null_count"]["point.x"],
            nulls(&|r| r["point"]["x"].is_null())
        );
        assert_eq!(f["null_count"]["point.y"], nulls(&|r| r["point"].is_null()));
        let xs = in_file.iter().filter_map(|r| r["point"]["x"].as_i64());
        assert_eq!(f["min"]["point.x"], json!(xs.clone().min()), "{f}");
        assert_eq!(f["max"]["point.x"], json!(xs.max()), "{f}");
        assert!(f["min"].get("tags").is_none() && f["max"].get("events").is_none());
    }

    let filtered = sorted(results.next().unwrap());
    let want: Vec<Value> = expected
        .iter()
        .filter(|r| r["point"]["x"].as_i64().is_some_and(|x| x >= 100))
        .cloned()
        .collect();
    assert_eq!(filtered, want, "point['x'] >= 100");

    // delta-rs's own writer appends nested rows read from our files to our table.
    assert_eq!(delta::append_copy(&dir, 10), 2);
    let n = expected.len() as i64 + 10;
    assert_eq!(delta::count(&dir, None), (n, n));
    std::fs::remove_dir_all(&wh).ok();
}
