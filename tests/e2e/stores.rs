//! Lake warehouses on Azure Blob Storage / ADLS Gen2 and on Google Cloud Storage, against their
//! emulators ([`fluss_lake_e2e::object_stores`]: Azurite, fake-gcs-server): each spelling of
//! the settings users write for Fluss, Hadoop, Paimon, Iceberg and object_store opens a
//! warehouse that passes the startup check (a second create of one object refused), every
//! storage call a plugin makes works through it, racing writers of one snapshot see exactly
//! one winner, and a wrong key is refused at the check.

use fluss_lake_e2e::object_stores::{self, Azurite, FakeGcs};
use fluss_lake_host::plugin::storage::{ScopedStorage, StorageErrorKind};
use fluss_lake_host::warehouse::{StorageOptions, Warehouse, Warehouses};

fn options(pairs: &[(&str, &str)]) -> StorageOptions {
    StorageOptions::from_pairs(pairs.iter().copied())
}

/// Azurite's warehouse at `prefix` under each URL scheme and spelling of its settings.
fn azure_spellings(a: &Azurite, prefix: &str) -> Vec<(&'static str, String, StorageOptions)> {
    let per_account_key = format!("fs.azure.account.key.{}", a.dfs_host());
    let connection_string = format!("adls.connection-string.{}", a.dfs_host());
    vec![
        (
            "Fluss / Hadoop ABFS, per-account key, Hadoop's emulator endpoint",
            a.abfs_url(prefix),
            options(&[
                (&per_account_key, &a.key),
                ("fs.azure.abfs.endpoint", a.host_port()),
                ("fs.azure.always.use.https", "false"),
            ]),
        ),
        (
            "wasb://, Fluss's documented fs.azure.account.key",
            format!(
                "wasb://{}@{}.blob.core.windows.net/{prefix}",
                a.container, a.account
            ),
            options(&[
                ("fs.azure.account.key", &a.key),
                ("fs.azure.abfs.endpoint", a.host_port()),
                ("fs.azure.always.use.https", "false"),
            ]),
        ),
        (
            "Fluss's Iceberg plugin (iceberg.hadoop.fs.azure.*)",
            a.abfs_url(prefix),
            options(&[
                (&format!("iceberg.hadoop.{per_account_key}"), &a.key),
                ("iceberg.hadoop.fs.azure.abfs.endpoint", a.host_port()),
                ("iceberg.hadoop.fs.azure.always.use.https", "false"),
            ]),
        ),
        (
            "Iceberg ADLSFileIO",
            format!("abfss://{}@{}/{prefix}", a.container, a.dfs_host()),
            options(&[
                ("adls.auth.shared-key.account.name", &a.account),
                ("adls.auth.shared-key.account.key", &a.key),
                (&connection_string, &a.endpoint),
            ]),
        ),
        (
            "object_store / Lance, az://",
            format!("az://{}/{prefix}", a.container),
            options(&[
                ("azure_storage_account_name", &a.account),
                ("azure_storage_account_key", &a.key),
                ("azure_storage_endpoint", &a.endpoint),
            ]),
        ),
    ]
}

/// fake-gcs-server's warehouse at `prefix` under each spelling of its settings.
fn gcs_spellings(g: &FakeGcs, prefix: &str) -> Vec<(&'static str, String, StorageOptions)> {
    let url = format!("gs://{}/{prefix}", g.bucket);
    let e = g.endpoint.as_str();
    vec![
        (
            "Fluss / Hadoop GCS connector 3.x",
            url.clone(),
            options(&[
                ("fs.gs.storage.root.url", e),
                ("fs.gs.auth.type", "UNAUTHENTICATED"),
            ]),
        ),
        (
            "Fluss's gs. prefix, connector 2.2",
            url.clone(),
            options(&[
                ("gs.storage.root.url", e),
                ("gs.auth.service.account.enable", "false"),
                ("gs.auth.null.enable", "true"),
            ]),
        ),
        (
            "Iceberg GCSFileIO",
            url.clone(),
            options(&[("gcs.service.host", e), ("gcs.no-auth", "true")]),
        ),
        (
            "object_store / Lance",
            url.clone(),
            options(&[("google_base_url", e), ("google_skip_signature", "true")]),
        ),
        (
            "Iceberg, an OAuth2 token (sent; the emulator ignores it)",
            url,
            options(&[("gcs.service.host", e), ("gcs.oauth2.token", "ya29.test")]),
        ),
    ]
}

/// Every storage call a plugin makes, through the warehouse's scope of one table.
async fn round_trip(what: &str, wh: &Warehouse) {
    let s: ScopedStorage = wh.scope("db.db/t").unwrap();
    s.put("a/1", b"one".to_vec()).await.unwrap();
    s.put("a/1", b"uno".to_vec()).await.unwrap();
    assert_eq!(s.get("a/1", 1 << 10).await.unwrap(), b"uno", "{what}");
    assert_eq!(s.get_range("a/1", 1, 10, 1 << 10).await.unwrap(), b"no");

    s.put_if_absent("snapshot/snapshot-1", b"first".to_vec())
        .await
        .unwrap();
    let e = s
        .put_if_absent("snapshot/snapshot-1", b"second".to_vec())
        .await
        .unwrap_err();
    assert_eq!(
        e.kind,
        StorageErrorKind::AlreadyExists,
        "{what}: {}",
        e.message
    );
    assert_eq!(
        s.get("snapshot/snapshot-1", 1 << 10).await.unwrap(),
        b"first"
    );

    // A streamed upload: two whole 8 MiB parts and a shorter last one, written in pieces
    // that do not fall on part boundaries; invisible until completed.
    let body: Vec<u8> = (0..(17 << 20) + 123).map(|i| (i % 251) as u8).collect();
    let mut up = s.start_upload("data/f.parquet").await.unwrap();
    for piece in body.chunks(3 << 20) {
        up.write(piece).await.unwrap();
    }
    assert!(
        s.head("data/f.parquet").await.unwrap().is_none(),
        "{what}: visible before completion"
    );
    assert_eq!(up.complete().await.unwrap(), body.len() as u64);
    assert_eq!(
        s.head("data/f.parquet").await.unwrap().map(|o| o.size),
        Some(body.len() as u64)
    );
    assert!(
        s.get("data/f.parquet", 64 << 20).await.unwrap() == body,
        "{what}"
    );
    // An empty upload, and an aborted one (nothing left).
    let mut up = s.start_upload("data/empty").await.unwrap();
    assert_eq!(up.complete().await.unwrap(), 0);
    assert!(s.get("data/empty", 1).await.unwrap().is_empty());
    let mut up = s.start_upload("data/aborted").await.unwrap();
    up.write(&body[..9 << 20]).await.unwrap();
    up.abort().await.unwrap();
    assert!(s.head("data/aborted").await.unwrap().is_none(), "{what}");

    // Listings in pages, in path order.
    let page = s.list_page("", None, 3).await.unwrap();
    let paths: Vec<&str> = page.objects.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(paths, ["a/1", "data/empty", "data/f.parquet"], "{what}");
    let page = s.list_page("", page.next.as_deref(), 3).await.unwrap();
    let paths: Vec<&str> = page.objects.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(paths, ["snapshot/snapshot-1"], "{what}");
    assert_eq!(page.next, None);
    let page = s.list_page("data/", None, 10).await.unwrap();
    assert_eq!(page.objects.len(), 2, "{what}");

    for p in ["a/1", "data/empty", "data/f.parquet", "snapshot/snapshot-1"] {
        s.delete(p).await.unwrap();
        assert!(s.head(p).await.unwrap().is_none(), "{what}: {p}");
    }
    s.delete("a/1").await.unwrap();
    assert!(s.list_page("", None, 10).await.unwrap().objects.is_empty());
}

/// `races` races of `writers` clients creating the same object: how many won each.
async fn race(url: &str, opts: &StorageOptions, writers: usize, races: usize) -> Vec<usize> {
    let storages: Vec<ScopedStorage> = (0..writers)
        .map(|_| {
            Warehouse::open(url, opts)
                .unwrap()
                .scope("db.db/t")
                .unwrap()
        })
        .collect();
    let mut winners = Vec::new();
    for r in 0..races {
        let path = format!("snapshot/snapshot-{r}");
        let tasks: Vec<_> = storages
            .iter()
            .enumerate()
            .map(|(w, s)| {
                let (s, path) = (s.clone(), path.clone());
                tokio::spawn(async move {
                    let body = format!("writer {w} wins race {r}").into_bytes();
                    (w, s.put_if_absent(&path, body).await)
                })
            })
            .collect();
        let mut won = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                (w, Ok(())) => won.push(w),
                (_, Err(e)) => assert_eq!(e.kind, StorageErrorKind::AlreadyExists, "{}", e.message),
            }
        }
        if let [w] = won[..] {
            let stored = storages[0].get(&path, 1 << 10).await.unwrap();
            assert_eq!(stored, format!("writer {w} wins race {r}").into_bytes());
        }
        winners.push(won.len());
    }
    winners
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_warehouses_in_every_spelling_pass_the_check_and_serve_every_call() {
    let azurite = object_stores::azurite();
    let prefix = fluss_lake_e2e::unique_name("wh");
    for (what, url, opts) in azure_spellings(&azurite, &prefix) {
        // The startup check: a second create of one probe object is refused.
        let wh = Warehouses::default()
            .get(&url, &opts)
            .await
            .unwrap_or_else(|e| panic!("{what}: {url}: {e}"));
        round_trip(what, &wh).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcs_warehouses_in_every_spelling_pass_the_check_and_serve_every_call() {
    let gcs = object_stores::fake_gcs();
    let prefix = fluss_lake_e2e::unique_name("wh");
    for (what, url, opts) in gcs_spellings(&gcs, &prefix) {
        let wh = Warehouses::default()
            .get(&url, &opts)
            .await
            .unwrap_or_else(|e| panic!("{what}: {url}: {e}"));
        round_trip(what, &wh).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_writers_racing_for_one_snapshot_on_azure_and_gcs_exactly_one_wins() {
    let azurite = object_stores::azurite();
    let gcs = object_stores::fake_gcs();
    let prefix = fluss_lake_e2e::unique_name("race");
    let (_, url, opts) = azure_spellings(&azurite, &prefix).swap_remove(0);
    let winners = race(&url, &opts, 6, 15).await;
    assert!(winners.iter().all(|&n| n == 1), "Azure: {winners:?}");
    let (_, url, opts) = gcs_spellings(&gcs, &prefix).swap_remove(0);
    let winners = race(&url, &opts, 6, 15).await;
    assert!(winners.iter().all(|&n| n == 1), "GCS: {winners:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_azure_key_is_refused_at_the_check() {
    let azurite = object_stores::azurite();
    let url = azurite.abfs_url(&fluss_lake_e2e::unique_name("wh"));
    // A valid key of another account: Azurite refuses the signature.
    let wrong = "d3Jvbmcga2V5IG9mIGFub3RoZXIgYWNjb3VudCAxMjM0NTY3OA==";
    let e = Warehouses::default()
        .get(
            &url,
            &options(&[
                ("fs.azure.account.key", wrong),
                ("fs.azure.abfs.endpoint", azurite.host_port()),
                ("fs.azure.always.use.https", "false"),
            ]),
        )
        .await
        .err()
        .expect("a wrong key must be refused");
    assert!(
        e.message().contains(&format!(
            "warehouse '{url}': the store refused the credentials"
        )),
        "{e}"
    );
    assert!(!e.message().contains(wrong), "{e}");
}
