//! Nested columns (ARRAY, MAP, ROW, nested in each other, nulls and empty collections at every
//! level) of a real Fluss table, tiered by the host, read back by independent readers and
//! compared value for value with the rows Fluss acknowledged: Paimon, Iceberg, and Delta (a
//! format Fluss does not know: the table names the Delta plugin in its `lake.plugin` custom
//! property).

use std::sync::Arc;
use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::config::Config;
use fluss::metadata::{Schema, TableDescriptor, TablePath};
use fluss_lake_e2e::delta::{self, READERS};
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::nested::{
    COLUMN_NAMES, CONTRACT_COLUMNS, as_pyiceberg_reads, batch, columns, row,
};
use fluss_lake_e2e::{cluster, data, host, iceberg, paimon, unique_name};
use fluss_lake_host::fluss::table::contract_type;
use serde_json::Value;

const BUCKETS: i32 = 2;

const ROWS: i64 = 600;

/// Creates the nested table on `c`, writes [`ROWS`] rows, starts a host with the `format`
/// plugin and waits until the lake holds them all. A `delta` table is routed to the Delta
/// plugin by its `lake.plugin` property (Fluss also creates it in the cluster's own lake
/// format, where it stays empty), the host told where the Delta warehouse is.
async fn tier(c: &cluster::Lease, format: &str) -> (String, host::HostProcess) {
    let conn = Arc::new(
        FlussConnection::new(Config {
            bootstrap_servers: c.bootstrap.clone(),
            ..Default::default()
        })
        .await
        .expect("connect to Fluss"),
    );
    let admin = conn.get_admin().unwrap();
    let table = unique_name(&format!("nested_{format}"));
    let path = TablePath::new("fluss", &table);
    let mut schema = Schema::builder();
    for ((name, ty), (_, spelled, _)) in columns().into_iter().zip(CONTRACT_COLUMNS) {
        // What the plugins' own tests write is what the host hands them for this table.
        assert_eq!(contract_type(&ty), spelled, "{name}");
        schema = schema.column(name, ty);
    }
    let mut descriptor = TableDescriptor::builder()
        .schema(schema.build().unwrap())
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s");
    if format == "delta" {
        descriptor = descriptor.custom_property("lake.plugin", "delta");
    }
    let descriptor = descriptor.build().unwrap();
    data::create_table(&admin, &path, &descriptor).await;
    let fluss_table = conn.get_table(&path).await.unwrap();
    let writer = fluss_table.new_append().unwrap().create_writer().unwrap();
    for first in (0..ROWS).step_by(200) {
        writer.append_arrow_batch(batch(first, 200)).unwrap();
    }
    writer.flush().await.unwrap();
    let ends = data::log_end_offsets(&admin, &path, BUCKETS).await;
    assert_eq!(ends.values().sum::<i64>(), ROWS);
    let delta_warehouse = c.delta_warehouse.display().to_string();
    let mut extra = vec!["--datalake.format", format];
    if format == "delta" {
        extra.extend(["--datalake.delta.warehouse", &delta_warehouse]);
    }
    let host = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin(format)], &extra),
        &format!("{table}-host"),
    );
    data::wait_for_lake_offsets(&admin, &path, &ends, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", host.log()));
    (table, host)
}

fn expected() -> Vec<Value> {
    (0..ROWS).map(row).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_columns_tier_into_paimon_exactly() {
    let c = cluster::lease("paimon");
    let (table, _host) = tier(&c, "paimon").await;
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(business(&lake), expected(), "pypaimon");
    let java = paimon::java_read(&c.paimon_warehouse, "fluss", &table, &COLUMN_NAMES);
    let rows: Vec<Value> = java["rows"].as_array().unwrap().clone();
    assert_eq!(business(&rows), expected(), "Java Paimon");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_columns_tier_into_iceberg_exactly() {
    let c = cluster::lease("iceberg");
    let (table, _host) = tier(&c, "iceberg").await;
    let dir = c.iceberg_warehouse.join("fluss").join(&table);
    let lake = iceberg::rows(&dir, None, "pyiceberg");
    let want: Vec<Value> = expected().into_iter().map(as_pyiceberg_reads).collect();
    assert_eq!(business(&lake), want, "pyiceberg");
    let lake = iceberg::rows(&dir, None, "duckdb");
    assert_eq!(business(&lake), expected(), "DuckDB");
    let java = iceberg::java_rows(&dir, &COLUMN_NAMES);
    let rows: Vec<Value> = java["rows"].as_array().unwrap().clone();
    assert_eq!(business(&rows), expected(), "Java Iceberg");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_columns_tier_into_delta_exactly() {
    // Any cluster format that takes nested columns serves: the table names its own plugin.
    let c = cluster::lease("paimon");
    let (table, _host) = tier(&c, "delta").await;
    let dir = c.delta_warehouse.join("fluss").join(&table);
    let commands: Vec<Vec<String>> = READERS
        .iter()
        .map(|reader| delta::rows_command(&dir, None, reader))
        .collect();
    for (reader, lake) in READERS.iter().zip(delta::batch(&commands)) {
        assert_eq!(business(&lake), expected(), "deltalake ({reader})");
    }
}
