//! The Java readers' checks (`tests/java/*.java`): each is compiled with `javac` against the
//! jars Fluss's own plugins or FlussLakeTiering run with, run once, and prints one JSON object
//! per line. They fail (never skip) without a JDK or the jars.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::repo_root;

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

/// Compiles `tests/java/<class>.java` against `classpath` (into a directory of this call's
/// own, as tests run concurrently), runs it with `args` and returns its JSON lines.
pub fn run_check(class: &str, classpath: &[PathBuf], args: &[&Path]) -> Vec<Value> {
    let root = repo_root();
    let classes = root
        .join("target/java-checks")
        .join(crate::unique_name(&class.to_ascii_lowercase()));
    std::fs::create_dir_all(&classes).unwrap();
    let classpath = classpath
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let javac = Command::new("javac")
        .args(["-d", &classes.display().to_string(), "-cp", &classpath])
        .arg(root.join(format!("tests/java/{class}.java")))
        .output()
        .expect("javac (a JDK) is needed");
    assert!(
        javac.status.success(),
        "javac {class} failed:\n{}",
        String::from_utf8_lossy(&javac.stderr)
    );
    let out = Command::new("java")
        .args([
            "-Xmx512m",
            "-Dlog4j2.level=ERROR",
            "-cp",
            &format!("{}:{classpath}", classes.display()),
            class,
        ])
        .args(args)
        .envs(crate::s3::reader_env())
        .output()
        .expect("java");
    let _ = std::fs::remove_dir_all(&classes);
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
