//! A log table with fewer buckets than the host has writers: its one bucket is cut into
//! consecutive pieces of its offset range, written in parallel by as many plugin instances
//! and committed in one lake snapshot; the lake holds every row exactly once, pypaimon reads
//! it back.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::config::Config;
use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{cluster, data, host, paimon, unique_name};

/// Enough rows for three pieces of at least 256 Ki records (the host's smallest piece).
const ROWS: i64 = 800_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_bucket_table_is_written_in_pieces_and_committed_whole() {
    let c = cluster::lease("paimon");
    let conn = Arc::new(
        FlussConnection::new(Config {
            bootstrap_servers: c.bootstrap.clone(),
            ..Default::default()
        })
        .await
        .expect("connect to Fluss"),
    );
    let admin = conn.get_admin().unwrap();
    let table = unique_name("pieces");
    let path = TablePath::new("fluss", &table);
    data::create_table(&admin, &path, &data::lake_log_table(1, None, "2s")).await;
    data::write_rows(&conn, &path, 0, ROWS as usize, 20_000).await;
    let ends = data::log_end_offsets(&admin, &path, 1).await;
    assert_eq!(ends[&0], ROWS);

    let host = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
            &[
                "--datalake.format",
                "paimon",
                "--lake.tiering.max-concurrent-writers",
                "3",
            ],
        ),
        &format!("{table}-host"),
    );
    let (snapshot, _) = data::wait_for_lake_offsets(&admin, &path, &ends, Duration::from_secs(240))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", host.log()));
    let log = host.log();
    assert!(
        log.contains(&format!(
            "tiering round started table=fluss.{table} splits=3 records_to_do={ROWS}"
        )),
        "the bucket was not cut into three pieces:\n{log}"
    );

    // One snapshot holds the three pieces' files...
    let bucket_dir = c
        .paimon_warehouse
        .join(format!("fluss.db/{table}/bucket-0"));
    let files = std::fs::read_dir(&bucket_dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "parquet")
        })
        .count();
    assert!(files >= 3, "{files} data files in {}", bucket_dir.display());
    let meta = paimon::snapshot(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(meta["id"].as_i64(), Some(snapshot), "one lake snapshot");

    // ...and every row exactly once, in its offset.
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(lake.len() as i64, ROWS);
    let offsets: HashSet<i64> = lake
        .iter()
        .map(|r| r["__offset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets.len() as i64, ROWS, "an offset was written twice");
    assert!(offsets.iter().all(|o| (0..ROWS).contains(o)));
    assert_eq!(
        business(&lake),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, ROWS as usize))),
        "the lake differs from what was written"
    );
}
