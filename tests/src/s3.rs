//! The test S3 server (`cluster/s3/start.sh`: moto from PyPI on loopback, IAM authentication
//! on), started on first use and shared by every test; and the legacy server without
//! conditional puts (`LEGACY=1`), for the test that such a store is refused.

use std::collections::BTreeMap;
use std::fs::File;
use std::process::Command;
use std::sync::Arc;

use fluss_lake_host::warehouse::StorageOptions;
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;

use crate::repo_root;

/// Where a server is and the credentials of its IAM user (from its `credentials.env`).
#[derive(Debug, Clone)]
pub struct S3Server {
    pub endpoint: String,
    pub region: String,
    pub bucket: String,
    pub access_key: String,
    pub secret_key: String,
}

/// The test S3 server, started if it is not up.
pub fn server() -> S3Server {
    ensure("target/s3", &[])
}

/// A store that ignores `If-None-Match` (moto before 5.0.14), no authentication.
pub fn legacy_server() -> S3Server {
    ensure("target/s3-legacy", &[("LEGACY", "1")])
}

fn ensure(dir: &str, env: &[(&str, &str)]) -> S3Server {
    let dir = repo_root().join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    // One starter at a time, across test threads and processes.
    let lock = File::create(dir.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    let out = Command::new(repo_root().join("cluster/s3/start.sh"))
        .envs(env.iter().copied())
        .output()
        .expect("cannot run cluster/s3/start.sh");
    assert!(
        out.status.success(),
        "cluster/s3/start.sh failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    read_credentials(&dir.join("credentials.env"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

fn read_credentials(path: &std::path::Path) -> Result<S3Server, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let vars: BTreeMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
    let get = |k: &str| {
        vars.get(k)
            .map(|v| v.to_string())
            .ok_or(format!("no {k} in {}", path.display()))
    };
    Ok(S3Server {
        endpoint: get("S3_ENDPOINT")?,
        region: get("S3_REGION")?,
        bucket: get("S3_BUCKET")?,
        access_key: get("S3_ACCESS_KEY")?,
        secret_key: get("S3_SECRET_KEY")?,
    })
}

/// `--datalake.<format>.warehouse <warehouse>`, then `--datalake.<format>.<key> <value>` for
/// each pair.
fn datalake_args<'a>(
    format: &str,
    warehouse: &'a str,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<String> {
    std::iter::once(("warehouse", warehouse))
        .chain(pairs)
        .flat_map(|(k, v)| [format!("--datalake.{format}.{k}"), v.to_string()])
        .collect()
}

/// What the Python readers need to reach the test S3 server, when it runs (each reader maps
/// these to its own S3 options: `tests/python/s3_env.py`).
pub fn reader_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = crate::host::NO_INSTANCE_METADATA
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let Ok(s) = read_credentials(&repo_root().join("target/s3/credentials.env")) else {
        return env;
    };
    env.extend([
        ("S3_ENDPOINT".into(), s.endpoint),
        ("S3_REGION".into(), s.region),
        ("S3_ACCESS_KEY".into(), s.access_key),
        ("S3_SECRET_KEY".into(), s.secret_key),
    ]);
    env
}

impl S3Server {
    /// `s3://<bucket>/<prefix>`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.bucket)
    }

    /// The host's storage options for this server, under the Fluss/Paimon names.
    pub fn storage_options(&self, secret_key: &str) -> StorageOptions {
        StorageOptions::from_pairs([
            ("s3.endpoint", self.endpoint.as_str()),
            ("s3.region", self.region.as_str()),
            ("s3.access-key", self.access_key.as_str()),
            ("s3.secret-key", secret_key),
            ("s3.path.style.access", "true"),
        ])
    }

    /// `--datalake.<format>.warehouse <warehouse>` and [`Self::storage_options`] as options of
    /// `format` (`--datalake.<format>.s3.endpoint …`).
    pub fn warehouse_args(&self, format: &str, warehouse: &str, secret_key: &str) -> Vec<String> {
        datalake_args(format, warehouse, self.storage_options(secret_key).iter())
    }

    /// `--datalake.<format>.warehouse <warehouse>` and this server's settings under the
    /// names a format's own users write, given as (key, value) pairs: the endpoint, region,
    /// access and secret keys come from the server, under `names` in that order, then `extra`.
    pub fn warehouse_args_named(
        &self,
        format: &str,
        warehouse: &str,
        names: [&str; 4],
        extra: &[(&str, &str)],
    ) -> Vec<String> {
        let values = [
            self.endpoint.as_str(),
            self.region.as_str(),
            self.access_key.as_str(),
            self.secret_key.as_str(),
        ];
        datalake_args(
            format,
            warehouse,
            names.into_iter().zip(values).chain(extra.iter().copied()),
        )
    }

    /// The host's options for `format`'s warehouse `warehouse` on this server, reached at
    /// `endpoint` (a proxy in front of it, say): every endpoint spelling of the format points
    /// there, since the host's options overlay the table's `table.datalake.<format>.*`
    /// properties, which carry the server's own endpoint under the format's spelling.
    pub fn host_warehouse_args(
        &self,
        format: &str,
        warehouse: &str,
        endpoint: &str,
    ) -> Vec<String> {
        let via = S3Server {
            endpoint: endpoint.to_string(),
            ..self.clone()
        };
        match format {
            "paimon" => via.warehouse_args("paimon", warehouse, &self.secret_key),
            "iceberg" => via.warehouse_args_named(
                "iceberg",
                warehouse,
                [
                    "s3.endpoint",
                    "client.region",
                    "s3.access-key-id",
                    "s3.secret-access-key",
                ],
                &[
                    ("s3.path-style-access", "true"),
                    ("iceberg.hadoop.fs.s3a.endpoint", endpoint),
                ],
            ),
            "lance" => via.warehouse_args_named(
                "lance",
                warehouse,
                ["endpoint", "region", "access_key_id", "secret_access_key"],
                &[("allow_http", "true")],
            ),
            other => panic!("no S3 warehouse options for format {other}"),
        }
    }

    /// Deletes every object under `url` (`s3://<bucket>/<prefix>` or `s3a://…`), as a lake
    /// table's owner drops it; returns how many there were.
    pub async fn delete_prefix(&self, url: &str) -> usize {
        use futures::TryStreamExt;
        use object_store::ObjectStoreExt;
        let prefix = url
            .split_once("://")
            .and_then(|(_, rest)| rest.strip_prefix(&format!("{}/", self.bucket)))
            .unwrap_or_else(|| panic!("{url} is not in bucket {}", self.bucket));
        let client = self.client();
        let path = object_store::path::Path::from(prefix);
        let objects: Vec<_> = client
            .list(Some(&path))
            .map_ok(|o| o.location)
            .try_collect()
            .await
            .unwrap_or_else(|e| panic!("listing {url}: {e}"));
        for o in &objects {
            client
                .delete(o)
                .await
                .unwrap_or_else(|e| panic!("deleting {o}: {e}"));
        }
        objects.len()
    }

    /// A client of the bucket, for checks of what is stored.
    pub fn client(&self) -> Arc<dyn ObjectStore> {
        Arc::new(
            AmazonS3Builder::new()
                .with_endpoint(&self.endpoint)
                .with_allow_http(true)
                .with_region(&self.region)
                .with_bucket_name(&self.bucket)
                .with_access_key_id(&self.access_key)
                .with_secret_access_key(&self.secret_key)
                .build()
                .expect("S3 client"),
        )
    }

    /// Every key under `prefix`.
    pub async fn keys(&self, prefix: &str) -> Vec<String> {
        use futures::TryStreamExt;
        let prefix = object_store::path::Path::from(prefix);
        let mut keys: Vec<String> = self
            .client()
            .list(Some(&prefix))
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .expect("listing the test bucket");
        keys.sort();
        keys
    }
}
