//! The Azure and GCS emulators of the warehouse tests: Azurite's Blob service
//! (`cluster/azurite/start.sh`, one account with a random key) and fake-gcs-server
//! (`cluster/fake-gcs/start.sh`, no authentication), each started on first use, on loopback,
//! and shared by every test.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::process::Command;

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
