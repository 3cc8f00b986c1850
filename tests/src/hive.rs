//! The test Hive metastore (`cluster/hive-metastore/`: Apache Hive's standalone metastore 4.0.1
//! on embedded Derby, on 127.0.0.1, its warehouse on local disk) and Java's view of the tables it
//! keeps:
//!
//! - Iceberg tables (`datalake.iceberg.type=hive`): Java Iceberg's `HiveCatalog` registers a
//!   table, reads its rows and commits as another engine would, and the metastore's own client
//!   reads the table's `metadata_location` (`tests/java/HiveTables.java`, `IcebergRows --hive`).
//!   They run with the Iceberg jars of Fluss's Iceberg plugin (what [`crate::iceberg::java_check`]
//!   runs with), then `iceberg-hive-metastore` and Hive's `HiveConf`
//!   (`target/hive-metastore-dist/lib-client`), then the metastore's own jars (its client,
//!   Thrift, Hadoop; `lib`).
//! - Paimon tables (`datalake.paimon.metastore=hive`): Java Paimon's `HiveCatalog` registers a
//!   table that is on disk and reads its rows, and another process holds the metastore's lock of
//!   a table (`tests/java/PaimonHive.java`, `PaimonCheck --hive`). They run with the
//!   `paimon-bundle` of Fluss's Paimon plugin (which holds Paimon's `HiveCatalog`), then
//!   `HiveConf` (`lib-client`), `hive-serde` and the Hadoop classes Paimon's catalog loads
//!   (`lib-paimon`), then `lib`.
//!
//! All of them are installed by `cluster/hive-metastore/setup.sh` (and `cluster/setup.sh`). The
//! checks fail, never skip, without them.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::repo_root;

/// The metastore of `cluster/hive-metastore/start.sh`, as its `server.env` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiveMetastore {
    uri: String,
    warehouse: PathBuf,
}

impl HiveMetastore {
    /// The metastore, started if it is not up: `cluster/hive-metastore/start.sh` (which leaves
    /// one that runs with the same settings as it is), one starter at a time across threads and
    /// processes, then its `server.env`. Panics, never skips, when it cannot start (the script's
    /// output holds the end of the metastore's log).
    pub fn start() -> HiveMetastore {
        let dir = repo_root().join("target/hive-metastore");
        let lock = std::fs::File::create(dir.with_extension("lock")).unwrap();
        lock.lock().unwrap();
        let out = std::process::Command::new(repo_root().join("cluster/hive-metastore/start.sh"))
            .output()
            .expect("cannot run cluster/hive-metastore/start.sh");
        assert!(
            out.status.success(),
            "cluster/hive-metastore/start.sh failed (run cluster/hive-metastore/setup.sh first; \
             scripts/test.sh does):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let file = dir.join("server.env");
        let get = crate::server_env(&file);
        HiveMetastore {
            uri: get("HIVE_METASTORE_URI"),
            warehouse: PathBuf::from(get("HIVE_METASTORE_WAREHOUSE")),
        }
    }

    /// `thrift://127.0.0.1:<port>` (`HIVE_METASTORE_PORT` of `cluster/hive-metastore/env.sh`,
    /// 9883): what `datalake.iceberg.uri` and the Java checks are given.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The metastore's warehouse (`metastore.warehouse.dir`), a local directory: where a
    /// database without a location of its own puts its tables (`<warehouse>/<db>.db/<table>`).
    pub fn warehouse(&self) -> &Path {
        &self.warehouse
    }
}

/// Registers the Iceberg metadata file `metadata_file` (a path or `file:` URL) as the current
/// metadata of the new table `db.table` in the metastore at `uri`, creating database `db` if it
/// is missing (`HiveTables register`: Java Iceberg's `HiveCatalog.registerTable`, under a
/// metastore lock, as Java's catalogs do). Returns the table's `metadata_location` afterwards.
pub fn register(uri: &str, db: &str, table: &str, metadata_file: &str) -> String {
    hive_tables(&["register", uri, db, table, metadata_file])
        .expect("a registered table has a metadata_location")
}

/// Java Iceberg's merged rows of `db.table`'s current snapshot, loaded from the metastore at
/// `uri` by `HiveCatalog` (`IcebergRows --hive`, deletes applied): `{"table": "db.table",
/// "snapshot", "rows": [{column: value}]}` with `columns`, in the form of
/// [`crate::iceberg::java_rows`].
pub fn java_hive_rows(uri: &str, db: &str, table: &str, columns: &[&str]) -> Value {
    let name = format!("{db}.{table}");
    let mut args: Vec<&Path> = vec![Path::new("--hive"), Path::new(uri), Path::new(&name)];
    args.extend(columns.iter().map(Path::new));
    crate::java::run_check("IcebergRows", &java_classpath(), &args).remove(0)
}

/// Another engine's commit to `db.table`: the table property `key` set to `value` through Java
/// Iceberg's `HiveCatalog` with its defaults (`HiveTables rival`): a new metadata file, then,
/// under a metastore lock, the table's `metadata_location` checked against the one it loaded
/// and the table altered to the new file. Iceberg 1.10 sends no expected parameter with a lock,
/// so the metastore does not check this alter itself. Returns the `metadata_location` after it.
pub fn rival(uri: &str, db: &str, table: &str, key: &str, value: &str) -> String {
    hive_tables(&["rival", uri, db, table, key, value])
        .expect("a table committed to has a metadata_location")
}

/// [`rival`] without the metastore lock (`iceberg.engine.hive.lock-enabled=false`), as the host
/// commits: the alter carries `expected_parameter_key=metadata_location` and
/// `expected_parameter_value=<the one it loaded>`, which the metastore checks atomically, so it
/// fails (Java's `CommitFailedException`, then its retry) when another commit came first.
pub fn rival_lock_free(uri: &str, db: &str, table: &str, key: &str, value: &str) -> String {
    hive_tables(&["rival", uri, db, table, key, value, "--no-lock"])
        .expect("a table committed to has a metadata_location")
}

/// The metastore's `metadata_location` parameter of `db.table` (`HiveTables pointer`: the
/// metastore client's `get_table`), or `None` when there is no such table or parameter.
pub fn pointer(uri: &str, db: &str, table: &str) -> Option<String> {
    hive_tables(&["pointer", uri, db, table])
}

/// Runs `HiveTables` with `args`; the `metadata_location` of its one JSON object.
fn hive_tables(args: &[&str]) -> Option<String> {
    let args: Vec<&Path> = args.iter().map(Path::new).collect();
    let out = crate::java::run_check("HiveTables", &java_classpath(), &args).remove(0);
    out["metadata_location"].as_str().map(str::to_string)
}

/// Registers the Paimon table on disk at `<warehouse>/<db>.db/<table>` (made by a filesystem
/// catalog of the same warehouse, as Fluss's coordinator makes it) in the metastore at `uri`
/// (`PaimonHive register`): Java Paimon's `HiveCatalog` (`metastore=hive`, `uri`, `warehouse`,
/// Paimon's defaults otherwise: no metastore lock on local files) creates database `db` unless
/// the metastore has it (its location then `<warehouse>/<db>.db`), then `repairTable` registers
/// the table found in the database's directory, or brings an already registered one's columns
/// and parameters in step with its schema. Returns `{"table": "db.table", "location": <the
/// metastore table's sd.location, a file: URL>, "table_type": "PAIMON"}`. A database that the
/// metastore already has elsewhere is where `repairTable` looks for the table.
pub fn paimon_register(uri: &str, warehouse: &Path, db: &str, table: &str) -> Value {
    let warehouse = warehouse.display().to_string();
    let args = ["register", uri, &warehouse, db, table];
    let args: Vec<&Path> = args.iter().map(Path::new).collect();
    crate::java::run_check("PaimonHive", &paimon_classpath(), &args).remove(0)
}

/// Java Paimon's view of the Paimon table `db.table` loaded from the metastore at `uri` by
/// `HiveCatalog` with `warehouse` (`PaimonCheck --hive`: the table's files at the metastore
/// table's location): the latest snapshot (`snapshot`, `commit_user`, `properties`) and the
/// merged rows of `columns`, in the form of [`crate::paimon::java_read`].
pub fn paimon_hive_rows(
    uri: &str,
    warehouse: &Path,
    db: &str,
    table: &str,
    columns: &[&str],
) -> Value {
    let warehouse = warehouse.display().to_string();
    let mut args = vec!["--hive", uri, &warehouse, db, table];
    args.extend(columns);
    let args: Vec<&Path> = args.iter().map(Path::new).collect();
    crate::java::run_check("PaimonCheck", &paimon_classpath(), &args).remove(0)
}

/// The metastore's EXCLUSIVE TABLE lock of a table, held by another process, as another engine
/// holds it while it commits (Paimon's `HiveCatalogLock`, Iceberg's `HiveCatalog`): a JVM that
/// runs `PaimonHive hold-lock` as a child of this one. The lock is released when the hold ends
/// ([`HeldLock::wait`]), when it is released early ([`HeldLock::release`], or dropping the
/// guard), and when this process ends: the child unlocks as soon as its stdin, a pipe from
/// this process, ends.
#[must_use = "dropping a HeldLock releases the lock at once"]
pub struct HeldLock {
    what: String,
    child: Child,
    /// The pipe whose end releases the lock early; `None` once closed.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// What the child writes to stderr, read by a thread of its own so that it never blocks.
    stderr: Option<JoinHandle<String>>,
    /// The child has exited and was waited for.
    done: bool,
}

impl HeldLock {
    /// Takes the EXCLUSIVE TABLE lock of `db.table` in the metastore at `uri` for `millis`
    /// milliseconds in a child JVM (`PaimonHive hold-lock`: lock, then check_lock until
    /// ACQUIRED, at most 60 s) and returns once it holds it (once the child printed `locked`).
    /// The table need not exist. Panics, with the child's stderr, when it could not take it.
    pub fn take(uri: &str, db: &str, table: &str, millis: u64) -> HeldLock {
        let millis = millis.to_string();
        let args = ["hold-lock", uri, db, table, &millis, "--stdin"];
        let args: Vec<&Path> = args.iter().map(Path::new).collect();
        let mut child = crate::java::command("PaimonHive", &paimon_classpath(), &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("java");
        let mut err = child.stderr.take().unwrap();
        let mut lock = HeldLock {
            what: format!("PaimonHive hold-lock {db}.{table}"),
            stdin: child.stdin.take(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            stderr: Some(std::thread::spawn(move || {
                let mut text = String::new();
                let _ = err.read_to_string(&mut text);
                text
            })),
            child,
            done: false,
        };
        match lock.next_line() {
            Some(line) if line["locked"] == true => lock,
            line => {
                let stderr = lock.end();
                panic!("{} took no lock (printed {line:?}):\n{stderr}", lock.what)
            }
        }
    }

    /// Waits until the hold ends by itself (`millis` after the lock was taken) and the child
    /// unlocked the table and exited. Panics, with its stderr, when it did not unlock.
    pub fn wait(mut self) {
        self.finish();
    }

    /// Releases the lock now, before its time: closes the child's stdin, on which it unlocks
    /// the table and exits, and waits for that. Panics, with its stderr, when it did not unlock.
    pub fn release(mut self) {
        self.stdin = None;
        self.finish();
    }

    /// Reads the child's `unlocked` and waits for its exit; panics unless both came.
    fn finish(&mut self) {
        let line = self.next_line();
        let stderr = self.end();
        assert!(
            line.as_ref().is_some_and(|l| l["unlocked"] == true) && self.child_succeeded(),
            "{} did not unlock (printed {line:?}):\n{stderr}",
            self.what
        );
    }

    /// The child's next JSON line on stdout, or `None` at its end (lines that are not JSON
    /// objects are skipped, as [`crate::java::run_check`] skips them).
    fn next_line(&mut self) -> Option<Value> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if line.starts_with('{') {
                return serde_json::from_str(line.trim()).ok();
            }
        }
    }

    /// Closes stdin, waits for the child's exit (killing it after 10 s) and returns its stderr.
    fn end(&mut self) -> String {
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.done {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => self.done = true,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    self.done = true;
                }
            }
        }
        self.stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }

    /// The exited child's status was success.
    fn child_succeeded(&mut self) -> bool {
        self.child.wait().is_ok_and(|s| s.success())
    }
}

impl Drop for HeldLock {
    /// Releases the lock if it is still held: closes the child's stdin, on which it unlocks the
    /// table, and waits for its exit; kills it when it has not exited after 10 s. A killed
    /// holder's lock would stay in the metastore: no housekeeping thread times it out there.
    fn drop(&mut self) {
        self.end();
    }
}

/// Fluss's Iceberg plugin (Iceberg itself, and Hadoop), Fluss's Log4j, then the metastore's
/// client jars: `lib-client` (Iceberg's `HiveCatalog`, `HiveConf`) and `lib`
/// ([`metastore_jars`]).
fn java_classpath() -> Vec<PathBuf> {
    let dist = repo_root().join("target/fluss-dist");
    let mut cp = crate::java::jars(
        &[dist.join("plugins/iceberg"), dist.join("lib")],
        |name| !name.starts_with("fluss-server"),
        "WITH_ICEBERG=1 cluster/setup.sh",
    );
    assert!(
        cp.iter()
            .any(|p| p.to_string_lossy().contains("fluss-lake-iceberg")),
        "the Iceberg plugin jar is missing: run WITH_ICEBERG=1 cluster/setup.sh"
    );
    cp.extend(metastore_jars(
        &["lib-client"],
        |_| true,
        "iceberg-hive-metastore",
    ));
    cp
}

/// `paimon-bundle` of Fluss's Paimon plugin (Paimon itself, its `HiveCatalog` included; not the
/// plugin's Hadoop 2.8, as `lib` has Hadoop 3.3.6), Fluss's Log4j, then the metastore's client
/// jars ([`metastore_jars`]): `HiveConf` of `lib-client` (not Iceberg's catalog), `lib-paimon`
/// (`hive-serde`, Hadoop's `JobConf` and `HdfsConfiguration`) and `lib`.
fn paimon_classpath() -> Vec<PathBuf> {
    let dist = repo_root().join("target/fluss-dist");
    let mut cp = crate::java::jars(
        &[dist.join("plugins/paimon"), dist.join("lib")],
        |name| name.starts_with("paimon-bundle-") || name.starts_with("log4j-"),
        "cluster/setup.sh",
    );
    assert!(
        cp.iter()
            .any(|p| p.to_string_lossy().contains("paimon-bundle-")),
        "paimon-bundle is missing from Fluss's Paimon plugin: run cluster/setup.sh"
    );
    cp.extend(metastore_jars(
        &["lib-client", "lib-paimon"],
        |name| !name.starts_with("iceberg-"),
        "hive-serde-",
    ));
    cp
}

/// The metastore's client jars that follow a lake format's own: those of `dirs` (under
/// `target/hive-metastore-dist`) that `keep` accepts, then `lib` without its own Log4j (Fluss's
/// `lib` already has Log4j 2 and its SLF4J binding). Panics unless a jar's path contains
/// `expect`, naming `cluster/hive-metastore/setup.sh`.
fn metastore_jars(dirs: &[&str], keep: impl Fn(&str) -> bool, expect: &str) -> Vec<PathBuf> {
    let hms = repo_root().join("target/hive-metastore-dist");
    let setup = "cluster/hive-metastore/setup.sh";
    let dirs: Vec<PathBuf> = dirs.iter().map(|d| hms.join(d)).collect();
    let mut cp = crate::java::jars(&dirs, keep, setup);
    cp.extend(crate::java::jars(
        &[hms.join("lib")],
        |name| !name.starts_with("log4j-"),
        setup,
    ));
    assert!(
        cp.iter().any(|p| p.to_string_lossy().contains(expect)),
        "{expect} is missing: run {setup}"
    );
    cp
}
