//! A round whose backlog is only in Fluss's remote storage on S3
//! ([`fluss_lake_e2e::remote_log`]): the S3 cluster copies its log segments to
//! `s3://…/cluster-9/remote-data`. The host, started afterwards, reads them from S3 with the
//! session credentials Fluss hands out, and tiers every row exactly once.

use fluss::metadata::TablePath;
use fluss_lake_e2e::remote_log::{assert_tiered_exactly, write_until_remote_only};
use fluss_lake_e2e::{cluster, host, unique_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_only_in_remote_storage_on_s3_is_tiered_exactly() {
    let c = cluster::lease_s3("paimon");
    let s3 = c.s3.clone().unwrap();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let path = TablePath::new("fluss", unique_name("s3_remote"));
    let remote = format!("cluster-{}/remote-data/log", c.index);
    let ends = write_until_remote_only(&c, &conn, &path, || async {
        let keys = s3.keys(&remote).await;
        keys.iter().filter(|k| k.ends_with(".log")).count()
    })
    .await;

    let warehouse = c.paimon_warehouse.display().to_string();
    let extra = s3.warehouse_args("paimon", &warehouse, &s3.secret_key);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &extra),
        &format!("{}-host", path.table()),
    );
    assert_tiered_exactly(&c, &conn, &path, &ends, &h).await;
}
