//! Fluss's remote storage on Google Cloud Storage and Azure, as the host reads it.
//!
//! GCS, end to end: a round whose backlog is only in remote storage on fake-gcs-server
//! ([`fluss_lake_e2e::remote_log`]). The cluster
//! ([`fluss_lake_e2e::cluster::lease_gcs`]) copies its log segments to
//! `gs://<bucket>/cluster-<index>/remote-data` with Fluss's own GCS file system, and, as
//! Fluss 0.9 does for GCS, hands its clients no credentials for it. So the host reaches the
//! store with settings of its own, `--fluss.client.fs.<key>` as Java clients take
//! `client.fs.<key>`. A host without them fails its rounds with one line naming that option and
//! registers no offsets; one given them tiers every row exactly once.
//!
//! Azure, through a real coordinator but not a real Fluss remote log: Fluss's `fluss-fs-azure`
//! speaks ADLS Gen2's DFS API, which Azurite does not serve, so no test cluster can keep its
//! log there. The host's reader is given a segment laid out as Fluss lays them out, on Azurite,
//! and a cluster's coordinator to ask for credentials (it hands out none, as Fluss on Azure
//! without OAuth): with its own settings under Fluss's names it copies the segment whole,
//! through `abfs://` and `wasb://` names of it; with a wrong key it fails in one line that
//! shows no key.

use std::time::Duration;

use std::sync::Arc;

use fluss::metadata::TablePath;
use fluss_lake_e2e::remote_log::{assert_tiered_exactly, write_until_remote_only};
use fluss_lake_e2e::{cluster, host, object_stores, unique_name};
use fluss_lake_host::coordinator::CoordinatorClient;
use fluss_lake_host::coordinator::client::FixedAddress;
use fluss_lake_host::fluss::remote_dir::{RemotePath, RemoteStorage};
use fluss_lake_host::warehouse::{StorageOptions, Warehouse};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_only_in_remote_storage_on_gcs_is_tiered_with_the_hosts_own_settings() {
    let c = cluster::lease_gcs("paimon");
    let gcs = object_stores::fake_gcs();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("gcs_remote"));
    let remote = format!("cluster-{}/remote-data/log/", c.index);
    let ends = write_until_remote_only(&c, &conn, &path, || async {
        let keys = gcs.keys(&remote);
        keys.iter().filter(|k| k.ends_with(".log")).count()
    })
    .await;

    // Without settings of its own the host cannot read the segments, and says what to give.
    {
        let mut h = host::HostProcess::spawn(
            &host::args(&c.bootstrap, &[host::plugin("paimon")], &[]),
            &format!("{}-bare-host", path.table()),
        );
        h.wait_for_log("tiering round failed", Duration::from_secs(240))
            .await;
        // The host's reader fails the read at once (its store client has retried what was
        // transient); fluss-rs would otherwise try each segment ten times more first.
        assert!(
            !h.log().contains(". Retry 1/"),
            "fluss-rs retried the host's failed read:\n{}",
            h.log()
        );
        let line = h
            .log()
            .lines()
            .find(|l| l.contains("tiering round failed"))
            .unwrap()
            .to_string();
        for needle in [
            format!("remote log segment gs://{}/{remote}", gcs.bucket),
            "give them as --fluss.client.fs.<key>".to_string(),
        ] {
            assert!(line.contains(&needle), "{needle} not in: {line}");
        }
        // Nothing read, so nothing registered past the start of the log.
        if let Ok(lake) = admin.get_latest_lake_snapshot(&path).await {
            assert!(
                lake.table_buckets_offset.values().all(|o| *o == 0),
                "offsets registered without the segments: {:?}\n{}",
                lake.table_buckets_offset,
                h.log()
            );
        }
        // Stopped as an operator stops it: the round it holds, waiting to retry, is reported
        // failed, so the next host gets the table at once, not after the coordinator's fixed
        // 120 s tiering timeout (which a killed host would leave it to).
        h.terminate(Duration::from_secs(40));
    }

    let h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("paimon")],
            &[
                "--fluss.client.fs.gs.storage.root.url",
                &gcs.endpoint,
                "--fluss.client.fs.gs.auth.type",
                "UNAUTHENTICATED",
            ],
        ),
        &format!("{}-host", path.table()),
    );
    assert_tiered_exactly(&c, &conn, &path, &ends, &h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_on_azure_are_copied_whole_with_the_hosts_own_settings() {
    let c = cluster::lease_mixed();
    let a = object_stores::azurite();
    let settings = |key: &str| {
        StorageOptions::from_pairs([
            ("fs.azure.account.key", key),
            ("fs.azure.abfs.endpoint", a.host_port()),
            ("fs.azure.always.use.https", "false"),
        ])
    };
    // A 3 MiB segment at `<tablet dir>/<segment id>/<start offset>.log`.
    let tablet = format!("{}/remote-data/log/fluss/t-7/0", unique_name("remote"));
    let segment: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
    Warehouse::open(&a.abfs_url(&tablet), &settings(&a.key))
        .unwrap()
        .scope("5d1c0f3a-segment")
        .unwrap()
        .put("00000000000000001000.log", segment.clone())
        .await
        .unwrap();
    let reader = |key: &str| {
        let storage = RemoteStorage::new(settings(key));
        storage.attach(Arc::new(CoordinatorClient::new(
            Arc::new(FixedAddress(c.bootstrap.clone())),
            Duration::from_secs(10),
        )));
        storage
    };
    let local = tempfile::tempdir().unwrap();
    let storage = reader(&a.key);
    for dir in [a.abfs_url(&tablet), a.wasb_url(&tablet)] {
        let path = RemotePath::parse(&dir)
            .unwrap()
            .join(["5d1c0f3a-segment", "00000000000000001000.log"]);
        let copy = local.path().join("segment.log");
        let size = storage.download(&path, &copy).await.unwrap();
        assert_eq!(size, segment.len() as u64, "{path}");
        assert!(
            std::fs::read(&copy).unwrap() == segment,
            "{path}: not the same bytes"
        );
    }

    let wrong = "d3JvbmcgYnV0IHdlbGwgZm9ybWVkIGtleQ==";
    let path = RemotePath::parse(&a.abfs_url(&tablet))
        .unwrap()
        .join(["5d1c0f3a-segment", "00000000000000001000.log"]);
    let e = reader(wrong)
        .download(&path, &local.path().join("refused.log"))
        .await
        .unwrap_err();
    let line = e.to_string();
    assert!(line.starts_with("storage error: cannot be read"), "{line}");
    assert!(
        !line.contains('\n') && !line.contains(wrong) && !line.contains(&a.key),
        "{line}"
    );
    assert!(!local.path().join("refused.log").exists());
}
