//! The README's demo. By default (`demo` or `demo mixed`) one host process tiers four
//! tables into four lake formats at once: on a cluster that holds every lake format, tables
//! are created while its `datalake.format` is paimon, then iceberg, then lance (switched with
//! AlterClusterConfigs), plus one routed to Delta Lake, a format Fluss does not know, by its
//! `lake.plugin` custom property. `demo paimon|iceberg|lance` tiers one table of one format.
//! Each lake is then read by the format's own reader (pypaimon, pyiceberg, pylance,
//! deltalake).

use std::path::PathBuf;
use std::time::Duration;

use fluss::metadata::{TableDescriptor, TablePath};
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::{cluster, data, delta, host, iceberg, lance, paimon, unique_name};
use serde_json::Value;

const ROWS: usize = 50_000;

/// What a format's own reader sees of a table: its rows, where it is, its newest snapshot.
fn read_lake(
    c: &ClusterInfo,
    format: &str,
    table: &str,
) -> (&'static str, Vec<Value>, PathBuf, Value) {
    match format {
        "paimon" => (
            "pypaimon",
            paimon::rows(&c.paimon_warehouse, "fluss", table, None),
            c.paimon_warehouse.join("fluss.db").join(table),
            paimon::snapshot(&c.paimon_warehouse, "fluss", table, None),
        ),
        "iceberg" => {
            let dir = c.iceberg_warehouse.join("fluss").join(table);
            let meta = iceberg::snapshots(&dir).pop().unwrap_or_default();
            (
                "pyiceberg",
                iceberg::rows(&dir, None, "pyiceberg"),
                dir,
                meta,
            )
        }
        "lance" => {
            let dir = c
                .lance_warehouse
                .join("fluss")
                .join(format!("{table}.lance"));
            let version = *lance::versions(&dir).last().unwrap();
            let meta = lance::transaction(&dir, version);
            ("pylance", lance::rows(&dir, None), dir, meta)
        }
        _ => {
            let dir = c.delta_warehouse.join("fluss").join(table);
            let meta = delta::history(&dir).pop().unwrap_or_default();
            ("deltalake", delta::rows(&dir, None, "pyarrow"), dir, meta)
        }
    }
}

fn delta_table() -> TableDescriptor {
    data::lake_log_table_with(3, "5s", "lake.plugin", "delta")
}

#[tokio::main]
async fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "mixed".into());
    let formats: Vec<&str> = match mode.as_str() {
        "mixed" => vec!["paimon", "iceberg", "lance", "delta"],
        "paimon" | "iceberg" | "lance" => vec![mode.as_str()],
        _ => {
            eprintln!("usage: demo [mixed|paimon|iceberg|lance]");
            std::process::exit(2);
        }
    };
    let mut c = if mode == "mixed" {
        cluster::lease_mixed()
    } else {
        cluster::lease(&mode)
    };
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name("demo");
    let mut tables = Vec::new();
    for format in &formats {
        let table = format!("{id}_{format}_orders");
        let path = TablePath::new("fluss", &table);
        if *format == "delta" {
            println!(
                "creating {path} with 'lake.plugin' = 'delta' (Fluss knows no Delta: the host routes it)"
            );
            data::create_table(&admin, &path, &delta_table()).await;
        } else {
            if mode == "mixed" {
                c.set_lake_format(format);
                println!("cluster datalake.format is now {format} (AlterClusterConfigs)");
            }
            println!("creating lake-enabled log table {path} (3 buckets, freshness 5s)");
            data::create_table(&admin, &path, &data::lake_log_table(3, Some("id"), "5s")).await;
        }
        data::write_rows(&conn, &path, 0, ROWS, 10_000).await;
        tables.push((format.to_string(), table, path));
    }
    println!("wrote {ROWS} rows into each table");

    let plugins: Vec<PathBuf> = formats.iter().map(|f| host::plugin(f)).collect();
    let mut extra = vec![
        "--lake.tiering.max-concurrent-tables".to_string(),
        "4".to_string(),
    ];
    for (f, wh) in [
        ("paimon", &c.paimon_warehouse),
        ("iceberg", &c.iceberg_warehouse),
        ("lance", &c.lance_warehouse),
        ("delta", &c.delta_warehouse),
    ] {
        // The cluster shows a table only its *current* format's options: the host is told
        // where the other formats' lakes are.
        if formats.contains(&f) && mode == "mixed" {
            extra.push(format!("--datalake.{f}.warehouse"));
            extra.push(wh.display().to_string());
        }
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let args = host::args(&c.bootstrap, &plugins, &extra);
    println!("running one host: fluss-lake-host {}", args.join(" "));
    let mut h = host::HostProcess::spawn(&args, &format!("{id}-demo-host"));
    let started = std::time::Instant::now();
    for (format, _, path) in &tables {
        let ends = data::log_end_offsets(&admin, path, 3).await;
        match data::wait_for_lake_offsets(&admin, path, &ends, Duration::from_secs(180)).await {
            Ok((snapshot, offsets)) => println!(
                "{path} tiered into {format} after {:.1}s: Fluss lake snapshot {snapshot}, offsets {offsets:?}",
                started.elapsed().as_secs_f64()
            ),
            Err(e) => {
                eprintln!("{e}\nhost log:\n{}", h.log());
                std::process::exit(1);
            }
        }
    }
    for (format, table, _) in &tables {
        let (reader, rows, location, meta) = read_lake(&c, format, table);
        println!(
            "\n{reader} reads {} rows from {}",
            rows.len(),
            location.display()
        );
        println!("latest {format} snapshot: {meta}");
        for r in rows.iter().take(2) {
            println!("  {r}");
        }
        if rows.len() != ROWS {
            eprintln!("expected {ROWS} rows in the {format} lake");
            std::process::exit(1);
        }
    }
    h.terminate(Duration::from_secs(30));
    println!("\nhost stopped; log at target/test-logs/{id}-demo-host.log");
}
