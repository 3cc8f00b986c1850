//! The Glue client against a tiny in-process Glue (`GetTable`, `UpdateTable` under
//! `VersionId`), which checks every request's AWS Signature Version 4 as AWS does: options,
//! signing, pointers, swaps, lost races, unknown outcomes, refused credentials and every
//! change a hostile plugin could try through a swap.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;

use super::glue::*;
use super::options::{LakeCatalog, Secret};
use super::pointer::*;
use super::validate::TableLocation;
use crate::error::ErrorKind;
use crate::plugin::storage::ScopedStorage;

const KEY_ID: &str = "AKIAFAKEGLUE0000001";
const SECRET: &str = "glue-secret-access-key-value";
const TOKEN: &str = "glue-session-token-value";
const UUID: &str = "6f0c3b54-3f3c-4a58-9a43-2d9bd1b3e7a1";

fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn no_env(_: &str) -> Option<String> {
    None
}

// ---- options ----------------------------------------------------------------------------

#[test]
fn options_follow_iceberg_and_pyiceberg_names() {
    let o = GlueOptions::parse(
        &opts(&[
            ("type", "glue"),
            ("glue.endpoint", "http://127.0.0.1:9900/"),
            ("glue.id", "123456789012"),
            ("client.region", "eu-west-1"),
            ("glue.access-key-id", KEY_ID),
            ("glue.secret-access-key", SECRET),
            ("glue.session-token", TOKEN),
            ("client.access-key-id", "AKIAOTHER"),
            ("client.secret-access-key", "other-secret"),
            ("glue.skip-archive", "false"),
        ]),
        &no_env,
    )
    .unwrap();
    assert_eq!(o.endpoint, "http://127.0.0.1:9900");
    assert_eq!(o.region, "eu-west-1");
    assert_eq!(o.catalog_id.as_deref(), Some("123456789012"));
    assert!(!o.skip_archive);
    assert_eq!(
        o.credentials.access_key_id, KEY_ID,
        "glue.* wins over client.*"
    );
    assert_eq!(o.credentials.secret_access_key.expose(), SECRET);
    assert_eq!(o.credentials_from, "glue.access-key-id");
    let shown = format!("{o:?}");
    assert!(!shown.contains(SECRET) && !shown.contains(TOKEN), "{shown}");
    assert!(shown.contains(KEY_ID), "{shown}");

    // Defaults: AWS's endpoint of the region; credentials and region from the environment.
    let env = |name: &str| match name {
        "AWS_ACCESS_KEY_ID" => Some("AKIAENV".to_string()),
        "AWS_SECRET_ACCESS_KEY" => Some("env-secret".to_string()),
        "AWS_REGION" => Some("us-east-2".to_string()),
        _ => None,
    };
    let o = GlueOptions::parse(&opts(&[("type", "glue")]), &env).unwrap();
    assert_eq!(o.endpoint, "https://glue.us-east-2.amazonaws.com");
    assert_eq!(o.credentials.access_key_id, "AKIAENV");
    assert!(o.credentials.session_token.is_none());
    assert!(o.skip_archive, "Java's default");
    let o = GlueOptions::parse(
        &opts(&[
            ("glue.region", "cn-north-1"),
            ("client.region", "us-east-1"),
            ("client.access-key-id", "AKIACLIENT"),
            ("client.secret-access-key", "client-secret"),
            (
                "client.credentials-provider",
                "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
            ),
        ]),
        &env,
    )
    .unwrap();
    assert_eq!(o.endpoint, "https://glue.cn-north-1.amazonaws.com.cn");
    assert_eq!(o.credentials.access_key_id, "AKIACLIENT");

    // The catalog of a table's options.
    let lake = opts(&[
        ("type", "glue"),
        ("warehouse", "s3://b/wh"),
        ("client.region", "us-east-1"),
        ("glue.access-key-id", KEY_ID),
        ("glue.secret-access-key", SECRET),
    ]);
    assert!(matches!(
        LakeCatalog::for_format("iceberg", &lake).unwrap(),
        Some(LakeCatalog::Glue(_))
    ));
    assert!(
        LakeCatalog::for_format("paimon", &lake).unwrap().is_none(),
        "another format's options are not Glue's"
    );
    let lake = opts(&[
        ("catalog-impl", GLUE_CATALOG_IMPL),
        ("client.region", "us-east-1"),
        ("glue.access-key-id", KEY_ID),
        ("glue.secret-access-key", SECRET),
    ]);
    assert!(matches!(
        LakeCatalog::for_format("iceberg", &lake).unwrap(),
        Some(LakeCatalog::Glue(_))
    ));
    for key in [
        "glue.endpoint",
        "glue.id",
        "glue.secret-access-key",
        "lock-impl",
        "lock.table",
    ] {
        assert!(super::CatalogOptions::is_catalog_key(key), "{key}");
    }
}

#[test]
fn refusals_are_one_line_naming_the_option_and_never_a_secret() {
    let base = [
        ("type", "glue"),
        ("client.region", "us-east-1"),
        ("glue.access-key-id", KEY_ID),
        ("glue.secret-access-key", SECRET),
    ];
    type Case<'a> = (&'a [(&'a str, &'a str)], ErrorKind, &'a str);
    let cases: &[Case] = &[
        (
            &[("glue.lakeformation-enabled", "true")],
            ErrorKind::Unsupported,
            "glue.lakeformation-enabled",
        ),
        (
            &[(
                "lock-impl",
                "org.apache.iceberg.aws.dynamodb.DynamoDbLockManager",
            )],
            ErrorKind::Unsupported,
            "lock-impl",
        ),
        (
            &[(
                "client.factory",
                "org.apache.iceberg.aws.AssumeRoleAwsClientFactory",
            )],
            ErrorKind::Unsupported,
            "client.factory",
        ),
        (
            &[("glue.profile-name", "prod")],
            ErrorKind::Unsupported,
            "glue.profile-name",
        ),
        (
            &[(
                "client.credentials-provider",
                "com.example.VaultCredentialsProvider",
            )],
            ErrorKind::Unsupported,
            "client.credentials-provider",
        ),
        (
            &[("glue.endpoint", "http://user:pw@h:1")],
            ErrorKind::Config,
            "user or password",
        ),
        (
            &[("glue.endpoint", "ftp://h/")],
            ErrorKind::Config,
            "http or https",
        ),
        (
            &[("glue.endpoint", "http://h:1/a b")],
            ErrorKind::Config,
            "glue.endpoint",
        ),
        (
            &[("client.region", "us east 1")],
            ErrorKind::Config,
            "not an AWS region",
        ),
        (
            &[("glue.skip-archive", "maybe")],
            ErrorKind::Config,
            "glue.skip-archive",
        ),
    ];
    for (extra, kind, needle) in cases {
        let mut o: Vec<(&str, &str)> = base.to_vec();
        o.extend_from_slice(extra);
        let e = GlueOptions::parse(&opts(&o), &no_env).unwrap_err();
        assert_eq!(e.kind(), *kind, "{extra:?}: {e}");
        assert!(e.message().contains(needle), "{extra:?}: {e}");
        assert!(!e.to_string().contains(SECRET), "{e}");
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
    }
    // Half a credential, none at all, no region.
    for (pairs, needle) in [
        (
            &[
                ("type", "glue"),
                ("client.region", "r"),
                ("glue.access-key-id", KEY_ID),
            ][..],
            "given together",
        ),
        (
            &[("type", "glue"), ("client.region", "r")][..],
            "glue.access-key-id and glue.secret-access-key are needed",
        ),
        (
            &[
                ("type", "glue"),
                ("glue.access-key-id", KEY_ID),
                ("glue.secret-access-key", SECRET),
            ][..],
            "client.region",
        ),
    ] {
        let e = GlueOptions::parse(&opts(pairs), &no_env).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config, "{e}");
        assert!(e.message().contains(needle), "{e}");
    }
    let e = LakeCatalog::for_format(
        "iceberg",
        &opts(&[("type", "glue"), ("catalog-impl", GLUE_CATALOG_IMPL)]),
    )
    .unwrap_err();
    assert!(e.message().contains("both given"), "{e}");
}

#[test]
fn only_the_host_chooses_the_glue_connection() {
    let host = BTreeMap::from([
        ("type".to_string(), "glue".to_string()),
        ("glue.endpoint".to_string(), "http://glue:1".to_string()),
        ("client.region".to_string(), "us-east-1".to_string()),
    ]);
    // The cluster's options copied into the table, the same as the host's.
    let same = opts(&[
        ("type", "glue"),
        ("glue.endpoint", "http://glue:1"),
        ("client.region", "us-east-1"),
        ("warehouse", "s3://b/wh"),
    ]);
    check_connection_is_hosts(&same, &host).unwrap();
    for (key, value) in [
        ("glue.endpoint", "http://attacker:80"),
        ("glue.id", "999999999999"),
        ("glue.access-key-id", "AKIASTOLEN"),
        ("client.credentials-provider", "x"),
    ] {
        let mut merged = same.clone();
        merged.push((key.to_string(), value.to_string()));
        let e = check_connection_is_hosts(&merged, &host).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config, "{key}");
        assert!(
            e.message()
                .contains(&format!("table.datalake.iceberg.{key}")),
            "{e}"
        );
        assert!(!e.message().contains(value), "the value is not echoed: {e}");
    }
    // A table that names a Glue catalog the host's options do not.
    let hadoop_host = BTreeMap::from([("warehouse".to_string(), "/wh".to_string())]);
    let e = check_connection_is_hosts(&same, &hadoop_host).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(e.message().contains("--datalake.iceberg.type=glue"), "{e}");
}

// ---- signing ----------------------------------------------------------------------------

fn aws_example_credentials() -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
        session_token: None,
    }
}

#[test]
fn signatures_match_aws_published_examples() {
    // The AWS Signature Version 4 test suite's get-vanilla.
    let auth = sigv4_authorization(
        &aws_example_credentials(),
        "us-east-1",
        "service",
        "20150830T123600Z",
        &ToSign {
            method: "GET",
            path: "/",
            query: "",
            headers: &[
                ("host", "example.amazonaws.com"),
                ("x-amz-date", "20150830T123600Z"),
            ],
            payload: b"",
        },
    );
    assert_eq!(
        auth,
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
         SignedHeaders=host;x-amz-date, \
         Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    );
    // The IAM ListUsers example of AWS's "Create a signed AWS API request".
    let auth = sigv4_authorization(
        &aws_example_credentials(),
        "us-east-1",
        "iam",
        "20150830T123600Z",
        &ToSign {
            method: "GET",
            path: "/",
            query: "Action=ListUsers&Version=2010-05-08",
            headers: &[
                (
                    "Content-Type",
                    "application/x-www-form-urlencoded; charset=utf-8",
                ),
                ("Host", "iam.amazonaws.com"),
                ("X-Amz-Date", "20150830T123600Z"),
            ],
            payload: b"",
        },
    );
    assert!(
        auth.ends_with(
            "SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        ),
        "{auth}"
    );
}

#[test]
fn amz_dates_are_utc_calendar_dates() {
    let at = |secs: u64| amz_date(UNIX_EPOCH + Duration::from_secs(secs));
    assert_eq!(at(0), ("19700101".into(), "19700101T000000Z".into()));
    assert_eq!(at(1_440_938_160).1, "20150830T123600Z");
    assert_eq!(at(1_709_164_800 + 3_599).1, "20240229T005959Z");
    assert_eq!(at(4_102_444_799).1, "20991231T235959Z");
}

#[test]
fn error_answers_of_every_shape_are_read() {
    let h = reqwest::header::HeaderMap::new();
    let d = error_detail(
        reqwest::StatusCode::BAD_REQUEST,
        &h,
        br#"{"__type":"com.amazonaws.glue#EntityNotFoundException","message":"Table t not found."}"#,
    );
    assert_eq!(d.code.as_deref(), Some("EntityNotFoundException"));
    assert_eq!(d.text, "EntityNotFoundException: Table t not found.");
    let xml = "<?xml version=\"1.0\"?>\n<ErrorResponse><Errors><Error><Code>SignatureDoesNotMatch</Code>\
               <Message>The request signature we calculated does not match</Message></Error></Errors></ErrorResponse>";
    let d = error_detail(reqwest::StatusCode::FORBIDDEN, &h, xml.as_bytes());
    assert_eq!(d.code.as_deref(), Some("SignatureDoesNotMatch"));
    let e = status_error(Op::GetTable, reqwest::StatusCode::FORBIDDEN, &d, "http://g");
    assert_eq!(e.kind(), ErrorKind::Authentication);
    assert!(e.message().contains("refused the credential"), "{e}");
    let mut h = reqwest::header::HeaderMap::new();
    h.insert(
        "x-amzn-errortype",
        "ThrottlingException:http://x/".parse().unwrap(),
    );
    let d = error_detail(
        reqwest::StatusCode::BAD_REQUEST,
        &h,
        b"<html>slow down</html>",
    );
    assert_eq!(d.code.as_deref(), Some("ThrottlingException"));
    let e = status_error(
        Op::UpdateTable,
        reqwest::StatusCode::BAD_REQUEST,
        &d,
        "http://g",
    );
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    let d = error_detail(
        reqwest::StatusCode::BAD_GATEWAY,
        &reqwest::header::HeaderMap::new(),
        b"",
    );
    assert_eq!(
        status_error(Op::UpdateTable, reqwest::StatusCode::BAD_GATEWAY, &d, "g").kind(),
        ErrorKind::CommitUnknown
    );
    assert_eq!(
        status_error(Op::GetTable, reqwest::StatusCode::BAD_GATEWAY, &d, "g").kind(),
        ErrorKind::Unavailable
    );
}

// ---- a tiny Glue ------------------------------------------------------------------------

/// A forced answer to the next call of an action.
struct Forced {
    target: &'static str,
    status: u16,
    body: String,
    /// Applied first (an update), then answered as forced.
    apply: bool,
    delay: Duration,
}

struct GlueTableState {
    version: u64,
    input: Map<String, Value>,
}

#[derive(Default)]
struct State {
    tables: BTreeMap<(String, String), GlueTableState>,
    /// Requests seen: (target, body).
    requests: Vec<(String, Value)>,
    forced: VecDeque<Forced>,
    /// Whether `UpdateTable`'s `VersionId` is checked (AWS does; moto 5.2.5 does not).
    honour_version_id: bool,
    /// Applied right before the next `UpdateTable`: a rival writer's pointer.
    rival_before_update: Option<String>,
}

struct FakeGlue {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

fn aws_error(status: u16, code: &str, message: &str) -> (u16, String) {
    (
        status,
        json!({"__type": code, "message": message}).to_string(),
    )
}

impl FakeGlue {
    async fn start() -> FakeGlue {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            honour_version_id: true,
            ..Default::default()
        }));
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
        FakeGlue { addr, state }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn force(&self, target: &'static str, status: u16, body: &str, apply: bool, delay: Duration) {
        self.state.lock().unwrap().forced.push_back(Forced {
            target,
            status,
            body: body.to_string(),
            apply,
            delay,
        });
    }

    fn put_table(&self, location: &str, file: &str) {
        let input = json!({
            "Name": "t",
            "Description": "kept by Iceberg",
            "TableType": "EXTERNAL_TABLE",
            "Owner": "someone",
            "Parameters": {"table_type": "ICEBERG", "metadata_location": format!("{location}/{file}"),
                "owner-note": "kept"},
            "StorageDescriptor": {"Location": location,
                "Columns": [{"Name": "id", "Type": "int", "Comment": "the key"}]},
        });
        self.state.lock().unwrap().tables.insert(
            ("db".into(), "t".into()),
            GlueTableState {
                version: 1,
                input: input.as_object().unwrap().clone(),
            },
        );
    }

    fn table(&self) -> (u64, Map<String, Value>) {
        let s = self.state.lock().unwrap();
        let t = &s.tables[&("db".to_string(), "t".to_string())];
        (t.version, t.input.clone())
    }

    fn pointer(&self) -> String {
        self.table().1["Parameters"]["metadata_location"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn updates(&self) -> usize {
        self.state
            .lock()
            .unwrap()
            .requests
            .iter()
            .filter(|(t, _)| t == "AWSGlue.UpdateTable")
            .count()
    }
}

/// Checks the request's signature as AWS does: over exactly the headers it names.
fn check_signature(req: &hyper::http::request::Parts, body: &[u8]) -> Result<(), (u16, String)> {
    let header = |n: &str| {
        req.headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let auth = header("authorization");
    let (credential, rest) = auth
        .strip_prefix("AWS4-HMAC-SHA256 Credential=")
        .and_then(|r| r.split_once(", SignedHeaders="))
        .ok_or_else(|| aws_error(400, "MissingAuthenticationTokenException", "no signature"))?;
    let (signed, _) = rest
        .split_once(", Signature=")
        .ok_or_else(|| aws_error(400, "IncompleteSignatureException", "no signature"))?;
    let mut scope = credential.split('/');
    let key_id = scope.next().unwrap_or("");
    if key_id != KEY_ID {
        return Err(aws_error(
            400,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ));
    }
    let _date = scope.next();
    let region = scope.next().unwrap_or("");
    let service = scope.next().unwrap_or("");
    let names: Vec<&str> = signed.split(';').collect();
    for needed in ["host", "x-amz-date", "x-amz-target", "content-type"] {
        if !names.contains(&needed) {
            return Err(aws_error(400, "InvalidSignatureException", needed));
        }
    }
    let values: Vec<(String, String)> = names.iter().map(|n| (n.to_string(), header(n))).collect();
    let pairs: Vec<(&str, &str)> = values
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let expected = sigv4_authorization(
        &AwsCredentials {
            access_key_id: KEY_ID.into(),
            secret_access_key: Secret::new(SECRET),
            session_token: None,
        },
        region,
        service,
        &header("x-amz-date"),
        &ToSign {
            method: req.method.as_str(),
            path: req.uri.path(),
            query: req.uri.query().unwrap_or(""),
            headers: &pairs,
            payload: body,
        },
    );
    if expected != auth || service != "glue" {
        return Err(aws_error(
            400,
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        ));
    }
    Ok(())
}

async fn respond(
    state: Arc<Mutex<State>>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let (status, answer, delay) = handle(&state, &parts, &target, &body);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.1")
        .body(Full::new(Bytes::from(answer)))
        .unwrap())
}

fn handle(
    state: &Mutex<State>,
    parts: &hyper::http::request::Parts,
    target: &str,
    body: &[u8],
) -> (u16, String, Duration) {
    if let Err((status, answer)) = check_signature(parts, body) {
        return (status, answer, Duration::ZERO);
    }
    let request: Value = serde_json::from_slice(body).unwrap();
    let mut s = state.lock().unwrap();
    s.requests.push((target.to_string(), request.clone()));
    let forced = match s.forced.front() {
        Some(f) if f.target == target => s.forced.pop_front(),
        _ => None,
    };
    if let Some(f) = &forced
        && !f.apply
    {
        return (f.status, f.body.clone(), f.delay);
    }
    let db = request["DatabaseName"].as_str().unwrap_or("").to_string();
    let (status, answer) = match target {
        "AWSGlue.GetTable" => {
            let name = request["Name"].as_str().unwrap_or("").to_string();
            match s.tables.get(&(db.clone(), name.clone())) {
                Some(t) => {
                    let mut table = t.input.clone();
                    table.insert("DatabaseName".into(), json!(db));
                    table.insert("VersionId".into(), json!(t.version.to_string()));
                    table.insert("CatalogId".into(), json!("123456789012"));
                    table.insert("CreateTime".into(), json!(1.7e9));
                    (200, json!({"Table": table}).to_string())
                }
                None => aws_error(
                    400,
                    "EntityNotFoundException",
                    &format!("Table {name} not found."),
                ),
            }
        }
        "AWSGlue.UpdateTable" => {
            let input = request["TableInput"].as_object().unwrap().clone();
            let name = input["Name"].as_str().unwrap().to_string();
            let honour = s.honour_version_id;
            let rival = s.rival_before_update.take();
            match s.tables.get_mut(&(db, name)) {
                None => aws_error(400, "EntityNotFoundException", "Table not found."),
                Some(t) => {
                    if let Some(rival) = rival {
                        t.input["Parameters"]["metadata_location"] = json!(rival);
                        t.version += 1;
                    }
                    let stale = request
                        .get("VersionId")
                        .and_then(Value::as_str)
                        .is_some_and(|v| v != t.version.to_string());
                    if honour && stale {
                        aws_error(
                            400,
                            "ConcurrentModificationException",
                            "Update table failed due to concurrent modifications.",
                        )
                    } else {
                        t.input = input;
                        t.version += 1;
                        (200, "{}".to_string())
                    }
                }
            }
        }
        other => aws_error(400, "UnknownOperationException", other),
    };
    match forced {
        Some(f) => (f.status, f.body, f.delay),
        None => (status, answer, Duration::ZERO),
    }
}

// ---- a table ----------------------------------------------------------------------------

struct Setup {
    glue: FakeGlue,
    table: PointerTable,
    storage: ScopedStorage,
    location: String,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn metadata(location: &str, extra: Value) -> Value {
    let mut m = json!({
        "format-version": 2,
        "table-uuid": UUID,
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": 1,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": true, "type": "int"}]}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {"write.format.default": "parquet"},
        "current-snapshot-id": -1,
        "refs": {},
        "snapshots": [],
        "snapshot-log": [],
        "metadata-log": [],
    });
    if let (Some(m), Value::Object(extra)) = (m.as_object_mut(), extra) {
        m.extend(extra);
    }
    m
}

fn options(endpoint: &str, secret: &str) -> GlueOptions {
    GlueOptions::parse(
        &opts(&[
            ("type", "glue"),
            ("glue.endpoint", endpoint),
            ("client.region", "us-east-1"),
            ("glue.access-key-id", KEY_ID),
            ("glue.secret-access-key", secret),
        ]),
        &no_env,
    )
    .unwrap()
}

async fn setup() -> Setup {
    let glue = FakeGlue::start().await;
    let dir = std::env::temp_dir().join(format!("glue-test-{}", uuid::Uuid::new_v4()));
    let location = format!("file://{}/db.db/t", dir.display());
    let storage =
        crate::warehouse::Warehouse::open(&dir.display().to_string(), &Default::default())
            .unwrap()
            .scope("db.db/t")
            .unwrap();
    let first = "metadata/00000-a.metadata.json";
    storage
        .put(
            first,
            serde_json::to_vec(&metadata(&location, json!({}))).unwrap(),
        )
        .await
        .unwrap();
    glue.put_table(&location, first);
    let catalog =
        GlueCatalog::new(&options(&glue.endpoint(), SECRET), Duration::from_secs(2)).unwrap();
    Setup {
        table: catalog.table("db", "t"),
        glue,
        storage,
        location,
        _dir: TempDir(dir),
    }
}

impl Setup {
    async fn resolved(&self) -> ResolvedPointerTable {
        let pointer = self.table.pointer().await.unwrap().unwrap();
        self.table.resolve(&self.storage, pointer).await.unwrap()
    }

    /// Writes the successor of the current metadata with one new snapshot (and `change` on
    /// top) as `file`.
    async fn write_successor(&self, file: &str, change: Value) {
        let current = self.glue.pointer();
        let snapshot = json!({"snapshot-id": 7, "sequence-number": 1, "timestamp-ms": 2,
            "manifest-list": format!("{}/metadata/snap-7-1-x.avro", self.location),
            "summary": {"operation": "append"}, "schema-id": 0});
        let mut m = metadata(
            &self.location,
            json!({
                "snapshots": [snapshot],
                "current-snapshot-id": 7,
                "last-sequence-number": 1,
                "refs": {"main": {"snapshot-id": 7, "type": "branch"}},
                "metadata-log": [{"timestamp-ms": 1, "metadata-file": current}],
            }),
        );
        if let (Some(m), Value::Object(change)) = (m.as_object_mut(), change) {
            m.extend(change);
        }
        self.storage
            .put(file, serde_json::to_vec(&m).unwrap())
            .await
            .unwrap();
    }
}

const FIRST: &str = "metadata/00000-a.metadata.json";
const NEXT: &str = "metadata/00001-b.metadata.json";

#[tokio::test]
async fn a_table_resolves_loads_and_swaps_as_java_commits() {
    let t = setup().await;
    let resolved = t.resolved().await;
    assert_eq!(resolved.uuid, UUID);
    assert_eq!(
        TableLocation::new(&resolved.pointer.location),
        TableLocation::new(&t.location)
    );
    assert_eq!(resolved.pointer.metadata_file(), FIRST);
    let (file, bytes) = t.table.load(&t.storage, &resolved).await.unwrap().unwrap();
    assert_eq!(file, FIRST);
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).unwrap()["table-uuid"],
        UUID
    );

    t.write_successor(NEXT, json!({})).await;
    t.table
        .swap(&t.storage, &resolved, FIRST, NEXT)
        .await
        .unwrap();
    let (version, input) = t.glue.table();
    assert_eq!(version, 2);
    let p = &input["Parameters"];
    assert_eq!(p["metadata_location"], format!("{}/{NEXT}", t.location));
    assert_eq!(
        p["previous_metadata_location"],
        format!("{}/{FIRST}", t.location)
    );
    assert_eq!(p["table_type"], "ICEBERG");
    assert_eq!(p["owner-note"], "kept", "other parameters stay");
    assert_eq!(input["Description"], "kept by Iceberg");
    assert_eq!(input["Owner"], "someone");
    assert_eq!(input["TableType"], "EXTERNAL_TABLE");
    assert_eq!(
        input["StorageDescriptor"]["Columns"][0]["Comment"], "the key",
        "the storage descriptor stays"
    );
    let (_, update) = t
        .glue
        .state
        .lock()
        .unwrap()
        .requests
        .last()
        .unwrap()
        .clone();
    assert_eq!(update["VersionId"], "1", "Glue's optimistic lock");
    assert_eq!(update["SkipArchive"], true);
    assert!(update["TableInput"].get("VersionId").is_none());
    assert!(
        update["TableInput"].get("CreateTime").is_none(),
        "only TableInput fields"
    );
    let (file, _) = t.table.load(&t.storage, &resolved).await.unwrap().unwrap();
    assert_eq!(file, NEXT);
}

#[tokio::test]
async fn a_moved_pointer_is_a_conflict_before_any_update() {
    let t = setup().await;
    let resolved = t.resolved().await;
    t.write_successor(NEXT, json!({})).await;
    t.write_successor("metadata/00001-rival.metadata.json", json!({}))
        .await;
    t.glue
        .state
        .lock()
        .unwrap()
        .tables
        .get_mut(&("db".into(), "t".into()))
        .unwrap()
        .input["Parameters"]["metadata_location"] =
        json!(format!("{}/metadata/00001-rival.metadata.json", t.location));
    let e = t
        .table
        .swap(&t.storage, &resolved, FIRST, NEXT)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.message().contains("another writer committed"), "{e}");
    assert_eq!(t.glue.updates(), 0);
}

#[tokio::test]
async fn a_rival_between_get_and_update_loses_us_the_race_by_version_id() {
    let t = setup().await;
    let resolved = t.resolved().await;
    t.write_successor(NEXT, json!({})).await;
    let rival = format!("{}/metadata/00001-rival.metadata.json", t.location);
    t.glue.state.lock().unwrap().rival_before_update = Some(rival.clone());
    let e = t
        .table
        .swap(&t.storage, &resolved, FIRST, NEXT)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(
        e.message().contains("ConcurrentModificationException"),
        "{e}"
    );
    assert_eq!(t.glue.pointer(), rival, "the rival's commit stands");

    // A Glue that ignores VersionId (moto 5.2.5) would let the later update overwrite the
    // rival's: the gap the check right before the update narrows, and that VersionId closes.
    let t = setup().await;
    let resolved = t.resolved().await;
    t.write_successor(NEXT, json!({})).await;
    {
        let mut s = t.glue.state.lock().unwrap();
        s.honour_version_id = false;
        s.rival_before_update = Some(rival);
    }
    t.table
        .swap(&t.storage, &resolved, FIRST, NEXT)
        .await
        .unwrap();
    assert!(t.glue.pointer().ends_with(NEXT));
}

#[tokio::test]
async fn unknown_outcomes_of_an_update_are_reported_as_such() {
    let t = setup().await;
    let resolved = t.resolved().await;
    t.write_successor(NEXT, json!({})).await;
    // A 500 after applying, a 503 before, an answer slower than the deadline.
    for (status, apply, delay) in [
        (500, true, Duration::ZERO),
        (503, false, Duration::ZERO),
        (200, true, Duration::from_secs(5)),
    ] {
        t.glue.force(
            "AWSGlue.UpdateTable",
            status,
            r#"{"__type":"InternalServiceException","message":"oops"}"#,
            apply,
            delay,
        );
        let expected = if apply { NEXT } else { FIRST };
        let e = t
            .table
            .swap(&t.storage, &resolved, FIRST, NEXT)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CommitUnknown, "{status}: {e}");
        assert!(t.glue.pointer().ends_with(expected), "{status}");
        // Back to the first file for the next case.
        t.glue.put_table(&t.location, FIRST);
    }
    // A failure to read the table is not an unknown outcome: nothing was sent.
    t.glue
        .force("AWSGlue.GetTable", 503, "", false, Duration::ZERO);
    let e = t
        .table
        .swap(&t.storage, &resolved, FIRST, NEXT)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
}

#[tokio::test]
async fn a_wrong_credential_is_one_line_without_the_secret() {
    let t = setup().await;
    let catalog = GlueCatalog::new(
        &options(&t.glue.endpoint(), "not-the-secret-value"),
        Duration::from_secs(2),
    )
    .unwrap();
    let e = catalog.table("db", "t").pointer().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Authentication, "{e}");
    assert!(e.message().contains("refused the credential"), "{e}");
    assert!(e.message().contains(&t.glue.endpoint()), "{e}");
    assert!(!e.to_string().contains("not-the-secret-value"), "{e}");
    assert_eq!(e.to_string().lines().count(), 1);
    assert_eq!(t.glue.updates(), 0);
}

#[tokio::test]
async fn tables_glue_does_not_have_or_that_are_not_iceberg() {
    let t = setup().await;
    assert!(t.table.pointer().await.unwrap().is_some());
    let catalog =
        GlueCatalog::new(&options(&t.glue.endpoint(), SECRET), Duration::from_secs(2)).unwrap();
    assert!(
        catalog
            .table("db", "nope")
            .pointer()
            .await
            .unwrap()
            .is_none()
    );
    t.glue
        .state
        .lock()
        .unwrap()
        .tables
        .get_mut(&("db".into(), "t".into()))
        .unwrap()
        .input["Parameters"]["table_type"] = json!("HIVE");
    let e = t.table.pointer().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(e.message().contains("not an Iceberg table"), "{e}");
    // Metadata outside the table's metadata/ folder (write.metadata.path) is refused.
    t.glue.put_table(&t.location, FIRST);
    t.glue
        .state
        .lock()
        .unwrap()
        .tables
        .get_mut(&("db".into(), "t".into()))
        .unwrap()
        .input["Parameters"]["metadata_location"] =
        json!("s3://elsewhere/meta/00000-a.metadata.json");
    let e = t.table.pointer().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    // A storage descriptor elsewhere than the metadata.
    t.glue.put_table(&t.location, FIRST);
    t.glue
        .state
        .lock()
        .unwrap()
        .tables
        .get_mut(&("db".into(), "t".into()))
        .unwrap()
        .input["StorageDescriptor"]["Location"] = json!("s3://other/t");
    let e = t.table.pointer().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
}

#[tokio::test]
async fn a_table_dropped_and_created_again_is_never_committed_to() {
    let t = setup().await;
    let resolved = t.resolved().await;
    let other = metadata(
        &t.location,
        json!({"table-uuid": "00000000-0000-4000-8000-000000000000"}),
    );
    t.storage
        .put(
            "metadata/00000-c.metadata.json",
            serde_json::to_vec(&other).unwrap(),
        )
        .await
        .unwrap();
    t.glue
        .put_table(&t.location, "metadata/00000-c.metadata.json");
    let e = t.table.load(&t.storage, &resolved).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.message().contains("dropped and created again"), "{e}");
}

#[tokio::test]
async fn a_hostile_swap_is_refused_before_any_update() {
    let t = setup().await;
    let resolved = t.resolved().await;
    let elsewhere = "s3://other-bucket/their-table";
    let cases: Vec<(&str, Value, &str)> = vec![
        ("location", json!({"location": elsewhere}), "location"),
        (
            "uuid",
            json!({"table-uuid": "00000000-0000-4000-8000-000000000000"}),
            "table-uuid",
        ),
        (
            "schema",
            json!({"schemas": [{"type": "struct", "schema-id": 0, "fields": []}]}),
            "'schemas'",
        ),
        ("format", json!({"format-version": 3}), "'format-version'"),
        (
            "manifest list",
            json!({"snapshots": [{"snapshot-id": 7, "sequence-number": 1, "timestamp-ms": 2,
                "manifest-list": format!("{elsewhere}/snap.avro"), "summary": {"operation": "append"}}]}),
            "manifest-list",
        ),
        (
            "inline manifests",
            json!({"snapshots": [{"snapshot-id": 7, "sequence-number": 1, "timestamp-ms": 2,
                "manifest-list": format!("{}/metadata/s.avro", t.location),
                "manifests": [format!("{elsewhere}/m.avro")]}]}),
            "inline",
        ),
        (
            "write path",
            json!({"properties": {"write.data.path": elsewhere}}),
            "write.data.path",
        ),
        (
            "metadata log",
            json!({"metadata-log": [{"timestamp-ms": 1, "metadata-file": format!("{elsewhere}/v1.metadata.json")}]}),
            "metadata-log",
        ),
        (
            "statistics",
            json!({"statistics": [{"snapshot-id": 7, "statistics-path": format!("{elsewhere}/s.puffin"),
                "file-size-in-bytes": 1, "file-footer-size-in-bytes": 1, "blob-metadata": []}]}),
            "statistics",
        ),
    ];
    for (what, change, needle) in cases {
        t.write_successor(NEXT, change).await;
        let e = t
            .table
            .swap(&t.storage, &resolved, FIRST, NEXT)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PluginLimit, "{what}: {e}");
        assert!(e.message().contains(needle), "{what}: {e}");
        assert_eq!(t.glue.updates(), 0, "{what}");
    }
    // A snapshot the table has already, changed.
    t.write_successor(NEXT, json!({})).await;
    t.table
        .swap(&t.storage, &resolved, FIRST, NEXT)
        .await
        .unwrap();
    let third = "metadata/00002-c.metadata.json";
    let current: Value =
        serde_json::from_slice(&t.storage.get(NEXT, 1 << 20).await.unwrap()).unwrap();
    let mut altered = current.clone();
    altered["snapshots"][0]["manifest-list"] = json!(format!("{}/metadata/other.avro", t.location));
    t.storage
        .put(third, serde_json::to_vec(&altered).unwrap())
        .await
        .unwrap();
    let e = t
        .table
        .swap(&t.storage, &resolved, NEXT, third)
        .await
        .unwrap_err();
    assert!(e.message().contains("changes snapshot 7"), "{e}");
    // Names that are not new metadata files of the table.
    for (expected, new) in [
        (FIRST, FIRST),
        (
            FIRST,
            "metadata/../../other/t/metadata/00001-x.metadata.json",
        ),
        (FIRST, "data/00001-x.metadata.json"),
        (FIRST, "metadata/00001-x.gz.metadata.json"),
        (FIRST, "metadata/sub/00001-x.metadata.json"),
        ("../x/metadata/00000-a.metadata.json", NEXT),
    ] {
        let e = t
            .table
            .swap(&t.storage, &resolved, expected, new)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PluginLimit, "{expected} → {new}: {e}");
    }
    assert_eq!(t.glue.updates(), 1);
    // A new file that does not exist.
    let e = t
        .table
        .swap(
            &t.storage,
            &resolved,
            NEXT,
            "metadata/00002-missing.metadata.json",
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}
