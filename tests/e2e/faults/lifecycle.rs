//! The host's life under adversity on the real cluster: crashes at random points
//! (exactly-once), a table dropped and recreated mid-round, and SIGTERM.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{assert_no_duplicate_offsets, business};
use fluss_lake_e2e::{cluster, crash, data, host, paimon, unique_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_across_random_crashes_while_writers_keep_writing() {
    let c = cluster::lease("paimon");
    crash::exactly_once_across_random_crashes(&c, "paimon", |table| {
        paimon::rows(&c.paimon_warehouse, "fluss", table, None)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_dropped_and_recreated_mid_round_is_not_mixed_up() {
    let c = cluster::lease("paimon");
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
    let c = cluster::lease("paimon");
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
    // The round has written and stalls: SIGTERM lands mid-round.
    h.wait_for_log(
        "failpoint after-first-write: stalling",
        Duration::from_secs(60),
    )
    .await;
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
