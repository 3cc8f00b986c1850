//! Primary-key buckets never tiered start from their KV snapshot, as FlussLakeTiering's
//! `TieringSnapshotSplit` does: on a cluster that snapshots every bucket each second, a table
//! written before any host runs is tiered first from its snapshots (the rows as INSERTs at
//! offset -1, each bucket then tiered up to its snapshot's log offset), and later rounds
//! continue from the changelog with nothing lost or doubled; the lake's merged read (pypaimon,
//! Java Iceberg's) equals Fluss's state after each.

use std::time::Duration;

use fluss::client::FlussAdmin;
use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{Rng, cluster, data, paimon, unique_name};

use super::catalog_rounds::{pk_descriptor, upsert_round};
use super::merge_engines::{fluss_state, lake_state, spawn_host, wait_tiered};

/// Waits until every bucket of `path` has a KV snapshot holding its whole log.
async fn wait_snapshotted(admin: &FlussAdmin, path: &TablePath) {
    let ends = data::all_log_end_offsets(admin, path).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let snapshots = admin.get_latest_kv_snapshots(path, None).await.unwrap();
        let covered = snapshots.latest_snapshots.iter().all(|s| {
            s.snapshot_id.is_some()
                && s.log_offset
                    >= ends
                        .iter()
                        .find(|((_, b), _)| *b == s.bucket_id)
                        .map(|(_, o)| *o)
        });
        if covered && !snapshots.latest_snapshots.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no KV snapshot of every bucket of {path} within 120 s: {snapshots:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The table's lake state (business columns), merged, and its `__offset`s when the format's
/// reader shows them.
fn lake(c: &cluster::ClusterInfo, format: &str, path: &TablePath) -> Vec<serde_json::Value> {
    business(&lake_state(c, format, path, &["id", "ver", "name"]))
}

async fn tiers_from_the_kv_snapshot_then_the_changelog(format: &str) {
    let c = cluster::lease_kv_snapshots(format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let pk = TablePath::new("fluss", unique_name("kvsnap_pk"));
    data::create_table(&admin, &pk, &pk_descriptor()).await;
    let mut rng = Rng(0x05a9_5407_2026);
    upsert_round(&conn, &pk, 0, &mut rng).await;
    wait_snapshotted(&admin, &pk).await;

    // Round 1: from the snapshots.
    let h = spawn_host(&c, format, &format!("kv-snapshot-{format}-host"), &[]);
    wait_tiered(&admin, &pk, "round 1 (from the KV snapshots)", &h).await;
    assert!(
        h.log()
            .contains("tiering a bucket never tiered from its KV snapshot"),
        "the first round read the snapshots:\n{}",
        h.log()
    );
    if format == "paimon" {
        let rows = paimon::rows(&c.paimon_warehouse, "fluss", pk.table(), None);
        assert!(
            rows.iter().all(|r| r["__offset"] == -1),
            "snapshot rows carry offset -1, as Java writes them"
        );
    }
    assert_eq!(
        lake(&c, format, &pk),
        business(&fluss_state(&conn, &pk).await),
        "round 1: the lake holds Fluss's state"
    );

    // Round 2: the changelog after the snapshots.
    upsert_round(&conn, &pk, 1, &mut rng).await;
    wait_tiered(&admin, &pk, "round 2 (the changelog)", &h).await;
    assert_eq!(
        lake(&c, format, &pk),
        business(&fluss_state(&conn, &pk).await),
        "round 2: the lake holds Fluss's state"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_primary_key_buckets_never_tiered_start_from_their_kv_snapshot() {
    tiers_from_the_kv_snapshot_then_the_changelog("paimon").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_primary_key_buckets_never_tiered_start_from_their_kv_snapshot() {
    tiers_from_the_kv_snapshot_then_the_changelog("iceberg").await;
}
