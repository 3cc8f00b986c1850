//! An authenticating gate in front of the Iceberg REST catalog server, as a production
//! catalog (Polaris, Unity, Lakekeeper) stands: Apache Iceberg's `RESTCatalogServer` accepts
//! any caller, so the gate does what theirs do before a request reaches the catalog. It
//! issues bearer tokens for one OAuth2 client (`POST /v1/oauth/tokens`, grant type
//! `client_credentials`), answers 401 with an Iceberg error to anything else without a token
//! it issued, and can revoke every token ([`CatalogGate::revoke`]).
//!
//! It also holds a commit ([`CatalogGate::hold_commits`]) until the test lets it go, so a
//! rival's commit lands in between (a real race, decided by the catalog), and can lose the
//! answer to a commit the catalog applied ([`CatalogGate::lose_commit_answers`]). It records
//! the catalog's status for every commit ([`CatalogGate::commits`]).
//!
//! In front of Paimon's REST catalog server, which checks its own bearer token, the gate
//! forwards every request as it is ([`CatalogGate::forwarding`]) and only holds, loses and
//! records commits (`POST .../tables/<table>/commit`), or refuses everything once revoked.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::AUTHORIZATION;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::lossy_proxy::{Body, LoopbackServer, bad_gateway, send};

#[derive(Default)]
struct State {
    /// The catalog checks credentials itself: the gate issues no token and checks none.
    forwarding: bool,
    issued: HashSet<String>,
    revoked: bool,
    /// Commits still to hold, and those being held now.
    to_hold: usize,
    held: usize,
    to_lose: usize,
    commits: Vec<(u16, bool)>,
    refused: usize,
    /// Storage settings the gate vends in every table answer's `config`, as a catalog that
    /// vends credentials does ([`CatalogGate::vend`]).
    vended: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The gate; stopped when dropped.
pub struct CatalogGate {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
    release: Arc<Semaphore>,
}

/// A commit the gate forwarded: the catalog's status, and whether its answer was lost.
pub type Commit = (u16, bool);

impl CatalogGate {
    /// A gate on `127.0.0.1:<free port>` in front of the catalog at `upstream`
    /// (`http://host:port`), issuing tokens to `client_id` with `client_secret`.
    pub fn start(upstream: &str, client_id: &str, client_secret: &str) -> CatalogGate {
        Self::with_state(upstream, client_id, client_secret, State::default())
    }

    /// A gate in front of a catalog that checks credentials itself (Paimon's REST catalog
    /// server): requests pass as they are until [`Self::revoke`], which refuses every later one
    /// with a 401 in Paimon's `ErrorResponse` form.
    pub fn forwarding(upstream: &str) -> CatalogGate {
        let state = State {
            forwarding: true,
            ..State::default()
        };
        Self::with_state(upstream, "", "", state)
    }

    fn with_state(
        upstream: &str,
        client_id: &str,
        client_secret: &str,
        state: State,
    ) -> CatalogGate {
        let upstream = upstream
            .trim_end_matches('/')
            .strip_prefix("http://")
            .expect("the gate forwards to http:// only")
            .to_string();
        let state = Arc::new(Mutex::new(state));
        let release = Arc::new(Semaphore::new(0));
        let client = (client_id.to_string(), client_secret.to_string());
        let (shared, gate) = (state.clone(), release.clone());
        let server = LoopbackServer::start("catalog-gate", move |listener| {
            accept_loop(listener, upstream, client, shared, gate)
        });
        CatalogGate {
            server,
            state,
            release,
        }
    }

    /// `http://127.0.0.1:<port>`: the `uri` to give the host.
    pub fn uri(&self) -> &str {
        self.server.endpoint()
    }

    /// Every token issued so far stops working, and no new one is issued.
    pub fn revoke(&self) {
        self.lock().revoked = true;
    }

    /// Holds the next `n` commits until [`Self::release`].
    pub fn hold_commits(&self, n: usize) {
        self.lock().to_hold += n;
    }

    /// Commits being held now.
    pub fn held(&self) -> usize {
        self.lock().held
    }

    /// Lets one held commit go to the catalog.
    pub fn release(&self) {
        self.release.add_permits(1);
    }

    /// Loses the answers to the next `n` commits: each is applied by the catalog (or
    /// refused), then the client's connection is closed without an answer.
    pub fn lose_commit_answers(&self, n: usize) {
        self.lock().to_lose += n;
    }

    /// From now on, every table answer (load, create, commit) carries `config` in its
    /// `config`, as an Iceberg REST catalog vending storage credentials for the table does.
    pub fn vend(&self, config: &[(&str, &str)]) {
        self.lock().vended = Some(
            config
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
                .collect(),
        );
    }

    /// Every commit forwarded, in order.
    pub fn commits(&self) -> Vec<Commit> {
        self.lock().commits.clone()
    }

    /// Requests refused for want of a valid token (401).
    pub fn refused(&self) -> usize {
        self.lock().refused
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: String,
    client: (String, String),
    state: Arc<Mutex<State>>,
    release: Arc<Semaphore>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (upstream, client, state, release) = (
            upstream.clone(),
            client.clone(),
            state.clone(),
            release.clone(),
        );
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                handle(
                    req,
                    upstream.clone(),
                    client.clone(),
                    state.clone(),
                    release.clone(),
                )
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn json(status: StatusCode, body: serde_json::Value) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    r
}

fn not_authorized(why: &str) -> Response<Body> {
    json(
        StatusCode::UNAUTHORIZED,
        serde_json::json!({"error": {"message": why, "type": "NotAuthorizedException", "code": 401}}),
    )
}

/// The error that makes hyper close the client's connection without answering.
#[derive(Debug)]
struct AnswerLost;

impl std::fmt::Display for AnswerLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the answer to a commit is lost on purpose")
    }
}

impl std::error::Error for AnswerLost {}

/// A commit: Iceberg's `POST /v1/[prefix/]namespaces/<ns>/tables/<table>`, Paimon's
/// `POST /v1/<prefix>/databases/<db>/tables/<table>/commit`.
fn is_commit(method: &Method, path: &str) -> bool {
    let Some((before, _)) = path.rsplit_once('/') else {
        return false;
    };
    let iceberg = before.ends_with("/tables") && before.contains("/namespaces/");
    let paimon = path.ends_with("/commit") && path.contains("/databases/");
    method == Method::POST && (iceberg || paimon)
}

async fn handle(
    req: Request<Incoming>,
    upstream: String,
    (client_id, client_secret): (String, String),
    state: Arc<Mutex<State>>,
    release: Arc<Semaphore>,
) -> Result<Response<Body>, Box<dyn std::error::Error + Send + Sync>> {
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    if path.ends_with("/oauth/tokens") {
        let form: Vec<(String, String)> = url_form(&body);
        let get = |k: &str| form.iter().find(|(f, _)| f == k).map(|(_, v)| v.as_str());
        let mut s = lock();
        if s.revoked
            || get("grant_type") != Some("client_credentials")
            || get("client_id") != Some(client_id.as_str())
            || get("client_secret") != Some(client_secret.as_str())
        {
            s.refused += 1;
            return Ok(json(
                StatusCode::UNAUTHORIZED,
                serde_json::json!({"error": "invalid_client", "error_description": "Credentials given were invalid"}),
            ));
        }
        let token = format!("gate-token-{}", s.issued.len() + 1);
        s.issued.insert(token.clone());
        return Ok(json(
            StatusCode::OK,
            serde_json::json!({"access_token": token, "token_type": "bearer", "expires_in": 3600,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}),
        ));
    }
    if lock().forwarding {
        let mut s = lock();
        if s.revoked {
            s.refused += 1;
            return Ok(json(
                StatusCode::UNAUTHORIZED,
                serde_json::json!({"message": "Not authorized: the token was revoked", "code": 401}),
            ));
        }
    } else if !has_valid_token(&parts, &state) {
        return Ok(not_authorized("Not authorized: no valid token"));
    }
    forward(method, path, parts, body, upstream, state, release).await
}

/// Whether the request carries a token the gate issued and did not [`CatalogGate::revoke`];
/// counts it as refused otherwise.
fn has_valid_token(parts: &hyper::http::request::Parts, state: &Mutex<State>) -> bool {
    let token = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    let valid = token.is_some_and(|t| s.issued.contains(&t)) && !s.revoked;
    if !valid {
        s.refused += 1;
    }
    valid
}

/// Sends a request on to the catalog: a commit held, answered or lost as the test asked.
async fn forward(
    method: Method,
    path: String,
    parts: hyper::http::request::Parts,
    body: Bytes,
    upstream: String,
    state: Arc<Mutex<State>>,
    release: Arc<Semaphore>,
) -> Result<Response<Body>, Box<dyn std::error::Error + Send + Sync>> {
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    let commit = is_commit(&method, &path);
    if commit {
        let hold = {
            let mut s = lock();
            let hold = s.to_hold > 0;
            if hold {
                s.to_hold -= 1;
                s.held += 1;
            }
            hold
        };
        if hold {
            release.acquire().await?.forget();
            lock().held -= 1;
        }
    }
    let lose = commit && {
        let mut s = lock();
        let lose = s.to_lose > 0;
        if lose {
            s.to_lose -= 1;
        }
        lose
    };
    let response = match send(&upstream, Request::from_parts(parts, Full::new(body))).await {
        Ok(r) => r,
        Err(e) => return Ok(bad_gateway(&e)),
    };
    if commit {
        lock().commits.push((response.status().as_u16(), lose));
    }
    if lose {
        let _ = response.into_body().collect().await;
        return Err(Box::new(AnswerLost));
    }
    let vended = lock().vended.clone();
    let (mut parts, body) = response.into_parts();
    match vended {
        // An Iceberg table answer (`LoadTableResult`): its `config` gets the vended settings.
        Some(config) if parts.status == StatusCode::OK && path.contains("/tables") => {
            let bytes = body.collect().await?.to_bytes();
            let mut answer: serde_json::Value = serde_json::from_slice(&bytes)?;
            if answer.get("metadata").is_some() {
                let target = answer
                    .as_object_mut()
                    .unwrap()
                    .entry("config")
                    .or_insert_with(|| serde_json::json!({}));
                if let Some(target) = target.as_object_mut() {
                    target.extend(config);
                }
            }
            let bytes = Bytes::from(answer.to_string());
            parts.headers.remove(hyper::header::CONTENT_LENGTH);
            parts.headers.remove(hyper::header::TRANSFER_ENCODING);
            Ok(Response::from_parts(
                parts,
                Full::new(bytes)
                    .map_err(|never: Infallible| match never {})
                    .boxed(),
            ))
        }
        _ => Ok(Response::from_parts(parts, body.boxed())),
    }
}

/// `application/x-www-form-urlencoded` pairs.
fn url_form(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body).into_owned().collect()
}
