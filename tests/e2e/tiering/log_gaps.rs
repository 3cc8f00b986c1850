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
//! - primary-key tables in Paimon and Iceberg with `lake.tiering.on-log-gap = accept`, whose
//!   keys changed and were deleted in the gap: each bucket is rebuilt from the cluster's KV
//!   snapshot, replacing the bucket's lake files in the snapshot that records it in
//!   `fluss-replaced-buckets` (a merge would keep the deleted keys, and in Iceberg every key
//!   twice); the lake then reads as Fluss looks up every key, and the next rounds go on from the
//!   changelog.

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

use super::merge_engines::assert_lake_reads_as_fluss;

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

/// Round 0 upserts keys 0..100; later rounds upsert keys 0..90 and delete 90..100 (in the
/// gap: a lake that merged the rebuilt bucket into its old files would keep them).
async fn upsert(conn: &fluss::client::FlussConnection, path: &TablePath, round: i64) {
    let writer = data::upsert_writer(conn, path).await;
    let row = |id: i32, name: String| {
        let mut row = GenericRow::new(2);
        row.set_field(0, id);
        row.set_field(1, name);
        row
    };
    let kept = if round == 0 { 100 } else { 90 };
    for id in 0..kept {
        writer.upsert(&row(id, format!("r{round}"))).unwrap();
    }
    if round == 1 {
        for id in kept..100 {
            writer.delete(&row(id, "r0".to_string())).unwrap();
        }
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
async fn a_bucket_whose_log_starts_past_the_lake_is_refused_skips_a_recorded_gap_or_is_rebuilt() {
    let mut c = cluster::lease_kv_snapshots("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("loggap");
    let refused = TablePath::new("fluss", format!("{id}_refused"));
    let accepted = TablePath::new("fluss", format!("{id}_accepted"));
    let pk = TablePath::new("fluss", format!("{id}_pk"));
    let pk_iceberg = TablePath::new("fluss", format!("{id}_pk_iceberg"));
    // Each table in the format the cluster has when it is created.
    c.set_lake_format("iceberg");
    data::create_table(&admin, &pk_iceberg, &pk_table()).await;
    c.set_lake_format("paimon");
    data::create_table(&admin, &refused, &log_table(false)).await;
    data::create_table(&admin, &accepted, &log_table(true)).await;
    data::create_table(&admin, &pk, &pk_table()).await;
    let logs = [&refused, &accepted];
    let pks = [(&pk, "paimon"), (&pk_iceberg, "iceberg")];
    let all = [&refused, &accepted, &pk, &pk_iceberg];

    // Tiered once.
    let mut next_id = 0;
    for path in logs {
        data::write_rows(&conn, path, next_id, 200, 100).await;
    }
    next_id += 200;
    for (path, _) in pks {
        upsert(&conn, path, 0).await;
    }
    let metrics = format!("127.0.0.1:{}", prometheus::free_port().unwrap());
    // Fluss shows a table only the options of the cluster's current format (paimon): the host
    // is told where Iceberg's warehouse is.
    let iceberg_wh = c.iceberg_warehouse.display().to_string();
    let args = host::args(
        &c.bootstrap,
        &[host::plugin("paimon"), host::plugin("iceberg")],
        &[
            "--metrics.address",
            &metrics,
            "--datalake.iceberg.warehouse",
            &iceberg_wh,
        ],
    );
    let mut h = HostProcess::spawn(&args, &format!("{id}-host"));
    for path in all {
        wait_tiered(&admin, path, &h).await;
    }
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());

    // The lake off: written until every bucket's log starts past the lake's offset.
    let mut lake = HashMap::new();
    for path in all {
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
        for (path, _) in pks {
            upsert(&conn, path, round).await;
        }
        round += 1;
        let mut behind = Vec::new();
        for path in all {
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
    for path in all {
        starts.insert(path.clone(), log_starts(&admin, path).await);
        set_lake(&admin, path, true).await;
    }

    let mut h = HostProcess::spawn(&args, &format!("{id}-host"));
    // Accepted: tiered on from the log start up to the log end.
    wait_tiered(&admin, &accepted, &h).await;
    // Primary-key tables that accept gaps: every bucket rebuilt from its KV snapshot; the lake
    // then reads as Fluss looks up every key (the keys deleted in the gap are gone).
    for (path, format) in pks {
        let rows = assert_lake_reads_as_fluss(
            &c,
            &conn,
            &admin,
            format,
            path,
            &["id", "name"],
            &format!("{path} rebuilt"),
            &h,
        )
        .await;
        assert_eq!(rows.len(), 90, "{path}: {rows:?}");
        let after = lake_offsets(&admin, path).await;
        for b in 0..BUCKETS {
            assert!(
                after[&b] >= starts[path][&b],
                "{path} bucket {b}: {after:?}"
            );
        }
    }
    // The Paimon snapshot that rebuilt the buckets says so, as an OVERWRITE.
    let latest = paimon::snapshot(&c.paimon_warehouse, "fluss", pk.table(), None);
    let rebuilt = (1..=latest["id"].as_i64().unwrap())
        .rev()
        .map(|s| paimon::snapshot(&c.paimon_warehouse, "fluss", pk.table(), Some(s)))
        .find(|s| s["properties"]["fluss-replaced-buckets"].is_string())
        .unwrap_or_else(|| panic!("no snapshot of {pk} records fluss-replaced-buckets: {latest}"));
    assert_eq!(rebuilt["commit_kind"], "OVERWRITE", "{rebuilt}");
    let recorded = rebuilt["properties"]["fluss-replaced-buckets"]
        .as_str()
        .unwrap();
    assert_eq!(recorded.split(',').count(), BUCKETS as usize, "{recorded}");
    // The next rounds go on from the changelog.
    for (path, format) in pks {
        upsert(&conn, path, round).await;
        let rows = assert_lake_reads_as_fluss(
            &c,
            &conn,
            &admin,
            format,
            path,
            &["id", "name"],
            &format!("{path} after"),
            &h,
        )
        .await;
        assert!(
            rows.iter().all(|r| r["name"] == format!("r{round}")),
            "{path}: {rows:?}"
        );
    }
    // Refused (log table on the default policy): one error per bucket, naming the range.
    for (path, way_out) in [(&refused, "--tiering.on-log-gap accept")] {
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
    for path in [&accepted, &pk, &pk_iceberg] {
        assert_eq!(
            gauge(&scraped, "fluss_lake_table_log_gap_records", path.table()),
            Some(0),
            "{path}: {scraped}"
        );
    }
    for (path, _) in pks {
        let rebuilt = gauge(
            &scraped,
            "fluss_lake_table_buckets_rebuilt_total",
            path.table(),
        );
        assert_eq!(rebuilt, Some(BUCKETS as i64), "{path}: {scraped}");
    }
    // Nothing committed past a refused gap.
    assert_eq!(lake_offsets(&admin, &refused).await, lake[&refused]);
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
