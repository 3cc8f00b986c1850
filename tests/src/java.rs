//! The Java readers' checks (`tests/java/*.java`): each is compiled with `javac` against the
//! jars Fluss's own plugins or FlussLakeTiering run with, run once per call, and prints one
//! JSON object per line. They fail (never skip) without a JDK or the jars.
//!
//! A check is compiled once, not once per call: into `target/java-checks/<class>-<key>`, where
//! the key hashes what the classes depend on (the source, the classpath and its jars' sizes
//! and times, the `javac` on `PATH`), so any change compiles anew and a later run of the
//! suite reuses the classes. javac writes into a directory of its own that is then renamed
//! into place, so no test (of this process or another) ever sees a half-written class.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::repo_root;

/// The options of a short-lived JVM, for every check's JVM and javac's (and FlussLakeTiering's
/// in the migration tests, `crate::flink_tiering`): such a JVM spends much of its CPU in C2,
/// the optimizing JIT compiler, whose code it hardly lives long enough to use. C1 alone cuts
/// a check's CPU time (user + system) by 40-45 % and javac's by 45 %; the serial collector
/// saved nothing measurable beside it, and class data sharing is on by default.
pub const SHORT_LIVED_JVM: &[&str] = &["-XX:TieredStopAtLevel=1"];

/// Every `.jar` in `dirs` whose file name `keep` accepts; panics naming `setup` when a
/// directory is missing.
pub fn jars(dirs: &[PathBuf], keep: impl Fn(&str) -> bool, setup: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| {
            panic!("{}: {e}: run {setup} (scripts/test.sh does)", dir.display())
        });
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".jar") && keep(&name) {
                out.push(e.path());
            }
        }
    }
    out
}

/// Runs `tests/java/<class>.java` (compiled against `classpath` once, [`compiled`]) with
/// `args` and returns its JSON lines.
pub fn run_check(class: &str, classpath: &[PathBuf], args: &[&Path]) -> Vec<Value> {
    let out = command(class, classpath, args).output().expect("java");
    assert!(
        out.status.success(),
        "{class} (Java) could not read:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The JVM that runs `tests/java/<class>.java` (compiled against `classpath` once, [`compiled`])
/// with `args`, not yet started: what [`run_check`] runs to its end, and what a caller that
/// talks to a running check (its stdin, its lines as they come) spawns itself.
pub fn command(class: &str, classpath: &[PathBuf], args: &[&Path]) -> Command {
    let classpath = join(classpath);
    let classes = compiled(class, &classpath);
    let mut java = Command::new("java");
    java.args(SHORT_LIVED_JVM)
        .args([
            "-Xmx512m",
            "-Dlog4j2.level=ERROR",
            "-cp",
            &format!("{}:{classpath}", classes.display()),
            class,
        ])
        .args(args)
        .envs(crate::s3::reader_env());
    java
}

/// The directory of `tests/java/<class>.java`'s classes compiled against `classpath` (joined
/// with `:`): `target/java-checks/<class>-<key>`, compiled by the first call that needs it (of
/// this process, or of an earlier or concurrent run of the suite) and reused by every other.
/// Panics with javac's errors when it does not compile.
fn compiled(class: &str, classpath: &str) -> PathBuf {
    // One compilation per directory in this process: the other threads that need it wait
    // for it (and share its error); another process races through the rename alone.
    type Compilation = Arc<OnceLock<Result<(), String>>>;
    static COMPILING: Mutex<BTreeMap<PathBuf, Compilation>> = Mutex::new(BTreeMap::new());
    let root = repo_root();
    let source = root.join(format!("tests/java/{class}.java"));
    let text = std::fs::read(&source)
        .unwrap_or_else(|e| panic!("{}: {e}: no such Java check", source.display()));
    let dir = root.join("target/java-checks").join(format!(
        "{}-{:016x}",
        class.to_ascii_lowercase(),
        key(&text, classpath)
    ));
    let once = COMPILING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(dir.clone())
        .or_default()
        .clone();
    if let Err(e) = once.get_or_init(|| compile(class, &source, classpath, &dir)) {
        panic!("{e}");
    }
    dir
}

/// Compiles `source` into `dir` unless `dir` exists: into a fresh directory beside it first,
/// then renamed to `dir` (atomic: `dir` is either absent or complete).
fn compile(class: &str, source: &Path, classpath: &str, dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    let name = dir.file_name().unwrap().to_string_lossy();
    let tmp = dir.with_file_name(crate::unique_name(&format!(".tmp-{name}")));
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let javac = Command::new("javac")
        .args(SHORT_LIVED_JVM.iter().map(|o| format!("-J{o}")))
        .args(["-d", &tmp.display().to_string(), "-cp", classpath])
        .arg(source)
        .output();
    let done = match javac {
        Err(e) => Err(format!("javac (a JDK) is needed: {e}")),
        Ok(javac) if !javac.status.success() => Err(format!(
            "javac {class} failed:\n{}",
            String::from_utf8_lossy(&javac.stderr)
        )),
        // Another process may have renamed its own compilation into place meanwhile.
        Ok(_) => match std::fs::rename(&tmp, dir) {
            Err(_) if dir.is_dir() => Ok(()),
            Err(e) => Err(format!(
                "cannot move {} to {}: {e}",
                tmp.display(),
                dir.display()
            )),
            Ok(()) => return Ok(()),
        },
    };
    let _ = std::fs::remove_dir_all(&tmp);
    done
}

/// What compiled classes depend on, hashed: the source, the classpath, each jar's size and
/// modification time, and the `javac` that `PATH` finds. (std's hasher: a key that changed
/// with the toolchain would only compile the checks once more.)
fn key(source: &[u8], classpath: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    source.hash(&mut h);
    classpath.hash(&mut h);
    for jar in classpath.split(':') {
        if let Ok(m) = std::fs::metadata(jar) {
            (m.len(), m.modified().ok()).hash(&mut h);
        }
    }
    let javac = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("javac"))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok());
    javac.hash(&mut h);
    h.finish()
}

fn join(classpath: &[PathBuf]) -> String {
    classpath
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}
