//! A real Prometheus (Debian's package, cluster/prometheus) scrapes a host tiering a real
//! cluster: the records it reports written are the rows in the lake, the lag drops to 0
//! after the round, a table routed to the evil plugin moves the failure and trap counters
//! (and the suggested trap alert), every query of the Grafana dashboard runs, `/readyz`
//! turns unready while the coordinator is frozen (SIGSTOP) and ready again after, and the
//! JSON log names round, table, plugin and bucket in the lines of a round.

use std::path::Path;
use std::time::{Duration, Instant};

use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::{self, FrozenCoordinator};
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::prometheus::{self, ALERT_RULES, Prometheus, Sample, http_get};
use fluss_lake_e2e::{data, host, paimon, unique_name};

/// The one value of a query that selects one series.
fn single(samples: &[Sample]) -> Option<f64> {
    match samples {
        [(_, v)] => Some(*v),
        _ => None,
    }
}

/// Polls the host's `/readyz` until its status is `want`; returns the body.
async fn wait_readyz(address: &str, want: u16, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let answer = http_get(address, "/readyz");
        if let Ok((status, body)) = &answer
            && *status == want
        {
            return body.clone();
        }
        assert!(
            Instant::now() < deadline,
            "/readyz did not answer {want} within {timeout:?}: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_sees_rounds_lag_failures_and_readiness() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("ops");
    let good = TablePath::new("fluss", format!("{id}_good"));
    let trap = TablePath::new("fluss", format!("{id}_trap"));
    data::create_table(&admin, &good, &data::lake_log_table(2, Some("id"), "3s")).await;
    data::create_table(
        &admin,
        &trap,
        &data::lake_log_table_with(1, "1s", "evil.mode", "trap"),
    )
    .await;
    data::write_rows(&conn, &good, 0, 3_000, 1_000).await;
    data::write_rows(&conn, &trap, 0, 100, 100).await;

    let address = format!("127.0.0.1:{}", prometheus::free_port().unwrap());
    let prom = Prometheus::start_with_rules(&[&address], &[Path::new(ALERT_RULES)]).unwrap();
    let wh = c.paimon_warehouse.display().to_string();
    let mut h = host::HostProcess::spawn_with_env(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon"), host::plugin("evil")],
            &[
                "--route",
                &format!("fluss.{}=evil", trap.table()),
                "--datalake.evil.warehouse",
                &wh,
                "--metrics.address",
                &address,
                "--rpc.timeout",
                "3s",
                "--log.format",
                "json",
                "--log.progress-interval",
                "1s",
            ],
        ),
        &format!("{id}-host"),
        // Each split pauses after its first batch: long enough for a progress line.
        &[("FLUSS_LAKE_HOST_FAILPOINTS", "after-first-write=sleep:2000")],
    );
    // Listening before the plugins load.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !http_get(&address, "/healthz").is_ok_and(|(status, _)| status == 200) {
        assert!(Instant::now() < deadline, "no /healthz:\n{}", h.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Rows tiered = records the host reports written, and the lag is gone.
    let ends = data::all_log_end_offsets(&admin, &good).await;
    wait_registered(&c, &admin, &good, &ends, &h).await;
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", good.table(), None);
    assert_eq!(lake.len(), 3_000);
    let sel = format!("{{table=\"{}\"}}", good.table());
    let wait = |q: String, ok: fn(f64) -> bool| {
        let prom = &prom;
        async move {
            prom.wait_for(&q, |r| single(r).is_some_and(ok), Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };
    let written = wait(
        format!("fluss_lake_table_records_written_total{sel}"),
        |v| v == 3_000.0,
    )
    .await;
    let paimon_digest =
        fluss_lake_host::plugin::source::digest(&std::fs::read(host::plugin("paimon")).unwrap());
    let labels = &written[0].0;
    assert_eq!(labels["database"], "fluss");
    assert_eq!(labels["format"], "paimon");
    assert_eq!(labels["plugin_digest"], paimon_digest[..12]);
    wait(format!("fluss_lake_table_lag_records{sel}"), |v| v == 0.0).await;
    wait(format!("fluss_lake_table_records_read_total{sel}"), |v| {
        v == 3_000.0
    })
    .await;
    for positive in [
        "fluss_lake_table_rounds_committed_total",
        "fluss_lake_table_read_bytes_total",
        "fluss_lake_table_written_bytes_total",
        "fluss_lake_table_files_written_total",
        "fluss_lake_table_commit_duration_seconds_count",
        "fluss_lake_table_lake_size_bytes",
    ] {
        wait(format!("{positive}{sel}"), |v| v > 0.0).await;
    }
    wait(format!("fluss_lake_table_lake_records{sel}"), |v| {
        v == 3_000.0
    })
    .await;
    // The table's own freshness (3s), which the no-commit alert compares the commit age with.
    wait(
        format!("fluss_lake_table_freshness_target_seconds{sel}"),
        |v| v == 3.0,
    )
    .await;
    wait(format!("fluss_lake_table_freshness_seconds{sel}"), |v| {
        (0.0..600.0).contains(&v)
    })
    .await;

    // More rows: the counters follow the lake, not a fixed number.
    data::write_rows(&conn, &good, 3_000, 1_000, 1_000).await;
    let ends = data::all_log_end_offsets(&admin, &good).await;
    wait_registered(&c, &admin, &good, &ends, &h).await;
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", good.table(), None);
    assert_eq!(business(&lake).len(), 4_000);
    wait(
        format!("fluss_lake_table_records_written_total{sel}"),
        |v| v == 4_000.0,
    )
    .await;
    wait(format!("fluss_lake_table_lag_records{sel}"), |v| v == 0.0).await;

    // The evil table's rounds fail with a trap: counted, and the suggested alert sees it.
    let trap_sel = format!("{{table=\"{}\",reason=\"plugin\"}}", trap.table());
    wait(
        format!("fluss_lake_table_rounds_failed_total{trap_sel}"),
        |v| v >= 2.0,
    )
    .await;
    wait(
        "fluss_lake_plugin_traps_total{format=\"evil\",function=\"batch-writer.write\"}"
            .to_string(),
        |v| v >= 2.0,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let alerts = prom.alerts().unwrap();
        if alerts.iter().any(|a| {
            a.labels.get("alertname").map(String::as_str) == Some("FlussLakePluginTrapped")
                && a.labels.get("format").map(String::as_str) == Some("evil")
        }) {
            break;
        }
        assert!(Instant::now() < deadline, "no trap alert: {alerts:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        prom.rules().unwrap().iter().all(|r| r.health == "ok"),
        "{:?}",
        prom.rules()
    );
    // The host-wide series.
    wait("fluss_lake_heartbeats_sent_total".into(), |v| v > 0.0).await;
    wait("fluss_lake_table_slots".into(), |v| v > 0.0).await;
    wait("fluss_lake_ready".into(), |v| v == 1.0).await;
    let loaded = prom.query("fluss_lake_plugin_info").unwrap();
    let mut formats: Vec<&str> = loaded.iter().map(|(l, _)| l["format"].as_str()).collect();
    formats.sort();
    assert_eq!(formats, ["evil", "paimon"], "{loaded:?}");

    // Every query of the dashboard is valid PromQL, and the core panels have data.
    let results = prometheus::check_dashboard_queries(&prom).unwrap();
    for (expr, series) in &results {
        let core = ["records_written", "lag_records", "rounds_committed"]
            .iter()
            .any(|m| expr.contains(m));
        assert!(
            !core || *series > 0,
            "no data for the dashboard query {expr}"
        );
    }

    // Readiness follows the coordinator: unready while it is frozen, ready after.
    let body = wait_readyz(&address, 200, Duration::from_secs(10)).await;
    assert!(body.contains("ok coordinator: last heartbeat"), "{body}");
    {
        let _frozen = FrozenCoordinator::freeze(&c);
        let body = wait_readyz(&address, 503, Duration::from_secs(30)).await;
        assert!(body.contains("FAIL coordinator"), "{body}");
        assert!(body.contains("ok plugins: 2 loaded"), "{body}");
        // Listening before the plugins load.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !http_get(&address, "/healthz").is_ok_and(|(status, _)| status == 200) {
            assert!(Instant::now() < deadline, "no /healthz:\n{}", h.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        wait("fluss_lake_ready".into(), |v| v == 0.0).await;
    }
    wait_readyz(&address, 200, Duration::from_secs(60)).await;
    wait("fluss_lake_heartbeats_failed_total".into(), |v| v >= 1.0).await;

    // JSON logs: a line per event, the round's context in its span.
    let log = h.log();
    let events: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(events.len() > 10, "{log}");
    let of_good = |e: &&serde_json::Value| {
        e["span"]["table"].as_str() == Some(&format!("fluss.{}", good.table()))
    };
    let started = events
        .iter()
        .filter(of_good)
        .find(|e| e["message"] == "tiering round started")
        .unwrap_or_else(|| panic!("no round start in the JSON log:\n{log}"));
    assert!(started["span"]["round"].as_str().is_some(), "{started}");
    assert!(
        started["span"]["plugin"]
            .as_str()
            .is_some_and(|p| p == format!("paimon@{}", &paimon_digest[..12])),
        "{started}"
    );
    let progress = events
        .iter()
        .filter(of_good)
        .find(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("tiering progress: "))
        })
        .unwrap_or_else(|| panic!("no progress line in the JSON log:\n{log}"));
    assert!(
        progress["records_to_do"].as_u64().is_some_and(|n| n > 0),
        "{progress}"
    );
    let trapped = events.iter().find(|e| {
        e["span"]["table"].as_str() == Some(&format!("fluss.{}", trap.table()))
            && e["span"]["bucket"].as_u64() == Some(0)
            && e["span"]["round"].is_string()
            && e["span"]["plugin"]
                .as_str()
                .is_some_and(|p| p.starts_with("evil@"))
    });
    assert!(trapped.is_some(), "no split line of the evil table:\n{log}");
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
