//! `put-if-absent` on S3 is a `PUT` with `If-None-Match: *`: of several writers creating the
//! same snapshot file at once, exactly one wins on the real server, and the object holds the
//! winner's bytes. A store that ignores the header (the legacy server: moto before conditional
//! writes) lets several win the same race, and the host refuses such a store at startup with
//! one line, before it takes any table. A store that answers errors at startup is waited for.

use std::time::Duration;

use fluss_lake_e2e::lossy_proxy::{Fault, LossyProxy};
use fluss_lake_e2e::{host, s3, unique_name};
use fluss_lake_host::plugin::storage::StorageErrorKind;
use fluss_lake_host::warehouse::{Warehouse, Warehouses};

const WRITERS: usize = 6;
const RACES: usize = 25;

/// Runs `RACES` races of `WRITERS` writers, each with a client of its own, creating the same
/// object; returns how many writers won each race.
async fn race(server: &s3::S3Server, prefix: &str) -> Vec<usize> {
    let url = server.url(prefix);
    let mut storages = Vec::new();
    for _ in 0..WRITERS {
        let wh = Warehouse::open(&url, &server.storage_options(&server.secret_key)).unwrap();
        storages.push(wh.scope("db.db/t").unwrap());
    }
    let mut winners = Vec::new();
    for r in 0..RACES {
        let path = format!("snapshot/snapshot-{r}");
        let tasks: Vec<_> = storages
            .iter()
            .enumerate()
            .map(|(w, s)| {
                let s = s.clone();
                let path = path.clone();
                tokio::spawn(async move {
                    let body = format!("writer {w} wins race {r}").into_bytes();
                    (w, s.put_if_absent(&path, body).await)
                })
            })
            .collect();
        let mut won = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                (w, Ok(())) => won.push(w),
                (_, Err(e)) => assert_eq!(e.kind, StorageErrorKind::AlreadyExists, "{}", e.message),
            }
        }
        if let [w] = won[..] {
            let stored = storages[0].get(&path, 1 << 10).await.unwrap();
            assert_eq!(stored, format!("writer {w} wins race {r}").into_bytes());
        }
        winners.push(won.len());
    }
    winners
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_writers_racing_for_one_snapshot_exactly_one_wins() {
    let server = s3::server();
    let prefix = fluss_lake_e2e::unique_name("race");
    let winners = race(&server, &prefix).await;
    assert!(
        winners.iter().all(|&n| n == 1),
        "winners per race: {winners:?}"
    );
    // The same races on a store without conditional puts: the test sees double wins there.
    let legacy = s3::legacy_server();
    let winners = race(&legacy, &prefix).await;
    assert!(
        winners.iter().any(|&n| n > 1),
        "the legacy store never let two writers win: {winners:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_without_conditional_puts_is_refused_at_startup() {
    let legacy = s3::legacy_server();
    let url = legacy.url(&fluss_lake_e2e::unique_name("wh"));
    // In the library: the warehouse is refused, and no table's round can use it.
    let e = Warehouses::default()
        .get(&url, &legacy.storage_options(&legacy.secret_key))
        .await
        .err()
        .expect("a store without conditional puts must be refused");
    assert!(
        e.message().contains("does not honour conditional puts"),
        "{e}"
    );

    // The binary: one error line at startup, before it connects to Fluss (none is running at
    // this address).
    let extra = legacy.warehouse_args("paimon", &url, &legacy.secret_key);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = host::run_to_exit(
        &host::args("127.0.0.1:1", &[host::plugin("paimon")], &extra),
        Duration::from_secs(60),
    );
    let error = host::the_error_line(&out);
    assert!(
        error.contains(&format!("--datalake.paimon.warehouse: warehouse '{url}'"))
            && error.contains("does not honour conditional puts"),
        "{error}"
    );
}

/// A store that answers errors while the host starts (500s and 503s: a bad minute, not a
/// wrong setting) is waited for, one warning per attempt, and the host goes on once it answers:
/// here on to the Fluss cluster, which no server answers at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failing_at_startup_is_waited_for() {
    let server = s3::server();
    let proxy = LossyProxy::start_seeded(&server.endpoint, 7);
    proxy.set_fault(Some(Fault::Failing { permille: 1000 }));
    let url = server.url(&unique_name("failing_at_startup"));
    let extra = server.host_warehouse_args("paimon", &url, proxy.endpoint());
    let mut extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    extra.extend(["--startup.timeout", "60s"]);
    let mut h = host::HostProcess::spawn(
        &host::args("127.0.0.1:1", &[host::plugin("paimon")], &extra),
        &unique_name("store-failing-at-startup"),
    );
    h.wait_for_log("for the lake store", Duration::from_secs(60))
        .await;
    assert!(proxy.injected().internal_errors + proxy.injected().slow_downs > 0);
    proxy.set_fault(None);
    // Past the warehouses: waiting for the cluster now.
    h.wait_for_log("for the Fluss cluster", Duration::from_secs(60))
        .await;
    h.kill();
}
