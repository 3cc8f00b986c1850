//! pylance (Lance's own reader and writer) through `tests/python/lance_read.py`.

use std::path::Path;

use serde_json::Value;

fn one(args: &[String]) -> Vec<Value> {
    crate::python::batch("lance_read.py", &[args.to_vec()])
        .remove(0)
        .unwrap_or_else(|e| panic!("lance_read.py {args:?}: {e}"))
}

fn args(command: &str, dataset: &Path, version: Option<u64>) -> Vec<String> {
    let mut a = vec![command.to_string(), dataset.display().to_string()];
    if let Some(v) = version {
        a.extend(["--version".to_string(), v.to_string()]);
    }
    a
}

/// Every row (at `version`, or the latest), in the canonical JSON form, sorted.
pub fn rows(dataset: &Path, version: Option<u64>) -> Vec<Value> {
    one(&args("rows", dataset, version))
}

/// The rows a Lance SQL `filter` selects (pushed into pylance's scan).
pub fn filtered(dataset: &Path, filter: &str) -> Vec<Value> {
    let mut a = args("rows", dataset, None);
    a.extend(["--filter".to_string(), filter.to_string()]);
    one(&a)
}

/// `count_rows()` at `version`.
pub fn count(dataset: &Path, version: Option<u64>) -> i64 {
    one(&args("count", dataset, version))[0]["count"]
        .as_i64()
        .unwrap()
}

/// The dataset's versions, oldest first.
pub fn versions(dataset: &Path) -> Vec<u64> {
    one(&args("versions", dataset, None))
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect()
}

/// `read_transaction(version)`: read_version, uuid, operation, properties.
pub fn transaction(dataset: &Path, version: u64) -> Value {
    let a = vec![
        "transaction".to_string(),
        dataset.display().to_string(),
        version.to_string(),
    ];
    one(&a).remove(0)
}

/// Version, data storage version, fragments and schema.
pub fn info(dataset: &Path, version: Option<u64>) -> Value {
    one(&args("info", dataset, version)).remove(0)
}

/// Appends the first `rows` rows again with pylance's own writer; returns the new version.
pub fn append_copy(dataset: &Path, rows: usize) -> u64 {
    let a = vec![
        "append-copy".to_string(),
        dataset.display().to_string(),
        rows.to_string(),
    ];
    one(&a)[0]["version"].as_u64().unwrap()
}
