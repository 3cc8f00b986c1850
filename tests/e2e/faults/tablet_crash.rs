//! A tablet server killed with SIGKILL in the middle of a round, then restarted with the same
//! command line. The host's Fluss client can lose the cluster's coordinator from its metadata
//! for good after this; the host must notice, rebuild the client, back off meanwhile (no
//! failed rounds at RPC speed) and converge: afterwards the lake holds exactly what Fluss
//! holds, every offset once. (With one replica Fluss may drop acked rows it had not flushed,
//! so the lake is compared with Fluss afterwards, not with what was written.)

use std::process::Command;
use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{assert_no_duplicate_offsets, business};
use fluss_lake_e2e::{cluster, data, host, paimon, repo_root, unique_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tablet_server_killed_mid_round_and_restarted_is_converged_on() {
    let c = cluster::lease("paimon");
    let path = TablePath::new("fluss", unique_name("tablet_crash"));
    {
        let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
        let admin = conn.get_admin().unwrap();
        data::create_table(&admin, &path, &data::lake_log_table(3, None, "2s")).await;
        data::write_rows(&conn, &path, 0, 6_000, 1_000).await;
    }
    let mut h = host::HostProcess::spawn_with_env(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
            &["--tiering.heartbeat.interval", "2s"],
        ),
        &format!("{}-host", path.table()),
        &[("FLUSS_LAKE_HOST_FAILPOINTS", "after-first-write=sleep:4000")],
    );
    h.wait_for_log(
        "failpoint after-first-write: stalling",
        Duration::from_secs(60),
    )
    .await;

    let pid = c.server_pid("tablet-server-0");
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    std::thread::sleep(Duration::from_secs(3));
    let restarted = Command::new("bash")
        .arg(repo_root().join("cluster/restart-server.sh"))
        .arg("tablet-server-0")
        .env("CLUSTER_INDEX", c.index.to_string())
        .output()
        .unwrap();
    assert!(
        restarted.status.success(),
        "restart failed:\n{}{}",
        String::from_utf8_lossy(&restarted.stdout),
        String::from_utf8_lossy(&restarted.stderr)
    );

    // More rows once Fluss serves the table again (every bucket led again), through a
    // client of the test's own created after that.
    {
        let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
        let admin = conn.get_admin().unwrap();
        data::wait_until_served(&admin, &path, Duration::from_secs(180)).await;
    }
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    tokio::time::timeout(
        Duration::from_secs(120),
        data::write_rows(&conn, &path, 6_000, 3_000, 1_000),
    )
    .await
    .expect("writing 3,000 rows after the restart did not finish within 120 s");
    let ends = data::all_log_end_offsets(&admin, &path).await;
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{e}\nhost log:\n{}\ncoordinator:\n{}",
                h.log(),
                c.coordinator_log_tail(40)
            )
        });

    let lake = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
    assert_no_duplicate_offsets(&lake, &[]);
    let in_fluss: i64 = ends.values().sum();
    assert_eq!(
        lake.len() as i64,
        in_fluss,
        "the lake holds every offset Fluss holds, once"
    );
    // Every lake row is one that was written, with its exact content, and no row twice.
    let written: std::collections::HashMap<i64, serde_json::Value> =
        data::canonical_rows(&data::batch(0, 9_000))
            .into_iter()
            .map(|r| (r["id"].as_i64().unwrap(), r))
            .collect();
    let mut seen = std::collections::HashSet::new();
    for row in business(&lake) {
        let id = row["id"].as_i64().unwrap();
        assert!(seen.insert(id), "row {id} is in the lake twice");
        assert_eq!(
            Some(&row),
            written.get(&id),
            "row {id} differs from what was written"
        );
    }
    let log = h.log();
    let failed = log.matches("tiering round failed").count();
    assert!(
        failed < 50,
        "{failed} failed rounds: the host retried at RPC speed\n{log}"
    );
    assert!(h.exited().is_none(), "the host exited:\n{log}");
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
