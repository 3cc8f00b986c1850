//! Helpers shared by the pypaimon integration tests: the workspace paths, the venv's Python
//! and running `tests/python/paimon_read.py` commands in the test process's pooled Python
//! workers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use fluss_lake_guest_sdk::maintenance::Compacted;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_paimon::compact::compact;
use fluss_lake_paimon::schema::load_latest_schema;
use serde_json::Value as Json;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The venv's Python, which runs pypaimon (`target/venv`, from `scripts/setup-python.sh`).
pub use fluss_lake_python_readers::python;

/// Runs `paimon_read.py` commands (argument lists without the warehouse, which is inserted
/// after the command name) in one of the test process's pooled Python workers; returns each
/// command's output lines.
pub fn read_many(warehouse: &Path, commands: &[Vec<String>]) -> Vec<Vec<Json>> {
    let commands: Vec<Vec<String>> = commands
        .iter()
        .map(|c| {
            let mut args = vec![c[0].clone(), warehouse.to_str().unwrap().to_string()];
            args.extend(c[1..].iter().cloned());
            args
        })
        .collect();
    fluss_lake_python_readers::batch("paimon_read.py", &[], &commands)
        .into_iter()
        .zip(&commands)
        .map(|(out, c)| out.unwrap_or_else(|e| panic!("paimon_read.py {c:?} failed: {e}")))
        .collect()
}

/// A command's arguments as owned strings.
pub fn cmd(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A name unique to this process and moment, for scratch warehouses.
pub fn uuid_like() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("{}-{}", t.as_nanos(), std::process::id())
}

/// A new, empty scratch warehouse `target/test-warehouses/<prefix>-<unique>`.
pub fn scratch_warehouse(prefix: &str) -> PathBuf {
    let w = root()
        .join("target/test-warehouses")
        .join(format!("{prefix}-{}", uuid_like()));
    std::fs::create_dir_all(&w).unwrap();
    w
}

/// The classpath (joined with `:`) of the Paimon jars `cluster/setup.sh` installs into
/// `target/fluss-dist`: Fluss 0.9.1's Paimon plugin, the paimon-bundle (1.3.1) and Hadoop it
/// runs with, and logging.
pub fn paimon_jars() -> String {
    let dist = root().join("target/fluss-dist");
    let mut jars = Vec::new();
    for (dir, prefixes) in [
        (
            "plugins/paimon",
            &[
                "paimon-bundle-",
                "flink-shaded-hadoop-2-uber-",
                "fluss-lake-paimon-",
            ][..],
        ),
        ("lib", &["log4j-"][..]),
        ("lib-client", &["slf4j-api-", "fluss-client-"][..]),
    ] {
        let entries = std::fs::read_dir(dist.join(dir)).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run cluster/setup.sh first)",
                dist.join(dir).display()
            )
        });
        for e in entries {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".jar") && prefixes.iter().any(|p| name.starts_with(p)) {
                jars.push(path.display().to_string());
            }
        }
    }
    assert!(
        jars.iter().any(|j| j.contains("paimon-bundle-1.3.1")),
        "{jars:?}"
    );
    jars.join(":")
}

/// Java Paimon's merged read of the latest snapshot of `db.table` (`tests/java/PaimonCheck.java`,
/// the workspace's Java Paimon reader): `{"snapshot", "commit_user", "properties", "rows"}`,
/// the rows holding `columns` in the tests' canonical JSON. Needs a JDK and [`paimon_jars`].
pub fn java_paimon_read(warehouse: &Path, db: &str, table: &str, columns: &[&str]) -> Json {
    let jars = paimon_jars();
    let classes = compiled_java_check("PaimonCheck", &jars);
    let out = Command::new("java")
        .args([
            "-XX:TieredStopAtLevel=1",
            "-Xmx512m",
            "-Dlog4j2.level=ERROR",
        ])
        .arg("-cp")
        .arg(format!("{}:{jars}", classes.display()))
        .arg("PaimonCheck")
        .arg(warehouse)
        .args([db, table])
        .args(columns)
        .output()
        .expect("running the JDK");
    assert!(
        out.status.success(),
        "PaimonCheck (Java Paimon) could not read {db}.{table}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find(|l| l.starts_with('{'))
        .map(str::to_string)
        .expect("PaimonCheck prints one JSON line");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The classes of `tests/java/<class>.java` compiled against `classpath`, in
/// `target/java-checks/<class>-guest-<key of source and classpath>`: compiled by the first
/// test that needs them (into a directory of its own, renamed into place, so concurrent tests
/// and runs never see half a compilation) and reused by every later one.
fn compiled_java_check(class: &str, classpath: &str) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let source = root().join(format!("tests/java/{class}.java"));
    let text = std::fs::read(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (&text, classpath).hash(&mut hasher);
    let dir = root().join("target/java-checks").join(format!(
        "{}-guest-{:016x}",
        class.to_ascii_lowercase(),
        hasher.finish()
    ));
    if dir.exists() {
        return dir;
    }
    let fresh = dir.with_extension(format!("tmp-{}", uuid_like()));
    let out = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(&fresh)
        .args(["-cp", classpath])
        .arg(&source)
        .output()
        .expect("javac (a JDK) is needed");
    assert!(
        out.status.success(),
        "javac {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    if std::fs::rename(&fresh, &dir).is_err() {
        // Another test or run renamed its compilation into place first.
        let _ = std::fs::remove_dir_all(&fresh);
    }
    dir
}

/// Compacts the table in `storage` as a maintenance call does, with plugin options `config`
/// and no deadline.
pub fn compact_now(storage: &dyn Storage, config: &[(&str, &str)]) -> Compacted {
    let schema = load_latest_schema(storage).unwrap().unwrap();
    let config: Vec<(String, String)> = config
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let now = fluss_lake_guest_sdk::clock::now_millis;
    compact(storage, &config, &schema, &now, i64::MAX).unwrap()
}
