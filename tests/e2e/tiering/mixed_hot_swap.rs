//! Hot swap on a live host against a real cluster: a plugin file replaced while a round is
//! in flight is picked up on SIGHUP; the round in flight finishes on the version it started
//! with, the next rounds run on the new one, and a broken new version is refused while the
//! loaded one keeps serving. Every round's commit names the plugin digest it ran on.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, paimon, repo_root, unique_name};
use serde_json::Value;

fn sha12(bytes: &[u8]) -> String {
    fluss_lake_host::plugin::source::digest(bytes)[..12].to_string()
}

fn committed(table: &str) -> String {
    format!("tiering round committed table=fluss.{table} ")
}

/// The host's commit lines for `table`, once there are `count` of them.
async fn committed_lines(h: &mut host::HostProcess, table: &str, count: usize) -> Vec<String> {
    h.wait_for_log_count(&committed(table), count, Duration::from_secs(30))
        .await;
    h.log()
        .lines()
        .filter(|l| l.contains(&committed(table)))
        .map(str::to_string)
        .collect()
}

fn expected(upto: i64) -> Vec<Value> {
    data::sorted_by_id(data::canonical_rows(&data::batch(0, upto as usize)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_swap_between_rounds_and_a_broken_version_is_refused() {
    let mut c = cluster::lease_mixed();
    c.set_lake_format("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name("hot_swap");
    let path = TablePath::new("fluss", &table);
    data::create_table(&admin, &path, &data::lake_log_table(2, Some("id"), "2s")).await;

    let dir = repo_root().join("target/test-scratch").join(&table);
    std::fs::create_dir_all(&dir).unwrap();
    let v1 = std::fs::read(host::plugin("paimon")).unwrap();
    let v2 = host::new_version_of(&v1, b"version 2");
    host::install_plugin(&dir, "paimon", &v1);

    data::write_rows(&conn, &path, 0, 10_000, 5_000).await;
    // Every round waits 8 s before its lake commit: time to swap the plugin under it.
    let dir_arg = dir.display().to_string();
    let mut h = host::HostProcess::spawn_with_env(
        &host::args(
            &c.bootstrap,
            &[],
            &[
                "--plugin-dir",
                &dir_arg,
                "--plugin-watch-interval",
                "0",
                "--tiering.poll.table.interval",
                "1s",
            ],
        ),
        &format!("{table}-host"),
        &[(
            "FLUSS_LAKE_HOST_FAILPOINTS",
            "before-lake-commit=sleep:8000",
        )],
    );
    h.wait_for_log(
        &format!("tiering round started table=fluss.{table}"),
        Duration::from_secs(120),
    )
    .await;
    host::install_plugin(&dir, "paimon", &v2);
    h.sighup();
    h.wait_for_log("plugin swapped in", Duration::from_secs(60))
        .await;
    let ends = data::all_log_end_offsets(&admin, &path).await;
    wait_registered(&c, &admin, &path, &ends, &h).await;
    let first = committed_lines(&mut h, &table, 1).await;
    let log = h.log();
    assert_eq!(first.len(), 1, "{log}");
    assert!(
        first[0].contains(&format!("sha256:{}", sha12(&v1))),
        "the round in flight finished on the version it started with:\n{log}"
    );

    // The next round runs on the new version.
    data::write_rows(&conn, &path, 10_000, 10_000, 5_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;
    wait_registered(&c, &admin, &path, &ends, &h).await;
    let second = committed_lines(&mut h, &table, 2).await;
    let log = h.log();
    assert_eq!(second.len(), 2, "{log}");
    assert!(
        second[1].contains(&format!("sha256:{}", sha12(&v2))),
        "{log}"
    );

    // A broken new version is refused; the loaded one keeps serving.
    host::install_plugin(&dir, "paimon", &v2[..v2.len() / 2]);
    h.sighup();
    h.wait_for_log(
        "refused the new version of a plugin",
        Duration::from_secs(60),
    )
    .await;
    data::write_rows(&conn, &path, 20_000, 10_000, 5_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;
    wait_registered(&c, &admin, &path, &ends, &h).await;
    let third = committed_lines(&mut h, &table, 3).await;
    let log = h.log();
    assert_eq!(third.len(), 3, "{log}");
    assert!(
        third[2].contains(&format!("sha256:{}", sha12(&v2))),
        "{log}"
    );

    let rows = paimon::rows(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(business(&rows), expected(30_000), "exactly the Fluss rows");
    assert!(h.exited().is_none(), "host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

/// A compile bomb dropped into a live host's plugin directory (a small component that keeps
/// Cranelift busy for minutes) is compiled in a child process and refused at the compile
/// deadline. Meanwhile the host answers `/healthz`, its heartbeats go on (`/readyz` stays
/// 200) and it tiers; a good new plugin installed with the bomb loads once the bomb is
/// refused, and the refused bomb is not compiled again while it is unchanged (until SIGHUP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compile_bomb_never_stalls_a_live_host() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name("bomb");
    let path = TablePath::new("fluss", &table);
    data::create_table(&admin, &path, &data::lake_log_table(1, Some("id"), "1s")).await;

    let dir = repo_root().join("target/test-scratch").join(&table);
    std::fs::create_dir_all(&dir).unwrap();
    let v1 = std::fs::read(host::plugin("paimon")).unwrap();
    // A small plugin, compiled in a second or two even on a loaded machine.
    let good = host::evil_with_version("after-the-bomb");
    host::install_plugin(&dir, "paimon", &v1);
    let metrics = format!(
        "127.0.0.1:{}",
        fluss_lake_e2e::prometheus::free_port().unwrap()
    );
    let dir_arg = dir.display().to_string();
    let mut h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[],
            &[
                "--plugin-dir",
                &dir_arg,
                "--plugin-watch-interval",
                "1s",
                "--plugin-compile-timeout",
                "10s",
                "--metrics.address",
                &metrics,
            ],
        ),
        &format!("{table}-host"),
    );
    let get = |target: &str| fluss_lake_e2e::prometheus::http_get(&metrics, target);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !get("/readyz").is_ok_and(|(status, _)| status == 200) {
        assert!(
            std::time::Instant::now() < deadline,
            "never ready:\n{}",
            h.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The bomb sorts before evil.wasm: the poll that finds both compiles it first.
    std::fs::write(
        dir.join("bomb.wasm"),
        fluss_lake_e2e::bombs::compile_bomb(40_000, 900),
    )
    .unwrap();
    std::fs::write(dir.join("evil.wasm"), &good).unwrap();
    h.wait_for_log("compiling plugin", Duration::from_secs(30))
        .await;
    // While it compiles: health answers, heartbeats keep the host ready, rounds commit.
    data::write_rows(&conn, &path, 0, 1_000, 1_000).await;
    let probing = std::time::Instant::now();
    while probing.elapsed() < Duration::from_secs(8) {
        let asked = std::time::Instant::now();
        let (healthz, _) = get("/healthz").unwrap();
        let (readyz, body) = get("/readyz").unwrap();
        assert_eq!((healthz, readyz), (200, 200), "{body}\n{}", h.log());
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "health answered after {:?}",
            asked.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let log = h.log();
    assert!(
        !log.contains("compiling took longer"),
        "the bomb compiled for under 8 s:\n{log}"
    );
    assert!(
        log.contains(&committed(&table)),
        "no round committed while the bomb compiled:\n{log}"
    );

    h.wait_for_log(
        "compiling took longer than 10 s (--plugin-compile-timeout); refused",
        Duration::from_secs(60),
    )
    .await;
    h.wait_for_log(&format!("sha256:{}", sha12(&good)), Duration::from_secs(60))
        .await;
    // Unchanged, the bomb is not compiled again by the next polls.
    tokio::time::sleep(Duration::from_secs(4)).await;
    // (Its refusal may be logged again: a file read right after it changed is read again,
    // and found to hold what was refused.)
    let compiles = |log: &str| log.matches("bomb.wasm bytes=").count();
    let log = h.log();
    assert_eq!(compiles(&log), 1, "{log}");
    // SIGHUP asks for refused files to be tried again (an overloaded host may have cut a
    // good compile): the bomb is compiled, and cut, once more.
    h.sighup();
    h.wait_for_log_count("bomb.wasm bytes=", 2, Duration::from_secs(60))
        .await;
    let log = h.log();
    assert_eq!(compiles(&log), 2, "{log}");
    assert!(h.exited().is_none(), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
