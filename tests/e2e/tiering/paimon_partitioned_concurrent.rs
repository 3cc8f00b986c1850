//! Partitioned log tables (one and two partition keys, partitions created and dropped while
//! the host runs), several tables tiered at once by one host, and rounds force-finished at
//! the table's freshness — all on the real cluster, read back by pypaimon.

use std::time::Duration;

use fluss::metadata::{PartitionSpec, TablePath};
use fluss_lake_e2e::lake_check::{assert_no_duplicate_offsets, business};
use fluss_lake_e2e::{cluster, data, host, paimon, repo_root, unique_name};
use serde_json::Value;

/// Partition column values, `(name, value)`.
type Partition<'a> = &'a [(&'a str, &'a str)];

fn expected(parts: &[(i64, usize, Partition)]) -> Vec<Value> {
    let mut rows = Vec::new();
    for (first, count, partition) in parts {
        rows.extend(data::canonical_rows(&data::partitioned_batch(
            *first, *count, partition,
        )));
    }
    rows.sort_by_key(|r| r["id"].as_i64().unwrap());
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_tables_and_several_tables_at_once() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();

    let one = TablePath::new("fluss", unique_name("part_one"));
    let two = TablePath::new("fluss", unique_name("part_two"));
    let plain = TablePath::new("fluss", unique_name("plain"));
    data::create_table(
        &admin,
        &one,
        &data::lake_partitioned_log_table(2, Some("id"), "2s", &["region"]),
    )
    .await;
    data::create_table(
        &admin,
        &two,
        &data::lake_partitioned_log_table(2, None, "2s", &["region", "yr"]),
    )
    .await;
    data::create_table(&admin, &plain, &data::lake_log_table(2, None, "2s")).await;

    let eu: &[(&str, &str)] = &[("region", "eu")];
    let us: &[(&str, &str)] = &[("region", "us")];
    let eu24: &[(&str, &str)] = &[("region", "eu"), ("yr", "2024")];
    let us25: &[(&str, &str)] = &[("region", "us"), ("yr", "2025")];
    for p in [eu, us] {
        data::create_partition(&admin, &one, p).await;
    }
    for p in [eu24, us25] {
        data::create_partition(&admin, &two, p).await;
    }
    data::write_partition_rows(&conn, &one, eu, 0, 3_000, 1_000).await;
    data::write_partition_rows(&conn, &one, us, 10_000, 2_000, 1_000).await;
    data::write_partition_rows(&conn, &two, eu24, 0, 1_500, 500).await;
    data::write_partition_rows(&conn, &two, us25, 20_000, 2_500, 500).await;
    data::write_rows(&conn, &plain, 0, 4_000, 1_000).await;

    // Rounds are slowed down so that tables are provably in flight at the same time.
    let mut args = host::args(
        &c.bootstrap,
        &[host::plugin("paimon")],
        &["--lake.tiering.max-concurrent-tables", "3"],
    );
    args.push("--tiering.poll.table.interval".into());
    args.push("200ms".into());
    let mut h = host::HostProcess::spawn_with_env(
        &args,
        "partitioned-concurrent-host",
        &[("FLUSS_LAKE_HOST_FAILPOINTS", "before-prepare=sleep:1500")],
    );
    for path in [&one, &two, &plain] {
        let ends = data::all_log_end_offsets(&admin, path).await;
        data::wait_for_all_lake_offsets(&admin, path, &ends, Duration::from_secs(180))
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}\nhost log:\n{}", h.log()));
    }
    let wh = &c.paimon_warehouse;
    let lake_one = paimon::rows(wh, "fluss", one.table(), None);
    assert_eq!(
        business(&lake_one),
        expected(&[(0, 3_000, eu), (10_000, 2_000, us)])
    );
    assert_no_duplicate_offsets(&lake_one, &["region"]);
    let lake_two = paimon::rows(wh, "fluss", two.table(), None);
    assert_eq!(
        business(&lake_two),
        expected(&[(0, 1_500, eu24), (20_000, 2_500, us25)])
    );
    assert_no_duplicate_offsets(&lake_two, &["region", "yr"]);
    let lake_plain = paimon::rows(wh, "fluss", plain.table(), None);
    assert_eq!(
        business(&lake_plain),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 4_000)))
    );
    // Partition directories as the Java plugin lays them out.
    let table_dir = wh.join(format!("fluss.db/{}", two.table()));
    assert!(
        table_dir.join("region=eu/yr=2024/bucket-0").exists()
            || table_dir.join("region=eu/yr=2024/bucket-1").exists()
    );

    // One host had several rounds in flight at once: a second table was assigned before the
    // first one's round committed.
    let log = h.log();
    let first_commit = log
        .find("tiering round committed")
        .expect("a round committed");
    assert!(
        log[..first_commit].matches("table assigned").count() >= 2,
        "rounds did not overlap:\n{log}"
    );

    // Partitions created and dropped while the host runs.
    let apac: &[(&str, &str)] = &[("region", "apac")];
    data::create_partition(&admin, &one, apac).await;
    data::write_partition_rows(&conn, &one, apac, 30_000, 1_200, 400).await;
    admin
        .drop_partition(
            &one,
            &PartitionSpec::new([("region", "us")].into_iter().collect()),
            false,
        )
        .await
        .unwrap();
    data::write_partition_rows(&conn, &one, eu, 3_000, 800, 400).await;
    let ends = data::all_log_end_offsets(&admin, &one).await;
    data::wait_for_all_lake_offsets(&admin, &one, &ends, Duration::from_secs(120))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));
    let lake_one = paimon::rows(wh, "fluss", one.table(), None);
    // The lake keeps what was tiered from the dropped partition, as with Flink tiering.
    assert_eq!(
        business(&lake_one),
        expected(&[(0, 3_800, eu), (10_000, 2_000, us), (30_000, 1_200, apac)])
    );
    assert_no_duplicate_offsets(&lake_one, &["region"]);
    assert!(h.exited().is_none(), "host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_past_the_freshness_are_force_finished_and_resume() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("force_finish"));
    data::create_table(&admin, &path, &data::lake_log_table(2, None, "1s")).await;
    // Several Fluss batches per bucket.
    for i in 0..6 {
        data::write_rows(&conn, &path, i * 1_000, 1_000, 1_000).await;
    }
    let ends = data::all_log_end_offsets(&admin, &path).await;
    // Every split stalls after its first batch, past the 1 s freshness: each round commits
    // one batch per bucket and is force-finished; the table is re-queued at once.
    let mut h = host::HostProcess::spawn_with_env(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &[]),
        "force-finish-host",
        &[("FLUSS_LAKE_HOST_FAILPOINTS", "after-first-write=sleep:1500")],
    );
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));
    h.wait_for_log_count("tiering round committed", 2, Duration::from_secs(30))
        .await;
    let log = h.log();
    assert!(
        log.contains("round reached the table's freshness"),
        "no force-finish:\n{log}"
    );
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
    assert_eq!(
        business(&lake),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 6_000)))
    );
    assert_no_duplicate_offsets(&lake, &[]);
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

/// A round that reaches the table's freshness before any of its splits read a batch commits
/// nothing: a lake snapshot that moves no bucket would be registered by Fluss as one repeating
/// its predecessor. Found by the chaos run (an empty Lance version registered after a slow
/// start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_forced_before_any_batch_commits_nothing() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("forced_empty"));
    data::create_table(&admin, &path, &data::lake_log_table(1, None, "1s")).await;
    data::write_rows(&conn, &path, 0, 1_000, 1_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;
    let release = repo_root()
        .join("target/test-scratch")
        .join(format!("{}-release", path.table()));
    std::fs::create_dir_all(release.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&release);
    // The first split stalls before its first batch, past the 1 s freshness.
    let mut h = host::HostProcess::spawn_with_env(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &[]),
        &format!("{}-host", path.table()),
        &[(
            "FLUSS_LAKE_HOST_FAILPOINTS",
            &format!("before-first-batch=once-until:{}", release.display()),
        )],
    );
    h.wait_for_log("failpoint before-first-batch", Duration::from_secs(60))
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    std::fs::write(&release, b"go").unwrap();
    h.wait_for_log(
        "round reached the table's freshness",
        Duration::from_secs(30),
    )
    .await;
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(120))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));
    h.wait_for_log_count("tiering round committed", 1, Duration::from_secs(30))
        .await;
    let log = h.log();
    let commits: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("tiering round committed"))
        .collect();
    assert!(
        commits.iter().all(|l| !l.contains(" rows=0 ")),
        "a round that wrote nothing committed:\n{log}"
    );
    // One snapshot per committing round, and the lake holds every row once.
    let snapshots = paimon::snapshot(&c.paimon_warehouse, "fluss", path.table(), None);
    assert_eq!(
        snapshots["id"].as_i64(),
        Some(commits.len() as i64),
        "{snapshots}"
    );
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
    assert_eq!(
        business(&lake),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 1_000)))
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
