//! The heartbeat loop: the only place that talks to the coordinator about assignments.
//!
//! Every heartbeat renews the rounds in flight, reports finished (with cumulative stats)
//! and failed tables, and asks for a new table while there is capacity. Unlike Flink's
//! enumerator it takes the coordinator epoch from every response (a new coordinator has
//! forgotten every round, so they are abandoned) and acts on per-table errors (a fenced or
//! dropped table's round is cancelled without committing). Heartbeat failures are retried
//! with backoff; after `tiering.heartbeat.max.failures` in a row every round is abandoned,
//! and the host keeps trying to reconnect rather than exit.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::backoff::{self, TableBackoff};
use super::context::{Assignment, RoundOutcome, TieringContext};
use super::journal::{Journal, JournalEntry};
use super::round;
use crate::coordinator::api::errors;
use crate::coordinator::proto::*;
use crate::error::{ErrorKind, Result};
use crate::metrics::health::health;
use crate::metrics::metrics;

struct ActiveRound {
    assignment: Assignment,
    cancel: CancellationToken,
    /// Until when the round waits to retry a table that failed before; a waiting round does
    /// not take a concurrency slot, so broken tables cannot starve healthy ones.
    starts_at: Instant,
}

struct Finished {
    assignment: Assignment,
    outcome: RoundOutcome,
}

pub struct TieringService {
    ctx: Arc<TieringContext>,
    coordinator_epoch: i32,
    active: HashMap<i64, ActiveRound>,
    finished: Vec<Finished>,
    failed: Vec<Assignment>,
    outcomes_tx: mpsc::UnboundedSender<(Assignment, Result<RoundOutcome>)>,
    outcomes_rx: mpsc::UnboundedReceiver<(Assignment, Result<RoundOutcome>)>,
    /// When the coordinator last had no table for us.
    last_empty_poll: Option<Instant>,
    consecutive_failures: u32,
    journal: Journal,
    /// Tables whose rounds failed in a row: their next rounds start after a growing delay.
    backoff: TableBackoff,
    /// A round failed reading Fluss: the Fluss client may have lost the cluster and is
    /// repaired before the host asks for more tables.
    fluss_suspect: bool,
}

/// How long shutdown waits for cancelled rounds to clean up.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

impl TieringService {
    /// Registers with the coordinator (a heartbeat, which returns its epoch).
    ///
    /// Rounds a previous process of this host left in its journal (it crashed) are reported
    /// failed in the same heartbeat, so the coordinator re-queues their tables now rather
    /// than after its 120 s timeout.
    pub async fn start(ctx: Arc<TieringContext>) -> Result<Self> {
        let (journal, leftover) = Journal::open(&ctx.config.state_dir)?;
        let request = LakeTieringHeartbeatRequest {
            failed_tables: leftover
                .iter()
                .map(|e| PbHeartbeatReqForTable {
                    table_id: e.table_id,
                    coordinator_epoch: e.coordinator_epoch,
                    tiering_epoch: e.tiering_epoch,
                    lake_tiering_stats: None,
                })
                .collect(),
            ..Default::default()
        };
        health().expect_heartbeats_every(ctx.config.heartbeat_interval + ctx.config.rpc_timeout);
        metrics().set_table_slots(ctx.config.max_concurrent_tables);
        let response = observe_heartbeat(&request, ctx.coordinator.heartbeat(&request).await)?;
        if !leftover.is_empty() {
            tracing::warn!(
                tables = ?leftover.iter().map(|e| e.table_id).collect::<Vec<_>>(),
                "handed back the rounds a previous run of this host left unfinished"
            );
        }
        tracing::info!(
            coordinator_epoch = response.coordinator_epoch,
            "registered with the coordinator"
        );
        let (outcomes_tx, outcomes_rx) = mpsc::unbounded_channel();
        Ok(Self {
            ctx,
            coordinator_epoch: response.coordinator_epoch,
            active: HashMap::new(),
            finished: Vec::new(),
            failed: Vec::new(),
            outcomes_tx,
            outcomes_rx,
            last_empty_poll: None,
            consecutive_failures: 0,
            journal,
            backoff: TableBackoff::default(),
            fluss_suspect: false,
        })
    }

    /// Runs until `shutdown` resolves, then stops rounds in flight and reports them failed.
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<()> {
        tokio::pin!(shutdown);
        loop {
            if self.fluss_suspect && self.ctx.fluss.repair().await {
                self.fluss_suspect = false;
            }
            // A client that cannot see the cluster would only fail the tables it gets.
            let got_table = self.heartbeat_once(!self.fluss_suspect).await;
            let wait = if self.consecutive_failures > 0 {
                heartbeat_backoff(
                    self.consecutive_failures,
                    self.ctx.config.heartbeat_interval,
                )
            } else {
                next_heartbeat(
                    self.ctx.config.poll_table_interval,
                    self.ctx.config.heartbeat_interval,
                    got_table,
                    self.has_capacity(),
                    self.last_empty_poll.map(|t| t.elapsed()),
                )
            };
            let sleep = tokio::time::sleep(wait);
            tokio::pin!(sleep);
            tokio::select! {
                _ = &mut sleep => {}
                Some((assignment, outcome)) = self.outcomes_rx.recv() => self.on_outcome(assignment, outcome),
                _ = &mut shutdown => break,
            }
            // Report everything that finished meanwhile in the next heartbeat.
            while let Ok((assignment, outcome)) = self.outcomes_rx.try_recv() {
                self.on_outcome(assignment, outcome);
            }
            self.publish_rounds();
        }
        health().stopping();
        self.shutdown().await;
        Ok(())
    }

    /// Rounds taking a concurrency slot: started, not waiting for their backoff.
    fn running(&self) -> usize {
        let now = Instant::now();
        self.active.values().filter(|r| r.starts_at <= now).count()
    }

    /// The rounds' gauges: in flight, running (taking a slot), waiting for their backoff; and
    /// the tables the Fluss client caches, which follow the rounds in flight.
    fn publish_rounds(&self) {
        let running = self.running();
        metrics().set_rounds(self.active.len(), running, self.active.len() - running);
        metrics().set_fluss_cached_tables(self.ctx.fluss.cached_tables());
    }

    fn has_capacity(&self) -> bool {
        self.running() < self.ctx.config.max_concurrent_tables
    }

    /// One heartbeat; returns whether a new table was assigned. The steps: build the
    /// request from the rounds in flight and the reports pending, send it, then apply the
    /// answer (the coordinator epoch, per-table refusals, a new table).
    async fn heartbeat_once(&mut self, may_request: bool) -> bool {
        let poll_due = self
            .last_empty_poll
            .is_none_or(|t| t.elapsed() >= self.ctx.config.poll_table_interval);
        let request_table = may_request && self.has_capacity() && poll_due;
        let finished: Vec<Finished> = std::mem::take(&mut self.finished);
        let failed: Vec<Assignment> = std::mem::take(&mut self.failed);
        let req = heartbeat_request(
            self.active.values().map(|r| &r.assignment),
            &finished,
            &failed,
            request_table,
        );
        let response = match observe_heartbeat(&req, self.ctx.coordinator.heartbeat(&req).await) {
            Ok(r) => r,
            Err(e) => {
                self.on_heartbeat_failed(&e, finished, failed);
                return false;
            }
        };
        self.consecutive_failures = 0;
        let reported: Vec<Assignment> = finished
            .iter()
            .map(|f| f.assignment.clone())
            .chain(failed.iter().cloned())
            .collect();
        self.forget_reported(&reported);
        self.apply_coordinator_epoch(response.coordinator_epoch);
        self.apply_table_refusals(&response);
        match response.tiering_table {
            Some(t) => {
                self.last_empty_poll = None;
                self.start_round(t);
                self.publish_rounds();
                true
            }
            None => {
                if request_table {
                    self.last_empty_poll = Some(Instant::now());
                }
                false
            }
        }
    }

    /// Keeps the reports for the next attempt; after too many failures in a row abandons
    /// every round in flight.
    fn on_heartbeat_failed(
        &mut self,
        e: &crate::error::Error,
        finished: Vec<Finished>,
        failed: Vec<Assignment>,
    ) {
        self.consecutive_failures += 1;
        tracing::warn!(
            failures = self.consecutive_failures,
            "heartbeat failed: {e}"
        );
        self.finished = finished;
        self.failed = failed;
        if self.consecutive_failures == self.ctx.config.heartbeat_max_failures {
            tracing::error!(
                "{} heartbeats failed in a row; abandoning every round in flight",
                self.consecutive_failures
            );
            self.cancel_all();
        }
    }

    /// A new coordinator has forgotten every round: they are abandoned.
    fn apply_coordinator_epoch(&mut self, epoch: i32) {
        if epoch == self.coordinator_epoch {
            return;
        }
        tracing::warn!(
            old = self.coordinator_epoch,
            new = epoch,
            "coordinator changed; rounds of the previous coordinator are abandoned"
        );
        self.coordinator_epoch = epoch;
        self.cancel_all();
        // The new coordinator forgot those rounds; reporting them would only be refused.
        self.failed.clear();
    }

    /// Logs every per-table refusal; a fenced round in flight is cancelled without committing.
    fn apply_table_refusals(&mut self, response: &LakeTieringHeartbeatResponse) {
        for (kind, resps) in [
            ("tiering", &response.tiering_table_resp),
            ("finished", &response.finished_table_resp),
            ("failed", &response.failed_table_resp),
        ] {
            for r in resps {
                let Some(err) = &r.error else { continue };
                tracing::warn!(
                    table_id = r.table_id,
                    code = err.error_code,
                    "coordinator refused the {kind} report: {}",
                    err.error_message.as_deref().unwrap_or("")
                );
                if kind == "tiering"
                    && errors::fences_round(err.error_code)
                    && let Some(round) = self.active.remove(&r.table_id)
                {
                    tracing::warn!(table = %round.assignment.path, "round fenced by the coordinator; cancelling it");
                    round.cancel.cancel();
                }
            }
        }
    }

    fn start_round(&mut self, t: PbLakeTieringTableInfo) {
        let assignment = Assignment {
            table_id: t.table_id,
            path: fluss::metadata::TablePath::new(
                t.table_path.database_name,
                t.table_path.table_name,
            ),
            tiering_epoch: t.tiering_epoch,
            coordinator_epoch: self.coordinator_epoch,
        };
        tracing::info!(table = %assignment.path, round = %round::round_id(&assignment), "table assigned");
        self.journal.add(JournalEntry {
            table_id: assignment.table_id,
            coordinator_epoch: assignment.coordinator_epoch,
            tiering_epoch: assignment.tiering_epoch,
        });
        let cancel = CancellationToken::new();
        let delay = self.backoff.delay(t.table_id);
        self.active.insert(
            t.table_id,
            ActiveRound {
                assignment: assignment.clone(),
                cancel: cancel.clone(),
                starts_at: Instant::now() + delay,
            },
        );
        let ctx = self.ctx.clone();
        let tx = self.outcomes_tx.clone();
        if !delay.is_zero() {
            tracing::info!(table = %assignment.path, ?delay, "table failed before; its round waits before starting");
        }
        tokio::spawn(async move {
            let outcome = tokio::select! {
                _ = tokio::time::sleep(delay) => round::run_round(ctx, assignment.clone(), cancel).await,
                _ = cancel.cancelled() => Err(crate::error::Error::new(ErrorKind::Cancelled, "round cancelled while waiting to retry")),
            };
            let _ = tx.send((assignment, outcome));
        });
    }

    fn on_outcome(&mut self, assignment: Assignment, outcome: Result<RoundOutcome>) {
        let still_ours = self
            .active
            .get(&assignment.table_id)
            .is_some_and(|r| r.assignment.is_same_round(&assignment));
        if still_ours {
            self.active.remove(&assignment.table_id);
        }
        self.backoff.record(
            assignment.table_id,
            outcome.as_ref().err().map(|e| e.kind()),
        );
        if outcome
            .as_ref()
            .is_err_and(|e| e.kind() == ErrorKind::Fluss)
        {
            self.fluss_suspect = true;
        }
        match outcome {
            Ok(outcome) => {
                if still_ours {
                    self.finished.push(Finished {
                        assignment,
                        outcome,
                    });
                }
            }
            Err(e) => {
                let id = round::round_id(&assignment);
                if e.kind() == ErrorKind::Cancelled {
                    tracing::warn!(table = %assignment.path, round = %id, "tiering round stopped: {e}");
                } else {
                    tracing::error!(table = %assignment.path, round = %id, "tiering round failed: {e}");
                }
                // Reported failed so that the coordinator re-queues the table at once instead
                // of after its 120 s timeout; if the round was fenced the coordinator simply
                // refuses the report.
                if still_ours {
                    self.failed.push(assignment);
                }
            }
        }
    }

    fn cancel_all(&mut self) {
        for (_, round) in self.active.drain() {
            round.cancel.cancel();
            self.failed.push(round.assignment);
        }
    }

    /// Journal entries go once the coordinator has heard the round's end.
    fn forget_reported(&mut self, reported: &[Assignment]) {
        for a in reported {
            if !self.active.contains_key(&a.table_id) {
                self.journal.remove(a.table_id);
            }
        }
    }

    /// Stops asking for tables and lets rounds in flight finish (heartbeats keep them alive)
    /// within the grace period; then cancels the rest and reports them failed in one last
    /// heartbeat. Table maintenance in progress stops at once: it runs only after a round's
    /// commits, so the round is reported finished as soon as its plugin call is interrupted,
    /// and the host does not wait out a maintenance budget (up to the table's freshness).
    async fn shutdown(mut self) {
        self.ctx.stopping.cancel();
        tracing::info!(rounds = self.active.len(), grace = ?self.ctx.config.shutdown_grace_period, "shutting down");
        let deadline = Instant::now() + self.ctx.config.shutdown_grace_period;
        while !self.active.is_empty() && Instant::now() < deadline {
            let wait = self
                .ctx
                .config
                .heartbeat_interval
                .min(deadline.saturating_duration_since(Instant::now()));
            if let Ok(Some((assignment, outcome))) =
                tokio::time::timeout(wait, self.outcomes_rx.recv()).await
            {
                self.on_outcome(assignment, outcome);
            }
            self.heartbeat_once(false).await;
        }
        for round in self.active.values() {
            round.cancel.cancel();
        }
        let deadline = Instant::now() + CANCEL_GRACE;
        while !self.active.is_empty() {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(remaining, self.outcomes_rx.recv()).await {
                Ok(Some((assignment, outcome))) => self.on_outcome(assignment, outcome),
                _ => break,
            }
        }
        for (_, round) in self.active.drain() {
            self.failed.push(round.assignment);
        }
        if !self.failed.is_empty() {
            tracing::warn!(
                tables = ?self.failed.iter().map(|a| a.path.to_string()).collect::<Vec<_>>(),
                "reporting unfinished rounds failed before exiting"
            );
        }
        self.heartbeat_once(false).await;
    }
}

/// Counts a heartbeat and its encoded sizes and tells the readiness check how it went;
/// passes the result on.
fn observe_heartbeat(
    request: &LakeTieringHeartbeatRequest,
    result: Result<LakeTieringHeartbeatResponse>,
) -> Result<LakeTieringHeartbeatResponse> {
    use prost::Message;
    metrics().heartbeat(result.is_ok());
    metrics().heartbeat_sizes(
        request.encoded_len(),
        result.as_ref().ok().map(Message::encoded_len),
    );
    match &result {
        Ok(response) => {
            health().heartbeat_ok();
            metrics().set_coordinator_epoch(response.coordinator_epoch);
        }
        Err(e) => health().heartbeat_failed(&e.to_string()),
    }
    result
}

/// The heartbeat request: every round in flight, the finished ones with their stats and
/// whether they were force-finished, the failed ones, and possibly a request for a table.
/// Its size grows with the host's rounds (in flight and reported, at most
/// [`MAX_TABLE_ENTRY_BYTES`] each), never with the tables the cluster holds.
fn heartbeat_request<'a>(
    in_flight: impl Iterator<Item = &'a Assignment>,
    finished: &[Finished],
    failed: &[Assignment],
    request_table: bool,
) -> LakeTieringHeartbeatRequest {
    LakeTieringHeartbeatRequest {
        tiering_tables: in_flight.map(|a| table_req(a, None)).collect(),
        finished_tables: finished
            .iter()
            .map(|f| {
                let stats = f.outcome.stats.as_ref().map(|s| PbLakeTieringStats {
                    file_size: s.file_size,
                    record_count: s.record_count,
                });
                table_req(&f.assignment, stats)
            })
            .collect(),
        failed_tables: failed.iter().map(|a| table_req(a, None)).collect(),
        request_table: request_table.then_some(true),
        force_finished_tables: finished
            .iter()
            .filter(|f| f.outcome.force_finished)
            .map(|f| f.assignment.table_id)
            .collect(),
    }
}

/// The most one table adds to a heartbeat request: its entry (ids, epochs and, once
/// finished, the lake statistics, each a varint of at most 10 bytes, with their tags and the
/// entry's own) and its id among the force-finished tables.
pub const MAX_TABLE_ENTRY_BYTES: usize = 2 + 3 * 11 + (2 + 2 * 11) + 11;

fn table_req(a: &Assignment, stats: Option<PbLakeTieringStats>) -> PbHeartbeatReqForTable {
    PbHeartbeatReqForTable {
        table_id: a.table_id,
        coordinator_epoch: a.coordinator_epoch,
        tiering_epoch: a.tiering_epoch,
        lake_tiering_stats: stats,
    }
}

/// Backoff between failed heartbeats: from 1 s, at most 32 s and the heartbeat interval.
fn heartbeat_backoff(failures: u32, interval: Duration) -> Duration {
    backoff::exponential(failures, interval.min(Duration::from_secs(32)))
}

/// How long to wait before the next heartbeat. With capacity the host asks for a table again
/// as soon as it may, as Flink's enumerator does: at once after it got one, otherwise when
/// `tiering.poll.table.interval` has passed since the coordinator last had none; a round
/// that ends wakes the loop early. Without capacity, heartbeats only renew the rounds.
fn next_heartbeat(
    poll_table_interval: Duration,
    heartbeat_interval: Duration,
    got_table: bool,
    has_capacity: bool,
    since_empty_poll: Option<Duration>,
) -> Duration {
    if !has_capacity {
        return heartbeat_interval;
    }
    if got_table {
        return Duration::ZERO;
    }
    // No empty poll to count from: the last heartbeat did not ask (the Fluss client is
    // being repaired), so the next one is a plain heartbeat.
    let until_poll = since_empty_poll.map_or(heartbeat_interval, |since| {
        poll_table_interval.saturating_sub(since)
    });
    until_poll.min(heartbeat_interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `PbHeartbeatReqForTable` as Fluss 0.9.1 declares it: no `lake_tiering_stats` (field 4,
    /// added on Fluss main by #2454).
    #[derive(Clone, PartialEq, prost::Message)]
    struct HeartbeatReqForTable091 {
        #[prost(int64, required, tag = "1")]
        table_id: i64,
        #[prost(int32, required, tag = "2")]
        coordinator_epoch: i32,
        #[prost(int64, required, tag = "3")]
        tiering_epoch: i64,
    }

    /// A finished table's entry carries the lake table's size and record count as field 4; a
    /// 0.9.1 coordinator's parser skips the unknown field (proto2) and reads the rest intact,
    /// as every end-to-end round against the real 0.9.1 cluster also shows.
    #[test]
    fn finished_tables_report_lake_tiering_stats_that_a_0_9_1_coordinator_skips() {
        use prost::Message;
        let a = Assignment {
            table_id: 7,
            path: fluss::metadata::TablePath::new("db", "t"),
            tiering_epoch: 3,
            coordinator_epoch: 1,
        };
        let entry = table_req(
            &a,
            Some(PbLakeTieringStats {
                file_size: Some(300),
                record_count: Some(5),
            }),
        );
        let bytes = entry.encode_to_vec();
        // Field 4, length-delimited (0x22), 5 bytes: file_size 300 (0x08 0xac 0x02) and
        // record_count 5 (0x10 0x05).
        assert!(
            bytes.ends_with(&[0x22, 0x05, 0x08, 0xac, 0x02, 0x10, 0x05]),
            "{bytes:02x?}"
        );
        let old = HeartbeatReqForTable091::decode(bytes.as_slice()).unwrap();
        assert_eq!(
            old,
            HeartbeatReqForTable091 {
                table_id: 7,
                coordinator_epoch: 1,
                tiering_epoch: 3
            }
        );
        // Rounds in flight and failed ones carry no stats.
        assert!(
            table_req(&a, None)
                .encode_to_vec()
                .iter()
                .all(|&b| b != 0x22)
        );
    }

    /// A heartbeat costs at most [`MAX_TABLE_ENTRY_BYTES`] per round it carries, even with
    /// the largest ids, epochs and statistics (negative ones take 10-byte varints).
    #[test]
    fn a_heartbeat_request_grows_by_a_bounded_size_per_round() {
        use prost::Message;
        let round = |table_id| Assignment {
            table_id,
            path: fluss::metadata::TablePath::new("db", "t"),
            tiering_epoch: i64::MIN,
            coordinator_epoch: -1,
        };
        let stats = crate::plugin::wit::TieringStats {
            file_size: Some(i64::MIN),
            record_count: Some(i64::MIN),
        };
        let finished: Vec<Finished> = (0..1_000)
            .map(|k| Finished {
                assignment: round(i64::MIN + k),
                outcome: RoundOutcome {
                    stats: Some(stats),
                    force_finished: true,
                    ..RoundOutcome::default()
                },
            })
            .collect();
        let in_flight: Vec<Assignment> = (0..1_000).map(|k| round(-1 - k)).collect();
        let failed: Vec<Assignment> = (0..1_000).map(|k| round(i64::MAX - k)).collect();
        let request = heartbeat_request(in_flight.iter(), &finished, &failed, true);
        let rounds = in_flight.len() + finished.len() + failed.len();
        let len = request.encoded_len();
        // Two bytes for the table request.
        assert!(
            len <= rounds * MAX_TABLE_ENTRY_BYTES + 2,
            "{len} bytes for {rounds} rounds"
        );
        let one = heartbeat_request(in_flight[..1].iter(), &[], &[], false).encoded_len();
        assert!(one <= MAX_TABLE_ENTRY_BYTES, "{one}");
    }

    #[test]
    fn with_capacity_the_next_table_is_asked_for_at_the_poll_interval_not_the_heartbeat() {
        let (s, ms) = (Duration::from_secs, Duration::from_millis);
        assert_eq!(
            next_heartbeat(s(1), s(10), true, true, None),
            Duration::ZERO
        );
        assert_eq!(
            next_heartbeat(s(1), s(10), false, true, Some(ms(300))),
            ms(700)
        );
        assert_eq!(
            next_heartbeat(s(1), s(10), false, true, Some(ms(1500))),
            Duration::ZERO
        );
        // A long poll interval still heartbeats every heartbeat interval.
        assert_eq!(
            next_heartbeat(s(30), s(10), false, true, Some(ms(0))),
            s(10)
        );
        // Not asked last time: no busy loop.
        assert_eq!(next_heartbeat(s(1), s(10), false, true, None), s(10));
        // Full: heartbeats renew the rounds in flight only.
        assert_eq!(next_heartbeat(s(1), s(10), true, false, None), s(10));
    }
}
