//! Progress of a long round: one log line per `--log.progress-interval` while it reads, with
//! the records done and to do and the rate, so an operator watching a backlog being tiered
//! sees it move (and how long it has left) without waiting for the commit.
//!
//! Records are counted by log offsets (the splits' offset ranges), which is what "to do" can
//! be known as before reading.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shared by the splits of one round.
pub struct RoundProgress {
    total: u64,
    done: AtomicU64,
    started: Instant,
}

impl RoundProgress {
    pub fn new(total: u64) -> Arc<Self> {
        Arc::new(Self {
            total,
            done: AtomicU64::new(0),
            started: Instant::now(),
        })
    }

    /// A split advanced by `offsets`.
    pub fn advance(&self, offsets: u64) {
        self.done.fetch_add(offsets, Ordering::Relaxed);
    }

    /// The progress line's text.
    pub fn describe(&self) -> String {
        let done = self.done.load(Ordering::Relaxed).min(self.total);
        let secs = self.started.elapsed().as_secs_f64();
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let pct = if self.total == 0 {
            100.0
        } else {
            done as f64 * 100.0 / self.total as f64
        };
        let left = if rate > 0.0 {
            format!(
                ", about {}s left",
                ((self.total - done) as f64 / rate).ceil() as u64
            )
        } else {
            String::new()
        };
        format!(
            "{done} of {} records ({pct:.1}%), {rate:.0} records/s{left}",
            self.total
        )
    }

    /// Logs the progress every `interval` until dropped (abort the returned task).
    pub fn report_every(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let progress = self.clone();
        let span = tracing::Span::current();
        tokio::spawn(async move {
            let mut tick =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            loop {
                tick.tick().await;
                let _entered = span.enter();
                tracing::info!(
                    records_done = progress.done.load(Ordering::Relaxed),
                    records_to_do = progress.total,
                    "tiering progress: {}",
                    progress.describe()
                );
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_done_to_do_and_rate() {
        let p = RoundProgress::new(1000);
        p.advance(250);
        let line = p.describe();
        assert!(line.starts_with("250 of 1000 records (25.0%), "), "{line}");
        assert!(line.contains("records/s"), "{line}");
        p.advance(10_000);
        assert!(p.describe().starts_with("1000 of 1000 records (100.0%)"));
    }
}
