//! Storage credentials an Iceberg REST catalog vends: the S3 cluster's coordinator creates an
//! Iceberg table through Apache Iceberg's REST catalog server whose warehouse is on the test S3
//! server (`iceberg-rest` on the S3 cluster); the host is given the catalog and its OAuth2
//! client, and no storage setting of its own. While the catalog vends nothing, every round fails
//! on the store with one line and commits nothing; once the catalog (the OAuth2 gate in front of
//! it, as Polaris and Unity do) vends the bucket's endpoint and credentials in each table
//! answer's `config`, the host writes with them, and pyiceberg reads the table back through the
//! catalog. No vended secret reaches the host's log.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::catalog_gate::CatalogGate;
use fluss_lake_e2e::host::{self, HostProcess};
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{cluster, data, iceberg, unique_name};

const CLIENT_ID: &str = "tiering-host";
const CLIENT_SECRET: &str = "s3cr3t-0f-the-h0st";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_writes_with_the_storage_credentials_the_rest_catalog_vends() {
    let c = cluster::lease_s3("iceberg-rest");
    let s3 = c.s3.clone().unwrap();
    let rest = iceberg::rest_catalog_s3();
    let gate = CatalogGate::start(&rest.uri, CLIENT_ID, CLIENT_SECRET);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("vended"));
    data::create_table(&admin, &path, &data::lake_log_table(1, None, "1s")).await;
    let table = iceberg::rest_load_table(&rest.uri, "fluss", path.table())
        .expect("the coordinator creates the table through the REST catalog");
    let location = table["metadata"]["location"].as_str().unwrap().to_string();
    assert!(
        location.starts_with("s3://") || location.starts_with("s3a://"),
        "{location}"
    );
    data::write_rows(&conn, &path, 0, 500, 250).await;

    // The catalog's endpoint and client; no storage setting at all.
    let credential = format!("{CLIENT_ID}:{CLIENT_SECRET}");
    let args = host::args(
        &c.bootstrap,
        &[host::plugin("iceberg")],
        &[
            "--datalake.format",
            "iceberg",
            "--datalake.iceberg.uri",
            gate.uri(),
            "--datalake.iceberg.credential",
            &credential,
        ],
    );
    let mut h = HostProcess::spawn(&args, "iceberg-rest-vended");

    // Nothing vended: the store refuses the host, round after round, and nothing is committed.
    h.wait_for_more_logs("round failed", 2, Duration::from_secs(120))
        .await;
    let current = |rest_uri: &str| {
        iceberg::rest_load_table(rest_uri, "fluss", path.table()).unwrap()["metadata"]
            ["current-snapshot-id"]
            .as_i64()
            .filter(|id| *id >= 0)
    };
    assert_eq!(
        current(&rest.uri),
        None,
        "nothing committed without credentials"
    );

    // Vended: the host writes with the catalog's settings.
    gate.vend(&[
        ("s3.endpoint", &s3.endpoint),
        ("client.region", &s3.region),
        ("s3.access-key-id", &s3.access_key),
        ("s3.secret-access-key", &s3.secret_key),
        ("s3.path-style-access", "true"),
    ]);
    let ends = data::all_log_end_offsets(&admin, &path).await;
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));
    assert!(current(&rest.uri).is_some());
    let rows = iceberg::rest_rows(&rest.uri, "fluss", path.table(), None, "pyiceberg");
    assert_eq!(
        business(&rows),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 500))),
        "pyiceberg through the catalog"
    );
    let log = h.log();
    assert!(
        log.contains("the catalog vends the table's storage settings"),
        "{log}"
    );
    for secret in [s3.secret_key.as_str(), CLIENT_SECRET] {
        assert!(!log.contains(secret), "a secret reached the host's log");
    }
    h.kill();
}
