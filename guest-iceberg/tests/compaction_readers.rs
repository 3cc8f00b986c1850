//! Compacted tables read by real Iceberg readers: the plugin's native build tiers a log table
//! and a primary-key table round by round into a local warehouse (`LocalStorage`), the way
//! the host drives it, compacts them with the maintenance export, and then pyiceberg, DuckDB's
//! iceberg extension and Java Iceberg (the version Fluss's plugin ships) read them: the rows
//! after compaction are the rows before, time travel to the snapshot before still works, and
//! Java's strict parsers accept every snapshot. Tables with the SDK's shared nested columns
//! (ARRAY, MAP, ROW) are compacted too: their rewritten files must also keep the schema's field
//! ids at every level and the metrics Java computes (`tests/java/IcebergFileMetrics.java`).
//!
//! Needs the Python venv (`scripts/setup-python.sh`) and, for the Java checks, a JDK and the
//! Fluss distribution's Iceberg jars (`WITH_ICEBERG=1 cluster/setup.sh`); fails without them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use fluss_lake_guest_sdk::datatype::ColumnType;
use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch};
use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
use fluss_lake_guest_sdk::storage::LocalStorage;
use fluss_lake_guest_sdk::testing::{
    ColumnSpec, NESTED_COLUMNS, committer_context, json_array, log_table, nested_row, pk_table,
    tiered_base, writer_context,
};
use fluss_lake_guest_sdk::wit::{MaintenanceRequest, TableInfo};
use fluss_lake_iceberg::catalog::create_table_if_missing;
use fluss_lake_iceberg::committer::{IcebergCommitter, to_committable};
use fluss_lake_iceberg::maintenance::maintain;
use fluss_lake_iceberg::types::IcebergType;
use fluss_lake_iceberg::writer::IcebergWriter;
use serde_json::{Value, json};

/// The commit timestamp of every tiered row (epoch millis).
const TS_MS: i64 = 1_700_000_000_000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `iceberg_read.py` commands in one of the test process's pooled Python workers; each
/// one's output lines.
fn read(commands: &[Vec<String>]) -> Vec<Result<Vec<Value>, String>> {
    fluss_lake_python_readers::batch("iceberg_read.py", &[], commands)
}

fn ok(r: Result<Vec<Value>, String>) -> Vec<Value> {
    r.unwrap_or_else(|e| panic!("reader failed: {e}"))
}

fn cmd(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// `tests/java/<class>.java` of this crate when it has one (checks only its tests use), else
/// the workspace's.
fn java_source(class: &str) -> PathBuf {
    let own = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/java/{class}.java"));
    if own.exists() {
        own
    } else {
        root().join(format!("tests/java/{class}.java"))
    }
}

/// The classes of [`java_source`]`(class)` compiled against `classpath`, in
/// `target/java-checks/<class>-compaction-<key of source and classpath>`: compiled by the
/// first call that needs them (into a directory of its own, renamed into place, so concurrent
/// tests and runs never see half a compilation) and reused by every later one.
fn compiled(class: &str, classpath: &str) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let source = java_source(class);
    let text = std::fs::read(&source).unwrap();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&text, classpath).hash(&mut hasher);
    let dir = root().join(format!(
        "target/java-checks/{}-compaction-{:016x}",
        class.to_ascii_lowercase(),
        hasher.finish()
    ));
    if dir.exists() {
        return dir;
    }
    let fresh = dir.with_extension(format!("tmp-{}", uuid::Uuid::new_v4()));
    let javac = Command::new("javac")
        .args([
            "-nowarn",
            "-d",
            &fresh.display().to_string(),
            "-cp",
            classpath,
        ])
        .arg(&source)
        .output()
        .expect("javac (a JDK) is needed");
    assert!(
        javac.status.success(),
        "{}",
        String::from_utf8_lossy(&javac.stderr)
    );
    if std::fs::rename(&fresh, &dir).is_err() {
        // Another test or run renamed its compilation into place first.
        let _ = std::fs::remove_dir_all(&fresh);
    }
    dir
}

/// Java Iceberg run on `args` with class `class` from `tests/java` (see [`java_source`]).
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
    let cp = classpath.join(":");
    let classes = compiled(class, &cp);
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
        let rows: Vec<(ChangeType, Value)> = changes
            .iter()
            .map(|(kind, id, name)| (*kind, json!({"id": id, "name": name})))
            .collect();
        self.round_rows(&rows).0
    }

    /// Tiers one round of `changes` (rows of the table's columns in canonical JSON, see
    /// `testing::json_array`): bucket `id % buckets`, offsets counted across buckets. Returns
    /// the snapshot id and, per change, its bucket and offset.
    fn round_rows(&mut self, changes: &[(ChangeType, Value)]) -> (i64, Vec<(i32, i64)>) {
        let config: Vec<(&str, &str)> = self.config.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let fields: Vec<Field> = self
            .table
            .columns
            .iter()
            .map(|c| {
                let ty = ColumnType::parse(&c.data_type).unwrap().arrow_type();
                Field::new(&c.name, ty, c.nullable)
            })
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let mut placed = vec![(0, 0); changes.len()];
        let mut payloads = Vec::new();
        for b in 0..self.table.num_buckets {
            let mine: Vec<usize> = (0..changes.len())
                .filter(|&i| {
                    changes[i].1["id"].as_i64().unwrap() % self.table.num_buckets as i64 == b as i64
                })
                .collect();
            if mine.is_empty() {
                continue;
            }
            let columns = schema
                .fields()
                .iter()
                .map(|f| {
                    let values: Vec<Value> = mine
                        .iter()
                        .map(|&i| changes[i].1[f.name()].clone())
                        .collect();
                    json_array(&values, f.data_type())
                })
                .collect();
            let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
            let kinds: Vec<_> = mine.iter().map(|&i| changes[i].0).collect();
            let rb = make_changelog_batch(&batch, &kinds, self.offset, TS_MS).unwrap();
            for (k, &i) in mine.iter().enumerate() {
                placed[i] = (b, self.offset + k as i64);
            }
            self.offset += mine.len() as i64;
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
        let id = c
            .commit(
                &to_committable(&payloads).unwrap(),
                &[("fluss-offsets".into(), format!("/o/{}", self.offset))],
                base,
            )
            .unwrap()
            .snapshot_id;
        (id, placed)
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

/// Row `row` as pyiceberg 0.12 reads it: a null `list<struct>` (`events`) comes back as an
/// empty list (apache/iceberg-python#3833; the files hold the null, which DuckDB and Java
/// read), as the end-to-end tests' `nested::as_pyiceberg_reads` says.
fn as_pyiceberg_reads(mut row: Value) -> Value {
    if row["events"].is_null() {
        row["events"] = json!([]);
    }
    row
}

/// `row` with the system columns of a row tiered at `bucket` and `offset`.
fn with_system(mut row: Value, bucket: i32, offset: i64) -> Value {
    let o = row.as_object_mut().unwrap();
    o.insert("__bucket".into(), json!(bucket));
    o.insert("__offset".into(), json!(offset));
    o.insert("__timestamp".into(), json!(TS_MS * 1000));
    row
}

/// Panics at the first row (by id) where `got` and `want` differ, naming both.
fn assert_rows(got: Vec<Value>, want: &[Value], what: &str) {
    let by_id = |mut rows: Vec<Value>| {
        rows.sort_by_key(|r| r["id"].as_i64());
        rows
    };
    let (got, want) = (by_id(got), by_id(want.to_vec()));
    if let Some((g, w)) = got.iter().zip(&want).find(|(g, w)| g != w) {
        panic!("{what}: the first row that differs\n got {g}\nwant {w}");
    }
    assert_eq!(got.len(), want.len(), "{what}: rows");
}

/// The Parquet field id of every field of the table's current schema, nested ones included,
/// by the dotted path pyarrow names it with (`element` of a list, `key` and `value` of a map).
fn schema_field_ids(lake: &Lake) -> BTreeMap<String, i64> {
    fn walk(path: String, id: i32, ty: &IcebergType, out: &mut BTreeMap<String, i64>) {
        out.insert(path.clone(), id as i64);
        match ty {
            IcebergType::Struct(fields) => {
                for f in fields {
                    walk(format!("{path}.{}", f.name), f.id, &f.ty, out);
                }
            }
            IcebergType::List(l) => walk(format!("{path}.element"), l.element_id, &l.element, out),
            IcebergType::Map(m) => {
                walk(format!("{path}.key"), m.key_id, &m.key, out);
                walk(format!("{path}.value"), m.value_id, &m.value, out);
            }
            _ => {}
        }
    }
    let schema = fluss_lake_iceberg::hadoop_tables::load(&lake.storage)
        .unwrap()
        .unwrap()
        .metadata
        .current_schema()
        .unwrap();
    let mut out = BTreeMap::new();
    for f in &schema.fields {
        walk(f.name.clone(), f.id, &f.ty, &mut out);
    }
    out
}

/// The Parquet files under the table's `data/` directory.
fn data_files_on_disk(lake: &Lake) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p.display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(&lake.dir.join("data"), &mut out);
    out
}

/// [`NESTED_COLUMNS`] with `id` NOT NULL (a primary key's column).
fn nested_pk_columns() -> Vec<ColumnSpec<'static>> {
    let mut columns = NESTED_COLUMNS.to_vec();
    columns[0].2 = false;
    columns
}

/// Version `version` of key `key`'s row: the nested values (and where they are null or
/// empty) of another row of the shared nested table, under the key.
fn versioned_row(key: i64, version: i64) -> Value {
    let mut row = nested_row(key + 100 * version);
    row["id"] = json!(key);
    row
}

/// Compaction reads nested Parquet back, drops deleted rows and writes it again, which nothing
/// else does: a log table (four rounds of small files per bucket) and a primary-key table
/// (five rounds of inserts, updates to other nested values as Fluss sends them, `-U` then
/// `+U`, and deletes: equality deletes, and position deletes of rows changed again within
/// their round) with the shared nested columns, nulls and empty collections at every level, are
/// compacted; then pyiceberg, DuckDB and Java Iceberg read exactly the rows of the model, time
/// travel to the snapshot before still reads them, every rewritten file carries the table
/// schema's field ids at every level (list elements, map keys and values, struct fields), and
/// its manifest metrics are those Java Iceberg computes from the file (struct leaves kept, list
/// and map contents not).
#[test]
fn compacted_tables_with_nested_columns_read_back_exactly() {
    use ChangeType::*;
    let mut log = Lake::new(
        log_table("db", "t", &NESTED_COLUMNS, &[], 2, &[]),
        "nested-log",
    );
    let mut log_rows = Vec::new();
    let mut log_before = 0;
    for r in 0..4 {
        let rows: Vec<Value> = (r * 20..r * 20 + 20).map(nested_row).collect();
        let changes: Vec<_> = rows.iter().map(|row| (Insert, row.clone())).collect();
        let (id, placed) = log.round_rows(&changes);
        log_before = id;
        for (row, (b, o)) in rows.into_iter().zip(placed) {
            log_rows.push(with_system(row, b, o));
        }
    }

    let columns = nested_pk_columns();
    let mut pk = Lake::new(pk_table("db", "t", &columns, &["id"], 2, &[]), "nested-pk");
    // key → (version, row with system columns).
    let mut live: BTreeMap<i64, (i64, Value)> = BTreeMap::new();
    let mut pk_before = 0;
    for r in 0..5i64 {
        let mut changes = Vec::new();
        for key in (0..16i64).filter(|k| (k + r) % 3 != 0) {
            let version = r + 1;
            match (live.get(&key).map(|(v, _)| *v), (key * 7 + r * 3) % 5) {
                (None, _) => changes.push((Insert, versioned_row(key, version))),
                (Some(old), 0) => changes.push((Delete, versioned_row(key, old))),
                (Some(old), 1 | 2) => {
                    changes.push((UpdateBefore, versioned_row(key, old)));
                    changes.push((UpdateAfter, versioned_row(key, version)));
                }
                _ => {}
            }
        }
        if r == 2 {
            // Keys written and changed again within a round: position deletes.
            for key in 16..20i64 {
                changes.push((Insert, versioned_row(key, 10)));
                if key == 18 {
                    changes.push((Delete, versioned_row(key, 10)));
                } else {
                    changes.push((UpdateBefore, versioned_row(key, 10)));
                    changes.push((UpdateAfter, versioned_row(key, 11)));
                }
            }
        }
        let (id, placed) = pk.round_rows(&changes);
        pk_before = id;
        for ((kind, row), (b, o)) in changes.into_iter().zip(placed) {
            let key = row["id"].as_i64().unwrap();
            match kind {
                Delete => {
                    live.remove(&key);
                }
                UpdateBefore => {}
                _ => {
                    live.insert(key, (r + 1, with_system(row, b, o)));
                }
            }
        }
    }
    let pk_rows: Vec<Value> = live.into_values().map(|(_, r)| r).collect();
    assert!(
        pk_rows.iter().any(|r| r["events"].is_null())
            && pk_rows.iter().any(|r| r["tags"] == json!([]))
            && pk_rows
                .iter()
                .any(|r| r["point"]["x"].is_null() && !r["point"].is_null()),
        "nulls and empty collections at several levels among the live rows"
    );
    let tiered: Vec<String> = [&log, &pk]
        .iter()
        .flat_map(|l| data_files_on_disk(l))
        .collect();

    let (l, p) = (log.path(), pk.path());
    let before = read(&[cmd(&["rows", &p, "--reader", "duckdb"])]);
    let mut before = before.into_iter().map(ok);
    assert_rows(
        before.next().unwrap(),
        &pk_rows,
        "DuckDB, primary keys before compaction",
    );

    assert_eq!(log.compact().len(), 1);
    assert_eq!(pk.compact().len(), 1);

    // The rewritten files: every live file after compaction (Java lists them with metrics).
    let metrics = java("IcebergFileMetrics", &[&l, &p]);
    let rewritten: Vec<String> = metrics
        .iter()
        .map(|m| {
            let path = m["path"].as_str().unwrap();
            path.strip_prefix("file:").unwrap_or(path).to_string()
        })
        .collect();
    assert_eq!(rewritten.len(), 4, "one file per bucket of each table");
    for path in &rewritten {
        assert!(!tiered.contains(path), "{path} is a file compaction wrote");
    }

    let (lb, pb) = (log_before.to_string(), pk_before.to_string());
    let mut commands = vec![
        cmd(&["rows", &l, "--reader", "pyiceberg"]),
        cmd(&["rows", &l, "--reader", "duckdb"]),
        cmd(&["rows", &l, "--snapshot", &lb, "--reader", "pyiceberg"]),
        cmd(&["files", &l]),
        // No delete files are left: pyiceberg (which refuses equality deletes) reads it.
        cmd(&["rows", &p, "--reader", "pyiceberg"]),
        cmd(&["rows", &p, "--reader", "duckdb"]),
        cmd(&["rows", &p, "--snapshot", &pb, "--reader", "duckdb"]),
        cmd(&["files", &p]),
    ];
    for path in &rewritten {
        commands.push(cmd(&["parquet-field-ids", path]));
    }
    let mut after = read(&commands).into_iter().map(ok);
    let mut next = || after.next().unwrap();
    let pyiceberg =
        |rows: &[Value]| -> Vec<Value> { rows.iter().cloned().map(as_pyiceberg_reads).collect() };
    assert_rows(
        next(),
        &pyiceberg(&log_rows),
        "pyiceberg, compacted log table",
    );
    assert_rows(next(), &log_rows, "DuckDB, compacted log table");
    assert_rows(
        next(),
        &pyiceberg(&log_rows),
        "pyiceberg, log table before compaction",
    );
    assert_eq!(next()[0]["data_files"].as_i64(), Some(2), "log table files");
    assert_rows(
        next(),
        &pyiceberg(&pk_rows),
        "pyiceberg, compacted primary keys",
    );
    assert_rows(next(), &pk_rows, "DuckDB, compacted primary keys");
    assert_rows(next(), &pk_rows, "DuckDB, primary keys before compaction");
    let files = &next()[0];
    assert_eq!(
        (files["data_files"].as_i64(), files["delete_files"].as_i64()),
        (Some(2), Some(0)),
        "primary-key table files"
    );
    let (log_ids, pk_ids) = (schema_field_ids(&log), schema_field_ids(&pk));
    assert_eq!(log_ids, pk_ids, "both tables number their fields alike");
    assert!(log_ids.contains_key("events.element.labels.value.element"));
    for path in &rewritten {
        let read: BTreeMap<String, i64> = next()[0]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let id = f["field_id"].as_i64();
                let name = f["name"].as_str().unwrap().to_string();
                (
                    name.clone(),
                    id.unwrap_or_else(|| panic!("{path}: {name} has no id")),
                )
            })
            .collect();
        assert_eq!(read, log_ids, "{path}: Parquet field ids");
    }

    // Java's metrics of a rewritten file are the manifest's; the struct leaves have them, what
    // lists and maps hold has none.
    for m in &metrics {
        assert_eq!(m["manifest"], m["java"], "metrics of {}", m["path"]);
        let counted = |path: &str| {
            m["java"]["value_counts"]
                .get(log_ids[path].to_string())
                .is_some()
        };
        assert!(
            counted("point.x") && counted("point.y") && counted("id"),
            "{m}"
        );
        assert!(!counted("tags.element") && !counted("attrs.key"), "{m}");
        assert!(!counted("events.element.at"), "{m}");
    }

    // Java Iceberg reads the business columns of both tables.
    let names: Vec<&str> = NESTED_COLUMNS.iter().map(|c| c.0).collect();
    for (dir, rows) in [(&l, &log_rows), (&p, &pk_rows)] {
        let mut args = vec![dir.as_str()];
        args.extend(&names);
        let java_rows = java("IcebergRows", &args);
        let business: Vec<Value> = rows
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.as_object_mut()
                    .unwrap()
                    .retain(|k, _| names.contains(&k.as_str()));
                r
            })
            .collect();
        let got = java_rows[0]["rows"].as_array().unwrap().clone();
        assert_rows(got, &business, &format!("Java Iceberg, {dir}"));
    }
    for lake in [&log, &pk] {
        let _ = std::fs::remove_dir_all(lake.dir.parent().unwrap().parent().unwrap());
    }
}
