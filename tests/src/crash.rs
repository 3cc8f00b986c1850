//! The exactly-once crash test, shared by every lake format's end-to-end tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use fluss::metadata::TablePath;
use serde_json::Value;

use crate::cluster::ClusterInfo;
use crate::lake_check::{assert_no_duplicate_offsets, business};
use crate::{Rng, data, host, repo_root, unique_name};

const CRASH_POINTS: &[&str] = &[
    "after-first-write",
    "before-prepare",
    "before-lake-commit",
    "after-lake-commit",
    "after-fluss-commit",
];

/// Kills the host 20 times (failpoint crashes inside the commit sequence and random
/// SIGKILLs) while a writer keeps appending to a log table, then lets a last host catch up:
/// the lake, read with `read_lake(table)`, must hold every Fluss record exactly once, and a
/// crash between the lake and Fluss commits must have been recovered.
pub async fn exactly_once_across_random_crashes(
    c: &ClusterInfo,
    format: &str,
    read_lake: impl Fn(&str) -> Vec<Value>,
) {
    let conn = crate::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name(&format!("crashes_{format}")));
    data::create_table(&admin, &path, &data::lake_log_table(3, Some("id"), "1s")).await;

    // A writer keeps producing for the whole test.
    let written = Arc::new(AtomicI64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (conn, path, written, stop) =
            (conn.clone(), path.clone(), written.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let first = written.load(Ordering::Relaxed);
                data::write_rows(&conn, &path, first, 500, 500).await;
                written.fetch_add(500, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        })
    };

    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_abcd);
    let mut rng = Rng(seed);
    let state_dir = repo_root()
        .join("target/test-state")
        .join(unique_name("crash-host"));
    let state = state_dir.display().to_string();
    let args = host::args(
        &c.bootstrap,
        &[host::plugin(format)],
        &["--state-dir", &state],
    );
    let log_name = format!("{}-host", path.table());
    let mut crashes = Vec::new();
    for round in 0..20 {
        if round % 2 == 0 {
            let point = CRASH_POINTS[rng.below(CRASH_POINTS.len() as u64) as usize];
            let mut h = host::HostProcess::spawn_with_env(
                &args,
                &log_name,
                &[("FLUSS_LAKE_HOST_FAILPOINTS", &format!("{point}=crash"))],
            );
            match h.wait_exit(Duration::from_secs(30)) {
                Some(status) => {
                    assert!(!status.success(), "the host should have crashed at {point}");
                    crashes.push(format!("{point} (crashed)"));
                }
                None => {
                    h.kill();
                    crashes.push(format!("{point} (not reached; SIGKILL)"));
                }
            }
        } else {
            let delay = 300 + rng.below(3_000);
            let mut h = host::HostProcess::spawn(&args, &log_name);
            tokio::time::sleep(Duration::from_millis(delay)).await;
            h.kill();
            crashes.push(format!("SIGKILL after {delay} ms"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    let total = written.load(Ordering::Relaxed);

    // A last host catches up; the lake must then hold exactly what Fluss holds.
    let mut h = host::HostProcess::spawn(&args, &log_name);
    let ends = data::all_log_end_offsets(&admin, &path).await;
    assert_eq!(ends.values().sum::<i64>(), total);
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(300))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "seed {seed}, crashes {crashes:?}: {e}\nhost log:\n{}",
                h.log()
            )
        });
    let lake = read_lake(path.table());
    let per_bucket = assert_no_duplicate_offsets(&lake, &[]);
    for ((_, bucket), rows) in per_bucket {
        assert_eq!(
            rows as i64,
            ends[&(None, bucket as i32)],
            "bucket {bucket}: seed {seed}, crashes {crashes:?}"
        );
    }
    assert_eq!(
        business(&lake),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, total as usize))),
        "seed {seed}, crashes {crashes:?}"
    );
    let log = h.log();
    assert!(
        crashes
            .iter()
            .all(|c| !c.starts_with("after-lake-commit (crashed)"))
            // Logged when the recovery starts, before anything else can crash the host (a later
            // crash point may end the run before the round's "recovered" error is logged).
            || log.contains("registering a lake snapshot Fluss missed"),
        "a crash between the lake and Fluss commits was never recovered:\n{log}"
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
    eprintln!("{format}, seed {seed}: {total} rows, crashes: {crashes:?}");
}
