//! A table whose oldest offsets are only in Fluss's remote storage: written to a cluster that
//! copies small log segments to its `remote.data.dir` every few seconds (`cluster/start.sh`
//! with `STORAGE` `s3` or `gcs`) and keeps one segment locally
//! (`table.log.tiered.local-segments: 1`), so that a host started afterwards must read the
//! start of the log from the remote storage.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use fluss::client::FlussConnection;
use fluss::metadata::{TableDescriptor, TablePath};

use crate::cluster::ClusterInfo;
use crate::host::HostProcess;
use crate::lake_check::{business, wait_registered};
use crate::{data, paimon};

/// Rows of the table: several 1 MiB segments.
pub const ROWS: usize = 200_000;

/// Creates a one-bucket log table at `path`, writes [`ROWS`] rows to it and waits until its
/// log starts after offset 0 locally and `remote_segments` (the `.log` files the cluster
/// copied, listed from its store) are some. Returns the table's end offsets.
pub async fn write_until_remote_only<F, Fut>(
    c: &ClusterInfo,
    conn: &FlussConnection,
    path: &TablePath,
    remote_segments: F,
) -> std::collections::HashMap<(Option<i64>, i32), i64>
where
    F: Fn() -> Fut,
    Fut: Future<Output = usize>,
{
    let admin = conn.get_admin().unwrap();
    let descriptor = TableDescriptor::builder()
        .schema(data::all_types_schema())
        .distributed_by(Some(1), Vec::new())
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s")
        .property("table.log.tiered.local-segments", "1")
        .build()
        .unwrap();
    data::create_table(&admin, path, &descriptor).await;
    data::write_rows(conn, path, 0, ROWS, 5_000).await;
    let ends = data::all_log_end_offsets(&admin, path).await;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let start = local_log_start(&c.work_dir, path.table());
        let copied = remote_segments().await;
        if start.is_some_and(|s| s > 0) && copied > 0 {
            eprintln!("local log starts at offset {start:?}; {copied} segments in remote storage");
            return ends;
        }
        assert!(
            Instant::now() < deadline,
            "the log never moved to remote storage (local start {start:?}, {copied} remote segments):\n{}",
            c.coordinator_log_tail(30)
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Waits until `host` has registered every offset of `ends`, then checks that the table's
/// Paimon lake holds exactly the [`ROWS`] written, each once.
pub async fn assert_tiered_exactly(
    c: &ClusterInfo,
    conn: &FlussConnection,
    path: &TablePath,
    ends: &std::collections::HashMap<(Option<i64>, i32), i64>,
    host: &HostProcess,
) {
    wait_registered(c, &conn.get_admin().unwrap(), path, ends, host).await;
    assert_eq!(
        business(&paimon::rows(
            &c.paimon_warehouse,
            path.database(),
            path.table(),
            None
        )),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, ROWS))),
    );
}

/// The smallest base offset among the table's local log segments (file names are offsets).
fn local_log_start(work_dir: &Path, table: &str) -> Option<u64> {
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
