//! Iceberg checks: the independent readers (pyiceberg, DuckDB's iceberg extension) run from
//! the project's venv through `tests/python/iceberg_read.py`, a driver that runs a format
//! plugin's `.wasm` in the host's plugin runtime against a local warehouse without Fluss,
//! and Iceberg's bucket function.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use arrow::array::RecordBatch;
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::storage::ScopedStorage;
use fluss_lake_host::plugin::wit::{
    CommitResult, CommitterContext, RowBatch, TableInfo, WriterContext,
};
use fluss_lake_host::plugin::{Plugin, PluginInstance};
use serde_json::Value;

use crate::repo_root;

/// Runs `iceberg_read.py` commands in one Python process; each command's output lines (as
/// JSON), or `Err(message)` when the command raised.
pub fn read_batch(commands: &[Vec<String>]) -> Vec<Result<Vec<Value>, String>> {
    let py = repo_root().join("target/venv/bin/python");
    assert!(
        py.exists(),
        "{} missing: run scripts/setup-python.sh",
        py.display()
    );
    let mut child = Command::new(py)
        .arg(repo_root().join("tests/python/iceberg_read.py"))
        .arg("batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running iceberg_read.py");
    {
        let mut stdin = child.stdin.take().unwrap();
        for c in commands {
            writeln!(stdin, "{}", serde_json::to_string(c).unwrap()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "iceberg_read.py batch failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), commands.len(), "one result per command");
    lines
        .into_iter()
        .map(|v| match v.get("error") {
            Some(e) => Err(e.as_str().unwrap_or_default().to_string()),
            None => Ok(v["out"].as_array().cloned().unwrap_or_default()),
        })
        .collect()
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

/// One split of a round: its bucket, partition name and batches.
pub struct SplitInput {
    pub bucket: i32,
    pub partition: Option<String>,
    pub batches: Vec<RowBatch>,
}

/// A row batch as the host sends it: Arrow IPC plus per-row change types (empty = all
/// appends), offsets and timestamps (millis).
pub fn row_batch(
    batch: &RecordBatch,
    change_types: Vec<u8>,
    first_offset: i64,
    ts: i64,
) -> RowBatch {
    let n = batch.num_rows() as i64;
    RowBatch {
        ipc: fluss_lake_host::fluss::reader::encode_ipc(batch).expect("ipc"),
        change_types,
        log_offsets: (first_offset..first_offset + n).collect(),
        timestamps: vec![ts; n as usize],
    }
}

/// Runs a format plugin's `.wasm` in the host's plugin runtime (the same engine, limits and
/// scoped storage the host uses), one instance per split and one for the committer, as a
/// tiering round does.
pub struct ComponentDriver {
    plugin: Arc<Plugin>,
    pub warehouse: PathBuf,
    pub config: Vec<(String, String)>,
}

impl ComponentDriver {
    pub async fn load(wasm: &Path, warehouse: &Path) -> Self {
        let engine = Arc::new(
            PluginEngine::new(EngineSettings {
                cache_dir: None,
                instance_memory_limit: 1 << 30,
            })
            .unwrap(),
        );
        let plugin = Plugin::load(engine, wasm).await.expect("plugin loads");
        std::fs::create_dir_all(warehouse).unwrap();
        ComponentDriver {
            plugin: Arc::new(plugin),
            warehouse: warehouse.to_path_buf(),
            config: vec![("warehouse".to_string(), warehouse.display().to_string())],
        }
    }

    async fn instance(&self, table: &TableInfo) -> PluginInstance {
        let mut i = PluginInstance::new(&self.plugin, "test".into())
            .await
            .unwrap();
        let location = i.table_location(table, &self.config).await.unwrap();
        i.set_storage(
            ScopedStorage::local(&self.warehouse.display().to_string(), &location).unwrap(),
        );
        i
    }

    /// The table's directory.
    pub async fn table_dir(&self, table: &TableInfo) -> PathBuf {
        let mut i = PluginInstance::new(&self.plugin, "test".into())
            .await
            .unwrap();
        self.warehouse
            .join(i.table_location(table, &self.config).await.unwrap())
    }

    pub async fn create(&self, table: &TableInfo) -> bool {
        let mut i = self.instance(table).await;
        let created = i
            .create_table_if_missing(table, &self.config)
            .await
            .unwrap();
        i.validate_table(table, &self.config).await.unwrap();
        created
    }

    /// Writes the splits and commits them with `properties`.
    pub async fn round(
        &self,
        table: &TableInfo,
        splits: Vec<SplitInput>,
        properties: Vec<(String, String)>,
    ) -> CommitResult {
        let mut results = Vec::new();
        for (k, split) in splits.into_iter().enumerate() {
            let mut i = self.instance(table).await;
            let context = WriterContext {
                table: table.clone(),
                bucket: split.bucket,
                partition_id: split.partition.as_ref().map(|_| 1),
                partition_name: split.partition.clone(),
                split_index: k as i32,
                round_timestamp: 0,
                config: self.config.clone(),
            };
            let w = i.open_writer(&context).await.unwrap();
            for b in &split.batches {
                i.write(&w, b).await.unwrap();
            }
            results.push(i.complete(w).await.unwrap().payload);
        }
        let mut i = self.instance(table).await;
        let c = i
            .open_committer(&CommitterContext {
                table: table.clone(),
                config: self.config.clone(),
                tiering_config: Vec::new(),
            })
            .await
            .unwrap();
        let committable = i.to_committable(&c, &results).await.unwrap();
        i.commit(&c, &committable, &properties).await.unwrap()
    }

    /// `get-missing-lake-snapshot(latest)`: the snapshot id and its `fluss-offsets`.
    pub async fn missing_snapshot(
        &self,
        table: &TableInfo,
        latest: Option<i64>,
    ) -> Option<(i64, Option<String>)> {
        let mut i = self.instance(table).await;
        let c = i
            .open_committer(&CommitterContext {
                table: table.clone(),
                config: self.config.clone(),
                tiering_config: Vec::new(),
            })
            .await
            .unwrap();
        i.get_missing_lake_snapshot(&c, latest)
            .await
            .unwrap()
            .map(|s| {
                let offsets = s
                    .properties
                    .iter()
                    .find(|(k, _)| k == "fluss-offsets")
                    .map(|(_, v)| v.clone());
                (s.snapshot_id, offsets)
            })
    }
}

/// Java Iceberg's view of tables (`tests/java/IcebergCheck.java`, run with the Iceberg jars
/// of Fluss's own Iceberg plugin that `cluster/setup.sh` installs): one JSON object per
/// table with its schema, spec, snapshots and every snapshot's scan plan. Fails (never
/// skips) without a JDK or the jars.
pub fn java_check(table_dirs: &[&Path]) -> Vec<Value> {
    let root = repo_root();
    let dist = root.join("target/fluss-dist");
    let mut cp: Vec<PathBuf> = Vec::new();
    for dir in [dist.join("plugins/iceberg"), dist.join("lib")] {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: run WITH_ICEBERG=1 cluster/setup.sh (scripts/test.sh does)",
                dir.display()
            )
        });
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".jar") && !name.starts_with("fluss-server") {
                cp.push(e.path());
            }
        }
    }
    assert!(
        cp.iter()
            .any(|p| p.to_string_lossy().contains("fluss-lake-iceberg")),
        "the Iceberg plugin jar is missing: run WITH_ICEBERG=1 cluster/setup.sh"
    );
    let classes = root.join("target/java-iceberg-check");
    std::fs::create_dir_all(&classes).unwrap();
    let classpath = cp
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let javac = Command::new("javac")
        .args(["-d", &classes.display().to_string(), "-cp", &classpath])
        .arg(root.join("tests/java/IcebergCheck.java"))
        .output()
        .expect("javac (a JDK) is needed");
    assert!(
        javac.status.success(),
        "javac failed:\n{}",
        String::from_utf8_lossy(&javac.stderr)
    );
    let out = Command::new("java")
        .args([
            "-Xmx512m",
            "-Dlog4j2.level=ERROR",
            "-cp",
            &format!("{}:{classpath}", classes.display()),
            "IcebergCheck",
        ])
        .args(table_dirs)
        .output()
        .expect("java");
    assert!(
        out.status.success(),
        "Java Iceberg could not read the tables:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_function_matches_the_iceberg_spec() {
        // The Iceberg spec's test vector: hash(34L) = 2017239379.
        assert_eq!(iceberg_bucket(34, i32::MAX), 2017239379);
    }
}
