//! How long a table whose rounds keep failing waits before its next round.
//!
//! The coordinator hands a failed table straight back, so without this a failing table would
//! cycle failed → reassigned → failed at RPC speed. Every failure backs off except a
//! cancellation (the host stopped the round itself): deterministic ones (a broken plugin, a
//! bad option, a Fluss error such as an offset below the log start or an unreadable
//! segment, a recovery that recurs) grow to a minute; transient ones (an outage, fencing)
//! grow to fifteen seconds, since retrying soon is how they are overcome. A waiting round is
//! heartbeated as in flight, so both stay well within the coordinator's 120 s timeout.

use std::collections::HashMap;
use std::time::Duration;

use crate::error::ErrorKind;

const DETERMINISTIC_CAP: Duration = Duration::from_secs(60);
const TRANSIENT_CAP: Duration = Duration::from_secs(15);

/// Whether retrying later may succeed without anyone changing anything.
pub fn is_transient(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Unavailable | ErrorKind::Fenced | ErrorKind::Busy | ErrorKind::Conflict
    )
}

/// Failures in a row, per table.
#[derive(Debug, Default)]
pub struct TableBackoff {
    failures: HashMap<i64, Failures>,
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    /// The last one was transient.
    transient: bool,
}

impl TableBackoff {
    /// Records how a round of `table_id` ended: `None` for success.
    pub fn record(&mut self, table_id: i64, failure: Option<ErrorKind>) {
        match failure {
            None => {
                self.failures.remove(&table_id);
            }
            Some(ErrorKind::Cancelled) => {}
            Some(kind) => {
                let f = self.failures.entry(table_id).or_insert(Failures {
                    count: 0,
                    transient: true,
                });
                f.count += 1;
                f.transient = is_transient(kind);
            }
        }
    }

    /// How long the table's next round waits: 1 s, 2 s, 4 s… up to the cap of the last
    /// failure's kind; nothing after a success.
    pub fn delay(&self, table_id: i64) -> Duration {
        let Some(f) = self.failures.get(&table_id) else {
            return Duration::ZERO;
        };
        let cap = if f.transient {
            TRANSIENT_CAP
        } else {
            DETERMINISTIC_CAP
        };
        exponential(f.count, cap)
    }
}

/// 1 s after the first failure, doubling with each one after it, never more than `cap`.
pub fn exponential(failures: u32, cap: Duration) -> Duration {
    Duration::from_secs(1u64 << failures.clamp(1, 7).saturating_sub(1)).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_but_a_cancellation_backs_off() {
        let mut b = TableBackoff::default();
        for kind in [
            ErrorKind::Fluss,
            ErrorKind::Protocol,
            ErrorKind::Coordinator,
            ErrorKind::Recovered,
            ErrorKind::Unavailable,
            ErrorKind::Plugin,
        ] {
            b.record(1, None);
            b.record(1, Some(kind));
            assert_eq!(b.delay(1), Duration::from_secs(1), "{kind:?}");
        }
        b.record(2, Some(ErrorKind::Cancelled));
        assert_eq!(b.delay(2), Duration::ZERO);
    }

    #[test]
    fn delays_grow_to_the_cap_of_their_kind_and_reset_on_success() {
        let mut b = TableBackoff::default();
        let delays: Vec<u64> = (0..9)
            .map(|_| {
                b.record(7, Some(ErrorKind::Fluss));
                b.delay(7).as_secs()
            })
            .collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
        b.record(7, Some(ErrorKind::Unavailable));
        assert_eq!(b.delay(7), TRANSIENT_CAP);
        b.record(7, None);
        assert_eq!(b.delay(7), Duration::ZERO);
    }
}
