//! The real Fluss clusters the tests run against: a pool of `FLUSS_TEST_CLUSTERS` clusters
//! (default 1), each started by `cluster/start.sh` when it is not already up, each held by one
//! test at a time.
//!
//! A test takes a [`Lease`] on a cluster for as long as it runs. The coordinator hands a
//! pending table to whichever tiering service asks first, so two hosts on one cluster would
//! tier each other's tables: a lease gives the test a cluster no other test uses meanwhile.
//! Leases are `flock`s on `target/fluss-cluster-<i>.lock`, so they also hold across test
//! processes (two `cargo test` runs, the demo).
//!
//! Every cluster starts without a lake format and with every Java lake plugin installed; a
//! lease switches `datalake.format` at run time (AlterClusterConfigs) to the format the test
//! asks for, so one cluster serves every format without restarts. Taking a lease drops every
//! table an earlier test left behind, so a test starts from an empty cluster. A test that
//! panics leaves its cluster marked dirty, and the next lease restarts it clean. A cluster
//! that cannot start fails the test with the scripts' output, which includes the server
//! logs' tails.

use std::fs::File;
use std::ops::Deref;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::repo_root;

#[derive(Debug, Clone)]
pub struct ClusterInfo {
    /// The cluster's place in the pool (`CLUSTER_INDEX` of the cluster scripts).
    pub index: usize,
    pub bootstrap: String,
    /// The same cluster's SASL/PLAIN listener (users [`SASL_USERS`]).
    pub sasl_bootstrap: String,
    /// The lake format tables created now get (`datalake.format`).
    pub format: String,
    /// The cluster's state: `conf/`, `log/`, `pids/`, data and warehouses.
    pub work_dir: PathBuf,
    /// A local directory, or on the S3 cluster ([`lease_s3`]) an `s3://` URL.
    pub paimon_warehouse: PathBuf,
    pub iceberg_warehouse: PathBuf,
    pub lance_warehouse: PathBuf,
    /// For Delta tables (Fluss has no Delta catalog; the host is given this warehouse).
    pub delta_warehouse: PathBuf,
    pub remote_data_dir: PathBuf,
    /// The S3 server the cluster keeps its remote data and lake warehouses on ([`lease_s3`]).
    pub s3: Option<crate::s3::S3Server>,
}

impl ClusterInfo {
    fn new(index: usize, format: &str) -> Self {
        let work = work_dir(index);
        if usual_storage(index) == "s3" {
            let s3 = crate::s3::server();
            let url = |what: &str| PathBuf::from(s3.url(&format!("cluster-{index}/{what}")));
            return ClusterInfo {
                index,
                bootstrap: format!("127.0.0.1:{}", 9123 + 10 * index),
                sasl_bootstrap: format!("127.0.0.1:{}", 19123 + 10 * index),
                format: format.to_string(),
                paimon_warehouse: url("paimon"),
                // The Iceberg Hadoop catalog reaches S3 through Hadoop's S3A: `s3a://`.
                iceberg_warehouse: PathBuf::from(
                    s3.url(&format!("cluster-{index}/iceberg"))
                        .replacen("s3://", "s3a://", 1),
                ),
                lance_warehouse: url("lance"),
                delta_warehouse: url("delta"),
                remote_data_dir: url("remote-data"),
                work_dir: work,
                s3: Some(s3),
            };
        }
        ClusterInfo {
            index,
            bootstrap: format!("127.0.0.1:{}", 9123 + 10 * index),
            sasl_bootstrap: format!("127.0.0.1:{}", 19123 + 10 * index),
            format: format.to_string(),
            paimon_warehouse: work.join("paimon-warehouse"),
            iceberg_warehouse: work.join("iceberg-warehouse"),
            lance_warehouse: work.join("lance-warehouse"),
            delta_warehouse: work.join("delta-warehouse"),
            remote_data_dir: work.join("remote-data"),
            work_dir: work,
            s3: None,
        }
    }

    /// The last lines of the coordinator's log, for failure messages.
    pub fn coordinator_log_tail(&self, lines: usize) -> String {
        let log = self.work_dir.join("log/coordinator-server.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Sends `signal` (`kill`'s spelling: `-STOP`, `-CONT`, `-KILL`, ...) to one of the
    /// cluster's servers (`zookeeper`, `coordinator-server`, `tablet-server-<i>`); panics when
    /// its pid file's process is not that server (it exited, or the pid was reused).
    pub fn signal(&self, server: &str, signal: &str) {
        let pid = self.server_pid(server);
        if let Err(e) = signal_server(server, pid, signal) {
            panic!("cluster {}: {e}", self.index);
        }
    }

    /// SIGKILL of one of the cluster's servers, returning once the process is gone: its /proc
    /// entry gone or a zombie (a JVM tearing down has an empty command line, no longer the
    /// server's, while it still runs). Blocks the thread up to 30 s.
    pub fn kill_server(&self, server: &str) {
        let pid = self.server_pid(server);
        self.signal(server, "-KILL");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let exiting = || {
            std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
                !s.lines()
                    .any(|l| l.starts_with("State:") && l.contains('Z'))
            })
        };
        while exiting() {
            assert!(
                std::time::Instant::now() < deadline,
                "{server} (pid {pid}) outlived SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The process id of one of the cluster's servers (`zookeeper`, `coordinator-server`,
    /// `tablet-server-0`, ...), from its pid file.
    pub fn server_pid(&self, server: &str) -> u32 {
        let file = self.work_dir.join(format!("pids/{server}.pid"));
        std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    }
}

/// The main class of a server's JVM, by its pid file's name (`cluster/env.sh`
/// `main_class_of`).
fn main_class(server: &str) -> &'static str {
    match server {
        "zookeeper" => {
            "org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain"
        }
        "coordinator-server" => "org.apache.fluss.server.coordinator.CoordinatorServer",
        s if s.starts_with("tablet-server-") => "org.apache.fluss.server.tablet.TabletServer",
        _ => panic!(
            "no cluster server is called {server:?} (zookeeper, coordinator-server, tablet-server-<i>)"
        ),
    }
}

/// Whether process `pid` is still `server`: alive, and its command line holds the server's main
/// class (as `cluster/env.sh` `pid_matches` checks), so a reused pid is never taken for it. A
/// zombie's command line is empty.
pub fn is_server(server: &str, pid: u32) -> bool {
    let main = main_class(server);
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == main.as_bytes()))
}

/// `kill <signal> <pid>`, once `pid` is checked to be `server`.
fn signal_server(server: &str, pid: u32, signal: &str) -> Result<(), String> {
    if !is_server(server, pid) {
        return Err(format!("{server} (pid {pid}) is not running"));
    }
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .map_err(|e| format!("kill {signal} {pid}: {e}"))?;
    if !status.success() {
        return Err(format!("kill {signal} {pid} ({server}): {status}"));
    }
    Ok(())
}

/// The test cluster whose coordinator listens on `port` (its plain or its SASL listener).
pub fn index_of_coordinator_port(port: u32) -> Option<usize> {
    (0..=9).find(|&i| {
        [9123, 19123]
            .iter()
            .any(|base| base + 10 * i as u32 == port)
    })
}

/// Stops cluster `index`'s coordinator (SIGTERM, SIGKILL after 30 s) and starts it again with
/// the command line `cluster/start.sh` gave it.
pub fn restart_coordinator(index: usize) {
    let info = ClusterInfo::new(index, "none");
    let pid = info.server_pid("coordinator-server");
    // The pid file's process, while it is still the coordinator (a reused pid is not).
    let alive = || is_server("coordinator-server", pid);
    for (signal, wait) in [("-TERM", 30), ("-KILL", 30)] {
        let _ = signal_server("coordinator-server", pid, signal);
        let deadline = Instant::now() + Duration::from_secs(wait);
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    assert!(
        !alive(),
        "cluster {index}'s coordinator (pid {pid}) outlived SIGKILL"
    );
    check(
        run(
            "cluster/restart-server.sh",
            index,
            &["coordinator-server"],
            &[],
        ),
        &format!("starting cluster {index}'s coordinator again"),
    );
}

/// How many clusters the pool holds (`FLUSS_TEST_CLUSTERS`, 1 to 9).
pub fn pool_size() -> usize {
    std::env::var("FLUSS_TEST_CLUSTERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| (1..=9).contains(n))
        .unwrap_or(1)
}

fn work_dir(index: usize) -> PathBuf {
    let name = if index == 0 {
        "fluss-cluster".to_string()
    } else {
        format!("fluss-cluster-{index}")
    };
    repo_root().join("target").join(name)
}

/// A cluster held by one test; derefs to its [`ClusterInfo`]. Dropping it releases the
/// cluster, marking it dirty (to be restarted clean) when the test panicked.
pub struct Lease {
    info: ClusterInfo,
    /// Held for the lease's lifetime; the lock is released when the file is closed.
    _lock: File,
    /// When the lease was asked for, locked, and granted (the cluster emptied or restarted),
    /// for the lease journal.
    asked: Instant,
    locked: Instant,
    granted: Instant,
}

impl Deref for Lease {
    type Target = ClusterInfo;
    fn deref(&self) -> &ClusterInfo {
        &self.info
    }
}

impl Lease {
    /// Switches the cluster's `datalake.format` (and its options) with AlterClusterConfigs;
    /// tables created from now on get `format`, existing ones keep theirs.
    pub fn set_lake_format(&mut self, format: &str) {
        set_lake_format(self.info.index, format);
        self.info.format = format.to_string();
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = std::fs::write(dirty_marker(self.info.index), b"a test panicked\n");
        }
        journal(
            self.info.index,
            [
                self.locked.duration_since(self.asked),
                self.granted.duration_since(self.locked),
                self.granted.elapsed(),
            ],
        );
    }
}

/// Appends a line to `target/test-logs/leases.log`: the test (libtest names each test's thread
/// after it), the cluster, how long the test waited for it, how long emptying (or restarting)
/// it took, and how long the test held it. The suite's summary (scripts/test.sh) adds them
/// up, so the pool is sized from measurements.
fn journal(index: usize, [waited, prepared, held]: [Duration; 3]) {
    use std::io::Write;
    let dir = repo_root().join("target").join("test-logs");
    let _ = std::fs::create_dir_all(&dir);
    let test = std::thread::current()
        .name()
        .unwrap_or("unnamed")
        .to_string();
    if let Ok(mut f) = File::options()
        .create(true)
        .append(true)
        .open(dir.join("leases.log"))
    {
        let _ = writeln!(
            f,
            "cluster={index} waited={:.1} prepared={:.1} held={:.1} test={test}",
            waited.as_secs_f64(),
            prepared.as_secs_f64(),
            held.as_secs_f64()
        );
    }
}

fn dirty_marker(index: usize) -> PathBuf {
    repo_root()
        .join("target")
        .join(format!("fluss-cluster-{index}.dirty"))
}

fn lock_path(index: usize) -> PathBuf {
    repo_root()
        .join("target")
        .join(format!("fluss-cluster-{index}.lock"))
}

fn run(script: &str, index: usize, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(repo_root().join(script))
        .args(args)
        .env("CLUSTER_INDEX", index.to_string())
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"))
}

fn check(out: std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A cluster of the pool whose new tables get lake format `format` (`paimon`, `iceberg` or
/// `lance`), held until the lease is dropped; waits while every cluster is leased.
pub fn lease(format: &str) -> Lease {
    let mut lease = lease_mixed();
    if lease.info.format != format {
        lease.set_lake_format(format);
    }
    lease
}

/// A cluster of the pool as it is (its format is switched with [`Lease::set_lake_format`]),
/// for tests that hold tables of several formats at once.
pub fn lease_mixed() -> Lease {
    lease_one_of(0..pool_size())
}

/// The cluster that keeps everything on the test S3 server ([`crate::s3::server`]): its
/// `remote.data.dir` and the coordinator's lake catalogs (`s3://<bucket>/cluster-9/…`). One
/// cluster outside the pool, started on first use.
pub const S3_CLUSTER: usize = 9;

/// The S3 cluster ([`S3_CLUSTER`]) with lake format `format`, held until the lease is dropped.
pub fn lease_s3(format: &str) -> Lease {
    lease_index(S3_CLUSTER, format)
}

/// The cluster the benchmark uses by default (`bench --cluster-index`): outside the test pool,
/// so a benchmark never waits for, or slows, a test run's clusters.
pub const BENCH_CLUSTER: usize = 8;

/// A cluster of the pool whose `remote.data.dir` is on fake-gcs-server
/// (`gs://<bucket>/cluster-<index>/remote-data`: `cluster/start.sh` with `STORAGE=gcs`), with
/// lake format `format`, held until the lease is dropped; the next lease of the cluster starts
/// it again on local storage.
pub fn lease_gcs(format: &str) -> Lease {
    let gcs = crate::object_stores::fake_gcs();
    let mut lease = lease_mixed();
    let index = lease.info.index;
    start_clean(index, "gcs");
    lease.info.remote_data_dir = PathBuf::from(gcs.gs_url(&format!("cluster-{index}/remote-data")));
    lease.info.format = "none".to_string();
    lease.set_lake_format(format);
    lease
}

/// The cluster of the KV snapshot tests (`lease_kv_snapshots`): outside the pool, started on
/// first use with [`FREQUENT_KV_SNAPSHOTS`], so no pool cluster is started twice for them.
pub const KV_CLUSTER: usize = 7;

/// What [`KV_CLUSTER`] adds to its `server.yaml`: a KV snapshot of every primary-key bucket
/// each second (Fluss's default is 10 minutes), expired leases released each second (10
/// minutes), 4 KiB log segments (1 GiB) moved to remote storage each second (1 minute), where a
/// table's `table.log.ttl` expires them.
const FREQUENT_KV_SNAPSHOTS: &str = "kv.snapshot.interval: 1s
kv.snapshot.lease.expiration-check-interval: 1s
log.segment.file-size: 4kb
remote.log.task-interval-duration: 1s";

/// [`KV_CLUSTER`], which takes a KV snapshot of every primary-key bucket each second and whose
/// logs move to remote storage (and expire there) within seconds, with lake format `format`,
/// held until the lease is dropped.
pub fn lease_kv_snapshots(format: &str) -> Lease {
    lease_index(KV_CLUSTER, format)
}

/// The tests that lease [`KV_CLUSTER`]: `tiering::kv_snapshots` and `tiering::log_gaps`.
const KV_CLUSTER_TESTS: usize = 2;

/// How many of [`KV_CLUSTER_TESTS`] this test process has seen end.
static KV_CLUSTER_TESTS_DONE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// A test is done with [`KV_CLUSTER`]: the last of its tests stops it, so its JVMs leave the
/// machine to the suite's other tests without the other test restarting it.
pub fn done_with_kv_cluster() {
    let done = KV_CLUSTER_TESTS_DONE.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    if done == KV_CLUSTER_TESTS {
        let _ = run("cluster/stop.sh", KV_CLUSTER, &[], &[]);
    }
}

/// The cluster of the chaos driver (`lease_chaos`): outside the pool, started on first use
/// with [`CHAOS_SHAPE`], so a tablet server can die without its buckets losing their data.
pub const CHAOS_CLUSTER: usize = 6;

/// [`CHAOS_CLUSTER`]'s tablet servers and its `default.replication.factor`: every bucket has a
/// replica on each of the two tablet servers.
pub const CHAOS_SHAPE: Shape = Shape {
    tablet_servers: 2,
    replication_factor: 2,
};

/// How many tablet servers a cluster runs (`cluster/start.sh`'s `TS_COUNT`) and the
/// replication factor of its tables (`REPLICATION_FACTOR`, `default.replication.factor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub tablet_servers: usize,
    pub replication_factor: usize,
}

/// [`CHAOS_CLUSTER`], two tablet servers and every bucket replicated on both, with lake format
/// `format`, held until the lease is dropped.
pub fn lease_chaos(format: &str) -> Lease {
    lease_index(CHAOS_CLUSTER, format)
}

/// Stops [`CHAOS_CLUSTER`] (the chaos run is done with it): its JVMs leave the machine to the
/// suite's other tests.
pub fn stop_chaos_cluster() {
    let _ = run("cluster/stop.sh", CHAOS_CLUSTER, &[], &[]);
}

/// The shape cluster `index` is started with: [`CHAOS_SHAPE`] for the chaos cluster, one
/// tablet server and no replicas for the others.
fn usual_shape(index: usize) -> Shape {
    if index == CHAOS_CLUSTER {
        CHAOS_SHAPE
    } else {
        Shape {
            tablet_servers: 1,
            replication_factor: 1,
        }
    }
}

/// The shape cluster `index` was started with, from its work directory: its tablet servers'
/// pid files (`start.sh` writes one per tablet server it starts and removes the old ones) and
/// its `server.yaml`; `None` when it never started.
fn running_shape(index: usize) -> Option<Shape> {
    let work = work_dir(index);
    let yaml = std::fs::read_to_string(work.join("conf/server.yaml")).ok()?;
    let replication_factor = yaml
        .lines()
        .find_map(|l| l.strip_prefix("default.replication.factor:"))?
        .trim()
        .parse()
        .ok()?;
    let tablet_servers = std::fs::read_dir(work.join("pids"))
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("tablet-server-") && name.ends_with(".pid")
        })
        .count();
    Some(Shape {
        tablet_servers,
        replication_factor,
    })
}

/// What [`CHAOS_CLUSTER`] adds to its `server.yaml`: a server that dies is given up by
/// ZooKeeper after 10 s (Fluss's default, 60 s, makes each killed tablet server leave its
/// buckets without a leader, and a killed coordinator's successor wait, for a minute; the
/// failover is the same, only sooner).
const FAST_FAILOVER: &str = "zookeeper.client.session-timeout: 10s";

/// The lines cluster `index` adds to its `server.yaml`.
fn usual_extra_yaml(index: usize) -> &'static str {
    match index {
        KV_CLUSTER => FREQUENT_KV_SNAPSHOTS,
        CHAOS_CLUSTER => FAST_FAILOVER,
        _ => "",
    }
}

/// Starts server `name` (`zookeeper`, `coordinator-server`, `tablet-server-N`) of cluster
/// `index` again with its first command line, once it is down (`cluster/restart-server.sh`,
/// which waits until it serves again).
pub fn restart_server(index: usize, name: &str) {
    check(
        run("cluster/restart-server.sh", index, &[name], &[]),
        &format!("starting cluster {index}'s {name} again"),
    );
}

/// Where cluster `index` keeps its remote data and lake warehouses when leased by
/// [`lease_index`]: `s3` for the S3 cluster and the chaos cluster (whose hosts reach the store
/// through a proxy that fails on purpose), else `local`.
fn usual_storage(index: usize) -> &'static str {
    if index == S3_CLUSTER || index == CHAOS_CLUSTER {
        "s3"
    } else {
        "local"
    }
}

/// Cluster `index` (of the pool or not) with lake format `format`, emptied of tables, held
/// until the lease is dropped; waits while another process holds it.
pub fn lease_index(index: usize, format: &str) -> Lease {
    let mut lease = lease_one_of(index..index + 1);
    if lease.info.format != format {
        lease.set_lake_format(format);
    }
    lease
}

/// Cluster `index`, whose lease the calling process's parent holds (the benchmark run by a
/// test), emptied of tables and switched to `format` as a lease would be, without taking the
/// lock again.
pub fn held_by_parent(index: usize, format: &str) -> ClusterInfo {
    let current = prepare(index);
    if current != format {
        set_lake_format(index, format);
    }
    ClusterInfo::new(index, format)
}

fn lease_one_of(indices: std::ops::Range<usize>) -> Lease {
    std::fs::create_dir_all(repo_root().join("target")).expect("target/");
    let waited = Instant::now();
    loop {
        for index in indices.clone() {
            let lock = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(lock_path(index))
                .expect("cluster lock file");
            if lock.try_lock().is_ok() {
                let locked = Instant::now();
                let format = prepare(index);
                if waited.elapsed() > Duration::from_secs(1) {
                    eprintln!(
                        "cluster {index}: leased after waiting {:.1} s",
                        waited.elapsed().as_secs_f64()
                    );
                }
                return Lease {
                    info: ClusterInfo::new(index, &format),
                    _lock: lock,
                    asked: waited,
                    locked,
                    granted: Instant::now(),
                };
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Brings cluster `index` to an empty, running state and returns its current lake format:
/// restarts it clean when it is down, dirty, started with a fixed lake format, or when its
/// tables cannot be dropped; otherwise drops every table in it.
fn prepare(index: usize) -> String {
    let work = work_dir(index);
    let dirty = dirty_marker(index);
    let shape = usual_shape(index);
    // status.sh checks TS_COUNT tablet servers (and any other a pid file names).
    let up = run(
        "cluster/status.sh",
        index,
        &[],
        &[("TS_COUNT", &shape.tablet_servers.to_string())],
    )
    .status
    .success();
    let yaml = std::fs::read_to_string(work.join("conf/server.yaml")).unwrap_or_default();
    let fixed_format = yaml.lines().any(|l| l.starts_with("datalake."));
    // Clusters started before the SASL listener existed are started again.
    let no_sasl = !yaml.contains("security.protocol.map: SECURE:SASL");
    // The S3 cluster holds the S3 server's credentials: a restarted server has new ones.
    let stale_s3 = usual_storage(index) == "s3"
        && (!yaml.contains(&format!(
            "s3.access-key: {}",
            crate::s3::server().access_key
        )) || !yaml.contains("remote.log.task-interval-duration"));
    // A cluster a test started on other storage (`lease_gcs`), or without its own settings.
    let other_storage = std::fs::read_to_string(work.join("storage"))
        .is_ok_and(|s| s.trim() != usual_storage(index))
        || yaml.contains(FREQUENT_KV_SNAPSHOTS) != (index == KV_CLUSTER)
        || yaml.contains(FAST_FAILOVER) != (index == CHAOS_CLUSTER);
    // A cluster started with other tablet servers or another replication factor (the chaos
    // cluster's index started by hand with the defaults, say).
    let other_shape = running_shape(index) != Some(shape);
    let restart = !up
        || dirty.exists()
        || other_shape
        || other_storage
        || fixed_format
        || no_sasl
        || stale_s3
        || drop_all_tables(&ClusterInfo::new(index, "none").bootstrap).is_err();
    if restart {
        start_clean_with(index, usual_storage(index), usual_extra_yaml(index));
        let _ = std::fs::remove_file(&dirty);
    }
    std::fs::read_to_string(work.join("lake-format"))
        .map(|f| f.trim().to_string())
        .unwrap_or_else(|_| "none".into())
}

/// The users of every test cluster's SASL/PLAIN listener (`SASL_USERS` of `cluster/start.sh`),
/// as (user, password).
pub const SASL_USERS: &[(&str, &str)] = &[("admin", "admin-pass"), ("tiering", "tiering-pass")];

/// (Re)starts cluster `index` clean, its remote data on `storage` (`local`, `s3`, `gcs`:
/// `cluster/start.sh`'s `STORAGE`), without a lake format and with every Java lake plugin, in
/// its usual shape (tablet servers, replication factor). Every cluster also gets a SASL/PLAIN
/// listener.
fn start_clean(index: usize, storage: &str) {
    start_clean_with(index, storage, "");
}

/// [`start_clean`], with `extra_yaml` lines appended to the servers' `server.yaml`.
fn start_clean_with(index: usize, storage: &str, extra_yaml: &str) {
    let sasl_users = SASL_USERS
        .iter()
        .map(|(u, p)| format!("{u}:{p}"))
        .collect::<Vec<_>>()
        .join(" ");
    let _ = run("cluster/stop.sh", index, &[], &[]);
    check(
        run(
            "cluster/setup.sh",
            index,
            &[],
            &[
                ("WITH_ICEBERG", "1"),
                ("WITH_LANCE", "1"),
                ("WITH_S3", "1"),
                ("WITH_GCS", "1"),
            ],
        ),
        "cluster/setup.sh",
    );
    if storage == "s3" {
        crate::s3::server();
    }
    let shape = usual_shape(index);
    check(
        run(
            "cluster/start.sh",
            index,
            &["--clean"],
            &[
                ("DATALAKE_FORMAT", "none"),
                ("SASL_USERS", &sasl_users),
                ("STORAGE", storage),
                ("EXTRA_SERVER_YAML", extra_yaml),
                ("TS_COUNT", &shape.tablet_servers.to_string()),
                ("REPLICATION_FACTOR", &shape.replication_factor.to_string()),
            ],
        ),
        &format!("starting Fluss cluster {index}"),
    );
}

/// Drops every table of every database, so the next test's host sees only its own tables.
fn drop_all_tables(bootstrap: &str) -> Result<(), String> {
    let bootstrap = bootstrap.to_string();
    // A runtime of its own, on a thread of its own: leases are taken inside async tests.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let work = async {
                let conn = fluss::client::FlussConnection::new(fluss::config::Config {
                    bootstrap_servers: bootstrap,
                    ..Default::default()
                })
                .await
                .map_err(|e| e.to_string())?;
                let admin = conn.get_admin().map_err(|e| e.to_string())?;
                for db in admin.list_databases().await.map_err(|e| e.to_string())? {
                    for table in admin.list_tables(&db).await.map_err(|e| e.to_string())? {
                        let path = fluss::metadata::TablePath::new(&db, &table);
                        admin
                            .drop_table(&path, true)
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                }
                Ok::<(), String>(())
            };
            tokio::time::timeout(Duration::from_secs(60), work)
                .await
                .map_err(|_| "dropping the tables timed out".to_string())?
        })
    })
    .join()
    .map_err(|_| "the table cleanup panicked".to_string())?
}

fn set_lake_format(index: usize, format: &str) {
    check(
        run("cluster/set-lake-format.sh", index, &[format], &[]),
        &format!("cluster/set-lake-format.sh {format} (cluster {index})"),
    );
}

/// One of a cluster's servers frozen (SIGSTOP) until dropped (SIGCONT), so a failing test still
/// resumes it.
#[must_use = "the server is resumed when the guard is dropped"]
pub struct Frozen {
    server: String,
    pid: u32,
}

impl Frozen {
    /// Freezes `server` (`zookeeper`, `coordinator-server`, `tablet-server-<i>`) of cluster
    /// `c`; panics when it is not running.
    pub fn freeze(c: &ClusterInfo, server: &str) -> Self {
        let pid = c.server_pid(server);
        if let Err(e) = signal_server(server, pid, "-STOP") {
            panic!("cluster {}: {e}", c.index);
        }
        Frozen {
            server: server.to_string(),
            pid,
        }
    }

    /// The frozen server's name.
    pub fn server(&self) -> &str {
        &self.server
    }
}

impl Drop for Frozen {
    /// Resumes the process frozen, unless it is gone (a test killed it meanwhile): never
    /// panics, as it also runs while a failing test unwinds.
    fn drop(&mut self) {
        if let Err(e) = signal_server(&self.server, self.pid, "-CONT") {
            eprintln!("not resumed: {e}");
        }
    }
}

/// Freezes the coordinator (SIGSTOP) until dropped (SIGCONT), so a failing test still resumes it.
#[must_use = "the coordinator is resumed when the guard is dropped"]
pub struct FrozenCoordinator {
    _frozen: Frozen,
}

impl FrozenCoordinator {
    pub fn freeze(c: &ClusterInfo) -> Self {
        FrozenCoordinator {
            _frozen: Frozen::freeze(c, "coordinator-server"),
        }
    }
}
