//! The Azure and GCS emulators of the warehouse tests: Azurite's Blob service
//! (`cluster/azurite/start.sh`, one account with a random key) and fake-gcs-server
//! (`cluster/fake-gcs/start.sh`, no authentication), each started on first use, on loopback,
//! and shared by every test; and the independent readers of `tests/python` reading lake
//! tables through them (`--store`, `tests/python/azure_gcs_env.py`).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::repo_root;

/// Azurite, as `cluster/azurite/start.sh` wrote it to its `credentials.env`.
#[derive(Debug, Clone)]
pub struct Azurite {
    /// The account's URL: `http://127.0.0.1:<port>/<account>`.
    pub endpoint: String,
    pub account: String,
    pub key: String,
    pub container: String,
}

/// fake-gcs-server, as `cluster/fake-gcs/start.sh` wrote it to its `credentials.env`.
#[derive(Debug, Clone)]
pub struct FakeGcs {
    /// The API root: `http://127.0.0.1:<port>`.
    pub endpoint: String,
    pub bucket: String,
}

/// Azurite, started if it is not up.
pub fn azurite() -> Azurite {
    let vars = ensure("azurite");
    Azurite {
        endpoint: vars["AZURITE_ENDPOINT"].clone(),
        account: vars["AZURITE_ACCOUNT"].clone(),
        key: vars["AZURITE_KEY"].clone(),
        container: vars["AZURITE_CONTAINER"].clone(),
    }
}

/// fake-gcs-server, started if it is not up.
pub fn fake_gcs() -> FakeGcs {
    let vars = ensure("fake-gcs");
    FakeGcs {
        endpoint: vars["FAKE_GCS_ENDPOINT"].clone(),
        bucket: vars["FAKE_GCS_BUCKET"].clone(),
    }
}

impl Azurite {
    /// The account's host as Hadoop's URLs name it: `<account>.dfs.core.windows.net`.
    pub fn dfs_host(&self) -> String {
        format!("{}.dfs.core.windows.net", self.account)
    }

    /// `abfs://<container>@<account>.dfs.core.windows.net/<prefix>`.
    pub fn abfs_url(&self, prefix: &str) -> String {
        format!("abfs://{}@{}/{prefix}", self.container, self.dfs_host())
    }

    /// Azurite's `host:port`, as Hadoop's `fs.azure.abfs.endpoint` takes it.
    pub fn host_port(&self) -> &str {
        let rest = self.endpoint.trim_start_matches("http://");
        rest.split('/').next().unwrap_or(rest)
    }
}

impl Azurite {
    /// `wasb://<container>@<account>.blob.core.windows.net/<prefix>`.
    pub fn wasb_url(&self, prefix: &str) -> String {
        format!(
            "wasb://{}@{}.blob.core.windows.net/{prefix}",
            self.container, self.account
        )
    }

    /// The store as the readers of `tests/python` take it (`--store`, `azure_gcs_env.py`):
    /// each reader reaches Azurite with its own client and settings.
    pub fn reader_store(&self) -> String {
        serde_json::json!({"azure": {
            "endpoint": self.endpoint,
            "account": self.account,
            "key": self.key,
        }})
        .to_string()
    }
}

impl FakeGcs {
    /// `gs://<bucket>/<prefix>`.
    pub fn gs_url(&self, prefix: &str) -> String {
        format!("gs://{}/{prefix}", self.bucket)
    }

    /// The names of the bucket's objects under `prefix`, from the emulator's JSON API.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("prefix", prefix)
            .finish();
        let out = Command::new("curl")
            .args(["-sf", "--max-time", "10"])
            .arg(format!(
                "{}/storage/v1/b/{}/o?{query}",
                self.endpoint, self.bucket
            ))
            .output()
            .expect("curl");
        assert!(
            out.status.success(),
            "listing gs://{}/{prefix} failed",
            self.bucket
        );
        let listing: Value = serde_json::from_slice(&out.stdout).expect("a JSON listing");
        listing["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["name"].as_str().map(str::to_string))
            .collect()
    }

    /// The store as the readers of `tests/python` take it (`--store`, `azure_gcs_env.py`):
    /// the emulator's endpoint, no authentication.
    pub fn reader_store(&self) -> String {
        serde_json::json!({"gcs": {"endpoint": self.endpoint}}).to_string()
    }
}

/// One reader command of `script` (`paimon_read.py`, `iceberg_read.py`) with `--store`, run by
/// a pooled worker ([`crate::python`]); its output lines. Panics with the reader's error.
fn read(script: &str, args: &[&str], store: &str) -> Vec<Value> {
    let mut command: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    command.extend(["--store".to_string(), store.to_string()]);
    crate::python::batch(script, std::slice::from_ref(&command))
        .remove(0)
        .unwrap_or_else(|e| panic!("{script} {command:?} failed:\n{e}"))
}

/// Every row of the Paimon table `db.table` of the warehouse at `warehouse` (an Azure or GCS
/// URL), read by pypaimon through `store` ([`Azurite::reader_store`],
/// [`FakeGcs::reader_store`]), in the canonical JSON form; a primary-key table merged.
pub fn paimon_rows(warehouse: &str, db: &str, table: &str, store: &str) -> Vec<Value> {
    read("paimon_read.py", &["rows", warehouse, db, table], store)
}

/// The latest snapshot of that Paimon table as pypaimon reads it through `store`: `{"id",
/// "commit_user", "properties", ...}` (`paimon_read.py snapshot`).
pub fn paimon_snapshot(warehouse: &str, db: &str, table: &str, store: &str) -> Value {
    let mut out = read("paimon_read.py", &["snapshot", warehouse, db, table], store);
    assert_eq!(out.len(), 1, "one snapshot line: {out:?}");
    out.remove(0)
}

/// Every row of the Iceberg table at `table_url` (its directory on Azure or GCS) read through
/// `store` by `reader`: `pyiceberg` (its FileIO on the store) or `duckdb` (the iceberg
/// extension, which applies equality deletes), system columns included.
pub fn iceberg_rows(table_url: &str, reader: &str, store: &str) -> Vec<Value> {
    read(
        "iceberg_read.py",
        &["rows", table_url, "--reader", reader],
        store,
    )
}

/// The snapshots of that Iceberg table in commit order, as pyiceberg reads them through
/// `store` (`iceberg_read.py snapshots`).
pub fn iceberg_snapshots(table_url: &str, store: &str) -> Vec<Value> {
    read("iceberg_read.py", &["snapshots", table_url], store)
}

/// Runs `cluster/<name>/start.sh` (one starter at a time, across test threads and processes)
/// and reads the settings it wrote.
fn ensure(name: &str) -> BTreeMap<String, String> {
    let dir = repo_root().join("target").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let lock = File::create(dir.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    let script = repo_root().join(format!("cluster/{name}/start.sh"));
    let out = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed:\n{}\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    read_env(&dir.join("credentials.env"))
}

fn read_env(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
