//! Paimon and Iceberg tables on Azure Blob Storage (Azurite) and on Google Cloud Storage
//! (fake-gcs-server), end to end: the host tiers a real Fluss log table and a primary-key
//! table into a warehouse on the store, and independent readers read them back through the
//! store, never from a local copy ([`fluss_lake_e2e::object_stores`],
//! `tests/python/azure_gcs_env.py`).
//!
//! The coordinator's Java lake plugins have no Azure or GCS file system in the test cluster,
//! so Fluss's own lake tables stay in the cluster's local warehouse, empty. A `--route` rule
//! sends the test's tables to the plugin of their own format, and the host's
//! `--datalake.<format>.warehouse` (with the store's settings under the names
//! docs/stores-and-catalogs.md gives) puts them on the store: for a routed table the host
//! creates the lake table itself, through the plugin.
//!
//! | format, store | warehouse, settings | readers |
//! |---|---|---|
//! | Paimon, Azurite | `wasb://`, Fluss's `fs.azure.account.key`, Hadoop's endpoint | pypaimon (on pyarrow's AzureFileSystem) |
//! | Iceberg, Azurite | `abfs://`, Fluss's Iceberg plugin's `iceberg.hadoop.fs.azure.*` | pyiceberg (adlfs), DuckDB (adlfs as its abfs:// file system) |
//! | Paimon, fake-gcs | `gs://`, Hadoop's `fs.gs.storage.root.url`, `fs.gs.auth.type` | pypaimon (pyarrow's GcsFileSystem) |
//! | Iceberg, fake-gcs | `gs://`, Iceberg's `gcs.service.host`, `gcs.no-auth` | pyiceberg (pyarrow's GcsFileSystem), DuckDB (httpfs) |
//!
//! Two rounds each: the lake reads exactly Fluss's data after each (the log table's rows; the
//! primary-key table as Fluss's lookup answers every key), and the snapshot Fluss registered
//! is the lake's newest, made by the tiering commit user.

use std::path::Path;
use std::time::Duration;

use fluss::client::{FlussAdmin, UpsertWriter};
use fluss::metadata::TablePath;
use fluss::row::GenericRow;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::fluss_read::fluss_state;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::object_stores::{self, Azurite, FakeGcs};
use fluss_lake_e2e::{Rng, cluster, data, host, unique_name};
use serde_json::Value;

use super::merge_engines::KEYS;

const BUCKETS: i32 = 2;
const LOG_ROWS: i64 = 3_000;

/// A lake format on one store: where the host puts its tables, with which settings, and how
/// the readers reach them.
struct OnStore {
    format: &'static str,
    /// `azure` or `gcs`, for table names.
    store: &'static str,
    /// The warehouse URL the host is given.
    warehouse: String,
    /// `--datalake.<format>.<key> <value>` pairs of the store's settings.
    settings: Vec<(String, String)>,
    /// The store as the readers take it (`--store`).
    reader_store: String,
}

/// Paimon on Azurite: `wasb://` with Fluss's documented `fs.azure.account.key` and Hadoop's
/// endpoint (plain http: `fs.azure.always.use.https` false).
fn paimon_on_azure(a: &Azurite, prefix: &str) -> OnStore {
    OnStore {
        format: "paimon",
        store: "azure",
        warehouse: a.wasb_url(prefix),
        settings: pairs(&[
            ("fs.azure.account.key", &a.key),
            ("fs.azure.abfs.endpoint", a.host_port()),
            ("fs.azure.always.use.https", "false"),
        ]),
        reader_store: a.reader_store(),
    }
}

/// Iceberg on Azurite: `abfs://` with Fluss's Iceberg plugin's Hadoop keys
/// (`iceberg.hadoop.fs.azure.*`, the per-account key).
fn iceberg_on_azure(a: &Azurite, prefix: &str) -> OnStore {
    OnStore {
        format: "iceberg",
        store: "azure",
        warehouse: a.abfs_url(prefix),
        settings: pairs(&[
            (
                &format!("iceberg.hadoop.fs.azure.account.key.{}", a.dfs_host()),
                &a.key,
            ),
            ("iceberg.hadoop.fs.azure.abfs.endpoint", a.host_port()),
            ("iceberg.hadoop.fs.azure.always.use.https", "false"),
        ]),
        reader_store: a.reader_store(),
    }
}

/// Paimon on fake-gcs-server: the Hadoop GCS connector's keys, as Fluss passes them.
fn paimon_on_gcs(g: &FakeGcs, prefix: &str) -> OnStore {
    OnStore {
        format: "paimon",
        store: "gcs",
        warehouse: g.gs_url(prefix),
        settings: pairs(&[
            ("fs.gs.storage.root.url", &g.endpoint),
            ("fs.gs.auth.type", "UNAUTHENTICATED"),
        ]),
        reader_store: g.reader_store(),
    }
}

/// Iceberg on fake-gcs-server: Iceberg's GCSFileIO keys.
fn iceberg_on_gcs(g: &FakeGcs, prefix: &str) -> OnStore {
    OnStore {
        format: "iceberg",
        store: "gcs",
        warehouse: g.gs_url(prefix),
        settings: pairs(&[("gcs.service.host", &g.endpoint), ("gcs.no-auth", "true")]),
        reader_store: g.reader_store(),
    }
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Upserts that repeat keys (`KEYS` of them), then deletes some: a round of updates the lake
/// must merge as Fluss does.
async fn upsert_round(writer: &UpsertWriter, rng: &mut Rng, round: usize) {
    for _ in 0..600 {
        let id = rng.below(KEYS) as i32;
        let ver = rng.below(1_000) as i64;
        let mut row = GenericRow::new(3);
        row.set_field(0, id);
        row.set_field(1, ver);
        row.set_field(2, format!("r{round}-v{ver}"));
        writer.upsert(&row).unwrap();
    }
    for _ in 0..40 {
        let mut row = GenericRow::new(3);
        row.set_field(0, rng.below(KEYS) as i32);
        row.set_field(1, 0i64);
        row.set_field(2, String::new());
        writer.delete(&row).unwrap();
    }
    writer.flush().await.unwrap();
}

/// The rows of a routed table as the format's readers read them through the store; for
/// Iceberg both readers where both can (pyiceberg cannot apply equality deletes: the
/// primary-key table is DuckDB's alone).
fn lake_rows(s: &OnStore, table: &str, primary_key: bool) -> Vec<Value> {
    match s.format {
        "paimon" => object_stores::paimon_rows(&s.warehouse, "fluss", table, &s.reader_store),
        "iceberg" => {
            let url = format!("{}/fluss/{table}", s.warehouse);
            let duck = object_stores::iceberg_rows(&url, "duckdb", &s.reader_store);
            if !primary_key {
                let py = object_stores::iceberg_rows(&url, "pyiceberg", &s.reader_store);
                assert_eq!(
                    business(&py),
                    business(&duck),
                    "{table}: pyiceberg and DuckDB read the same rows"
                );
            }
            duck
        }
        other => unreachable!("{other}"),
    }
}

/// The lake's newest snapshot (its id and commit user) as the readers see it on the store.
fn lake_snapshot(s: &OnStore, table: &str) -> (i64, String) {
    match s.format {
        "paimon" => {
            let snap =
                object_stores::paimon_snapshot(&s.warehouse, "fluss", table, &s.reader_store);
            (
                snap["id"].as_i64().unwrap(),
                snap["commit_user"].as_str().unwrap().to_string(),
            )
        }
        "iceberg" => {
            let url = format!("{}/fluss/{table}", s.warehouse);
            let snaps = object_stores::iceberg_snapshots(&url, &s.reader_store);
            let last = snaps.last().expect("an Iceberg snapshot");
            (
                last["snapshot-id"].as_i64().unwrap(),
                last["summary"]["commit-user"].as_str().unwrap().to_string(),
            )
        }
        other => unreachable!("{other}"),
    }
}

/// Waits until Fluss registered everything logged so far, then checks the snapshot it
/// registered is the lake's newest on the store, made by the tiering.
async fn assert_registered(
    c: &ClusterInfo,
    admin: &FlussAdmin,
    s: &OnStore,
    path: &TablePath,
    h: &HostProcess,
) {
    let ends = data::all_log_end_offsets(admin, path).await;
    let registered = wait_registered(c, admin, path, &ends, h).await;
    let (newest, user) = lake_snapshot(s, path.table());
    assert_eq!(
        newest, registered,
        "{path}: Fluss registered the lake's newest snapshot"
    );
    assert_eq!(user, "__fluss_lake_tiering", "{path}");
}

/// Data files under a local directory (the coordinator's own lake table of a routed table).
fn local_data_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet" || x == "orc") {
                out.push(p.display().to_string());
            }
        }
    }
    out
}

async fn run(s: OnStore) {
    let c = cluster::lease(s.format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let id = unique_name(&format!("{}_{}", s.store, s.format));
    let log = TablePath::new("fluss", format!("{id}_log"));
    let pk = TablePath::new("fluss", format!("{id}_pk"));
    data::create_table(
        &admin,
        &log,
        &data::lake_log_table(BUCKETS, Some("id"), "2s"),
    )
    .await;
    data::create_table(&admin, &pk, &data::lake_pk_table(BUCKETS)).await;
    let writer = data::upsert_writer(&conn, &pk).await;
    let mut rng = Rng(0x0b1e_c757_03e5);
    data::write_rows(&conn, &log, 0, LOG_ROWS as usize, 1_500).await;
    upsert_round(&writer, &mut rng, 0).await;

    let route = format!("fluss.{id}_*={}", s.format);
    let warehouse_key = format!("--datalake.{}.warehouse", s.format);
    let setting_keys: Vec<String> = s
        .settings
        .iter()
        .map(|(k, _)| format!("--datalake.{}.{k}", s.format))
        .collect();
    let mut options = vec!["--route", &route, &warehouse_key, &s.warehouse];
    for ((_, v), k) in s.settings.iter().zip(&setting_keys) {
        options.extend([k.as_str(), v.as_str()]);
    }
    let mut h = HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin(s.format)], &options),
        &format!("{id}-host"),
    );
    // The startup check of the host's own warehouse: a second conditional create of one
    // object refused by the store, before any round.
    let opened = format!(
        "warehouse opened; its store makes creates atomic warehouse=\"{}\"",
        s.warehouse
    );
    h.wait_for_log(&opened, Duration::from_secs(30)).await;
    let log_text = h.log();
    let first = log_text.lines().find(|l| l.contains(&opened)).unwrap();
    assert!(
        !first.contains("round{"),
        "the check ran at startup, not in a round: {first}"
    );
    assert!(
        !log_text.contains("tiering round started")
            || log_text.find(&opened) < log_text.find("tiering round started"),
        "the check ran before the first round:\n{log_text}"
    );

    let mut total = LOG_ROWS;
    for round in 0..2 {
        if round > 0 {
            data::write_rows(&conn, &log, total, 2_000, 1_000).await;
            total += 2_000;
            upsert_round(&writer, &mut rng, round).await;
        }
        assert_registered(&c, &admin, &s, &log, &h).await;
        let want = data::sorted_by_id(data::canonical_rows(&data::batch(0, total as usize)));
        let lake = lake_rows(&s, log.table(), false);
        assert_eq!(
            business(&lake),
            want,
            "round {round}: {log} holds exactly the Fluss rows"
        );

        assert_registered(&c, &admin, &s, &pk, &h).await;
        let fluss = business(&fluss_state(&conn, &pk, 0..KEYS as i32).await);
        assert!(!fluss.is_empty());
        let lake = business(&lake_rows(&s, pk.table(), true));
        assert_eq!(
            lake, fluss,
            "round {round}: {pk} reads as Fluss looks up every key"
        );
    }

    let log_text = h.log();
    for t in [&log, &pk] {
        let routed = format!("table routed table={t} plugin={} ", s.format);
        assert!(log_text.contains(&routed), "no '{routed}' in:\n{log_text}");
        let created = format!("location=\"{}/", s.warehouse);
        assert!(
            log_text
                .lines()
                .any(|l| l.contains("created the lake table")
                    && l.contains(&format!("table={t}"))
                    && l.contains(&created)),
            "{t}: the host created its lake table on the store:\n{log_text}"
        );
        // Fluss's own lake table of the routed table, in the cluster's local warehouse, got
        // nothing: what the readers read came from the store.
        let local = match s.format {
            "paimon" => c.paimon_warehouse.join("fluss.db").join(t.table()),
            _ => c.iceberg_warehouse.join("fluss").join(t.table()),
        };
        assert_eq!(local_data_files(&local), Vec::<String>::new(), "{t}");
    }
    assert!(h.exited().is_none(), "host exited:\n{log_text}");
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_tables_on_azure_read_back_through_the_store() {
    let a = object_stores::azurite();
    run(paimon_on_azure(&a, &unique_name("tiered"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_on_azure_read_back_through_the_store() {
    let a = object_stores::azurite();
    run(iceberg_on_azure(&a, &unique_name("tiered"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_tables_on_gcs_read_back_through_the_store() {
    let g = object_stores::fake_gcs();
    run(paimon_on_gcs(&g, &unique_name("tiered"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_on_gcs_read_back_through_the_store() {
    let g = object_stores::fake_gcs();
    run(iceberg_on_gcs(&g, &unique_name("tiered"))).await;
}
