//! The test Hive metastore (`cluster/hive-metastore/`: Apache Hive's standalone metastore 4.0.1
//! on embedded Derby, on 127.0.0.1, its warehouse on local disk) and Java's view of the Iceberg
//! tables it keeps (`datalake.iceberg.type=hive`): Java Iceberg's `HiveCatalog` registers a
//! table, reads its rows and commits as another engine would, and the metastore's own client
//! reads the table's `metadata_location` (`tests/java/HiveTables.java`, `IcebergRows --hive`).
//!
//! The Java checks run with the Iceberg jars of Fluss's Iceberg plugin (what
//! [`crate::iceberg::java_check`] runs with), then `iceberg-hive-metastore` and Hive's `HiveConf`
//! (`target/hive-metastore-dist/lib-client`), then the metastore's own jars (its client, Thrift,
//! Hadoop; `lib`), all installed by `cluster/hive-metastore/setup.sh`. They fail, never skip,
//! without them.

use std::path::{Path, PathBuf};

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
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("no {key} in {}", file.display()))
                .to_string()
        };
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

/// Fluss's Iceberg plugin (Iceberg itself, and Hadoop), Fluss's Log4j, then the metastore's
/// client jars: `lib-client` (Iceberg's `HiveCatalog`, `HiveConf`) and `lib` without its own
/// Log4j (Fluss's `lib` already has Log4j 2 and its SLF4J binding).
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
    let hms = repo_root().join("target/hive-metastore-dist");
    let setup = "cluster/hive-metastore/setup.sh";
    cp.extend(crate::java::jars(
        &[hms.join("lib-client")],
        |_| true,
        setup,
    ));
    cp.extend(crate::java::jars(
        &[hms.join("lib")],
        |name| !name.starts_with("log4j-"),
        setup,
    ));
    assert!(
        cp.iter()
            .any(|p| p.to_string_lossy().contains("iceberg-hive-metastore")),
        "iceberg-hive-metastore is missing: run {setup}"
    );
    cp
}
