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
