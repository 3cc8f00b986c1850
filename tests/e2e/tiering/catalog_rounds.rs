//! What the tests of tables kept by a catalog (Iceberg REST, Glue, Hive) share: a primary-key
//! table, a round of upserts and deletes, and waiting on a condition with the host's log in
//! the failure.

use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::metadata::{TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::{Rng, data};

use super::merge_engines::{KEYS, wait_tiered};

/// `id INT` (the key), `ver BIGINT`, `name STRING`; 2 buckets, lake-enabled, freshness 2 s.
pub fn pk_descriptor() -> TableDescriptor {
    data::lake_pk_table(2)
}

/// Upserts (and some deletes) of `KEYS` keys.
pub async fn upsert_round(conn: &FlussConnection, path: &TablePath, round: usize, rng: &mut Rng) {
    let writer = data::upsert_writer(conn, path).await;
    for _ in 0..400 {
        let id = rng.below(KEYS) as i32;
        let mut row = GenericRow::new(3);
        row.set_field(0, id);
        row.set_field(1, round as i64);
        row.set_field(2, format!("r{round}-{}", rng.below(1000)));
        writer.upsert(&row).unwrap();
    }
    for _ in 0..30 {
        let mut row = GenericRow::new(3);
        row.set_field(0, rng.below(KEYS) as i32);
        row.set_field(1, 0i64);
        row.set_field(2, String::new());
        writer.delete(&row).unwrap();
    }
    writer.flush().await.unwrap();
}

/// Waits (up to 2 minutes) until `f` holds; fails with the host's log.
pub async fn wait_for<F: Fn() -> bool>(what: &str, h: &HostProcess, f: F) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} never happened\nhost log:\n{}",
            h.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The first round of the catalog tests: 300 rows into the log table `log`, a round of upserts
/// and deletes into the primary-key table `pk`, and both tiered by `h`. Returns the log table's
/// rows (canonical JSON).
pub async fn first_round(
    conn: &FlussConnection,
    admin: &fluss::client::FlussAdmin,
    log: &TablePath,
    pk: &TablePath,
    rng: &mut Rng,
    h: &HostProcess,
) -> Vec<serde_json::Value> {
    fluss_lake_e2e::data::write_rows(conn, log, 0, 300, 100).await;
    upsert_round(conn, pk, 0, rng).await;
    wait_tiered(admin, log, "round 1 (log)", h).await;
    wait_tiered(admin, pk, "round 1 (pk)", h).await;
    fluss_lake_e2e::data::canonical_rows(&fluss_lake_e2e::data::batch(0, 300))
}
