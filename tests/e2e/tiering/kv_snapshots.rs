//! Primary-key tables older than their log: a bucket never tiered starts from its KV snapshot,
//! as FlussLakeTiering's `TieringSnapshotSplit` does, and later rounds continue from the
//! changelog with nothing lost or doubled.
//!
//! A cluster of its own that snapshots every bucket each second, rolls 4 KiB log segments and
//! moves them to remote storage each second (`cluster::lease_kv_snapshots`):
//! - a Paimon and an Iceberg table created with the lake off and a one-second log TTL, written
//!   until no bucket's log starts at 0 any more, then altered to `table.datalake.enabled`
//!   (a table older than its log: the changelog alone no longer holds its state);
//! - a partitioned Paimon table (a snapshot per partition and bucket);
//! - then, with a second host stalled after leasing a snapshot with a 2 s lease, a table whose
//!   leased snapshot the cluster deletes meanwhile: the host says so in one line, reads the
//!   bucket's latest snapshot instead, and the round commits the table whole from it.
//!
//! A first round whose snapshots hold the whole log commits every row from them (Paimon:
//! every `__offset` is -1).
//!
//! After every round the lake's merged read (pypaimon; Java Iceberg's generic reader and DuckDB)
//! equals the writes' model, which Fluss's own lookups agree with.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fluss::client::{FlussAdmin, FlussConnection};
use fluss::metadata::{
    AlterConfig, AlterConfigOpType, AlterTableChanges, DataTypes, Schema, TableDescriptor,
    TablePath,
};
use fluss::row::GenericRow;
use fluss::rpc::message::OffsetSpec;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::fluss_read::fluss_state;
use fluss_lake_e2e::host::{self, HostProcess};
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{Rng, cluster, data, iceberg, paimon, unique_name};
use serde_json::{Value, json};

use super::merge_engines::{KEYS, lake_state, wait_tiered};

const REGIONS: [&str; 2] = ["eu", "us"];

/// (id, region) → (ver, name): what the table holds after the writes so far.
type Model = BTreeMap<(i32, Option<&'static str>), (i64, String)>;

/// A primary-key table `(id, ver, name[, region])` of `buckets` buckets.
fn descriptor(
    buckets: i32,
    lake: bool,
    partitioned: bool,
    log_ttl: Option<&str>,
) -> TableDescriptor {
    let mut schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("ver", DataTypes::bigint())
        .column("name", DataTypes::string());
    let mut pk = vec!["id"];
    if partitioned {
        schema = schema.column("region", DataTypes::string());
        pk.push("region");
    }
    let mut b = TableDescriptor::builder()
        .schema(schema.primary_key(pk).unwrap().build().unwrap())
        .distributed_by(Some(buckets), vec!["id".into()])
        .property("table.datalake.enabled", lake.to_string())
        .property("table.datalake.freshness", "2s");
    if let Some(ttl) = log_ttl {
        b = b.property("table.log.ttl", ttl);
    }
    if partitioned {
        b = b.partitioned_by(vec!["region"]);
    }
    b.build().unwrap()
}

/// Upserts and deletes of `KEYS` keys (the keys [`fluss_state`] looks up) (in every partition when `partitioned`), recorded in
/// `model`.
async fn write(
    conn: &FlussConnection,
    path: &TablePath,
    partitioned: bool,
    round: i64,
    rng: &mut Rng,
    model: &mut Model,
) {
    let writer = data::upsert_writer(conn, path).await;
    let row = |id: i32, region: Option<&str>, ver: i64, name: &str| {
        let mut row = GenericRow::new(if partitioned { 4 } else { 3 });
        row.set_field(0, id);
        row.set_field(1, ver);
        row.set_field(2, name.to_string());
        if let Some(r) = region {
            row.set_field(3, r.to_string());
        }
        row
    };
    let region = |rng: &mut Rng| partitioned.then(|| REGIONS[rng.below(2) as usize]);
    for _ in 0..200 {
        let (id, region) = (rng.below(KEYS) as i32, region(rng));
        let name = format!("r{round}-{}", rng.below(1000));
        writer.upsert(&row(id, region, round, &name)).unwrap();
        model.insert((id, region), (round, name));
    }
    for _ in 0..20 {
        let (id, region) = (rng.below(KEYS) as i32, region(rng));
        if let Some((ver, name)) = model.remove(&(id, region)) {
            writer.delete(&row(id, region, ver, &name)).unwrap();
        }
    }
    writer.flush().await.unwrap();
}

/// The model's rows in the readers' canonical JSON, ordered by (id, region).
fn expected(model: &Model) -> Vec<Value> {
    model
        .iter()
        .map(|((id, region), (ver, name))| {
            let mut v = json!({"id": id, "ver": ver, "name": name});
            if let Some(r) = region {
                v["region"] = json!(r);
            }
            v
        })
        .collect()
}

fn by_key(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|v| {
        (
            v["id"].as_i64().unwrap(),
            v["region"].as_str().map(str::to_string),
        )
    });
    rows
}

/// Waits until the table is tiered up to its log end, then asserts that the lake's merged read
/// equals `model` (and, for a table without partitions, Fluss's lookups).
#[allow(clippy::too_many_arguments)]
async fn assert_lake(
    c: &ClusterInfo,
    conn: &FlussConnection,
    admin: &FlussAdmin,
    format: &str,
    path: &TablePath,
    partitioned: bool,
    model: &Model,
    what: &str,
    h: &HostProcess,
) {
    wait_tiered(admin, path, what, h).await;
    let mut columns = vec!["id", "ver", "name"];
    if partitioned {
        columns.push("region");
    }
    let want = expected(model);
    if !partitioned {
        assert_eq!(
            business(&fluss_state(conn, path, 0..KEYS as i32).await),
            want,
            "{what}: Fluss's lookups and the writes agree"
        );
    }
    assert_eq!(
        by_key(business(&lake_state(c, format, path, &columns))),
        want,
        "{what}: the lake holds Fluss's state\nhost log:\n{}",
        h.log()
    );
    if format == "iceberg" {
        let dir = c.iceberg_warehouse.join("fluss").join(path.table());
        assert_eq!(
            by_key(business(&iceberg::rows(&dir, None, "duckdb"))),
            want,
            "{what}: DuckDB reads Fluss's state"
        );
    }
}

/// Every (partition name, bucket) → the latest KV snapshot's (id, log offset).
async fn latest_snapshots(
    admin: &FlussAdmin,
    path: &TablePath,
) -> BTreeMap<(Option<String>, i32), (Option<i64>, Option<i64>)> {
    let info = admin.get_table_info(path).await.unwrap();
    let partitions: Vec<Option<String>> = if info.is_partitioned() {
        admin
            .list_partition_infos(path)
            .await
            .unwrap()
            .iter()
            .map(|p| Some(p.get_partition_name()))
            .collect()
    } else {
        vec![None]
    };
    let mut out = BTreeMap::new();
    for p in partitions {
        let snapshots = admin
            .get_latest_kv_snapshots(path, p.as_deref())
            .await
            .unwrap();
        for s in snapshots.latest_snapshots {
            out.insert((p.clone(), s.bucket_id), (s.snapshot_id, s.log_offset));
        }
    }
    out
}

/// Waits until every bucket of `path` has a KV snapshot holding its whole log.
async fn wait_snapshotted(admin: &FlussAdmin, path: &TablePath) {
    let info = admin.get_table_info(path).await.unwrap();
    let names: BTreeMap<i64, String> = admin
        .list_partition_infos(path)
        .await
        .map(|ps| {
            ps.iter()
                .map(|p| (p.get_partition_id(), p.get_partition_name()))
                .collect()
        })
        .unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let ends = data::all_log_end_offsets(admin, path).await;
        let snapshots = latest_snapshots(admin, path).await;
        let missing: Vec<_> = ends
            .iter()
            .filter(|((p, b), end)| {
                let key = (p.map(|id| names[&id].clone()), *b);
                **end > 0 && snapshots.get(&key).is_none_or(|(_, o)| *o < Some(**end))
            })
            .collect();
        if missing.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{path} ({} buckets): no KV snapshot holding the log of {missing:?} within 120 s: {snapshots:?}",
            info.get_num_buckets()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Writes to `path` until no bucket's log starts at offset 0 (its first segments expired),
/// then until its KV snapshots hold the whole log.
async fn age(
    conn: &FlussConnection,
    admin: &FlussAdmin,
    path: &TablePath,
    rng: &mut Rng,
    model: &mut Model,
) -> i64 {
    let buckets: Vec<i32> = (0..3).collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut round = 0;
    loop {
        write(conn, path, false, round, rng, model).await;
        round += 1;
        let starts = admin
            .list_offsets(path, &buckets, OffsetSpec::Earliest)
            .await
            .unwrap();
        if starts.values().all(|s| *s > 0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{path}: the log still starts at 0 in a bucket after 180 s: {starts:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    wait_snapshotted(admin, path).await;
    round
}

/// `table.datalake.enabled = true` on a table created with the lake off.
async fn enable_lake(admin: &FlussAdmin, path: &TablePath) {
    let changes = AlterTableChanges {
        config_changes: vec![AlterConfig::new(
            "table.datalake.enabled",
            Some("true".into()),
            AlterConfigOpType::Set,
        )],
        ..Default::default()
    };
    admin.alter_table(path, false, changes).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_key_tables_older_than_their_log_start_from_their_kv_snapshots() {
    let mut c = cluster::lease_kv_snapshots("iceberg");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("kvsnap");
    let mut rng = Rng(0x05a9_5407_2026);

    // Tables older than their log: created with the lake off (each in the format the cluster
    // has then), their first log segments expired, then the lake turned on.
    let old_iceberg = TablePath::new("fluss", format!("{id}_old_iceberg"));
    let old_paimon = TablePath::new("fluss", format!("{id}_old_paimon"));
    let mut old_models = [Model::new(), Model::new()];
    let mut rounds = [0, 0];
    for (i, path) in [&old_paimon, &old_iceberg].into_iter().enumerate().rev() {
        c.set_lake_format(if i == 0 { "paimon" } else { "iceberg" });
        data::create_table(&admin, path, &descriptor(3, false, false, Some("1s"))).await;
        rounds[i] = age(&conn, &admin, path, &mut rng, &mut old_models[i]).await;
        enable_lake(&admin, path).await;
    }
    // A partitioned table, lake on from the start, written before any host runs.
    let parted = TablePath::new("fluss", format!("{id}_parted"));
    data::create_table(&admin, &parted, &descriptor(2, true, true, None)).await;
    for r in REGIONS {
        data::create_partition(&admin, &parted, &[("region", r)]).await;
    }
    let mut parted_model = Model::new();
    write(&conn, &parted, true, 0, &mut rng, &mut parted_model).await;
    wait_snapshotted(&admin, &parted).await;

    // Fluss shows a table only the options of the cluster's current format (paimon): the
    // host is told where Iceberg's warehouse is.
    let iceberg_wh = c.iceberg_warehouse.display().to_string();
    let host_args = |extra: &[&str]| {
        let mut options = vec!["--datalake.iceberg.warehouse", &iceberg_wh];
        options.extend_from_slice(extra);
        host::args(
            &c.bootstrap,
            &[host::plugin("paimon"), host::plugin("iceberg")],
            &options,
        )
    };
    let mut h = HostProcess::spawn(&host_args(&[]), &format!("{id}-host"));
    let tables = [
        (&old_paimon, "paimon", false),
        (&old_iceberg, "iceberg", false),
        (&parted, "paimon", true),
    ];
    // Round 1 of each table reads its snapshots; then two rounds of its changelog.
    for step in 0..3 {
        for (i, (path, format, partitioned)) in tables.iter().enumerate() {
            let model = match i {
                0 | 1 => &mut old_models[i],
                _ => &mut parted_model,
            };
            if step > 0 {
                let round = if i < 2 { rounds[i] + step } else { step };
                write(&conn, path, *partitioned, round, &mut rng, model).await;
            }
            let what = format!("{path} ({format}), step {step}");
            assert_lake(
                &c,
                &conn,
                &admin,
                format,
                path,
                *partitioned,
                model,
                &what,
                &h,
            )
            .await;
            if step == 0 && *format == "paimon" {
                assert_from_snapshots_alone(&c, path, &what);
            }
        }
    }
    let log = h.log();
    let from_snapshots = log
        .lines()
        .filter(|l| l.contains("tiering a bucket never tiered from its KV snapshot"))
        .count();
    // 3 buckets of each old table, 2 of each partition of the partitioned one.
    assert_eq!(from_snapshots, 3 + 3 + 2 * 2, "{log}");
    assert!(!log.contains("tiering round failed"), "{log}");
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());

    // A snapshot gone while the host holds it (its 2 s lease expired while the host stalled):
    // one line, then the bucket's latest snapshot, and the table is tiered whole.
    let gone = TablePath::new("fluss", format!("{id}_gone"));
    let mut gone_model = Model::new();
    data::create_table(&admin, &gone, &descriptor(1, true, false, None)).await;
    write(&conn, &gone, false, 0, &mut rng, &mut gone_model).await;
    wait_snapshotted(&admin, &gone).await;
    let go = std::env::temp_dir().join(unique_name("kv-snapshot-go"));
    let stall = format!("kv-snapshot-leased=once-until:{}", go.display());
    let mut h = HostProcess::spawn_with_env(
        &host_args(&["--tiering.kv-snapshot.lease-duration", "2s"]),
        &format!("{id}-gone-host"),
        &[(fluss_lake_host::failpoints::ENV, &stall)],
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while !h.log().contains("failpoint kv-snapshot-leased: stalling") {
        assert!(Instant::now() < deadline, "never stalled:\n{}", h.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The snapshot the host leased, as it said when it began.
    let log = h.log();
    let leased: i64 = log
        .lines()
        .find(|l| {
            l.contains("never tiered from its KV snapshot") && l.contains(&format!("table={gone} "))
        })
        .and_then(|l| {
            l.split(" snapshot=")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no snapshot read of {gone}:\n{log}"));
    // Writes until the cluster deletes it (its lease expired, newer snapshots replace it).
    let table_id = admin.get_table_info(&gone).await.unwrap().get_table_id();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut round = 1;
    while admin
        .get_kv_snapshot_metadata(table_id, None, 0, leased)
        .await
        .is_ok()
    {
        assert!(
            Instant::now() < deadline,
            "the cluster kept snapshot {leased} 120 s after its lease expired"
        );
        write(&conn, &gone, false, round, &mut rng, &mut gone_model).await;
        round += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The latest snapshot now holds every write: the round that reads it commits the table
    // whole, from it alone (a round committing the leased snapshot's offset would read the
    // writes since from the changelog).
    wait_snapshotted(&admin, &gone).await;
    std::fs::write(&go, b"").unwrap();
    let what = format!("{gone} after its leased snapshot {leased} was deleted");
    assert_lake(
        &c,
        &conn,
        &admin,
        "paimon",
        &gone,
        false,
        &gone_model,
        &what,
        &h,
    )
    .await;
    let log = h.log();
    let said: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(&format!("KV snapshot {leased} of {gone} bucket 0 is gone")))
        .collect();
    assert_eq!(said.len(), 1, "{log}");
    assert!(
        said[0].contains("reading the bucket's latest one"),
        "{}",
        said[0]
    );
    assert!(!log.contains("tiering round failed"), "{log}");
    assert_from_snapshots_alone(&c, &gone, &what);
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
    let _ = std::fs::remove_file(&go);
    drop(c);
    cluster::done_with_kv_cluster();
}

/// Every row of the Paimon table came from KV snapshots: offset -1, as Java writes them.
fn assert_from_snapshots_alone(c: &ClusterInfo, path: &TablePath, what: &str) {
    let rows = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
    let from_log: Vec<&Value> = rows.iter().filter(|r| r["__offset"] != -1).collect();
    assert!(
        !rows.is_empty() && from_log.is_empty(),
        "{what}: {} of {} rows did not come from a KV snapshot, e.g. {:?}",
        from_log.len(),
        rows.len(),
        from_log.first()
    );
}
