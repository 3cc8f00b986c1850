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

/// Waits until Fluss's latest lake snapshot covers `ends` (see
/// [`crate::data::wait_for_all_lake_offsets`]); panics with the host's and the coordinator's
/// logs. Returns the snapshot id.
pub async fn wait_registered(
    c: &crate::cluster::ClusterInfo,
    admin: &fluss::client::FlussAdmin,
    path: &fluss::metadata::TablePath,
    ends: &HashMap<(Option<i64>, i32), i64>,
    host: &crate::host::HostProcess,
) -> i64 {
    crate::data::wait_for_all_lake_offsets(admin, path, ends, std::time::Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{e}\nhost log:\n{}\ncoordinator:\n{}",
                host.log(),
                c.coordinator_log_tail(40)
            )
        })
}

/// The offsets in a Fluss offsets file (what `fluss-offsets` names): (partition, bucket) →
/// offset, from `{"bucket_offsets": [..]}` or `{"partition_offsets": [{"partition_id",
/// "bucket_offsets"}]}`; unknown (-1) and zero offsets are left out.
pub fn read_offsets_file(path: &str) -> HashMap<(Option<i64>, i32), i64> {
    let file = path.strip_prefix("file:").unwrap_or(path);
    let offsets: Value = serde_json::from_str(
        &std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}")),
    )
    .unwrap();
    let mut out = HashMap::new();
    let mut add = |partition: Option<i64>, list: &Value| {
        for (b, o) in list.as_array().unwrap().iter().enumerate() {
            let o = o.as_i64().unwrap();
            if o > 0 {
                out.insert((partition, b as i32), o);
            }
        }
    };
    if let Some(list) = offsets.get("bucket_offsets") {
        add(None, list);
    }
    for p in offsets["partition_offsets"]
        .as_array()
        .into_iter()
        .flatten()
    {
        add(p["partition_id"].as_i64(), &p["bucket_offsets"]);
    }
    out
}

/// `ends` without the empty buckets, to compare with [`read_offsets_file`].
pub fn nonzero(ends: &HashMap<(Option<i64>, i32), i64>) -> HashMap<(Option<i64>, i32), i64> {
    ends.iter()
        .filter(|(_, o)| **o > 0)
        .map(|(k, o)| (*k, *o))
        .collect()
}

/// Lets the host run `rounds` more rounds of `path` that find nothing new to tier, and returns
/// the lake snapshot Fluss holds afterwards, which an idle round must leave as it was.
pub async fn after_idle_rounds(
    h: &mut crate::host::HostProcess,
    admin: &fluss::client::FlussAdmin,
    path: &fluss::metadata::TablePath,
    rounds: usize,
) -> fluss::metadata::LakeSnapshot {
    h.wait_for_more_logs(
        &format!(
            "nothing new to tier table={}.{}",
            path.database(),
            path.table()
        ),
        rounds,
        std::time::Duration::from_secs(60),
    )
    .await;
    admin.get_latest_lake_snapshot(path).await.unwrap()
}
