//! Measures the host's tiering throughput on the running cluster.
//!
//! `bench log <rows> [format]`: a 3-bucket log table with the standard columns.
//! `bench pk <changes> [format]`: a 3-bucket primary-key table receiving upserts (a third of
//! them updates of earlier keys) and deletes.
//! `format` is the lake format (`paimon`, the default, or `iceberg`): the cluster's
//! `datalake.format` is switched to it at run time, and the host loads that plugin.
//!
//! Rows are written first; then one host tiers the backlog. Reported: wall time from the
//! first round's start to the last commit (from the host's log), rows per second, and host
//! CPU seconds (user + system, from /proc), i.e. rows per CPU-second ("per core").

use std::time::Duration;

use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::{cluster, data, host, unique_name};

fn log_time(line: &str) -> Option<f64> {
    // 2026-11-29T11:43:48.681309Z ...
    let ts = line.split_whitespace().next()?;
    let t = ts.split('T').nth(1)?.trim_end_matches('Z');
    let mut parts = t.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map(String::as_str).unwrap_or("log");
    let n: usize = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let format = args.get(3).map(String::as_str).unwrap_or("paimon");
    let c = cluster::lease(format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name(&format!("bench_{kind}")));
    let started_writing = std::time::Instant::now();
    match kind {
        "log" => {
            data::create_table(&admin, &path, &data::lake_log_table(3, Some("id"), "20s")).await;
            data::write_rows(&conn, &path, 0, n, 20_000).await;
        }
        "pk" => {
            let schema = Schema::builder()
                .column("id", DataTypes::int())
                .column("name", DataTypes::string())
                .column("val", DataTypes::bigint())
                .column("price", DataTypes::double())
                .primary_key(vec!["id"])
                .unwrap()
                .build()
                .unwrap();
            let d = TableDescriptor::builder()
                .schema(schema)
                .distributed_by(Some(3), vec!["id".to_string()])
                .property("table.datalake.enabled", "true")
                .property("table.datalake.freshness", "20s")
                .build()
                .unwrap();
            data::create_table(&admin, &path, &d).await;
            let table = conn.get_table(&path).await.unwrap();
            let w = table.new_upsert().unwrap().create_writer().unwrap();
            let keys = (n * 2 / 3).max(1) as i64;
            for i in 0..n as i64 {
                let id = (i % keys) as i32;
                let mut row = GenericRow::new(4);
                row.set_field(0, id);
                row.set_field(1, format!("name-{i}"));
                row.set_field(2, i);
                row.set_field(3, i as f64 * 0.5);
                if i % 50 == 49 {
                    w.delete(&row).unwrap();
                } else {
                    w.upsert(&row).unwrap();
                }
            }
            w.flush().await.unwrap();
        }
        other => panic!("unknown benchmark {other}: use log or pk"),
    }
    let ends = data::all_log_end_offsets(&admin, &path).await;
    let changes: i64 = ends.values().sum();
    eprintln!(
        "wrote {n} {kind} rows ({changes} log records) in {:.1}s",
        started_writing.elapsed().as_secs_f64()
    );
    let log_name = format!("{}-bench-host", path.table());
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin(format)], &[]),
        &log_name,
    );
    data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(900))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", h.log()));
    let pid = h.pid();
    let cpu = cpu_seconds(pid);
    let log = h.log();
    let table = path.table();
    let mine = |l: &&str| l.contains(table);
    let start = log
        .lines()
        .filter(mine)
        .find(|l| l.contains("tiering round started"))
        .and_then(log_time)
        .unwrap();
    let end = log
        .lines()
        .filter(mine)
        .filter(|l| l.contains("tiering round committed"))
        .filter_map(log_time)
        .next_back()
        .unwrap();
    let rounds = log
        .lines()
        .filter(mine)
        .filter(|l| l.contains("tiering round committed"))
        .count();
    let wall = end - start;
    h.terminate(Duration::from_secs(30));
    println!(
        "{kind} ({format}): {changes} records tiered in {wall:.2}s over {rounds} round(s): {:.0} records/s; host CPU {cpu:.2}s (incl. startup): {:.0} records per CPU-second",
        changes as f64 / wall,
        changes as f64 / cpu
    );
}
