//! The Iceberg REST catalog client: one [`RestCatalog`] per catalog, shared by every table,
//! and a [`RestTable`] per table.
//!
//! Following the REST spec (and Java's `RESTSessionCatalog` where the spec leaves room):
//!
//! - `GET /v1/config` once, with the `warehouse` query parameter when one is configured; the
//!   path prefix is the server's `overrides.prefix`, else the option's, else the server's
//!   `defaults.prefix`. Other server properties are not followed: the endpoint and the
//!   credentials are the operator's alone. When the server lists its `endpoints`, a call it
//!   does not list is refused before it is sent.
//! - Authentication: OAuth2 client credentials (a token fetched at connect, fetched again
//!   before it expires, and once more on a 401), a static bearer token, or HTTP basic. A
//!   table-scoped `token` in a load answer's `config` is used for that table's later calls.
//! - Table calls under the namespace `[database]`: load (`GET`), create (`POST .../tables`,
//!   creating the namespace when it is missing, as Fluss's Java `IcebergLakeCatalog` does),
//!   commit (`POST .../tables/{table}`).
//! - Every call, token fetches and the retry after a 401 included, ends within the deadline.
//!   Answers are read up to a bound; redirects are not followed (they would carry the
//!   credentials elsewhere).
//!
//! Errors map to [`ErrorKind`]s the caller can act on (the table at `status_error`); no message holds
//! a secret: catalog messages are bounded, stripped of control characters, and any configured
//! secret or issued token in them is replaced by `<redacted>`.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::LoadedTable;
use super::auth::Authenticator;
use super::options::{CatalogOptions, check_prefix};
use super::validate::{self, MetadataHead, TableLocation, top_level_member};
use crate::error::{Error, ErrorKind, Result};

/// Largest table answer read (`LoadTableResult`, `CommitTableResponse`): the metadata of a
/// table with many thousands of snapshots fits; a body past it is refused while it is read.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// Largest `/v1/config` answer read.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;
/// Largest OAuth2 token answer read (a JWT is a few kilobytes).
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;
/// Most of an error answer that is read (a plain HTML error page need not be read whole).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// Longest catalog message put into an error.
pub const MAX_MESSAGE_CHARS: usize = 300;

/// What a request does: it decides how its failures read and whether its outcome can be
/// unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Token,
    Config,
    Load,
    Create,
    CreateNamespace,
    Commit,
}

impl Op {
    /// A request whose effect may have happened even though no answer came back.
    fn outcome_may_be_unknown(self) -> bool {
        matches!(self, Op::Create | Op::Commit)
    }

    fn what(self) -> &'static str {
        match self {
            Op::Token => "token request",
            Op::Config => "configuration request",
            Op::Load => "load-table",
            Op::Create => "create-table",
            Op::CreateNamespace => "create-namespace",
            Op::Commit => "commit",
        }
    }
}

/// Secrets never to print: the configured ones and the tokens issued lately.
#[derive(Default)]
pub(crate) struct Redactor {
    configured: Vec<String>,
    issued: Mutex<std::collections::VecDeque<String>>,
}

/// Issued tokens remembered for redaction (older ones are long expired).
const REMEMBERED_TOKENS: usize = 8;

impl Redactor {
    pub(crate) fn new(configured: Vec<String>) -> Self {
        Self {
            configured,
            issued: Mutex::default(),
        }
    }

    /// Remembers a token the host was issued.
    pub(crate) fn add(&self, secret: &str) {
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        if !issued.iter().any(|s| s == secret) {
            if issued.len() == REMEMBERED_TOKENS {
                issued.pop_front();
            }
            issued.push_back(secret.to_string());
        }
    }

    /// `message` with every secret replaced by `<redacted>`.
    pub(crate) fn apply(&self, mut message: String) -> String {
        let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        for secret in self.configured.iter().chain(issued.iter()) {
            // Shorter values would match ordinary words; no real secret is that short.
            if secret.len() >= 3 && message.contains(secret.as_str()) {
                message = message.replace(secret.as_str(), "<redacted>");
            }
        }
        message
    }
}

/// A message from outside (a catalog, a plugin) made safe for one log line: control
/// characters become spaces, runs of whitespace one space, and it is cut at `max` characters.
pub(crate) fn clean_message(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4));
    let mut count = 0;
    let mut space = false;
    for c in s.chars() {
        let c = if c.is_control() || c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' {
            if space || out.is_empty() {
                continue;
            }
            space = true;
        } else {
            space = false;
        }
        if count == max {
            out.push('…');
            return out;
        }
        out.push(c);
        count += 1;
    }
    out.trim_end().to_string()
}

/// What an error answer says, as far as it says anything.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorDetail {
    /// The Iceberg error `type` (`NoSuchTableException`, ...) or the OAuth2 `error` code.
    pub kind: Option<String>,
    /// One line for humans, cleaned and bounded.
    pub text: String,
    /// The body was an Iceberg `IcebergErrorResponse`.
    pub iceberg: bool,
}

/// Reads an error body: an Iceberg `{"error": {"message", "type", "code"}}`, an OAuth2
/// `{"error", "error_description"}`, or anything else (a proxy's HTML page) as text.
pub(crate) fn error_detail(status: StatusCode, body: &[u8]) -> ErrorDetail {
    let text = |s: &str| clean_message(s, MAX_MESSAGE_CHARS);
    if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(body) {
        match obj.get("error") {
            Some(Value::Object(e)) => {
                let kind = e.get("type").and_then(Value::as_str).map(text);
                let message = e.get("message").and_then(Value::as_str).unwrap_or("");
                return ErrorDetail {
                    text: match &kind {
                        Some(k) if !message.is_empty() => text(&format!("{k}: {message}")),
                        Some(k) => k.clone(),
                        None => text(message),
                    },
                    kind,
                    iceberg: true,
                };
            }
            Some(Value::String(code)) => {
                let description = obj
                    .get("error_description")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                return ErrorDetail {
                    kind: Some(text(code)),
                    text: if description.is_empty() {
                        text(code)
                    } else {
                        text(&format!("{code}: {description}"))
                    },
                    iceberg: false,
                };
            }
            _ => {}
        }
    }
    let body = String::from_utf8_lossy(body);
    let body = clean_message(&body, MAX_MESSAGE_CHARS);
    let status_line = format!(
        "HTTP {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    ErrorDetail {
        kind: None,
        text: if body.is_empty() {
            status_line.trim_end().to_string()
        } else {
            format!("{}: {body}", status_line.trim_end())
        },
        iceberg: false,
    }
}

/// The error for a non-success answer of `op`, from the catalog at `uri`.
///
/// | status | error kind |
/// |---|---|
/// | 400 | `Config` for `/v1/config` (e.g. an unknown warehouse), `Authentication` for a token request, `Protocol` otherwise (not applied) |
/// | 401, 419 | `Authentication` (after one new token, for OAuth2 client credentials) |
/// | 403 | `Authentication` |
/// | 404 | `Config` for `/v1/config` and token requests, `NotFound` otherwise (a load answers `None` instead) |
/// | 409 | `Conflict` on commit (a requirement failed), `AlreadyExists` on create |
/// | 405, 406, 501 | `Unsupported` |
/// | 429 | `Unavailable` |
/// | other 5xx | `CommitUnknown` on commit and create (the catalog may have applied it), `Unavailable` otherwise |
/// | 3xx, other 4xx | `Protocol` |
pub(crate) fn status_error(op: Op, status: StatusCode, body: &[u8], uri: &str) -> Error {
    let detail = error_detail(status, body).text;
    let code = status.as_u16();
    let (kind, message) = match code {
        401 | 419 => (
            ErrorKind::Authentication,
            format!("Iceberg REST catalog {uri} refused the credential: {detail}"),
        ),
        403 => (
            ErrorKind::Authentication,
            format!(
                "Iceberg REST catalog {uri} denied the {} (403 Forbidden): {detail}",
                op.what()
            ),
        ),
        400 if op == Op::Token => (
            ErrorKind::Authentication,
            format!("Iceberg REST catalog {uri} refused the credential: {detail}"),
        ),
        400 if op == Op::Config => (
            ErrorKind::Config,
            format!("Iceberg REST catalog {uri} refused the configuration request: {detail}"),
        ),
        400 => (
            ErrorKind::Protocol,
            format!(
                "Iceberg REST catalog {uri} refused the {} as malformed (400, not applied): {detail}",
                op.what()
            ),
        ),
        404 if op == Op::Config => (
            ErrorKind::Config,
            format!("Iceberg REST catalog {uri} has no such warehouse (404): {detail}"),
        ),
        404 if op == Op::Token => (
            ErrorKind::Config,
            format!(
                "the OAuth2 token endpoint of Iceberg REST catalog {uri} answered 404 (set oauth2-server-uri): {detail}"
            ),
        ),
        404 => (
            ErrorKind::NotFound,
            format!(
                "Iceberg REST catalog {uri}: {} found nothing (404): {detail}",
                op.what()
            ),
        ),
        409 if op == Op::Commit => (
            ErrorKind::Conflict,
            format!(
                "Iceberg REST catalog {uri} refused the commit: a requirement no longer holds (409): {detail}"
            ),
        ),
        409 if matches!(op, Op::Create | Op::CreateNamespace) => (
            ErrorKind::AlreadyExists,
            format!("Iceberg REST catalog {uri}: {} (409): {detail}", op.what()),
        ),
        405 | 406 | 501 => (
            ErrorKind::Unsupported,
            format!(
                "Iceberg REST catalog {uri} does not support the {} ({code}): {detail}",
                op.what()
            ),
        ),
        429 => (
            ErrorKind::Unavailable,
            format!(
                "Iceberg REST catalog {uri} is rate limiting the {} (429): {detail}",
                op.what()
            ),
        ),
        500..=599 if op.outcome_may_be_unknown() => (
            ErrorKind::CommitUnknown,
            format!(
                "Iceberg REST catalog {uri} failed the {} ({code}); it may or may not have been applied: {detail}",
                op.what()
            ),
        ),
        500..=599 => (
            ErrorKind::Unavailable,
            format!(
                "Iceberg REST catalog {uri} failed the {} ({code}): {detail}",
                op.what()
            ),
        ),
        300..=399 => (
            ErrorKind::Protocol,
            format!(
                "Iceberg REST catalog {uri} answered the {} with a redirect ({code}), which the host does not follow: set uri to the catalog's own address",
                op.what()
            ),
        ),
        _ => (
            ErrorKind::Protocol,
            format!(
                "Iceberg REST catalog {uri} answered the {} with HTTP {code}: {detail}",
                op.what()
            ),
        ),
    };
    Error::new(kind, message)
}

/// The error for a request that got no answer. Only a failure to connect proves the request
/// was never sent; any other failure of a commit or create may have reached the catalog.
pub(crate) fn transport_error(op: Op, e: &reqwest::Error, uri: &str, deadline: Duration) -> Error {
    let why = transport_why(e);
    if e.is_connect() {
        return Error::new(
            ErrorKind::Unavailable,
            format!(
                "cannot connect to Iceberg REST catalog {uri} ({}): {why}",
                op.what()
            ),
        );
    }
    if op.outcome_may_be_unknown() {
        return Error::new(
            ErrorKind::CommitUnknown,
            format!(
                "Iceberg REST catalog {uri}: the {}'s answer was lost; it may or may not have been applied: {why}",
                op.what()
            ),
        );
    }
    if e.is_timeout() {
        return Error::new(
            ErrorKind::Unavailable,
            format!(
                "Iceberg REST catalog {uri} did not answer the {} within {}",
                op.what(),
                humantime::format_duration(deadline)
            ),
        );
    }
    Error::new(
        ErrorKind::Unavailable,
        format!(
            "Iceberg REST catalog {uri}: the {} failed: {why}",
            op.what()
        ),
    )
}

/// Why a request got no answer: the error and its sources on one bounded, cleaned line.
pub(crate) fn transport_why(e: &reqwest::Error) -> String {
    let mut why = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        why.push_str(": ");
        why.push_str(&s.to_string());
        source = s.source();
    }
    clean_message(&why, MAX_MESSAGE_CHARS)
}

/// An answer: its status and its body, read up to a bound.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub body: Bytes,
}

/// Why a body could not be read.
pub(crate) enum BodyError {
    TooLarge,
    Transport(reqwest::Error),
}

/// Reads `response`'s body up to `limit` bytes: refused past it (`truncate` false), or cut
/// there (`truncate` true, for error pages). Never buffers more than `limit`.
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    limit: usize,
    truncate: bool,
) -> std::result::Result<Bytes, BodyError> {
    if !truncate && response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
        let room = limit - out.len();
        if chunk.len() > room {
            if truncate {
                out.extend_from_slice(&chunk[..room]);
                break;
            }
            return Err(BodyError::TooLarge);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

/// Percent-encodes one path segment: everything but RFC 3986's unreserved characters.
pub(crate) fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One connection to one Iceberg REST catalog, shared by every table (a cheap clone).
#[derive(Clone)]
pub struct RestCatalog {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) http: reqwest::Client,
    /// The base URI, without trailing `/`; holds no secret (refused in the options).
    pub(crate) uri: String,
    /// The path prefix after `/v1/`, if any.
    prefix: Option<String>,
    auth: Authenticator,
    /// `header.*`, marked sensitive.
    pub(crate) headers: HeaderMap,
    pub(crate) deadline: Duration,
    /// The calls the server says it serves (`None`: it did not say, so the spec's defaults).
    endpoints: Option<HashSet<String>>,
    pub(crate) redactor: Redactor,
}

impl fmt::Debug for RestCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestCatalog")
            .field("uri", &self.inner.uri)
            .field("prefix", &self.inner.prefix)
            .field("auth", &self.inner.auth)
            .finish_non_exhaustive()
    }
}

const LOAD_TABLE: &str = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}";
const CREATE_TABLE: &str = "POST /v1/{prefix}/namespaces/{namespace}/tables";
const COMMIT_TABLE: &str = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}";
const CREATE_NAMESPACE: &str = "POST /v1/{prefix}/namespaces";

/// `GET /v1/config`'s answer (`CatalogConfig`); values that are not strings are ignored.
#[derive(Deserialize)]
struct ConfigWire {
    #[serde(default)]
    defaults: BTreeMap<String, Value>,
    #[serde(default)]
    overrides: BTreeMap<String, Value>,
    endpoints: Option<Vec<String>>,
}

impl RestCatalog {
    /// Connects: fetches an OAuth2 token when the options give client credentials, then the
    /// catalog's configuration (`GET /v1/config`). Each call, this one included, ends within
    /// `deadline`.
    pub async fn connect(options: &CatalogOptions, deadline: Duration) -> Result<RestCatalog> {
        let http = super::http_client("the Iceberg REST catalog", deadline)?;
        let headers = super::sensitive_headers(&options.headers)?;
        let mut inner = Inner {
            http,
            uri: options.uri.clone(),
            prefix: options.prefix.clone(),
            auth: Authenticator::new(&options.auth, &options.uri)?,
            headers,
            deadline,
            endpoints: None,
            redactor: Redactor::new(options.secrets()),
        };

        let mut url = inner.url("v1/config");
        if let Some(warehouse) = &options.warehouse {
            url.query_pairs_mut().append_pair("warehouse", warehouse);
        }
        let answer = inner
            .within(
                Op::Config,
                &AtomicBool::new(false),
                inner.call(Op::Config, Method::GET, url, None, None, None),
            )
            .await?;
        if !answer.status.is_success() {
            return Err(inner.failure(Op::Config, &answer));
        }
        let config: ConfigWire = serde_json::from_slice(&answer.body).map_err(|e| {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "Iceberg REST catalog {}: its configuration is not a CatalogConfig: {}",
                    inner.uri,
                    clean_message(&e.to_string(), MAX_MESSAGE_CHARS)
                ),
            )
        })?;
        let string = |map: &BTreeMap<String, Value>, key: &str| {
            map.get(key).and_then(Value::as_str).map(str::to_string)
        };
        // Defaults, then the client's options, then overrides (the spec's order).
        let prefix = string(&config.overrides, "prefix")
            .or_else(|| inner.prefix.clone())
            .or_else(|| string(&config.defaults, "prefix"))
            .filter(|p| !p.trim_matches('/').is_empty());
        inner.prefix = match prefix {
            Some(p) => Some(check_prefix(&p).map_err(|why| {
                Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "Iceberg REST catalog {}: the prefix its configuration gives {why}",
                        inner.uri
                    ),
                )
            })?),
            None => None,
        };
        inner.endpoints = config.endpoints.map(|e| {
            e.into_iter()
                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect()
        });
        for needed in [LOAD_TABLE, COMMIT_TABLE] {
            inner.supports(needed)?;
        }
        tracing::info!(
            uri = %inner.uri,
            prefix = inner.prefix.as_deref().unwrap_or(""),
            auth = %inner.auth.describe(),
            "connected to the Iceberg REST catalog"
        );
        Ok(RestCatalog {
            inner: Arc::new(inner),
        })
    }

    /// The table `database.table` (namespace `[database]`).
    pub fn table(&self, database: &str, table: &str) -> RestTable {
        RestTable {
            catalog: self.clone(),
            database: database.to_string(),
            table: table.to_string(),
            token: Arc::new(Mutex::new(None)),
        }
    }

    /// The catalog's base URI (for logs: it holds no secret).
    pub fn uri(&self) -> &str {
        &self.inner.uri
    }
}

impl Inner {
    /// `path` under the base URI.
    fn url(&self, path: &str) -> Url {
        // The base URI was parsed when the options were, and the path is made of encoded
        // segments, so this cannot fail.
        Url::parse(&format!("{}/{path}", self.uri)).expect("a valid catalog URL")
    }

    /// `v1/{prefix}/` + `rest`.
    fn v1(&self, rest: &str) -> Url {
        match &self.prefix {
            Some(p) => self.url(&format!("v1/{p}/{rest}")),
            None => self.url(&format!("v1/{rest}")),
        }
    }

    fn supports(&self, endpoint: &str) -> Result<()> {
        match &self.endpoints {
            Some(served) if !served.contains(endpoint) => Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "Iceberg REST catalog {} does not serve {endpoint} (it lists the endpoints it serves in /v1/config)",
                    self.uri
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The error for a non-success answer, with secrets redacted.
    fn failure(&self, op: Op, answer: &Answer) -> Error {
        let e = status_error(op, answer.status, &answer.body, &self.uri);
        let message = if answer.status == StatusCode::UNAUTHORIZED
            && matches!(self.auth, Authenticator::None)
        {
            format!(
                "Iceberg REST catalog {} requires a credential (set credential or token): {}",
                self.uri,
                error_detail(answer.status, &answer.body).text
            )
        } else {
            e.message().to_string()
        };
        Error::new(e.kind(), self.redactor.apply(message))
    }

    /// Sends one request (and, after a 401 or 419, once more with a new token) and reads the
    /// answer up to its bound. `sent` turns true once the request may have left the host.
    /// Non-success statuses are returned as answers, for the caller to map.
    pub(crate) async fn call(
        &self,
        op: Op,
        method: Method,
        url: Url,
        body: Option<Bytes>,
        table_token: Option<&Mutex<Option<HeaderValue>>>,
        sent: Option<&AtomicBool>,
    ) -> Result<Answer> {
        let started = Instant::now();
        let mut retried = false;
        loop {
            let table_auth =
                table_token.and_then(|t| t.lock().unwrap_or_else(|e| e.into_inner()).clone());
            let authorization = match &table_auth {
                Some(t) => Some(t.clone()),
                None => self.auth.header(self).await?,
            };
            let mut request = self
                .http
                .request(method.clone(), url.clone())
                .headers(self.headers.clone());
            if let Some(a) = &authorization {
                request = request.header(AUTHORIZATION, a.clone());
            }
            if let Some(b) = &body {
                request = request
                    .header(CONTENT_TYPE, "application/json")
                    .body(b.clone());
            }
            if let Some(sent) = sent {
                sent.store(true, Ordering::SeqCst);
            }
            let response = request.send().await.map_err(|e| self.transport(op, &e))?;
            let status = response.status();
            tracing::debug!(
                op = op.what(),
                path = url.path(),
                status = status.as_u16(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "Iceberg REST catalog call"
            );
            if matches!(status.as_u16(), 401 | 419) && !retried {
                // A table-scoped token is dropped for the catalog's own; an OAuth2 token is
                // fetched again. A static token or basic credentials would fail the same way.
                let retry = if table_auth.is_some() {
                    if let Some(t) = table_token {
                        *t.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    }
                    true
                } else {
                    match &authorization {
                        Some(a) => self.auth.invalidate(a).await,
                        None => false,
                    }
                };
                if retry {
                    retried = true;
                    if let Some(sent) = sent {
                        // Refused with 401: not applied.
                        sent.store(false, Ordering::SeqCst);
                    }
                    continue;
                }
            }
            let (limit, truncate) = match (status.is_success(), op) {
                (false, _) => (MAX_ERROR_BODY_BYTES, true),
                (true, Op::Config) => (MAX_CONFIG_BYTES, false),
                (true, Op::Token) => (MAX_TOKEN_RESPONSE_BYTES, false),
                (true, _) => (MAX_RESPONSE_BYTES, false),
            };
            let body = match read_body(response, limit, truncate).await {
                Ok(b) => b,
                // An error answer cut short: its status says what happened.
                Err(BodyError::Transport(_)) if !status.is_success() => Bytes::new(),
                Err(BodyError::Transport(e)) => {
                    let e = self.transport(op, &e);
                    return Err(if status.is_success() && op.outcome_may_be_unknown() {
                        applied_but(op, &self.uri, e.message())
                    } else {
                        e
                    });
                }
                Err(BodyError::TooLarge) => {
                    let why = format!("its answer is larger than {limit} bytes");
                    return Err(if status.is_success() && op.outcome_may_be_unknown() {
                        applied_but(op, &self.uri, &why)
                    } else {
                        Error::new(
                            ErrorKind::Protocol,
                            format!("Iceberg REST catalog {}: {}: {why}", self.uri, op.what()),
                        )
                    });
                }
            };
            return Ok(Answer { status, body });
        }
    }

    fn transport(&self, op: Op, e: &reqwest::Error) -> Error {
        let e = transport_error(op, e, &self.uri, self.deadline);
        Error::new(e.kind(), self.redactor.apply(e.message().to_string()))
    }

    /// Runs `call` under the deadline ([`super::within`]).
    async fn within<T>(
        &self,
        op: Op,
        sent: &AtomicBool,
        call: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        super::within(
            &format!("Iceberg REST catalog {}", self.uri),
            op.what(),
            op.outcome_may_be_unknown(),
            self.deadline,
            sent,
            call,
        )
        .await
    }
}

/// A success answer that cannot be used: the change *was* applied (the catalog said so), but
/// the caller cannot know the new state, so it must keep every file as for an unknown outcome.
fn applied_but(op: Op, uri: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::CommitUnknown,
        format!(
            "Iceberg REST catalog {uri} accepted the {} but its answer cannot be used ({why}); treat the outcome as unknown",
            op.what()
        ),
    )
}

/// One table of a [`RestCatalog`]: the capability a plugin's `table-catalog` import is
/// scoped to.
pub struct RestTable {
    catalog: RestCatalog,
    database: String,
    table: String,
    /// A table-scoped bearer token the catalog answered in a table's `config`.
    token: Arc<Mutex<Option<HeaderValue>>>,
}

impl fmt::Debug for RestTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestTable")
            .field("uri", &self.catalog.inner.uri)
            .field("database", &self.database)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// `LoadTableResult` / `CommitTableResponse`, without the metadata (sliced separately).
#[derive(Deserialize)]
struct TableWire {
    #[serde(rename = "metadata-location")]
    metadata_location: Option<String>,
    #[allow(dead_code)]
    metadata: IgnoredAny,
    #[serde(default)]
    config: Option<BTreeMap<String, Value>>,
    #[serde(rename = "storage-credentials", default)]
    storage_credentials: Option<Vec<StorageCredentialWire>>,
}

#[derive(Deserialize)]
struct StorageCredentialWire {
    prefix: String,
    config: BTreeMap<String, Value>,
}

/// A config map's entries as strings (the spec says strings; a number or a boolean some
/// server sends is kept as its JSON text, anything else dropped).
fn strings(map: BTreeMap<String, Value>) -> impl Iterator<Item = (String, String)> {
    map.into_iter().filter_map(|(k, v)| match v {
        Value::String(s) => Some((k, s)),
        Value::Bool(_) | Value::Number(_) => Some((k, v.to_string())),
        _ => None,
    })
}

/// Config keys that authenticate to the catalog rather than configure storage.
fn is_table_auth_key(key: &str) -> bool {
    key == "token" || key.starts_with("urn:ietf:params:oauth:token-type:")
}

/// Parses a table answer into the table and its table-scoped token, if any.
fn parse_table(body: &Bytes) -> std::result::Result<(LoadedTable, Option<String>), String> {
    let wire: TableWire = serde_json::from_slice(body)
        .map_err(|e| format!("not a table answer: {}", clean_message(&e.to_string(), 200)))?;
    let metadata = top_level_member(body, "metadata").ok_or("it has no metadata object")?;
    if metadata.first() != Some(&b'{') {
        return Err("its metadata is not an object".into());
    }
    let head: MetadataHead = serde_json::from_slice(metadata)
        .map_err(|e| format!("its metadata: {}", clean_message(&e.to_string(), 200)))?;
    if head.table_uuid.is_empty() || head.format_version == 0 {
        return Err("its metadata has no table-uuid or format-version".into());
    }
    let location = head.location.ok_or("its metadata has no location")?;
    let table_location = TableLocation::new(&location).ok_or_else(|| {
        format!(
            "the table's location '{}' is not a location",
            clean_message(&location, 200)
        )
    })?;
    let metadata_location = wire
        .metadata_location
        .ok_or("it has no metadata-location (a staged table)")?;
    if !table_location.contains(&metadata_location) {
        return Err(format!(
            "its metadata-location '{}' is not under the table's location '{}'",
            clean_message(&metadata_location, 200),
            clean_message(&location, 200)
        ));
    }
    let mut config: BTreeMap<String, String> = strings(wire.config.unwrap_or_default()).collect();
    // The storage credential of the longest prefix of the table's location wins over config.
    let best = wire
        .storage_credentials
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| {
            let prefix = TableLocation::new(&c.prefix)?;
            let applies = prefix == table_location || prefix.contains(table_location.as_str());
            applies.then_some((prefix.as_str().len(), c.config))
        })
        .max_by_key(|(len, _)| *len);
    if let Some((_, credential)) = best {
        config.extend(strings(credential));
    }
    let token = config.remove("token");
    config.retain(|k, _| !is_table_auth_key(k));
    Ok((
        LoadedTable {
            metadata_location,
            metadata: body.slice_ref(metadata),
            location,
            uuid: head.table_uuid,
            config: config.into_iter().collect(),
        },
        token,
    ))
}

impl RestTable {
    fn inner(&self) -> &Inner {
        &self.catalog.inner
    }

    fn check_names(&self) -> Result<()> {
        for (what, name) in [("database", &self.database), ("table", &self.table)] {
            // A control character could be the namespace separator (0x1F) of a multi-level
            // namespace; `.` and `..` would be resolved away in a URL.
            if name.is_empty()
                || name == "."
                || name == ".."
                || name.len() > 1024
                || name.chars().any(char::is_control)
            {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "'{}' cannot be an Iceberg REST catalog {what} name",
                        clean_message(name, 80)
                    ),
                ));
            }
        }
        Ok(())
    }

    fn namespace_url(&self, rest: &str) -> Url {
        self.inner().v1(&format!(
            "namespaces/{}/{rest}",
            encode_segment(&self.database)
        ))
    }

    fn table_url(&self) -> Url {
        self.namespace_url(&format!("tables/{}", encode_segment(&self.table)))
    }

    fn name(&self) -> String {
        format!("{}.{}", self.database, self.table)
    }

    /// Keeps the table-scoped token of an answer for this table's later calls.
    fn keep_token(&self, token: Option<String>) {
        let Some(token) = token else {
            return;
        };
        match HeaderValue::from_str(&format!("Bearer {token}")) {
            Ok(mut v) => {
                v.set_sensitive(true);
                self.inner().redactor.add(&token);
                *self.token.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
            }
            Err(_) => tracing::warn!(
                table = %self.name(),
                "the Iceberg REST catalog answered a table token that is not a valid header value; it is not used"
            ),
        }
    }

    fn parse(&self, op: Op, body: &Bytes) -> Result<LoadedTable> {
        match parse_table(body) {
            Ok((table, token)) => {
                self.keep_token(token);
                Ok(table)
            }
            Err(why) => {
                let why = self.inner().redactor.apply(why);
                Err(if op.outcome_may_be_unknown() {
                    applied_but(op, &self.inner().uri, &why)
                } else {
                    Error::new(
                        ErrorKind::Protocol,
                        format!(
                            "Iceberg REST catalog {}: table {}: {why}",
                            self.inner().uri,
                            self.name()
                        ),
                    )
                })
            }
        }
    }

    /// The table's current state (`GET .../namespaces/{database}/tables/{table}`); `None` when
    /// the catalog answers 404 with an Iceberg error (no such table, or no such namespace).
    pub async fn load(&self) -> Result<Option<LoadedTable>> {
        self.check_names()?;
        let inner = self.inner();
        inner.supports(LOAD_TABLE)?;
        let sent = AtomicBool::new(false);
        inner
            .within(Op::Load, &sent, async {
                let answer = inner
                    .call(
                        Op::Load,
                        Method::GET,
                        self.table_url(),
                        None,
                        Some(&self.token),
                        Some(&sent),
                    )
                    .await?;
                if answer.status == StatusCode::NOT_FOUND {
                    let detail = error_detail(answer.status, &answer.body);
                    // A 404 that is not an Iceberg error is a wrong uri or prefix, not a
                    // missing table: saying "missing" would make the caller create it.
                    if detail.iceberg && detail.kind.as_deref() != Some("NotFoundException") {
                        return Ok(None);
                    }
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        inner.redactor.apply(format!(
                            "Iceberg REST catalog {} answered 404 to load-table {} without an Iceberg NoSuchTable error (check uri and prefix): {}",
                            inner.uri,
                            self.name(),
                            detail.text
                        )),
                    ));
                }
                if !answer.status.is_success() {
                    return Err(inner.failure(Op::Load, &answer));
                }
                self.parse(Op::Load, &answer.body).map(Some)
            })
            .await
    }

    /// Creates the table from a plugin's `CreateTableRequest` (checked by
    /// [`validate::create_request`]; the host sets `name`). Creates the namespace first when
    /// the catalog has none.
    pub async fn create(&self, request_json: &[u8]) -> Result<LoadedTable> {
        self.check_names()?;
        let request = validate::create_request(request_json, &self.table)?;
        let body = Bytes::from(serde_json::to_vec(&request).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("cannot encode a create request: {e}"),
            )
        })?);
        let inner = self.inner();
        inner.supports(CREATE_TABLE)?;
        let sent = AtomicBool::new(false);
        inner
            .within(Op::Create, &sent, async {
                let mut created_namespace = false;
                loop {
                    let answer = inner
                        .call(
                            Op::Create,
                            Method::POST,
                            self.namespace_url("tables"),
                            Some(body.clone()),
                            None,
                            Some(&sent),
                        )
                        .await?;
                    if answer.status == StatusCode::NOT_FOUND && !created_namespace {
                        let detail = error_detail(answer.status, &answer.body);
                        if detail.iceberg {
                            // Refused: this attempt was not applied.
                            sent.store(false, Ordering::SeqCst);
                            self.create_namespace().await?;
                            created_namespace = true;
                            continue;
                        }
                    }
                    if !answer.status.is_success() {
                        return Err(inner.failure(Op::Create, &answer));
                    }
                    let table = self.parse(Op::Create, &answer.body)?;
                    tracing::info!(
                        table = %self.name(),
                        location = %table.location,
                        "created the table in the Iceberg REST catalog"
                    );
                    return Ok(table);
                }
            })
            .await
    }

    /// `POST /v1/{prefix}/namespaces` for `[database]`; one that exists already is fine.
    async fn create_namespace(&self) -> Result<()> {
        let inner = self.inner();
        inner.supports(CREATE_NAMESPACE)?;
        let body = serde_json::json!({"namespace": [self.database], "properties": {}});
        let answer = inner
            .call(
                Op::CreateNamespace,
                Method::POST,
                inner.v1("namespaces"),
                Some(Bytes::from(body.to_string())),
                None,
                None,
            )
            .await?;
        if answer.status.is_success() || answer.status == StatusCode::CONFLICT {
            tracing::info!(
                namespace = %self.database,
                "created the namespace in the Iceberg REST catalog"
            );
            return Ok(());
        }
        Err(inner.failure(Op::CreateNamespace, &answer))
    }

    /// Applies a plugin's `updates` under its `requirements` (both checked by [`validate`]:
    /// bounded, whitelisted, files under `table_location`), with the host's
    /// `assert-table-uuid` for `expected_uuid` added. Answers the table's new state, checked to
    /// be the same table at the same location.
    pub async fn commit(
        &self,
        expected_uuid: &str,
        table_location: &str,
        requirements_json: &[u8],
        updates_json: &[u8],
    ) -> Result<LoadedTable> {
        self.check_names()?;
        if expected_uuid.is_empty() {
            return Err(Error::new(
                ErrorKind::Internal,
                "commit without a table UUID",
            ));
        }
        let requirements = validate::requirements(requirements_json, expected_uuid)?;
        let updates = validate::updates(updates_json, table_location)?;
        let location = TableLocation::new(table_location).ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                "the table's location is not a location",
            )
        })?;
        let body = serde_json::json!({
            "identifier": {"namespace": [self.database], "name": self.table},
            "requirements": requirements,
            "updates": updates,
        });
        let body = Bytes::from(serde_json::to_vec(&body).map_err(|e| {
            Error::new(ErrorKind::Internal, format!("cannot encode a commit: {e}"))
        })?);
        let inner = self.inner();
        inner.supports(COMMIT_TABLE)?;
        let sent = AtomicBool::new(false);
        inner
            .within(Op::Commit, &sent, async {
                let answer = inner
                    .call(
                        Op::Commit,
                        Method::POST,
                        self.table_url(),
                        Some(body),
                        Some(&self.token),
                        Some(&sent),
                    )
                    .await?;
                if !answer.status.is_success() {
                    return Err(inner.failure(Op::Commit, &answer));
                }
                let table = self.parse(Op::Commit, &answer.body)?;
                if table.uuid != expected_uuid
                    || TableLocation::new(&table.location).as_ref() != Some(&location)
                {
                    return Err(applied_but(
                        Op::Commit,
                        &inner.uri,
                        "it names another table or location than the one committed to",
                    ));
                }
                Ok(table)
            })
            .await
    }
}
