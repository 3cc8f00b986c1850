//! A coordinator outage: the coordinator process is frozen (SIGSTOP) while a round is in
//! flight. The host must retry its heartbeats, abandon its rounds after
//! `tiering.heartbeat.max.failures` failures, stay up, reconnect when the coordinator comes
//! back (SIGCONT) and finish tiering with every record in the lake exactly once.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::{self, FrozenCoordinator};
use fluss_lake_e2e::lake_check::{assert_no_duplicate_offsets, business};
use fluss_lake_e2e::{data, host, paimon, unique_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_survives_a_coordinator_outage_and_finishes_exactly_once() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("outage"));
    data::create_table(&admin, &path, &data::lake_log_table(2, None, "1s")).await;
    data::write_rows(&conn, &path, 0, 4_000, 1_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;

    let mut h = host::HostProcess::spawn_with_env(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
            &[
                "--rpc.timeout",
                "2s",
                "--tiering.heartbeat.max.failures",
                "3",
            ],
        ),
        &format!("{}-host", path.table()),
        &[("FLUSS_LAKE_HOST_FAILPOINTS", "before-prepare=sleep:3000")],
    );
    h.wait_for_log(
        &format!("tiering round started table=fluss.{}", path.table()),
        Duration::from_secs(60),
    )
    .await;
    {
        let _frozen = FrozenCoordinator::freeze(&c);
        h.wait_for_log(
            "heartbeats failed in a row; abandoning every round in flight",
            Duration::from_secs(60),
        )
        .await;
        assert!(
            h.exited().is_none(),
            "the host exited during the outage:\n{}",
            h.log()
        );
    }
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
    assert_no_duplicate_offsets(&lake, &[]);
    assert_eq!(
        business(&lake),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 4_000)))
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

/// A host started while the coordinator is down and restarting waits for it instead of
/// exiting, then tiers. Found by the chaos run (seed 35): a host restarted during a
/// coordinator failover exited with "cannot reach the Fluss cluster".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_started_while_the_coordinator_restarts_waits_for_it() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("coord_restart"));
    data::create_table(&admin, &path, &data::lake_log_table(2, None, "1s")).await;
    data::write_rows(&conn, &path, 0, 2_000, 1_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;

    c.kill_server("coordinator-server");
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &[]),
        &format!("{}-host", path.table()),
    );
    h.wait_for_log("trying again in", Duration::from_secs(60))
        .await;
    let index = c.index;
    tokio::task::spawn_blocking(move || cluster::restart_server(index, "coordinator-server"))
        .await
        .unwrap();
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));
    assert!(h.exited().is_none(), "the host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
