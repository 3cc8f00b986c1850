//! Log gaps: a tiered bucket whose log no longer starts at the lake's offset is never tiered on
//! with a silent gap.
//!
//! Fluss keeps a lake-enabled table's log segments until they are tiered, so a gap opens when
//! the lake is turned off for a while: a one-second `table.log.ttl` then expires rows the lake
//! never received. On the cluster that rolls 4 KiB log segments and moves them to remote
//! storage each second (`cluster::lease_kv_snapshots`), three tables are tiered once, turned
//! lake-off and written until every bucket's log starts past the lake's offset, then turned
//! lake-on again. With the host back:
//! - a log table on the default policy (`refuse`): one error per bucket naming the lost range,
//!   the `fluss_lake_table_log_gap_records` gauge at the records lost, and nothing committed;
//! - a log table with `lake.tiering.on-log-gap = accept`: tiered on from the log start; the lake
//!   snapshot that crossed the gap records it in `fluss-log-gap`, and the lake holds exactly the
//!   offsets before the gap and from its end on, none twice;
//! - a primary-key table: refused whatever the policy (its changelog cannot skip rows).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use fluss::client::FlussAdmin;
use fluss::metadata::{
    AlterConfig, AlterConfigOpType, AlterTableChanges, DataTypes, Schema, TableDescriptor,
    TablePath,
};
use fluss::row::GenericRow;
use fluss::rpc::message::OffsetSpec;
use fluss_lake_e2e::host::{self, HostProcess};
use fluss_lake_e2e::lake_check::assert_no_duplicate_offsets;
use fluss_lake_e2e::{cluster, data, paimon, prometheus, unique_name};

const BUCKETS: i32 = 2;

/// A lake log table of [`BUCKETS`] buckets whose log keeps expired segments one second.
fn log_table(accept_gaps: bool) -> TableDescriptor {
    let base = data::lake_log_table(BUCKETS, Some("id"), "2s");
    let mut b = TableDescriptor::builder()
        .schema(base.schema().clone())
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.log.ttl", "1s");
    for (k, v) in base.properties() {
        b = b.property(k.clone(), v.clone());
    }
    if accept_gaps {
        b = b.custom_property("lake.tiering.on-log-gap", "accept");
    }
    b.build().unwrap()
}

fn pk_table() -> TableDescriptor {
    let schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("name", DataTypes::string())
        .primary_key(vec!["id"])
        .unwrap()
        .build()
        .unwrap();
    TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(BUCKETS), vec!["id".into()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s")
        .property("table.log.ttl", "1s")
        .custom_property("lake.tiering.on-log-gap", "accept")
        .build()
        .unwrap()
}

async fn upsert(conn: &fluss::client::FlussConnection, path: &TablePath, round: i64) {
    let writer = data::upsert_writer(conn, path).await;
    for id in 0..100 {
        let mut row = GenericRow::new(2);
        row.set_field(0, id);
        row.set_field(1, format!("r{round}"));
        writer.upsert(&row).unwrap();
    }
    writer.flush().await.unwrap();
}

/// Sets `table.datalake.enabled`.
async fn set_lake(admin: &FlussAdmin, path: &TablePath, enabled: bool) {
    let changes = AlterTableChanges {
        config_changes: vec![AlterConfig::new(
            "table.datalake.enabled",
            Some(enabled.to_string()),
            AlterConfigOpType::Set,
        )],
        ..Default::default()
    };
    admin.alter_table(path, false, changes).await.unwrap();
}

/// Bucket → the offset Fluss's latest lake snapshot holds it up to.
async fn lake_offsets(admin: &FlussAdmin, path: &TablePath) -> BTreeMap<i32, i64> {
    let s = admin.get_latest_lake_snapshot(path).await.unwrap();
    data::snapshot_offsets(&s)
        .into_iter()
        .map(|((_, b), o)| (b, o))
        .collect()
}

async fn log_starts(admin: &FlussAdmin, path: &TablePath) -> BTreeMap<i32, i64> {
    let buckets: Vec<i32> = (0..BUCKETS).collect();
    admin
        .list_offsets(path, &buckets, OffsetSpec::Earliest)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

async fn wait_tiered(admin: &FlussAdmin, path: &TablePath, h: &HostProcess) {
    let ends = data::all_log_end_offsets(admin, path).await;
    if let Err(e) =
        data::wait_for_all_lake_offsets(admin, path, &ends, Duration::from_secs(120)).await
    {
        panic!("{path}: {e}\nhost log:\n{}", h.log());
    }
}

/// The value of the gauge line of `metric` for table `table`, if the host exports one.
fn gauge(metrics: &str, metric: &str, table: &str) -> Option<i64> {
    let label = format!("table=\"{table}\"");
    metrics
        .lines()
        .find(|l| l.starts_with(metric) && l.contains(&label))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_whose_log_starts_past_the_lake_is_refused_or_skips_a_recorded_gap() {
    let c = cluster::lease_kv_snapshots("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("loggap");
    let refused = TablePath::new("fluss", format!("{id}_refused"));
    let accepted = TablePath::new("fluss", format!("{id}_accepted"));
    let pk = TablePath::new("fluss", format!("{id}_pk"));
    data::create_table(&admin, &refused, &log_table(false)).await;
    data::create_table(&admin, &accepted, &log_table(true)).await;
    data::create_table(&admin, &pk, &pk_table()).await;
    let logs = [&refused, &accepted];

    // Tiered once.
    let mut next_id = 0;
    for path in logs {
        data::write_rows(&conn, path, next_id, 200, 100).await;
    }
    next_id += 200;
    upsert(&conn, &pk, 0).await;
    let metrics = format!("127.0.0.1:{}", prometheus::free_port().unwrap());
    let args = host::args(
        &c.bootstrap,
        &[host::plugin("paimon")],
        &["--metrics.address", &metrics],
    );
    let mut h = HostProcess::spawn(&args, &format!("{id}-host"));
    for path in [&refused, &accepted, &pk] {
        wait_tiered(&admin, path, &h).await;
    }
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());

    // The lake off: written until every bucket's log starts past the lake's offset.
    let mut lake = HashMap::new();
    for path in [&refused, &accepted, &pk] {
        lake.insert(path.clone(), lake_offsets(&admin, path).await);
        set_lake(&admin, path, false).await;
    }
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut round = 1;
    loop {
        for path in logs {
            data::write_rows(&conn, path, next_id, 200, 100).await;
        }
        next_id += 200;
        upsert(&conn, &pk, round).await;
        round += 1;
        let mut behind = Vec::new();
        for path in [&refused, &accepted, &pk] {
            let starts = log_starts(&admin, path).await;
            for (b, start) in &starts {
                if *start <= lake[path].get(b).copied().unwrap_or(0) {
                    behind.push(format!("{path} bucket {b}: log starts at {start}"));
                }
            }
        }
        if behind.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "logs still hold the lake's offsets after 180 s: {behind:?} (lake {lake:?})"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut starts = HashMap::new();
    for path in [&refused, &accepted, &pk] {
        starts.insert(path.clone(), log_starts(&admin, path).await);
        set_lake(&admin, path, true).await;
    }

    let mut h = HostProcess::spawn(&args, &format!("{id}-host"));
    // Accepted: tiered on from the log start up to the log end.
    wait_tiered(&admin, &accepted, &h).await;
    // Refused (log table and primary-key table): one error per bucket, naming the range.
    for (path, way_out) in [
        (&refused, "--tiering.on-log-gap accept"),
        (&pk, "a primary-key bucket cannot skip changelog rows"),
    ] {
        for b in 0..BUCKETS {
            let from = lake[path][&b];
            let needle = format!(
                "bucket {b}: the lake holds it up to offset {from} but its log now starts at"
            );
            let deadline = Instant::now() + Duration::from_secs(120);
            let line = loop {
                let log = h.log();
                if let Some(l) = log
                    .lines()
                    .find(|l| l.contains(&format!("table={path}")) && l.contains(&needle))
                {
                    break l.to_string();
                }
                assert!(
                    Instant::now() < deadline,
                    "{path}: no error naming bucket {b}'s gap:\n{log}"
                );
                tokio::time::sleep(Duration::from_millis(300)).await;
            };
            assert!(line.contains("ERROR"), "{line}");
            assert!(line.contains("are lost to the lake"), "{line}");
            assert!(line.contains(way_out), "{line}");
        }
    }
    // The gauge: the records lost to the refused log table (its log start may still move).
    let mut lost_now = 0;
    for (b, start) in log_starts(&admin, &refused).await {
        lost_now += start - lake[&refused][&b];
    }
    let lost_then: i64 = starts[&refused]
        .iter()
        .map(|(b, s)| s - lake[&refused][b])
        .sum();
    let scraped = prometheus::http_get(&metrics, "/metrics").unwrap().1;
    let gap = gauge(
        &scraped,
        "fluss_lake_table_log_gap_records",
        refused.table(),
    )
    .unwrap_or_else(|| panic!("no log gap gauge for {refused}:\n{scraped}"));
    assert!(
        (lost_then..=lost_now).contains(&gap),
        "gauge {gap}, lost {lost_then}..={lost_now}"
    );
    assert_eq!(
        gauge(
            &scraped,
            "fluss_lake_table_log_gap_records",
            accepted.table()
        ),
        Some(0),
        "{scraped}"
    );
    // Nothing committed past a refused gap.
    for path in [&refused, &pk] {
        assert_eq!(lake_offsets(&admin, path).await, lake[path], "{path}");
    }
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());

    // The lake snapshot that crossed the gap records it, and the lake holds exactly the
    // offsets before each gap and from its end to the log end.
    let latest = paimon::snapshot(&c.paimon_warehouse, "fluss", accepted.table(), None);
    let latest_id = latest["id"].as_i64().unwrap();
    let recorded = (1..=latest_id)
        .rev()
        .find_map(|s| {
            let snap = paimon::snapshot(&c.paimon_warehouse, "fluss", accepted.table(), Some(s));
            snap["properties"]["fluss-log-gap"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no snapshot of {accepted} records fluss-log-gap: {latest}"));
    let mut gaps = BTreeMap::new();
    for g in recorded.split(',') {
        let (b, range) = g.split_once(':').unwrap();
        let (from, to) = range.split_once('-').unwrap();
        let b: i32 = b.parse().unwrap();
        let (from, to): (i64, i64) = (from.parse().unwrap(), to.parse().unwrap());
        assert_eq!(from, lake[&accepted][&b], "{recorded}");
        assert!(to >= starts[&accepted][&b], "{recorded}");
        gaps.insert(b, (from, to));
    }
    assert_eq!(gaps.len(), BUCKETS as usize, "{recorded}");
    let rows = paimon::rows(&c.paimon_warehouse, "fluss", accepted.table(), None);
    assert_no_duplicate_offsets(&rows, &[]);
    let ends = data::log_end_offsets(&admin, &accepted, BUCKETS).await;
    for b in 0..BUCKETS {
        let mut got: Vec<i64> = rows
            .iter()
            .filter(|r| r["__bucket"].as_i64() == Some(b.into()))
            .map(|r| r["__offset"].as_i64().unwrap())
            .collect();
        got.sort_unstable();
        let (from, to) = gaps[&b];
        let want: Vec<i64> = (0..from).chain(to..ends[&b]).collect();
        assert_eq!(got, want, "bucket {b}: gap {from}..{to}, end {}", ends[&b]);
    }
    drop(c);
    cluster::done_with_kv_cluster();
}
