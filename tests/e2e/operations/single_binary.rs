//! The one self-contained binary: the standard plugins built in (the test binary is built
//! with `embedded-plugins`), every option from a config file. Started with nothing but
//! `--config tiering.toml`, it tiers a stock cluster's Paimon table; `plugins list` shows
//! the built-in plugins with their digests; `--print-config` shows the effective
//! configuration with secrets masked; a misspelled key is one error line naming file and key.

use std::process::Command;
use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, paimon, repo_root, unique_name};

fn digest(format: &str) -> String {
    fluss_lake_host::plugin::source::digest(&std::fs::read(host::plugin(format)).unwrap())
}

fn plugins_list(extra: &[&str]) -> String {
    let out = Command::new(host::host_bin())
        .args(["plugins", "list"])
        .args(host::plugin_cache_args())
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_binary_tiers_a_stock_paimon_table_from_a_config_file() {
    // The built-in plugins are the standard ones, listed with their digests.
    let list = plugins_list(&[]);
    for format in ["paimon", "iceberg", "lance"] {
        let d = digest(format);
        assert!(
            list.lines()
                .any(|l| l.starts_with(format) && l.contains(" builtin ") && l.contains(&d)),
            "{format} {d} not built in:\n{list}"
        );
    }
    // A plugin file replaces the built-in plugin of its format, and says so.
    let evil = host::plugin("evil").display().to_string();
    let paimon_file = host::plugin("paimon").display().to_string();
    let list = plugins_list(&["--plugin", &paimon_file, "--plugin", &evil]);
    assert!(
        list.lines()
            .any(|l| l.starts_with("paimon") && l.contains(" file ") && l.ends_with(&paimon_file)),
        "{list}"
    );
    assert!(
        list.lines()
            .any(|l| l.starts_with("paimon") && l.contains("builtin (replaced by the file above)")),
        "{list}"
    );
    assert!(list.lines().any(|l| l.starts_with("evil ")), "{list}");

    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("single"));
    data::create_table(&admin, &path, &data::lake_log_table(2, Some("id"), "1s")).await;
    data::write_rows(&conn, &path, 0, 2_000, 1_000).await;

    let dir = repo_root()
        .join("target/test-state")
        .join(unique_name("config"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("tiering.toml");
    std::fs::write(
        &config,
        format!(
            r#"# Everything the host needs; no plugin file: the built-in plugins serve.
fluss.bootstrap.servers = "{bootstrap}"
state-dir = "{state}"
plugin-cache-dir = "{cache}"
plugin-cache-key = "{key}"

[tiering]
poll.table.interval = "1s"
heartbeat.interval = "1s"

[fluss.client.security.sasl]
password = "do-not-print-me"
"#,
            bootstrap = c.bootstrap,
            state = dir.join("state").display(),
            cache = host::plugin_cache_dir().display(),
            key = host::plugin_cache_key().display(),
        ),
    )
    .unwrap();
    let config_arg = config.display().to_string();

    // What it would run with, secrets masked.
    let out = Command::new(host::host_bin())
        .args([
            "--config",
            &config_arg,
            "--print-config",
            "--rpc.timeout",
            "20s",
        ])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{printed}");
    let from_file = format!("# from {config_arg}");
    for (line, source) in [
        (
            format!("\"fluss.bootstrap.servers\" = \"{}\"", c.bootstrap),
            from_file.as_str(),
        ),
        (
            "\"tiering.poll.table.interval\" = \"1s\"".to_string(),
            from_file.as_str(),
        ),
        (
            "\"rpc.timeout\" = \"20s\"".to_string(),
            "# from the command line",
        ),
        (
            "\"plugin-call-timeout\" = \"10min\"".to_string(),
            "# default",
        ),
        (
            "\"fluss.client.security.sasl.password\" = \"******\"".to_string(),
            from_file.as_str(),
        ),
    ] {
        assert!(
            printed
                .lines()
                .any(|l| l.starts_with(&line) && l.ends_with(source)),
            "no {line} … {source} in:\n{printed}"
        );
    }
    assert!(!printed.contains("do-not-print-me"), "{printed}");

    // A misspelled key: one line naming the file and the key, and nothing starts.
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        format!(
            "fluss.bootstrap.servers = \"{}\"\ntiering.pol.table.interval = \"1s\"\n",
            c.bootstrap
        ),
    )
    .unwrap();
    let out = host::run_to_exit(
        &["--config".to_string(), bad.display().to_string()],
        Duration::from_secs(30),
    );
    assert_eq!(
        host::the_error_line(&out),
        format!(
            "error: {}: unknown key 'tiering.pol.table.interval' (keys are the command line's long options without '--'; see --help)",
            bad.display()
        )
    );

    // The host itself: nothing but the config file.
    let mut h = host::HostProcess::spawn_exactly(
        &["--config".to_string(), config_arg],
        &format!("{}-host", path.table()),
        &[],
    );
    let ends = data::all_log_end_offsets(&admin, &path).await;
    wait_registered(&c, &admin, &path, &ends, &h).await;
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
    assert_eq!(
        business(&lake),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 2_000)))
    );
    let log = h.log();
    let paimon_digest = digest("paimon");
    assert!(
        log.lines().any(|l| l.contains("loaded plugin")
            && l.contains("format=\"paimon\"")
            && l.contains("origin=\"builtin\"")
            && l.contains(&paimon_digest)),
        "{log}"
    );
    assert!(
        log.lines().any(|l| l.contains("table routed")
            && l.contains(&format!("fluss.{}", path.table()))
            && l.contains(&paimon_digest[..12])),
        "{log}"
    );
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
