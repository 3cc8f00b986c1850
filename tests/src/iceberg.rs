//! Iceberg checks: the independent readers (pyiceberg, DuckDB's iceberg extension) run from
//! the project's venv through `tests/python/iceberg_read.py`, Java Iceberg's view of a table,
//! and Iceberg's bucket function.

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
