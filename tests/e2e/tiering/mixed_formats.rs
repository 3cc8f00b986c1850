//! One host process tiers tables of different lake formats at the same time, on one real
//! cluster that holds all of them.
//!
//! The cluster starts without a lake format and with Fluss's three Java lake plugins
//! installed; the test switches its `datalake.format` with AlterClusterConfigs (no restart)
//! and creates one table while it is paimon, one while it is iceberg, one while it is lance:
//! each table keeps the format, and the lake table, it was created with. Two more tables go
//! to Delta Lake, a format Fluss does not know, one through its `lake.plugin` custom
//! property and one through a host `--route` rule. One host loaded with four plugins then
//! tiers all five tables while writers keep appending; every lake's own reader (pypaimon,
//! pyiceberg and DuckDB, pylance, deltalake) reads back exactly the Fluss data.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use fluss::metadata::{TableDescriptor, TablePath};
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, delta, host, iceberg, lance, paimon, unique_name};
use serde_json::Value;

const BUCKETS: i32 = 2;
const WAVES: i64 = 4;
const WAVE_ROWS: i64 = 5_000;

fn expected(upto: i64) -> Vec<Value> {
    data::sorted_by_id(data::canonical_rows(&data::batch(0, upto as usize)))
}

struct Table {
    path: TablePath,
    /// The plugin that must tier it.
    format: &'static str,
}

fn with_custom_property(key: &str, value: &str) -> TableDescriptor {
    data::lake_log_table_with(BUCKETS, "3s", key, value)
}

/// Which table's round was in flight when another's started, from the host log.
fn overlapping_rounds(log: &str, tables: &[Table]) -> Vec<(String, String)> {
    let mut in_flight: Vec<&str> = Vec::new();
    let mut overlaps = Vec::new();
    for line in log.lines() {
        for t in tables {
            let name = t.path.table();
            if !line.contains(&format!("fluss.{name}")) {
                continue;
            }
            if line.contains("tiering round started") {
                for other in &in_flight {
                    overlaps.push((other.to_string(), name.to_string()));
                }
                in_flight.push(name);
            } else if line.contains("tiering round committed")
                || line.contains("tiering round failed")
            {
                in_flight.retain(|n| *n != name);
            }
        }
    }
    overlaps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_host_tiers_paimon_iceberg_lance_and_delta_tables_at_once() {
    let mut c = cluster::lease_mixed();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("mix");
    let mut tables = Vec::new();
    for format in ["paimon", "iceberg", "lance"] {
        c.set_lake_format(format);
        let path = TablePath::new("fluss", format!("{id}_{format}"));
        data::create_table(
            &admin,
            &path,
            &data::lake_log_table(BUCKETS, Some("id"), "3s"),
        )
        .await;
        let info = admin.get_table_info(&path).await.unwrap();
        assert_eq!(
            info.get_properties()
                .get("table.datalake.format")
                .map(String::as_str),
            Some(format),
            "{path} keeps the format the cluster had when it was created"
        );
        tables.push(Table { path, format });
    }
    // Delta: Fluss does not know it; the cluster's format (lance now) is overridden.
    let by_property = TablePath::new("fluss", format!("{id}_delta_prop"));
    data::create_table(
        &admin,
        &by_property,
        &with_custom_property("lake.plugin", "delta"),
    )
    .await;
    tables.push(Table {
        path: by_property,
        format: "delta",
    });
    let by_route = TablePath::new("fluss", format!("{id}_delta_routed"));
    data::create_table(
        &admin,
        &by_route,
        &data::lake_log_table(BUCKETS, Some("id"), "3s"),
    )
    .await;
    tables.push(Table {
        path: by_route,
        format: "delta",
    });
    // The tables' formats were fixed at creation: switching again changes none of them.
    c.set_lake_format("paimon");
    for t in &tables[..3] {
        let info = admin.get_table_info(&t.path).await.unwrap();
        assert_eq!(
            info.get_properties()
                .get("table.datalake.format")
                .map(String::as_str),
            Some(t.format)
        );
    }

    let delta_warehouse = c.delta_warehouse.clone();
    let route = format!("fluss.{id}_delta_rout*=delta");
    let plugins: Vec<PathBuf> = ["paimon", "iceberg", "lance", "delta"]
        .iter()
        .map(|f| host::plugin(f))
        .collect();
    let warehouse_arg = delta_warehouse.display().to_string();
    // Fluss shows a table only the options of the cluster's *current* format
    // (`table.datalake.<current>.*`, added when the table info is read), so the host is told
    // where the other formats' warehouses are; the current format's comes from Fluss.
    let iceberg_wh = c.iceberg_warehouse.display().to_string();
    let lance_wh = c.lance_warehouse.display().to_string();
    let mut h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &plugins,
            &[
                "--route",
                &route,
                "--datalake.delta.warehouse",
                &warehouse_arg,
                "--datalake.iceberg.warehouse",
                &iceberg_wh,
                "--datalake.lance.warehouse",
                &lance_wh,
                "--lake.tiering.max-concurrent-tables",
                "5",
                "--tiering.poll.table.interval",
                "1s",
                "--tiering.heartbeat.interval",
                "2s",
            ],
        ),
        &format!("{id}-host"),
    );

    // Writers keep appending to every table while the host tiers them.
    for wave in 0..WAVES {
        for t in &tables {
            data::write_rows(&conn, &t.path, wave * WAVE_ROWS, WAVE_ROWS as usize, 2_500).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let total = WAVES * WAVE_ROWS;
    let want = expected(total);
    let mut reads = HashMap::new();
    for t in &tables {
        let ends = data::all_log_end_offsets(&admin, &t.path).await;
        wait_registered(&c, &admin, &t.path, &ends, &h).await;
        let name = t.path.table();
        let rows = match t.format {
            "paimon" => paimon::rows(&c.paimon_warehouse, "fluss", name, None),
            "iceberg" => {
                let dir = c.iceberg_warehouse.join("fluss").join(name);
                let duck = iceberg::rows(&dir, None, "duckdb");
                assert_eq!(business(&duck), want, "{name}: DuckDB reads the Fluss data");
                iceberg::rows(&dir, None, "pyiceberg")
            }
            "lance" => lance::rows(
                &c.lance_warehouse
                    .join("fluss")
                    .join(format!("{name}.lance")),
                None,
            ),
            "delta" => {
                let dir = delta_warehouse.join("fluss").join(name);
                // Every version after the table's creation is a tiering round that carries
                // its Fluss offsets file, the last one the one Fluss registered.
                let history = delta::history(&dir);
                assert!(history.len() >= 2, "{history:?}");
                for h in &history[1..] {
                    assert_eq!(h["commit-user"], "__fluss_lake_tiering", "{h}");
                    assert!(
                        h["fluss-offsets"].as_str().unwrap().ends_with(".offsets"),
                        "{h}"
                    );
                }
                let registered = admin.get_latest_lake_snapshot(&t.path).await.unwrap();
                assert_eq!(
                    history.last().unwrap()["version"].as_i64(),
                    Some(registered.snapshot_id),
                    "Fluss registered the newest Delta version"
                );
                delta::rows(&dir, None, "pyarrow")
            }
            other => unreachable!("{other}"),
        };
        assert_eq!(
            business(&rows),
            want,
            "{name} ({}) holds exactly the Fluss data",
            t.format
        );
        reads.insert(name.to_string(), rows.len());
    }

    let log = h.log();
    for t in &tables {
        let routed = format!(
            "table routed table=fluss.{} plugin={} ",
            t.path.table(),
            t.format
        );
        assert!(log.contains(&routed), "no '{routed}' in:\n{log}");
    }
    assert!(log.contains("route=TableProperty"), "{log}");
    assert!(log.contains("route=HostRule(0)"), "{log}");
    let overlaps = overlapping_rounds(&log, &tables);
    let formats_overlapping: std::collections::BTreeSet<(&str, &str)> = overlaps
        .iter()
        .filter_map(|(a, b)| {
            let fa = tables.iter().find(|t| t.path.table() == a)?.format;
            let fb = tables.iter().find(|t| t.path.table() == b)?.format;
            (fa != fb).then_some((fa, fb))
        })
        .collect();
    assert!(
        !formats_overlapping.is_empty(),
        "rounds of different formats never ran at the same time:\n{log}"
    );
    assert!(h.exited().is_none(), "host exited:\n{log}");
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
