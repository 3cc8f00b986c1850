//! The client against the in-process fake catalog ([`super::fake`]), and the error mapping.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::fake::{CLIENT_ID, CLIENT_SECRET, Fake, PREFIX, State};
use super::rest::{Op, error_detail, read_body, status_error};
use super::{CatalogOptions, RestCatalog};
use crate::error::ErrorKind;

const DEADLINE: Duration = Duration::from_secs(10);
const API_KEY: &str = "api-key-value";

fn options(fake: &Fake, extra: &[(&str, &str)]) -> CatalogOptions {
    let mut pairs: Vec<(String, String)> = vec![
        ("type".into(), "rest".into()),
        ("uri".into(), fake.uri()),
        ("warehouse".into(), "s3://lake/wh".into()),
    ];
    pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    CatalogOptions::from_lake_options(&pairs).unwrap().unwrap()
}

fn credential() -> String {
    format!("{CLIENT_ID}:{CLIENT_SECRET}")
}

async fn oauth_fake() -> Fake {
    Fake::start(State {
        require_auth: true,
        expires_in: Some(3600),
        ..State::default()
    })
    .await
}

const CREATE: &str = r#"{"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a","required":false,"type":"int"}]},"properties":{"fluss.table":"yes"}}"#;

fn append(snapshot_id: i64, location: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    json!([
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": snapshot_id, "sequence-number": 1, "timestamp-ms": now,
            "manifest-list": format!("{location}/metadata/snap-{snapshot_id}.avro"),
            "summary": {"operation": "append", "fluss-offsets": "x"}}},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}
    ])
    .to_string()
}

fn assert_no_secret(text: &str) {
    for secret in [
        CLIENT_SECRET,
        API_KEY,
        "issued-token-",
        "static-token-value",
    ] {
        assert!(!text.contains(secret), "a secret in: {text}");
    }
}

#[tokio::test]
async fn oauth_config_prefix_load_create_and_commit() {
    let fake = oauth_fake().await;
    let cred = credential();
    let catalog = RestCatalog::connect(
        &options(
            &fake,
            &[("credential", &cred), ("header.X-Api-Key", API_KEY)],
        ),
        DEADLINE,
    )
    .await
    .unwrap();
    assert_no_secret(&format!("{catalog:?}"));

    // The token first (configured headers go to the catalog's own token endpoint), then the
    // configuration with the warehouse and the bearer token.
    let seen = fake.requests();
    assert_eq!(seen[0].path, "/v1/oauth/tokens");
    assert_eq!(seen[0].authorization, None);
    assert_eq!(seen[0].api_key.as_deref(), Some(API_KEY));
    assert!(
        seen[0].body.contains("grant_type=client_credentials"),
        "{}",
        seen[0].body
    );
    assert!(seen[0].body.contains("scope=catalog"), "{}", seen[0].body);
    assert_eq!(seen[1].path, "/v1/config");
    assert_eq!(seen[1].query, "warehouse=s3%3A%2F%2Flake%2Fwh");
    assert_eq!(
        seen[1].authorization.as_deref(),
        Some("Bearer issued-token-1")
    );
    assert_eq!(seen[1].api_key.as_deref(), Some(API_KEY));

    // No namespace yet: the table is missing.
    let table = catalog.table("db", "t");
    assert!(table.load().await.unwrap().is_none());
    assert_eq!(
        fake.requests().last().unwrap().path,
        format!("/v1/{PREFIX}/namespaces/db/tables/t")
    );

    // Create makes the namespace first.
    let created = table.create(CREATE.as_bytes()).await.unwrap();
    assert_eq!(created.location, "s3://lake/wh/db/t");
    assert_eq!(
        created.metadata_location,
        "s3://lake/wh/db/t/metadata/00000-db.t.metadata.json"
    );
    let metadata: Value = serde_json::from_slice(&created.metadata).unwrap();
    assert_eq!(metadata["table-uuid"], created.uuid.as_str());
    assert_eq!(metadata["properties"]["fluss.table"], "yes");
    // The config, overlaid by the storage credential of the longest matching prefix.
    assert_eq!(
        created.config,
        vec![
            ("s3.access-key-id".to_string(), "vended-ak".to_string()),
            ("s3.secret-access-key".to_string(), "vended-sk".to_string()),
            ("s3.session-token".to_string(), "narrow-st".to_string()),
        ]
    );
    let shown = format!("{created:?}");
    assert!(
        !shown.contains("vended-sk") && shown.contains("s3.secret-access-key"),
        "{shown}"
    );
    let paths: Vec<String> = fake
        .requests()
        .iter()
        .map(|s| format!("{} {}", s.method, s.path))
        .collect();
    assert_eq!(
        paths[paths.len() - 3..],
        [
            format!("POST /v1/{PREFIX}/namespaces/db/tables"),
            format!("POST /v1/{PREFIX}/namespaces"),
            format!("POST /v1/{PREFIX}/namespaces/db/tables"),
        ]
    );
    let create_body: Value = serde_json::from_str(&fake.requests().last().unwrap().body).unwrap();
    assert_eq!(create_body["name"], "t");
    // A second create: already exists.
    let e = table.create(CREATE.as_bytes()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");

    let loaded = table.load().await.unwrap().unwrap();
    assert_eq!(loaded.uuid, created.uuid);

    // A commit: the host's assert-table-uuid and the identifier are added.
    let requirements = r#"[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}]"#;
    let committed = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            requirements.as_bytes(),
            append(1, &loaded.location).as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(
        committed.metadata_location,
        "s3://lake/wh/db/t/metadata/00001-db.t.metadata.json"
    );
    let metadata: Value = serde_json::from_slice(&committed.metadata).unwrap();
    assert_eq!(metadata["current-snapshot-id"], 1);
    let sent: Value = serde_json::from_str(&fake.requests().last().unwrap().body).unwrap();
    assert_eq!(
        sent["identifier"],
        json!({"namespace": ["db"], "name": "t"})
    );
    assert_eq!(
        sent["requirements"].as_array().unwrap().last().unwrap(),
        &json!({"type": "assert-table-uuid", "uuid": loaded.uuid})
    );

    // The same requirement again: the table moved on.
    let e = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            requirements.as_bytes(),
            append(2, &loaded.location).as_bytes(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.message().contains("CommitFailedException"), "{e}");

    // A 503, and a plain 500 page: the outcome is unknown.
    let fresh = r#"[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":1}]"#;
    fake.force(
        "commit",
        503,
        r#"{"error":{"message":"Slow down","type":"ServiceUnavailableException","code":503}}"#,
    );
    let e = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            fresh.as_bytes(),
            append(2, &loaded.location).as_bytes(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CommitUnknown, "{e}");
    assert!(e.to_string().contains("commit outcome unknown"), "{e}");
    fake.force_raw(
        "commit",
        500,
        b"<html>\n<body>Internal Server Error\x07</body>\n</html>".to_vec(),
        "text/html",
        Duration::ZERO,
    );
    let e = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            fresh.as_bytes(),
            append(2, &loaded.location).as_bytes(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CommitUnknown, "{e}");
    assert!(e.message().contains("Internal Server Error"), "{e}");
    assert!(
        !e.message().contains('\n') && !e.message().contains('\x07'),
        "{e:?}"
    );

    // A 401: one new token, then the call succeeds.
    fake.force(
        "load",
        401,
        r#"{"error":{"message":"Token expired","type":"NotAuthorizedException","code":401}}"#,
    );
    assert!(table.load().await.unwrap().is_some());
    assert_eq!(fake.state.lock().unwrap().issued, 2);
    assert_eq!(
        fake.requests().last().unwrap().authorization.as_deref(),
        Some("Bearer issued-token-2")
    );

    // A catalog message echoing a secret or a token is redacted.
    fake.force(
        "load",
        400,
        &format!(
            r#"{{"error":{{"message":"bad secret {CLIENT_SECRET} and token issued-token-2 and key {API_KEY}","type":"BadRequestException","code":400}}}}"#
        ),
    );
    let e = table.load().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert_no_secret(&e.to_string());
    assert!(e.message().contains("<redacted>"), "{e}");

    // Nothing a plugin sends that is refused reaches the catalog.
    let before = fake.requests().len();
    let e = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            b"[]",
            br#"[{"action":"set-location","location":"s3://lake/wh/other"}]"#,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    let e = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            b"[]",
            append(3, "s3://lake/wh/db/other").as_bytes(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    let e = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            br#"[{"type":"assert-table-uuid","uuid":"someone-else"}]"#,
            b"[]",
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    let e = table
        .create(br#"{"schema":{},"location":"s3://lake/elsewhere"}"#)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert_eq!(fake.requests().len(), before);

    // A commit to a table dropped meanwhile.
    fake.state.lock().unwrap().tables.clear();
    let e = table
        .commit(&loaded.uuid, &loaded.location, b"[]", b"[]")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

#[tokio::test]
async fn refused_credentials_are_one_line_without_the_secret() {
    let fake = oauth_fake().await;
    let wrong = format!("{CLIENT_ID}:static-token-value");
    let e = RestCatalog::connect(&options(&fake, &[("credential", &wrong)]), DEADLINE)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Authentication, "{e}");
    assert!(
        e.message().starts_with(&format!(
            "Iceberg REST catalog {} refused the credential: invalid_client",
            fake.uri()
        )),
        "{e}"
    );
    assert_no_secret(&e.to_string());
    assert_eq!(e.to_string().lines().count(), 1);

    let e = RestCatalog::connect(
        &options(&fake, &[("token", "static-token-value")]),
        DEADLINE,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Authentication, "{e}");
    assert!(e.message().contains("refused the credential"), "{e}");
    assert_no_secret(&e.to_string());
    // A static token is not retried.
    assert_eq!(
        fake.requests()
            .iter()
            .filter(|s| s.path == "/v1/config")
            .count(),
        1
    );

    // No credential at all.
    let e = RestCatalog::connect(&options(&fake, &[]), DEADLINE)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Authentication, "{e}");
    assert!(e.message().contains("requires a credential"), "{e}");

    // A right static token works.
    fake.state.lock().unwrap().static_token = Some("static-token-value".into());
    let catalog = RestCatalog::connect(
        &options(&fake, &[("token", "static-token-value")]),
        DEADLINE,
    )
    .await
    .unwrap();
    fake.force(
        "load",
        403,
        r#"{"error":{"message":"no access to db","type":"ForbiddenException","code":403}}"#,
    );
    let e = catalog.table("db", "t").load().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Authentication, "{e}");
    assert!(e.message().contains("403"), "{e}");
}

#[tokio::test]
async fn deadlines_and_unreachable_catalogs() {
    let fake = Fake::start(State::default()).await;
    let deadline = Duration::from_millis(500);
    let catalog = RestCatalog::connect(&options(&fake, &[]), deadline)
        .await
        .unwrap();
    let table = catalog.table("db", "t");
    fake.state.lock().unwrap().namespaces.insert("db".into());
    let created = table.create(CREATE.as_bytes()).await.unwrap();

    // A commit whose answer never comes: unknown. A load: unavailable.
    fake.force_raw(
        "commit",
        200,
        b"{}".to_vec(),
        "application/json",
        Duration::from_secs(3),
    );
    let started = std::time::Instant::now();
    let e = table
        .commit(
            &created.uuid,
            &created.location,
            b"[]",
            append(1, &created.location).as_bytes(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CommitUnknown, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    fake.force_raw(
        "load",
        200,
        b"{}".to_vec(),
        "application/json",
        Duration::from_secs(3),
    );
    let e = table.load().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");

    // Nobody listening: the request was never sent.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let mut o = options(&fake, &[]);
    o.uri = format!("http://{closed}");
    let e = RestCatalog::connect(&o, deadline).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("cannot connect"), "{e}");
}

#[tokio::test]
async fn answers_are_bounded_and_checked() {
    let fake = Fake::start(State::default()).await;
    fake.state.lock().unwrap().namespaces.insert("db".into());
    let catalog = RestCatalog::connect(&options(&fake, &[]), DEADLINE)
        .await
        .unwrap();
    let table = catalog.table("db", "t");
    let created = table.create(CREATE.as_bytes()).await.unwrap();

    // Larger than the bound: refused, and for a commit the outcome is unknown (it was applied).
    let huge = vec![b' '; super::rest::MAX_RESPONSE_BYTES + 1];
    fake.force_raw(
        "load",
        200,
        huge.clone(),
        "application/json",
        Duration::ZERO,
    );
    let e = table.load().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("larger than"), "{e}");
    fake.force_raw("commit", 200, huge, "application/json", Duration::ZERO);
    let e = table
        .commit(
            &created.uuid,
            &created.location,
            b"[]",
            append(1, &created.location).as_bytes(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CommitUnknown, "{e}");

    // A metadata file outside the table's location.
    let outside = json!({
        "metadata-location": "s3://lake/wh/db/other/metadata/1.metadata.json",
        "metadata": {"format-version": 2, "table-uuid": created.uuid, "location": created.location},
    })
    .to_string();
    fake.force("load", 200, &outside);
    let e = table.load().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(
        e.message().contains("not under the table's location"),
        "{e}"
    );
    fake.force("commit", 200, &outside);
    let e = table
        .commit(&created.uuid, &created.location, b"[]", b"[]")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CommitUnknown, "{e}");

    // Success with another table's identity.
    let other = json!({
        "metadata-location": format!("{}/metadata/1.metadata.json", created.location),
        "metadata": {"format-version": 2, "table-uuid": "another-uuid", "location": created.location},
    })
    .to_string();
    fake.force("commit", 200, &other);
    let e = table
        .commit(&created.uuid, &created.location, b"[]", b"[]")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CommitUnknown, "{e}");

    // Not JSON, and a duplicated metadata member.
    fake.force_raw(
        "load",
        200,
        b"<html>ok</html>".to_vec(),
        "text/html",
        Duration::ZERO,
    );
    assert_eq!(table.load().await.unwrap_err().kind(), ErrorKind::Protocol);
    let twice = format!(
        r#"{{"metadata-location":"{0}/metadata/1.json","metadata":{{"format-version":2,"table-uuid":"a","location":"{0}"}},"metadata":{{"format-version":2,"table-uuid":"b","location":"s3://x/y"}}}}"#,
        created.location
    );
    fake.force("load", 200, &twice);
    assert_eq!(table.load().await.unwrap_err().kind(), ErrorKind::Protocol);

    // A 404 that is no Iceberg error (a wrong prefix behind a proxy) is not "no such table".
    fake.force_raw(
        "load",
        404,
        b"<html>Not Found</html>".to_vec(),
        "text/html",
        Duration::ZERO,
    );
    let e = table.load().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("check uri and prefix"), "{e}");
}

#[tokio::test]
async fn endpoints_redirects_and_table_tokens() {
    let fake = Fake::start(State::default()).await;
    // A server listing its endpoints without commits is refused at connect.
    fake.force(
        "config",
        200,
        r#"{"defaults":{},"overrides":{"prefix":"cat1"},"endpoints":["GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"]}"#,
    );
    let e = RestCatalog::connect(&options(&fake, &[]), DEADLINE)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    // A redirect is not followed.
    fake.force_raw("config", 307, Vec::new(), "text/plain", Duration::ZERO);
    let e = RestCatalog::connect(&options(&fake, &[]), DEADLINE)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Protocol, "{e}");
    assert!(e.message().contains("redirect"), "{e}");
    // An unknown warehouse.
    fake.force(
        "config",
        404,
        r#"{"error":{"message":"Warehouse not found","type":"NoSuchWarehouseException","code":404}}"#,
    );
    let e = RestCatalog::connect(&options(&fake, &[]), DEADLINE)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");

    // A table-scoped token answered in a load is used for the table's later calls, and is not
    // in the config handed on.
    {
        let mut s = fake.state.lock().unwrap();
        s.namespaces.insert("db".into());
        s.table_token = Some("table-scoped-token".into());
    }
    let catalog = RestCatalog::connect(&options(&fake, &[]), DEADLINE)
        .await
        .unwrap();
    let table = catalog.table("db", "t");
    let created = table.create(CREATE.as_bytes()).await.unwrap();
    assert!(created.config.iter().all(|(k, _)| k != "token"));
    table
        .commit(
            &created.uuid,
            &created.location,
            b"[]",
            append(1, &created.location).as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(
        fake.requests().last().unwrap().authorization.as_deref(),
        Some("Bearer table-scoped-token")
    );
    // Names are encoded as one path segment each.
    fake.state.lock().unwrap().namespaces.insert("my db".into());
    assert!(
        catalog
            .table("my db", "a/b")
            .load()
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        fake.requests().last().unwrap().path,
        format!("/v1/{PREFIX}/namespaces/my%20db/tables/a%2Fb")
    );
}

#[test]
fn status_mapping() {
    let iceberg = |code: u16, kind: &str| {
        format!(r#"{{"error":{{"message":"m","type":"{kind}","code":{code}}}}}"#)
    };
    let cases: &[(Op, u16, ErrorKind)] = &[
        (Op::Commit, 409, ErrorKind::Conflict),
        (Op::Commit, 500, ErrorKind::CommitUnknown),
        (Op::Commit, 502, ErrorKind::CommitUnknown),
        (Op::Commit, 503, ErrorKind::CommitUnknown),
        (Op::Commit, 504, ErrorKind::CommitUnknown),
        (Op::Commit, 501, ErrorKind::Unsupported),
        (Op::Commit, 400, ErrorKind::Protocol),
        (Op::Commit, 401, ErrorKind::Authentication),
        (Op::Commit, 403, ErrorKind::Authentication),
        (Op::Commit, 404, ErrorKind::NotFound),
        (Op::Commit, 429, ErrorKind::Unavailable),
        (Op::Create, 409, ErrorKind::AlreadyExists),
        (Op::Create, 503, ErrorKind::CommitUnknown),
        (Op::Create, 404, ErrorKind::NotFound),
        (Op::Load, 503, ErrorKind::Unavailable),
        (Op::Load, 500, ErrorKind::Unavailable),
        (Op::Load, 419, ErrorKind::Authentication),
        (Op::Load, 406, ErrorKind::Unsupported),
        (Op::Load, 302, ErrorKind::Protocol),
        (Op::Load, 418, ErrorKind::Protocol),
        (Op::Config, 400, ErrorKind::Config),
        (Op::Config, 404, ErrorKind::Config),
        (Op::Config, 503, ErrorKind::Unavailable),
        (Op::Token, 400, ErrorKind::Authentication),
        (Op::Token, 401, ErrorKind::Authentication),
        (Op::Token, 404, ErrorKind::Config),
        (Op::Token, 500, ErrorKind::Unavailable),
    ];
    for (op, code, kind) in cases {
        let status = StatusCode::from_u16(*code).unwrap();
        let e = status_error(
            *op,
            status,
            iceberg(*code, "SomeException").as_bytes(),
            "http://c",
        );
        assert_eq!(e.kind(), *kind, "{op:?} {code}: {e}");
        assert!(
            e.message().starts_with("Iceberg REST catalog http://c")
                || e.message().starts_with("the OAuth2"),
            "{e}"
        );
    }

    // The three shapes of error bodies.
    let d = error_detail(
        StatusCode::CONFLICT,
        iceberg(409, "CommitFailedException").as_bytes(),
    );
    assert_eq!(d.kind.as_deref(), Some("CommitFailedException"));
    assert!(d.iceberg);
    assert_eq!(d.text, "CommitFailedException: m");
    let d = error_detail(
        StatusCode::UNAUTHORIZED,
        br#"{"error":"invalid_client","error_description":"Bad client"}"#,
    );
    assert_eq!(d.kind.as_deref(), Some("invalid_client"));
    assert!(!d.iceberg);
    assert_eq!(d.text, "invalid_client: Bad client");
    let page = format!(
        "<html>\r\n<h1>Bad Gateway</h1>{}</html>",
        "x".repeat(10_000)
    );
    let d = error_detail(StatusCode::BAD_GATEWAY, page.as_bytes());
    assert!(
        d.text
            .starts_with("HTTP 502 Bad Gateway: <html> <h1>Bad Gateway</h1>"),
        "{}",
        d.text
    );
    assert!(d.text.chars().count() < 400, "{}", d.text.len());
    let d = error_detail(StatusCode::SERVICE_UNAVAILABLE, b"");
    assert_eq!(d.text, "HTTP 503 Service Unavailable");
    let d = error_detail(StatusCode::BAD_REQUEST, b"\xff\xfe\x00bad");
    assert!(!d.text.contains('\0'), "{:?}", d.text);
}

#[tokio::test]
async fn bodies_are_read_up_to_their_bound() {
    let response = |n: usize| reqwest::Response::from(hyper::Response::new(vec![b'x'; n]));
    assert_eq!(
        read_body(response(10), 10, false).await.ok().unwrap().len(),
        10
    );
    assert!(matches!(
        read_body(response(11), 10, false).await,
        Err(super::rest::BodyError::TooLarge)
    ));
    assert_eq!(
        read_body(response(11), 10, true).await.ok().unwrap().len(),
        10
    );
}

#[test]
fn each_format_gets_only_the_catalogs_the_host_writes() {
    let opts = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let rest = opts(&[("type", "rest"), ("uri", "http://c:8181")]);
    assert!(
        CatalogOptions::for_format("iceberg", &rest)
            .unwrap()
            .is_some()
    );
    // Another format's options never name an Iceberg catalog.
    assert!(
        CatalogOptions::for_format("lance", &rest)
            .unwrap()
            .is_none()
    );
    for metastore in ["filesystem", "FileSystem"] {
        let o = opts(&[("metastore", metastore), ("warehouse", "/wh")]);
        assert!(CatalogOptions::for_format("paimon", &o).unwrap().is_none());
    }
    assert!(CatalogOptions::for_format("paimon", &[]).unwrap().is_none());
    // A Hive Metastore keeping Paimon tables is the host's too, read by LakeCatalog.
    let hive = opts(&[
        ("metastore", "hive"),
        ("uri", "thrift://hms:9083"),
        ("lock.enabled", "true"),
    ]);
    match super::LakeCatalog::for_format("paimon", &hive).unwrap() {
        Some(super::LakeCatalog::PaimonHive(o)) => {
            assert_eq!(o.addresses, ["hms:9083"]);
            assert_eq!(o.lock_enabled, Some(true));
        }
        other => panic!("{other:?}"),
    }
    let e = super::LakeCatalog::for_format("paimon", &opts(&[("metastore", "hive")])).unwrap_err();
    assert!(e.message().contains("metastore=hive needs 'uri'"), "{e}");
    let e = super::LakeCatalog::for_format("paimon", &opts(&[("metastore", "jdbc")])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    // Paimon's REST catalog is the host's too.
    let rest = opts(&[
        ("metastore", "rest"),
        ("uri", "http://127.0.0.1:8281"),
        ("warehouse", "fluss"),
        ("token.provider", "bear"),
        ("token", "t0k3n"),
    ]);
    match super::LakeCatalog::for_format("paimon", &rest).unwrap() {
        Some(super::LakeCatalog::PaimonRest(o)) => assert_eq!(o.warehouse, "fluss"),
        other => panic!("{other:?}"),
    }
    let e = super::LakeCatalog::for_format("paimon", &opts(&[("metastore", "rest")])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(CatalogOptions::is_catalog_key("token.provider"));
    assert!(CatalogOptions::is_catalog_key("dlf.access-key-secret"));
    for metastore in ["hive", "rest", "jdbc"] {
        let o = opts(&[("metastore", metastore), ("uri", "thrift://hms:9083")]);
        let e = CatalogOptions::for_format("paimon", &o).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(
            e.message()
                .starts_with(&format!("datalake.paimon.metastore={metastore}:")),
            "{e}"
        );
    }
}
