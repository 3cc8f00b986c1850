//! The Python readers in `tests/python` (the formats' own, non-Rust implementations), run from
//! the project's venv.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::repo_root;

/// Runs commands of a reader script in `tests/python` (its `batch` mode) in one Python
/// process; each command's output lines (as JSON), or `Err(message)` when the command raised.
pub fn batch(script: &str, commands: &[Vec<String>]) -> Vec<Result<Vec<Value>, String>> {
    batch_timed(script, commands)
        .into_iter()
        .map(|(r, _)| r)
        .collect()
}

/// [`batch`], with each command's wall time in seconds (Python's import not included).
pub fn batch_timed(
    script: &str,
    commands: &[Vec<String>],
) -> Vec<(Result<Vec<Value>, String>, f64)> {
    let py = repo_root().join("target/venv/bin/python");
    assert!(
        py.exists(),
        "{} missing: run scripts/setup-python.sh",
        py.display()
    );
    let mut child = Command::new(py)
        .arg(repo_root().join("tests/python").join(script))
        .arg("batch")
        .envs(crate::s3::reader_env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running a reader script");
    {
        let mut stdin = child.stdin.take().unwrap();
        for c in commands {
            writeln!(stdin, "{}", serde_json::to_string(c).unwrap()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script} batch failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), commands.len(), "one result per command");
    lines
        .into_iter()
        .map(|v| {
            let seconds = v["seconds"].as_f64().unwrap_or_default();
            let result = match v.get("error") {
                Some(e) => Err(e.as_str().unwrap_or_default().to_string()),
                None => Ok(v["out"].as_array().cloned().unwrap_or_default()),
            };
            (result, seconds)
        })
        .collect()
}

/// The footer of the Parquet file at `url` on the test S3 server, as pyarrow reads it through
/// S3: `{"num_rows", "row_groups", "size"}`.
pub fn parquet_footer(url: &str) -> Value {
    let out = Command::new(repo_root().join("target/venv/bin/python"))
        .arg(repo_root().join("tests/python/parquet_footer.py"))
        .arg(url)
        .envs(crate::s3::reader_env())
        .output()
        .expect("running parquet_footer.py");
    assert!(
        out.status.success(),
        "parquet_footer.py {url} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}
