//! The physical limit of reading: fluss-rs's Arrow batch scanner reads every bucket of a log
//! table from its start to its end and writes nothing. Run in a child process of its own
//! (`bench raw-scan`) so that its CPU seconds are its alone.

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fluss::metadata::TablePath;
use fluss::rpc::message::OffsetSpec;

use crate::proc_stats;
use crate::rates::Throughput;

/// Runs `bench raw-scan` in a child process and reads its figures.
pub fn in_child(bootstrap: &str, t: &TablePath) -> Result<Throughput> {
    let out = Command::new(std::env::current_exe()?)
        .args(["raw-scan", "--bootstrap", bootstrap, "--table"])
        .arg(format!("{}.{}", t.database(), t.table()))
        .output()
        .context("running bench raw-scan")?;
    if !out.status.success() {
        bail!(
            "bench raw-scan failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("bench raw-scan's output")
}

/// Reads `table` (`db.table`, not partitioned) to its end; the figures of this process.
pub async fn run(bootstrap: &str, table: &str) -> Result<Throughput> {
    let (db, name) = table
        .split_once('.')
        .context("the table is named db.table")?;
    let path = TablePath::new(db, name);
    let conn = fluss_lake_e2e::connect(bootstrap).await;
    let admin = conn.get_admin()?;
    let info = admin.get_table_info(&path).await?;
    let buckets: Vec<i32> = (0..info.get_num_buckets()).collect();
    let ends: HashMap<i32, i64> = admin
        .list_offsets(&path, &buckets, OffsetSpec::Latest)
        .await?;
    let cpu0 = proc_stats::own_cpu_seconds()?;
    let started = Instant::now();
    let table = conn.get_table(&path).await?;
    let scanner = table.new_scan().create_record_batch_log_scanner()?;
    let mut left: HashMap<i32, i64> = ends.into_iter().filter(|(_, e)| *e > 0).collect();
    let from: HashMap<i32, i64> = left.keys().map(|b| (*b, 0)).collect();
    scanner.subscribe_buckets(&from).await?;
    let mut records = 0u64;
    while !left.is_empty() {
        if started.elapsed() > Duration::from_secs(3600) {
            bail!("the scan did not reach the end of buckets {left:?}");
        }
        for batch in scanner.poll(Duration::from_millis(500)).await? {
            let bucket = batch.bucket().bucket_id();
            let end = batch.last_offset() + 1;
            records += batch.num_records() as u64;
            if left.get(&bucket).is_some_and(|e| end >= *e) {
                left.remove(&bucket);
            }
        }
    }
    Ok(Throughput {
        records,
        wall_s: started.elapsed().as_secs_f64(),
        cpu_s: proc_stats::own_cpu_seconds()? - cpu0,
    })
}
