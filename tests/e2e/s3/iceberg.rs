//! Iceberg on S3, on the S3 cluster: the coordinator's Iceberg Hadoop catalog (S3A, given the
//! cluster's `datalake.iceberg.iceberg.hadoop.fs.s3a.*` options) creates the tables in
//! `s3a://…/cluster-9/iceberg`; the host, given the warehouse and its credentials under
//! Iceberg's S3 FileIO names, tiers a log table and a primary-key table there, and pyiceberg
//! and DuckDB (httpfs) read them back through S3 with their own S3 settings.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::iceberg::rows;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, unique_name};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_primary_key_tables_tier_into_iceberg_on_s3_and_read_back_through_s3() {
    let c = cluster::lease_s3("iceberg");
    let s3 = c.s3.clone().unwrap();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let log = TablePath::new("fluss", unique_name("s3_ice_log"));
    let pk = TablePath::new("fluss", unique_name("s3_ice_pk"));
    data::create_table(&admin, &log, &data::lake_log_table(2, Some("id"), "2s")).await;
    data::create_table(&admin, &pk, &super::pk_table()).await;
    let warehouse = c.iceberg_warehouse.display().to_string();
    assert!(warehouse.starts_with("s3a://"), "{warehouse}");
    let dir = |t: &TablePath| c.iceberg_warehouse.join("fluss").join(t.table());
    let metadata_keys = |t: &TablePath| {
        let prefix = format!(
            "{}/fluss/{}/metadata",
            warehouse
                .strip_prefix(&format!("s3a://{}/", s3.bucket))
                .unwrap(),
            t.table()
        );
        let s3 = s3.clone();
        async move { s3.keys(&prefix).await }
    };
    for t in [&log, &pk] {
        assert!(
            metadata_keys(t)
                .await
                .iter()
                .any(|k| k.ends_with("/v1.metadata.json")),
            "the coordinator created {t} on S3"
        );
    }
    data::write_rows(&conn, &log, 0, 3_000, 1_000).await;
    let expected = super::write_pk_changes(&conn, &pk).await;

    // Iceberg's S3 FileIO names.
    let args = s3.warehouse_args_named(
        "iceberg",
        &warehouse,
        [
            "s3.endpoint",
            "client.region",
            "s3.access-key-id",
            "s3.secret-access-key",
        ],
        &[("s3.path-style-access", "true")],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ends_log = data::all_log_end_offsets(&admin, &log).await;
    let ends_pk = data::all_log_end_offsets(&admin, &pk).await;
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("iceberg")], &args),
        &format!("{}-host", log.table()),
    );
    wait_registered(&c, &admin, &log, &ends_log, &h).await;
    wait_registered(&c, &admin, &pk, &ends_pk, &h).await;
    let want_log = data::sorted_by_id(data::canonical_rows(&data::batch(0, 3_000)));
    assert_eq!(business(&rows(&dir(&log), None, "pyiceberg")), want_log);
    assert_eq!(business(&rows(&dir(&log), None, "duckdb")), want_log);
    // DuckDB applies the equality deletes of the primary-key table (pyiceberg 0.12 cannot).
    let want_pk: Vec<Value> = expected
        .iter()
        .map(|(id, name)| json!({"id": id, "name": name}))
        .collect();
    let mut got_pk = business(&rows(&dir(&pk), None, "duckdb"));
    got_pk.sort_by_key(|r| r["id"].as_i64());
    assert_eq!(got_pk, want_pk);
    assert!(
        metadata_keys(&log)
            .await
            .iter()
            .any(|k| k.ends_with("/v2.metadata.json")),
        "the host committed on S3"
    );
    assert!(
        !h.log().contains(&s3.secret_key),
        "the secret key reached the log"
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
