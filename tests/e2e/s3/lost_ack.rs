//! Lost acknowledgements of the final commit object, end to end on the test S3 server: the
//! host's lake warehouse is reached through a [`LossyProxy`] (Fluss's remote storage and the
//! readers use the server directly), which forwards the conditional PUT (`If-None-Match: *`)
//! of a commit's final object — Paimon `snapshot/snapshot-N`, Iceberg
//! `metadata/vN.metadata.json`, Lance `_versions/N.manifest` — waits until the store has
//! applied it, and closes the connection without the answer. The S3 client retries the
//! request, and the store answers the retry "412: already exists" for an object that is the
//! commit's own: the commit kit (`guest_sdk::commit::publish`) reads it back and recognises
//! its own bytes as published.
//!
//! For each format's tiering commit (Paimon: a log and a primary-key table; Iceberg and Lance:
//! a log table) and for one maintenance commit (a Paimon compaction): round 1 is tiered
//! normally, the next commit's answer is lost; afterwards the proxy really lost one answer to
//! a write that landed, the commit was not retried as a lost race nor left unknown, the table
//! read by the format's own Python reader equals exactly the rows written to Fluss (no row
//! stored twice, no file referenced by a published snapshot deleted), and the snapshot Fluss
//! registered reads the same. Without the recognition the kit would take the 412 for a rival's
//! object, delete the files of its attempt (which the published snapshot references) and
//! fail the round: the table would no longer read.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fluss::client::{FlussAdmin, FlussConnection};
use fluss::metadata::{TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::{assert_no_duplicate_offsets, business};
use fluss_lake_e2e::lossy_proxy::LossyProxy;
use fluss_lake_e2e::s3::S3Server;
use fluss_lake_e2e::{cluster, data, host, iceberg, lance, paimon, s3, unique_name};
use fluss_lake_host::plugin::storage::StorageErrorKind;
use fluss_lake_host::warehouse::Warehouse;
use serde_json::{Value, json};

fn spawn_host(c: &ClusterInfo, format: &str, proxy: &LossyProxy, name: &str) -> HostProcess {
    let s3 = c.s3.clone().unwrap();
    let warehouse = match format {
        "paimon" => &c.paimon_warehouse,
        "iceberg" => &c.iceberg_warehouse,
        _ => &c.lance_warehouse,
    }
    .display()
    .to_string();
    let args = s3.host_warehouse_args(format, &warehouse, proxy.endpoint());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin(format)], &args),
        &format!("{name}-host"),
    )
}

/// Waits until Fluss registered a lake snapshot covering everything written to `path`;
/// fails at once when the host took its own commit for a rival's or left it unknown
/// ([`assert_recognised`]), rather than when the wait runs out.
async fn tiered(c: &ClusterInfo, admin: &FlussAdmin, path: &TablePath, h: &HostProcess) -> i64 {
    let ends = data::all_log_end_offsets(admin, path).await;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        match data::wait_for_all_lake_offsets(admin, path, &ends, Duration::from_secs(1)).await {
            Ok(snapshot) => return snapshot,
            Err(e) => {
                assert_recognised(h);
                assert!(
                    Instant::now() < deadline,
                    "{e}\nhost log:\n{}\ncoordinator:\n{}",
                    h.log(),
                    c.coordinator_log_tail(40)
                );
            }
        }
    }
}

/// The proxy lost `count` answers, each to a write the store applied (200), and the client's
/// retry of each was answered "already exists" (412); returns the paths.
fn assert_lost(proxy: &LossyProxy, count: usize) -> Vec<String> {
    let lost = proxy.lost();
    assert_eq!(
        lost.len(),
        count,
        "lost answers {lost:?}; conditional PUTs {:#?}",
        proxy.conditional_puts()
    );
    let puts = proxy.conditional_puts();
    for path in &lost {
        let of_path: Vec<(u16, bool)> = puts
            .iter()
            .filter(|p| &p.path == path)
            .map(|p| (p.status, p.lost))
            .collect();
        assert_eq!(
            of_path.first(),
            Some(&(200, true)),
            "{path}: the store applied the write whose answer was lost: {of_path:?}"
        );
        // object_store takes a connection closed before the answer for a request never
        // sent and sends it again: the store answers "already exists" for the caller's own
        // object, the case the kit must recognise.
        assert!(
            of_path.len() > 1 && of_path[1..].iter().all(|&(status, _)| status == 412),
            "{path}: the client's retries found the object there: {of_path:?}"
        );
    }
    lost
}

/// The host neither took its own object for a rival's nor left the commit unknown.
fn assert_recognised(h: &HostProcess) {
    let log = h.log();
    for bad in [
        "lost the race",
        UNKNOWN_OUTCOME,
        "was committed concurrently",
    ] {
        assert!(
            !log.contains(bad),
            "the host logged '{bad}':\n{}",
            log.lines()
                .filter(|l| l.contains(bad))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// `guest_sdk::commit::UNKNOWN_OUTCOME` (the test crate does not depend on the guest SDK).
const UNKNOWN_OUTCOME: &str = "commit outcome unknown";

fn standard_rows(first: i64, count: usize) -> Vec<Value> {
    data::sorted_by_id(data::canonical_rows(&data::batch(first, count)))
}

/// Lake rows are exactly `want` (sorted by id: a row stored twice is a row too many), and
/// with Fluss's system columns (Paimon, Iceberg; not Lance) no (bucket, offset) was stored
/// twice.
fn assert_exact(got: &[Value], want: &[Value], what: &str) {
    let counts = assert_no_duplicate_offsets(got, &[]);
    let system_columns = got.first().is_some_and(|r| r.get("__offset").is_some());
    if system_columns {
        assert_eq!(
            counts.values().sum::<usize>(),
            want.len(),
            "{what}: rows with an offset"
        );
    }
    assert_eq!(business(got), want, "{what}");
}

#[derive(Clone, Copy)]
enum Format {
    Paimon,
    Iceberg,
    Lance,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Paimon => "paimon",
            Format::Iceberg => "iceberg",
            Format::Lance => "lance",
        }
    }

    /// Whether `path` (as the proxy sees it) is the final commit object of `table`.
    fn is_final_object(self, table: &str, path: &str) -> bool {
        match self {
            Format::Paimon => path.contains(&format!("/{table}/snapshot/snapshot-")),
            Format::Iceberg => {
                path.contains(&format!("/{table}/metadata/v")) && path.ends_with(".metadata.json")
            }
            Format::Lance => path.contains(&format!("/{table}.lance/_versions/")),
        }
    }

    /// Every row of the table, at `snapshot` (Fluss's lake snapshot id) or the latest.
    fn rows(self, c: &ClusterInfo, table: &str, snapshot: Option<i64>) -> Vec<Value> {
        match self {
            Format::Paimon => paimon::rows(&c.paimon_warehouse, "fluss", table, snapshot),
            Format::Iceberg => iceberg::rows(
                &c.iceberg_warehouse.join("fluss").join(table),
                snapshot,
                "pyiceberg",
            ),
            Format::Lance => lance::rows(
                &c.lance_warehouse
                    .join("fluss")
                    .join(format!("{table}.lance")),
                snapshot.map(|s| s as u64),
            ),
        }
    }
}

/// A log table tiered in two rounds; the answer to the second round's final object is lost.
async fn log_table_round_with_lost_answer(format: Format) {
    let c = cluster::lease_s3(format.name());
    let s3 = c.s3.clone().unwrap();
    let proxy = LossyProxy::start(&s3.endpoint);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name(&format!("lost_ack_{}", format.name()));
    let path = TablePath::new("fluss", &table);
    data::create_table(&admin, &path, &data::lake_log_table(2, Some("id"), "1s")).await;
    data::write_rows(&conn, &path, 0, 1_000, 500).await;
    let mut h = spawn_host(&c, format.name(), &proxy, &table);
    let first = tiered(&c, &admin, &path, &h).await;
    assert!(
        proxy.requests() > 0,
        "the host reached the lake through the proxy"
    );
    assert!(proxy.lost().is_empty());

    let t = table.clone();
    proxy.lose_answers(1, move |p| format.is_final_object(&t, p));
    data::write_rows(&conn, &path, 1_000, 1_000, 500).await;
    let second = tiered(&c, &admin, &path, &h).await;
    assert_ne!(first, second);
    let lost = assert_lost(&proxy, 1);
    assert!(format.is_final_object(&table, &lost[0]), "{lost:?}");
    assert_recognised(&h);

    let want = standard_rows(0, 2_000);
    assert_exact(&format.rows(&c, &table, None), &want, "the table");
    let registered = admin.get_latest_lake_snapshot(&path).await.unwrap();
    assert_eq!(registered.snapshot_id, second);
    assert_exact(
        &format.rows(&c, &table, Some(second)),
        &want,
        "the registered snapshot",
    );
    assert_exact(
        &format.rows(&c, &table, Some(first)),
        &standard_rows(0, 1_000),
        "round 1's snapshot",
    );
    assert!(h.exited().is_none(), "the host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tiering_commit_whose_answer_is_lost_is_recognised() {
    log_table_round_with_lost_answer(Format::Iceberg).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lance_tiering_commit_whose_answer_is_lost_is_recognised() {
    log_table_round_with_lost_answer(Format::Lance).await;
}

/// Upserts `ids` with names `<tag><id>` and deletes `deletes`, recording the effect in `expected`.
async fn change_pk(
    conn: &FlussConnection,
    path: &TablePath,
    ids: std::ops::Range<i32>,
    tag: &str,
    deletes: &[i32],
    expected: &mut BTreeMap<i32, String>,
) {
    let writer = data::upsert_writer(conn, path).await;
    for id in ids {
        let mut row = GenericRow::new(2);
        row.set_field(0, id);
        row.set_field(1, format!("{tag}{id}"));
        writer.upsert(&row).unwrap();
        expected.insert(id, format!("{tag}{id}"));
    }
    for &id in deletes {
        let mut row = GenericRow::new(2);
        row.set_field(0, id);
        row.set_field(1, expected.remove(&id).unwrap());
        writer.delete(&row).unwrap();
    }
    writer.flush().await.unwrap();
}

fn pk_rows(expected: &BTreeMap<i32, String>) -> Vec<Value> {
    expected
        .iter()
        .map(|(id, name)| json!({"id": id, "name": name}))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_tiering_commits_whose_answers_are_lost_are_recognised() {
    let c = cluster::lease_s3("paimon");
    let s3 = c.s3.clone().unwrap();
    let proxy = LossyProxy::start(&s3.endpoint);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let log = TablePath::new("fluss", unique_name("lost_ack_paimon_log"));
    let pk = TablePath::new("fluss", unique_name("lost_ack_paimon_pk"));
    data::create_table(&admin, &log, &data::lake_log_table(2, Some("id"), "1s")).await;
    data::create_table(&admin, &pk, &super::pk_table()).await;
    data::write_rows(&conn, &log, 0, 1_000, 500).await;
    let mut expected = BTreeMap::new();
    change_pk(&conn, &pk, 0..300, "a", &[], &mut expected).await;
    let mut h = spawn_host(&c, "paimon", &proxy, log.table());
    let log_1 = tiered(&c, &admin, &log, &h).await;
    let pk_1 = tiered(&c, &admin, &pk, &h).await;
    assert!(proxy.lost().is_empty());

    // Each table's next snapshot file loses its answer.
    for t in [&log, &pk] {
        let name = t.table().to_string();
        proxy.lose_answers(1, move |p| Format::Paimon.is_final_object(&name, p));
    }
    data::write_rows(&conn, &log, 1_000, 1_000, 500).await;
    let deletes: Vec<i32> = (0..300).step_by(7).collect();
    change_pk(&conn, &pk, 200..400, "b", &deletes, &mut expected).await;
    let log_2 = tiered(&c, &admin, &log, &h).await;
    let pk_2 = tiered(&c, &admin, &pk, &h).await;
    assert!(log_2 > log_1 && pk_2 > pk_1);
    let mut lost = assert_lost(&proxy, 2);
    lost.sort();
    let mut want = vec![
        format!("/{}/snapshot/snapshot-{log_2}", log.table()),
        format!("/{}/snapshot/snapshot-{pk_2}", pk.table()),
    ];
    want.sort();
    for (lost, want) in lost.iter().zip(&want) {
        assert!(
            lost.ends_with(want.as_str()),
            "lost {lost}, expected …{want}"
        );
    }
    assert_recognised(&h);

    let want_log = standard_rows(0, 2_000);
    assert_exact(
        &Format::Paimon.rows(&c, log.table(), None),
        &want_log,
        "the log table",
    );
    assert_exact(
        &Format::Paimon.rows(&c, log.table(), Some(log_2)),
        &want_log,
        "the log table's registered snapshot",
    );
    let want_pk = pk_rows(&expected);
    assert_eq!(
        business(&Format::Paimon.rows(&c, pk.table(), None)),
        want_pk,
        "the primary-key table"
    );
    assert_eq!(
        business(&Format::Paimon.rows(&c, pk.table(), Some(pk_2))),
        want_pk,
        "the primary-key table's registered snapshot"
    );
    assert!(h.exited().is_none(), "the host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

/// A maintenance commit: the Paimon compaction of a log table (`table.datalake.auto-compaction`,
/// two small files trigger it) loses the answer to its `COMPACT` snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_compaction_commit_whose_answer_is_lost_is_recognised() {
    let c = cluster::lease_s3("paimon");
    let s3 = c.s3.clone().unwrap();
    let proxy = LossyProxy::start(&s3.endpoint);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name("lost_ack_paimon_compact");
    let path = TablePath::new("fluss", &table);
    // Maintenance gets the table's freshness as its budget: 5 s, so that a loaded CI machine
    // still finishes the compaction on S3 within it (1 s did not, round after round).
    let base = data::lake_log_table(1, Some("id"), "5s");
    let mut descriptor = TableDescriptor::builder()
        .schema(base.schema().clone())
        .distributed_by(Some(1), vec!["id".to_string()])
        .custom_property("paimon.compaction.min.file-num", "2");
    for (k, v) in base.properties() {
        descriptor = descriptor.property(k.clone(), v.clone());
    }
    let descriptor = descriptor
        .property("table.datalake.auto-compaction", "true")
        .build()
        .unwrap();
    data::create_table(&admin, &path, &descriptor).await;
    // Only the compaction's snapshot: its JSON says `"commitKind" : "COMPACT"`.
    let name = table.clone();
    proxy.lose_answers_to(
        1,
        move |p| Format::Paimon.is_final_object(&name, p),
        |body| {
            String::from_utf8_lossy(body)
                .split_whitespace()
                .collect::<String>()
                .contains("\"commitKind\":\"COMPACT\"")
        },
    );
    let mut h = spawn_host(&c, "paimon", &proxy, &table);

    // Small rounds until a compaction ran (two small files trigger it, after the second
    // round unless it ran out of its budget, the table's freshness: then after a later one).
    let mut written = 0;
    for _ in 0..8 {
        data::write_rows(&conn, &path, written, 200, 200).await;
        written += 200;
        tiered(&c, &admin, &path, &h).await;
        if !proxy.lost().is_empty() {
            break;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while proxy.lost().is_empty() {
        assert!(
            Instant::now() < deadline,
            "no compaction lost its answer:\n{}",
            h.log()
        );
        assert!(h.exited().is_none(), "the host exited:\n{}", h.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // One more round, on top of the compaction.
    data::write_rows(&conn, &path, written, 200, 200).await;
    written += 200;
    let last = tiered(&c, &admin, &path, &h).await;
    // The compaction's commit, the client's retry of the lost PUT included, is over by now.
    let lost = assert_lost(&proxy, 1);
    let compacted: i64 = lost[0]
        .strip_prefix(&format!("/{}/", s3.bucket))
        .and_then(|p| p.rsplit_once(&format!("/{table}/snapshot/snapshot-")))
        .and_then(|(_, id)| id.parse().ok())
        .unwrap_or_else(|| panic!("not a snapshot of {table}: {}", lost[0]));
    assert!(last > compacted, "round after the compaction: {last}");
    assert_recognised(&h);
    let snapshot = paimon::snapshot(&c.paimon_warehouse, "fluss", &table, Some(compacted));
    assert_eq!(snapshot["commit_kind"], "COMPACT", "{snapshot}");

    let want = standard_rows(0, written as usize);
    assert_exact(&Format::Paimon.rows(&c, &table, None), &want, "the table");
    assert_exact(
        &Format::Paimon.rows(&c, &table, Some(last)),
        &want,
        "the registered snapshot",
    );
    // The compaction rewrote the files of the round before it, rows unchanged.
    let before = Format::Paimon.rows(&c, &table, Some(compacted - 1));
    assert!(!before.is_empty());
    assert_exact(
        &Format::Paimon.rows(&c, &table, Some(compacted)),
        &business(&before),
        "the compaction's snapshot",
    );
    assert!(h.exited().is_none(), "the host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

/// The fault itself, on the host's own storage without a cluster: a conditional PUT whose
/// answer the proxy loses lands, and the S3 client's retry is answered "already exists" for
/// the caller's own object: what the commit kit must recognise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_to_a_conditional_put_reads_as_already_exists() {
    let server = s3::server();
    let proxy = LossyProxy::start(&server.endpoint);
    let via = S3Server {
        endpoint: proxy.endpoint().to_string(),
        ..server.clone()
    };
    let prefix = unique_name("lost_ack_put");
    let wh = Warehouse::open(&via.url(&prefix), &via.storage_options(&via.secret_key)).unwrap();
    let storage = wh.scope("db.db/t").unwrap();
    proxy.lose_answers(1, |p| p.ends_with("/snapshot/snapshot-1"));
    let e = storage
        .put_if_absent("snapshot/snapshot-1", b"ours".to_vec())
        .await
        .unwrap_err();
    assert_eq!(e.kind, StorageErrorKind::AlreadyExists, "{}", e.message);
    assert!(assert_lost(&proxy, 1)[0].ends_with("/snapshot/snapshot-1"));
    assert_eq!(
        storage.get("snapshot/snapshot-1", 1 << 10).await.unwrap(),
        b"ours"
    );
    // Spent: the next conditional PUTs are answered.
    storage
        .put_if_absent("snapshot/snapshot-2", b"ours".to_vec())
        .await
        .unwrap();
    assert_eq!(proxy.pending(), 0);
}
