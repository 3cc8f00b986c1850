//! Checks on what a lake table holds, shared by the end-to-end tests.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

/// The business columns of lake rows (system columns stripped), sorted by `id`.
pub fn business(rows: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = rows
        .iter()
        .map(|r| {
            let mut o = r.as_object().unwrap().clone();
            o.retain(|k, _| !k.starts_with("__"));
            Value::Object(o)
        })
        .collect();
    out.sort_by_key(|r| r["id"].as_i64().unwrap());
    out
}

/// No (partition, bucket, offset) appears twice: nothing was tiered twice. Returns the
/// number of rows per (partition columns, bucket). Tables without system columns pass.
pub fn assert_no_duplicate_offsets(
    rows: &[Value],
    partition_keys: &[&str],
) -> HashMap<(Vec<String>, i64), usize> {
    let mut seen: HashSet<(Vec<String>, i64, i64)> = HashSet::new();
    let mut counts = HashMap::new();
    for r in rows {
        let Some(offset) = r.get("__offset").and_then(Value::as_i64) else {
            continue;
        };
        let part: Vec<String> = partition_keys
            .iter()
            .map(|k| r[*k].as_str().unwrap_or("").to_string())
            .collect();
        let bucket = r["__bucket"].as_i64().unwrap();
        assert!(
            seen.insert((part.clone(), bucket, offset)),
            "row tiered twice: partition {part:?} bucket {bucket} offset {offset}"
        );
        *counts.entry((part, bucket)).or_insert(0) += 1;
    }
    counts
}
