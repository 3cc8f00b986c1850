//! Paimon's REST catalog (`datalake.paimon.metastore=rest`), as Java Paimon's `RESTCatalog`
//! speaks it (paimon-api's `RESTApi` and `ResourcePaths`): one [`PaimonRestCatalog`] per
//! catalog, shared by every table, and a [`PaimonRestTable`] per table.
//!
//! Such a catalog keeps each table's snapshots: a writer never puts `snapshot-<id>` itself but
//! sends the snapshot to the catalog (`POST .../tables/{table}/commit`, Paimon's
//! `CatalogSnapshotCommit`), whose server writes it (with the hints) if no other writer took
//! that id first, and answers `success: false` otherwise; readers ask it for the latest
//! (`GET .../tables/{table}/snapshot`). The rest of the table (schema, manifests, data files)
//! lives under the location the catalog answers for the table, as in a filesystem catalog.
//!
//! - `GET /v1/config?warehouse=<name>` once per connection: the path prefix is the answer's
//!   `overrides.prefix`, else its `defaults.prefix`. Headers and other settings the server
//!   suggests are not followed: the endpoint and the credentials are the operator's.
//! - Authentication: a bearer token (`token.provider=bear`, `token`); Alibaba Cloud DLF's
//!   request signing (`token.provider=dlf`) is refused, naming the option.
//! - Every call ends within the deadline; answers are read up to a bound; redirects are not
//!   followed (they would carry the token elsewhere); a commit whose answer is lost is an
//!   unknown outcome ([`ErrorKind::CommitUnknown`]). No message holds the token.
//! - What a plugin hands the catalog is checked first ([`check_version`]): a JSON snapshot whose
//!   manifest lists are plain file names (resolved by readers under the table's `manifest/`),
//!   and statistics as a bounded JSON array. The host sets the table's id itself, so a table
//!   dropped and created again under the same name is never committed to.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::options::{Secret, check_http_url, parse_headers};
use super::rest::{
    BodyError, MAX_ERROR_BODY_BYTES, MAX_MESSAGE_CHARS, Redactor, clean_message, encode_segment,
    read_body, transport_why,
};
use crate::error::{Error, ErrorKind, Result};

/// Largest table answer read (`GetTableResponse`: a schema of many thousands of columns fits).
pub const MAX_TABLE_BYTES: usize = 16 << 20;
/// Largest snapshot answer read (a catalog's, trusted as the operator's).
const MAX_SNAPSHOT_ANSWER_BYTES: usize = 4 << 20;
/// Largest snapshot a plugin may commit: a Paimon snapshot is a few kilobytes. Its JSON is
/// parsed whole, so this bounds what parsing can cost (tens of megabytes at worst).
pub const MAX_VERSION_BYTES: usize = 1 << 20;
/// Largest statistics a plugin may send with a snapshot (one entry per changed partition),
/// parsed entry by entry into typed `PartitionStatistics`.
pub const MAX_STATISTICS_BYTES: usize = 8 << 20;
/// Most partitions a commit's statistics may name.
pub const MAX_STATISTICS_ENTRIES: usize = 100_000;
/// Largest `/v1/config` or commit answer read.
const MAX_SMALL_ANSWER_BYTES: usize = 1 << 20;
/// Longest manifest list name accepted in a snapshot.
const MAX_FILE_NAME_CHARS: usize = 255;

/// The options of one Paimon REST catalog (the `datalake.paimon.*` keys Paimon's
/// `RESTCatalogOptions` read). `Debug` never prints a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaimonRestOptions {
    /// The catalog's base URI (`uri`), without trailing `/`.
    pub uri: String,
    /// `warehouse`: the name of a warehouse the catalog serves (required, as in Java).
    pub warehouse: String,
    /// `token` for `token.provider=bear`.
    pub token: Option<Secret>,
    /// `header.<name>`: extra headers on every request.
    pub headers: Vec<(String, Secret)>,
}

impl PaimonRestOptions {
    /// Reads the options of a `metastore=rest` Paimon catalog. Refuses (`Unsupported`, one line
    /// naming the option) DLF request signing and any token provider but `bear`.
    pub fn from_lake_options(options: &[(String, String)]) -> Result<PaimonRestOptions> {
        let get = |key: &str| {
            options
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.trim())
                .filter(|v| !v.is_empty())
        };
        let uri = get("uri").ok_or_else(|| {
            config(
                "metastore=rest needs uri, the Paimon REST catalog's base URI (http://host:port)",
            )
        })?;
        let uri = uri.trim_end_matches('/').to_string();
        let url = Url::parse(&uri).map_err(|e| config(format!("uri {uri:?}: {e}")))?;
        check_http_url("uri", &uri, &url)?;
        let warehouse = get("warehouse")
            .ok_or_else(|| {
                config("metastore=rest needs warehouse, the name of a warehouse the Paimon REST catalog serves")
            })?
            .to_string();
        let token = get("token");
        let token = match get("token.provider")
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("bear") => Some(token.ok_or_else(|| config("token.provider=bear needs token"))?),
            // Java requires the provider; a lone token can only be meant as a bearer token.
            None => token,
            Some("dlf") => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    "datalake.paimon.token.provider=dlf: Alibaba Cloud DLF request signing is not implemented (supported: bear)",
                ));
            }
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "datalake.paimon.token.provider={other}: not supported (supported: bear)"
                    ),
                ));
            }
        };
        if let Some(t) = token
            && HeaderValue::from_str(&format!("Bearer {t}")).is_err()
        {
            return Err(config("token: not a valid HTTP header value"));
        }
        Ok(PaimonRestOptions {
            uri,
            warehouse,
            token: token.map(Secret::new),
            headers: parse_headers(options)?,
        })
    }

    fn secrets(&self) -> Vec<String> {
        self.headers
            .iter()
            .map(|(_, v)| v.expose().to_string())
            .chain(self.token.iter().map(|t| t.expose().to_string()))
            .collect()
    }
}

fn config(message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Config,
        format!("datalake.paimon.{}", message.into()),
    )
}

/// What a request does: it decides how its failures read and whether its outcome can be
/// unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Config,
    LoadTable,
    LoadSnapshot,
    Commit,
}

impl Op {
    fn what(self) -> &'static str {
        match self {
            Op::Config => "configuration request",
            Op::LoadTable => "get-table",
            Op::LoadSnapshot => "load-snapshot",
            Op::Commit => "commit",
        }
    }
}

/// One connection to one Paimon REST catalog, shared by every table (a cheap clone).
#[derive(Clone)]
pub struct PaimonRestCatalog {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    uri: String,
    /// The path segment after `/v1/`, percent-encoded, if the catalog gives one.
    prefix: Option<String>,
    /// `Authorization` and `header.*`, marked sensitive.
    headers: HeaderMap,
    deadline: Duration,
    redactor: Redactor,
}

impl fmt::Debug for PaimonRestCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PaimonRestCatalog")
            .field("uri", &self.inner.uri)
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

/// A table as the catalog answered it (`GetTableResponse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaimonRestTableInfo {
    /// The table's id (`id`), what a commit names to be applied to this very table.
    pub id: String,
    /// Its location (`path`), absolute.
    pub path: String,
}

impl PaimonRestCatalog {
    /// Connects: fetches the catalog's configuration (`GET /v1/config?warehouse=`), within
    /// `deadline`.
    pub async fn connect(options: &PaimonRestOptions, deadline: Duration) -> Result<Self> {
        let http = super::http_client("the Paimon REST catalog", deadline)?;
        let mut headers = super::sensitive_headers(&options.headers)?;
        if let Some(token) = &options.token {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
                .map_err(|_| config("token: not a valid HTTP header value"))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let mut inner = Inner {
            http,
            uri: options.uri.clone(),
            prefix: None,
            headers,
            deadline,
            redactor: Redactor::new(options.secrets()),
        };
        let mut url = inner.url("v1/config")?;
        // Java's `RESTApi` encodes the name (`RESTUtil.encodeString`) before its HTTP client
        // encodes the query: servers decode it twice.
        url.query_pairs_mut()
            .append_pair("warehouse", &java_url_encode(&options.warehouse));
        let answer = inner.send(Op::Config, Method::GET, url, None).await?;
        if !answer.0.is_success() {
            return Err(inner.failure(Op::Config, answer.0, &answer.1));
        }
        let config: Value = serde_json::from_slice(&answer.1)
            .map_err(|e| inner.protocol(Op::Config, &format!("not JSON: {e}")))?;
        let prefix = ["overrides", "defaults"].iter().find_map(|part| {
            config
                .get(part)?
                .get("prefix")?
                .as_str()
                .filter(|p| !p.is_empty())
                .map(str::to_string)
        });
        inner.prefix = prefix.map(|p| encode_segment(&p));
        tracing::info!(uri = %inner.uri, prefix = inner.prefix.as_deref().unwrap_or(""), "connected to the Paimon REST catalog");
        Ok(PaimonRestCatalog {
            inner: Arc::new(inner),
        })
    }

    /// The table `database.table`.
    pub fn table(&self, database: &str, table: &str) -> PaimonRestTable {
        PaimonRestTable {
            catalog: self.clone(),
            database: database.to_string(),
            table: table.to_string(),
        }
    }

    pub fn uri(&self) -> &str {
        &self.inner.uri
    }
}

impl Inner {
    fn url(&self, path: &str) -> Result<Url> {
        Url::parse(&format!("{}/{path}", self.uri)).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("Paimon REST catalog {}: {path}: {e}", self.uri),
            )
        })
    }

    fn label(&self) -> String {
        format!("Paimon REST catalog {}", self.uri)
    }

    /// Sends one request under the deadline and reads its answer up to its bound.
    async fn send(
        &self,
        op: Op,
        method: Method,
        url: Url,
        body: Option<Bytes>,
    ) -> Result<(StatusCode, Bytes)> {
        let sent = AtomicBool::new(false);
        let call = async {
            let mut request = self
                .http
                .request(method, url.clone())
                .headers(self.headers.clone());
            if let Some(b) = body {
                request = request.header(CONTENT_TYPE, "application/json").body(b);
            }
            sent.store(true, Ordering::SeqCst);
            let response = request.send().await.map_err(|e| self.transport(op, &e))?;
            let status = response.status();
            tracing::debug!(
                op = op.what(),
                path = url.path(),
                status = status.as_u16(),
                "Paimon REST catalog call"
            );
            let limit = match (status.is_success(), op) {
                (false, _) => MAX_ERROR_BODY_BYTES,
                (true, Op::LoadTable) => MAX_TABLE_BYTES,
                (true, Op::LoadSnapshot) => MAX_SNAPSHOT_ANSWER_BYTES,
                (true, Op::Config | Op::Commit) => MAX_SMALL_ANSWER_BYTES,
            };
            match read_body(response, limit, !status.is_success()).await {
                Ok(b) => Ok((status, b)),
                Err(BodyError::Transport(_)) if !status.is_success() => Ok((status, Bytes::new())),
                Err(BodyError::Transport(e)) => Err(self.transport(op, &e)),
                Err(BodyError::TooLarge) => Err(if op == Op::Commit {
                    self.unknown(op, &format!("its answer is larger than {limit} bytes"))
                } else {
                    self.protocol(op, &format!("its answer is larger than {limit} bytes"))
                }),
            }
        };
        super::within(
            &self.label(),
            op.what(),
            op == Op::Commit,
            self.deadline,
            &sent,
            call,
        )
        .await
    }

    fn transport(&self, op: Op, e: &reqwest::Error) -> Error {
        let why = self.redactor.apply(transport_why(e));
        if e.is_connect() {
            Error::new(
                ErrorKind::Unavailable,
                format!("cannot connect to {} ({}): {why}", self.label(), op.what()),
            )
        } else if op == Op::Commit {
            self.unknown(op, &format!("its answer was lost: {why}"))
        } else {
            Error::new(
                ErrorKind::Unavailable,
                format!("{}: the {} failed: {why}", self.label(), op.what()),
            )
        }
    }

    fn unknown(&self, op: Op, why: &str) -> Error {
        Error::new(
            ErrorKind::CommitUnknown,
            format!(
                "{}: the {} may or may not have been applied ({why})",
                self.label(),
                op.what()
            ),
        )
    }

    fn protocol(&self, op: Op, why: &str) -> Error {
        Error::new(
            ErrorKind::Protocol,
            format!(
                "{}: {}: {}",
                self.label(),
                op.what(),
                clean_message(why, MAX_MESSAGE_CHARS)
            ),
        )
    }

    /// The error for a non-success answer, with secrets redacted.
    ///
    /// | status | error kind |
    /// |---|---|
    /// | 401, 403 | `Authentication` |
    /// | 404 | `Config` for `/v1/config` (no such warehouse), `NotFound` otherwise |
    /// | 409 | `Conflict` |
    /// | 429 | `Unavailable` |
    /// | 5xx | `CommitUnknown` on commit (the catalog may have applied it), `Unavailable` otherwise |
    /// | 3xx, other 4xx | `Protocol` (not applied) |
    fn failure(&self, op: Op, status: StatusCode, body: &[u8]) -> Error {
        let detail = error_message(status, body);
        let code = status.as_u16();
        let label = self.label();
        let what = op.what();
        let (kind, message) = match code {
            401 if self.headers.get(AUTHORIZATION).is_none() => (
                ErrorKind::Authentication,
                format!(
                    "{label} requires a credential (set datalake.paimon.token.provider=bear and datalake.paimon.token): {detail}"
                ),
            ),
            401 | 403 => (
                ErrorKind::Authentication,
                format!("{label} refused the credential for the {what} ({code}): {detail}"),
            ),
            404 if op == Op::Config => (
                ErrorKind::Config,
                format!("{label} has no such warehouse (404): {detail}"),
            ),
            404 => (
                ErrorKind::NotFound,
                format!("{label}: {what} found nothing (404): {detail}"),
            ),
            409 => (
                ErrorKind::Conflict,
                format!("{label} refused the {what} (409): {detail}"),
            ),
            429 => (
                ErrorKind::Unavailable,
                format!("{label} is rate limiting the {what} (429): {detail}"),
            ),
            500..=599 if op == Op::Commit => (
                ErrorKind::CommitUnknown,
                format!(
                    "{label} failed the commit ({code}); it may or may not have been applied: {detail}"
                ),
            ),
            500..=599 => (
                ErrorKind::Unavailable,
                format!("{label} failed the {what} ({code}): {detail}"),
            ),
            300..=399 => (
                ErrorKind::Protocol,
                format!(
                    "{label} answered the {what} with a redirect ({code}), which the host does not follow: set uri to the catalog's own address"
                ),
            ),
            _ => (
                ErrorKind::Protocol,
                format!("{label} refused the {what} with HTTP {code} (not applied): {detail}"),
            ),
        };
        Error::new(kind, self.redactor.apply(message))
    }
}

/// `java.net.URLEncoder.encode(s, UTF_8)`: letters, digits and `.-*_` as they are, a space as
/// `+`, every other byte as `%XX`.
fn java_url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// What a Paimon `ErrorResponse` (`{"message", "resourceType", "resourceName", "code"}`) says,
/// or the body as text.
fn error_message(status: StatusCode, body: &[u8]) -> String {
    if let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(body)
        && let Some(m) = o.get("message").and_then(Value::as_str)
    {
        return clean_message(m, MAX_MESSAGE_CHARS);
    }
    let text = clean_message(&String::from_utf8_lossy(body), MAX_MESSAGE_CHARS);
    if text.is_empty() {
        format!("HTTP {}", status.as_u16())
    } else {
        text
    }
}

/// The `resourceType` of a Paimon `ErrorResponse` (`TABLE`, `SNAPSHOT`, ...).
fn resource_type(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<Value>(body)
        .ok()?
        .get("resourceType")?
        .as_str()
        .map(str::to_ascii_uppercase)
}

/// One table of a [`PaimonRestCatalog`]: the capability a plugin's `version-catalog` import is
/// scoped to.
pub struct PaimonRestTable {
    catalog: PaimonRestCatalog,
    database: String,
    table: String,
}

impl fmt::Debug for PaimonRestTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PaimonRestTable({} {}.{})",
            self.catalog.inner.uri, self.database, self.table
        )
    }
}

impl PaimonRestTable {
    fn inner(&self) -> &Inner {
        &self.catalog.inner
    }

    /// `/v1/{prefix}/databases/{database}/tables/{table}{rest}`.
    fn table_url(&self, rest: &str) -> Result<Url> {
        let inner = self.inner();
        let prefix = inner
            .prefix
            .as_deref()
            .map_or(String::new(), |p| format!("{p}/"));
        inner.url(&format!(
            "v1/{prefix}databases/{}/tables/{}{rest}",
            encode_segment(&self.database),
            encode_segment(&self.table)
        ))
    }

    /// The table (`GET .../tables/{table}`); `None` when the catalog has none of that name.
    pub async fn load(&self) -> Result<Option<PaimonRestTableInfo>> {
        let inner = self.inner();
        let (status, body) = inner
            .send(Op::LoadTable, Method::GET, self.table_url("")?, None)
            .await?;
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(inner.failure(Op::LoadTable, status, &body));
        }
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| inner.protocol(Op::LoadTable, &format!("not JSON: {e}")))?;
        let field = |name: &str| {
            v.get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| {
                    inner.protocol(
                        Op::LoadTable,
                        &format!("table {}.{} has no '{name}'", self.database, self.table),
                    )
                })
        };
        Ok(Some(PaimonRestTableInfo {
            id: field("id")?,
            path: field("path")?,
        }))
    }

    /// The table's latest snapshot as the catalog keeps it (the `snapshot` of its
    /// `GetTableSnapshotResponse`), JSON; `None` before the first commit.
    pub async fn latest_snapshot(&self) -> Result<Option<String>> {
        let inner = self.inner();
        let (status, body) = inner
            .send(
                Op::LoadSnapshot,
                Method::GET,
                self.table_url("/snapshot")?,
                None,
            )
            .await?;
        if status == StatusCode::NOT_FOUND {
            // No snapshot yet, unless the table itself is gone.
            return match resource_type(&body).as_deref() {
                Some("SNAPSHOT") => Ok(None),
                _ => Err(inner.failure(Op::LoadSnapshot, status, &body)),
            };
        }
        if !status.is_success() {
            return Err(inner.failure(Op::LoadSnapshot, status, &body));
        }
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| inner.protocol(Op::LoadSnapshot, &format!("not JSON: {e}")))?;
        match v.get("snapshot") {
            Some(Value::Null) => Ok(None),
            Some(t) => match t.get("snapshot") {
                Some(s @ Value::Object(_)) => Ok(Some(s.to_string())),
                _ => Err(inner.protocol(
                    Op::LoadSnapshot,
                    "the answer holds no snapshot object (snapshot.snapshot)",
                )),
            },
            None => Err(inner.protocol(Op::LoadSnapshot, "the answer holds no 'snapshot'")),
        }
    }

    /// Commits `snapshot` with `statistics` (both checked by [`check_version`]) to the table
    /// whose id is `table_id`: `true` when committed, `false` when another writer committed
    /// that snapshot id first.
    pub async fn commit(&self, table_id: &str, snapshot: &str, statistics: &str) -> Result<bool> {
        let (snapshot, statistics) = check_version(snapshot, statistics)?;
        let body = serde_json::json!({
            "tableId": table_id,
            "snapshot": snapshot,
            "statistics": statistics,
        });
        let body = Bytes::from(
            serde_json::to_vec(&body)
                .map_err(|e| Error::new(ErrorKind::Internal, format!("encoding a commit: {e}")))?,
        );
        let inner = self.inner();
        let (status, answer) = inner
            .send(
                Op::Commit,
                Method::POST,
                self.table_url("/commit")?,
                Some(body),
            )
            .await?;
        if status == StatusCode::NOT_FOUND {
            // The server names no table of this id: it was dropped (and maybe created again).
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}: table {}.{} (id {table_id}) is gone; nothing was committed: {}",
                    inner.label(),
                    self.database,
                    self.table,
                    error_message(status, &answer)
                ),
            ));
        }
        if !status.is_success() {
            return Err(inner.failure(Op::Commit, status, &answer));
        }
        match serde_json::from_slice::<Value>(&answer)
            .ok()
            .and_then(|v| v.get("success")?.as_bool())
        {
            Some(success) => Ok(success),
            None => Err(inner.unknown(Op::Commit, "it answered 2xx without a 'success' flag")),
        }
    }
}

/// Checks what a plugin asks the catalog to commit before anything is sent: `snapshot` is a
/// JSON object of at most [`MAX_VERSION_BYTES`] with a positive integer `id` and manifest lists
/// that are plain file names (readers resolve them under the table's `manifest/`, so a name
/// with a `/` could point them at another table's files); `statistics` a JSON array of at most
/// [`MAX_STATISTICS_ENTRIES`] objects in [`MAX_STATISTICS_BYTES`]. `PluginLimit` otherwise.
pub fn check_version(snapshot: &str, statistics: &str) -> Result<(Value, Value)> {
    let refuse = |why: String| Error::new(ErrorKind::PluginLimit, why);
    if snapshot.len() > MAX_VERSION_BYTES {
        return Err(refuse(format!(
            "a snapshot of {} bytes is over the {MAX_VERSION_BYTES}-byte limit",
            snapshot.len()
        )));
    }
    if statistics.len() > MAX_STATISTICS_BYTES {
        return Err(refuse(format!(
            "statistics of {} bytes are over the {MAX_STATISTICS_BYTES}-byte limit",
            statistics.len()
        )));
    }
    let snapshot: Value = serde_json::from_str(snapshot)
        .map_err(|e| refuse(format!("the snapshot is not JSON: {e}")))?;
    let Value::Object(fields) = &snapshot else {
        return Err(refuse("the snapshot is not a JSON object".into()));
    };
    match fields.get("id").and_then(Value::as_i64) {
        Some(id) if id > 0 => {}
        _ => return Err(refuse("the snapshot has no positive integer 'id'".into())),
    }
    for key in [
        "baseManifestList",
        "deltaManifestList",
        "changelogManifestList",
        "indexManifest",
        "statistics",
    ] {
        match fields.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(name)) if is_plain_file_name(name) => {}
            Some(other) => {
                return Err(refuse(format!(
                    "the snapshot's {key} {} is not a plain file name",
                    clean_message(&other.to_string(), 80)
                )));
            }
        }
    }
    for key in ["baseManifestList", "deltaManifestList"] {
        if !fields.get(key).is_some_and(Value::is_string) {
            return Err(refuse(format!("the snapshot has no {key}")));
        }
    }
    // Typed, so that no entry costs more than its own text: an array of anything else fails at
    // its first element.
    let statistics: Vec<PartitionStatisticsWire> =
        serde_json::from_str(statistics).map_err(|e| {
            refuse(format!(
                "the statistics are not JSON PartitionStatistics: {}",
                clean_message(&e.to_string(), 120)
            ))
        })?;
    if statistics.len() > MAX_STATISTICS_ENTRIES {
        return Err(refuse(format!(
            "statistics of {} partitions are over the {MAX_STATISTICS_ENTRIES}-partition limit",
            statistics.len()
        )));
    }
    let statistics = serde_json::to_value(statistics)
        .map_err(|e| Error::new(ErrorKind::Internal, format!("statistics: {e}")))?;
    Ok((snapshot, statistics))
}

/// Paimon's `PartitionStatistics`, as a commit carries it.
#[derive(serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PartitionStatisticsWire {
    spec: std::collections::BTreeMap<String, String>,
    record_count: i64,
    file_size_in_bytes: i64,
    file_count: i64,
    last_file_creation_time: i64,
}

fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_FILE_NAME_CHARS
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', ':'])
        && !name.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn options_take_a_bearer_token_and_refuse_dlf_signing() {
        let o = PaimonRestOptions::from_lake_options(&opts(&[
            ("metastore", "rest"),
            ("uri", "http://127.0.0.1:8281/"),
            ("warehouse", "fluss"),
            ("token.provider", "bear"),
            ("token", "s3cr3t"),
            ("header.X-Tenant", "t1"),
        ]))
        .unwrap();
        assert_eq!(o.uri, "http://127.0.0.1:8281");
        assert_eq!(o.warehouse, "fluss");
        assert_eq!(o.token.as_ref().unwrap().expose(), "s3cr3t");
        assert!(!format!("{o:?}").contains("s3cr3t"));
        let e = PaimonRestOptions::from_lake_options(&opts(&[
            ("uri", "http://h"),
            ("warehouse", "w"),
            ("token.provider", "dlf"),
        ]))
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("token.provider=dlf"), "{e}");
        for (missing, pairs) in [
            ("uri", opts(&[("warehouse", "w")])),
            ("warehouse", opts(&[("uri", "http://h")])),
            (
                "token",
                opts(&[
                    ("uri", "http://h"),
                    ("warehouse", "w"),
                    ("token.provider", "bear"),
                ]),
            ),
        ] {
            let e = PaimonRestOptions::from_lake_options(&pairs).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{e}");
            assert!(e.message().contains(missing), "{e}");
        }
    }

    #[test]
    fn a_snapshot_must_name_its_manifest_lists_as_plain_files() {
        let good = r#"{"version":3,"id":4,"schemaId":0,"baseManifestList":"manifest-list-a-0","deltaManifestList":"manifest-list-a-1","commitUser":"u","commitIdentifier":1,"commitKind":"APPEND","timeMillis":1}"#;
        let (s, stats) = check_version(good, "[]").unwrap();
        assert_eq!(s["id"], 4);
        assert!(stats.is_array());
        for (bad, why) in [
            (
                good.replace("manifest-list-a-0", "../other/manifest/m"),
                "plain file name",
            ),
            (
                good.replace("manifest-list-a-1", "a\\\\b"),
                "plain file name",
            ),
            (good.replace("\"id\":4", "\"id\":-1"), "positive integer"),
            (
                good.replace("\"baseManifestList\":\"manifest-list-a-0\",", ""),
                "no baseManifestList",
            ),
            ("[1]".to_string(), "not a JSON object"),
            ("{".to_string(), "not JSON"),
            ("x".repeat(MAX_VERSION_BYTES + 1), "byte limit"),
        ] {
            let e = check_version(&bad, "[]").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
            assert!(e.message().contains(why), "{why}: {e}");
        }
        let wide = format!("[{}0]", "0,".repeat(1000));
        for bad in ["{}", "[1]", "nope", r#"[{"spec":{}}]"#, wide.as_str()] {
            let e = check_version(good, bad).unwrap_err();
            assert!(e.message().contains("statistics"), "{e}");
        }
        let (_, stats) = check_version(
            good,
            r#"[{"spec":{"dt":"2026"},"recordCount":3,"fileSizeInBytes":10,"fileCount":1,"lastFileCreationTime":5}]"#,
        )
        .unwrap();
        assert_eq!(stats[0]["spec"]["dt"], "2026");
    }

    #[test]
    fn warehouse_names_are_encoded_as_javas_url_encoder_does() {
        assert_eq!(java_url_encode("fluss"), "fluss");
        assert_eq!(java_url_encode("my lake+1/ü"), "my+lake%2B1%2F%C3%BC");
    }

    #[test]
    fn errors_read_paimons_error_response_and_never_the_token() {
        let inner = Inner {
            http: reqwest::Client::new(),
            uri: "http://c".into(),
            prefix: None,
            headers: {
                let mut h = HeaderMap::new();
                h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer tok123"));
                h
            },
            deadline: Duration::from_secs(1),
            redactor: Redactor::new(vec!["tok123".into()]),
        };
        let body = br#"{"message":"token tok123 is not valid","resourceType":null,"code":401}"#;
        let e = inner.failure(Op::Commit, StatusCode::UNAUTHORIZED, body);
        assert_eq!(e.kind(), ErrorKind::Authentication);
        assert!(e.message().contains("<redacted> is not valid"), "{e}");
        assert!(!e.message().contains("tok123"));
        let e = inner.failure(Op::Commit, StatusCode::BAD_GATEWAY, b"<html>");
        assert_eq!(e.kind(), ErrorKind::CommitUnknown);
        let e = inner.failure(Op::LoadSnapshot, StatusCode::BAD_GATEWAY, b"");
        assert_eq!(e.kind(), ErrorKind::Unavailable);
        assert_eq!(
            resource_type(
                br#"{"message":"m","resourceType":"SNAPSHOT","resourceName":"t","code":404}"#
            )
            .as_deref(),
            Some("SNAPSHOT")
        );
    }
}
