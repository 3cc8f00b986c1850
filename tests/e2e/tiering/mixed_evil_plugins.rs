//! The adversarial guest suite inside a live host on a real cluster: tables routed to the
//! `evil` plugin (one misbehaviour each) fail their rounds with clear errors, again and
//! again, while a Paimon table in the same host keeps tiering exactly; the host never
//! exits, Fluss registers no lake snapshot for any evil table, and nothing is written
//! outside the evil tables' own locations.

use std::time::Duration;

use fluss::metadata::{TableDescriptor, TablePath};
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, paimon, unique_name};
use serde_json::Value;

/// Mode → what the host log must say about it.
const MODES: &[(&str, &str)] = &[
    ("trap", "trapped in batch-writer.write"),
    (
        "loop",
        "call deadline in batch-writer.write and was interrupted",
    ),
    (
        "memory",
        "exceeded its memory limit of 536870912 bytes in batch-writer.write",
    ),
    (
        "huge-result",
        "handed the host more than the 68157440 bytes one call may carry in batch-writer.complete",
    ),
    ("escape", "every escape was refused"),
    (
        "malformed",
        "returned a malformed commit result: snapshot id -7",
    ),
    (
        "forged-offsets",
        "is not one the coordinator wrote for this table",
    ),
    (
        "unsure-commit",
        "the connection was lost after the commit was sent",
    ),
    (
        "own-offsets",
        "_own_offsets: the plugin reported a lake snapshot 1 Fluss missed, but its offsets file is not one the coordinator wrote",
    ),
    (
        "replay-offsets",
        "cannot be read: No such file or directory",
    ),
    (
        "sleep",
        "blocked in a host call past its 3s call deadline in batch-writer.write and was abandoned",
    ),
    (
        "disk-fill",
        "over the round's storage quota of 16777216 bytes",
    ),
];

fn evil_table(mode: &str) -> TableDescriptor {
    data::lake_log_table_with(1, "2s", "evil.mode", mode)
}

fn expected(upto: i64) -> Vec<Value> {
    data::sorted_by_id(data::canonical_rows(&data::batch(0, upto as usize)))
}

fn all_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evil_plugins_fail_their_own_tables_only() {
    let mut c = cluster::lease_mixed();
    c.set_lake_format("paimon");
    // Files earlier tests left in the cluster's warehouse are not this test's.
    let earlier: std::collections::HashSet<_> =
        all_files(&c.paimon_warehouse).into_iter().collect();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("evil");
    let good = TablePath::new("fluss", format!("{id}_good"));
    data::create_table(&admin, &good, &data::lake_log_table(2, Some("id"), "2s")).await;
    let good_location = format!("fluss.db/{}", good.table());
    let mut evil = Vec::new();
    for (mode, _) in MODES {
        let path = TablePath::new("fluss", format!("{id}_{}", mode.replace('-', "_")));
        data::create_table(&admin, &path, &evil_table(mode)).await;
        data::write_rows(&conn, &path, 0, 100, 100).await;
        evil.push(path);
    }
    let _ = std::fs::remove_file("/tmp/fluss-evil-escaped.txt");

    let wh = c.paimon_warehouse.display().to_string();
    let route = format!("fluss.{id}_*=evil");
    let mut h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon"), host::plugin("evil")],
            &[
                // The first rule keeps the good table on Paimon; the second sends every
                // other table of this test to the evil plugin.
                "--route",
                &format!("fluss.{id}_good=paimon"),
                "--route",
                &route,
                "--datalake.evil.warehouse",
                &wh,
                "--plugin-call-timeout",
                "3s",
                "--plugin-memory-limit",
                "512mb",
                "--plugin-max-result-size",
                "8mb",
                "--plugin-round-write-limit",
                "16mb",
                "--lake.tiering.max-concurrent-tables",
                "10",
                "--tiering.poll.table.interval",
                "1s",
                "--tiering.heartbeat.interval",
                "2s",
            ],
        ),
        &format!("{id}-host"),
    );

    // The good table tiers, round after round, while the evil ones fail around it.
    for wave in 0..3 {
        data::write_rows(&conn, &good, wave * 5_000, 5_000, 2_500).await;
        let ends = data::all_log_end_offsets(&admin, &good).await;
        wait_registered(&c, &admin, &good, &ends, &h).await;
    }
    for (mode, needle) in MODES {
        h.wait_for_log(needle, Duration::from_secs(120)).await;
        let _ = mode;
    }
    let log = h.log();
    assert!(!log.contains("ESCAPED"), "{log}");
    // The unsure commit published its snapshot and then failed, and the plugin could not
    // say whether anything was published: every file the snapshot names is still there.
    let unsure = c.paimon_warehouse.join(format!("fluss/{id}_unsure_commit"));
    let body = std::fs::read_to_string(unsure.join("snapshots/1"))
        .expect("the unsure commit published snapshot 1");
    let published: Vec<&str> = body
        .lines()
        .take_while(|l| !l.contains('='))
        .flat_map(|l| l.split(','))
        .filter(|p| !p.is_empty())
        .collect();
    assert!(!published.is_empty(), "{body}");
    for file in published {
        assert!(
            unsure.join(file).exists(),
            "{file} of the published snapshot was deleted:\n{log}"
        );
    }
    assert!(
        log.contains("the lake commit failed and whether it was published cannot be told"),
        "{log}"
    );
    assert!(h.exited().is_none(), "host exited:\n{log}");

    assert_eq!(
        business(&paimon::rows(
            &c.paimon_warehouse,
            "fluss",
            good.table(),
            None
        )),
        expected(15_000),
        "the good table holds exactly the Fluss data"
    );
    for path in &evil {
        let snapshot = admin.get_latest_lake_snapshot(path).await;
        assert!(
            snapshot.is_err(),
            "Fluss registered a lake snapshot for {path}: {:?}",
            snapshot.map(|s| s.snapshot_id)
        );
    }
    // Evil writes stay under `<warehouse>/fluss/<evil table>/`; nothing escaped.
    assert!(!std::path::Path::new("/tmp/fluss-evil-escaped.txt").exists());
    for f in all_files(&c.paimon_warehouse.join("fluss")) {
        if earlier.contains(&f) {
            continue;
        }
        let rel = f.strip_prefix(c.paimon_warehouse.join("fluss")).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .to_string();
        assert!(
            top.starts_with(&format!("{id}_")),
            "evil file outside its table: {}",
            f.display()
        );
    }
    for f in all_files(&c.paimon_warehouse.join(&good_location)) {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            !name.starts_with("-1-"),
            "evil file in the good table: {}",
            f.display()
        );
    }
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
