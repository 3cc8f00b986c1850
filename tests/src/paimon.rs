//! pypaimon, the independent Paimon reader, run from the project's venv.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::repo_root;

fn python() -> std::path::PathBuf {
    let py = repo_root().join("target/venv/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup-python.sh",
        py.display()
    );
    py
}

fn run(args: &[&str]) -> String {
    let script = repo_root().join("tests/python/paimon_read.py");
    let out = Command::new(python())
        .arg(script)
        .args(args)
        .envs(crate::s3::reader_env())
        .output()
        .expect("cannot run paimon_read.py");
    assert!(
        out.status.success(),
        "paimon_read.py {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
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
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The snapshot's metadata: id, commit_user, properties, record counts.
pub fn snapshot(warehouse: &Path, db: &str, table: &str, snapshot: Option<i64>) -> Value {
    let wh = warehouse.display().to_string();
    let snap = snapshot.map(|s| s.to_string());
    let mut args = vec!["snapshot", wh.as_str(), db, table];
    if let Some(s) = &snap {
        args.extend(["--snapshot", s.as_str()]);
    }
    serde_json::from_str(run(&args).trim()).unwrap()
}

/// Rows with `column == value`, through pypaimon's filter (exercises bucket pruning).
pub fn lookup(warehouse: &Path, db: &str, table: &str, column: &str, value: &Value) -> Vec<Value> {
    let wh = warehouse.display().to_string();
    let v = value.to_string();
    run(&["lookup", wh.as_str(), db, table, column, v.as_str()])
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Java Paimon's view of a table (`tests/java/PaimonCheck.java`, run with the paimon-bundle
/// and Hadoop jars FlussLakeTiering runs with, `cluster/flink-tiering/setup.sh`): the latest
/// snapshot (`snapshot`, `commit_user`, `properties`) and the merged rows of `columns`.
pub fn java_read(warehouse: &Path, db: &str, table: &str, columns: &[&str]) -> Value {
    let lib = repo_root().join("target/flink-tiering/lib-tiering");
    let cp = crate::java::jars(
        &[lib],
        |name| {
            ["paimon-", "hadoop-", "slf4j-", "log4j-"]
                .iter()
                .any(|p| name.starts_with(p))
        },
        "cluster/flink-tiering/setup.sh",
    );
    let mut args: Vec<std::path::PathBuf> = vec![warehouse.to_path_buf(), db.into(), table.into()];
    args.extend(columns.iter().map(std::path::PathBuf::from));
    let refs: Vec<&Path> = args.iter().map(std::path::PathBuf::as_path).collect();
    crate::java::run_check("PaimonCheck", &cp, &refs).remove(0)
}
