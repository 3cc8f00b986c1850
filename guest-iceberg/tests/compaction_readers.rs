//! Compacted tables read by real Iceberg readers: the plugin's native build tiers a log table
//! and a primary-key table round by round into a local warehouse (`LocalStorage`), the way
//! the host drives it, compacts them with the maintenance export, and then pyiceberg, DuckDB's
//! iceberg extension and Java Iceberg (the version Fluss's plugin ships) read them: the rows
//! after compaction are the rows before, time travel to the snapshot before still works, and
//! Java's strict parsers accept every snapshot.
//!
//! Needs the Python venv (`scripts/setup-python.sh`) and, for the Java checks, a JDK and the
//! Fluss distribution's Iceberg jars (`WITH_ICEBERG=1 cluster/setup.sh`); fails without them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use arrow_array::{Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
use fluss_lake_guest_sdk::storage::LocalStorage;
use fluss_lake_guest_sdk::testing::{
    committer_context, log_table, pk_table, tiered_base, writer_context,
};
use fluss_lake_guest_sdk::wit::{MaintenanceRequest, TableInfo};
use fluss_lake_iceberg::catalog::create_table_if_missing;
use fluss_lake_iceberg::committer::{IcebergCommitter, to_committable};
use fluss_lake_iceberg::maintenance::maintain;
use fluss_lake_iceberg::writer::IcebergWriter;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `iceberg_read.py` commands in one process; each one's output lines.
fn read(commands: &[Vec<String>]) -> Vec<Result<Vec<Value>, String>> {
    let python = root().join("target/venv/bin/python");
    assert!(
        python.exists(),
        "{} missing: run scripts/setup-python.sh",
        python.display()
    );
    let mut child = Command::new(python)
        .arg(root().join("tests/python/iceberg_read.py"))
        .arg("batch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for c in commands {
            writeln!(stdin, "{}", serde_json::to_string(c).unwrap()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "iceberg_read.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            match v.get("error") {
                Some(e) => Err(e.as_str().unwrap_or_default().to_string()),
                None => Ok(v["out"].as_array().cloned().unwrap_or_default()),
            }
        })
        .collect()
}

fn ok(r: Result<Vec<Value>, String>) -> Vec<Value> {
    r.unwrap_or_else(|e| panic!("reader failed: {e}"))
}

fn cmd(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Java Iceberg run on `args` with class `class` from `tests/java`.
fn java(class: &str, args: &[&str]) -> Vec<Value> {
    let dist = root().join("target/fluss-dist");
    let mut classpath = Vec::new();
    for dir in [dist.join("plugins/iceberg"), dist.join("lib")] {
        for e in std::fs::read_dir(&dir)
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e}: run WITH_ICEBERG=1 cluster/setup.sh",
                    dir.display()
                )
            })
            .flatten()
        {
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".jar") && !name.starts_with("fluss-server") {
                classpath.push(e.path().display().to_string());
            }
        }
    }
    let classes = root().join(format!(
        "target/java-checks/iceberg-compaction-{}",
        uuid::Uuid::new_v4()
    ));
    std::fs::create_dir_all(&classes).unwrap();
    let cp = classpath.join(":");
    let javac = Command::new("javac")
        .args(["-d", &classes.display().to_string(), "-cp", &cp])
        .arg(root().join(format!("tests/java/{class}.java")))
        .output()
        .expect("javac (a JDK) is needed");
    assert!(
        javac.status.success(),
        "{}",
        String::from_utf8_lossy(&javac.stderr)
    );
    let out = Command::new("java")
        .args([
            "-Xmx512m",
            "-cp",
            &format!("{}:{cp}", classes.display()),
            class,
        ])
        .args(args)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&classes);
    assert!(
        out.status.success(),
        "{class}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

struct Lake {
    dir: PathBuf,
    storage: LocalStorage,
    table: TableInfo,
    config: Vec<(&'static str, String)>,
    offset: i64,
}

impl Lake {
    fn new(table: TableInfo, name: &str) -> Lake {
        let wh = root().join(format!(
            "target/test-scratch/iceberg-compaction-{}/{name}",
            uuid::Uuid::new_v4()
        ));
        let dir = wh.join("db/t");
        std::fs::create_dir_all(&dir).unwrap();
        let storage = LocalStorage::new(&dir);
        let config = vec![("warehouse", wh.display().to_string())];
        let lake = Lake {
            dir,
            storage,
            table,
            config,
            offset: 0,
        };
        create_table_if_missing(&lake.storage, &lake.table, &lake.plugin_config()).unwrap();
        lake
    }

    fn plugin_config(&self) -> Vec<(String, String)> {
        self.config
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn round(&mut self, changes: &[(ChangeType, i32, &str)]) -> i64 {
        let config: Vec<(&str, &str)> = self.config.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut payloads = Vec::new();
        for b in 0..self.table.num_buckets {
            let rows: Vec<_> = changes
                .iter()
                .filter(|c| c.1 % self.table.num_buckets == b)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let schema = Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int32, false),
                Field::new("name", DataType::Utf8, true),
            ]));
            let batch = RecordBatch::try_new(
                schema,
                vec![
                    Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1))),
                    Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.2))),
                ],
            )
            .unwrap();
            let kinds: Vec<_> = rows.iter().map(|r| r.0).collect();
            let rb = make_changelog_batch(&batch, &kinds, self.offset, 1_700_000_000_000).unwrap();
            self.offset += rows.len() as i64;
            let mut w = IcebergWriter::open(
                &writer_context(&self.table, b, None, &config),
                &self.storage,
            )
            .unwrap();
            w.write(rb).unwrap();
            payloads.push(w.complete().unwrap().payload);
        }
        let mut c =
            IcebergCommitter::open(committer_context(&self.table, &config), &self.storage).unwrap();
        let base = tiered_base(&c);
        c.commit(
            &to_committable(&payloads).unwrap(),
            &[("fluss-offsets".into(), format!("/o/{}", self.offset))],
            base,
        )
        .unwrap()
        .snapshot_id
    }

    fn compact(&self) -> Vec<i64> {
        let request = MaintenanceRequest {
            expire_snapshots: false,
            compact: true,
            keep_since: None,
            deadline_millis: i64::MAX,
        };
        maintain(&self.storage, &self.plugin_config(), &request)
            .unwrap()
            .committed_snapshots
    }

    fn path(&self) -> String {
        self.dir.display().to_string()
    }
}

#[test]
fn compacted_tables_read_the_same_with_pyiceberg_duckdb_and_java_iceberg() {
    use ChangeType::*;
    let columns = [("id", "INT", false), ("name", "STRING", true)];
    let mut log = Lake::new(log_table("db", "t", &columns, &[], 2, &[]), "log");
    for r in 0..5 {
        let names: Vec<String> = (0..6).map(|i| format!("r{r}-{i}")).collect();
        let changes: Vec<_> = (0..6)
            .map(|i| (Insert, r * 10 + i, names[i as usize].as_str()))
            .collect();
        log.round(&changes);
    }
    let mut pk = Lake::new(pk_table("db", "t", &columns, &["id"], 1, &[]), "pk");
    pk.round(&[
        (Insert, 1, "a"),
        (Insert, 2, "b"),
        (Insert, 3, "c"),
        (Insert, 4, "d"),
    ]);
    pk.round(&[
        (Insert, 5, "e"),
        (UpdateBefore, 5, "e"),
        (UpdateAfter, 5, "e2"),
        (UpdateBefore, 1, "a"),
        (UpdateAfter, 1, "a2"),
    ]);
    pk.round(&[
        (Delete, 2, "b"),
        (Insert, 6, "f"),
        (UpdateBefore, 3, "c"),
        (UpdateAfter, 3, "c2"),
    ]);
    let pk_before = pk.round(&[
        (UpdateBefore, 4, "d"),
        (UpdateAfter, 4, "d2"),
        (Insert, 7, "g"),
    ]);
    let log_before = fluss_lake_iceberg::hadoop_tables::load(&log.storage)
        .unwrap()
        .unwrap()
        .metadata
        .current_snapshot_id()
        .unwrap();

    let (l, p) = (log.path(), pk.path());
    let lb = log_before.to_string();
    let pb = pk_before.to_string();
    let before = read(&[
        cmd(&["rows", &l, "--reader", "pyiceberg"]),
        cmd(&["rows", &p, "--reader", "duckdb"]),
        cmd(&["plan", &l]),
    ]);
    let mut before = before.into_iter().map(ok);
    let (log_rows, pk_rows, log_plan) = (
        before.next().unwrap(),
        before.next().unwrap(),
        before.next().unwrap(),
    );
    assert_eq!(log_rows.len(), 30);
    assert_eq!(log_plan[0]["files"], 10);
    assert_eq!(pk_rows.len(), 6, "{pk_rows:?}");

    assert_eq!(log.compact().len(), 1);
    assert_eq!(pk.compact().len(), 1);

    let after = read(&[
        cmd(&["rows", &l, "--reader", "pyiceberg"]),
        cmd(&["rows", &l, "--reader", "duckdb"]),
        cmd(&["rows", &l, "--snapshot", &lb, "--reader", "pyiceberg"]),
        cmd(&["plan", &l]),
        // The compacted primary-key table has no delete files left: pyiceberg (which refuses
        // equality deletes) reads it.
        cmd(&["rows", &p, "--reader", "pyiceberg"]),
        cmd(&["rows", &p, "--reader", "duckdb"]),
        cmd(&["rows", &p, "--snapshot", &pb, "--reader", "duckdb"]),
        cmd(&["plan", &p]),
        cmd(&["snapshots", &p]),
    ]);
    let mut after = after.into_iter().map(ok);
    let mut next = || after.next().unwrap();
    assert_eq!(next(), log_rows, "pyiceberg, compacted");
    assert_eq!(next(), log_rows, "DuckDB, compacted");
    assert_eq!(next(), log_rows, "time travel");
    let plan = next();
    assert_eq!(
        (plan[0]["files"].as_i64(), plan[0]["delete_files"].as_i64()),
        (Some(2), Some(0))
    );
    assert_eq!(next(), pk_rows, "pyiceberg, compacted");
    assert_eq!(next(), pk_rows, "DuckDB, compacted");
    assert_eq!(next(), pk_rows, "time travel");
    let plan = next();
    assert_eq!(
        (plan[0]["files"].as_i64(), plan[0]["delete_files"].as_i64()),
        (Some(1), Some(0))
    );
    let snaps = next();
    let last = snaps.last().unwrap();
    assert_eq!(last["operation"], "replace");
    assert_eq!(last["summary"]["commit-user"], "__fluss_lake_maintenance");
    assert!(last["summary"].get("fluss-offsets").is_none());

    // Java Iceberg parses every snapshot of both tables and reads the primary-key rows.
    let checks = java("IcebergCheck", &[&l, &p]);
    assert_eq!(checks.len(), 2);
    for c in &checks {
        let snaps = c["snapshots"].as_array().unwrap();
        assert_eq!(snaps.last().unwrap()["operation"], "replace");
    }
    let java_rows = java("IcebergRows", &[&p, "id", "name"]);
    let mut got: Vec<(i64, String)> = java_rows[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_i64().unwrap(),
                r["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(i64, String)> = pk_rows
        .iter()
        .map(|r| {
            (
                r["id"].as_i64().unwrap(),
                r["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    want.sort();
    assert_eq!(got, want);
    for lake in [&log, &pk] {
        let _ = std::fs::remove_dir_all(lake.dir.parent().unwrap().parent().unwrap());
    }
}
