//! pypaimon, the independent Paimon reader, run from the project's venv
//! (`tests/python/paimon_read.py` in a pooled worker, `crate::python`), and Java Paimon's view
//! of a table.

use std::path::Path;

use serde_json::Value;

use crate::repo_root;

/// One `paimon_read.py` command, run by a pooled worker (`crate::python`: pypaimon is imported
/// once per worker, not per call): its output lines, parsed. Panics with the reader's error.
fn run(args: &[&str]) -> Vec<Value> {
    let command: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    crate::python::batch("paimon_read.py", &[command])
        .remove(0)
        .unwrap_or_else(|e| panic!("paimon_read.py {args:?} failed:\n{e}"))
}

/// Every row of the table (at `snapshot` if given), in the canonical JSON form.
pub fn rows(warehouse: &Path, db: &str, table: &str, snapshot: Option<i64>) -> Vec<Value> {
    let wh = warehouse.display().to_string();
    let snap = snapshot.map(|s| s.to_string());
    let mut args = vec!["rows", wh.as_str(), db, table];
    if let Some(s) = &snap {
        args.extend(["--snapshot", s.as_str()]);
    }
    run(&args)
}

/// The snapshot's metadata: id, commit_user, properties, record counts.
pub fn snapshot(warehouse: &Path, db: &str, table: &str, snapshot: Option<i64>) -> Value {
    let wh = warehouse.display().to_string();
    let snap = snapshot.map(|s| s.to_string());
    let mut args = vec!["snapshot", wh.as_str(), db, table];
    if let Some(s) = &snap {
        args.extend(["--snapshot", s.as_str()]);
    }
    let mut out = run(&args);
    assert_eq!(
        out.len(),
        1,
        "paimon_read.py {args:?}: one line, got {out:?}"
    );
    out.remove(0)
}

/// Rows with `column == value`, through pypaimon's filter (exercises bucket pruning).
pub fn lookup(warehouse: &Path, db: &str, table: &str, column: &str, value: &Value) -> Vec<Value> {
    let wh = warehouse.display().to_string();
    let v = value.to_string();
    run(&["lookup", wh.as_str(), db, table, column, v.as_str()])
}

/// Java Paimon's view of a table (`tests/java/PaimonCheck.java`, run with the paimon-bundle
/// and Hadoop jars FlussLakeTiering runs with, `cluster/flink-tiering/setup.sh`): the latest
/// snapshot (`snapshot`, `commit_user`, `properties`) and the merged rows of `columns`.
pub fn java_read(warehouse: &Path, db: &str, table: &str, columns: &[&str]) -> Value {
    let mut args: Vec<std::path::PathBuf> = vec![warehouse.to_path_buf(), db.into(), table.into()];
    args.extend(columns.iter().map(std::path::PathBuf::from));
    let refs: Vec<&Path> = args.iter().map(std::path::PathBuf::as_path).collect();
    crate::java::run_check("PaimonCheck", &java_classpath(), &refs).remove(0)
}

/// Changes a table with Java Paimon as another engine would (`tests/java/PaimonAlter.java`:
/// `add:NAME:TYPE`, `first:NAME`, `drop:NAME`, `retype:NAME:TYPE`, or `clean`, which makes it
/// the table Fluss 1.0 creates, without system columns) and returns its columns afterwards:
/// `{"schema_id", "columns": [{"id", "name", "type"}]}`.
pub fn java_alter(warehouse: &Path, db: &str, table: &str, changes: &[&str]) -> Value {
    let mut args: Vec<std::path::PathBuf> = vec![warehouse.to_path_buf(), db.into(), table.into()];
    args.extend(changes.iter().map(std::path::PathBuf::from));
    let refs: Vec<&Path> = args.iter().map(std::path::PathBuf::as_path).collect();
    crate::java::run_check("PaimonAlter", &java_classpath(), &refs).remove(0)
}

/// The paimon-bundle and Hadoop jars FlussLakeTiering runs with.
fn java_classpath() -> Vec<std::path::PathBuf> {
    let lib = repo_root().join("target/flink-tiering/lib-tiering");
    crate::java::jars(
        &[lib],
        |name| {
            ["paimon-", "hadoop-", "slf4j-", "log4j-"]
                .iter()
                .any(|p| name.starts_with(p))
        },
        "cluster/flink-tiering/setup.sh",
    )
}

/// Paimon's REST catalog test server (`cluster/paimon-rest/`: paimon-core's `RESTCatalogServer`
/// behind a bearer token), as its `server.env` describes it.
#[derive(Debug, Clone)]
pub struct PaimonRest {
    /// `http://127.0.0.1:<port>`.
    pub uri: String,
    /// The warehouse name clients ask for (`warehouse`).
    pub warehouse: String,
    /// The bearer token every request must carry.
    pub token: String,
    /// Where the server keeps the tables' files.
    pub data: std::path::PathBuf,
}

/// The Paimon REST catalog server, started if it is not up (`cluster/paimon-rest/start.sh`
/// leaves a server with the same settings as it is), one starter at a time across processes
/// (the lock `cluster/set-lake-format.sh paimon-rest` takes too). Panics, never skips, when it
/// cannot start.
pub fn rest_catalog() -> PaimonRest {
    let dir = repo_root().join("target/paimon-rest");
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    let lock = std::fs::File::create(dir.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    let out = std::process::Command::new(repo_root().join("cluster/paimon-rest/start.sh"))
        .output()
        .expect("cannot run cluster/paimon-rest/start.sh");
    assert!(
        out.status.success(),
        "cluster/paimon-rest/start.sh failed (run cluster/paimon-rest/setup.sh first; scripts/test.sh does):\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let env_file = dir.join("server.env");
    let get = crate::server_env(&env_file);
    PaimonRest {
        uri: get("PAIMON_REST_URI"),
        warehouse: get("PAIMON_REST_WAREHOUSE"),
        token: get("PAIMON_REST_TOKEN"),
        data: get("PAIMON_REST_DATA").into(),
    }
}

impl PaimonRest {
    /// Every row of `db.table` as pypaimon's REST catalog reads it (the catalog's latest
    /// snapshot), in the canonical JSON form.
    pub fn rows(&self, db: &str, table: &str) -> Vec<Value> {
        let rest = serde_json::json!({"uri": self.uri, "token": self.token}).to_string();
        run(&["rows", &self.warehouse, db, table, "--rest", &rest])
    }

    /// Java Paimon's `RESTCatalog` view of `db.table` (`PaimonCheck --rest`): the latest
    /// snapshot (`snapshot`, `commit_user`, `properties`) and the merged rows of `columns`.
    pub fn java_read(&self, db: &str, table: &str, columns: &[&str]) -> Value {
        let mut args = vec![
            "--rest",
            self.uri.as_str(),
            self.token.as_str(),
            self.warehouse.as_str(),
            db,
            table,
        ];
        args.extend(columns);
        let args: Vec<&Path> = args.iter().map(Path::new).collect();
        crate::java::run_check("PaimonCheck", &java_classpath(), &args).remove(0)
    }

    /// A request to the catalog with its token: (status, body).
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        let auth = format!("Bearer {}", self.token);
        crate::iceberg::http_call(&self.uri, method, path, &[("Authorization", &auth)], body)
    }

    /// `db.table` as the catalog answers it (`GetTableResponse`), `None` when it has none.
    pub fn table(&self, db: &str, table: &str) -> Option<Value> {
        let path = format!("/v1/paimon/databases/{db}/tables/{table}");
        match self.call("GET", &path, None) {
            (200, body) => Some(serde_json::from_str(&body).unwrap()),
            (404, _) => None,
            (status, body) => panic!("GET {path}: HTTP {status}: {body}"),
        }
    }

    /// The latest snapshot of `db.table` as the catalog keeps it, `None` before the first.
    pub fn latest_snapshot(&self, db: &str, table: &str) -> Option<Value> {
        let path = format!("/v1/paimon/databases/{db}/tables/{table}/snapshot");
        match self.call("GET", &path, None) {
            (200, body) => {
                let v: Value = serde_json::from_str(&body).unwrap();
                Some(v["snapshot"]["snapshot"].clone())
            }
            (404, _) => None,
            (status, body) => panic!("GET {path}: HTTP {status}: {body}"),
        }
    }

    /// A rival writer's commit through the catalog: the latest snapshot again under the next id
    /// (the same files, so readers read the same rows), as another engine's no-op commit moves
    /// the table on. Returns the new snapshot's id.
    pub fn rival_commit(&self, db: &str, table: &str) -> i64 {
        let info = self.table(db, table).expect("the table");
        let mut s = self
            .latest_snapshot(db, table)
            .expect("a snapshot to follow");
        let id = s["id"].as_i64().unwrap() + 1;
        s["id"] = id.into();
        s["commitUser"] = "rival-writer".into();
        s["commitIdentifier"] = 1.into();
        s["deltaRecordCount"] = 0.into();
        s["timeMillis"] = (fluss_lake_host::time::now_millis()).into();
        if let Some(o) = s.as_object_mut() {
            o.remove("properties");
        }
        let body = serde_json::json!({"tableId": info["id"], "snapshot": s, "statistics": []});
        let path = format!("/v1/paimon/databases/{db}/tables/{table}/commit");
        let (status, answer) = self.call("POST", &path, Some(&body.to_string()));
        assert_eq!(status, 200, "the rival's commit: {answer}");
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap()["success"],
            true,
            "the rival's commit: {answer}"
        );
        id
    }
}
