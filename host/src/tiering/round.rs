//! One table's round: resolve the plugin, validate, generate splits, read every split
//! through a writer of the plugin, then hand the write results to the commit pipeline.
//!
//! Each split gets its own plugin instance (instances are single-threaded) and its own
//! reader task, connected by a small bounded channel: reading the next batch overlaps with
//! the plugin writing the previous one, and a slow plugin back-pressures the reader, so
//! memory stays bounded by `max-concurrent-splits × (channel depth + 1) × batch size` plus
//! the plugins' own buffers (capped by `--plugin-memory-limit`).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use fluss::metadata::TablePath;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::commit::{self, RoundWrites};
use super::context::{
    Assignment, CommitLock, ResolvedTable, RoundOutcome, SplitResult, TieringContext,
};
use super::maintenance::{self, RoundEnd};
use super::progress::RoundProgress;
use super::row_batches::{BatchForm, Payload};
use super::{fluss_commit, row_batches, splits};
use crate::catalog::{CatalogOptions, GlueCatalog, HiveCatalog, LakeCatalog, PointerTable};
use crate::config::DataPlane;
use crate::error::{Error, ErrorKind, Result};
use crate::failpoints;
use crate::fluss::offsets::{self, BucketsOf, LogEnd};
use crate::fluss::{kv_snapshot, reader, table};
use crate::metrics::registry::{CommittedRound, short_digest};
use crate::metrics::{TableLabels, TableMetrics, metrics};
use crate::plugin::instance::{BatchWriterHandle, WriterHandle};
use crate::plugin::storage::{ScopedStorage, StorageQuota};
use crate::plugin::table_catalog::{
    PointerScope, Resolved, RestScope, TableCatalogScope, VersionScope,
};
use crate::plugin::{PluginInstance, wit};
use crate::tiering::routing;
use crate::time::now_millis;
use crate::warehouse;

/// Batches buffered between a bucket's reader and its writer.
const CHANNEL_DEPTH: usize = 2;

/// One round, in a span naming it (round id, table, plugin) so every log line of the round
/// says which it belongs to, counted in the table's metrics however it ends.
pub async fn run_round(
    ctx: Arc<TieringContext>,
    assignment: Assignment,
    cancel: CancellationToken,
) -> Result<RoundOutcome> {
    let span = tracing::info_span!(
        "round",
        round = %round_id(&assignment),
        table = %assignment.path,
        plugin = tracing::field::Empty,
    );
    let started = Instant::now();
    let table_metrics = OnceLock::new();
    let fluss = ctx.fluss.clone();
    let outcome = tier(ctx, &assignment, cancel, started, &table_metrics)
        .instrument(span)
        .await;
    // However it ended: the Fluss client's cache then holds the tables in flight only, not
    // every table ever tiered (`FlussClient::forget_table`).
    fluss.forget_table(&assignment.path);
    let reason = outcome.as_ref().err().map(|e| e.kind());
    match (table_metrics.get(), &outcome) {
        (Some(m), Ok(o)) => {
            if o.snapshot_id.is_none() {
                m.round_empty();
            }
            m.round_duration(started.elapsed());
        }
        (Some(m), Err(e)) => {
            m.round_failed(e.kind().as_label());
            m.round_duration(started.elapsed());
        }
        (None, Err(e)) => metrics().round_failed_unrouted(
            assignment.path.database(),
            assignment.path.table(),
            e.kind().as_label(),
        ),
        (None, Ok(_)) => {}
    }
    // A dropped or re-created table is no longer this host's: its gauges must not go on aging.
    if reason == Some(ErrorKind::Fenced) {
        metrics().forget_table(assignment.path.database(), assignment.path.table());
    }
    outcome
}

/// `<table id>.<coordinator epoch>.<tiering epoch>`: names one round in logs, and the
/// coordinator's own view of it.
pub fn round_id(a: &Assignment) -> String {
    format!("{}.{}.{}", a.table_id, a.coordinator_epoch, a.tiering_epoch)
}

/// `format@<first 12 hex digits of its SHA-256>`: the plugin in the spans of a round.
fn plugin_label(resolved: &ResolvedTable) -> String {
    format!(
        "{}@{}",
        resolved.plugin.format(),
        short_digest(resolved.plugin.digest())
    )
}

async fn tier(
    ctx: Arc<TieringContext>,
    assignment: &Assignment,
    cancel: CancellationToken,
    started: Instant,
    table_metrics: &OnceLock<TableMetrics>,
) -> Result<RoundOutcome> {
    let (resolved, mut control) = resolve_table(&ctx, assignment).await?;
    tracing::Span::current().record("plugin", plugin_label(&resolved).as_str());
    let m = table_metrics.get_or_init(|| {
        metrics().table(TableLabels {
            database: assignment.path.database().to_string(),
            table: assignment.path.table().to_string(),
            format: resolved.route.format.clone(),
            plugin_digest: short_digest(resolved.plugin.digest()),
        })
    });
    m.round_started();
    m.freshness_target(table::freshness(&resolved.info));
    control
        .validate_table(&resolved.wit_info, &resolved.plugin_config)
        .await?;

    let (planned_snapshot, plan) = plan_splits(&ctx, assignment, &resolved.info).await?;
    let plan = refuse_rebuilds_the_plugin_cannot_commit(&ctx, &resolved, &mut control, plan).await;
    // Host-wide, not per table: a thousand tables add observations, not series.
    metrics().round_planned(started.elapsed());
    for refused in &plan.refused {
        if refused.kind() == ErrorKind::LogGap {
            tracing::error!(table = %assignment.path, "bucket not tiered: {refused}");
        } else {
            tracing::warn!(table = %assignment.path, "bucket not tiered: {refused}");
        }
    }
    m.log_gap(
        plan.gaps
            .iter()
            .filter(|g| !g.accepted)
            .map(|g| g.records())
            .sum(),
    );
    let accepted_gaps: Vec<splits::LogGap> = plan.gaps.into_iter().filter(|g| g.accepted).collect();
    let ranges = plan.splits;
    let to_do: u64 = ranges.iter().map(records_to_do).sum();
    m.lag(to_do);
    if ranges.is_empty() {
        if let Some(refused) = plan.refused.into_iter().next() {
            return Err(refused);
        }
        tracing::info!(table = %assignment.path, "nothing new to tier");
        // The coordinator still hands an idle table over every freshness: its maintenance
        // may be due all the same (snapshots age past retention without new data).
        let idle = RoundEnd::Idle {
            registered: planned_snapshot,
        };
        maintenance::maintain_table(&ctx, assignment, &resolved, &mut control, idle, &cancel, m)
            .await;
        return Ok(RoundOutcome::default());
    }
    tracing::info!(table = %assignment.path, splits = ranges.len(), records_to_do = to_do, "tiering round started");
    let progress = RoundProgress::new(to_do);
    let progress_task = ctx
        .config
        .log_progress_interval
        .map(|every| AbortOnDrop(progress.report_every(every).abort_handle()));

    // Flink bounds a round by the table's freshness: past it, the splits stop where they
    // are and what was written is committed, so a huge backlog still shows up in the lake.
    let max_duration = table::freshness(&resolved.info);
    let force_finish = CancellationToken::new();
    let timer = {
        let force_finish = force_finish.clone();
        tokio::spawn(async move {
            tokio::time::sleep(max_duration).await;
            force_finish.cancel();
        })
    };
    let round_ts = now_millis();
    let resolved = Arc::new(resolved);
    let results = write_splits(
        &ctx,
        assignment,
        &resolved,
        ranges,
        round_ts,
        &cancel,
        &force_finish,
        SplitObservers {
            metrics: m,
            progress: &progress,
        },
    )
    .await;
    timer.abort();
    drop(progress_task);
    if let Some(at) = resolved.storage.quota().first_write() {
        metrics().round_first_write(at.saturating_duration_since(started));
    }
    let results = match results {
        Ok(r) => r,
        Err((e, written)) => {
            commit::abort_written(&mut control, &resolved, written).await;
            if e.kind() == ErrorKind::LogGap {
                // The next round asks for the log starts and names the lost range.
                ctx.log_gaps.suspect(assignment.table_id);
            }
            return Err(e);
        }
    };
    if cancel.is_cancelled() {
        commit::abort_written(&mut control, &resolved, results).await;
        return Err(Error::new(
            ErrorKind::Cancelled,
            "round cancelled before commit",
        ));
    }
    let forced = force_finish.is_cancelled()
        && results
            .iter()
            .any(|r| r.end_offset.is_none_or(|end| end < r.range.stop));
    if forced {
        tracing::warn!(table = %assignment.path, ?max_duration, "round reached the table's freshness; committing what was written");
    }
    let written = CommittedRound {
        records: results.iter().map(|r| r.rows).sum(),
        bytes: results.iter().map(|r| r.write_result.file_bytes).sum(),
        newest_record_ms: results.iter().filter_map(|r| r.max_timestamp).max(),
        ..CommittedRound::default()
    };
    let lag_after: u64 = results
        .iter()
        .map(|r| match r.end_offset {
            Some(end) => u64::try_from(r.range.stop - end).unwrap_or(0),
            None => records_to_do(&r.range),
        })
        .sum();
    // Only the gaps of buckets this round moves past are the lake snapshot's to record: those
    // skipped in `fluss-log-gap`, those rebuilt by the commit in `fluss-replaced-buckets`.
    let skipped_gaps: Vec<splits::LogGap> = accepted_gaps
        .into_iter()
        .filter(|g| {
            results.iter().any(|r| {
                r.end_offset.is_some()
                    && !r.range.replace
                    && r.range.bucket == g.bucket
                    && r.range.partition_name == g.partition
            })
        })
        .collect();
    let rebuilt = results
        .iter()
        .filter(|r| r.range.replace && r.end_offset.is_some())
        .count();
    let skipped: u64 = skipped_gaps.iter().map(|g| g.records()).sum();
    let writes = RoundWrites {
        results,
        planned_snapshot,
        skipped_gaps,
    };
    let commit_started = Instant::now();
    let mut outcome =
        commit::commit_round(&ctx, assignment, &resolved, &mut control, writes, &cancel).await?;
    outcome.force_finished = forced;
    if outcome.snapshot_id.is_some() {
        if skipped > 0 {
            tracing::warn!(table = %assignment.path, records = skipped, "tiered past log gaps the table accepts; the lake snapshot records them in fluss-log-gap");
            m.log_gap_skipped(skipped);
        }
        if rebuilt > 0 {
            tracing::warn!(table = %assignment.path, buckets = rebuilt, "rebuilt primary-key buckets whose log lost rows from their KV snapshots; the lake snapshot records them in fluss-replaced-buckets");
            m.buckets_rebuilt(rebuilt as u64);
        }
        m.committed(&CommittedRound {
            commit_duration: commit_started.elapsed(),
            files: resolved.storage.quota().objects_written(),
            lake_size_bytes: outcome.stats.as_ref().and_then(|s| s.file_size),
            lake_records: outcome.stats.as_ref().and_then(|s| s.record_count),
            ..written
        });
        m.lag(lag_after);
        if forced {
            m.round_force_finished("freshness");
        }
    }
    let end = match (outcome.snapshot_id, outcome.keep) {
        (Some(snapshot), Some(keep)) => RoundEnd::Committed { snapshot, keep },
        // Every split stopped before writing anything: nothing was committed.
        _ => RoundEnd::Idle {
            registered: planned_snapshot,
        },
    };
    maintenance::maintain_table(&ctx, assignment, &resolved, &mut control, end, &cancel, m).await;
    Ok(outcome)
}

/// Records a split range holds (a log table's first round starts at offset 0).
fn records_to_do(range: &reader::BucketRange) -> u64 {
    u64::try_from(range.stop - range.start.max(0)).unwrap_or(0)
}

/// What watches the splits as they go: the table's metrics and the round's progress.
#[derive(Clone, Copy)]
struct SplitObservers<'a> {
    metrics: &'a TableMetrics,
    progress: &'a Arc<RoundProgress>,
}

/// Refuses the splits that would rebuild a primary-key bucket from its KV snapshot (after a
/// log gap) when the table's plugin cannot replace a bucket: asked before any snapshot is
/// read, so that nothing is read only to be thrown away. The gaps stay refused, named with
/// the plugin's reason.
async fn refuse_rebuilds_the_plugin_cannot_commit(
    ctx: &TieringContext,
    resolved: &ResolvedTable,
    control: &mut PluginInstance,
    mut plan: splits::Plan,
) -> splits::Plan {
    if !plan.splits.iter().any(|r| r.replace) {
        return plan;
    }
    let Err(why) = control
        .check_replace(&resolved.committer_context(ctx))
        .await
    else {
        return plan;
    };
    let (rebuilds, splits): (Vec<_>, Vec<_>) = plan.splits.into_iter().partition(|r| r.replace);
    plan.splits = splits;
    for r in rebuilds {
        if let Some(gap) = plan
            .gaps
            .iter_mut()
            .find(|g| g.bucket == r.bucket && g.partition == r.partition_name)
        {
            gap.accepted = false;
            plan.refused.push(gap.refusal(&format!(
                "it cannot be rebuilt from its KV snapshot: {}",
                why.message()
            )));
        }
    }
    plan
}

/// The splits of this round: every bucket of every partition with something to tier, with
/// the lake snapshot Fluss held when they were planned (the commit checks it still does).
async fn plan_splits(
    ctx: &TieringContext,
    assignment: &Assignment,
    info: &fluss::metadata::TableInfo,
) -> Result<(Option<i64>, splits::Plan)> {
    let path = &assignment.path;
    let admin = ctx.fluss.admin();
    let tiered = offsets::latest_tiered_offsets(&admin, path).await?;
    let table_buckets = info.get_num_buckets();
    // Every partition with its own bucket count (Fluss 1.0 keeps a partition's count when
    // the table's `bucket.num` changes later), as Java's `TieringSplitGenerator` plans them.
    let partitions: Vec<(Option<(i64, String)>, i32)> = if info.is_partitioned() {
        offsets::partitions(&admin, path)
            .await?
            .into_iter()
            .map(|p| (Some((p.id, p.name)), p.buckets.unwrap_or(table_buckets)))
            .collect()
    } else {
        vec![(None, table_buckets)]
    };
    let kind = splits::TableKind::of(info, ctx.config.on_log_gap)?;
    // A log table with fewer buckets than the writers its round may use has its largest
    // buckets cut into pieces, which needs their log starts.
    let writers = ctx
        .config
        .max_concurrent_writers
        .min(ctx.config.max_concurrent_splits);
    let bucket_count: usize = partitions.iter().map(|(_, b)| *b as usize).sum();
    let cut = !kind.primary_key && bucket_count < writers;
    let with_log_start = kind.primary_key || cut || ctx.log_gaps.is_suspect(assignment.table_id);
    let named: Vec<(&str, i32)> = partitions
        .iter()
        .filter_map(|(p, buckets)| p.as_ref().map(|(_, name)| (name.as_str(), *buckets)))
        .collect();
    let of = if info.is_partitioned() {
        BucketsOf::Partitions(&named)
    } else {
        BucketsOf::Table(table_buckets)
    };
    let latest = offsets::bucket_offsets(&admin, path, of, LogEnd::Latest).await?;
    let mut earliest = if with_log_start {
        Some(offsets::bucket_offsets(&admin, path, of, LogEnd::Earliest).await?)
    } else {
        None
    }
    .map(Vec::into_iter);
    let mut inputs = Vec::with_capacity(partitions.len());
    for ((partition, buckets), latest) in partitions.into_iter().zip(latest) {
        let name = partition.as_ref().map(|(_, n)| n.as_str());
        let earliest = earliest.as_mut().and_then(Iterator::next);
        // Only primary-key buckets never tiered, or whose log starts past the lake's offset,
        // start from a snapshot: ask only when there are some.
        let pid = partition.as_ref().map(|(id, _)| *id);
        let from_snapshot = |b: i32| match tiered.buckets.get(&(pid, b)) {
            None => true,
            Some(lake) => earliest
                .as_ref()
                .and_then(|e| e.get(&b))
                .is_some_and(|start| start > lake),
        };
        let kv_snapshots = if kind.primary_key && (0..buckets).any(from_snapshot) {
            Some(kv_snapshot::latest(&admin, path, name).await?)
        } else {
            None
        };
        inputs.push(splits::PartitionOffsets {
            partition,
            buckets,
            latest,
            earliest,
            kv_snapshots,
        });
    }
    let mut plan = splits::plan(&tiered, &inputs, kind);
    if cut {
        let log_start = |r: &reader::BucketRange| {
            inputs
                .iter()
                .find(|p| p.partition.as_ref().map(|(id, _)| *id) == r.partition_id)
                .and_then(|p| p.earliest.as_ref())
                .and_then(|e| e.get(&r.bucket).copied())
        };
        plan.splits = splits::cut_into_pieces(plan.splits, log_start, writers);
    }
    if plan.gaps.is_empty() {
        ctx.log_gaps.clear(assignment.table_id);
    } else {
        ctx.log_gaps.suspect(assignment.table_id);
    }
    Ok((tiered.snapshot_id, plan))
}

/// Looks the table up, checks it is still the table that was assigned, routes it to a
/// plugin and scopes a control instance of it to the table's lake location. A table routed
/// to a format Fluss does not know gets its lake table created here, since the coordinator
/// only creates lake tables of its own format.
pub async fn resolve_table(
    ctx: &TieringContext,
    assignment: &Assignment,
) -> Result<(ResolvedTable, PluginInstance)> {
    let info = fluss_commit::current_table_info(ctx, assignment).await?;
    let route = routing::route(
        &assignment.path,
        table::lake_format(&info).as_deref(),
        info.get_custom_properties(),
        &ctx.config.routes,
        ctx.config.required_format.as_deref(),
    )?;
    let format = route.format.clone();
    let plugins = ctx.plugins.current();
    let plugin = plugins.get(&format).ok_or_else(|| {
        Error::new(
            ErrorKind::NoPlugin,
            format!(
                "{} is routed to lake format '{format}' ({:?}) but no loaded plugin serves it (loaded: {})",
                assignment.path,
                route.source,
                plugins.formats().join(", ")
            ),
        )
    })?;
    // The catalog's options (endpoint, credentials) are the host's, like the storage options
    // (credentials, endpoint, …) that open the warehouse: the plugin sees neither.
    let lake_options = table::plugin_config(&info, &format, &ctx.config.lake_options_for(&format));
    let catalog_options = LakeCatalog::for_format(&format, &lake_options)
        .map_err(|e| Error::new(e.kind(), format!("{}: {}", assignment.path, e.message())))?;
    if let Some(LakeCatalog::Glue(_)) = &catalog_options {
        // Which Glue catalog, where and as whom is the host's to say, not a table's.
        crate::catalog::glue::check_connection_is_hosts(
            &lake_options,
            &ctx.config.lake_options_for(&format),
        )
        .map_err(|e| Error::new(e.kind(), format!("{}: {}", assignment.path, e.message())))?;
    }
    let (plugin_config, storage_options) = warehouse::options::split(
        lake_options
            .into_iter()
            .filter(|(k, _)| !CatalogOptions::is_catalog_key(k))
            .collect(),
    );
    // The storage options' keys only: their Debug never shows a value.
    tracing::info!(table = %assignment.path, plugin = %plugin.describe(), route = ?route.source, storage_options = ?storage_options, catalog = ?catalog_options.as_ref().map(LakeCatalog::endpoint), "table routed");
    let wit_info = table::to_wit(&info, &format);
    let warehouse = plugin_config
        .iter()
        .find(|(k, _)| k == "warehouse")
        .map(|(_, v)| v.clone())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "{}: no 'warehouse' for format {format}: give the host --datalake.{format}.warehouse \
                     (Fluss adds table.datalake.<format>.* options only for the cluster's current datalake.format)",
                    assignment.path
                ),
            )
        })?;
    routing::check_warehouse(
        &warehouse,
        &format,
        &ctx.config.lake_options,
        &ctx.cluster.warehouses,
    )
    .map_err(|e| Error::new(e.kind(), format!("{}: {}", assignment.path, e.message())))?;
    let mut control = PluginInstance::new(&plugin, format!("{format} {}", assignment.path)).await?;
    let quota = || {
        StorageQuota::new(
            ctx.config.plugin_round_write_limit,
            ctx.config.plugin_round_object_limit,
        )
    };
    let mut commit_lock = None;
    let (storage, catalog) = match catalog_options {
        None => {
            // The host composes the location from the plugin's declared layout: the plugin
            // never names it.
            let location = plugin
                .layout()
                .location(assignment.path.database(), assignment.path.table())?;
            // One quota for every instance of the round.
            let storage = ctx
                .warehouses
                .get(&warehouse, &storage_options)
                .await
                .map_err(|e| Error::new(e.kind(), format!("{}: {}", assignment.path, e.message())))?
                .scope(&location)?
                .with_quota(quota());
            (storage, TableCatalogScope::Files)
        }
        Some(LakeCatalog::Glue(options)) => {
            let table = GlueCatalog::shared(&options, ctx.config.rpc_timeout)
                .map_err(|e| in_table(assignment, e))?
                .table(assignment.path.database(), assignment.path.table());
            pointer_table_scope(ctx, assignment, table, &storage_options, quota()).await?
        }
        Some(LakeCatalog::Hive(options)) => {
            let table = hive_metastore(ctx, assignment, &format, &options)?
                .table(assignment.path.database(), assignment.path.table());
            pointer_table_scope(ctx, assignment, table, &storage_options, quota()).await?
        }
        Some(LakeCatalog::PaimonHive(options)) => {
            let metastore = hive_metastore(ctx, assignment, &format, &options)?;
            // The metastore registers the table and says where it is; its commits are the
            // table's files, as in a filesystem catalog.
            let registration = metastore
                .paimon_table(assignment.path.database(), assignment.path.table())
                .await
                .map_err(|e| in_table(assignment, e))?
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::NotFound,
                        format!(
                            "{}: the Hive Metastore {} has no table {} (the Fluss coordinator creates it when the table is created with table.datalake.enabled)",
                            assignment.path, options.uri, assignment.path
                        ),
                    )
                })?;
            // Paimon's `lock.enabled` (on by default on object stores, as Paimon's
            // `FileIO.isObjectStore`): its writers then take the metastore's table lock around
            // each commit and write the snapshot file under it without a condition, so the
            // host's commits take it too.
            let object_store = !registration.location.starts_with("file:")
                && !registration.location.starts_with('/')
                && !registration.location.starts_with("hdfs:")
                && !registration.location.starts_with("viewfs:");
            if options.lock_enabled.unwrap_or(object_store) {
                commit_lock = Some(CommitLock {
                    metastore: metastore.clone(),
                    database: assignment.path.database().to_string(),
                    table: assignment.path.table().to_string(),
                });
            }
            let (parent, name) = table_location_parts(&registration.location)
                .map_err(|e| in_table(assignment, e))?;
            let storage = ctx
                .warehouses
                .get(&parent, &storage_options)
                .await
                .map_err(|e| in_table(assignment, e))?
                .scope(&name)?
                .with_quota(quota());
            (storage, TableCatalogScope::Files)
        }
        Some(LakeCatalog::PaimonRest(options)) => {
            if !plugin.implements_contract("0.3.6") {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{}: the table is kept by Paimon's REST catalog {}, which plugin {} (contract {}) cannot commit to: it needs contract 0.3.6's version-catalog import (rebuild it on the current SDK)",
                        assignment.path,
                        options.uri,
                        plugin.describe(),
                        plugin.contract_version()
                    ),
                ));
            }
            routing::check_catalog_uri(
                &options.uri,
                &format,
                &ctx.config.lake_options,
                &ctx.cluster.catalog_uris,
            )
            .map_err(|e| in_table(assignment, e))?;
            let catalog = ctx
                .catalogs
                .paimon(&options, ctx.config.rpc_timeout)
                .await
                .map_err(|e| in_table(assignment, e))?;
            let table = catalog.table(assignment.path.database(), assignment.path.table());
            // The catalog says where the table is and which table it is; the coordinator
            // creates it (the host never writes a table the catalog does not know).
            let loaded = table
                .load()
                .await
                .map_err(|e| in_table(assignment, e))?
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::NotFound,
                        format!(
                            "{}: the Paimon REST catalog {} has no table {} (the Fluss coordinator creates it when the table is created with table.datalake.enabled)",
                            assignment.path, options.uri, assignment.path
                        ),
                    )
                })?;
            let (parent, name) =
                table_location_parts(&loaded.path).map_err(|e| in_table(assignment, e))?;
            let storage = ctx
                .warehouses
                .get(&parent, &storage_options)
                .await
                .map_err(|e| in_table(assignment, e))?
                .scope(&name)?
                .with_quota(quota());
            let scope = TableCatalogScope::Versions(VersionScope {
                table: Arc::new(table),
                table_id: loaded.id,
            });
            (storage, scope)
        }
        Some(LakeCatalog::Rest(options)) => {
            routing::check_catalog_uri(
                &options.uri,
                &format,
                &ctx.config.lake_options,
                &ctx.cluster.catalog_uris,
            )
            .map_err(|e| Error::new(e.kind(), format!("{}: {}", assignment.path, e.message())))?;
            let in_catalog =
                |e: Error| Error::new(e.kind(), format!("{}: {}", assignment.path, e.message()));
            let catalog = ctx
                .catalogs
                .get(&options, ctx.config.rpc_timeout)
                .await
                .map_err(in_catalog)?;
            let table =
                Arc::new(catalog.table(assignment.path.database(), assignment.path.table()));
            let mut loaded = table.load().await.map_err(in_catalog)?;
            if loaded.is_none() && route.is_override() {
                // The plugin creates the lake table through the catalog, which picks its
                // location; the round then goes on with it as with any other.
                control.set_catalog(TableCatalogScope::Rest(RestScope {
                    table: table.clone(),
                    resolved: None,
                }));
                if control
                    .create_table_if_missing(&wit_info, &plugin_config)
                    .await?
                {
                    tracing::info!(table = %assignment.path, format, catalog = %options.uri, "created the lake table in the catalog");
                }
                loaded = table.load().await.map_err(in_catalog)?;
            }
            let loaded = loaded.ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "{}: the catalog {} has no table {} (the Fluss coordinator creates it when the table is created with table.datalake.enabled)",
                        assignment.path, options.uri, assignment.path
                    ),
                )
            })?;
            // The catalog, which the cluster's configuration names, says where the table is:
            // the plugin's storage is confined to exactly that location.
            let (parent, name) = table_location_parts(&loaded.location).map_err(|e| {
                Error::new(e.kind(), format!("{}: {}", assignment.path, e.message()))
            })?;
            let (_, vended) = warehouse::options::split(loaded.config.clone());
            let storage = if vended.is_empty() {
                ctx.warehouses
                    .get(&parent, &storage_options)
                    .await
                    .map_err(|e| in_table(assignment, e))?
                    .scope(&name)?
            } else {
                // Storage settings the catalog vends for this table (credentials scoped to its
                // location, short-lived) win over the host's: the table's location is opened
                // with them for this round, and checked there. Keys only in the log.
                tracing::info!(table = %assignment.path, vended = ?vended, "the catalog vends the table's storage settings");
                let options = warehouse::options::with_vended(&storage_options, &vended);
                ctx.warehouses
                    .open_for_round(&loaded.location, &options)
                    .await
                    .map_err(|e| in_table(assignment, e))?
                    .whole()
            }
            .with_quota(quota());
            let scope = TableCatalogScope::Rest(RestScope {
                table,
                resolved: Some(Resolved {
                    location: loaded.location.clone(),
                    uuid: loaded.uuid.clone(),
                }),
            });
            (storage, scope)
        }
    };
    let claim = ctx
        .locations
        .claim(storage.display_root(), assignment.table_id)?;
    control.set_storage(storage.clone());
    control.set_catalog(catalog.clone());
    if matches!(catalog, TableCatalogScope::Files)
        && route.is_override()
        && control
            .create_table_if_missing(&wit_info, &plugin_config)
            .await?
    {
        tracing::info!(table = %assignment.path, format, location = storage.display_root(), "created the lake table");
    }
    Ok((
        ResolvedTable {
            info,
            wit_info,
            plugin,
            plugin_config,
            storage,
            catalog,
            route,
            commit_lock,
            _location: claim,
        },
        control,
    ))
}

/// Writes every split, at most `max-concurrent-splits` at a time. On failure, returns the
/// error with the results of the splits that did complete, so their files can be aborted.
#[allow(clippy::too_many_arguments)]
async fn write_splits(
    ctx: &Arc<TieringContext>,
    assignment: &Assignment,
    resolved: &Arc<ResolvedTable>,
    ranges: Vec<reader::BucketRange>,
    round_ts: i64,
    cancel: &CancellationToken,
    force_finish: &CancellationToken,
    observers: SplitObservers<'_>,
) -> std::result::Result<Vec<SplitResult>, (Error, Vec<SplitResult>)> {
    let round = tracing::Span::current();
    let (round_name, span_plugin) = (round_id(assignment), plugin_label(resolved));
    let permits = Arc::new(Semaphore::new(ctx.config.max_concurrent_splits));
    let instances = Arc::new(IdleInstances::default());
    let mut tasks = JoinSet::new();
    for (index, range) in ranges.into_iter().enumerate() {
        let ctx = ctx.clone();
        let resolved = resolved.clone();
        let path = assignment.path.clone();
        let permits = permits.clone();
        let cancel = cancel.clone();
        let force_finish = force_finish.clone();
        let table_metrics = observers.metrics.clone();
        let progress = observers.progress.clone();
        let instances = instances.clone();
        // Its own span, not a child of the round's, carrying the round's fields too: every
        // line of a split names round, table, plugin and bucket on its own.
        let span = tracing::info_span!(
            parent: None,
            "split",
            round = %round_name,
            table = %assignment.path,
            plugin = tracing::field::Empty,
            bucket = range.bucket,
            partition = range.partition_name.as_deref(),
        );
        span.follows_from(&round);
        span.record("plugin", span_plugin.as_str());
        let task = async move {
            let _permit = permits
                .acquire_owned()
                .await
                .expect("semaphore never closed");
            if cancel.is_cancelled() {
                return Err(Error::new(ErrorKind::Cancelled, "round cancelled"));
            }
            let split = SplitTask {
                ctx: &ctx,
                path,
                resolved: &resolved,
                range,
                split_index: u32::try_from(index).unwrap_or(u32::MAX),
                round_ts,
                metrics: &table_metrics,
                progress: &progress,
                instances: &instances,
            };
            split.run(&cancel, &force_finish).await
        };
        tasks.spawn(task.instrument(span));
    }
    let mut done = Vec::new();
    let mut failure = None;
    let mut budget = ResultBudget::new(ctx.config.plugin_round_result_limit);
    let plugin = resolved.plugin.describe();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(r)) => {
                let charged = budget.charge(r.write_result.payload.len(), &plugin);
                done.push(r);
                if let Err(e) = charged
                    && failure.is_none()
                {
                    cancel_all(&mut tasks);
                    failure = Some(e);
                }
            }
            Ok(Err(e)) => {
                if failure.is_none() {
                    cancel_all(&mut tasks);
                    failure = Some(e);
                }
            }
            Err(join_err) if join_err.is_cancelled() => {}
            Err(join_err) => {
                if failure.is_none() {
                    cancel_all(&mut tasks);
                    failure = Some(Error::new(
                        ErrorKind::Internal,
                        format!("split task panicked: {join_err}"),
                    ));
                }
            }
        }
    }
    match failure {
        Some(e) => Err((e, done)),
        None => Ok(done),
    }
}

/// The write results of a round are held until it commits: together they may not exceed
/// `--plugin-round-result-limit` (each one alone is bounded by `--plugin-max-result-size`).
struct ResultBudget {
    limit: usize,
    used: usize,
}

impl ResultBudget {
    fn new(limit: usize) -> Self {
        Self { limit, used: 0 }
    }

    fn charge(&mut self, len: usize, plugin: &str) -> Result<()> {
        self.used = self.used.saturating_add(len);
        if self.used > self.limit {
            return Err(Error::new(
                ErrorKind::PluginLimit,
                format!(
                    "plugin {plugin} returned write results of {} bytes in one round, over the {}-byte round limit (--plugin-round-result-limit)",
                    self.used, self.limit
                ),
            ));
        }
        Ok(())
    }
}

fn cancel_all(tasks: &mut JoinSet<Result<SplitResult>>) {
    tasks.abort_all();
}

/// Plugin instances of a round whose split ended well, for its next splits: a split's fixed
/// cost is mostly instantiation (a fresh linear memory, the guest's initialisation, and
/// tearing it all down), so a round of thousands of small splits instantiates at most
/// `--max-concurrent-splits` times. Each instance is scoped to the round's table, storage and
/// catalog, so a reused one reaches nothing a fresh one would not; one whose call failed
/// (trap, limit, error) is dropped, never reused. Each keeps the host-wide writer permit it
/// was created under (`--lake.tiering.max-concurrent-writers`) until it is dropped.
struct IdleInstances<T = WritingInstance> {
    idle: std::sync::Mutex<Vec<T>>,
    /// Wakes a split waiting for a writer permit when an instance of its round goes idle: the
    /// round's own idle instances hold permits, so waiting for a permit alone could wait for
    /// the round itself.
    returned: tokio::sync::Notify,
}

/// A plugin instance that writes splits, with its writer permit.
struct WritingInstance {
    instance: PluginInstance,
    _permit: OwnedSemaphorePermit,
}

impl<T> Default for IdleInstances<T> {
    fn default() -> Self {
        IdleInstances {
            idle: Default::default(),
            returned: Default::default(),
        }
    }
}

impl<T> IdleInstances<T> {
    fn take(&self) -> Option<T> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn put(&self, instance: T) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(instance);
        self.returned.notify_one();
    }

    /// An idle instance of the round, or else a permit for a new one, whichever comes first.
    async fn idle_or_permit(
        &self,
        writers: &Arc<Semaphore>,
        cancel: &CancellationToken,
    ) -> Result<std::result::Result<T, OwnedSemaphorePermit>> {
        loop {
            // Registered before looking, so that an instance put back meanwhile wakes it.
            let returned = self.returned.notified();
            if let Some(idle) = self.take() {
                return Ok(Ok(idle));
            }
            tokio::select! {
                permit = writers.clone().acquire_owned() => {
                    return permit.map(Err).map_err(|_| {
                        Error::new(ErrorKind::Cancelled, "the host is shutting down")
                    });
                }
                _ = returned => {}
                _ = cancel.cancelled() => {
                    return Err(Error::new(ErrorKind::Cancelled, "round cancelled"));
                }
            }
        }
    }
}

/// A split's writer: a `batch-writer` whose batches stay in the host (contract 0.3.8), or a
/// `writer` that takes row batches.
enum SplitWriter {
    Rows(WriterHandle),
    Batches(BatchWriterHandle),
}

/// One bucket range of a round.
struct SplitTask<'a> {
    ctx: &'a TieringContext,
    path: TablePath,
    resolved: &'a ResolvedTable,
    range: reader::BucketRange,
    split_index: u32,
    round_ts: i64,
    metrics: &'a TableMetrics,
    progress: &'a RoundProgress,
    instances: &'a IdleInstances,
}

impl SplitTask<'_> {
    /// Reads the range and writes it through a plugin instance of the round (an idle one, or
    /// a new one), which goes back to `instances` if the split ends well. When `force_finish`
    /// fires, stops after the batch being written and completes the writer: the split then
    /// ends at the last offset actually written.
    async fn run(
        self,
        cancel: &CancellationToken,
        force_finish: &CancellationToken,
    ) -> Result<SplitResult> {
        let SplitTask {
            ctx,
            path,
            resolved,
            range,
            split_index,
            round_ts,
            metrics,
            progress,
            instances,
        } = self;
        let started = Instant::now();
        let log_context = format!(
            "{} {path} bucket {}",
            resolved.plugin.format(),
            range.bucket
        );
        let mut writing = match instances.idle_or_permit(&ctx.writers, cancel).await? {
            Ok(mut idle) => {
                idle.instance.set_log_context(log_context);
                idle
            }
            Err(permit) => {
                let mut fresh = PluginInstance::new(&resolved.plugin, log_context).await?;
                fresh.set_storage(resolved.storage.clone());
                fresh.set_catalog(resolved.catalog.clone());
                fresh.set_cancel(cancel.clone());
                WritingInstance {
                    instance: fresh,
                    _permit: permit,
                }
            }
        };
        let instance = &mut writing.instance;
        // A writer sees its partition's bucket count (the contract's `writer-context`).
        let writer_ctx = wit::WriterContext {
            table: wit::TableInfo {
                num_buckets: range.buckets,
                ..resolved.wit_info.clone()
            },
            bucket: range.bucket,
            partition_id: range.partition_id,
            partition_name: range.partition_name.clone(),
            split_index,
            round_timestamp: round_ts,
            config: resolved.plugin_config.clone(),
        };
        let form = match ctx.config.plugin_data_plane {
            DataPlane::Native if instance.writes_batches() => BatchForm::Host,
            _ => BatchForm::Ipc,
        };
        let writer = match form {
            BatchForm::Host => SplitWriter::Batches(instance.open_batch_writer(&writer_ctx).await?),
            BatchForm::Ipc => SplitWriter::Rows(instance.open_writer(&writer_ctx).await?),
        };
        let opened = started.elapsed();
        let mut first_batch = None;

        // Reading, encoding and writing overlap: reader → encoder → this loop.
        let (raw_tx, raw_rx) = mpsc::channel(CHANNEL_DEPTH);
        let (tx, mut rx) = mpsc::channel(1);
        let read = reader::read_bucket(
            ctx.fluss.conn(),
            kv_snapshot::SnapshotAccess {
                storage: ctx.remote_storage.clone(),
                lease_duration: ctx.config.kv_snapshot_lease_duration,
            },
            resolved.info.clone(),
            range.clone(),
            ctx.config.poll_timeout,
            raw_tx,
        );
        let reader = tokio::spawn(async move {
            tokio::try_join!(read, row_batches::encode_all(raw_rx, tx, form)).map(|(end, _)| end)
        });
        // Aborts the reader whichever way this function returns.
        let _reader_guard = AbortOnDrop(reader.abort_handle());
        let mut written = WrittenProgress::default();
        let mut forced = false;
        failpoints::hit(failpoints::BEFORE_FIRST_BATCH).await;
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    return Err(Error::new(
                        ErrorKind::Cancelled,
                        format!("{path} bucket {}: round cancelled", range.bucket),
                    ));
                }
                // A snapshot split is never cut short (as in Java): what it read of the
                // snapshot holds no offset to stop at.
                // Nor is a piece of a bucket before its last: the bucket is tiered up to its
                // last piece's end, so every earlier piece must be written whole.
                _ = force_finish.cancelled(), if range.snapshot.is_none() && range.ends_its_bucket() => {
                    forced = true;
                    break;
                }
                batch = rx.recv() => {
                    let Some(batch) = batch else { break };
                    first_batch.get_or_insert_with(|| started.elapsed());
                    metrics.read(batch.rows as u64, batch.bytes as u64);
                    match (&writer, batch.payload) {
                        (SplitWriter::Batches(w), Payload::Host(rows)) => {
                            instance.write_batch(w, rows).await?
                        }
                        (SplitWriter::Rows(w), Payload::Ipc(rows)) => {
                            instance.write(w, &rows).await?
                        }
                        _ => {
                            return Err(Error::new(
                                ErrorKind::Internal,
                                "a batch prepared for the other kind of writer",
                            ))
                        }
                    }
                    let from = written.end_offset.unwrap_or(range.start.max(0));
                    progress.advance(u64::try_from(batch.end_offset - from).unwrap_or(0));
                    if written.rows == 0 {
                        failpoints::hit(failpoints::AFTER_FIRST_WRITE).await;
                    }
                    written.rows += batch.rows as u64;
                    written.end_offset = Some(batch.end_offset);
                    written.max_timestamp = written.max_timestamp.max(batch.max_timestamp);
                }
            }
        }
        let end_offset = if forced {
            written.end_offset
        } else {
            // The reader ended: the bucket is consumed up to its stop offset (a snapshot
            // split's, the log offset of the snapshot read), even when its last batches held
            // no row.
            Some(reader.await.map_err(|e| {
                Error::new(ErrorKind::Internal, format!("reader task failed: {e}"))
            })??)
        };
        let read = started.elapsed();
        let write_result = match writer {
            SplitWriter::Batches(w) => instance.complete_batch_writer(w).await?,
            SplitWriter::Rows(w) => instance.complete(w).await?,
        };
        tracing::debug!(
            opened_ms = opened.as_millis() as u64,
            first_batch_ms = first_batch.map(|d| d.as_millis() as u64),
            read_ms = read.as_millis() as u64,
            completed_ms = started.elapsed().as_millis() as u64,
            table = %path,
            bucket = range.bucket,
            rows = written.rows,
            end_offset,
            forced,
            file_bytes = write_result.file_bytes,
            plugin_memory_bytes = instance.memory_bytes(),
            "split written"
        );
        instances.put(writing);
        Ok(SplitResult {
            range,
            end_offset,
            max_timestamp: written.max_timestamp,
            rows: written.rows,
            write_result,
        })
    }
}

/// What reached the plugin so far.
#[derive(Default)]
struct WrittenProgress {
    rows: u64,
    /// Exclusive end offset of the last written batch; none before the first.
    end_offset: Option<i64>,
    /// Newest commit timestamp of the rows written; none before the first.
    max_timestamp: Option<i64>,
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round with more splits than writer permits: the splits waiting for a permit take the
    /// instances its finished splits put back (which keep their permits), rather than wait
    /// for a permit only the round itself could release.
    #[tokio::test]
    async fn a_split_waiting_for_a_writer_takes_an_instance_its_round_put_back() {
        let writers = Arc::new(Semaphore::new(1));
        let idle: Arc<IdleInstances<&str>> = Arc::default();
        let cancel = CancellationToken::new();
        let Ok(Err(permit)) = idle.idle_or_permit(&writers, &cancel).await else {
            panic!("the first split gets the permit");
        };
        let waiting = tokio::spawn({
            let (idle, writers, cancel) = (idle.clone(), writers.clone(), cancel.clone());
            async move { idle.idle_or_permit(&writers, &cancel).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        // The first split ends: its instance (and its permit) goes back to the round.
        idle.put("instance of split 1");
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the waiting split is not stuck")
            .unwrap();
        assert!(matches!(got, Ok(Ok("instance of split 1"))));
        drop(permit);
        // A cancelled round stops waiting.
        let _held = writers.clone().acquire_owned().await.unwrap();
        cancel.cancel();
        let e = idle.idle_or_permit(&writers, &cancel).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cancelled);
    }

    #[test]
    fn a_round_holds_write_results_up_to_its_budget() {
        let mut budget = ResultBudget::new(100);
        budget.charge(60, "p").unwrap();
        budget.charge(40, "p").unwrap();
        let e = budget.charge(1, "p").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PluginLimit);
        assert!(
            e.message()
                .contains("101 bytes in one round, over the 100-byte round limit")
        );
    }
}

/// The Hive Metastore `options` name, which must be the host's or the cluster's (a table's
/// properties cannot send the host elsewhere).
fn hive_metastore(
    ctx: &TieringContext,
    assignment: &Assignment,
    format: &str,
    options: &crate::catalog::HiveOptions,
) -> Result<HiveCatalog> {
    routing::check_catalog_uri(
        &options.uri,
        format,
        &ctx.config.lake_options,
        &ctx.cluster.catalog_uris,
    )
    .and_then(|()| HiveCatalog::new(options, ctx.config.rpc_timeout))
    .map_err(|e| in_table(assignment, e))
}

/// `e` with the table's path in front.
fn in_table(assignment: &Assignment, e: Error) -> Error {
    Error::new(e.kind(), format!("{}: {}", assignment.path, e.message()))
}

/// The storage and catalog scope of a table a metastore points at (Glue, Hive): the metastore,
/// which the host's options name, says where the table is, and the plugin's storage is
/// confined to exactly that location. The host does not create metastore tables: the
/// coordinator does (or their owner).
async fn pointer_table_scope(
    ctx: &TieringContext,
    assignment: &Assignment,
    table: PointerTable,
    storage_options: &crate::warehouse::options::StorageOptions,
    quota: Arc<StorageQuota>,
) -> Result<(ScopedStorage, TableCatalogScope)> {
    let table = Arc::new(table);
    let pointer = table
        .pointer()
        .await
        .map_err(|e| in_table(assignment, e))?
        .ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}: the {} has no table {} (the Fluss coordinator creates it when the table is created with table.datalake.enabled)",
                    assignment.path,
                    table.describe(),
                    assignment.path
                ),
            )
        })?;
    let (parent, name) =
        table_location_parts(&pointer.location).map_err(|e| in_table(assignment, e))?;
    let storage = ctx
        .warehouses
        .get(&parent, storage_options)
        .await
        .map_err(|e| in_table(assignment, e))?
        .scope(&name)?
        .with_quota(quota);
    let resolved = table
        .resolve(&storage, pointer)
        .await
        .map_err(|e| in_table(assignment, e))?;
    Ok((
        storage,
        TableCatalogScope::Pointer(PointerScope { table, resolved }),
    ))
}

/// A catalog's table location split into the folder that holds it, opened as a warehouse,
/// and the table's own folder, the scope of its storage: `s3://b/wh/db/t` is `s3://b/wh/db`
/// and `t`; `file:/wh/db/t` is `/wh/db` and `t`.
fn table_location_parts(location: &str) -> Result<(String, String)> {
    let local = location
        .strip_prefix("file://")
        .or_else(|| location.strip_prefix("file:"))
        .filter(|rest| rest.starts_with('/'));
    let location = local.unwrap_or(location).trim_end_matches('/');
    // Past the scheme, a bucket (or nothing, for a local path) and then the table's folder.
    let in_store = location
        .split_once("://")
        .map_or(location, |(_, rest)| rest);
    match location.rsplit_once('/') {
        Some((parent, name))
            if !name.is_empty() && !parent.is_empty() && in_store.contains('/') =>
        {
            Ok((parent.to_string(), name.to_string()))
        }
        _ => Err(Error::new(
            ErrorKind::Config,
            format!(
                "the catalog keeps the table at '{location}', which is not a table folder inside a bucket or directory"
            ),
        )),
    }
}

#[cfg(test)]
mod location_tests {
    use super::table_location_parts;

    #[test]
    fn catalog_locations_split_into_a_warehouse_and_the_table() {
        for (location, parent, name) in [
            ("s3://b/wh/db/t", "s3://b/wh/db", "t"),
            ("s3://b/t/", "s3://b", "t"),
            ("file:/wh/db/t", "/wh/db", "t"),
            ("file:///wh/db/t", "/wh/db", "t"),
            ("/wh/db/t", "/wh/db", "t"),
        ] {
            assert_eq!(
                table_location_parts(location).unwrap(),
                (parent.to_string(), name.to_string()),
                "{location}"
            );
        }
        for bad in ["s3://b", "s3://", "t", "file:/t"] {
            assert!(table_location_parts(bad).is_err(), "{bad}");
        }
    }
}
