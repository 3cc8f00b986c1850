//! Files in Fluss's `remote.data.dir` on object storage that the host reads and deletes: the
//! offsets files the coordinator writes there for each lake snapshot
//! ([`crate::tiering::recovery`] checks one before registering a snapshot Fluss missed, and
//! deletes the one of a round it aborted).
//!
//! The host needs no credentials of its own for the remote dir: it asks the coordinator for
//! the session credentials the cluster hands its clients (`GetFileSystemSecurityToken`, as
//! fluss-rs does for remote log segments) each time, which is rare (recoveries and aborted
//! rounds), so nothing is cached and an expired token is never used.

use object_store::ObjectStoreExt;
use object_store::path::Path;

use crate::coordinator::CoordinatorClient;
use crate::coordinator::proto::GetFileSystemSecurityTokenResponse;
use crate::error::{Error, ErrorKind, Result, store_message};
use crate::warehouse::{StorageOptions, Warehouse, is_storage_key};

/// An object store of Fluss's remote data (`s3://bucket`, or a prefix in it) opened with the
/// cluster's credentials; objects are named by their path segments under `url`.
pub struct RemoteDataDir {
    url: String,
    warehouse: Warehouse,
}

impl RemoteDataDir {
    pub async fn open(coordinator: &CoordinatorClient, url: &str) -> Result<Self> {
        let token = coordinator.file_system_security_token().await?;
        let options = token_options(&token)?;
        let warehouse = Warehouse::open(url, &options)
            .map_err(|e| Error::new(e.kind(), format!("remote.data.dir: {}", e.message())))?;
        Ok(Self {
            url: url.to_string(),
            warehouse,
        })
    }

    fn path(&self, relative: &[String]) -> Path {
        let mut parts: Vec<String> = self
            .warehouse
            .root()
            .parts()
            .map(|p| p.as_ref().to_string())
            .collect();
        parts.extend(relative.iter().cloned());
        Path::from_iter(parts)
    }

    /// The object at `relative` (segments under the remote dir), refused when larger than
    /// `max_bytes` before any of it is fetched. Error messages read after the file's name.
    pub async fn read(&self, relative: &[String], max_bytes: u64) -> Result<Vec<u8>> {
        let path = self.path(relative);
        let store = self.warehouse.store();
        let failed = |e: object_store::Error| {
            Error::new(
                ErrorKind::Storage,
                format!("cannot be read: {}", store_message(&e)),
            )
        };
        let meta = store.head(&path).await.map_err(failed)?;
        if meta.size > max_bytes {
            return Err(Error::new(
                ErrorKind::Storage,
                format!("is {} bytes, too large", meta.size),
            ));
        }
        let bytes = store.get_range(&path, 0..meta.size).await.map_err(failed)?;
        Ok(bytes.to_vec())
    }

    /// Deletes the object at `relative`; a missing one is not an error.
    pub async fn delete(&self, relative: &[String]) -> Result<()> {
        match self.warehouse.store().delete(&self.path(relative)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(Error::new(
                ErrorKind::Storage,
                format!("{}/{}: {}", self.url, relative.join("/"), store_message(&e)),
            )),
        }
    }
}

/// The storage options of the cluster's token: its credentials (Fluss's
/// `CredentialsJsonSerde`: `access_key_id`, `access_key_secret`, `security_token`) and the
/// store settings that come with them (`fs.s3a.endpoint`, `fs.s3a.region`, …). An empty token
/// means the remote dir needs no credentials from Fluss (the environment's apply).
fn token_options(token: &GetFileSystemSecurityTokenResponse) -> Result<StorageOptions> {
    let mut pairs: Vec<(String, String)> = token
        .addition_info
        .iter()
        .filter(|kv| is_storage_key(&kv.key))
        .map(|kv| (kv.key.clone(), kv.value.clone()))
        .collect();
    if !token.token.is_empty() {
        #[derive(serde::Deserialize)]
        struct Credentials {
            access_key_id: String,
            access_key_secret: String,
            security_token: Option<String>,
        }
        let c: Credentials = serde_json::from_slice(&token.token).map_err(|e| {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "the cluster's {} credentials for remote.data.dir cannot be read: {e}",
                    token.schema
                ),
            )
        })?;
        pairs.push(("access_key_id".into(), c.access_key_id));
        pairs.push(("secret_access_key".into(), c.access_key_secret));
        if let Some(t) = c.security_token.filter(|t| !t.is_empty()) {
            pairs.push(("session_token".into(), t));
        }
    }
    Ok(StorageOptions::from_pairs(
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::proto::PbKeyValue;

    fn kv(k: &str, v: &str) -> PbKeyValue {
        PbKeyValue {
            key: k.into(),
            value: v.into(),
        }
    }

    #[test]
    fn the_clusters_token_becomes_storage_options() {
        let token = GetFileSystemSecurityTokenResponse {
            schema: "s3".into(),
            token: br#"{"version":1,"access_key_id":"ASIA1","access_key_secret":"s3cr3t","security_token":"tok"}"#.to_vec(),
            expiration_time: Some(1),
            addition_info: vec![
                kv("fs.s3a.endpoint", "http://127.0.0.1:9900"),
                kv("fs.s3a.region", "us-east-1"),
                kv("fs.s3a.path.style.access", "true"),
                kv("unrelated", "x"),
            ],
        };
        let o = token_options(&token).unwrap();
        assert_eq!(o.get("access_key_id"), Some("ASIA1"));
        assert_eq!(o.get("secret_access_key"), Some("s3cr3t"));
        assert_eq!(o.get("session_token"), Some("tok"));
        assert_eq!(o.get("fs.s3a.endpoint"), Some("http://127.0.0.1:9900"));
        assert_eq!(o.get("unrelated"), None);
        assert!(!format!("{o:?}").contains("s3cr3t"));
        // An empty token: settings only, the environment's credentials apply.
        let empty = GetFileSystemSecurityTokenResponse {
            token: Vec::new(),
            ..token.clone()
        };
        assert_eq!(token_options(&empty).unwrap().get("access_key_id"), None);
        // A token that is not Fluss's credentials JSON is a protocol error naming no value.
        let bad = GetFileSystemSecurityTokenResponse {
            token: b"s3cr3t".to_vec(),
            ..token
        };
        let e = token_options(&bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(!e.message().contains("s3cr3t"), "{}", e.message());
    }
}
