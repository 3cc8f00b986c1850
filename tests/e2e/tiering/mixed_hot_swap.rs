//! Hot swap on a live host against a real cluster: a plugin file replaced while a round is
//! in flight is picked up on SIGHUP; the round in flight finishes on the version it started
//! with, the next rounds run on the new one, and a broken new version is refused while the
//! loaded one keeps serving. Every round's commit names the plugin digest it ran on.

use std::path::Path;
use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, paimon, repo_root, unique_name};
use serde_json::Value;

fn sha12(bytes: &[u8]) -> String {
    fluss_lake_host::plugin::source::digest(bytes)[..12].to_string()
}

/// Replaces the plugin file the way a deployment does: write aside, then rename over.
fn install(dir: &Path, bytes: &[u8]) {
    let tmp = dir.join("paimon.wasm.tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(tmp, dir.join("paimon.wasm")).unwrap();
}

fn sighup(h: &host::HostProcess) {
    let status = std::process::Command::new("kill")
        .args(["-HUP", &h.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
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
    install(&dir, &v1);

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
    install(&dir, &v2);
    sighup(&h);
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
    install(&dir, &v2[..v2.len() / 2]);
    sighup(&h);
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
