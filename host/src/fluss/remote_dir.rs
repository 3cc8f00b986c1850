//! Fluss's `remote.data.dir` on object storage, as the host reaches it: the offsets files
//! the coordinator writes there for each lake snapshot ([`crate::tiering::recovery`] checks
//! one before registering a snapshot Fluss missed, and deletes the one of a round it
//! aborted), and the log segments a bucket's log has moved there ([`super::remote_log`]).
//!
//! Credentials, in Java clients' order: those the cluster hands its clients
//! (`GetFileSystemSecurityToken`) when it hands some out, with the store settings that come
//! with them; else the host's own, `--fluss.client.fs.<key>` (Java clients'
//! `client.fs.<key>`, the prefix stripped, under the names lake warehouses take:
//! `gs.auth.service.account.json.keyfile`, `fs.azure.account.key.<account host>`,
//! `s3.access-key`, …); else the environment's. Fluss 0.9 hands out none for GCS (it has no
//! token provider for it) and an AAD bearer token for Azure.
//!
//! A store is opened once per `scheme://authority` and kept for ten minutes at most, and
//! never past two minutes before its token expires, so that a segment read does not ask the
//! coordinator each time and an expired token is never used; a failed read forgets it.

use std::collections::HashMap;
use std::path::{Path as LocalPath, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use object_store::ObjectStoreExt;
use object_store::path::Path;
use tokio::io::AsyncWriteExt;

use crate::coordinator::CoordinatorClient;
use crate::coordinator::api::errors;
use crate::coordinator::proto::GetFileSystemSecurityTokenResponse;
use crate::error::{Error, ErrorKind, Result, store_message};
use crate::warehouse::{StorageOptions, Warehouse, is_storage_key};

/// Longest a store (and the token it was opened with) is kept.
const KEEP_STORE: Duration = Duration::from_secs(600);
/// A store is opened again this long before its token expires.
const TOKEN_MARGIN: Duration = Duration::from_secs(120);
/// Longest wait for one piece of an object being read (or its size) before the read fails.
const READ_STALL: Duration = Duration::from_secs(30);
/// The size of the pieces a file is copied in: one request each, so that a large segment needs
/// no single long request, and what a copy holds in memory is bounded.
const PIECE_BYTES: u64 = 8 << 20;

/// A filesystem path as Fluss prints it: local (`/a`, `file:/a`, `file:///a`) or remote
/// (`s3://bucket/a`), split into segments, refused when it has `.`/`..`/empty segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotePath {
    /// `None` for the local filesystem, else `scheme://authority`.
    pub root: Option<String>,
    pub segments: Vec<String>,
}

impl RemotePath {
    pub fn parse(s: &str) -> Option<Self> {
        let (root, path) = if let Some(rest) = s.strip_prefix("file:") {
            // file:/a, file://localhost/a, file:///a
            let rest = rest
                .strip_prefix("//localhost")
                .or_else(|| rest.strip_prefix("//"))
                .unwrap_or(rest);
            (None, rest)
        } else if let Some((scheme, rest)) = s.split_once("://") {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            if scheme.is_empty() || authority.is_empty() {
                return None;
            }
            (Some(format!("{scheme}://{authority}")), path)
        } else {
            (None, s)
        };
        if root.is_none() && !path.starts_with('/') {
            return None;
        }
        let path = path.trim_start_matches('/').trim_end_matches('/');
        let segments: Vec<String> = if path.is_empty() {
            Vec::new()
        } else {
            path.split('/').map(str::to_string).collect()
        };
        if segments
            .iter()
            .any(|s| s.is_empty() || s == "." || s == ".." || s.contains('\\'))
        {
            return None;
        }
        Some(Self { root, segments })
    }

    /// `self` with `more` segments appended.
    pub fn join<'a>(&self, more: impl IntoIterator<Item = &'a str>) -> Self {
        let mut joined = self.clone();
        joined.segments.extend(more.into_iter().map(str::to_string));
        joined
    }

    /// The path on the local filesystem, for a local path.
    pub fn local(&self) -> Option<PathBuf> {
        self.root
            .is_none()
            .then(|| PathBuf::from(format!("/{}", self.segments.join("/"))))
    }
}

impl std::fmt::Display for RemotePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}",
            self.root.as_deref().unwrap_or(""),
            self.segments.join("/")
        )
    }
}

/// The host's access to the cluster's remote storage; see the module documentation.
pub struct RemoteStorage {
    /// The host's own settings and credentials (`--fluss.client.fs.<key>`, prefix stripped).
    client_fs: StorageOptions,
    /// Asked for the cluster's credentials; set once the host has connected.
    coordinator: OnceLock<Arc<CoordinatorClient>>,
    /// Opened stores by `scheme://authority`.
    stores: Mutex<HashMap<String, Opened>>,
    /// Held while a store is opened, so that concurrent reads ask the coordinator once.
    opening: tokio::sync::Mutex<()>,
}

struct Opened {
    warehouse: Arc<Warehouse>,
    fresh_until: Instant,
    /// What a failed read adds to its error: [`NO_CREDENTIALS`] when opened with no
    /// credentials at all (the cluster hands out none and the host has none), else nothing.
    hint: &'static str,
}

/// What a failed read of a store opened without credentials adds to its error.
const NO_CREDENTIALS: &str = " (the cluster hands out no credentials for its remote storage \
     and the host was given no settings of its own, so the environment's were used: give \
     them as --fluss.client.fs.<key>, e.g. --fluss.client.fs.gs.auth.service.account.json.keyfile)";

impl RemoteStorage {
    pub fn new(client_fs: StorageOptions) -> Self {
        Self {
            client_fs,
            coordinator: OnceLock::new(),
            stores: Mutex::default(),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// Gives the storage the coordinator to ask for the cluster's credentials.
    pub fn attach(&self, coordinator: Arc<CoordinatorClient>) {
        let _ = self.coordinator.set(coordinator);
    }

    /// The store `root` (`scheme://authority`) lies in, opened with the credentials of the
    /// module documentation.
    async fn store(&self, root: &str) -> Result<(Arc<Warehouse>, &'static str)> {
        let cached = || {
            self.stores
                .lock()
                .unwrap()
                .get(root)
                .filter(|o| Instant::now() < o.fresh_until)
                .map(|o| (o.warehouse.clone(), o.hint))
        };
        if let Some(found) = cached() {
            return Ok(found);
        }
        let _opening = self.opening.lock().await;
        if let Some(found) = cached() {
            return Ok(found);
        }
        let coordinator = self.coordinator.get().ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                "the remote storage is read before the host has connected to the coordinator",
            )
        })?;
        let mut fresh_until = Instant::now() + KEEP_STORE;
        let own = if self.client_fs.iter().next().is_none() {
            NO_CREDENTIALS
        } else {
            ""
        };
        let mut hint = "";
        let options = match coordinator.file_system_security_token().await {
            Ok(token) if !token.token.is_empty() => {
                if let Some(expires) = token.expiration_time {
                    let now_ms = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_millis() as i64;
                    let left = Duration::from_millis(expires.saturating_sub(now_ms).max(0) as u64);
                    fresh_until =
                        fresh_until.min(Instant::now() + left.saturating_sub(TOKEN_MARGIN));
                }
                token_options(&token)?
            }
            // No credentials to hand out: the host's own (and the token's settings).
            Ok(token) => {
                hint = own;
                token_options(&token)?.overlaid_on(&self.client_fs)
            }
            // The cluster answered that it cannot hand any out (Fluss 0.9 on GCS): the
            // host's own.
            Err(e) if e.code() == Some(errors::SECURITY_TOKEN_EXCEPTION) => {
                tracing::debug!(
                    root,
                    "the cluster hands out no credentials for its remote storage ({}); using the host's own (--fluss.client.fs.*)",
                    e.message()
                );
                hint = own;
                self.client_fs.clone()
            }
            Err(e) => return Err(e),
        };
        let warehouse = Arc::new(Warehouse::open(root, &options).map_err(|e| {
            Error::new(e.kind(), format!("remote.data.dir: {}{hint}", e.message()))
        })?);
        self.stores.lock().unwrap().insert(
            root.to_string(),
            Opened {
                warehouse: warehouse.clone(),
                fresh_until,
                hint,
            },
        );
        Ok((warehouse, hint))
    }

    /// Forgets the store `root` lies in, so that the next use opens it with fresh credentials.
    fn forget(&self, root: &str) {
        self.stores.lock().unwrap().remove(root);
    }

    /// `path` in its store, with the store and what a failed read adds to its error.
    async fn locate(
        &self,
        root: &str,
        path: &RemotePath,
    ) -> Result<(Arc<Warehouse>, Path, &'static str)> {
        let (warehouse, hint) = self.store(root).await?;
        let mut parts: Vec<String> = warehouse
            .root()
            .parts()
            .map(|p| p.as_ref().to_string())
            .collect();
        parts.extend(path.segments.iter().cloned());
        Ok((warehouse, Path::from_iter(parts), hint))
    }

    /// The file at `path`, refused when larger than `max_bytes` before any of it is
    /// fetched. A missing or too large file is a `Storage` error; a store that fails or cannot
    /// be reached is `Unavailable`. Error messages read after the file's name.
    pub async fn read(&self, path: &RemotePath, max_bytes: u64) -> Result<Vec<u8>> {
        let Some(root) = &path.root else {
            let local = path.local().unwrap_or_default();
            let failed =
                |e: std::io::Error| Error::new(ErrorKind::Storage, format!("cannot be read: {e}"));
            let size = std::fs::metadata(&local).map_err(failed)?.len();
            if size > max_bytes {
                return Err(too_large(size));
            }
            return std::fs::read(&local).map_err(failed);
        };
        let (warehouse, p, hint) = self.locate(root, path).await?;
        let store = warehouse.store();
        let read = async {
            let meta = store.head(&p).await?;
            if meta.size > max_bytes {
                return Ok(Err(too_large(meta.size)));
            }
            Ok(Ok(store.get_range(&p, 0..meta.size).await?.to_vec()))
        };
        match tokio::time::timeout(READ_STALL, read).await {
            Ok(Ok(done)) => done,
            // What is not there is the file's own answer; the rest is the store's failure.
            Ok(Err(e @ object_store::Error::NotFound { .. })) => Err(unreadable(&e, hint)),
            Ok(Err(e)) => {
                self.forget(root);
                let failed = unreadable(&e, hint);
                Err(Error::new(ErrorKind::Unavailable, failed.message()))
            }
            Err(_) => Err(Error::new(ErrorKind::Unavailable, stalled().message())),
        }
    }

    /// Deletes the file at `path`; a missing one is not an error.
    pub async fn delete(&self, path: &RemotePath) -> Result<()> {
        let Some(root) = &path.root else {
            return match std::fs::remove_file(path.local().unwrap_or_default()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(Error::new(ErrorKind::Storage, format!("{path}: {e}")))
                }
                _ => Ok(()),
            };
        };
        let (warehouse, p, hint) = self.locate(root, path).await?;
        match warehouse.store().delete(&p).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => {
                self.forget(root);
                Err(Error::new(
                    ErrorKind::Storage,
                    format!("{path}: {}{hint}", store_message(&e)),
                ))
            }
        }
    }

    /// Copies the file at `path` to the local file `to` (created or truncated) in pieces of
    /// [`PIECE_BYTES`], one request each within [`READ_STALL`]; returns its size. A failed copy
    /// leaves no file. Error messages read after the file's name; a file that does not exist is
    /// [`ErrorKind::NotFound`].
    pub async fn download(&self, path: &RemotePath, to: &LocalPath) -> Result<u64> {
        let Some(root) = &path.root else {
            let copied = tokio::fs::copy(path.local().unwrap_or_default(), to).await;
            if copied.is_err() {
                let _ = tokio::fs::remove_file(to).await;
            }
            return copied.map_err(|e| {
                let kind = match e.kind() {
                    std::io::ErrorKind::NotFound => ErrorKind::NotFound,
                    _ => ErrorKind::Storage,
                };
                Error::new(kind, format!("cannot be read: {e}"))
            });
        };
        let (warehouse, p, hint) = self.locate(root, path).await?;
        let store = warehouse.store();
        let failed = |e: object_store::Error| unreadable(&e, hint);
        let copied = async {
            let size = tokio::time::timeout(READ_STALL, store.head(&p))
                .await
                .map_err(|_| stalled())?
                .map_err(failed)?
                .size;
            let mut file = tokio::fs::File::create(to).await.map_err(local_error)?;
            let mut at = 0;
            while at < size {
                let end = size.min(at + PIECE_BYTES);
                let piece = tokio::time::timeout(READ_STALL, store.get_range(&p, at..end))
                    .await
                    .map_err(|_| stalled())?
                    .map_err(failed)?;
                if piece.len() as u64 != end - at {
                    return Err(Error::new(
                        ErrorKind::Storage,
                        "cannot be read: it changed while it was read",
                    ));
                }
                file.write_all(&piece).await.map_err(local_error)?;
                at = end;
            }
            file.flush().await.map_err(local_error)?;
            Ok(size)
        }
        .await;
        if copied.is_err() {
            self.forget(root);
            let _ = tokio::fs::remove_file(to).await;
        }
        copied
    }
}

fn too_large(size: u64) -> Error {
    Error::new(ErrorKind::Storage, format!("is {size} bytes, too large"))
}

fn unreadable(e: &object_store::Error, hint: &str) -> Error {
    let kind = match e {
        object_store::Error::NotFound { .. } => ErrorKind::NotFound,
        _ => ErrorKind::Storage,
    };
    Error::new(kind, format!("cannot be read: {}{hint}", store_message(e)))
}

fn stalled() -> Error {
    Error::new(
        ErrorKind::Storage,
        format!("cannot be read: the store sent nothing for {READ_STALL:?}"),
    )
}

fn local_error(e: std::io::Error) -> Error {
    Error::new(
        ErrorKind::Storage,
        format!("cannot be copied to a local file: {e}"),
    )
}

/// The storage options of the cluster's token: its credentials (Fluss's
/// `CredentialsJsonSerde`: `access_key_id`, `access_key_secret`, `security_token`) and the
/// store settings that come with them (`fs.s3a.endpoint`, `fs.s3a.region`, …). Azure's is an
/// AAD bearer token alone (`security_token`, no keys); a GCS one would be an OAuth2 token. An
/// empty token means the remote dir needs no credentials from Fluss.
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
            access_key_id: Option<String>,
            access_key_secret: Option<String>,
            security_token: Option<String>,
        }
        let unreadable = |why: &str| {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "the cluster's {} credentials for remote.data.dir cannot be read: {why}",
                    token.schema
                ),
            )
        };
        let c: Credentials =
            serde_json::from_slice(&token.token).map_err(|e| unreadable(&e.to_string()))?;
        let session = c.security_token.filter(|t| !t.is_empty());
        match (c.access_key_id, c.access_key_secret, session) {
            (Some(id), Some(secret), session) => {
                pairs.push(("access_key_id".into(), id));
                pairs.push(("secret_access_key".into(), secret));
                if let Some(t) = session {
                    pairs.push(("session_token".into(), t));
                }
            }
            // A bearer token alone: Azure's AAD token (Fluss's own), or GCS's OAuth2 token.
            (None, None, Some(bearer)) => {
                let key = match token.schema.to_ascii_lowercase().as_str() {
                    "abfs" | "abfss" | "wasb" | "wasbs" => "azure_storage_token",
                    "gs" => "gcs.oauth2.token",
                    _ => {
                        return Err(unreadable(
                            "a bearer token, which the host takes only for Azure and GCS",
                        ));
                    }
                };
                pairs.push((key.into(), bearer));
            }
            _ => {
                return Err(unreadable(
                    "neither an access key and its secret nor a bearer token",
                ));
            }
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

    #[test]
    fn azures_token_is_a_bearer_token_and_a_half_token_is_refused() {
        let token = GetFileSystemSecurityTokenResponse {
            schema: "abfs".into(),
            token: br#"{"version":1,"access_key_id":null,"access_key_secret":null,"security_token":"eyJ0"}"#.to_vec(),
            expiration_time: Some(1),
            addition_info: vec![kv("fs.azure.account.oauth2.client.endpoint", "https://x")],
        };
        let o = token_options(&token).unwrap();
        assert_eq!(o.get("azure_storage_token"), Some("eyJ0"));
        assert_eq!(o.get("access_key_id"), None);
        let gcs = GetFileSystemSecurityTokenResponse {
            schema: "gs".into(),
            ..token.clone()
        };
        assert_eq!(
            token_options(&gcs).unwrap().get("gcs.oauth2.token"),
            Some("eyJ0")
        );
        let s3 = GetFileSystemSecurityTokenResponse {
            schema: "s3".into(),
            ..token.clone()
        };
        let e = token_options(&s3).unwrap_err();
        assert!(
            e.message().contains("only for Azure and GCS"),
            "{}",
            e.message()
        );
        assert!(!e.message().contains("eyJ0"), "{}", e.message());
        let half = GetFileSystemSecurityTokenResponse {
            token: br#"{"access_key_id":"ASIA1","security_token":"tok"}"#.to_vec(),
            ..token
        };
        let e = token_options(&half).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        assert!(
            e.message().contains("neither an access key"),
            "{}",
            e.message()
        );
        assert!(!e.message().contains("ASIA1"), "{}", e.message());
    }

    #[test]
    fn remote_paths_parse_join_and_print_as_fluss_names_them() {
        let dir = RemotePath::parse("gs://bucket/remote-data/log/fluss/t-5/0").unwrap();
        assert_eq!(dir.root.as_deref(), Some("gs://bucket"));
        let file = dir.join(["0d9f", "00000000000000000042.log"]);
        assert_eq!(
            file.to_string(),
            "gs://bucket/remote-data/log/fluss/t-5/0/0d9f/00000000000000000042.log"
        );
        assert_eq!(file.local(), None);
        let local = RemotePath::parse("file:///data/remote/log").unwrap();
        assert_eq!(local.local(), Some(PathBuf::from("/data/remote/log")));
        let azure = RemotePath::parse("abfss://c@acct.dfs.core.windows.net/r/log").unwrap();
        assert_eq!(
            azure.root.as_deref(),
            Some("abfss://c@acct.dfs.core.windows.net")
        );
        for bad in ["relative/path", "s3://b/a/../x", "s3:///x", "s3://b/a//x"] {
            assert_eq!(RemotePath::parse(bad), None, "{bad}");
        }
    }

    #[tokio::test]
    async fn local_files_are_read_copied_and_deleted_without_a_coordinator() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("seg.log");
        std::fs::write(&file, b"0123456789").unwrap();
        let storage = RemoteStorage::new(StorageOptions::default());
        let path = RemotePath::parse(&file.display().to_string()).unwrap();
        assert_eq!(storage.read(&path, 10).await.unwrap(), b"0123456789");
        let e = storage.read(&path, 9).await.unwrap_err();
        assert_eq!(e.message(), "is 10 bytes, too large");
        let copy = dir.path().join("copy.log");
        assert_eq!(storage.download(&path, &copy).await.unwrap(), 10);
        assert_eq!(std::fs::read(&copy).unwrap(), b"0123456789");
        storage.delete(&path).await.unwrap();
        storage.delete(&path).await.unwrap();
        assert!(!file.exists());
        // A remote path needs the coordinator's answer first.
        let remote = RemotePath::parse("gs://bucket/x").unwrap();
        let e = storage.read(&remote, 10).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    }
}
