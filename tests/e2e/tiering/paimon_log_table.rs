//! The walking skeleton end to end: a real Fluss cluster, the host binary with the Paimon
//! WebAssembly plugin, and pypaimon reading back exactly what was written.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::config::Config;
use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{cluster, data, host, lake_check, paimon, unique_name};
use serde_json::Value;

const BUCKETS: i32 = 3;

fn expected_rows(upto: i64) -> Vec<Value> {
    data::sorted_by_id(data::canonical_rows(&data::batch(0, upto as usize)))
}

/// Every (bucket, offset) appears once, and offsets of a bucket are exactly 0..end.
fn check_system_columns(rows: &[Value], ends: &HashMap<i32, i64>) {
    if rows.first().is_none_or(|r| r.get("__offset").is_none()) {
        return; // a table without system columns (FIP-27 layout)
    }
    let mut seen: HashMap<i64, HashSet<i64>> = HashMap::new();
    for r in rows {
        let b = r["__bucket"].as_i64().unwrap();
        let o = r["__offset"].as_i64().unwrap();
        assert!(
            seen.entry(b).or_default().insert(o),
            "duplicate (bucket {b}, offset {o})"
        );
        assert!(
            r["__timestamp"].as_i64().unwrap() > 0,
            "missing commit timestamp in {r}"
        );
    }
    for (b, end) in ends {
        let offsets = seen.remove(&(*b as i64)).unwrap_or_default();
        assert_eq!(
            offsets.len() as i64,
            *end,
            "bucket {b} holds {} rows, log end offset is {end}",
            offsets.len()
        );
        assert!(offsets.iter().all(|o| *o >= 0 && o < end));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_table_tiers_into_paimon_over_three_rounds() {
    let c = cluster::lease("paimon");
    let conn = FlussConnection::new(Config {
        bootstrap_servers: c.bootstrap.clone(),
        ..Default::default()
    })
    .await
    .expect("connect to Fluss");
    let conn = Arc::new(conn);
    let admin = conn.get_admin().unwrap();
    let table = unique_name("log_all_types");
    let path = TablePath::new("fluss", &table);
    data::create_table(
        &admin,
        &path,
        &data::lake_log_table(BUCKETS, Some("id"), "2s"),
    )
    .await;

    // Round 1: 100,000 rows in several batches.
    data::write_rows(&conn, &path, 0, 100_000, 7_000).await;
    let ends1 = data::log_end_offsets(&admin, &path, BUCKETS).await;
    assert_eq!(ends1.values().sum::<i64>(), 100_000);

    let mut host = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
            &["--datalake.format", "paimon"],
        ),
        &format!("{table}-host"),
    );
    let (snap1, _) = data::wait_for_lake_offsets(&admin, &path, &ends1, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{e}\nhost log:\n{}\ncoordinator:\n{}",
                host.log(),
                c.coordinator_log_tail(40)
            )
        });

    let lake = paimon::rows(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(lake.len(), 100_000);
    assert_eq!(
        business(&lake),
        expected_rows(100_000),
        "round 1 content differs"
    );
    check_system_columns(&lake, &ends1);

    // The Paimon snapshot carries the commit user and the offsets file Fluss registered.
    let meta = paimon::snapshot(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(
        meta["id"].as_i64(),
        Some(snap1),
        "Fluss registered the latest Paimon snapshot"
    );
    assert_eq!(meta["commit_user"], "__fluss_lake_tiering");
    let offsets_path = meta["properties"]["fluss-offsets"]
        .as_str()
        .expect("fluss-offsets property")
        .to_string();
    assert!(
        offsets_path.contains(&format!("/lake/fluss/{table}-")),
        "{offsets_path}"
    );
    let offsets_file = offsets_path.strip_prefix("file:").unwrap_or(&offsets_path);
    let offsets: Value =
        serde_json::from_str(&std::fs::read_to_string(offsets_file).unwrap()).unwrap();
    let file_offsets: Vec<i64> = offsets["bucket_offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(
        file_offsets,
        (0..BUCKETS).map(|b| ends1[&b]).collect::<Vec<_>>()
    );
    assert_eq!(meta["total_record_count"].as_i64(), Some(100_000));

    // Bucket pruning on the bucket key finds single rows.
    for id in [0i64, 4_242, 99_999] {
        let found = paimon::lookup(&c.paimon_warehouse, "fluss", &table, "id", &Value::from(id));
        assert_eq!(
            business(&found),
            data::canonical_rows(&data::batch(id, 1)),
            "lookup of id {id}"
        );
    }

    // Round 2: exactly the new rows are appended.
    data::write_rows(&conn, &path, 100_000, 25_000, 5_000).await;
    let ends2 = data::log_end_offsets(&admin, &path, BUCKETS).await;
    let (snap2, _) = data::wait_for_lake_offsets(&admin, &path, &ends2, Duration::from_secs(120))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", host.log()));
    assert!(snap2 > snap1);
    let lake2 = paimon::rows(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(
        business(&lake2),
        expected_rows(125_000),
        "round 2 content differs"
    );
    check_system_columns(&lake2, &ends2);
    // Time travel: the first snapshot still shows round 1 only.
    let old = paimon::rows(&c.paimon_warehouse, "fluss", &table, Some(snap1));
    assert_eq!(business(&old), expected_rows(100_000));

    // Round 3: no new data. Two idle rounds run: nothing changes, the offsets Fluss holds
    // stay where they were, and the host keeps running.
    let after = lake_check::after_idle_rounds(&mut host, &admin, &path, 2).await;
    assert_eq!(
        after.snapshot_id, snap2,
        "an idle round must not create snapshots"
    );
    let after_offsets: HashMap<i32, i64> = after
        .table_buckets_offset
        .iter()
        .map(|(tb, o)| (tb.bucket_id(), *o))
        .collect();
    assert_eq!(after_offsets, ends2);
    let lake3 = paimon::rows(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(lake3.len(), 125_000);
    assert!(host.exited().is_none(), "host exited:\n{}", host.log());
    let status = host
        .terminate(Duration::from_secs(40))
        .expect("host status");
    assert!(
        status.success(),
        "host did not exit cleanly on SIGTERM: {status:?}"
    );
}
