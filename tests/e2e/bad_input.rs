//! Bad input gets a clear one-line error and loses nothing: unreachable cluster, missing or
//! corrupt plugin files, a required format without plugin (all refused at startup), and a
//! table whose format no plugin serves (reported failed at run time, lake untouched).

use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::config::Config;
use fluss::metadata::TablePath;
use fluss_lake_e2e::{cluster, data, host, repo_root, unique_name};

/// Asserts the host exited non-zero with exactly one `error:` line containing `needle`.
fn assert_startup_error(args: &[String], needle: &str) {
    let out = host::run_to_exit(args, Duration::from_secs(90));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "host should fail; stderr:\n{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "expected one error line, got:\n{stderr}");
    assert!(
        errors[0].contains(needle),
        "error line '{}' does not mention '{needle}'",
        errors[0]
    );
}

fn scratch(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = repo_root().join("target/test-scratch");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// An address nothing answers at is tried again (one warning per attempt: a cluster may be
/// starting or failing over) until `--startup.timeout`, then refused in one line.
#[test]
fn unreachable_bootstrap_server_is_refused_at_startup() {
    let args = host::args(
        "127.0.0.1:1",
        &[host::plugin("paimon")],
        &["--startup.timeout", "3s"],
    );
    let out = host::run_to_exit(&args, Duration::from_secs(90));
    let error = host::the_error_line(&out);
    assert!(
        error.contains("cannot reach the Fluss cluster at 127.0.0.1:1"),
        "{error}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let retries = stderr
        .lines()
        .filter(|l| l.contains("cannot reach the Fluss cluster") && l.contains("trying again in"))
        .count();
    assert!(retries >= 2, "expected retries within 3s:\n{stderr}");
}

/// SIGHUP (reload the plugins) while the host is still starting, compiling its plugins or
/// waiting for its cluster, does not end it (SIGHUP's default action would). Found by the
/// chaos run: a plugin swap during a restarted host's start killed it silently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sighup_while_the_host_starts_does_not_stop_it() {
    let args = host::args(
        "127.0.0.1:1",
        &[host::plugin("paimon")],
        &["--no-plugin-cache", "--startup.timeout", "6s"],
    );
    let mut h = host::HostProcess::spawn(&args, &unique_name("sighup-at-start"));
    h.wait_for_log("compiling plugin", Duration::from_secs(30))
        .await;
    h.sighup();
    h.wait_for_log("trying again in", Duration::from_secs(120))
        .await;
    h.sighup();
    let status = h
        .wait_exit(Duration::from_secs(60))
        .unwrap_or_else(|| panic!("the host did not give up on the cluster:\n{}", h.log()));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), None, "killed by a signal:\n{}", h.log());
    let log = h.log();
    let errors: Vec<&str> = log.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{log}");
    assert!(
        errors[0].contains("cannot reach the Fluss cluster"),
        "{log}"
    );
}

#[test]
fn missing_plugin_file_is_refused_at_startup() {
    let args = host::args("127.0.0.1:1", &["/nonexistent/plugin.wasm".into()], &[]);
    assert_startup_error(&args, "/nonexistent/plugin.wasm: cannot read");
}

#[test]
fn corrupt_plugin_files_are_refused_at_startup() {
    let garbage = scratch("garbage.wasm", b"this is not webassembly at all");
    assert_startup_error(
        &host::args("127.0.0.1:1", &[garbage], &["--no-plugin-cache"]),
        "not a WebAssembly file",
    );
    let real = std::fs::read(host::plugin("paimon")).unwrap();
    let truncated = scratch("truncated.wasm", &real[..real.len() / 2]);
    assert_startup_error(
        &host::args("127.0.0.1:1", &[truncated], &["--no-plugin-cache"]),
        "not a valid component",
    );
    // A core module (not a component) names the fix.
    let core = scratch("core.wasm", &[0, b'a', b's', b'm', 1, 0, 0, 0]);
    assert_startup_error(
        &host::args("127.0.0.1:1", &[core], &[]),
        "build it for wasm32-wasip2",
    );
}

#[test]
fn required_format_without_plugin_is_refused_at_startup() {
    let args = host::args(
        "127.0.0.1:1",
        &[host::plugin("paimon")],
        &["--datalake.format", "iceberg"],
    );
    assert_startup_error(&args, "--datalake.format iceberg: no --plugin serves it");
}

#[test]
fn two_plugins_for_one_format_are_refused_at_startup() {
    let copy = scratch(
        "paimon-copy.wasm",
        &std::fs::read(host::plugin("paimon")).unwrap(),
    );
    let args = host::args("127.0.0.1:1", &[host::plugin("paimon"), copy], &[]);
    assert_startup_error(&args, "both claim format 'paimon'");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_of_a_format_without_plugin_is_reported_failed_and_untouched() {
    let c = cluster::lease("paimon");
    let conn = FlussConnection::new(Config {
        bootstrap_servers: c.bootstrap.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    let admin = conn.get_admin().unwrap();
    let table = unique_name("no_plugin");
    let path = TablePath::new("fluss", &table);
    data::create_table(&admin, &path, &data::lake_log_table(2, None, "1s")).await;
    data::write_rows(&conn, &path, 0, 1_000, 500).await;

    // Only the test-null plugin: nothing serves this cluster's paimon tables.
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("test-null")], &[]),
        &format!("{table}-host"),
    );
    let needle = format!(
        "fluss.{table} is routed to lake format 'paimon' (TableFormat) but no loaded plugin serves it (loaded: test-null)"
    );
    h.wait_for_log(&needle, Duration::from_secs(60)).await;
    // Reported failed, the coordinator re-queues it (a new tiering epoch) and assigns it
    // again; the host keeps running.
    h.wait_for_more_logs(&needle, 1, Duration::from_secs(60))
        .await;
    let log = h.log();
    assert!(log.contains("tiering round failed"), "{log}");
    assert!(h.exited().is_none(), "host exited:\n{log}");
    // Nothing in the lake, nothing in Fluss.
    let table_dir = c.paimon_warehouse.join(format!("fluss.db/{table}"));
    assert!(
        table_dir.join("schema/schema-0").exists(),
        "the coordinator created the Paimon table"
    );
    assert!(
        !table_dir.join("snapshot").exists(),
        "a snapshot was written"
    );
    assert!(
        !table_dir.join("bucket-0").exists(),
        "data files were written"
    );
    assert!(
        admin.get_latest_lake_snapshot(&path).await.is_err(),
        "Fluss registered a lake snapshot"
    );
    let status = h.terminate(Duration::from_secs(40)).unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn plugin_digest_pins_are_enforced() {
    let paimon = host::plugin("paimon");
    let digest = fluss_lake_host::plugin::source::digest(&std::fs::read(&paimon).unwrap());
    let wrong = format!("{}#sha256={}", paimon.display(), "0".repeat(64));
    assert_startup_error(
        &host::args("127.0.0.1:1", &[wrong.into()], &[]),
        &format!(
            "sha256 {digest} does not match the pinned {}; refused",
            "0".repeat(64)
        ),
    );
    // The right pin loads the plugin; startup gets as far as the (unreachable) cluster.
    let right = format!("{}#sha256={digest}", paimon.display());
    assert_startup_error(
        &host::args("127.0.0.1:1", &[right.into()], &[]),
        "cannot reach the Fluss cluster",
    );
}

#[test]
fn plugin_directories_load_every_wasm_file_and_refuse_conflicts() {
    let dir = repo_root()
        .join("target/test-scratch")
        .join(unique_name("plugin-dir"));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.display().to_string();
    assert_startup_error(
        &host::args("127.0.0.1:1", &[], &["--plugin-dir", &dir_arg]),
        "no plugin found: --plugin-dir holds no *.wasm file",
    );
    for f in ["paimon", "lance"] {
        std::fs::copy(host::plugin(f), dir.join(format!("{f}.wasm"))).unwrap();
    }
    std::fs::write(dir.join("README.txt"), "not a plugin").unwrap();
    assert_startup_error(
        &host::args("127.0.0.1:1", &[], &["--plugin-dir", &dir_arg]),
        "cannot reach the Fluss cluster",
    );
    std::fs::copy(host::plugin("paimon"), dir.join("paimon-copy.wasm")).unwrap();
    assert_startup_error(
        &host::args("127.0.0.1:1", &[], &["--plugin-dir", &dir_arg]),
        "both claim format 'paimon'",
    );
}

#[test]
fn bad_route_rules_are_refused() {
    let out = host::run_to_exit(
        &host::args(
            "127.0.0.1:1",
            &[host::plugin("paimon")],
            &["--route", "sales=delta"],
        ),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--route 'sales=delta': no '.' between database and table"),
        "{stderr}"
    );
}

fn inspect(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(host::host_bin())
        .arg("plugins")
        .arg("inspect")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[test]
fn plugins_inspect_describes_a_plugin_and_checks_that_it_loads() {
    let paimon = host::plugin("paimon");
    let bytes = std::fs::read(&paimon).unwrap();
    let digest = fluss_lake_host::plugin::source::digest(&bytes);
    let (ok, out) = inspect(&[&paimon.display().to_string()]);
    assert!(ok, "{out}");
    for line in [
        "format:           paimon".to_string(),
        format!("size:             {} bytes", bytes.len()),
        format!("sha256:           {digest}"),
        "contract version: 0.3.9 (host implements 0.3.9: compatible)".to_string(),
        "plugin version:   0.1.0".to_string(),
        "table layout:     <database>.db/<table>".to_string(),
        "maintenance:      exported (snapshot expiry, compaction when the table asks)".to_string(),
        "bucket replace:   exported (a primary-key bucket that lost log rows can be rebuilt from its KV snapshot)".to_string(),
        "batch writer:     exported (rows stay in the host, which encodes the files the plugin lays out)".to_string(),
    ] {
        assert!(out.lines().any(|l| l == line), "no '{line}' in:\n{out}");
    }
    let loads = out.lines().find(|l| l.starts_with("loads:")).unwrap();
    assert!(loads.contains("yes: instantiates in "), "{out}");

    let garbage = scratch("inspect-garbage.wasm", b"garbage");
    let (ok, out) = inspect(&[&garbage.display().to_string()]);
    assert!(!ok);
    assert!(
        out.contains("loads:            no: plugin load error"),
        "{out}"
    );
    assert!(out.contains("not a WebAssembly file"), "{out}");

    let pinned = format!("{}#sha256={}", paimon.display(), "f".repeat(64));
    let (ok, out) = inspect(&[&pinned]);
    assert!(!ok);
    assert!(out.contains("does not match the pinned"), "{out}");
}

/// Contract 0.3.1 only adds the optional `maintenance` export: a plugin built against 0.3.0
/// (`tests/fixtures/plugins/test-null-0.3.0.wasm`, the `null` test plugin as commit def17ac
/// built it) still loads, and the host knows it maintains no table (nor replaces buckets, 0.3.7,
/// nor writes batches the host keeps, 0.3.8).
/// So does the `null` plugin of this tree, which exports the plugin world without either.
#[test]
fn plugins_without_the_maintenance_export_still_load() {
    let old = fluss_lake_e2e::repo_root().join("tests/fixtures/plugins/test-null-0.3.0.wasm");
    for (plugin, contract) in [(old, "0.3.0"), (host::plugin("test-null"), "0.3.9")] {
        let (ok, out) = inspect(&[&plugin.display().to_string()]);
        assert!(ok, "{out}");
        for line in [
            format!("contract version: {contract} (host implements 0.3.9: compatible)"),
            "maintenance:      not exported (its tables are tiered, not maintained)".to_string(),
            "bucket replace:   not exported (a primary-key bucket that lost log rows stays refused)"
                .to_string(),
            "batch writer:     not exported (the plugin encodes its files in WebAssembly)"
                .to_string(),
        ] {
            assert!(out.lines().any(|l| l == line), "no '{line}' in:\n{out}");
        }
    }
}

/// Contract 0.3.2 only adds the `maintenance-status` import: a plugin built against 0.3.1
/// (`tests/fixtures/plugins/evil-0.3.1.wasm`, the `evil` test plugin as commit 8ea2359 built
/// it), whose exports carry the 0.3.1 version, still loads, its `maintenance` export found.
#[test]
fn a_plugin_of_contract_0_3_1_still_loads_with_its_maintenance_export() {
    let old = fluss_lake_e2e::repo_root().join("tests/fixtures/plugins/evil-0.3.1.wasm");
    let (ok, out) = inspect(&[&old.display().to_string()]);
    assert!(ok, "{out}");
    for line in [
        "contract version: 0.3.1 (host implements 0.3.9: compatible)",
        "maintenance:      exported (snapshot expiry, compaction when the table asks)",
    ] {
        assert!(out.lines().any(|l| l == line), "no '{line}' in:\n{out}");
    }
}

/// A small component within every structural limit that keeps Cranelift compiling for
/// minutes (40 000 locals read inside 900 nested loops) is compiled in a child process and
/// cut at the compile deadline: `plugins inspect` refuses it in one line, at the deadline.
#[test]
fn a_compile_bomb_is_cut_at_the_compile_deadline() {
    let bomb = scratch(
        "bomb.wasm",
        &fluss_lake_e2e::bombs::compile_bomb(40_000, 900),
    );
    let started = std::time::Instant::now();
    let (ok, out) = inspect(&[
        &bomb.display().to_string(),
        "--plugin-compile-timeout",
        "3s",
    ]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("compiling took longer than 3 s (--plugin-compile-timeout); refused"),
        "{out}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "refused only after {:?}",
        started.elapsed()
    );
}

/// A million globals cost every instance host memory outside its linear memory: refused
/// before compiling (the structural limit), and 100 000 (within it) are counted against the
/// instance's memory limit and refused at load when they do not fit.
#[test]
fn globals_are_counted_against_the_limits() {
    let million = scratch(
        "globals-1m.wasm",
        &fluss_lake_e2e::bombs::many_globals(1_000_000),
    );
    let (ok, out) = inspect(&[&million.display().to_string()]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("1000000 globals, over the limit of 100000: refused before compiling"),
        "{out}"
    );
    let many = scratch(
        "globals-100k.wasm",
        &fluss_lake_e2e::bombs::many_globals(100_000),
    );
    let (ok, out) = inspect(&[&many.display().to_string(), "--plugin-memory-limit", "1mb"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains(
            "each instance would take 1604096 bytes of host structures (100000 globals, 0 \
             functions, 0 core instances), over the instance memory limit of 1048576 bytes"
        ),
        "{out}"
    );
}

#[test]
fn plugins_built_for_another_contract_version_are_refused_at_startup() {
    let evil = std::fs::read(host::plugin("evil")).unwrap();
    let marker = b"EVIL-CONTRACT=0.3.2";
    let at = evil
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("the evil plugin carries its contract marker");
    let mut other = evil.clone();
    other[at..at + marker.len()].copy_from_slice(b"EVIL-CONTRACT=0.9.0");
    let file = scratch("evil-contract-0.9.wasm", &other);
    assert_startup_error(
        &host::args("127.0.0.1:1", std::slice::from_ref(&file), &[]),
        "built for contract 0.9.0 but this host implements 0.3.9",
    );
    assert!(
        !inspect(&[&file.display().to_string()]).0,
        "plugins inspect refuses it too"
    );
}

/// A plugin version of 100 three-byte characters (300 bytes, over the 256 the host keeps):
/// cut between characters, the host neither panics at startup nor in `plugins inspect`.
#[test]
fn a_long_multibyte_plugin_version_cannot_panic_the_host() {
    let file = scratch(
        "evil-euro-version.wasm",
        &host::evil_with_version(&"€".repeat(100)),
    );
    let (ok, out) = inspect(&[&file.display().to_string()]);
    assert!(ok, "{out}");
    let version = out
        .lines()
        .find_map(|l| l.strip_prefix("plugin version:   "))
        .unwrap_or_else(|| panic!("no plugin version in:\n{out}"));
    assert!(
        version.starts_with(&"€".repeat(85)) && version.ends_with("… (truncated)"),
        "{version}"
    );
    // Startup gets as far as the cluster (unreachable here): the plugin loaded.
    assert_startup_error(
        &host::args("127.0.0.1:1", std::slice::from_ref(&file), &[]),
        "cannot reach the Fluss cluster at 127.0.0.1:1",
    );
}

/// A table whose declared codec the plugins do not have (Paimon `file.compression = lzo`):
/// every round fails as `unsupported` with a message naming the option, and nothing reaches
/// the lake or Fluss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codec_the_plugins_lack_fails_the_round_as_unsupported_naming_the_option() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name("lzo");
    let path = TablePath::new("fluss", &table);
    let descriptor = data::lake_log_table_with(2, "1s", "paimon.file.compression", "lzo");
    data::create_table(&admin, &path, &descriptor).await;
    data::write_rows(&conn, &path, 0, 1_000, 500).await;
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &[]),
        &format!("{table}-host"),
    );
    let needle = "file.compression = \"lzo\": this plugin writes Parquet with";
    h.wait_for_log(needle, Duration::from_secs(90)).await;
    h.wait_for_more_logs(needle, 1, Duration::from_secs(60))
        .await;
    let log = h.log();
    let line = log.lines().find(|l| l.contains(needle)).unwrap();
    assert!(
        line.contains("Unsupported"),
        "not reported as unsupported: {line}"
    );
    assert!(h.exited().is_none(), "host exited:\n{log}");
    let table_dir = c.paimon_warehouse.join(format!("fluss.db/{table}"));
    let schema = std::fs::read_to_string(table_dir.join("schema/schema-0")).unwrap();
    assert!(
        schema.contains("\"file.compression\" : \"lzo\""),
        "the table does not declare lzo:\n{schema}"
    );
    assert!(
        !table_dir.join("snapshot").exists(),
        "a snapshot was written"
    );
    for b in 0..2 {
        let dir = table_dir.join(format!("bucket-{b}"));
        let files = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        assert_eq!(files, 0, "files were left in {}", dir.display());
    }
    assert!(
        admin.get_latest_lake_snapshot(&path).await.is_err(),
        "Fluss registered a lake snapshot"
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
