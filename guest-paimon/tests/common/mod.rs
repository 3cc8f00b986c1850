//! Helpers shared by the pypaimon integration tests: the workspace paths, the venv's Python
//! and running `tests/python/paimon_read.py` commands in one Python process.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The Python of the venv with pypaimon (`target/venv`).
pub fn python() -> PathBuf {
    let p = root().join("target/venv/bin/python");
    assert!(
        p.exists(),
        "the Python venv with pypaimon is missing ({}): run scripts/setup-python.sh first",
        p.display()
    );
    p
}

/// Runs `paimon_read.py` commands (argument lists without the warehouse, which is inserted
/// after the command name) in one Python process; returns each command's output lines.
pub fn read_many(warehouse: &Path, commands: &[Vec<String>]) -> Vec<Vec<Json>> {
    use std::io::Write;
    let mut child = Command::new(python())
        .arg(root().join("tests/python/paimon_read.py"))
        .arg("batch")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running paimon_read.py");
    {
        let mut stdin = child.stdin.take().unwrap();
        for c in commands {
            let mut args = vec![c[0].clone(), warehouse.to_str().unwrap().to_string()];
            args.extend(c[1..].iter().cloned());
            writeln!(stdin, "{}", serde_json::to_string(&args).unwrap()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "paimon_read.py batch failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Vec<Json>> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .zip(commands)
        .map(|(l, c)| {
            let v: Json = serde_json::from_str(l).expect("json line");
            match v.get("out") {
                Some(Json::Array(rows)) => rows.clone(),
                _ => panic!(
                    "paimon_read.py {c:?} failed: {}",
                    v["error"].as_str().unwrap_or("?")
                ),
            }
        })
        .collect();
    assert_eq!(results.len(), commands.len(), "every command answered");
    results
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
