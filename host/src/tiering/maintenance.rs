//! Table maintenance through the plugin's optional `maintenance` export (contract 0.3.1):
//! snapshot expiry when `--lake.tiering.auto-expire-snapshot true` or the table's
//! `table.datalake.auto-expire-snapshot` is set, compaction when the table's
//! `table.datalake.auto-compaction` is (the options Flink's tiering honours).
//!
//! It runs in the instance of a round, after the round committed (the lake snapshot is
//! published and Fluss registered it), or after a round that had nothing to commit, so
//! nothing here can undo a round: a failed, interrupted or refused maintenance is logged and
//! tried again after a later round. A table that gets no new data is still handed to the host
//! once per freshness; it is maintained at most once per `--maintenance.idle-interval` (see
//! [`MaintenanceLedger`]), or at its next round when the last call left work.
//!
//! The plugin is told which snapshots Fluss still needs ([`Keep`]) and keeps them; it gets
//! the table's freshness (at most the plugin call timeout) as its budget, aims to finish
//! within three quarters of it and is interrupted at the end, when the round is cancelled, or
//! as soon as the host begins to shut down.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::context::{Assignment, ResolvedTable, TieringContext};
use super::fluss_commit;
use crate::error::ErrorKind;
use crate::fluss::table;
use crate::metrics::TableMetrics;
use crate::metrics::registry::MaintenanceCounts;
use crate::plugin::host_api::MaintenanceStatus;
use crate::plugin::instance::Maintained;
use crate::plugin::{MaintenanceReport, MaintenanceRequest, PluginInstance, wit};

/// The host option that turns snapshot expiry on for every table (Fluss's name).
pub const AUTO_EXPIRE_OPTION: &str = "lake.tiering.auto-expire-snapshot";
/// The table property that turns snapshot expiry on for one table.
pub const TABLE_AUTO_EXPIRE: &str = "table.datalake.auto-expire-snapshot";
/// The table property that turns compaction on for one table.
pub const TABLE_AUTO_COMPACTION: &str = "table.datalake.auto-compaction";

/// Which lake snapshots maintenance must leave alone: those Fluss keeps registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Every snapshot: the commit asked Fluss to keep every previous one
    /// (`LakeCommitResult.KEEP_ALL_PREVIOUS`), or the host cannot tell what Fluss keeps.
    /// Nothing is expired.
    All,
    /// This snapshot and every one committed after it.
    Since(i64),
}

impl Keep {
    /// What a round's commit asked Fluss to keep: read from the very value registered
    /// ([`fluss_commit::earliest_snapshot_id_to_keep`]), so that the two cannot disagree.
    pub fn of_commit(lake: &wit::CommitResult) -> Keep {
        Self::of_registration(
            fluss_commit::earliest_snapshot_id_to_keep(lake),
            lake.snapshot_id,
        )
    }

    /// Decodes Fluss's `earliest_snapshot_id_to_keep` registered with `committed`.
    fn of_registration(earliest: Option<i64>, committed: i64) -> Keep {
        match earliest {
            None => Keep::Since(committed),
            Some(id) if id >= 0 => Keep::Since(id),
            // KEEP_ALL_PREVIOUS. Any other negative value is refused before it is registered
            // (a malformed commit result), and would keep everything anyway: Fluss keeps every
            // snapshot when it holds none with the id it is given.
            Some(_) => Keep::All,
        }
    }
}

/// Tables already told that their plugin does not maintain tables, so that this is said once
/// per table and plugin rather than after every round.
#[derive(Default)]
pub struct RefusedMaintenance(Mutex<HashSet<(i64, String)>>);

impl RefusedMaintenance {
    /// Records a refusal; true the first time for this table and plugin.
    fn first(&self, table_id: i64, plugin_digest: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((table_id, plugin_digest.to_string()))
    }
}

/// How a round ended, as far as its maintenance is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundEnd {
    /// The round committed lake snapshot `snapshot`, and Fluss registered it keeping `keep`.
    Committed { snapshot: i64, keep: Keep },
    /// The round had nothing to commit; Fluss's registered lake snapshot was `registered`
    /// when the round planned (none: the table was never tiered).
    Idle { registered: Option<i64> },
}

/// What one maintenance call keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The latest lake snapshot Fluss has registered.
    pub registered: i64,
    pub keep: Keep,
}

/// What the host remembers of each table's maintenance, in memory: when it was last called
/// and whether it left work, and what this host's last commit of the table asked Fluss to
/// keep. The rounds of a table never overlap on one host, so one entry is never raced.
#[derive(Default)]
pub struct MaintenanceLedger(Mutex<HashMap<i64, TableLedger>>);

#[derive(Debug, Clone, Copy, Default)]
struct TableLedger {
    /// The last lake snapshot this host committed for the table, with what Fluss was told to
    /// keep along with it.
    committed: Option<(i64, Keep)>,
    /// When maintenance was last called for the table.
    last_call: Option<Instant>,
    /// Whether that call said it left work for a later one.
    more_to_do: bool,
}

impl MaintenanceLedger {
    /// Whether the round maintains its table, and what it keeps (see the free function `plan`).
    pub fn plan(
        &self,
        table_id: i64,
        end: RoundEnd,
        now: Instant,
        idle_interval: Duration,
    ) -> Option<Plan> {
        let mut tables = self.0.lock().unwrap_or_else(|p| p.into_inner());
        plan(tables.entry(table_id).or_default(), end, now, idle_interval)
    }

    /// Records a maintenance call made at `at`, whatever its result.
    pub fn called(&self, table_id: i64, at: Instant, more_to_do: bool) {
        let mut tables = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let t = tables.entry(table_id).or_default();
        t.last_call = Some(at);
        t.more_to_do = more_to_do;
    }
}

/// Whether a round maintains its table, and what the call keeps; records a commit.
///
/// After a commit, always (as before: a table that gets data is maintained after every
/// round), keeping what the commit asked Fluss to keep.
///
/// After a round with nothing to commit, only when the table was tiered at least once and its
/// maintenance is due: never called by this host yet (a restart must not postpone it by a
/// whole interval), its last call left work, or `idle_interval` has passed since its last
/// call. The coordinator hands a table over once per freshness whether or not it has new
/// data, so this is also at most once per freshness; the interval keeps a table that never
/// changes from being listed and read by its plugin every few minutes for nothing, while
/// snapshots that age past the format's time retention still go within an interval.
///
/// An idle round keeps what this host's last commit asked Fluss to keep when that commit is
/// the snapshot Fluss still has registered. Otherwise (the host restarted, or another host
/// committed since) the host cannot tell whether Fluss keeps older snapshots (a commit may
/// have said `KEEP_ALL_PREVIOUS`), and Fluss does not say: it keeps [`Keep::All`], so the
/// table is compacted but not expired until this host commits it again. Expiring instead
/// from the registered snapshot could delete a snapshot Fluss serves to readers; keeping
/// costs only the space of snapshots already bounded by the last expiry.
fn plan(t: &mut TableLedger, end: RoundEnd, now: Instant, idle_interval: Duration) -> Option<Plan> {
    match end {
        RoundEnd::Committed { snapshot, keep } => {
            t.committed = Some((snapshot, keep));
            Some(Plan {
                registered: snapshot,
                keep,
            })
        }
        RoundEnd::Idle { registered } => {
            let registered = registered?;
            let due = t.more_to_do
                || t.last_call
                    .is_none_or(|last| now.saturating_duration_since(last) >= idle_interval);
            if !due {
                return None;
            }
            let keep = match t.committed {
                Some((snapshot, keep)) if snapshot == registered => keep,
                _ => Keep::All,
            };
            Some(Plan { registered, keep })
        }
    }
}

fn is_true(v: Option<&String>) -> bool {
    v.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// What the table asks for (none: no maintenance), keeping what `plan` says, with the
/// plugin's deadline.
///
/// With [`Keep::All`] the request asks for no expiry, whatever the options say, and still
/// compacts when the table asks: `keep-since` cannot say "every snapshot" (none says that
/// Fluss needs none), while a plugin told not to expire deletes no snapshot, and compaction
/// only adds snapshots, deleting no file a published snapshot references. Skipping the call
/// would also have skipped compaction, which a table that keeps every snapshot needs no less.
/// `keep-since` then names the snapshot Fluss registered, still true as far as it goes (Fluss
/// needs it and every newer one), should a plugin look at it anyway. Without compaction there
/// is nothing left to ask and no call is made.
pub fn request_for(
    tiering_options: &std::collections::BTreeMap<String, String>,
    table_properties: &HashMap<String, String>,
    plan: Plan,
    deadline_millis: i64,
) -> Option<MaintenanceRequest> {
    let asks_expiry = is_true(tiering_options.get(AUTO_EXPIRE_OPTION))
        || is_true(table_properties.get(TABLE_AUTO_EXPIRE));
    let compact = is_true(table_properties.get(TABLE_AUTO_COMPACTION));
    let (expire_snapshots, keep_since) = match plan.keep {
        Keep::Since(id) => (asks_expiry, id),
        Keep::All => (false, plan.registered),
    };
    (expire_snapshots || compact).then_some(MaintenanceRequest {
        expire_snapshots,
        compact,
        keep_since: Some(keep_since),
        deadline_millis,
    })
}

/// How long a maintenance call may take: the table's freshness, at most the plugin call
/// timeout.
fn budget(ctx: &TieringContext, resolved: &ResolvedTable) -> Duration {
    table::freshness(&resolved.info).min(ctx.config.plugin_call_timeout)
}

/// Runs `call` (a plugin call that ends once `stop` is cancelled) to its end, cancelling
/// `stop` as soon as the round is cancelled or the host begins to shut down. Maintenance can
/// always be left for later, so it never holds a shutdown or a fenced round: the plugin call
/// is interrupted (its instance is not used again) and the next round starts over.
async fn until_stopped<T>(
    call: impl Future<Output = T>,
    stop: &CancellationToken,
    round: &CancellationToken,
    host: &CancellationToken,
) -> T {
    let watch = async {
        tokio::select! {
            _ = round.cancelled() => {}
            _ = host.cancelled() => {}
        }
        stop.cancel();
        std::future::pending::<()>().await
    };
    tokio::select! {
        r = call => r,
        _ = watch => unreachable!("the watch never ends"),
    }
}

/// Maintains the table after a round, when `plan` says so; never fails the round.
pub async fn maintain_table(
    ctx: &TieringContext,
    assignment: &Assignment,
    resolved: &ResolvedTable,
    instance: &mut PluginInstance,
    end: RoundEnd,
    cancel: &CancellationToken,
    metrics: &TableMetrics,
) {
    let now = Instant::now();
    let Some(plan) = ctx.maintenance.plan(
        assignment.table_id,
        end,
        now,
        ctx.config.maintenance_idle_interval,
    ) else {
        return;
    };
    let idle = matches!(end, RoundEnd::Idle { .. });
    let budget = budget(ctx, resolved);
    let aim = budget.mul_f64(0.75);
    let Some(request) = request_for(
        &ctx.config.tiering_options,
        resolved.info.get_properties(),
        plan,
        crate::time::now_millis() + aim.as_millis() as i64,
    ) else {
        return;
    };
    let digest = resolved.plugin.digest();
    if !instance.maintains_tables() {
        if ctx.refused_maintenance.first(assignment.table_id, digest) {
            tracing::warn!(
                table = %assignment.path,
                plugin = %resolved.plugin.describe(),
                "the table asks for snapshot expiry or compaction, but its plugin does not export `maintenance` (contract 0.3.1): the table is tiered, not maintained"
            );
        }
        return;
    }
    if cancel.is_cancelled() || ctx.stopping.is_cancelled() {
        return;
    }
    tracing::debug!(
        table = %assignment.path,
        idle,
        expire = request.expire_snapshots,
        compact = request.compact,
        keep = ?plan.keep,
        ?budget,
        "table maintenance started"
    );
    let context = resolved.committer_context(ctx);
    let stop = CancellationToken::new();
    instance.set_cancel(stop.clone());
    let started = Instant::now();
    // Under the table's metastore lock where its writers commit under one (the lock is
    // kept alive while maintenance runs).
    let result = until_stopped(
        async {
            resolved
                .under_commit_lock(instance.maintain(&context, request, budget))
                .await
                .and_then(|r| r)
        },
        &stop,
        cancel,
        &ctx.stopping,
    )
    .await;
    ctx.maintenance.called(
        assignment.table_id,
        now,
        result
            .as_ref()
            .is_ok_and(|r| r.as_ref().is_some_and(|m| m.report.more_to_do)),
    );
    match result {
        Ok(Some(Maintained { report, status })) => {
            let took = started.elapsed();
            metrics.maintained(
                true,
                MaintenanceCounts {
                    snapshots_expired: report.snapshots_expired,
                    files_deleted: report.files_deleted,
                    bytes_deleted: report.bytes_deleted,
                    files_compacted: report.files_compacted,
                    files_written: report.files_written,
                    over_budget: Some(status.over_budget),
                },
                took,
            );
            log_report(assignment, idle, &request, &report, status, took)
        }
        Ok(None) => {}
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            if ctx.refused_maintenance.first(assignment.table_id, digest) {
                tracing::warn!(table = %assignment.path, plugin = %resolved.plugin.describe(), "the table is tiered, not maintained: {e}");
            }
        }
        Err(e) if e.kind() == ErrorKind::Cancelled => tracing::warn!(
            table = %assignment.path,
            shutting_down = ctx.stopping.is_cancelled(),
            took_ms = started.elapsed().as_millis() as u64,
            "table maintenance stopped (the round is committed; maintenance starts over after a later round): {e}"
        ),
        Err(e) => {
            metrics.maintained(false, MaintenanceCounts::default(), started.elapsed());
            tracing::warn!(
                table = %assignment.path,
                "table maintenance failed (the round is committed; maintenance is tried again after a later round): {e}"
            )
        }
    }
}

fn log_report(
    assignment: &Assignment,
    idle: bool,
    request: &MaintenanceRequest,
    report: &MaintenanceReport,
    status: MaintenanceStatus,
    took: Duration,
) {
    tracing::info!(
        table = %assignment.path,
        idle,
        expire = request.expire_snapshots,
        compact = request.compact,
        keep_since = ?request.keep_since,
        snapshots_expired = report.snapshots_expired,
        files_deleted = report.files_deleted,
        bytes_deleted = report.bytes_deleted,
        files_compacted = report.files_compacted,
        files_written = report.files_written,
        bytes_written = report.bytes_written,
        snapshots_committed = report.committed_snapshots.len(),
        more_to_do = report.more_to_do,
        over_budget = status.over_budget,
        took_ms = took.as_millis() as u64,
        "table maintained"
    );
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn since(id: i64) -> Plan {
        Plan {
            registered: id,
            keep: Keep::Since(id),
        }
    }

    fn commit(
        snapshot_id: i64,
        readable: wit::ReadableSnapshot,
        earliest: Option<i64>,
    ) -> wit::CommitResult {
        wit::CommitResult {
            snapshot_id,
            readable,
            earliest_snapshot_to_keep: earliest,
            stats: wit::TieringStats {
                file_size: None,
                record_count: None,
            },
        }
    }

    #[test]
    fn maintenance_is_asked_for_by_the_host_option_or_the_table() {
        let none = BTreeMap::new();
        assert!(request_for(&none, &props(&[]), since(3), 0).is_none());
        assert!(request_for(&none, &props(&[(TABLE_AUTO_EXPIRE, "false")]), since(3), 0).is_none());

        let r = request_for(
            &none,
            &props(&[(TABLE_AUTO_COMPACTION, "true")]),
            since(3),
            9,
        )
        .unwrap();
        assert!(r.compact && !r.expire_snapshots);
        assert_eq!((r.keep_since, r.deadline_millis), (Some(3), 9));

        let r = request_for(&none, &props(&[(TABLE_AUTO_EXPIRE, " TRUE ")]), since(2), 0).unwrap();
        assert!(r.expire_snapshots && !r.compact);
        assert_eq!(r.keep_since, Some(2));

        let host = BTreeMap::from([(AUTO_EXPIRE_OPTION.to_string(), "true".to_string())]);
        let r = request_for(&host, &props(&[]), since(1), 0).unwrap();
        assert!(r.expire_snapshots && !r.compact);
    }

    /// Item 4: a commit that asks Fluss to keep every previous snapshot (`KEEP_ALL_PREVIOUS`,
    /// or an unknown readable snapshot, which Fluss registers as such) keeps every snapshot
    /// in maintenance too, rather than only the latest.
    #[test]
    fn keep_all_previous_reaches_maintenance_as_keep_all() {
        use wit::ReadableSnapshot::{Committed, Unknown};
        for (result, registered, keep) in [
            (
                commit(7, Committed, Some(fluss_commit::KEEP_ALL_PREVIOUS)),
                Some(-1),
                Keep::All,
            ),
            (commit(7, Unknown, None), Some(-1), Keep::All),
            (commit(7, Committed, None), None, Keep::Since(7)),
            (commit(7, Committed, Some(3)), Some(3), Keep::Since(3)),
            (commit(7, Unknown, Some(3)), Some(3), Keep::Since(3)),
            (commit(7, Committed, Some(0)), Some(0), Keep::Since(0)),
        ] {
            assert_eq!(
                fluss_commit::earliest_snapshot_id_to_keep(&result),
                registered,
                "what Fluss is told to keep for {result:?}"
            );
            assert_eq!(
                Keep::of_commit(&result),
                keep,
                "what maintenance keeps for {result:?}"
            );
        }
        // Below -1 nothing is meaningful (the commit is refused before this); were one to get
        // here, Fluss would keep everything for an id it does not hold, and so does maintenance.
        assert_eq!(Keep::of_registration(Some(-5), 7), Keep::All);
    }

    #[test]
    fn a_table_that_keeps_every_snapshot_is_compacted_but_never_expired() {
        let all = Plan {
            registered: 7,
            keep: Keep::All,
        };
        let host = BTreeMap::from([(AUTO_EXPIRE_OPTION.to_string(), "true".to_string())]);
        let both = props(&[(TABLE_AUTO_EXPIRE, "true"), (TABLE_AUTO_COMPACTION, "true")]);
        let r = request_for(&host, &both, all, 9).expect("compaction is still asked for");
        assert!(
            !r.expire_snapshots,
            "a table whose snapshots Fluss all keeps is not expired: {r:?}"
        );
        assert!(r.compact);
        assert_eq!(r.keep_since, Some(7));
        assert!(
            request_for(&host, &props(&[(TABLE_AUTO_EXPIRE, "true")]), all, 9).is_none(),
            "expiry alone: there is nothing left to ask"
        );
        // The same table keeping since a snapshot is expired as asked.
        let r = request_for(&host, &both, since(7), 9).unwrap();
        assert!(r.expire_snapshots && r.compact);
    }

    /// Item 7: a table whose rounds have nothing to commit is maintained when its maintenance
    /// is due, at most once per idle interval, keeping what Fluss has registered.
    #[test]
    fn an_idle_table_is_maintained_when_due_at_most_once_per_idle_interval() {
        let hour = Duration::from_secs(3600);
        let ledger = MaintenanceLedger::default();
        let t0 = Instant::now();
        let idle = |registered| RoundEnd::Idle {
            registered: Some(registered),
        };

        // Never tiered: there is nothing to maintain.
        assert_eq!(
            ledger.plan(1, RoundEnd::Idle { registered: None }, t0, hour),
            None
        );
        // A commit is always followed by maintenance.
        let committed = RoundEnd::Committed {
            snapshot: 5,
            keep: Keep::Since(5),
        };
        assert_eq!(ledger.plan(1, committed, t0, hour), Some(since(5)));
        ledger.called(1, t0, false);

        // Idle rounds every freshness: not before the interval has passed since the last call,
        // then keeping the snapshot Fluss has registered (and this host committed).
        let minute = Duration::from_secs(60);
        assert_eq!(ledger.plan(1, idle(5), t0 + minute, hour), None);
        assert_eq!(ledger.plan(1, idle(5), t0 + 59 * minute, hour), None);
        let t1 = t0 + hour;
        assert_eq!(
            ledger.plan(1, idle(5), t1, hour),
            Some(since(5)),
            "an idle table whose maintenance is due is maintained"
        );
        let r = request_for(
            &BTreeMap::new(),
            &props(&[(TABLE_AUTO_EXPIRE, "true")]),
            since(5),
            0,
        )
        .unwrap();
        assert_eq!((r.expire_snapshots, r.keep_since), (true, Some(5)));

        // A call that left work is followed by another at the next round.
        ledger.called(1, t1, true);
        assert_eq!(ledger.plan(1, idle(5), t1 + minute, hour), Some(since(5)));
        ledger.called(1, t1 + minute, false);
        assert_eq!(ledger.plan(1, idle(5), t1 + 2 * minute, hour), None);

        // Another host committed since: what Fluss keeps is unknown, nothing is expired.
        let later = t1 + 3 * hour;
        assert_eq!(
            ledger.plan(1, idle(6), later, hour),
            Some(Plan {
                registered: 6,
                keep: Keep::All
            })
        );

        // A commit that kept every snapshot is kept to by the idle rounds after it.
        let keep_all = RoundEnd::Committed {
            snapshot: 8,
            keep: Keep::All,
        };
        assert!(ledger.plan(1, keep_all, later, hour).is_some());
        ledger.called(1, later, false);
        assert_eq!(
            ledger.plan(1, idle(8), later + hour, hour),
            Some(Plan {
                registered: 8,
                keep: Keep::All
            })
        );

        // A host that just started has never maintained the table: due at once, but it
        // cannot tell what Fluss keeps.
        let fresh = MaintenanceLedger::default();
        assert_eq!(
            fresh.plan(1, idle(5), t0, hour),
            Some(Plan {
                registered: 5,
                keep: Keep::All
            })
        );
        // Another table has its own schedule.
        assert_eq!(
            ledger.plan(2, idle(5), t0, hour),
            fresh.plan(2, idle(5), t0, hour)
        );
    }

    /// Item 7: a maintenance call in progress ends as soon as the host begins to shut down
    /// (or its round is cancelled), not when its budget runs out.
    #[tokio::test]
    async fn shutdown_stops_a_maintenance_call_in_progress() {
        for host_stops in [true, false] {
            let (stop, round, host) = (
                CancellationToken::new(),
                CancellationToken::new(),
                CancellationToken::new(),
            );
            // A plugin call that runs until its instance's token is cancelled.
            let call = async {
                stop.cancelled().await;
                "interrupted"
            };
            let trigger = if host_stops {
                host.clone()
            } else {
                round.clone()
            };
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                trigger.cancel();
            });
            let ended = tokio::time::timeout(
                Duration::from_secs(5),
                until_stopped(call, &stop, &round, &host),
            )
            .await;
            assert_eq!(
                ended,
                Ok("interrupted"),
                "the maintenance call went on after the {} was cancelled",
                if host_stops { "host" } else { "round" }
            );
        }
        // A call that ends by itself is not interrupted.
        let (stop, round, host) = (
            CancellationToken::new(),
            CancellationToken::new(),
            CancellationToken::new(),
        );
        assert_eq!(until_stopped(async { 3 }, &stop, &round, &host).await, 3);
        assert!(!stop.is_cancelled());
    }

    #[test]
    fn a_refusal_is_reported_once_per_table_and_plugin() {
        let refused = RefusedMaintenance::default();
        assert!(refused.first(1, "abc"));
        assert!(!refused.first(1, "abc"));
        assert!(refused.first(2, "abc"));
        assert!(refused.first(1, "def"));
    }
}
