//! Iceberg checks: the independent readers (pyiceberg, DuckDB's iceberg extension) run from
//! the project's venv through `tests/python/iceberg_read.py`, Java Iceberg's view of a table,
//! and Iceberg's bucket function. Tables are read from their directory (Hadoop-catalog tables)
//! or, by the `rest_*` functions, loaded through an Iceberg REST catalog (the server of
//! `cluster/iceberg-rest/`, [`rest_catalog`]).

use std::path::Path;

use serde_json::Value;

use crate::repo_root;

/// Runs `iceberg_read.py` commands in one pooled worker (`crate::python`); each command's
/// output lines (as JSON), or `Err(message)` when the command raised.
pub fn read_batch(commands: &[Vec<String>]) -> Vec<Result<Vec<Value>, String>> {
    crate::python::batch("iceberg_read.py", commands)
}

/// One command's output; panics with the reader's error.
pub fn read_one(command: &[&str]) -> Vec<Value> {
    let c: Vec<String> = command.iter().map(|s| s.to_string()).collect();
    read_batch(&[c])
        .remove(0)
        .unwrap_or_else(|e| panic!("{command:?}: {e}"))
}

/// Rows of the table at `snapshot` (current if `None`) read by `reader`
/// (`pyiceberg` or `duckdb`), system columns included.
pub fn rows(table_dir: &Path, snapshot: Option<i64>, reader: &str) -> Vec<Value> {
    let dir = table_dir.display().to_string();
    let mut c = vec!["rows", dir.as_str(), "--reader", reader];
    let s = snapshot.map(|s| s.to_string());
    if let Some(s) = &s {
        c.extend(["--snapshot", s.as_str()]);
    }
    read_one(&c)
}

/// The snapshots in commit order (id, sequence number, operation, summary, ...).
pub fn snapshots(table_dir: &Path) -> Vec<Value> {
    read_one(&["snapshots", &table_dir.display().to_string()])
}

/// `{"files", "rows", "delete_files"}` of pyiceberg's scan plan with an optional filter.
pub fn plan(table_dir: &Path, snapshot: Option<i64>, filter: Option<(&str, &str, Value)>) -> Value {
    let dir = table_dir.display().to_string();
    let mut c = vec!["plan".to_string(), dir];
    if let Some(s) = snapshot {
        c.extend(["--snapshot".to_string(), s.to_string()]);
    }
    if let Some((col, op, v)) = filter {
        c.extend(["--filter".into(), col.into(), op.into(), v.to_string()]);
    }
    let out = read_batch(&[c])
        .remove(0)
        .unwrap_or_else(|e| panic!("plan: {e}"));
    out[0].clone()
}

/// Iceberg's `bucket[n]` of an int or long value: Murmur3 x86 32 (seed 0) of the value as
/// an 8-byte little-endian long, sign bit cleared, modulo `n` (what Fluss's
/// `IcebergBucketingFunction` computes for a single int/long key).
pub fn iceberg_bucket(value: i64, n: i32) -> i32 {
    let data = value.to_le_bytes();
    let (c1, c2) = (0xcc9e2d51u32, 0x1b873593u32);
    let mut h: u32 = 0;
    for chunk in data.chunks(4) {
        let mut k = u32::from_le_bytes(chunk.try_into().unwrap());
        k = k.wrapping_mul(c1).rotate_left(15).wrapping_mul(c2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe6546b64);
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85ebca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2ae35);
    h ^= h >> 16;
    ((h as i32) & i32::MAX) % n
}

/// Java Iceberg's view of tables (`tests/java/IcebergCheck.java`, run with the Iceberg jars
/// of Fluss's own Iceberg plugin that `cluster/setup.sh` installs): one JSON object per
/// table with its schema, spec, snapshots and every snapshot's scan plan. Fails (never
/// skips) without a JDK or the jars.
pub fn java_check(table_dirs: &[&Path]) -> Vec<Value> {
    crate::java::run_check("IcebergCheck", &java_classpath(), table_dirs)
}

/// Java Iceberg's merged rows of a table's current snapshot, deletes applied
/// (`tests/java/IcebergRows.java`): `{"snapshot", "rows": [{column: value}]}` with `columns`.
/// The reference for primary-key tables over many rounds, where DuckDB 1.4.4's iceberg
/// extension drops rows of old data files once a table has a few dozen equality delete
/// files (duckdb/duckdb-iceberg#624).
pub fn java_rows(table_dir: &Path, columns: &[&str]) -> Value {
    let mut args: Vec<std::path::PathBuf> = vec![table_dir.to_path_buf()];
    args.extend(columns.iter().map(std::path::PathBuf::from));
    let refs: Vec<&Path> = args.iter().map(std::path::PathBuf::as_path).collect();
    crate::java::run_check("IcebergRows", &java_classpath(), &refs).remove(0)
}

/// Changes a table with Java Iceberg as another engine, or Fluss 1.0's coordinator, would
/// (`tests/java/IcebergAlter.java`: `add:NAME:TYPE`, `add-before-bucket:NAME:TYPE`,
/// `first:NAME`, `drop:NAME`, `retype:NAME:TYPE`, or `clean`, which makes it the table Fluss
/// 1.0 creates, without system columns) and returns its columns afterwards:
/// `{"schema_id", "columns": [{"id", "name", "type"}]}`.
pub fn java_alter(table_dir: &Path, changes: &[&str]) -> Value {
    let mut args: Vec<std::path::PathBuf> = vec![table_dir.to_path_buf()];
    args.extend(changes.iter().map(std::path::PathBuf::from));
    let refs: Vec<&Path> = args.iter().map(std::path::PathBuf::as_path).collect();
    crate::java::run_check("IcebergAlter", &java_classpath(), &refs).remove(0)
}

/// An Iceberg REST catalog server of `cluster/iceberg-rest/start.sh` (Apache Iceberg's own
/// `RESTCatalogServer` on 127.0.0.1: a JDBC catalog on SQLite), as its `server.env` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestCatalog {
    /// `http://127.0.0.1:<port>`: what `datalake.iceberg.uri` and the readers are given.
    pub uri: String,
    /// Where the server puts tables (`<warehouse>/<namespace>/<table>`): a local directory, or
    /// an `s3://` URL on the test S3 server (`ICEBERG_REST_STORAGE=s3`).
    pub warehouse: String,
    /// `local` or `s3`.
    pub storage: String,
}

/// The instance of the Iceberg REST catalog server whose warehouse is on the test S3 server
/// ([`rest_catalog_s3`]), as the S3 cluster is cluster 9.
pub const REST_S3_INDEX: usize = 9;

/// Iceberg REST catalog server `index` (`ICEBERG_REST_INDEX`, 0-8) with a local warehouse
/// (`target/iceberg-rest-<index>/warehouse`; instance 0: `target/iceberg-rest/`), started if it
/// is not up. Instance 0 is the catalog `cluster/set-lake-format.sh iceberg-rest` points a
/// cluster with local storage at. Panics, never skips, when it cannot start.
pub fn rest_catalog(index: usize) -> RestCatalog {
    assert!(
        index != REST_S3_INDEX,
        "REST catalog {index} keeps its warehouse on S3: rest_catalog_s3()"
    );
    ensure_rest_catalog(index, "local")
}

/// The Iceberg REST catalog server with its warehouse on the test S3 server (instance
/// [`REST_S3_INDEX`], `s3://<bucket>/iceberg-rest-9`, Iceberg's S3FileIO), started with the S3
/// server if they are not up: the catalog of the S3 cluster's `iceberg-rest` format. Its
/// readers read S3 with [`crate::s3::reader_env`].
pub fn rest_catalog_s3() -> RestCatalog {
    crate::s3::server();
    ensure_rest_catalog(REST_S3_INDEX, "s3")
}

/// Runs `cluster/iceberg-rest/start.sh` for instance `index` with `storage` (it leaves a server
/// started with the same settings as it is), one starter at a time across threads and
/// processes (the lock `cluster/set-lake-format.sh` takes too), and reads its `server.env`.
fn ensure_rest_catalog(index: usize, storage: &str) -> RestCatalog {
    let dir = repo_root().join(match index {
        0 => "target/iceberg-rest".to_string(),
        i => format!("target/iceberg-rest-{i}"),
    });
    let lock = std::fs::File::create(dir.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    let out = std::process::Command::new(repo_root().join("cluster/iceberg-rest/start.sh"))
        .env("ICEBERG_REST_INDEX", index.to_string())
        .env("ICEBERG_REST_STORAGE", storage)
        .output()
        .expect("cannot run cluster/iceberg-rest/start.sh");
    assert!(
        out.status.success(),
        "cluster/iceberg-rest/start.sh (instance {index}, {storage}) failed (run \
         cluster/iceberg-rest/setup.sh first; scripts/test.sh does):\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join("server.env");
    let get = crate::server_env(&file);
    RestCatalog {
        uri: get("ICEBERG_REST_URI"),
        warehouse: get("ICEBERG_REST_WAREHOUSE"),
        storage: get("ICEBERG_REST_STORAGE"),
    }
}

/// Rows of `namespace.table` loaded from the REST catalog at `uri`, at `snapshot` (current if
/// `None`), read by `reader` (`pyiceberg`: its `RestCatalog`; `duckdb`: the iceberg extension
/// attaching the catalog), in the canonical form of [`rows`], system columns included.
pub fn rest_rows(
    uri: &str,
    namespace: &str,
    table: &str,
    snapshot: Option<i64>,
    reader: &str,
) -> Vec<Value> {
    let name = format!("{namespace}.{table}");
    let mut c = vec!["rows", name.as_str(), "--rest", uri, "--reader", reader];
    let s = snapshot.map(|s| s.to_string());
    if let Some(s) = &s {
        c.extend(["--snapshot", s.as_str()]);
    }
    read_one(&c)
}

/// [`rest_rows`] of the current snapshot by pyiceberg's `RestCatalog`.
pub fn read_rest_pyiceberg(uri: &str, namespace: &str, table: &str) -> Vec<Value> {
    rest_rows(uri, namespace, table, None, "pyiceberg")
}

/// [`rest_rows`] of the current snapshot by DuckDB's iceberg extension (`ATTACH ... (TYPE
/// iceberg, ENDPOINT uri)`), which applies equality deletes.
pub fn read_rest_duckdb(uri: &str, namespace: &str, table: &str) -> Vec<Value> {
    rest_rows(uri, namespace, table, None, "duckdb")
}

/// [`snapshots`] of a table loaded from the REST catalog at `uri`.
pub fn rest_snapshots(uri: &str, namespace: &str, table: &str) -> Vec<Value> {
    read_one(&["snapshots", &format!("{namespace}.{table}"), "--rest", uri])
}

/// `iceberg_read.py schema` of a table loaded from the REST catalog at `uri`: its fields,
/// identifier fields, partition spec, sort order, location, format version and properties.
pub fn rest_schema(uri: &str, namespace: &str, table: &str) -> Value {
    read_one(&["schema", &format!("{namespace}.{table}"), "--rest", uri]).remove(0)
}

/// [`java_rows`] of `namespace.table` loaded from the REST catalog at `uri` by Java Iceberg's
/// `RESTCatalog` (`IcebergRows --rest`): `{"table": "namespace.table", "snapshot", "rows"}`.
pub fn java_rest_rows(uri: &str, namespace: &str, table: &str, columns: &[&str]) -> Value {
    let name = format!("{namespace}.{table}");
    let mut args: Vec<&Path> = vec![Path::new("--rest"), Path::new(uri), Path::new(&name)];
    args.extend(columns.iter().map(Path::new));
    crate::java::run_check("IcebergRows", &java_classpath(), &args).remove(0)
}

/// The REST catalog's answer to loading `namespace.table` (`GET
/// /v1/namespaces/<namespace>/tables/<table>`): `{"metadata-location", "metadata", "config"}`,
/// or `None` when it has no such table (404). Panics on any other answer.
pub fn rest_load_table(uri: &str, namespace: &str, table: &str) -> Option<Value> {
    let path = format!("/v1/namespaces/{namespace}/tables/{table}");
    let (status, body) = rest_get(uri, &path);
    match status {
        200 => Some(serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))),
        404 => None,
        _ => panic!("GET {uri}{path}: HTTP {status}: {body}"),
    }
}

/// A GET of `path` from the REST catalog server at `uri` (`http://host:port`): (status, body).
/// HTTP/1.0, so the server answers with the whole body and closes the connection.
fn rest_get(uri: &str, path: &str) -> (u16, String) {
    http_call(uri, "GET", path, &[], None)
}

/// A POST of the JSON `body` to `path` of the REST catalog server at `uri`: (status, body).
pub fn rest_post(uri: &str, path: &str, body: &str) -> (u16, String) {
    http_call(uri, "POST", path, &[], Some(body))
}

/// One HTTP/1.0 request to a catalog server at `uri` with `headers`: (status, body). The body
/// is read to its `Content-Length` (a server may keep the connection open: Paimon's
/// `MockWebServer` does), else to the end of the connection.
pub(crate) fn http_call(
    uri: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String) {
    use std::io::{BufRead, BufReader, Read, Write};
    let addr = uri
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("{uri}: not an http:// URI"))
        .trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(addr)
        .unwrap_or_else(|e| panic!("{uri}: {e}: is the catalog server up?"));
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let body = body.unwrap_or("");
    let content = if method == "GET" {
        String::new()
    } else {
        format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        )
    };
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n{extra}{content}\r\n{body}"
    )
    .unwrap();
    let fail = |e: std::io::Error| -> ! { panic!("{method} {uri}{path}: {e}") };
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or_else(|e| fail(e)) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{method} {uri}{path}: not an HTTP answer: {head}"));
    let length = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())?
    });
    let mut answer = Vec::new();
    match length {
        Some(n) => {
            answer.resize(n, 0);
            reader.read_exact(&mut answer).unwrap_or_else(|e| fail(e));
        }
        None => {
            reader.read_to_end(&mut answer).unwrap_or_else(|e| fail(e));
        }
    }
    (status, String::from_utf8_lossy(&answer).into_owned())
}

fn java_classpath() -> Vec<std::path::PathBuf> {
    let dist = repo_root().join("target/fluss-dist");
    let cp = crate::java::jars(
        &[dist.join("plugins/iceberg"), dist.join("lib")],
        |name| !name.starts_with("fluss-server"),
        "WITH_ICEBERG=1 cluster/setup.sh",
    );
    assert!(
        cp.iter()
            .any(|p| p.to_string_lossy().contains("fluss-lake-iceberg")),
        "the Iceberg plugin jar is missing: run WITH_ICEBERG=1 cluster/setup.sh"
    );
    cp
}
