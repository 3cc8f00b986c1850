//! Wall-clock time as Fluss counts it: milliseconds since the Unix epoch (record timestamps,
//! round timestamps, deadlines handed to plugins).

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in epoch milliseconds (0 if the clock is before 1970).
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
