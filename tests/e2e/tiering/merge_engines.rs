//! Primary-key tables with the merge engines Fluss 0.9 allows on lake tables and fluss-rs can
//! create (the default, `first_row`, `versioned`), tiered over rounds of upserts that repeat
//! keys: after every round the lake's merged read equals what Fluss's own lookup (`Lookuper`)
//! answers for every key. Fluss merges before it writes its changelog (first_row logs only a
//! key's first row; versioned logs -U/+U only when a version wins), so the lake table merges
//! as `deduplicate`, as FlussLakeTiering's, whatever the Fluss engine. The `aggregation`
//! engine, whose tables only Fluss's Java client can create, is in `super::aggregation`, on
//! the helpers below.

use std::time::Duration;

use fluss::client::{FlussAdmin, FlussConnection};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::fluss_read::fluss_state;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{Rng, cluster, data, host, iceberg, paimon, unique_name};
use serde_json::Value;

pub(super) const BUCKETS: i32 = 2;
pub(super) const KEYS: u64 = 200;

fn descriptor(engine: Option<&str>) -> TableDescriptor {
    let schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("ver", DataTypes::bigint())
        .column("name", DataTypes::string())
        .primary_key(vec!["id"])
        .unwrap()
        .build()
        .unwrap();
    let mut b = TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s");
    if let Some(engine) = engine {
        b = b.property("table.merge-engine", engine);
    }
    if engine == Some("versioned") {
        b = b.property("table.merge-engine.versioned.ver-column", "ver");
    }
    b.build().unwrap()
}

/// The host tiering every lake-enabled table of the cluster into `format`, with `extra`
/// options.
pub(super) fn spawn_host(
    c: &ClusterInfo,
    format: &str,
    log_name: &str,
    extra: &[&str],
) -> HostProcess {
    let mut options = vec!["--datalake.format", format];
    options.extend_from_slice(extra);
    HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin(format)], &options),
        log_name,
    )
}

/// Waits until Fluss has registered a lake snapshot holding everything logged so far.
pub(super) async fn wait_tiered(admin: &FlussAdmin, path: &TablePath, what: &str, h: &HostProcess) {
    let ends = data::all_log_end_offsets(admin, path).await;
    data::wait_for_all_lake_offsets(admin, path, &ends, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}\nhost log:\n{}", h.log()));
}

/// The lake's merged read of the table's `columns` (`id` first), in the canonical JSON:
/// pypaimon for Paimon; Java Iceberg's generic reader for Iceberg (deletes applied as Java
/// applies them).
pub(super) fn lake_state(
    c: &ClusterInfo,
    format: &str,
    path: &TablePath,
    columns: &[&str],
) -> Vec<Value> {
    if format == "paimon" {
        return paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
    }
    let dir = c.iceberg_warehouse.join("fluss").join(path.table());
    iceberg::java_rows(&dir, columns)["rows"]
        .as_array()
        .unwrap()
        .clone()
}

/// Waits until the table is tiered, then asserts that the lake reads (business columns) as
/// Fluss looks up every key; returns Fluss's rows.
#[allow(clippy::too_many_arguments)]
pub(super) async fn assert_lake_reads_as_fluss(
    c: &ClusterInfo,
    conn: &FlussConnection,
    admin: &FlussAdmin,
    format: &str,
    path: &TablePath,
    columns: &[&str],
    what: &str,
    h: &HostProcess,
) -> Vec<Value> {
    wait_tiered(admin, path, what, h).await;
    let fluss = business(&fluss_state(conn, path, 0..KEYS as i32).await);
    let lake = business(&lake_state(c, format, path, columns));
    assert!(!fluss.is_empty(), "{what}: Fluss has no rows");
    assert_eq!(
        lake, fluss,
        "{what}: the lake's merged read differs from Fluss's lookups"
    );
    fluss
}

const ENGINES: [Option<&str>; 3] = [None, Some("first_row"), Some("versioned")];

/// One table per engine on one cluster, tiered by one host into `format`.
async fn run(format: &str) {
    let c = cluster::lease(format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let mut tables = Vec::new();
    for engine in ENGINES {
        let name = format!("{format}_{}", engine.unwrap_or("default"));
        let path = TablePath::new("fluss", unique_name(&name));
        data::create_table(&admin, &path, &descriptor(engine)).await;
        let writer = data::upsert_writer(&conn, &path).await;
        tables.push((engine, name, path, writer));
    }
    let h = spawn_host(&c, format, &format!("{format}-merge-engines-host"), &[]);
    let mut rng = Rng(0x5eed_0fe9_91e5);
    for round in 0..3 {
        for (engine, _, _, writer) in &tables {
            for _ in 0..600 {
                let id = rng.below(KEYS) as i32;
                let ver = rng.below(1_000) as i64;
                let mut row = GenericRow::new(3);
                row.set_field(0, id);
                row.set_field(1, ver);
                row.set_field(2, format!("r{round}-v{ver}"));
                writer.upsert(&row).unwrap();
            }
            // Deletes where the engine takes them (first_row and versioned ignore them).
            if engine.is_none() {
                for _ in 0..40 {
                    let mut row = GenericRow::new(3);
                    row.set_field(0, rng.below(KEYS) as i32);
                    row.set_field(1, 0i64);
                    row.set_field(2, String::new());
                    writer.delete(&row).unwrap();
                }
            }
            writer.flush().await.unwrap();
        }
        for (_, name, path, _) in &tables {
            let columns = ["id", "ver", "name"];
            let what = format!("{name} round {round}");
            assert_lake_reads_as_fluss(&c, &conn, &admin, format, path, &columns, &what, &h).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_tables_of_every_merge_engine_read_as_fluss_looks_them_up() {
    run("paimon").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_of_every_merge_engine_read_as_fluss_looks_them_up() {
    run("iceberg").await;
}
