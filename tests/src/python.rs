//! The Python readers in `tests/python` (the formats' own, non-Rust implementations), run by
//! `fluss_lake_python_readers`' pooled workers with the test S3 server's environment
//! ([`crate::s3::reader_env`]).

use serde_json::Value;

/// Runs commands of a reader script in `tests/python` (its `batch` mode) in one worker
/// process; each command's output lines (as JSON), or `Err(message)` when the command raised.
pub fn batch(script: &str, commands: &[Vec<String>]) -> Vec<Result<Vec<Value>, String>> {
    fluss_lake_python_readers::batch(script, &crate::s3::reader_env(), commands)
}

/// [`batch`], with each command's wall time in seconds (Python's import not included).
pub fn batch_timed(
    script: &str,
    commands: &[Vec<String>],
) -> Vec<(Result<Vec<Value>, String>, f64)> {
    fluss_lake_python_readers::batch_timed(script, &crate::s3::reader_env(), commands)
}

/// The footer of the Parquet file at `url` on the test S3 server, as pyarrow reads it through
/// S3: `{"num_rows", "row_groups", "size"}`.
pub fn parquet_footer(url: &str) -> Value {
    batch("parquet_footer.py", &[vec![url.to_string()]])
        .remove(0)
        .unwrap_or_else(|e| panic!("parquet_footer.py {url} failed:\n{e}"))
        .into_iter()
        .next()
        .expect("parquet_footer.py prints one line")
}
