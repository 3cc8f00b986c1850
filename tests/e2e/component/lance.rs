//! The Lance plugin's `.wasm`, run by the host's plugin runtime against a temporary warehouse
//! (no Fluss), writes datasets that pylance (Lance's own implementation) reads exactly: every
//! version by time travel, row counts, filters, the Fluss transaction properties, and
//! interoperation with Lance's own writer appending to the same dataset in between.
//!
//! Needs `scripts/build-plugins.sh` (target/plugins/lance.wasm) and the Python venv.

use fluss_lake_e2e::all_types::{ALL_TYPES, all_types};
use fluss_lake_e2e::component::{
    ComponentDriver, SplitInput, TS_MS, offsets_property, row_batch, sorted, table,
};
use fluss_lake_e2e::host::plugin;
use fluss_lake_e2e::{lance, unique_name};
use serde_json::{Value, json};

/// Splits of one round: per bucket, ids `first..first+n` in two batches.
fn round_splits(first: i32, sizes: &[i32], expected: &mut Vec<Value>) -> Vec<SplitInput> {
    let mut next = first;
    sizes
        .iter()
        .enumerate()
        .map(|(bucket, &n)| {
            let ids: Vec<i32> = (next..next + n).collect();
            next += n;
            let (batch, rows) = all_types(&ids, None);
            expected.extend(rows);
            SplitInput {
                bucket: bucket as i32,
                partition: None,
                batches: vec![
                    row_batch(&batch.slice(0, 7), Vec::new(), 0, TS_MS),
                    row_batch(&batch.slice(7, n as usize - 7), Vec::new(), 7, TS_MS),
                ],
            }
        })
        .collect()
}

#[tokio::test]
async fn dataset_every_version_reads_back_exactly_and_interoperates_with_lance() {
    let wh = std::env::temp_dir().join(unique_name("lance-wh"));
    let driver = ComponentDriver::load(&plugin("lance"), &wh).await;
    let t = table("lance", "log_all_types", ALL_TYPES, &[], &[], 3, &[]);
    assert!(driver.create(&t).await);
    assert!(!driver.create(&t).await, "create is idempotent");
    let dir = driver.table_dir(&t).await;
    assert!(dir.ends_with("fluss/log_all_types.lance"));

    // Rounds 1 and 2 write every bucket; round 3 is empty (offsets still persist).
    let mut expected: Vec<Value> = Vec::new();
    let mut states = vec![Vec::new()]; // version 1: the empty dataset
    let mut first = 0;
    for round in 1..=3usize {
        let sizes: &[i32] = if round < 3 { &[40, 65, 90] } else { &[] };
        let splits = round_splits(first, sizes, &mut expected);
        first += sizes.iter().sum::<i32>();
        let result = driver.round(&t, splits, offsets_property(round)).await;
        assert_eq!(
            result.snapshot_id,
            round as i64 + 1,
            "one version per round"
        );
        assert_eq!(result.stats.record_count, Some(expected.len() as i64));
        states.push(sorted(expected.clone()));
    }
    assert_eq!(lance::versions(&dir), [1, 2, 3, 4]);
    for (k, state) in states.iter().enumerate() {
        let v = k as u64 + 1;
        assert_eq!(
            lance::count(&dir, Some(v)),
            state.len() as i64,
            "count_rows at v{v}"
        );
        assert!(
            sorted(lance::rows(&dir, Some(v))) == *state,
            "rows at version {v} differ"
        );
    }
    for v in 2..=4u64 {
        let tx = lance::transaction(&dir, v);
        assert_eq!(tx["operation"], "Append", "{tx}");
        assert_eq!(tx["read_version"], json!(v - 1));
        assert_eq!(tx["properties"]["commit-user"], "__fluss_lake_tiering");
        assert_eq!(
            tx["properties"]["fluss-offsets"],
            json!(offsets_property(v as usize - 1)[0].1)
        );
    }
    let info = lance::info(&dir, None);
    assert_eq!(info["data_storage_version"], "2.0");
    assert_eq!(
        info["fragments"].as_array().unwrap().len(),
        6,
        "a fragment per split and round"
    );

    // Filters are pushed into pylance's scan.
    let pick = |f: &dyn Fn(&Value) -> bool| -> Vec<Value> {
        sorted(expected.iter().filter(|r| f(r)).cloned().collect())
    };
    assert_eq!(
        sorted(lance::filtered(&dir, "id >= 300 AND name IS NULL")),
        pick(&|r| r["id"].as_i64().unwrap() >= 300 && r["name"].is_null())
    );
    assert_eq!(
        sorted(lance::filtered(&dir, "flag = true AND score < 10")),
        pick(&|r| r["flag"] == json!(true) && r["score"].as_f64().unwrap() < 10.0)
    );

    // Lance's own writer appends to our dataset, and the plugin appends after it.
    assert_eq!(lance::append_copy(&dir, 10), 5);
    let copied = sorted(lance::rows(&dir, Some(5)));
    assert_eq!(copied.len(), expected.len() + 10);
    let result = driver
        .round(
            &t,
            round_splits(first, &[20, 9, 11], &mut expected),
            offsets_property(4),
        )
        .await;
    assert_eq!(result.snapshot_id, 6);
    assert_eq!(lance::count(&dir, None), expected.len() as i64 + 10);
    let latest = sorted(lance::rows(&dir, None));
    for r in &expected {
        assert!(
            latest
                .binary_search_by_key(&r.to_string(), |x| x.to_string())
                .is_ok(),
            "{r} missing"
        );
    }
    assert_eq!(lance::info(&dir, None)["data_storage_version"], "2.0");

    // Recovery: the newest version Fluss committed (Lance's own version 5 is skipped).
    let missing = driver.missing_snapshot(&t, None).await.unwrap();
    assert_eq!(missing, (6, Some(offsets_property(4)[0].1.clone())));
    assert_eq!(driver.missing_snapshot(&t, Some(4)).await.unwrap().0, 6);
    assert!(driver.missing_snapshot(&t, Some(6)).await.is_none());
    std::fs::remove_dir_all(&wh).ok();
}

#[tokio::test]
async fn primary_key_tables_are_refused() {
    let wh = std::env::temp_dir().join(unique_name("lance-wh"));
    let driver = ComponentDriver::load(&plugin("lance"), &wh).await;
    let t = table(
        "lance",
        "pk",
        &[("id", "INT", false), ("v", "STRING", true)],
        &["id"],
        &["id"],
        2,
        &[],
    );
    let err = driver.try_create(&t).await.unwrap_err();
    assert!(err.contains("log tables only"), "{err}");
    assert!(!driver.table_dir(&t).await.exists(), "nothing written");
    std::fs::remove_dir_all(&wh).ok();
}
