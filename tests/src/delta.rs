//! deltalake (delta-rs's Python binding, Delta's Rust implementation) through
//! `tests/python/delta_read.py`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The Delta plugin, built by `scripts/build-plugins.sh` (which runs
/// `examples/guest-delta/build.sh`).
pub fn plugin() -> PathBuf {
    crate::host::plugin("delta")
}

/// The two ways delta_read.py reads rows: pyarrow over the listed files, or delta-rs's own
/// DataFusion scan.
pub const READERS: [&str; 2] = ["pyarrow", "datafusion"];

/// Runs several delta_read.py commands in one pooled worker (`crate::python`); each command's
/// output.
pub fn batch(commands: &[Vec<String>]) -> Vec<Vec<Value>> {
    crate::python::batch("delta_read.py", commands)
        .into_iter()
        .zip(commands)
        .map(|(r, c)| r.unwrap_or_else(|e| panic!("delta_read.py {c:?}: {e}")))
        .collect()
}

fn one(args: Vec<String>) -> Vec<Value> {
    batch(&[args]).remove(0)
}

fn args(command: &str, table: &Path, version: Option<u64>) -> Vec<String> {
    let mut a = vec![command.to_string(), table.display().to_string()];
    if let Some(v) = version {
        a.extend(["--version".to_string(), v.to_string()]);
    }
    a
}

/// The `rows` command: every row at `version` (or the latest) with `reader`, system columns
/// included, in the canonical JSON form.
pub fn rows_command(table: &Path, version: Option<u64>, reader: &str) -> Vec<String> {
    let mut a = args("rows", table, version);
    a.extend(["--reader".to_string(), reader.to_string()]);
    a
}

/// Every row at `version` (or the latest) with `reader`.
pub fn rows(table: &Path, version: Option<u64>, reader: &str) -> Vec<Value> {
    one(rows_command(table, version, reader))
}

/// The rows a SQL `filter` selects in delta-rs's DataFusion scan (which prunes files by
/// partition values and statistics).
pub fn filtered(table: &Path, filter: &str) -> Vec<Value> {
    let mut a = args("rows", table, None);
    a.extend(["--filter".to_string(), filter.to_string()]);
    one(a)
}

/// `(rows scanned, DeltaTable.count())` at `version`; the latter sums the files'
/// `numRecords` statistics.
pub fn count(table: &Path, version: Option<u64>) -> (i64, i64) {
    let v = one(args("count", table, version)).remove(0);
    (
        v["count"].as_i64().unwrap(),
        v["stats_count"].as_i64().unwrap(),
    )
}

/// `DeltaTable.history()`, oldest version first: each version's commitInfo plus `version`.
pub fn history(table: &Path) -> Vec<Value> {
    one(args("history", table, None))
}

/// The data files of `version` as delta-rs parsed their `add` actions: path, size,
/// num_records, partition values, min / max / null_count statistics.
pub fn files(table: &Path, version: Option<u64>) -> Vec<Value> {
    one(args("files", table, version))
}

/// Version, protocol, partition columns, schema and configuration.
pub fn info(table: &Path, version: Option<u64>) -> Value {
    one(args("info", table, version)).remove(0)
}

/// Appends the first `rows` rows again with delta-rs's own writer; returns the new version.
pub fn append_copy(table: &Path, rows: usize) -> u64 {
    let a = vec![
        "append-copy".to_string(),
        table.display().to_string(),
        rows.to_string(),
    ];
    one(a)[0]["version"].as_u64().unwrap()
}
