//! Hostile maintenance: the `evil` plugin's `maintain` spins forever, reports 50 000
//! snapshots or fails, on tables that ask for snapshot expiry. Every round is still
//! committed and registered in Fluss (maintenance runs after both commits), the host says
//! what happened in one line and stays up, and the honest table's plugin is told, after each
//! round, exactly the snapshot Fluss registered as the one to keep. A table that asks for no
//! maintenance is never maintained. What a `maintain` call reports through
//! `maintenance-status` (the last value) becomes the table's over-budget gauge; what a `write`
//! reports there is ignored.

use std::time::Duration;

use fluss::metadata::{TableDescriptor, TablePath};
use fluss_lake_e2e::lake_check::wait_registered;
use fluss_lake_e2e::{cluster, data, host, prometheus, unique_name};

/// Mode → what the host log must say about it.
const MODES: &[(&str, &str)] = &[
    (
        "maintain-loop",
        "call deadline in maintenance.maintain and was interrupted",
    ),
    (
        "maintain-flood",
        "reported 50000 snapshots committed by one maintenance call (at most 10000)",
    ),
    ("maintain-fail", "deliberately failed maintenance"),
];

fn table(mode: &str, expire: bool) -> TableDescriptor {
    let base = data::lake_log_table(1, Some("id"), "1s");
    let mut b = TableDescriptor::builder()
        .schema(base.schema().clone())
        .distributed_by(Some(1), vec!["id".to_string()])
        .custom_property("evil.mode", mode);
    for (k, v) in base.properties() {
        b = b.property(k.clone(), v.clone());
    }
    if expire {
        b = b.property("table.datalake.auto-expire-snapshot", "true");
    }
    b.build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_maintenance_never_undoes_or_blocks_a_round() {
    let mut c = cluster::lease_mixed();
    c.set_lake_format("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("evilmaint");
    let mut tables = Vec::new();
    for (mode, _) in MODES.iter().chain(&[("", "")]) {
        let name = if mode.is_empty() {
            "honest".to_string()
        } else {
            mode.replace('-', "_")
        };
        let path = TablePath::new("fluss", format!("{id}_{name}"));
        data::create_table(&admin, &path, &table(mode, true)).await;
        tables.push(path);
    }
    let over_budget = TablePath::new("fluss", format!("{id}_over_budget"));
    data::create_table(&admin, &over_budget, &table("over-budget", true)).await;
    tables.push(over_budget.clone());
    let unmaintained = TablePath::new("fluss", format!("{id}_unmaintained"));
    data::create_table(&admin, &unmaintained, &table("", false)).await;
    tables.push(unmaintained.clone());

    let wh = c.paimon_warehouse.display().to_string();
    let metrics = format!("127.0.0.1:{}", prometheus::free_port().unwrap());
    let mut h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("evil")],
            &[
                "--route",
                &format!("fluss.{id}_*=evil"),
                "--datalake.evil.warehouse",
                &wh,
                "--plugin-call-timeout",
                "3s",
                "--lake.tiering.max-concurrent-tables",
                "10",
                "--tiering.poll.table.interval",
                "1s",
                "--tiering.heartbeat.interval",
                "1s",
                "--metrics.address",
                &metrics,
            ],
        ),
        &format!("{id}-host"),
    );

    // Three rounds per table, each registered in Fluss whatever its maintenance did.
    for round in 0..3i64 {
        for path in &tables {
            data::write_rows(&conn, path, round * 10, 10, 10).await;
        }
        for path in &tables {
            let ends = data::all_log_end_offsets(&admin, path).await;
            wait_registered(&c, &admin, path, &ends, &h).await;
        }
    }
    for (mode, needle) in MODES {
        h.wait_for_log(needle, Duration::from_secs(60)).await;
        let _ = mode;
    }
    let log = h.log();
    assert!(
        log.contains("table maintenance failed (the round is committed"),
        "{log}"
    );
    assert!(h.exited().is_none(), "host exited:\n{log}");

    // The honest table's plugin was asked after every round, always to keep the snapshot
    // Fluss registered by that round (the evil lake numbers its snapshots 1, 2, 3).
    let honest = c
        .paimon_warehouse
        .join(format!("fluss/{id}_honest/maintained"));
    let mut requests: Vec<String> = std::fs::read_dir(&honest)
        .unwrap_or_else(|e| panic!("{}: {e}\n{log}", honest.display()))
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    requests.sort();
    assert_eq!(
        requests,
        [1, 2, 3]
            .map(|n| format!("keep-since=Some({n}) expire=true compact=false"))
            .to_vec(),
        "{log}"
    );
    // The last value the over-budget table's `maintain` reported, not u32::MAX, not the
    // 1 000 its writes reported; 0 for the honest table, which reports nothing.
    h.wait_for_log("over_budget=7", Duration::from_secs(60))
        .await;
    let (status, text) = prometheus::http_get(&metrics, "/metrics").unwrap();
    assert_eq!(status, 200, "{text}");
    let gauge = |table: &str| {
        let key = format!("table=\"{id}_{table}\"");
        text.lines()
            .find(|l| {
                l.starts_with("fluss_lake_table_maintenance_over_budget_parts{") && l.contains(&key)
            })
            .and_then(|l| l.rsplit(' ').next())
            .map(str::to_string)
    };
    assert_eq!(gauge("over_budget").as_deref(), Some("7"), "{text}");
    assert_eq!(gauge("honest").as_deref(), Some("0"), "{text}");
    let registered = admin.get_latest_lake_snapshot(&tables[3]).await.unwrap();
    assert_eq!(registered.snapshot_id, 3);
    assert!(
        !c.paimon_warehouse
            .join(format!("fluss/{id}_unmaintained/maintained"))
            .exists(),
        "a table that asks for no maintenance was maintained"
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
