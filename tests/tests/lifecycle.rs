//! The host's life under adversity on the real cluster: crashes at random points
//! (exactly-once), a table dropped and recreated mid-round, and SIGTERM.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{assert_no_duplicate_offsets, business};
use fluss_lake_e2e::{cluster, data, host, paimon, repo_root, unique_name};

/// A small deterministic generator (xorshift), so a failing run can be replayed by seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const CRASH_POINTS: &[&str] = &[
    "after-first-write",
    "before-prepare",
    "before-lake-commit",
    "after-lake-commit",
    "after-fluss-commit",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_across_random_crashes_while_writers_keep_writing() {
    let c = cluster::ensure();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("crashes"));
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
        &[host::plugin("paimon")],
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
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
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
            || log.contains("was committed by an earlier round but unknown to Fluss"),
        "a crash between the lake and Fluss commits was never recovered:\n{log}"
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
    eprintln!("seed {seed}: {} rows, crashes: {crashes:?}", total);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_dropped_and_recreated_mid_round_is_not_mixed_up() {
    let c = cluster::ensure();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("recreated"));
    data::create_table(&admin, &path, &data::lake_log_table(2, None, "1s")).await;
    data::write_rows(&conn, &path, 0, 2_000, 1_000).await;
    // The first round stalls before its commit long enough for the table to be replaced.
    let mut h = host::HostProcess::spawn_with_env(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &[]),
        &format!("{}-host", path.table()),
        &[("FLUSS_LAKE_HOST_FAILPOINTS", "before-prepare=sleep:6000")],
    );
    h.wait_for_log(
        &format!("tiering round started table=fluss.{}", path.table()),
        Duration::from_secs(60),
    )
    .await;
    admin.drop_table(&path, false).await.unwrap();
    data::create_table(&admin, &path, &data::lake_log_table(2, None, "1s")).await;
    data::write_rows(&conn, &path, 50_000, 1_500, 500).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(120))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));
    let log = h.log();
    assert!(
        log.lines().any(|l| l.contains("tiering round failed")
            && l.contains(&format!("table=fluss.{}", path.table()))),
        "the old table's round must fail:
{log}"
    );
    // Only the new table's rows: nothing of the old table's round reached the lake.
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
    assert_eq!(
        business(&lake),
        data::sorted_by_id(data::canonical_rows(&data::batch(50_000, 1_500)))
    );
    assert_no_duplicate_offsets(&lake, &[]);
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_rounds_within_the_grace_period_and_exits_zero() {
    let c = cluster::ensure();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();

    // A round that can finish within the grace period is finished and committed.
    let path = TablePath::new("fluss", unique_name("sigterm_finish"));
    data::create_table(&admin, &path, &data::lake_log_table(2, None, "1s")).await;
    data::write_rows(&conn, &path, 0, 3_000, 1_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;
    let mut h = host::HostProcess::spawn_with_env(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
            &["--shutdown.grace-period", "30s"],
        ),
        &format!("{}-host", path.table()),
        &[("FLUSS_LAKE_HOST_FAILPOINTS", "before-prepare=sleep:3000")],
    );
    h.wait_for_log(
        &format!("tiering round started table=fluss.{}", path.table()),
        Duration::from_secs(60),
    )
    .await;
    let status = h.terminate(Duration::from_secs(60)).unwrap();
    assert!(status.success(), "exit status {status:?}:\n{}", h.log());
    assert!(h.log().contains("tiering round committed"), "{}", h.log());
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));

    // A round that cannot finish in time is abandoned, reported failed, and nothing is
    // committed; the host still exits 0 promptly.
    let slow = TablePath::new("fluss", unique_name("sigterm_abandon"));
    data::create_table(&admin, &slow, &data::lake_log_table(2, None, "2s")).await;
    data::write_rows(&conn, &slow, 0, 3_000, 1_000).await;
    let mut h = host::HostProcess::spawn_with_env(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
            &["--shutdown.grace-period", "1s"],
        ),
        &format!("{}-host", slow.table()),
        &[(
            "FLUSS_LAKE_HOST_FAILPOINTS",
            "after-first-write=sleep:60000",
        )],
    );
    h.wait_for_log(
        &format!("table assigned table=fluss.{}", slow.table()),
        Duration::from_secs(90),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let started = std::time::Instant::now();
    let status = h.terminate(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "exit status {status:?}:\n{}", h.log());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "shutdown took {:?}",
        started.elapsed()
    );
    assert!(
        h.log()
            .contains("reporting unfinished rounds failed before exiting"),
        "{}",
        h.log()
    );
    assert!(
        admin.get_latest_lake_snapshot(&slow).await.is_err(),
        "an abandoned round committed"
    );
    let table_dir = c
        .paimon_warehouse
        .join(format!("fluss.db/{}", slow.table()));
    assert!(!table_dir.join("snapshot").exists());
}
