//! Iceberg tables kept by the AWS Glue Data Catalog: moto's Glue on the test S3 server
//! (`cluster/s3/server.py`, which checks `UpdateTable`'s `VersionId` as AWS does), the host
//! committing through it as Java's `GlueCatalog` does (a new metadata file, then `UpdateTable`
//! under the table's `VersionId`), pyiceberg's `GlueCatalog` reading the tables back through
//! Glue, and DuckDB and Java Iceberg reading the metadata file Glue points at. A rival writer's commit through Glue that wins the race,
//! a lost answer to an update Glue applied, and a wrong credential each end as Glue decided,
//! with nothing lost or doubled.
//!
//! Fluss 0.9.1's coordinator cannot create Glue tables here: its Iceberg plugin bundles
//! Iceberg's core but not `iceberg-aws` and the AWS SDK that `datalake.iceberg.type: glue`
//! loads, and the AWS SDK's credentials would have to be in the coordinator's environment
//! when it starts. So the cluster keeps its Hadoop catalog, and the test registers each table
//! in Glue as an operator moving a table to Glue would (pyiceberg's `register_table`): the
//! metadata the coordinator created, moved to S3; the host, given `type=glue`, then tiers the
//! table into Glue's.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use fluss::client::FlussConnection;
use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::fluss_read::fluss_state;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::lossy_proxy::LoopbackServer;
use fluss_lake_e2e::s3::S3Server;
use fluss_lake_e2e::{Rng, cluster, data, iceberg, repo_root, s3, unique_name};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

use super::catalog_rounds::{first_round, pk_descriptor, upsert_round, wait_for};
use super::merge_engines::{KEYS, spawn_host, wait_tiered};

/// The Glue database (Iceberg namespace) of the tests' tables, as Fluss's database.
const DATABASE: &str = "fluss";

/// pyiceberg's `GlueCatalog` against the test server: `register`, `rows` (the current snapshot,
/// canonical JSON lines), `rival` (a property set through the catalog, as another engine's
/// commit), `state` (Glue's table and the metadata it points at). The readers' venv has
/// pyiceberg without its `glue` extra (boto3): boto3 comes from the S3 server's venv, after
/// the readers' own packages.
const GLUE_PY: &str = r#"
import json, os, sys, uuid
repo = os.environ["REPO"]
sys.path.insert(0, os.path.join(repo, "tests", "python"))
sys.path.append(os.environ["BOTO3_SITE"])
import boto3
from pyiceberg.catalog.glue import GlueCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError
from pyiceberg.io import load_file_io
from arrow_canonical import canonical_rows, print_rows
e = os.environ
props = {
    "glue.endpoint": e["GLUE_ENDPOINT"], "glue.region": e["S3_REGION"],
    "glue.access-key-id": e["S3_ACCESS_KEY"], "glue.secret-access-key": e["S3_SECRET_KEY"],
    "s3.endpoint": e["S3_ENDPOINT"], "s3.region": e["S3_REGION"],
    "s3.access-key-id": e["S3_ACCESS_KEY"], "s3.secret-access-key": e["S3_SECRET_KEY"],
}
catalog = GlueCatalog("glue", **props)
command, db, table = sys.argv[1:4]
name = f"{db}.{table}"
if command == "register":
    source, location = sys.argv[4:6]
    with open(source) as f:
        metadata = json.load(f)
    metadata["location"] = location
    metadata_location = f"{location}/metadata/00000-{uuid.uuid4()}.metadata.json"
    io = load_file_io(props, metadata_location)
    with io.new_output(metadata_location).create() as out:
        out.write(json.dumps(metadata).encode())
    try:
        catalog.create_namespace(db)
    except NamespaceAlreadyExistsError:
        pass
    catalog.register_table(name, metadata_location)
    print(json.dumps({"metadata_location": metadata_location}))
elif command == "rows":
    print_rows(canonical_rows(catalog.load_table(name).scan().to_arrow()))
elif command == "rival":
    t = catalog.load_table(name)
    with t.transaction() as tx:
        tx.set_properties(rival=sys.argv[4])
    print(json.dumps({"metadata_location": catalog.load_table(name).metadata_location}))
elif command == "state":
    glue = boto3.client("glue", endpoint_url=e["GLUE_ENDPOINT"], region_name=e["S3_REGION"],
                        aws_access_key_id=e["S3_ACCESS_KEY"], aws_secret_access_key=e["S3_SECRET_KEY"])
    t = glue.get_table(DatabaseName=db, Name=table)["Table"]
    location = t["Parameters"]["metadata_location"]
    with load_file_io(props, location).new_input(location).open() as f:
        metadata = json.loads(f.read())
    print(json.dumps({"version": t["VersionId"], "parameters": t["Parameters"],
                      "storage_location": t.get("StorageDescriptor", {}).get("Location"),
                      "metadata": metadata}))
"#;

/// Runs a [`GLUE_PY`] command; its output lines as JSON.
fn glue_py(s3: &S3Server, args: &[&str]) -> Vec<Value> {
    let repo = repo_root();
    let python = fluss_lake_python_readers::python();
    let site = std::fs::read_dir(repo.join("target/s3-venv/lib"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.path().join("site-packages"))
        .expect("target/s3-venv: the test S3 server's venv (cluster/s3/start.sh)");
    let out = Command::new(&python)
        .arg("-c")
        .arg(GLUE_PY)
        .args(args)
        .env("REPO", &repo)
        .env("BOTO3_SITE", site)
        .env("GLUE_ENDPOINT", &s3.endpoint)
        .env("S3_ENDPOINT", &s3.endpoint)
        .env("S3_REGION", &s3.region)
        .env("S3_ACCESS_KEY", &s3.access_key)
        .env("S3_SECRET_KEY", &s3.secret_key)
        .envs(fluss_lake_e2e::host::NO_INSTANCE_METADATA.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
    assert!(
        out.status.success(),
        "glue {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Registers the table the coordinator created in its Hadoop catalog in Glue, at `location` on
/// the test S3 server: returns its first metadata file (absolute).
fn register(c: &ClusterInfo, s3: &S3Server, path: &TablePath, location: &str) -> String {
    let source = c
        .iceberg_warehouse
        .join(DATABASE)
        .join(path.table())
        .join("metadata/v1.metadata.json");
    assert!(
        source.exists(),
        "the coordinator created {path}: {}",
        source.display()
    );
    let out = glue_py(
        s3,
        &[
            "register",
            DATABASE,
            path.table(),
            &source.display().to_string(),
            location,
        ],
    );
    out[0]["metadata_location"].as_str().unwrap().to_string()
}

/// Glue's table and the metadata it points at: `{"version", "parameters", "metadata"}`.
fn glue_state(s3: &S3Server, path: &TablePath) -> Value {
    glue_py(s3, &["state", DATABASE, path.table()]).remove(0)
}

fn pointer(s3: &S3Server, path: &TablePath) -> String {
    glue_state(s3, path)["parameters"]["metadata_location"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Java Iceberg's read (Fluss's Iceberg plugin jar: `IcebergRows`, deletes applied as Java
/// applies them) of the metadata file Glue points at, given to it as a Hadoop table directory
/// of that one version (Java's `GlueCatalog` would need `iceberg-aws` and the AWS SDK, which
/// Fluss's plugin does not ship): the rows of `columns`.
fn java_rows(s3: &S3Server, path: &TablePath, columns: &[&str]) -> Vec<Value> {
    let state = glue_state(s3, path);
    let dir = std::env::temp_dir().join(unique_name("glue-java-view"));
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    std::fs::write(
        dir.join("metadata/v1.metadata.json"),
        serde_json::to_vec(&state["metadata"]).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("metadata/version-hint.text"), "1").unwrap();
    let rows = iceberg::java_rows(&dir, columns)["rows"]
        .as_array()
        .unwrap()
        .clone();
    let _ = std::fs::remove_dir_all(&dir);
    rows
}

/// The rows pyiceberg's `GlueCatalog` reads, and DuckDB and Java Iceberg from the file Glue
/// points at.
fn assert_log_reads(s3: &S3Server, path: &TablePath, expected: &[Value], what: &str) {
    let expected = business(expected);
    let through_glue = glue_py(s3, &["rows", DATABASE, path.table()]);
    assert_eq!(
        business(&through_glue),
        expected,
        "{what}: pyiceberg's GlueCatalog"
    );
    let file = pointer(s3, path);
    let duck = iceberg::rows(Path::new(&file), None, "duckdb");
    assert_eq!(
        business(&duck),
        expected,
        "{what}: DuckDB of the file Glue points at"
    );
    let ids = |rows: &[Value]| rows.iter().map(|r| r["id"].clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&business(&java_rows(s3, path, &["id", "name"]))),
        ids(&expected),
        "{what}: Java Iceberg of the file Glue points at"
    );
}

/// The primary-key table's merged read (DuckDB applies its equality and position deletes; the
/// pyiceberg of the tests does not) equals Fluss's lookup of every key.
async fn assert_pk_reads(s3: &S3Server, conn: &FlussConnection, path: &TablePath, what: &str) {
    let fluss = business(&fluss_state(conn, path, 0..KEYS as i32).await);
    assert!(!fluss.is_empty(), "{what}: Fluss has no rows");
    let duck = iceberg::rows(Path::new(&pointer(s3, path)), None, "duckdb");
    assert_eq!(
        business(&duck),
        fluss,
        "{what}: DuckDB of the file Glue points at"
    );
    assert_eq!(
        business(&java_rows(s3, path, &["id", "ver", "name"])),
        fluss,
        "{what}: Java Iceberg's merged read of the file Glue points at"
    );
}

/// The host tiering into Glue at `glue_endpoint` with `secret` as the Glue secret key (the
/// storage's credentials are right); the table's warehouse on the test S3 server.
fn host(
    c: &ClusterInfo,
    s3: &S3Server,
    glue_endpoint: &str,
    secret: &str,
    warehouse: &str,
    log: &str,
) -> HostProcess {
    let options = [
        ("type", "glue"),
        ("glue.endpoint", glue_endpoint),
        ("client.region", s3.region.as_str()),
        ("glue.access-key-id", s3.access_key.as_str()),
        ("glue.secret-access-key", secret),
        ("warehouse", warehouse),
        ("s3.endpoint", s3.endpoint.as_str()),
        ("s3.access-key-id", s3.access_key.as_str()),
        ("s3.secret-access-key", s3.secret_key.as_str()),
        ("s3.path-style-access", "true"),
    ];
    let args: Vec<String> = options
        .iter()
        .flat_map(|(k, v)| [format!("--datalake.iceberg.{k}"), v.to_string()])
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    spawn_host(c, "iceberg", log, &args)
}

// ---- a gate in front of Glue --------------------------------------------------------------

/// An `UpdateTable` the gate forwarded: the table, Glue's status and error code, and whether
/// its answer was lost on purpose.
#[derive(Debug, Clone)]
struct Update {
    table: String,
    status: u16,
    error: Option<String>,
    lost: bool,
}

#[derive(Default)]
struct GateState {
    /// Hold the next `UpdateTable` of this table until released.
    hold: Option<String>,
    held: usize,
    /// Lose the answer to the next `UpdateTable` of this table (after Glue applied it).
    lose: Option<String>,
    updates: Vec<Update>,
}

/// A reverse proxy in front of the test server's Glue: every request is forwarded unchanged
/// (its signature, made for the gate's `Host`, still verifies).
struct GlueGate {
    server: LoopbackServer,
    state: Arc<Mutex<GateState>>,
    release: Arc<tokio::sync::Semaphore>,
}

impl GlueGate {
    fn start(upstream: &str) -> GlueGate {
        let upstream = upstream.trim_start_matches("http://").to_string();
        let state = Arc::new(Mutex::new(GateState::default()));
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let (s, r) = (state.clone(), release.clone());
        let server = LoopbackServer::start("glue-gate", move |listener| {
            accept(listener, upstream, s, r)
        });
        GlueGate {
            server,
            state,
            release,
        }
    }

    fn endpoint(&self) -> &str {
        self.server.endpoint()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn hold_next_update(&self, table: &str) {
        self.lock().hold = Some(table.to_string());
    }

    fn held(&self) -> usize {
        self.lock().held
    }

    fn release(&self) {
        self.release.add_permits(1);
    }

    fn lose_next_update_answer(&self, table: &str) {
        self.lock().lose = Some(table.to_string());
    }

    fn updates(&self) -> Vec<Update> {
        self.lock().updates.clone()
    }
}

async fn accept(
    listener: TcpListener,
    upstream: String,
    state: Arc<Mutex<GateState>>,
    release: Arc<tokio::sync::Semaphore>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (upstream, state, release) = (upstream.clone(), state.clone(), release.clone());
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                forward(req, upstream.clone(), state.clone(), release.clone())
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn forward(
    req: Request<Incoming>,
    upstream: String,
    state: Arc<Mutex<GateState>>,
    release: Arc<tokio::sync::Semaphore>,
) -> Result<Response<Full<Bytes>>, BoxError> {
    let update = req
        .headers()
        .get("x-amz-target")
        .is_some_and(|t| t == "AWSGlue.UpdateTable");
    let (parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    let table = if update {
        serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|b| b["TableInput"]["Name"].as_str().map(str::to_string))
    } else {
        None
    };
    let (hold, lose) = {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        let hold = table.is_some() && s.hold.as_ref() == table.as_ref();
        if hold {
            s.hold = None;
            s.held += 1;
        }
        let lose = table.is_some() && s.lose.as_ref() == table.as_ref();
        if lose {
            s.lose = None;
        }
        (hold, lose)
    };
    if hold {
        release.acquire().await?.forget();
    }
    let stream = TcpStream::connect(&upstream).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let response = sender
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await?.to_bytes();
    if let Some(table) = table {
        let error = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|b| b["__type"].as_str().map(str::to_string));
        state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .updates
            .push(Update {
                table,
                status: parts.status.as_u16(),
                error,
                lost: lose,
            });
    }
    if lose {
        // Glue applied it (or refused it); the host never hears which.
        return Err("the answer is lost on purpose".into());
    }
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// The metadata files of the table at `location` on the test server.
async fn metadata_files(s3: &S3Server, location: &str) -> Vec<String> {
    let prefix = location
        .strip_prefix(&format!("s3://{}/", s3.bucket))
        .unwrap()
        .to_string();
    s3.keys(&format!("{prefix}/metadata"))
        .await
        .into_iter()
        .filter(|k| k.ends_with(".metadata.json"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_and_primary_key_tables_tier_through_glue_exactly() {
    let c = cluster::lease("iceberg");
    let s3 = s3::server();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let log = TablePath::new(DATABASE, unique_name("glue_log"));
    let pk = TablePath::new(DATABASE, unique_name("glue_pk"));
    data::create_table(&admin, &log, &data::lake_log_table(2, Some("id"), "2s")).await;
    data::create_table(&admin, &pk, &pk_descriptor()).await;
    let warehouse = s3.url(&unique_name("glue"));
    let location = |t: &TablePath| format!("{warehouse}/{DATABASE}.db/{}", t.table());
    let first_log = register(&c, &s3, &log, &location(&log));
    register(&c, &s3, &pk, &location(&pk));
    let gate = GlueGate::start(&s3.endpoint);
    let h = host(
        &c,
        &s3,
        gate.endpoint(),
        &s3.secret_key,
        &warehouse,
        "iceberg-glue-host",
    );
    let mut rng = Rng(0x6107_e5e5_2026);
    let mut expected = Vec::new();

    // Round 1: both tables tier through Glue.
    expected.extend(first_round(&conn, &admin, &log, &pk, &mut rng, &h).await);
    assert_log_reads(&s3, &log, &expected, "round 1");
    assert_pk_reads(&s3, &conn, &pk, "round 1").await;
    let state = glue_state(&s3, &log);
    let current = state["parameters"]["metadata_location"].as_str().unwrap();
    let name = current.rsplit('/').next().unwrap();
    assert!(
        name.starts_with("00001-") && name.ends_with(".metadata.json"),
        "Java's name for the next metadata file: {current}"
    );
    assert_eq!(
        state["parameters"]["previous_metadata_location"], first_log,
        "{state}"
    );
    assert_eq!(state["parameters"]["table_type"], "ICEBERG");
    assert_eq!(state["storage_location"], location(&log), "{state}");
    let m = &state["metadata"];
    assert_eq!(m["metadata-log"][0]["metadata-file"], first_log, "{m}");
    let summary = &m["snapshots"].as_array().unwrap().last().unwrap()["summary"];
    assert_eq!(summary["commit-user"], "__fluss_lake_tiering", "{summary}");
    assert!(summary["fluss-offsets"].is_string(), "{summary}");
    assert!(
        gate.updates()
            .iter()
            .all(|u| u.status == 200 && u.error.is_none()),
        "{:?}",
        gate.updates()
    );

    // Round 2: another engine commits to the log table through Glue while the host's update
    // is held; Glue refuses the host's (its VersionId is stale), and the host commits again on
    // the rival's metadata.
    gate.hold_next_update(log.table());
    data::write_rows(&conn, &log, 300, 200, 100).await;
    expected.extend(data::canonical_rows(&data::batch(300, 200)));
    wait_for("the host's update reaching the gate", &h, || {
        gate.held() == 1
    })
    .await;
    let rival = glue_py(&s3, &["rival", DATABASE, log.table(), "yes"]).remove(0);
    let rival = rival["metadata_location"].as_str().unwrap().to_string();
    gate.release();
    wait_tiered(&admin, &log, "round 2 (after the race)", &h).await;
    assert_log_reads(&s3, &log, &expected, "round 2");
    assert!(
        gate.updates().iter().any(|u| u.table == log.table()
            && u.error.as_deref() == Some("ConcurrentModificationException")),
        "Glue refused the held update: {:?}",
        gate.updates()
    );
    let state = glue_state(&s3, &log);
    let m = &state["metadata"];
    assert_eq!(
        m["properties"]["rival"], "yes",
        "the rival's commit stands under the host's: {m}"
    );
    assert_eq!(state["parameters"]["previous_metadata_location"], rival);
    let files = metadata_files(&s3, &location(&log)).await;
    // The registered file, round 1's, the rival's and round 2's: the metadata file of the
    // attempt that lost the race is gone.
    assert_eq!(files.len(), 4, "{files:?}");

    // Round 3: the answer to an update Glue applied is lost; the host recognises its commit
    // (Glue points at its file) instead of committing the rows twice.
    gate.lose_next_update_answer(log.table());
    data::write_rows(&conn, &log, 500, 100, 100).await;
    expected.extend(data::canonical_rows(&data::batch(500, 100)));
    upsert_round(&conn, &pk, 1, &mut rng).await;
    wait_tiered(&admin, &log, "round 3 (a lost answer)", &h).await;
    wait_tiered(&admin, &pk, "round 3 (pk)", &h).await;
    assert_log_reads(&s3, &log, &expected, "round 3");
    assert_pk_reads(&s3, &conn, &pk, "round 3").await;
    assert!(
        gate.updates()
            .iter()
            .any(|u| u.lost && u.status == 200 && u.table == log.table()),
        "an applied update's answer was lost: {:?}",
        gate.updates()
    );
    assert!(
        h.log()
            .contains("the table holds the commit: it was applied"),
        "the host recognised its applied commit:\n{}",
        h.log()
    );
    assert!(
        !h.log().contains(&s3.secret_key),
        "the host never logs the secret key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_glue_credential_is_one_clear_error_and_commits_nothing() {
    let c = cluster::lease("iceberg");
    let s3 = s3::server();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new(DATABASE, unique_name("glue_cred"));
    data::create_table(&admin, &path, &data::lake_log_table(1, None, "1s")).await;
    let warehouse = s3.url(&unique_name("glue"));
    let location = format!("{warehouse}/{DATABASE}.db/{}", path.table());
    let first = register(&c, &s3, &path, &location);
    data::write_rows(&conn, &path, 0, 50, 50).await;

    let wrong = "not-the-glue-secret-key";
    let mut h = host(
        &c,
        &s3,
        &s3.endpoint,
        wrong,
        &warehouse,
        "iceberg-glue-wrong-credential",
    );
    h.wait_for_more_logs("refused the credential", 2, Duration::from_secs(120))
        .await;
    let line = h
        .log()
        .lines()
        .rfind(|l| l.contains("refused the credential"))
        .unwrap()
        .to_string();
    assert!(
        line.contains(&format!("Glue catalog {}", s3.endpoint)),
        "the line names the catalog: {line}"
    );
    assert!(!h.log().contains(wrong), "the secret is never logged");
    assert_eq!(pointer(&s3, &path), first, "nothing committed");
    assert_eq!(
        metadata_files(&s3, &location).await.len(),
        1,
        "no metadata file written"
    );
    // Its unfinished round is reported failed, so the next host gets the table at once.
    h.terminate(Duration::from_secs(40));

    // The right one tiers the same rows.
    let h = host(
        &c,
        &s3,
        &s3.endpoint,
        &s3.secret_key,
        &warehouse,
        "iceberg-glue-right-credential",
    );
    wait_tiered(&admin, &path, "with the right credential", &h).await;
    assert_log_reads(
        &s3,
        &path,
        &data::canonical_rows(&data::batch(0, 50)),
        "with the right credential",
    );
    assert_ne!(pointer(&s3, &path), first);
}
