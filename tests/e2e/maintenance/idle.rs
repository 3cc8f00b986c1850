//! Tables that get no new data, and a host that stops mid-maintenance, on the real cluster.
//!
//! - An idle table is still handed to the host once per freshness; its rounds commit nothing,
//!   yet its maintenance runs when due, at most once per `--maintenance.idle-interval`, keeping
//!   the snapshot Fluss registered. A table that asks for no maintenance is never maintained.
//! - SIGTERM while a plugin's `maintain` spins: the call is interrupted at once (the round's
//!   commits are done), the round is reported finished and the host exits well before the
//!   maintenance budget (the table's freshness) would have run out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use fluss::metadata::{TableDescriptor, TablePath};
use fluss_lake_e2e::lake_check::wait_registered;
use fluss_lake_e2e::{cluster, data, host, unique_name};

/// A log table of the evil plugin in `mode` (empty: honest), with the given freshness, asking
/// for snapshot expiry when `expire`.
fn table(mode: &str, freshness: &str, expire: bool) -> TableDescriptor {
    let base = data::lake_log_table(1, Some("id"), freshness);
    let mut b = TableDescriptor::builder()
        .schema(base.schema().clone())
        .distributed_by(Some(1), vec!["id".to_string()]);
    if !mode.is_empty() {
        b = b.custom_property("evil.mode", mode);
    }
    for (k, v) in base.properties() {
        b = b.property(k.clone(), v.clone());
    }
    if expire {
        b = b.property("table.datalake.auto-expire-snapshot", "true");
    }
    b.build().unwrap()
}

/// The requests the evil plugin recorded for a table (`maintained/NNNNNN`), oldest first, with
/// when each was written.
fn maintained(warehouse: &Path, path: &TablePath) -> Vec<(String, SystemTime)> {
    let dir: PathBuf = warehouse.join(format!("fluss/{}/maintained", path.table()));
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            (
                std::fs::read_to_string(&f).unwrap(),
                std::fs::metadata(&f).unwrap().modified().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_table_is_maintained_at_most_once_per_idle_interval() {
    let mut c = cluster::lease_mixed();
    c.set_lake_format("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("idlemaint");
    let idle = TablePath::new("fluss", format!("{id}_idle"));
    let plain = TablePath::new("fluss", format!("{id}_plain"));
    data::create_table(&admin, &idle, &table("", "1s", true)).await;
    data::create_table(&admin, &plain, &table("", "1s", false)).await;

    let wh = c.paimon_warehouse.display().to_string();
    let interval = Duration::from_secs(3);
    let mut h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("evil")],
            &[
                "--route",
                &format!("fluss.{id}_*=evil"),
                "--datalake.evil.warehouse",
                &wh,
                "--maintenance.idle-interval",
                "3s",
                "--lake.tiering.max-concurrent-tables",
                "4",
            ],
        ),
        &format!("{id}-host"),
    );

    // One round with data, then only rounds with nothing to commit (one per second).
    for path in [&idle, &plain] {
        data::write_rows(&conn, path, 0, 10, 10).await;
    }
    for path in [&idle, &plain] {
        let ends = data::all_log_end_offsets(&admin, path).await;
        wait_registered(&c, &admin, path, &ends, &h).await;
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let requests = loop {
        let requests = maintained(&c.paimon_warehouse, &idle);
        if requests.len() >= 4 {
            break requests;
        }
        assert!(
            Instant::now() < deadline,
            "the idle table was maintained {} time(s) in 90 s, only after its one commit: {:?}\n{}",
            requests.len(),
            requests,
            h.log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let log = h.log();
    // Fluss registered the one snapshot the round committed, and every call keeps it.
    let registered = admin.get_latest_lake_snapshot(&idle).await.unwrap();
    assert_eq!(registered.snapshot_id, 1);
    for (request, _) in &requests {
        assert_eq!(
            request, "keep-since=Some(1) expire=true compact=false",
            "{log}"
        );
    }
    // Rounds come every second, maintenance at most every three: the calls after the first
    // (after the commit) are at least the interval apart, give or take the call's own start.
    for pair in requests.windows(2) {
        let gap = pair[1].1.duration_since(pair[0].1).unwrap();
        assert!(
            gap >= interval - Duration::from_millis(500),
            "two maintenance calls {gap:?} apart with a {interval:?} idle interval\n{log}"
        );
    }
    assert!(log.contains("idle=true"), "{log}");
    assert!(
        maintained(&c.paimon_warehouse, &plain).is_empty(),
        "a table that asks for no maintenance was maintained"
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

/// Assertions about wall time: `scripts/test.sh` runs them afterwards, one at a time.
mod alone {
    use super::*;

    /// The table's freshness, which is the maintenance call's budget: a host that waited for the
    /// spinning call would exit about this long after SIGTERM.
    const FRESHNESS: Duration = Duration::from_secs(40);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_shutdown_stops_a_running_maintenance_at_once() {
        let mut c = cluster::lease_mixed();
        c.set_lake_format("paimon");
        let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
        let admin = conn.get_admin().unwrap();
        let id = unique_name("stopmaint");
        let path = TablePath::new("fluss", format!("{id}_loop"));
        let freshness = format!("{}s", FRESHNESS.as_secs());
        data::create_table(&admin, &path, &table("maintain-loop", &freshness, true)).await;
        data::write_rows(&conn, &path, 0, 10, 10).await;

        let wh = c.paimon_warehouse.display().to_string();
        let mut h = host::HostProcess::spawn(
            &host::args(
                &c.bootstrap,
                &[host::plugin("evil")],
                &[
                    "--route",
                    &format!("fluss.{id}_*=evil"),
                    "--datalake.evil.warehouse",
                    &wh,
                    "--shutdown.grace-period",
                    "2min",
                ],
            ),
            &format!("{id}-host"),
        );
        // The coordinator hands a new table over one freshness after its creation.
        let ends = data::all_log_end_offsets(&admin, &path).await;
        wait_registered(&c, &admin, &path, &ends, &h).await;
        h.wait_for_log("table maintenance started", Duration::from_secs(60))
            .await;
        tokio::time::sleep(Duration::from_secs(1)).await;

        let sent = Instant::now();
        let status = h.terminate(FRESHNESS / 2);
        let took = sent.elapsed();
        let log = h.log();
        assert!(
            took < FRESHNESS / 2 && status.is_some_and(|s| s.success()),
            "the host took {took:?} to exit after SIGTERM while a maintenance call ran ({status:?})\n{log}"
        );
        assert!(
            log.contains("table maintenance stopped") && log.contains("shutting_down=true"),
            "{log}"
        );
        // The round was over (committed and registered) and is reported finished, not failed.
        assert!(!log.contains("reporting unfinished rounds failed"), "{log}");
        let registered = admin.get_latest_lake_snapshot(&path).await.unwrap();
        assert_eq!(registered.snapshot_id, 1);
    }
}
