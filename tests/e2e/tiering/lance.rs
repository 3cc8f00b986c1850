//! Lance end to end: a real Fluss cluster whose `datalake.format` is `lance` (its
//! coordinator creates the datasets through Fluss's Java Lance plugin, Lance 0.33), the host
//! binary with the Lance WebAssembly plugin, and pylance reading back exactly the Fluss data,
//! with Fluss's lake snapshot (the Lance version) and offsets matching what the lake holds.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{business, nonzero, read_offsets_file, wait_registered};
use fluss_lake_e2e::{cluster, crash, data, host, lake_check, lance, unique_name};
use serde_json::Value;

const BUCKETS: i32 = 3;

fn expected(upto: i64) -> Vec<Value> {
    data::sorted_by_id(data::canonical_rows(&data::batch(0, upto as usize)))
}

/// Waits for Fluss to register offsets `ends`; checks that the registered snapshot is the
/// dataset's newest version and that its transaction carries the Fluss commit user and an
/// offsets file equal to `ends`. Returns the version.
async fn check_registered(
    c: &fluss_lake_e2e::cluster::ClusterInfo,
    admin: &fluss::client::FlussAdmin,
    path: &TablePath,
    dataset: &Path,
    ends: &HashMap<(Option<i64>, i32), i64>,
    h: &host::HostProcess,
) -> u64 {
    let snap = wait_registered(c, admin, path, ends, h).await as u64;
    assert_eq!(
        lance::versions(dataset).last(),
        Some(&snap),
        "Fluss registered the newest version"
    );
    let tx = lance::transaction(dataset, snap);
    assert_eq!(tx["properties"]["commit-user"], "__fluss_lake_tiering");
    let offsets_path = tx["properties"]["fluss-offsets"]
        .as_str()
        .expect("fluss-offsets");
    assert_eq!(
        read_offsets_file(offsets_path),
        nonzero(ends),
        "the offsets file of version {snap}"
    );
    snap
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_table_tiers_into_lance_over_three_rounds() {
    let c = cluster::lease("lance");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name("lance_log");
    let path = TablePath::new("fluss", &table);
    data::create_table(
        &admin,
        &path,
        &data::lake_log_table(BUCKETS, Some("id"), "2s"),
    )
    .await;
    let dataset = c
        .lance_warehouse
        .join("fluss")
        .join(format!("{table}.lance"));
    assert_eq!(
        lance::versions(&dataset),
        [1],
        "the coordinator created the dataset"
    );

    data::write_rows(&conn, &path, 0, 30_000, 5_000).await;
    let mut h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("lance")],
            &["--datalake.format", "lance"],
        ),
        &format!("{table}-host"),
    );
    let ends1 = data::all_log_end_offsets(&admin, &path).await;
    let v1 = check_registered(&c, &admin, &path, &dataset, &ends1, &h).await;
    assert_eq!(lance::count(&dataset, None), 30_000);
    assert_eq!(
        business(&lance::rows(&dataset, None)),
        expected(30_000),
        "round 1 content"
    );

    // Round 2 appends exactly the new rows; round 1 stays readable by time travel.
    data::write_rows(&conn, &path, 30_000, 12_000, 4_000).await;
    let ends2 = data::all_log_end_offsets(&admin, &path).await;
    let v2 = check_registered(&c, &admin, &path, &dataset, &ends2, &h).await;
    assert!(v2 > v1);
    assert_eq!(
        business(&lance::rows(&dataset, None)),
        expected(42_000),
        "round 2 content"
    );
    assert_eq!(
        lance::count(&dataset, Some(v1)),
        30_000,
        "time travel to round 1"
    );
    let info = lance::info(&dataset, None);
    assert_eq!(info["data_storage_version"], "2.0");
    let found = business(&lance::filtered(&dataset, "id = 41999"));
    assert_eq!(
        found,
        expected(42_000)[41_999..].to_vec(),
        "filter pushdown"
    );

    // Idle: nothing new is committed while no data arrives, over two idle rounds.
    let idle = lake_check::after_idle_rounds(&mut h, &admin, &path, 2).await;
    assert_eq!(idle.snapshot_id as u64, v2);
    assert!(h.exited().is_none(), "host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_across_random_crashes() {
    let c = cluster::lease("lance");
    let warehouse = c.lance_warehouse.clone();
    crash::exactly_once_across_random_crashes(&c, "lance", |table| {
        lance::rows(
            &warehouse.join("fluss").join(format!("{table}.lance")),
            None,
        )
    })
    .await;
}
