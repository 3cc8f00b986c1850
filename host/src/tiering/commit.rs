//! The two-phase commit of a round, in the order that keeps the lake and Fluss consistent
//! whatever crashes in between (Flink's `TieringCommitOperator`):
//!
//! 1. recovery: if the lake holds a snapshot committed by tiering that Fluss does not know
//!    (a previous host died between the lake commit and the Fluss commit), register it in
//!    Fluss, drop this round's files and fail the round so the next one starts from there;
//! 2. fencing: a heartbeat confirms the round still belongs to this host;
//! 3. `PrepareLakeTableSnapshot`: the coordinator writes the offsets file;
//! 4. the lake commit, carrying `fluss-offsets` = that file's path;
//! 5. `CommitLakeTableSnapshot`: the V2 registration plus `tables_req`, which tells the
//!    tablet servers the tiered offsets.
//!
//! Before step 4 a failure aborts the round's files; after it nothing is aborted: the lake
//! snapshot exists and step 1 of the next round registers it.

use super::round::{Assignment, ResolvedTable, RoundOutcome, TieringContext};
use super::{COMMIT_USER, FLUSS_OFFSETS_PROPERTY};
use crate::coordinator::api::errors;
use crate::coordinator::proto::*;
use crate::error::{Error, ErrorKind, Result};
use crate::failpoints;
use crate::fluss::offsets;
use crate::fluss::reader::BucketRange;
use crate::plugin::instance::CommitterHandle;
use crate::plugin::{PluginInstance, wit};

/// What one split produced.
pub struct SplitResult {
    pub range: BucketRange,
    /// Exclusive offset the bucket was read up to (its stop offset when complete).
    pub end_offset: i64,
    pub max_timestamp: i64,
    pub rows: u64,
    pub write_result: wit::WriteResult,
}

fn committer_context(ctx: &TieringContext, resolved: &ResolvedTable) -> wit::CommitterContext {
    wit::CommitterContext {
        table: resolved.wit_info.clone(),
        config: resolved.plugin_config.clone(),
        tiering_config: ctx
            .config
            .tiering_options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }
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

pub async fn commit_round(
    ctx: &TieringContext,
    assignment: &Assignment,
    resolved: &ResolvedTable,
    instance: &mut PluginInstance,
    mut results: Vec<SplitResult>,
) -> Result<RoundOutcome> {
    let rows: u64 = results.iter().map(|r| r.rows).sum();
    if results
        .iter()
        .all(|r| r.end_offset < 0 && r.write_result.payload.is_empty())
    {
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
    let completed: Vec<&SplitResult> = results.iter().filter(|r| r.end_offset >= 0).collect();
    let committer = instance
        .open_committer(&committer_context(ctx, resolved))
        .await?;
    let committable = instance.to_committable(&committer, &payloads).await?;

    let prepared = prepare(ctx, assignment, instance, &committer, &completed).await;
    let offsets_path = match prepared {
        Ok(p) => p,
        Err(e) => {
            if let Err(abort_err) = instance.abort(&committer, &committable).await {
                tracing::warn!(table = %assignment.path, "could not delete the round's files: {abort_err}");
            }
            return Err(e);
        }
    };

    let properties = vec![(FLUSS_OFFSETS_PROPERTY.to_string(), offsets_path.clone())];
    let lake = instance.commit(&committer, &committable, &properties).await;
    let lake = lake.and_then(|r| check_commit_result(resolved, r));
    let lake = match lake {
        Ok(r) => r,
        Err(e) => {
            // The plugin may or may not have published the snapshot. Its files are deleted
            // only when the lake provably holds no snapshot carrying this offsets file; when
            // that cannot be told, they stay (an unreferenced file costs space, a deleted
            // referenced one breaks the table) and the next round's recovery finds out.
            let probe = instance.get_missing_lake_snapshot(&committer, None).await;
            match published(&probe, &offsets_path) {
                Published::No => {
                    if let Err(abort_err) = instance.abort(&committer, &committable).await {
                        tracing::warn!(table = %assignment.path, "could not delete the round's files: {abort_err}");
                    }
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
    register_in_fluss(ctx, assignment, &lake, &offsets_path, &completed).await?;
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

/// Reads the plugin's answer to "which snapshot does Fluss not know yet" after a failed
/// lake commit.
fn published(probe: &Result<Option<wit::CommittedSnapshot>>, offsets_path: &str) -> Published {
    match probe {
        Ok(None) => Published::No,
        Ok(Some(s))
            if s.properties
                .iter()
                .any(|(k, v)| k == FLUSS_OFFSETS_PROPERTY && v == offsets_path) =>
        {
            Published::Yes
        }
        Ok(Some(_)) => Published::No,
        Err(_) => Published::Unknown,
    }
}

/// Steps 1–3: recovery check, fencing heartbeat, prepare. Returns the offsets file path.
async fn prepare(
    ctx: &TieringContext,
    assignment: &Assignment,
    instance: &mut PluginInstance,
    committer: &CommitterHandle,
    completed: &[&SplitResult],
) -> Result<String> {
    failpoints::hit(failpoints::BEFORE_PREPARE).await;
    check_same_table(ctx, assignment).await?;
    let fluss_snapshot = offsets::latest_tiered_offsets(&ctx.admin, &assignment.path)
        .await?
        .snapshot_id;
    if let Some(missing) = instance
        .get_missing_lake_snapshot(committer, fluss_snapshot)
        .await?
    {
        check_missing_snapshot(assignment, fluss_snapshot, &missing)?;
        recover_missing_snapshot(ctx, assignment, &missing).await?;
        return Err(Error::new(
            ErrorKind::Fenced,
            format!(
                "{}: lake snapshot {} was committed by an earlier round but unknown to Fluss (last known {:?}); \
                 registered it, this round's files are discarded and the next round resumes from it",
                assignment.path, missing.snapshot_id, fluss_snapshot
            ),
        ));
    }
    let request = PrepareLakeTableSnapshotRequest {
        bucket_offsets: vec![PbTableOffsets {
            table_id: assignment.table_id,
            table_path: table_path(assignment),
            bucket_offsets: completed
                .iter()
                .map(|r| PbBucketOffset {
                    partition_id: r.range.partition_id,
                    bucket_id: r.range.bucket,
                    log_end_offset: Some(r.end_offset),
                })
                .collect(),
        }],
        ignore_previous_table_offsets: None,
    };
    let response = ctx
        .coordinator
        .prepare_lake_table_snapshot(&request)
        .await?;
    let [entry] = response.prepare_lake_table_resp.as_slice() else {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "PrepareLakeTableSnapshot returned {} entries for one table",
                response.prepare_lake_table_resp.len()
            ),
        ));
    };
    if let Some(code) = entry.error_code.filter(|c| *c != 0) {
        return Err(Error::new(
            ErrorKind::Coordinator,
            format!(
                "PrepareLakeTableSnapshot for {} failed: {}",
                assignment.path,
                entry.error_message.as_deref().unwrap_or("no message")
            ),
        )
        .with_code(code));
    }
    let path = entry.lake_table_offsets_path.clone().ok_or_else(|| {
        Error::new(
            ErrorKind::Protocol,
            "PrepareLakeTableSnapshot returned no offsets path",
        )
    })?;
    // Last checks right before the lake commit: the table must still be the one assigned
    // (a table dropped and recreated under the same name shares its lake location) and the
    // coordinator must still consider the round ours.
    failpoints::hit(failpoints::BEFORE_LAKE_COMMIT).await;
    check_same_table(ctx, assignment).await?;
    confirm_ownership(ctx, assignment).await?;
    Ok(path)
}

/// Fails with [`ErrorKind::Fenced`] when the path now names another table (dropped and
/// recreated) or no table at all.
async fn check_same_table(ctx: &TieringContext, assignment: &Assignment) -> Result<()> {
    current_table_info(ctx, assignment).await.map(|_| ())
}

/// The table's current metadata, provided the path still names the table that was assigned
/// (a table dropped and recreated under the same name has a new id and shares its lake
/// location, so its round must not commit).
pub async fn current_table_info(
    ctx: &TieringContext,
    assignment: &Assignment,
) -> Result<fluss::metadata::TableInfo> {
    let info = ctx
        .admin
        .get_table_info(&assignment.path)
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Fenced,
                format!("{} is gone: {e}", assignment.path),
            )
        })?;
    if info.get_table_id() != assignment.table_id {
        return Err(Error::new(
            ErrorKind::Fenced,
            format!(
                "{} was dropped and recreated during the round (id {} is now {})",
                assignment.path,
                assignment.table_id,
                info.get_table_id()
            ),
        ));
    }
    Ok(info)
}

/// Renews the table's heartbeat alone and checks the coordinator still considers this
/// host's round current; narrows (the server does not fence commits) the window in which a
/// zombie host could commit after losing its round.
pub async fn confirm_ownership(ctx: &TieringContext, assignment: &Assignment) -> Result<()> {
    let request = LakeTieringHeartbeatRequest {
        tiering_tables: vec![PbHeartbeatReqForTable {
            table_id: assignment.table_id,
            coordinator_epoch: assignment.coordinator_epoch,
            tiering_epoch: assignment.tiering_epoch,
            lake_tiering_stats: None,
        }],
        ..Default::default()
    };
    let response = ctx.coordinator.heartbeat(&request).await?;
    if response.coordinator_epoch != assignment.coordinator_epoch {
        return Err(Error::new(
            ErrorKind::Fenced,
            format!(
                "coordinator epoch moved from {} to {} during the round of {}",
                assignment.coordinator_epoch, response.coordinator_epoch, assignment.path
            ),
        ));
    }
    if let Some(err) = response
        .tiering_table_resp
        .iter()
        .find(|r| r.table_id == assignment.table_id)
        .and_then(|r| r.error.as_ref())
    {
        return Err(Error::new(
            if errors::fences_round(err.error_code) {
                ErrorKind::Fenced
            } else {
                ErrorKind::Coordinator
            },
            format!(
                "coordinator no longer accepts the round of {}: {}",
                assignment.path,
                err.error_message.as_deref().unwrap_or("no message")
            ),
        )
        .with_code(err.error_code));
    }
    Ok(())
}

/// A plugin's commit result is checked before anything reaches Fluss: Fluss must never
/// register a snapshot id a lake cannot have.
fn check_commit_result(
    resolved: &ResolvedTable,
    r: wit::CommitResult,
) -> Result<wit::CommitResult> {
    let bad = |why: String| {
        Error::new(
            ErrorKind::Plugin,
            format!(
                "plugin {} returned a malformed commit result: {why}; nothing was registered in Fluss",
                resolved.plugin.describe()
            ),
        )
    };
    if r.snapshot_id < 0 {
        return Err(bad(format!("snapshot id {}", r.snapshot_id)));
    }
    if r.earliest_snapshot_to_keep.is_some_and(|keep| keep < -1) {
        return Err(bad(format!(
            "earliest snapshot to keep {:?}",
            r.earliest_snapshot_to_keep
        )));
    }
    Ok(r)
}

/// A snapshot the plugin says Fluss missed is registered only if it can be one: not the one
/// Fluss knows, carrying an offsets file the coordinator wrote for this very table
/// (`…/<database>/<table>-<table id>/…​.offsets`). A plugin cannot make Fluss adopt offsets
/// of its own making.
fn check_missing_snapshot(
    assignment: &Assignment,
    fluss_snapshot: Option<i64>,
    missing: &wit::CommittedSnapshot,
) -> Result<()> {
    let bad = |why: String| {
        Error::new(
            ErrorKind::Plugin,
            format!(
                "{}: the plugin reported a malformed missing lake snapshot {}: {why}; not registered",
                assignment.path, missing.snapshot_id
            ),
        )
    };
    // Ids are not ordered in every format (Iceberg's are random): only the snapshot Fluss
    // already has, or an impossible id, can be refused on the id alone.
    if missing.snapshot_id < 0 || fluss_snapshot == Some(missing.snapshot_id) {
        return Err(bad(format!(
            "it is not a new snapshot (Fluss has {fluss_snapshot:?})"
        )));
    }
    let table_dir = format!(
        "/{}/{}-{}/",
        assignment.path.database(),
        assignment.path.table(),
        assignment.table_id
    );
    let offsets = missing
        .properties
        .iter()
        .find(|(k, _)| k == FLUSS_OFFSETS_PROPERTY)
        .map(|(_, v)| v.as_str());
    if let Some(path) = offsets
        && !path.trim_start().starts_with('{')
        && (!path.contains(&table_dir) || !path.ends_with(".offsets") || path.contains("/../"))
    {
        return Err(bad(format!(
            "its {FLUSS_OFFSETS_PROPERTY} file {path} is not one the coordinator wrote for this table"
        )));
    }
    Ok(())
}

/// Registers in Fluss a lake snapshot that an earlier round committed to the lake only.
async fn recover_missing_snapshot(
    ctx: &TieringContext,
    assignment: &Assignment,
    missing: &wit::CommittedSnapshot,
) -> Result<()> {
    let path = missing
        .properties
        .iter()
        .find(|(k, _)| k == FLUSS_OFFSETS_PROPERTY)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Plugin,
                format!(
                    "lake snapshot {} of {} was committed by {COMMIT_USER} but has no {FLUSS_OFFSETS_PROPERTY} property",
                    missing.snapshot_id, assignment.path
                ),
            )
        })?;
    if path.trim_start().starts_with('{') {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "lake snapshot {} of {} stores offsets inline (Fluss 0.8 layout); cannot recover it",
                missing.snapshot_id, assignment.path
            ),
        ));
    }
    tracing::warn!(
        table = %assignment.path,
        snapshot = missing.snapshot_id,
        "registering a lake snapshot Fluss missed (a previous round stopped between the lake and Fluss commits)"
    );
    let request = CommitLakeTableSnapshotRequest {
        tables_req: Vec::new(),
        lake_table_snapshot_metadata: vec![PbLakeTableSnapshotMetadata {
            table_id: assignment.table_id,
            snapshot_id: missing.snapshot_id,
            tiered_bucket_offsets_file_path: path,
            readable_bucket_offsets_file_path: None,
            earliest_snapshot_id_to_keep: Some(-1),
        }],
    };
    check_commit_response(
        assignment,
        &ctx.coordinator.commit_lake_table_snapshot(&request).await?,
    )
}

/// Step 5: the V2 snapshot registration plus the per-bucket offsets for the tablet servers.
async fn register_in_fluss(
    ctx: &TieringContext,
    assignment: &Assignment,
    lake: &wit::CommitResult,
    offsets_path: &str,
    completed: &[&SplitResult],
) -> Result<()> {
    let (readable, earliest) = match lake.readable {
        wit::ReadableSnapshot::Committed => (
            Some(offsets_path.to_string()),
            lake.earliest_snapshot_to_keep,
        ),
        wit::ReadableSnapshot::Unknown => {
            (None, Some(lake.earliest_snapshot_to_keep.unwrap_or(-1)))
        }
    };
    let tables_req = if completed.is_empty() {
        Vec::new()
    } else {
        vec![PbLakeTableSnapshotInfo {
            table_id: Some(assignment.table_id),
            snapshot_id: lake.snapshot_id,
            buckets_req: completed
                .iter()
                .map(|r| PbLakeTableOffsetForBucket {
                    partition_id: r.range.partition_id,
                    bucket_id: r.range.bucket,
                    log_end_offset: Some(r.end_offset),
                    max_timestamp: (r.max_timestamp >= 0).then_some(r.max_timestamp),
                })
                .collect(),
            table_path: Some(table_path(assignment)),
        }]
    };
    let request = CommitLakeTableSnapshotRequest {
        tables_req,
        lake_table_snapshot_metadata: vec![PbLakeTableSnapshotMetadata {
            table_id: assignment.table_id,
            snapshot_id: lake.snapshot_id,
            tiered_bucket_offsets_file_path: offsets_path.to_string(),
            readable_bucket_offsets_file_path: readable,
            earliest_snapshot_id_to_keep: earliest,
        }],
    };
    check_commit_response(
        assignment,
        &ctx.coordinator.commit_lake_table_snapshot(&request).await?,
    )
}

fn check_commit_response(
    assignment: &Assignment,
    response: &CommitLakeTableSnapshotResponse,
) -> Result<()> {
    for r in &response.table_resp {
        if let Some(code) = r.error_code.filter(|c| *c != 0) {
            return Err(Error::new(
                ErrorKind::Coordinator,
                format!(
                    "CommitLakeTableSnapshot for {} failed: {}",
                    assignment.path,
                    r.error_message.as_deref().unwrap_or("no message")
                ),
            )
            .with_code(code));
        }
    }
    Ok(())
}

fn table_path(assignment: &Assignment) -> PbTablePath {
    PbTablePath {
        database_name: assignment.path.database().to_string(),
        table_name: assignment.path.table().to_string(),
    }
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
    fn files_of_a_failed_commit_are_deleted_only_when_provably_unpublished() {
        let ours = "file:/remote/lake/fluss/t-1/a.offsets";
        assert_eq!(published(&Ok(None), ours), Published::No);
        assert_eq!(
            published(
                &Ok(Some(snapshot("file:/remote/lake/fluss/t-1/b.offsets"))),
                ours
            ),
            Published::No,
            "another round's snapshot: ours was not published"
        );
        assert_eq!(published(&Ok(Some(snapshot(ours))), ours), Published::Yes);
        let unknown = Err(Error::new(ErrorKind::Plugin, "cannot read snapshots"));
        assert_eq!(
            published(&unknown, ours),
            Published::Unknown,
            "an error is no proof of anything"
        );
    }
}
