//! Scale, reduced to fit the suite: 200 lake tables and one table of 10 partitions × 32
//! buckets, tiered by one host. Every table converges exactly, and what the host sends the
//! coordinator is bounded by its concurrency, not by the tables it serves (Fluss #3811 and
//! `bench --workloads scale-tables,scale-buckets` measure the full size). Sizes are asserted,
//! never times.

use std::collections::HashMap;
use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::host_metrics::Exposition;
use fluss_lake_e2e::lake_check::{assert_no_duplicate_offsets, business};
use fluss_lake_e2e::{cluster, data, host, paimon, prometheus, python, unique_name};
use fluss_lake_host::tiering::service::MAX_TABLE_ENTRY_BYTES;
use futures::StreamExt;
use serde_json::Value;

const TABLES: usize = 200;
const ROWS_PER_TABLE: usize = 50;
const PARTITIONS: usize = 10;
const BUCKETS: i32 = 32;
/// About four rows per bucket; hashing leaves some buckets empty, which must not matter.
const ROWS_PER_PARTITION: usize = 128;
/// The host's `lake.tiering.max-concurrent-tables`.
const SLOTS: usize = 4;
/// Tables (or partitions) written at once.
const WRITERS: usize = 8;
/// Due this soon after creation, so every table waits in the coordinator's queue when the
/// host starts; then made long, so each table gets one round (no idle rounds meanwhile).
const CREATE_FRESHNESS: &str = "2s";
const LONG_FRESHNESS: &str = "30min";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_tables_and_320_buckets_converge_with_heartbeats_bounded_by_slots() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("scale");
    let wide = TablePath::new("fluss", format!("{id}_wide"));
    let small: Vec<TablePath> = (0..TABLES)
        .map(|k| TablePath::new("fluss", format!("{id}_t{k:03}")))
        .collect();

    // The backlog, written before the host starts.
    data::create_table(
        &admin,
        &wide,
        &data::lake_partitioned_log_table(BUCKETS, Some("id"), CREATE_FRESHNESS, &["p"]),
    )
    .await;
    // Created one at a time (`data::create_tables` says why), written eight at once.
    let partitions: Vec<String> = (0..PARTITIONS).map(|k| format!("p{k:02}")).collect();
    for value in &partitions {
        data::create_partition(&admin, &wide, &[("p", value)]).await;
    }
    let table = data::lake_log_table(1, Some("id"), CREATE_FRESHNESS);
    data::create_tables(&admin, &small, &table).await;
    futures::stream::iter(partitions.iter().enumerate())
        .map(|(k, value)| {
            let (conn, wide) = (&conn, &wide);
            async move {
                let first = (k * ROWS_PER_PARTITION) as i64;
                let spec: &[(&str, &str)] = &[("p", value)];
                data::write_partition_rows(conn, wide, spec, first, ROWS_PER_PARTITION, 1_000)
                    .await;
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<Vec<()>>()
        .await;
    futures::stream::iter(small.iter().enumerate())
        .map(|(k, t)| {
            let first = (k * ROWS_PER_TABLE) as i64;
            data::write_rows(&conn, t, first, ROWS_PER_TABLE, ROWS_PER_TABLE)
        })
        .buffer_unordered(WRITERS)
        .collect::<Vec<()>>()
        .await;
    let all: Vec<&TablePath> = std::iter::once(&wide).chain(&small).collect();
    let mut ends = HashMap::new();
    for t in &all {
        ends.insert(t.to_string(), data::all_log_end_offsets(&admin, t).await);
    }
    // The last table created is due by now (`CREATE_FRESHNESS` and the coordinator's 1 s
    // tick): from here on, a round is never followed by another.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for t in &all {
        data::set_freshness(&admin, t, LONG_FRESHNESS)
            .await
            .unwrap_or_else(|e| panic!("altering the freshness of {t}: {e}"));
    }

    let metrics = format!("127.0.0.1:{}", prometheus::free_port().unwrap());
    let slots = SLOTS.to_string();
    let mut h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
            &[
                "--lake.tiering.max-concurrent-tables",
                &slots,
                "--metrics.address",
                &metrics,
            ],
        ),
        &format!("{id}-host"),
    );

    // Every table exactly at its log end: nothing missed, nothing tiered twice.
    for t in &all {
        data::wait_for_all_lake_offsets(&admin, t, &ends[&t.to_string()], Duration::from_secs(180))
            .await
            .unwrap_or_else(|e| panic!("{t}: {e}\nhost log:\n{}", h.log()));
    }
    // Row counts as pypaimon reads the lake snapshots, every table in one reader.
    let commands: Vec<Vec<String>> = all
        .iter()
        .map(|t| {
            [
                "snapshot",
                &c.paimon_warehouse.display().to_string(),
                "fluss",
                t.table(),
            ]
            .map(str::to_string)
            .to_vec()
        })
        .collect();
    let snapshots = python::batch("paimon_read.py", &commands);
    for (t, snapshot) in all.iter().zip(snapshots) {
        let snapshot = snapshot.unwrap_or_else(|e| panic!("{t}: {e}"));
        let rows: i64 = ends[&t.to_string()].values().sum();
        assert_eq!(
            snapshot[0]["total_record_count"].as_i64(),
            Some(rows),
            "{t}: {snapshot:?}"
        );
    }
    // The wide table row for row, each offset once.
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", wide.table(), None);
    let mut expected: Vec<Value> = Vec::new();
    for (k, value) in partitions.iter().enumerate() {
        let first = (k * ROWS_PER_PARTITION) as i64;
        expected.extend(data::canonical_rows(&data::partitioned_batch(
            first,
            ROWS_PER_PARTITION,
            &[("p", value)],
        )));
    }
    assert_eq!(business(&lake), data::sorted_by_id(expected));
    assert_no_duplicate_offsets(&lake, &["p"]);

    // A heartbeat carries the rounds in flight and those finished since the last one: at most
    // twice the slots, however many tables wait. All 201 tables in one request would be
    // well over this.
    let e = Exposition::scrape(&metrics).unwrap();
    let value = |name: &str| {
        e.value(name)
            .unwrap_or_else(|| panic!("no {name} in the host's /metrics"))
    };
    let request_bound = 2 * SLOTS * MAX_TABLE_ENTRY_BYTES + 2;
    let request = value("fluss_lake_heartbeat_request_max_bytes") as usize;
    assert!(
        request <= request_bound,
        "largest heartbeat request {request} B > {request_bound} B"
    );
    // The answer: an entry per table reported, and the one table assigned with its path.
    let response_bound = 2 * SLOTS * MAX_TABLE_ENTRY_BYTES + 64 + wide.to_string().len();
    let response = value("fluss_lake_heartbeat_response_max_bytes") as usize;
    assert!(
        response <= response_bound,
        "largest heartbeat response {response} B > {response_bound} B"
    );
    // The Fluss client's cache holds the tables of the rounds in flight, not every table
    // tiered (each metadata refresh copies it whole).
    let cached = value("fluss_lake_fluss_cached_tables") as usize;
    assert!(
        cached <= SLOTS,
        "the host's Fluss client caches {cached} tables"
    );
    // Every table's round was planned and wrote; the round-start series are the host's own,
    // one histogram whatever the tables.
    for name in [
        "fluss_lake_round_plan_duration_seconds",
        "fluss_lake_round_first_write_seconds",
    ] {
        let hist = e.histogram(name).unwrap();
        assert!(hist.count >= all.len() as u64, "{name}: {hist:?}");
    }
    assert!(h.exited().is_none(), "host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
