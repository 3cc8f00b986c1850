//! A minimal in-process Iceberg REST catalog for the client's tests: config with a prefix,
//! an OAuth2 token endpoint, namespaces, and tables that load, create and commit
//! (`assert-table-uuid` and `assert-ref-snapshot-id` checked, `add-snapshot` and
//! `set-snapshot-ref` applied). Answers can be forced per route (a 503, a plain HTML page, a
//! stall) to test failures.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

pub const CLIENT_ID: &str = "tiering";
pub const CLIENT_SECRET: &str = "client-secret-value";
pub const PREFIX: &str = "cat1";

/// A request the fake saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
    pub authorization: Option<String>,
    pub api_key: Option<String>,
    pub body: String,
}

/// A forced answer for the next request to `route` (token, config, load, create, namespace,
/// commit).
pub struct Forced {
    pub route: &'static str,
    pub status: u16,
    pub body: Vec<u8>,
    pub content_type: &'static str,
    pub delay: Duration,
}

pub struct Table {
    pub metadata: Value,
    pub version: u32,
}

#[derive(Default)]
pub struct State {
    pub requests: Vec<Seen>,
    pub issued: u32,
    pub valid_tokens: HashSet<String>,
    /// OAuth2 required (tokens from the token endpoint, or `static_token`).
    pub require_auth: bool,
    pub static_token: Option<String>,
    pub expires_in: Option<i64>,
    pub namespaces: BTreeSet<String>,
    pub tables: BTreeMap<String, Table>,
    pub forced: VecDeque<Forced>,
    /// A table-scoped token answered in every table's config.
    pub table_token: Option<String>,
}

pub struct Fake {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<State>>,
}

impl Fake {
    pub async fn start(state: State) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(state));
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| respond(state.clone(), req));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Fake { addr, state }
    }

    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn force(&self, route: &'static str, status: u16, body: &str) {
        self.force_raw(
            route,
            status,
            body.as_bytes().to_vec(),
            "application/json",
            Duration::ZERO,
        );
    }

    pub fn force_raw(
        &self,
        route: &'static str,
        status: u16,
        body: Vec<u8>,
        content_type: &'static str,
        delay: Duration,
    ) {
        self.state.lock().unwrap().forced.push_back(Forced {
            route,
            status,
            body,
            content_type,
            delay,
        });
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.lock().unwrap().requests.clone()
    }
}

fn answer(status: u16, body: Value) -> (u16, Vec<u8>, &'static str) {
    (status, body.to_string().into_bytes(), "application/json")
}

fn iceberg_error(status: u16, kind: &str, message: &str) -> (u16, Vec<u8>, &'static str) {
    answer(
        status,
        json!({"error": {"message": message, "type": kind, "code": status}}),
    )
}

fn table_answer(key: &str, table: &Table, token: &Option<String>) -> Value {
    let location = table.metadata["location"].as_str().unwrap().to_string();
    let mut config = json!({"s3.access-key-id": "vended-ak", "s3.secret-access-key": "vended-sk"});
    if let Some(t) = token {
        config["token"] = json!(t);
    }
    json!({
        "metadata-location": format!("{location}/metadata/{:05}-{key}.metadata.json", table.version),
        "metadata": table.metadata,
        "config": config,
        "storage-credentials": [
            {"prefix": "s3://lake/", "config": {"s3.access-key-id": "wide-ak"}},
            {"prefix": location, "config": {"s3.session-token": "narrow-st"}},
            {"prefix": "s3://elsewhere/", "config": {"s3.access-key-id": "other-ak"}}
        ]
    })
}

async fn respond(
    state: Arc<Mutex<State>>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let authorization = header("authorization");
    let api_key = header("x-api-key");
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8_lossy(&body).to_string();
    let seen = Seen {
        method: method.clone(),
        path: path.clone(),
        query,
        authorization: authorization.clone(),
        api_key,
        body: body.clone(),
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let route = match (method.as_str(), segments.as_slice()) {
        ("POST", ["v1", "oauth", "tokens"]) => "token",
        ("GET", ["v1", "config"]) => "config",
        ("POST", ["v1", PREFIX, "namespaces"]) => "namespace",
        ("POST", ["v1", PREFIX, "namespaces", _, "tables"]) => "create",
        ("GET", ["v1", PREFIX, "namespaces", _, "tables", _]) => "load",
        ("POST", ["v1", PREFIX, "namespaces", _, "tables", _]) => "commit",
        _ => "unknown",
    };
    let (forced, delay) = {
        let mut s = state.lock().unwrap();
        s.requests.push(seen);
        match s.forced.front() {
            Some(f) if f.route == route => {
                let f = s.forced.pop_front().unwrap();
                (Some((f.status, f.body, f.content_type)), f.delay)
            }
            _ => (None, Duration::ZERO),
        }
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let (status, body, content_type) = match forced {
        Some(f) => f,
        None => handle(&state, route, &segments, authorization.as_deref(), &body),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    Ok(response)
}

fn handle(
    state: &Mutex<State>,
    route: &str,
    segments: &[&str],
    authorization: Option<&str>,
    body: &str,
) -> (u16, Vec<u8>, &'static str) {
    let mut s = state.lock().unwrap();
    if route == "token" {
        let form: BTreeMap<String, String> = body
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), percent_decode(v)))
            .collect();
        if form.get("grant_type").map(String::as_str) != Some("client_credentials")
            || form.get("client_id").map(String::as_str) != Some(CLIENT_ID)
            || form.get("client_secret").map(String::as_str) != Some(CLIENT_SECRET)
            || form.get("scope").map(String::as_str) != Some("catalog")
        {
            return answer(
                401,
                json!({"error": "invalid_client", "error_description": "unknown client or wrong secret"}),
            );
        }
        s.issued += 1;
        let token = format!("issued-token-{}", s.issued);
        s.valid_tokens.insert(token.clone());
        let mut a = json!({"access_token": token, "token_type": "bearer", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"});
        if let Some(e) = s.expires_in {
            a["expires_in"] = json!(e);
        }
        return answer(200, a);
    }
    if s.require_auth {
        let ok = authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|t| {
                s.valid_tokens.contains(t)
                    || s.static_token.as_deref() == Some(t)
                    || s.table_token.as_deref() == Some(t)
            });
        if !ok {
            return iceberg_error(
                401,
                "NotAuthorizedException",
                "Not authorized: token rejected",
            );
        }
    }
    match (route, segments) {
        ("config", _) => answer(
            200,
            json!({"defaults": {"prefix": "ignored-default", "clients": "4"}, "overrides": {"prefix": PREFIX}}),
        ),
        ("namespace", _) => {
            let request: Value = serde_json::from_str(body).unwrap();
            let ns = request["namespace"][0].as_str().unwrap().to_string();
            if !s.namespaces.insert(ns.clone()) {
                return iceberg_error(409, "AlreadyExistsException", "Namespace already exists");
            }
            answer(200, json!({"namespace": [ns], "properties": {}}))
        }
        ("create", [_, _, _, ns, _]) => {
            let ns = percent_decode(ns);
            if !s.namespaces.contains(&ns) {
                return iceberg_error(
                    404,
                    "NoSuchNamespaceException",
                    &format!("Namespace does not exist: {ns}"),
                );
            }
            let request: Value = serde_json::from_str(body).unwrap();
            let name = request["name"].as_str().unwrap().to_string();
            let key = format!("{ns}.{name}");
            if s.tables.contains_key(&key) {
                return iceberg_error(
                    409,
                    "AlreadyExistsException",
                    &format!("Table already exists: {key}"),
                );
            }
            let uuid = format!("00000000-0000-4000-8000-{:012}", s.tables.len() + 1);
            let table = Table {
                metadata: json!({
                    "format-version": 2,
                    "table-uuid": uuid,
                    "location": format!("s3://lake/wh/{ns}/{name}"),
                    "last-updated-ms": 1,
                    "properties": request.get("properties").cloned().unwrap_or(json!({})),
                    "schemas": [request["schema"]],
                    "current-schema-id": 0,
                    "snapshots": [],
                    "refs": {},
                }),
                version: 0,
            };
            let a = table_answer(&key, &table, &s.table_token);
            s.tables.insert(key, table);
            answer(200, a)
        }
        ("load", [_, _, _, ns, _, t]) => {
            let (ns, t) = (percent_decode(ns), percent_decode(t));
            if !s.namespaces.contains(&ns) {
                return iceberg_error(
                    404,
                    "NoSuchNamespaceException",
                    &format!("Namespace does not exist: {ns}"),
                );
            }
            let key = format!("{ns}.{t}");
            match s.tables.get(&key) {
                Some(table) => answer(200, table_answer(&key, table, &s.table_token)),
                None => iceberg_error(
                    404,
                    "NoSuchTableException",
                    &format!("Table does not exist: {key}"),
                ),
            }
        }
        ("commit", [_, _, _, ns, _, t]) => {
            let key = format!("{}.{}", percent_decode(ns), percent_decode(t));
            let token = s.table_token.clone();
            let Some(table) = s.tables.get_mut(&key) else {
                return iceberg_error(
                    404,
                    "NoSuchTableException",
                    &format!("Table does not exist: {key}"),
                );
            };
            let request: Value = serde_json::from_str(body).unwrap();
            for r in request["requirements"].as_array().unwrap() {
                let holds = match r["type"].as_str().unwrap() {
                    "assert-table-uuid" => r["uuid"] == table.metadata["table-uuid"],
                    "assert-ref-snapshot-id" => {
                        let current = table.metadata["refs"]
                            .get(r["ref"].as_str().unwrap())
                            .map(|r| r["snapshot-id"].clone())
                            .unwrap_or(Value::Null);
                        current == r["snapshot-id"]
                    }
                    _ => true,
                };
                if !holds {
                    return iceberg_error(
                        409,
                        "CommitFailedException",
                        &format!("Requirement failed: {}", r["type"]),
                    );
                }
            }
            for u in request["updates"].as_array().unwrap() {
                match u["action"].as_str().unwrap() {
                    "add-snapshot" => table.metadata["snapshots"]
                        .as_array_mut()
                        .unwrap()
                        .push(u["snapshot"].clone()),
                    "set-snapshot-ref" => {
                        table.metadata["refs"][u["ref-name"].as_str().unwrap()] =
                            json!({"type": u["type"], "snapshot-id": u["snapshot-id"]});
                        if u["ref-name"] == "main" {
                            table.metadata["current-snapshot-id"] = u["snapshot-id"].clone();
                        }
                    }
                    "set-properties" => {
                        for (k, v) in u["updates"].as_object().unwrap() {
                            table.metadata["properties"][k] = v.clone();
                        }
                    }
                    _ => {}
                }
            }
            table.version += 1;
            let mut a = table_answer(&key, table, &token);
            // A CommitTableResponse has no config.
            a.as_object_mut().unwrap().remove("config");
            a.as_object_mut().unwrap().remove("storage-credentials");
            answer(200, a)
        }
        _ => (
            404,
            b"<html><body>Not Found</body></html>".to_vec(),
            "text/html",
        ),
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).to_string()
}
