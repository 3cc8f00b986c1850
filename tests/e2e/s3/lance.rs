//! Lance on S3, on the S3 cluster: the coordinator's Lance catalog (Lance's JNI object store,
//! given the cluster's `datalake.lance.*` storage options) creates the dataset in
//! `s3://…/cluster-9/lance`; the host, given the warehouse and its credentials under Lance's
//! own option names, tiers a log table into it over two rounds, and pylance reads it back
//! through S3 with its own storage options.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, lance, unique_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_table_tiers_into_lance_on_s3_and_reads_back_through_s3() {
    let c = cluster::lease_s3("lance");
    let s3 = c.s3.clone().unwrap();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name("s3_lance");
    let path = TablePath::new("fluss", &table);
    data::create_table(&admin, &path, &data::lake_log_table(2, Some("id"), "2s")).await;
    let dataset = c
        .lance_warehouse
        .join("fluss")
        .join(format!("{table}.lance"));
    assert_eq!(
        lance::versions(&dataset),
        [1],
        "the coordinator created the dataset on S3"
    );

    data::write_rows(&conn, &path, 0, 4_000, 1_000).await;
    let warehouse = c.lance_warehouse.display().to_string();
    // Lance's own storage option names.
    let args = s3.warehouse_args_named(
        "lance",
        &warehouse,
        ["endpoint", "region", "access_key_id", "secret_access_key"],
        &[("allow_http", "true")],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("lance")], &args),
        &format!("{table}-host"),
    );
    let ends = data::all_log_end_offsets(&admin, &path).await;
    let v1 = wait_registered(&c, &admin, &path, &ends, &h).await as u64;
    assert_eq!(lance::versions(&dataset).last(), Some(&v1));

    data::write_rows(&conn, &path, 4_000, 2_000, 1_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;
    let v2 = wait_registered(&c, &admin, &path, &ends, &h).await as u64;
    assert!(v2 > v1);
    assert_eq!(
        business(&lance::rows(&dataset, None)),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 6_000))),
    );
    assert_eq!(lance::count(&dataset, Some(v1)), 4_000, "time travel");
    // Every data file is in the bucket, under the dataset.
    let prefix = format!(
        "{}/fluss/{table}.lance/data",
        warehouse
            .strip_prefix(&format!("s3://{}/", s3.bucket))
            .unwrap()
    );
    let files = s3.keys(&prefix).await;
    assert!(!files.is_empty(), "no data files under {prefix}");
    let host_log = h.log();
    assert!(
        !host_log.contains(&s3.secret_key),
        "the secret key reached the log"
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
