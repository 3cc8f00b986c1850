//! Named points where tests can make the host crash or stall, to prove exactly-once
//! delivery under crashes at the worst moments (e.g. between the lake and Fluss commits).
//!
//! Test-only: compiled in only with the cargo feature `failpoints` (which the test crate
//! enables; a release build of the host alone has none, and every point is an empty inline
//! function). Armed by the environment variable `FLUSS_LAKE_HOST_FAILPOINTS`, a
//! `;`-separated list of `point=action`, where action is `crash` (abort the process, like
//! SIGKILL: no cleanup, no last heartbeat), `sleep:<millis>`, or `once-until:<file>` (the
//! first time the point is passed, stall until the test creates `<file>`, 5 minutes at most).

#[cfg(feature = "failpoints")]
use std::collections::HashMap;
#[cfg(feature = "failpoints")]
use std::sync::OnceLock;
#[cfg(feature = "failpoints")]
use std::time::Duration;

pub const ENV: &str = "FLUSS_LAKE_HOST_FAILPOINTS";

/// Before a split reads its first batch: a split that has not started when its round
/// reaches the table's freshness.
pub const BEFORE_FIRST_BATCH: &str = "before-first-batch";
/// After the first batch of a split reached the plugin.
pub const AFTER_FIRST_WRITE: &str = "after-first-write";
/// Before `PrepareLakeTableSnapshot`.
pub const BEFORE_PREPARE: &str = "before-prepare";
/// After `PrepareLakeTableSnapshot`, before the lake commit.
pub const BEFORE_LAKE_COMMIT: &str = "before-lake-commit";
/// After the lake commit, before the Fluss commit: the window recovery exists for.
pub const AFTER_LAKE_COMMIT: &str = "after-lake-commit";
/// After the Fluss commit, before the finished heartbeat.
pub const AFTER_FLUSS_COMMIT: &str = "after-fluss-commit";
/// After a KV snapshot is leased, before its files are listed (the first snapshot a split
/// tries): a host stalled past its lease.
pub const KV_SNAPSHOT_LEASED: &str = "kv-snapshot-leased";

pub const ALL: &[&str] = &[
    BEFORE_FIRST_BATCH,
    AFTER_FIRST_WRITE,
    BEFORE_PREPARE,
    BEFORE_LAKE_COMMIT,
    AFTER_LAKE_COMMIT,
    AFTER_FLUSS_COMMIT,
    KV_SNAPSHOT_LEASED,
];

#[cfg(feature = "failpoints")]
#[derive(Debug, Clone, PartialEq)]
enum Action {
    Crash,
    Sleep(Duration),
    OnceUntil(std::path::PathBuf),
}

#[cfg(feature = "failpoints")]
fn armed() -> &'static HashMap<String, Action> {
    static ARMED: OnceLock<HashMap<String, Action>> = OnceLock::new();
    ARMED.get_or_init(|| parse(&std::env::var(ENV).unwrap_or_default()))
}

#[cfg(feature = "failpoints")]
fn parse(spec: &str) -> HashMap<String, Action> {
    spec.split(';')
        .filter_map(|entry| {
            let (point, action) = entry.trim().split_once('=')?;
            let millis = |s: &str| s.parse().ok().map(Duration::from_millis);
            let action = match action.trim() {
                "crash" => Action::Crash,
                other => match other.strip_prefix("once-until:") {
                    Some(file) => Action::OnceUntil(file.into()),
                    None => Action::Sleep(millis(other.strip_prefix("sleep:")?)?),
                },
            };
            Some((point.trim().to_string(), action))
        })
        .collect()
}

/// Passes the named point: without the `failpoints` feature, nothing.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub async fn hit(_point: &str) {}

/// Passes the named point: crashes or stalls if a test armed it.
#[cfg(feature = "failpoints")]
pub async fn hit(point: &str) {
    match armed().get(point) {
        None => {}
        Some(Action::Crash) => {
            tracing::error!("failpoint {point}: crashing on purpose");
            std::process::abort();
        }
        Some(Action::Sleep(d)) => {
            tracing::warn!("failpoint {point}: stalling {d:?}");
            tokio::time::sleep(*d).await;
        }
        Some(Action::OnceUntil(file)) => {
            static PASSED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
            let first = {
                let mut passed = PASSED.lock().unwrap_or_else(|p| p.into_inner());
                let first = !passed.iter().any(|p| p == point);
                if first {
                    passed.push(point.to_string());
                }
                first
            };
            if first {
                tracing::warn!(
                    "failpoint {point}: stalling until {} exists",
                    file.display()
                );
                let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
                while !file.exists() && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

#[cfg(all(test, feature = "failpoints"))]
mod tests {
    use super::*;

    #[test]
    fn parses_points() {
        let p = parse(
            "after-lake-commit=crash; before-prepare=sleep:250;bogus;x=sleep:y;kv-snapshot-leased=once-until:/tmp/go",
        );
        assert_eq!(p.get("after-lake-commit"), Some(&Action::Crash));
        assert_eq!(
            p.get("before-prepare"),
            Some(&Action::Sleep(Duration::from_millis(250)))
        );
        assert_eq!(
            p.get("kv-snapshot-leased"),
            Some(&Action::OnceUntil("/tmp/go".into()))
        );
        assert_eq!(p.len(), 3);
    }
}
