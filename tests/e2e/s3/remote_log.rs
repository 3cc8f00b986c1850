//! A round whose backlog is only in Fluss's remote storage on S3: the S3 cluster copies 1 MiB
//! log segments to `s3://…/cluster-9/remote-data` every few seconds and keeps one segment
//! locally (`table.log.tiered.local-segments: 1`), so once the table is written the oldest
//! offsets exist nowhere but on S3. The host, started afterwards, reads them through fluss-rs
//! from S3 (with the session credentials Fluss hands out) and tiers every row exactly once.

use std::time::{Duration, Instant};

use fluss::metadata::{TableDescriptor, TablePath};
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, paimon, unique_name};

const ROWS: usize = 200_000;

/// The smallest base offset among the table's local log segments (file names are offsets).
fn local_log_start(work_dir: &std::path::Path, table: &str) -> Option<u64> {
    let mut min = None::<u64>;
    let mut stack = vec![work_dir.join("data")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "log")
                && p.to_string_lossy().contains(&format!("/{table}-"))
                && let Some(base) = p.file_stem().and_then(|s| s.to_str()?.parse::<u64>().ok())
            {
                min = Some(min.map_or(base, |m: u64| m.min(base)));
            }
        }
    }
    min
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_only_in_remote_storage_on_s3_is_tiered_exactly() {
    let c = cluster::lease_s3("paimon");
    let s3 = c.s3.clone().unwrap();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("s3_remote"));
    let descriptor = TableDescriptor::builder()
        .schema(data::all_types_schema())
        .distributed_by(Some(1), Vec::new())
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s")
        .property("table.log.tiered.local-segments", "1")
        .build()
        .unwrap();
    data::create_table(&admin, &path, &descriptor).await;
    data::write_rows(&conn, &path, 0, ROWS, 5_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;

    // Wait until the start of the log is on S3 only.
    let remote = format!("cluster-{}/remote-data/log", c.index);
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let start = local_log_start(&c.work_dir, path.table());
        let copied = s3
            .keys(&remote)
            .await
            .iter()
            .filter(|k| k.ends_with(".log"))
            .count();
        if start.is_some_and(|s| s > 0) && copied > 0 {
            eprintln!("local log starts at offset {start:?}; {copied} segments on S3");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the log never moved to S3 (local start {start:?}, {copied} remote segments):\n{}",
            c.coordinator_log_tail(30)
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    let warehouse = c.paimon_warehouse.display().to_string();
    let extra = s3.warehouse_args("paimon", &warehouse, &s3.secret_key);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &extra),
        &format!("{}-host", path.table()),
    );
    wait_registered(&c, &admin, &path, &ends, &h).await;
    assert_eq!(
        business(&paimon::rows(
            &c.paimon_warehouse,
            "fluss",
            path.table(),
            None
        )),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, ROWS))),
    );
}
