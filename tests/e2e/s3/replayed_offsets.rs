//! The offsets files of Fluss's `remote.data.dir` on S3, read and deleted by the host with the
//! credentials the cluster hands out: a hostile plugin that fails its lake commit, keeps the
//! round's genuine offsets path and later claims a snapshot "Fluss missed" with it (mode
//! `replay-offsets`) gets nothing registered, because the host deleted the aborted round's
//! offsets file from S3 and verifies a claimed file's content there.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::{cluster, data, host, unique_name};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_rounds_offsets_file_on_s3_cannot_be_replayed() {
    let c = cluster::lease_s3("paimon");
    let s3 = c.s3.clone().unwrap();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("s3_replay"));
    let table = data::lake_log_table_with(1, "2s", "evil.mode", "replay-offsets");
    data::create_table(&admin, &path, &table).await;
    data::write_rows(&conn, &path, 0, 100, 100).await;

    let warehouse = c.paimon_warehouse.display().to_string();
    let mut args = vec![
        "--route".to_string(),
        format!("fluss.{}=evil", path.table()),
    ];
    args.extend(s3.warehouse_args("evil", &warehouse, &s3.secret_key));
    args.extend(["--tiering.poll.table.interval".into(), "1s".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("evil")], &args),
        &format!("{}-host", path.table()),
    );
    let refused = format!(
        "{}: the plugin reported a lake snapshot 1 Fluss missed, but its offsets file",
        path
    );
    h.wait_for_log(&refused, Duration::from_secs(120)).await;
    let log = h.log();
    let line = log.lines().find(|l| l.contains(&refused)).unwrap();
    assert!(line.contains("cannot be read"), "{line}");
    let offsets = format!("s3://{}/", s3.bucket);
    let key = line
        .split_whitespace()
        .find(|w| w.starts_with(&offsets) && w.ends_with(".offsets"))
        .unwrap_or_else(|| panic!("no offsets path in: {line}"))
        .trim_start_matches(&offsets)
        .to_string();
    assert!(
        s3.keys(&key).await.is_empty(),
        "the aborted round's offsets file {key} is still on S3"
    );
    assert!(
        admin.get_latest_lake_snapshot(&path).await.is_err(),
        "Fluss registered the replayed snapshot"
    );
    assert!(h.exited().is_none(), "host exited:\n{log}");
    h.terminate(Duration::from_secs(40));
}
