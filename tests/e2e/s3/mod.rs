//! Lake warehouses and Fluss remote logs on the test S3 server (`cluster/s3/start.sh`: moto,
//! IAM authentication on): the store's conditional creates under concurrent writers, a store
//! without them refused, wrong credentials, and tables tiered on the S3 cluster
//! ([`fluss_lake_e2e::cluster::lease_s3`]) read back by the formats' readers through S3.

mod conditional_creates;
mod iceberg;
mod iceberg_rest_vended;
mod lance;
mod large_files;
mod lost_ack;
mod paimon;
mod remote_log;
mod replayed_offsets;

use std::collections::BTreeMap;

use fluss::client::FlussConnection;
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::data;

/// A primary-key lake table `(id int, name string)`, 2 buckets, freshness 2 s.
fn pk_table() -> TableDescriptor {
    TableDescriptor::builder()
        .schema(
            Schema::builder()
                .column("id", DataTypes::int())
                .column("name", DataTypes::string())
                .primary_key(vec!["id"])
                .unwrap()
                .build()
                .unwrap(),
        )
        .distributed_by(Some(2), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s")
        .build()
        .unwrap()
}

/// Upserts ids 0..500, then deletes every fifth: the table's expected content, by id.
async fn write_pk_changes(conn: &FlussConnection, path: &TablePath) -> BTreeMap<i32, String> {
    let writer = data::upsert_writer(conn, path).await;
    let mut expected = BTreeMap::new();
    for id in 0..500 {
        let mut row = GenericRow::new(2);
        row.set_field(0, id);
        row.set_field(1, format!("v{}", id % 7));
        writer.upsert(&row).unwrap();
        expected.insert(id, format!("v{}", id % 7));
    }
    for id in (0..500).step_by(5) {
        let mut row = GenericRow::new(2);
        row.set_field(0, id);
        row.set_field(1, expected.remove(&id).unwrap());
        writer.delete(&row).unwrap();
    }
    writer.flush().await.unwrap();
    expected
}
