//! The host binary under test, run as a child process exactly as users run it.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::repo_root;

/// The release binary built by the test script (`FLUSS_LAKE_HOST_BIN` overrides it).
pub fn host_bin() -> PathBuf {
    let bin = std::env::var("FLUSS_LAKE_HOST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/release/fluss-lake-host"));
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build --workspace --release` (the test crate turns on the host features the tests use)",
        bin.display()
    );
    bin
}

/// A built plugin (`scripts/build-plugins.sh` copies them to `target/plugins/<format>.wasm`).
pub fn plugin(format: &str) -> PathBuf {
    let p = repo_root().join(format!("target/plugins/{format}.wasm"));
    assert!(
        p.exists(),
        "{} is missing: run scripts/build-plugins.sh",
        p.display()
    );
    p
}

/// The compiled-plugin cache every host and component test of the suite shares, with its
/// key, so each plugin is compiled once per run.
pub fn plugin_cache_dir() -> PathBuf {
    repo_root().join("target/plugin-cache")
}

pub fn plugin_cache_key() -> PathBuf {
    repo_root().join("target/plugin-cache.key")
}

/// The suite's cache, for an engine a test builds.
pub fn plugin_cache() -> fluss_lake_host::plugin::cache::CacheSettings {
    fluss_lake_host::plugin::cache::CacheSettings {
        dir: plugin_cache_dir(),
        key_file: plugin_cache_key(),
        keep_unused: fluss_lake_host::plugin::cache::DEFAULT_KEEP_UNUSED,
    }
}

/// The suite's cache, as options of the host binary.
pub fn plugin_cache_args() -> [String; 4] {
    [
        "--plugin-cache-dir".into(),
        plugin_cache_dir().display().to_string(),
        "--plugin-cache-key".into(),
        plugin_cache_key().display().to_string(),
    ]
}

/// The evil plugin with its version patched to `version` (at most 325 bytes; the rest of the
/// marker stays padding).
pub fn evil_with_version(version: &str) -> Vec<u8> {
    let evil = std::fs::read(plugin("evil")).unwrap();
    let marker = b"EVIL-VERSION=0.3.2";
    let at = evil
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("the evil plugin carries its version marker")
        + b"EVIL-VERSION=".len();
    let mut patched = evil.clone();
    patched[at..at + version.len()].copy_from_slice(version.as_bytes());
    patched
}

/// `bytes` with the marker `from` replaced by `to` (same length).
pub fn patch_marker(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "a marker is patched in place");
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| panic!("marker {} not found", String::from_utf8_lossy(from)));
    let mut patched = bytes.to_vec();
    patched[at..at + to.len()].copy_from_slice(to);
    patched
}

/// A running host; killed when dropped.
pub struct HostProcess {
    child: Option<Child>,
    log: PathBuf,
}

impl HostProcess {
    pub fn spawn(args: &[String], log_name: &str) -> Self {
        Self::spawn_with_env(args, log_name, &[])
    }

    /// Like [`spawn`](Self::spawn), with extra environment (e.g. armed failpoints). The log
    /// file is appended to, so a restarted host keeps one log.
    pub fn spawn_with_env(args: &[String], log_name: &str, env: &[(&str, &str)]) -> Self {
        Self::spawn_exactly(&without_builtins(args), log_name, env)
    }

    /// The host with exactly `args`: the plugins built into the test binary load unless
    /// `args` say `--no-builtin-plugins` (which every other constructor adds, so that tests
    /// get exactly the plugins they name).
    pub fn spawn_exactly(args: &[String], log_name: &str, env: &[(&str, &str)]) -> Self {
        let log = repo_root().join(format!("target/test-logs/{log_name}.log"));
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let child = Command::new(host_bin())
            .args(args)
            .envs(NO_INSTANCE_METADATA.iter().copied())
            .envs(env.iter().copied())
            .env("RUST_LOG", "info,fluss_lake_host=debug")
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .stderr(Stdio::from(file))
            .spawn()
            .expect("cannot start the host");
        Self {
            child: Some(child),
            log,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the host exited on its own.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits until the host's log contains `needle`; panics with the log after `timeout` or
    /// if the host exits.
    pub async fn wait_for_log(&mut self, needle: &str, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        while !self.log().contains(needle) {
            assert!(
                std::time::Instant::now() < deadline,
                "the host never logged '{needle}':\n{}",
                self.log()
            );
            assert!(self.exited().is_none(), "the host exited:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until the host has logged `needle` `more` times after this call; panics with
    /// the log after `timeout` or if the host exits. For "nothing happens": wait for the
    /// rounds that could have done it to actually run, instead of sleeping.
    pub async fn wait_for_more_logs(&mut self, needle: &str, more: usize, timeout: Duration) {
        let want = self.log().matches(needle).count() + more;
        self.wait_for_log_count(needle, want, timeout).await;
    }

    /// Waits until the host has logged `needle` at least `count` times in all; panics with
    /// the log after `timeout` or if the host exits. Fluss registers a round's snapshot
    /// before the host logs that round's commit, so a test that has seen the offsets
    /// registered waits here for the line rather than reading the log at once.
    pub async fn wait_for_log_count(&mut self, needle: &str, count: usize, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        while self.log().matches(needle).count() < count {
            assert!(
                std::time::Instant::now() < deadline,
                "the host did not log '{needle}' {count} times:\n{}",
                self.log()
            );
            assert!(self.exited().is_none(), "the host exited:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The host's process id (0 once it has exited).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// SIGKILL: the host dies without any cleanup.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits up to `timeout` for the host to exit on its own.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.exited() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    /// SIGTERM without waiting (the host drains its rounds and exits on its own; poll
    /// [`exited`](Self::exited) or [`wait_exit`](Self::wait_exit)). Returns whether it was
    /// sent: not to a host that has exited, whose pid may be another process's by now.
    pub fn send_term(&mut self) -> bool {
        if self.child.is_none() || self.exited().is_some() {
            return false;
        }
        send_sigterm(self.pid());
        true
    }

    /// Sends `signal` (`kill`'s spelling: `-HUP`, `-STOP`, `-CONT`, ...) to the running host;
    /// panics when it has exited.
    pub fn signal(&mut self, signal: &str) {
        assert!(
            self.child.is_some() && self.exited().is_none(),
            "kill {signal}: the host has exited:\n{}",
            self.log()
        );
        let pid = self.pid().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// SIGHUP: the host reloads its plugin directories now (see [`install_plugin`]).
    pub fn sighup(&mut self) {
        self.signal("-HUP");
    }

    /// SIGTERM, then wait up to `grace`; returns the exit status.
    pub fn terminate(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        send_sigterm(child.id());
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        child.wait().ok()
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn send_sigterm(pid: u32) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
}

/// Every host a test starts: an S3 client without credentials must not look for an instance
/// metadata service (the AWS credential chain's last step, at a link-local address no test
/// may send to): its endpoint is a closed loopback port, so such a client fails at once.
pub const NO_INSTANCE_METADATA: &[(&str, &str)] = &[
    ("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9"),
    ("AWS_EC2_METADATA_DISABLED", "true"),
];

/// `args` with `--no-builtin-plugins`: the test binary carries the standard plugins
/// (`embedded-plugins`), and a test gets the plugins it names, no others. Subcommands
/// (`plugins …`) are left alone.
pub fn without_builtins(args: &[String]) -> Vec<String> {
    let mut a = args.to_vec();
    let subcommand = a.first().is_some_and(|f| !f.starts_with('-'));
    if !subcommand && !a.iter().any(|x| x == "--no-builtin-plugins") {
        a.push("--no-builtin-plugins".to_string());
    }
    a
}

/// Runs the host to completion (for startup errors) with a timeout. A host expected to fail
/// at startup does not wait for its cluster (`--startup.timeout 0s` unless `args`
/// set it).
pub fn run_to_exit(args: &[String], timeout: Duration) -> Output {
    let mut args = without_builtins(args);
    let subcommand = args.first().is_some_and(|f| !f.starts_with('-'));
    if !subcommand && !args.iter().any(|a| a == "--startup.timeout") {
        args.extend(["--startup.timeout".into(), "0s".into()]);
    }
    let mut child = Command::new(host_bin())
        .args(args)
        .envs(NO_INSTANCE_METADATA.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start the host");
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "host did not exit within {timeout:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The one `error:` line of a host run that had to fail at startup; panics (with its stderr)
/// when the run succeeded or printed another number of error lines.
pub fn the_error_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    errors[0].to_string()
}

/// Standard arguments for a host against the test cluster with the given plugins.
pub fn args(bootstrap: &str, plugins: &[PathBuf], extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "--fluss.bootstrap.servers".to_string(),
        bootstrap.to_string(),
    ];
    for p in plugins {
        a.push("--plugin".into());
        a.push(p.display().to_string());
    }
    if !extra.contains(&"--state-dir") {
        a.push("--state-dir".into());
        a.push(
            repo_root()
                .join("target/test-state")
                .join(crate::unique_name("host"))
                .display()
                .to_string(),
        );
    }
    a.extend(plugin_cache_args());
    a.extend([
        "--tiering.poll.table.interval".to_string(),
        "1s".into(),
        "--tiering.heartbeat.interval".into(),
        "1s".into(),
    ]);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Installs `bytes` as plugin `name` in a host's `--plugin-dir` the way a deployment does:
/// written aside (`<name>.wasm.tmp`), then renamed over `<dir>/<name>.wasm`, so the host never
/// reads a half-written file. A live host loads it on its next directory poll or on SIGHUP
/// ([`HostProcess::sighup`]).
pub fn install_plugin(dir: &std::path::Path, name: &str, bytes: &[u8]) {
    let file = dir.join(format!("{name}.wasm"));
    let tmp = dir.join(format!("{name}.wasm.tmp"));
    std::fs::write(&tmp, bytes).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    std::fs::rename(&tmp, &file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
}

/// `plugin` (a component's bytes) with a custom section holding `tag` appended: a file with
/// another digest and the same behaviour, i.e. a new version as far as the host can tell.
pub fn new_version_of(plugin: &[u8], tag: &[u8]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    const NAME: &str = "fluss-lake-test-version";
    let mut body = Vec::new();
    leb(NAME.len(), &mut body);
    body.extend_from_slice(NAME.as_bytes());
    body.extend_from_slice(tag);
    let mut out = plugin.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend(body);
    out
}
