//! Paimon on S3, on the S3 cluster: the coordinator's Paimon catalog creates the lake tables in
//! `s3://…/cluster-9/paimon`; the host, given the warehouse and its credentials under the
//! Fluss/Paimon option names, tiers a log table and a primary-key table there, and pypaimon reads them back through S3 with its own S3 settings. A wrong
//! secret key is one error line at startup and nothing is written or registered.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, paimon, unique_name};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_primary_key_tables_tier_into_paimon_on_s3_and_read_back_through_s3() {
    let c = cluster::lease_s3("paimon");
    let s3 = c.s3.clone().unwrap();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let log = TablePath::new("fluss", unique_name("s3_log"));
    let pk = TablePath::new("fluss", unique_name("s3_pk"));
    data::create_table(&admin, &log, &data::lake_log_table(2, Some("id"), "2s")).await;
    data::create_table(&admin, &pk, &super::pk_table()).await;
    data::write_rows(&conn, &log, 0, 3_000, 1_000).await;
    let expected = super::write_pk_changes(&conn, &pk).await;
    let warehouse = c.paimon_warehouse.display().to_string();
    let lake_prefix = |t: &TablePath| {
        format!(
            "{}/fluss.db/{}",
            warehouse
                .strip_prefix(&format!("s3://{}/", s3.bucket))
                .unwrap(),
            t.table()
        )
    };
    let snapshots = |t: &TablePath| {
        let prefix = format!("{}/snapshot", lake_prefix(t));
        let s3 = s3.clone();
        async move { s3.keys(&prefix).await }
    };

    // A wrong secret key: one error line, the secret nowhere, nothing written or registered.
    let extra = s3.warehouse_args("paimon", &warehouse, "not-the-secret");
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let out = host::run_to_exit(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &extra),
        Duration::from_secs(90),
    );
    let error = host::the_error_line(&out);
    assert!(
        error.contains("the store refused the credentials"),
        "{error}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not-the-secret"), "{stderr}");
    for t in [&log, &pk] {
        assert!(snapshots(t).await.is_empty(), "{t} has a snapshot");
        assert!(
            admin.get_latest_lake_snapshot(t).await.is_err(),
            "{t} has a lake snapshot"
        );
    }

    // The right secret. Fluss hands out the tables' `table.datalake.paimon.*` properties
    // without the credentials (only the endpoint and path style): the host has its own, as
    // FlussLakeTiering has.
    let ends_log = data::all_log_end_offsets(&admin, &log).await;
    let ends_pk = data::all_log_end_offsets(&admin, &pk).await;
    let extra = s3.warehouse_args("paimon", &warehouse, &s3.secret_key);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &extra),
        &format!("{}-host", log.table()),
    );
    wait_registered(&c, &admin, &log, &ends_log, &h).await;
    wait_registered(&c, &admin, &pk, &ends_pk, &h).await;
    assert_eq!(
        business(&paimon::rows(
            &c.paimon_warehouse,
            "fluss",
            log.table(),
            None
        )),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 3_000))),
    );
    let want: Vec<Value> = expected
        .iter()
        .map(|(id, name)| json!({"id": id, "name": name}))
        .collect();
    assert_eq!(
        business(&paimon::rows(
            &c.paimon_warehouse,
            "fluss",
            pk.table(),
            None
        )),
        want
    );
    assert!(!snapshots(&log).await.is_empty());
    let host_log = h.log();
    assert!(
        !host_log.contains(&s3.secret_key),
        "the secret key reached the log"
    );
}
