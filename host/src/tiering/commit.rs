//! The two-phase commit of a round, in the order that keeps the lake and Fluss consistent
//! whatever crashes in between (Flink's `TieringCommitOperator`). The Fluss calls are in
//! [`fluss_commit`](super::fluss_commit); this module decides their order and what a failure
//! at each step does:
//!
//! 1. identity: the path still names the assigned table, and Fluss's lake snapshot is still
//!    the one the round planned from (otherwise another round committed meanwhile, and this
//!    one would tier its rows again);
//! 2. recovery: if the lake holds a snapshot committed by tiering that Fluss does not know
//!    (a previous host died between the lake commit and the Fluss commit), register it in
//!    Fluss once [`recovery`](super::recovery) verified it, drop this round's files and end
//!    the round so the next one starts from there;
//! 3. `PrepareLakeTableSnapshot`: the coordinator writes the offsets file;
//! 4. fencing: the table is still the same, a heartbeat confirms the round still belongs to
//!    this host, and the round was not cancelled;
//! 5. the lake commit, carrying `fluss-offsets` = that file's path, on a base where the
//!    planned snapshot is still the newest one tiering committed (the plugin checks this in
//!    every attempt, after reading its base, so no overlapping round can slip in between);
//! 6. `CommitLakeTableSnapshot`: the V2 registration plus `tables_req`, which tells the
//!    tablet servers the tiered offsets.
//!
//! Before step 5 a failure aborts the round's files (and deletes a prepared offsets file, so
//! it can never be replayed); after it nothing is aborted unless the lake provably holds no
//! snapshot of this round: the lake snapshot exists and step 2 of the next round registers it.

use tokio_util::sync::CancellationToken;

use super::context::{Assignment, ResolvedTable, RoundOutcome, SplitResult, TieringContext};
use super::maintenance::Keep;
use super::splits::LogGap;
use super::{FLUSS_LOG_GAP_PROPERTY, FLUSS_OFFSETS_PROPERTY, FLUSS_REPLACED_BUCKETS_PROPERTY};
use super::{fluss_commit, recovery};
use crate::error::{Error, ErrorKind, Result};
use crate::failpoints;
use crate::fluss::offsets;
use crate::plugin::instance::CommitterHandle;
use crate::plugin::{BucketRef, PluginInstance, wit};

/// What a round hands the commit: its splits' results and the lake snapshot Fluss held when
/// the round planned them.
pub struct RoundWrites {
    pub results: Vec<SplitResult>,
    pub planned_snapshot: Option<i64>,
    /// Log gaps the table accepts that this round tiers past: recorded in the lake snapshot's
    /// [`FLUSS_LOG_GAP_PROPERTY`] so that the lost ranges stay visible in the lake.
    pub skipped_gaps: Vec<LogGap>,
}

/// How the lake snapshot records a bucket it rebuilt from a KV snapshot:
/// `[partition/]bucket:<snapshot id>@<log offset>`.
fn replaced_bucket(r: &SplitResult) -> String {
    let partition = r
        .range
        .partition_name
        .as_ref()
        .map(|p| format!("{p}/"))
        .unwrap_or_default();
    let snapshot = r.range.snapshot.map(|s| s.snapshot_id).unwrap_or(-1);
    format!(
        "{partition}{}:{snapshot}@{}",
        r.range.bucket,
        r.end_offset.unwrap_or(r.range.stop)
    )
}

/// Each bucket's pieces (see `splits::cut_into_pieces`) as one result, as Fluss knows the
/// bucket: tiered up to where its last piece stopped (that piece's start when it wrote
/// nothing: every earlier piece is written to its end), with the rows and the newest commit
/// time of them all. Whole ranges are kept as they are. The write results' payloads were
/// taken already: they go to the committable piece by piece.
fn merge_pieces(results: Vec<SplitResult>) -> Vec<SplitResult> {
    let mut out = Vec::with_capacity(results.len());
    let mut pieces: std::collections::BTreeMap<(Option<i64>, i32), Vec<SplitResult>> =
        Default::default();
    for r in results {
        if r.range.piece.is_some() {
            pieces
                .entry((r.range.partition_id, r.range.bucket))
                .or_default()
                .push(r);
        } else {
            out.push(r);
        }
    }
    for (_, mut group) in pieces {
        group.sort_by_key(|r| r.range.piece.map(|p| p.index));
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let merged = SplitResult {
            range: crate::fluss::reader::BucketRange {
                start: first.range.start,
                stop: last.range.stop,
                piece: None,
                ..first.range.clone()
            },
            end_offset: Some(last.end_offset.unwrap_or(last.range.start)),
            max_timestamp: group.iter().filter_map(|r| r.max_timestamp).max(),
            rows: group.iter().map(|r| r.rows).sum(),
            write_result: wit::WriteResult {
                payload: Vec::new(),
                record_count: group.iter().map(|r| r.write_result.record_count).sum(),
                file_bytes: group.iter().map(|r| r.write_result.file_bytes).sum(),
            },
        };
        out.push(merged);
    }
    out
}

/// Deletes the files of write results that will never be committed (best effort).
pub async fn abort_written(
    instance: &mut PluginInstance,
    resolved: &ResolvedTable,
    written: Vec<SplitResult>,
) {
    if written.is_empty() {
        return;
    }
    let ctx = wit::CommitterContext {
        table: resolved.wit_info.clone(),
        config: resolved.plugin_config.clone(),
        tiering_config: Vec::new(),
    };
    let payloads: Vec<Vec<u8>> = written
        .into_iter()
        .map(|r| r.write_result.payload)
        .collect();
    let result = async {
        let c = instance.open_committer(&ctx).await?;
        let committable = instance.to_committable(&c, &payloads).await?;
        instance.abort(&c, &committable).await?;
        instance.close_committer(c).await
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(table = %resolved.wit_info.path.table, "could not delete the round's files: {e}");
    }
}

/// Best-effort deletion of a committable's files.
async fn abort(
    instance: &mut PluginInstance,
    committer: &CommitterHandle,
    committable: &[u8],
    assignment: &Assignment,
) {
    if let Err(e) = instance.abort(committer, committable).await {
        tracing::warn!(table = %assignment.path, "could not delete the round's files: {e}");
    }
}

pub async fn commit_round(
    ctx: &TieringContext,
    assignment: &Assignment,
    resolved: &ResolvedTable,
    instance: &mut PluginInstance,
    writes: RoundWrites,
    cancel: &CancellationToken,
) -> Result<RoundOutcome> {
    let RoundWrites {
        mut results,
        planned_snapshot,
        skipped_gaps,
    } = writes;
    let rows: u64 = results.iter().map(|r| r.rows).sum();
    // Every split stopped before writing anything (the round reached the table's freshness
    // first): a lake snapshot would move no bucket, so none is committed (Fluss would register
    // a snapshot repeating its predecessor). What the plugin set up for the empty splits is
    // deleted: nothing was committed, so nothing is unknown.
    if results.iter().all(|r| r.end_offset.is_none()) {
        if results.iter().any(|r| !r.write_result.payload.is_empty()) {
            abort_written(instance, resolved, results).await;
        }
        return Ok(RoundOutcome {
            rows,
            ..Default::default()
        });
    }
    // Moved, not copied: a round's write results may be large.
    let payloads: Vec<Vec<u8>> = results
        .iter_mut()
        .map(|r| std::mem::take(&mut r.write_result.payload))
        .collect();
    let results = merge_pieces(results);
    let completed: Vec<&SplitResult> = results.iter().filter(|r| r.end_offset.is_some()).collect();
    // A bucket rebuilt from its KV snapshot is replaced by the whole snapshot or not at all: a
    // snapshot split is never force-finished, so one without an end is a broken invariant.
    if results
        .iter()
        .any(|r| r.range.replace && r.end_offset.is_none())
    {
        abort_written(instance, resolved, results).await;
        return Err(Error::new(
            ErrorKind::Internal,
            "a split rebuilding a bucket from its KV snapshot ended before the snapshot's end",
        ));
    }
    let replace: Vec<&SplitResult> = completed
        .iter()
        .copied()
        .filter(|r| r.range.replace)
        .collect();
    let committer_context = resolved.committer_context(ctx);
    let committer = instance.open_committer(&committer_context).await?;
    let committable = instance.to_committable(&committer, &payloads).await?;

    let offsets_path = match prepare(
        ctx,
        assignment,
        instance,
        &committer,
        &completed,
        planned_snapshot,
        cancel,
    )
    .await
    {
        Ok(p) => p,
        Err((e, prepared)) => {
            abort(instance, &committer, &committable, assignment).await;
            if let Some(path) = prepared {
                recovery::discard_offsets_file(&ctx.remote_storage, &path).await;
            }
            return Err(e);
        }
    };

    let mut properties = vec![(FLUSS_OFFSETS_PROPERTY.to_string(), offsets_path.clone())];
    if !skipped_gaps.is_empty() {
        let gaps: Vec<String> = skipped_gaps.iter().map(ToString::to_string).collect();
        properties.push((FLUSS_LOG_GAP_PROPERTY.to_string(), gaps.join(",")));
    }
    if !replace.is_empty() {
        let rebuilt: Vec<String> = replace.iter().map(|r| replaced_bucket(r)).collect();
        properties.push((
            FLUSS_REPLACED_BUCKETS_PROPERTY.to_string(),
            rebuilt.join(","),
        ));
    }
    let replace: Vec<BucketRef> = replace
        .iter()
        .map(|r| BucketRef {
            partition_id: r.range.partition_id,
            partition_name: r.range.partition_name.clone(),
            bucket: r.range.bucket,
            num_buckets: r.range.buckets,
        })
        .collect();
    // The plugin publishes only on a base with no tiering snapshot newer than the planned one:
    // a round that overlapped this one (fenced, or of another host) cannot be tiered twice.
    // Under the table's metastore lock where its writers commit under one; a lock not
    // granted is a commit never attempted.
    let lake_commit = async {
        if replace.is_empty() {
            instance
                .commit(&committer, &committable, &properties, planned_snapshot)
                .await
        } else {
            instance
                .commit_replacing(
                    &committer_context,
                    &committable,
                    &properties,
                    planned_snapshot,
                    &replace,
                )
                .await
        }
    };
    let lake = match resolved.under_commit_lock(lake_commit).await {
        Ok(lake) => lake,
        Err(e) => {
            abort(instance, &committer, &committable, assignment).await;
            recovery::discard_offsets_file(&ctx.remote_storage, &offsets_path).await;
            return Err(e);
        }
    };
    let lake = lake.and_then(|r| check_commit_result(&resolved.plugin.describe(), r));
    let lake = match lake {
        Ok(r) => r,
        Err(e) => {
            // The plugin may or may not have published the snapshot. Its files are deleted
            // only when the lake provably holds no snapshot carrying this offsets file; when
            // that cannot be told, they stay (an unreferenced file costs space, a deleted
            // referenced one breaks the table) and the next round's recovery finds out.
            let outcome_unknown = e.kind() == ErrorKind::CommitUnknown
                || e.message().contains(COMMIT_OUTCOME_UNKNOWN);
            let probe = instance.get_missing_lake_snapshot(&committer, None).await;
            match published(&probe, &offsets_path, outcome_unknown) {
                Published::No => {
                    abort(instance, &committer, &committable, assignment).await;
                    recovery::discard_offsets_file(&ctx.remote_storage, &offsets_path).await;
                }
                Published::Yes => {}
                Published::Unknown => tracing::warn!(
                    table = %assignment.path,
                    "the lake commit failed and whether it was published cannot be told; the round's files are kept"
                ),
            }
            return Err(e);
        }
    };
    instance.close_committer(committer).await.ok();
    failpoints::hit(failpoints::AFTER_LAKE_COMMIT).await;
    fluss_commit::register_snapshot(ctx, assignment, &lake, &offsets_path, &completed).await?;
    failpoints::hit(failpoints::AFTER_FLUSS_COMMIT).await;
    tracing::info!(
        table = %assignment.path,
        snapshot = lake.snapshot_id,
        rows,
        plugin = %resolved.plugin.describe(),
        "tiering round committed"
    );
    Ok(RoundOutcome {
        snapshot_id: Some(lake.snapshot_id),
        stats: Some(lake.stats),
        rows,
        force_finished: false,
        keep: Some(Keep::of_commit(&lake)),
    })
}

/// Whether a round whose lake commit failed was published anyway.
#[derive(Debug, PartialEq, Eq)]
enum Published {
    /// Provably not: no snapshot Fluss misses, or one carrying another offsets file.
    No,
    /// The snapshot Fluss misses carries this round's offsets file.
    Yes,
    /// The plugin could not answer.
    Unknown,
}

/// The words of the contract for a commit the catalog may or may not have applied (`io`,
/// `table-catalog` in `wit/fluss-lake.wit`; the SDK's `commit::UNKNOWN_OUTCOME`).
const COMMIT_OUTCOME_UNKNOWN: &str = "commit outcome unknown";

/// Reads the plugin's answer to "which snapshot does Fluss not know yet" after a failed
/// lake commit. When the plugin said the commit's outcome is unknown, a request may still be
/// in flight to the catalog and apply after the probe: then only the snapshot itself proves
/// anything, and its absence proves nothing.
fn published(
    probe: &Result<Option<wit::CommittedSnapshot>>,
    offsets_path: &str,
    outcome_unknown: bool,
) -> Published {
    match probe {
        Ok(Some(s))
            if s.properties
                .iter()
                .any(|(k, v)| k == FLUSS_OFFSETS_PROPERTY && v == offsets_path) =>
        {
            Published::Yes
        }
        _ if outcome_unknown => Published::Unknown,
        Ok(None) | Ok(Some(_)) => Published::No,
        Err(_) => Published::Unknown,
    }
}

/// Steps 1–4. Returns the offsets file path; on failure, the error and the offsets file
/// already prepared, if any.
async fn prepare(
    ctx: &TieringContext,
    assignment: &Assignment,
    instance: &mut PluginInstance,
    committer: &CommitterHandle,
    completed: &[&SplitResult],
    planned_snapshot: Option<i64>,
    cancel: &CancellationToken,
) -> std::result::Result<String, (Error, Option<String>)> {
    let before = async {
        failpoints::hit(failpoints::BEFORE_PREPARE).await;
        fluss_commit::current_table_info(ctx, assignment).await?;
        let fluss = offsets::latest_tiered_offsets(&ctx.fluss.admin(), &assignment.path).await?;
        if fluss.snapshot_id != planned_snapshot {
            return Err(Error::new(
                ErrorKind::Fenced,
                format!(
                    "{}: Fluss's lake snapshot moved from {planned_snapshot:?} to {:?} while the round ran \
                     (another round committed); this round's files are discarded",
                    assignment.path, fluss.snapshot_id
                ),
            ));
        }
        if let Some(missing) = instance
            .get_missing_lake_snapshot(committer, fluss.snapshot_id)
            .await?
        {
            let path = recovery::verify_missing_snapshot(
                assignment,
                &ctx.remote_storage,
                &ctx.cluster,
                &fluss,
                &missing,
            )
            .await?;
            tracing::warn!(
                table = %assignment.path,
                snapshot = missing.snapshot_id,
                "registering a lake snapshot Fluss missed (a previous round stopped between the lake and Fluss commits)"
            );
            fluss_commit::register_recovered_snapshot(ctx, assignment, missing.snapshot_id, &path)
                .await?;
            return Err(Error::new(
                ErrorKind::Recovered,
                format!(
                    "{}: lake snapshot {} was committed by an earlier round but unknown to Fluss (last known {:?}); \
                     registered it, this round's files are discarded and the next round resumes from it",
                    assignment.path, missing.snapshot_id, fluss.snapshot_id
                ),
            ));
        }
        fluss_commit::prepare_offsets(ctx, assignment, completed).await
    }
    .await;
    let path = before.map_err(|e| (e, None))?;
    // Last checks right before the lake commit: the table must still be the one assigned
    // (a table dropped and recreated under the same name shares its lake location), the
    // coordinator must still consider the round ours, and the round must not be cancelled.
    let last_checks = async {
        failpoints::hit(failpoints::BEFORE_LAKE_COMMIT).await;
        fluss_commit::current_table_info(ctx, assignment).await?;
        fluss_commit::confirm_ownership(ctx, assignment).await?;
        if cancel.is_cancelled() {
            return Err(Error::new(
                ErrorKind::Cancelled,
                format!(
                    "{}: round cancelled before its lake commit",
                    assignment.path
                ),
            ));
        }
        Ok(())
    }
    .await;
    match last_checks {
        Ok(()) => Ok(path),
        Err(e) => Err((e, Some(path))),
    }
}

/// A plugin's commit result is checked before anything reaches Fluss: Fluss must never
/// register a snapshot id a lake cannot have.
fn check_commit_result(plugin: &str, r: wit::CommitResult) -> Result<wit::CommitResult> {
    let bad = |why: String| {
        Error::new(
            ErrorKind::Plugin,
            format!(
                "plugin {plugin} returned a malformed commit result: {why}; nothing was registered in Fluss"
            ),
        )
    };
    if r.snapshot_id < 0 {
        return Err(bad(format!("snapshot id {}", r.snapshot_id)));
    }
    // -1 is Fluss's KEEP_ALL_PREVIOUS and no value below it means anything: a plugin that
    // returns one is broken, so its commit is not registered (Fluss itself would keep every
    // snapshot for such an id, and maintenance would too, see `Keep::of_commit`).
    if r.earliest_snapshot_to_keep
        .is_some_and(|keep| keep < fluss_commit::KEEP_ALL_PREVIOUS)
    {
        return Err(bad(format!(
            "earliest snapshot to keep {:?}",
            r.earliest_snapshot_to_keep
        )));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(offsets: &str) -> wit::CommittedSnapshot {
        wit::CommittedSnapshot {
            snapshot_id: 3,
            properties: vec![(FLUSS_OFFSETS_PROPERTY.to_string(), offsets.to_string())],
        }
    }

    #[test]
    fn an_earliest_snapshot_to_keep_below_keep_all_previous_is_refused() {
        let result = |earliest| wit::CommitResult {
            snapshot_id: 7,
            readable: wit::ReadableSnapshot::Committed,
            earliest_snapshot_to_keep: earliest,
            stats: wit::TieringStats {
                file_size: None,
                record_count: None,
            },
        };
        for earliest in [
            None,
            Some(fluss_commit::KEEP_ALL_PREVIOUS),
            Some(0),
            Some(3),
        ] {
            let r = check_commit_result("p", result(earliest)).unwrap();
            assert_eq!(r.earliest_snapshot_to_keep, earliest);
        }
        for earliest in [-2, i64::MIN] {
            let e = check_commit_result("p", result(Some(earliest))).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Plugin);
            assert!(
                e.message().contains("malformed commit result")
                    && e.message().contains("nothing was registered in Fluss"),
                "{e}"
            );
        }
    }

    #[test]
    fn files_of_a_failed_commit_are_deleted_only_when_provably_unpublished() {
        let ours = "file:/remote/lake/fluss/t-1/a.offsets";
        let theirs = Ok(Some(snapshot("file:/remote/lake/fluss/t-1/b.offsets")));
        assert_eq!(published(&Ok(None), ours, false), Published::No);
        assert_eq!(
            published(&theirs, ours, false),
            Published::No,
            "another round's snapshot: ours was not published"
        );
        assert_eq!(
            published(&Ok(Some(snapshot(ours))), ours, false),
            Published::Yes
        );
        let unknown = Err(Error::new(ErrorKind::Plugin, "cannot read snapshots"));
        assert_eq!(
            published(&unknown, ours, false),
            Published::Unknown,
            "an error is no proof of anything"
        );
        // The plugin said the catalog may still apply the commit (a request in flight): no
        // snapshot now proves nothing, ours proves it was.
        for probe in [Ok(None), theirs] {
            assert_eq!(published(&probe, ours, true), Published::Unknown);
        }
        assert_eq!(
            published(&Ok(Some(snapshot(ours))), ours, true),
            Published::Yes
        );
    }

    #[test]
    fn a_buckets_pieces_commit_as_the_bucket_up_to_its_last_pieces_end() {
        use crate::fluss::reader::{BucketRange, Piece};
        let piece = |index: u32, start: i64, stop: i64, end: Option<i64>, rows: u64| SplitResult {
            range: BucketRange {
                partition_id: None,
                partition_name: None,
                bucket: 0,
                buckets: 1,
                start,
                stop,
                snapshot: None,
                replace: false,
                piece: Some(Piece { index, count: 3 }),
            },
            end_offset: end,
            max_timestamp: Some(100 + index as i64),
            rows,
            write_result: wit::WriteResult {
                payload: Vec::new(),
                record_count: rows,
                file_bytes: 10,
            },
        };
        let whole = SplitResult {
            range: BucketRange {
                bucket: 1,
                piece: None,
                ..piece(0, 0, 5, None, 0).range
            },
            ..piece(0, 0, 5, Some(5), 5)
        };
        // Given out of order; the last piece was force-finished at 250.
        let merged = merge_pieces(vec![
            piece(2, 200, 300, Some(250), 50),
            whole,
            piece(0, 0, 100, Some(100), 100),
            piece(1, 100, 200, Some(200), 100),
        ]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].range.bucket, 1);
        let b = &merged[1];
        assert_eq!((b.range.start, b.range.stop, b.range.piece), (0, 300, None));
        assert_eq!(b.end_offset, Some(250));
        assert_eq!((b.rows, b.write_result.file_bytes), (250, 30));
        assert_eq!(b.max_timestamp, Some(102));
        // A last piece that wrote nothing: the bucket ends where it would have started.
        let merged = merge_pieces(vec![
            piece(0, 0, 100, Some(100), 100),
            piece(1, 100, 200, Some(200), 100),
            piece(2, 200, 300, None, 0),
        ]);
        assert_eq!(merged[0].end_offset, Some(200));
    }
}
