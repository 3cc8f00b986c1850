//! The README's demo: create a lake-enabled Fluss log table on the running cluster, write
//! rows, run the host with the lake format's plugin (`demo [paimon|iceberg|lance]`, Paimon by
//! default; the cluster is restarted with that format if needed), and print what landed in
//! the lake as the format's own reader (pypaimon, pyiceberg, pylance) reads it.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::{cluster, data, host, iceberg, lance, paimon, unique_name};

#[tokio::main]
async fn main() {
    let format = std::env::args().nth(1).unwrap_or_else(|| "paimon".into());
    if !["paimon", "iceberg", "lance"].contains(&format.as_str()) {
        eprintln!("usage: demo [paimon|iceberg|lance]");
        std::process::exit(2);
    }
    let c = cluster::ensure_format(&format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name("demo_orders");
    let path = TablePath::new("fluss", &table);
    println!("creating lake-enabled log table {path} (3 buckets, freshness 5s)");
    data::create_table(&admin, &path, &data::lake_log_table(3, Some("id"), "5s")).await;
    data::write_rows(&conn, &path, 0, 50_000, 10_000).await;
    let ends = data::log_end_offsets(&admin, &path, 3).await;
    println!("wrote 50000 rows; log end offsets per bucket: {ends:?}");

    let args = host::args(
        &c.bootstrap,
        &[host::plugin(&format)],
        &["--datalake.format", &format],
    );
    println!("running: fluss-lake-host {}", args.join(" "));
    let mut h = host::HostProcess::spawn(&args, &format!("{table}-demo-host"));
    let started = std::time::Instant::now();
    match data::wait_for_lake_offsets(&admin, &path, &ends, Duration::from_secs(180)).await {
        Ok((snapshot, offsets)) => {
            println!(
                "tiered in {:.1}s: Fluss lake snapshot {snapshot}, offsets {offsets:?}",
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) => {
            eprintln!("{e}\nhost log:\n{}", h.log());
            std::process::exit(1);
        }
    }
    let (rows, location, meta) = if format == "paimon" {
        let rows = paimon::rows(&c.paimon_warehouse, "fluss", &table, None);
        let meta = paimon::snapshot(&c.paimon_warehouse, "fluss", &table, None);
        (rows, c.paimon_warehouse.join("fluss.db").join(&table), meta)
    } else if format == "lance" {
        let dir = c
            .lance_warehouse
            .join("fluss")
            .join(format!("{table}.lance"));
        let rows = lance::rows(&dir, None);
        let version = *lance::versions(&dir).last().unwrap();
        (rows, dir.clone(), lance::transaction(&dir, version))
    } else {
        let dir = c.iceberg_warehouse.join("fluss").join(&table);
        let rows = iceberg::rows(&dir, None, "pyiceberg");
        let meta = iceberg::snapshots(&dir).pop().unwrap_or_default();
        (rows, dir, meta)
    };
    let reader = match format.as_str() {
        "paimon" => "pypaimon",
        "iceberg" => "pyiceberg",
        _ => "pylance",
    };
    println!(
        "{reader} reads {} rows from {}",
        rows.len(),
        location.display()
    );
    println!("latest {format} snapshot: {meta}");
    for r in rows.iter().take(3) {
        println!("  {r}");
    }
    h.terminate(Duration::from_secs(30));
    println!("host stopped; log at target/test-logs/{table}-demo-host.log");
}
