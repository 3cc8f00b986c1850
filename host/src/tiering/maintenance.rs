//! Table maintenance after a committed round, through the plugin's optional `maintenance`
//! export (contract 0.3.1): snapshot expiry when `--lake.tiering.auto-expire-snapshot true`
//! or the table's `table.datalake.auto-expire-snapshot` is set, compaction when the table's
//! `table.datalake.auto-compaction` is (the options Flink's tiering honours).
//!
//! It runs in the instance that committed the round, after Fluss registered the round's
//! snapshot, so nothing here can undo the round: the lake snapshot is published, the offsets
//! are registered, and a failed, interrupted or refused maintenance is logged and tried again
//! after the next round. The plugin is told the oldest snapshot Fluss still needs and keeps it
//! and everything after it; it gets the table's freshness (at most the plugin call timeout)
//! as its budget, aims to finish within three quarters of it and is interrupted at the end.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use super::context::{Assignment, ResolvedTable, TieringContext};
use crate::error::ErrorKind;
use crate::fluss::table;
use crate::metrics::TableMetrics;
use crate::metrics::registry::MaintenanceCounts;
use crate::plugin::{MaintenanceReport, MaintenanceRequest, PluginInstance};

/// The host option that turns snapshot expiry on for every table (Fluss's name).
pub const AUTO_EXPIRE_OPTION: &str = "lake.tiering.auto-expire-snapshot";
/// The table property that turns snapshot expiry on for one table.
pub const TABLE_AUTO_EXPIRE: &str = "table.datalake.auto-expire-snapshot";
/// The table property that turns compaction on for one table.
pub const TABLE_AUTO_COMPACTION: &str = "table.datalake.auto-compaction";

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

fn is_true(v: Option<&String>) -> bool {
    v.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// What the table asks for (none: no maintenance), with the oldest snapshot Fluss still needs
/// and the plugin's deadline.
pub fn request_for(
    tiering_options: &std::collections::BTreeMap<String, String>,
    table_properties: &std::collections::HashMap<String, String>,
    keep_since: Option<i64>,
    deadline_millis: i64,
) -> Option<MaintenanceRequest> {
    let expire_snapshots = is_true(tiering_options.get(AUTO_EXPIRE_OPTION))
        || is_true(table_properties.get(TABLE_AUTO_EXPIRE));
    let compact = is_true(table_properties.get(TABLE_AUTO_COMPACTION));
    (expire_snapshots || compact).then_some(MaintenanceRequest {
        expire_snapshots,
        compact,
        keep_since,
        deadline_millis,
    })
}

/// How long a maintenance call may take: the table's freshness, at most the plugin call
/// timeout.
fn budget(ctx: &TieringContext, resolved: &ResolvedTable) -> Duration {
    table::freshness(&resolved.info).min(ctx.config.plugin_call_timeout)
}

/// Maintains the table after a round that committed lake snapshot `keep_since` (or an older
/// one Fluss keeps); never fails the round.
pub async fn maintain_table(
    ctx: &TieringContext,
    assignment: &Assignment,
    resolved: &ResolvedTable,
    instance: &mut PluginInstance,
    keep_since: Option<i64>,
    metrics: &TableMetrics,
) {
    let budget = budget(ctx, resolved);
    let aim = budget.mul_f64(0.75);
    let Some(request) = request_for(
        &ctx.config.tiering_options,
        resolved.info.get_properties(),
        keep_since,
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
    let context = resolved.committer_context(ctx);
    let started = std::time::Instant::now();
    match instance.maintain(&context, request, budget).await {
        Ok(Some(report)) => {
            let took = started.elapsed();
            metrics.maintained(
                true,
                MaintenanceCounts {
                    snapshots_expired: report.snapshots_expired,
                    files_deleted: report.files_deleted,
                    bytes_deleted: report.bytes_deleted,
                    files_compacted: report.files_compacted,
                    files_written: report.files_written,
                },
                took,
            );
            log_report(assignment, &request, &report, took)
        }
        Ok(None) => {}
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            if ctx.refused_maintenance.first(assignment.table_id, digest) {
                tracing::warn!(table = %assignment.path, plugin = %resolved.plugin.describe(), "the table is tiered, not maintained: {e}");
            }
        }
        Err(e) => {
            metrics.maintained(false, MaintenanceCounts::default(), started.elapsed());
            tracing::warn!(
                table = %assignment.path,
                "table maintenance failed (the round is committed; maintenance is tried again after the next round): {e}"
            )
        }
    }
}

fn log_report(
    assignment: &Assignment,
    request: &MaintenanceRequest,
    report: &MaintenanceReport,
    took: Duration,
) {
    tracing::info!(
        table = %assignment.path,
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
        took_ms = took.as_millis() as u64,
        "table maintained"
    );
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;

    #[test]
    fn maintenance_is_asked_for_by_the_host_option_or_the_table() {
        let none = BTreeMap::new();
        let props = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(request_for(&none, &props(&[]), Some(3), 0).is_none());
        assert!(request_for(&none, &props(&[(TABLE_AUTO_EXPIRE, "false")]), None, 0).is_none());

        let r = request_for(
            &none,
            &props(&[(TABLE_AUTO_COMPACTION, "true")]),
            Some(3),
            9,
        )
        .unwrap();
        assert!(r.compact && !r.expire_snapshots);
        assert_eq!((r.keep_since, r.deadline_millis), (Some(3), 9));

        let r = request_for(&none, &props(&[(TABLE_AUTO_EXPIRE, " TRUE ")]), None, 0).unwrap();
        assert!(r.expire_snapshots && !r.compact);

        let host = BTreeMap::from([(AUTO_EXPIRE_OPTION.to_string(), "true".to_string())]);
        let r = request_for(&host, &props(&[]), Some(1), 0).unwrap();
        assert!(r.expire_snapshots && !r.compact);
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
