//! The Fluss side of a round's commit: the coordinator calls and their messages (Flink keeps
//! these in `FlussTableLakeSnapshotCommitter`, apart from the commit sequence). Each function
//! is one call, turned into a host [`Result`] with the kind a caller decides by; the order
//! of the calls is [`commit`](super::commit)'s business.

use super::context::{Assignment, SplitResult, TieringContext};
use crate::coordinator::api::errors;
use crate::coordinator::proto::*;
use crate::error::{Error, ErrorKind, Result};
use crate::plugin::wit;

/// The table's current metadata, provided the path still names the table that was assigned
/// (a table dropped and recreated under the same name has a new id and shares its lake
/// location, so its round must not commit). A table that no longer exists fences the round;
/// any other failure to read it is a Fluss error, which says nothing about the table.
pub async fn current_table_info(
    ctx: &TieringContext,
    assignment: &Assignment,
) -> Result<fluss::metadata::TableInfo> {
    let info = match ctx.fluss.admin().get_table_info(&assignment.path).await {
        Ok(info) => info,
        Err(e) if e.api_error() == Some(fluss::rpc::FlussError::TableNotExist) => {
            return Err(Error::new(
                ErrorKind::Fenced,
                format!("{} was dropped during the round", assignment.path),
            ));
        }
        Err(e) => {
            return Err(Error::new(
                ErrorKind::Fluss,
                format!("cannot read the table info of {}", assignment.path),
            )
            .with_source(e));
        }
    };
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

/// `PrepareLakeTableSnapshot`: the coordinator writes the offsets file of the completed
/// splits (merged over the table's previous offsets) and returns its path.
pub async fn prepare_offsets(
    ctx: &TieringContext,
    assignment: &Assignment,
    completed: &[&SplitResult],
) -> Result<String> {
    let request = PrepareLakeTableSnapshotRequest {
        bucket_offsets: vec![PbTableOffsets {
            table_id: assignment.table_id,
            table_path: table_path(assignment),
            bucket_offsets: completed
                .iter()
                .map(|r| PbBucketOffset {
                    partition_id: r.range.partition_id,
                    bucket_id: r.range.bucket,
                    log_end_offset: r.end_offset,
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
    check_entry(
        "PrepareLakeTableSnapshot",
        assignment,
        entry.error_code,
        entry.error_message.as_deref(),
    )?;
    entry.lake_table_offsets_path.clone().ok_or_else(|| {
        Error::new(
            ErrorKind::Protocol,
            "PrepareLakeTableSnapshot returned no offsets path",
        )
    })
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

/// Fluss's `LakeCommitResult.KEEP_ALL_PREVIOUS`: as `earliest_snapshot_id_to_keep`, Fluss
/// keeps every snapshot registered before (no snapshot id is negative).
pub const KEEP_ALL_PREVIOUS: i64 = -1;

/// The `earliest_snapshot_id_to_keep` a round's commit registers, in Fluss's encoding: none
/// keeps only the new snapshot, [`KEEP_ALL_PREVIOUS`] every one, an id that one and the
/// newer ones. A commit whose readable snapshot is unknown keeps every previous one unless
/// the plugin named one (Fluss's `LakeCommitResult.unknownReadableSnapshot`). Maintenance
/// reads the same value ([`Keep::of_commit`](super::maintenance::Keep::of_commit)), so it
/// can never delete a snapshot Fluss was just told to keep.
pub fn earliest_snapshot_id_to_keep(lake: &wit::CommitResult) -> Option<i64> {
    match lake.readable {
        wit::ReadableSnapshot::Committed => lake.earliest_snapshot_to_keep,
        wit::ReadableSnapshot::Unknown => {
            Some(lake.earliest_snapshot_to_keep.unwrap_or(KEEP_ALL_PREVIOUS))
        }
    }
}

/// `CommitLakeTableSnapshot` of a round's lake snapshot: the V2 registration plus the
/// per-bucket offsets (`tables_req`), which the coordinator passes on to the tablet servers.
pub async fn register_snapshot(
    ctx: &TieringContext,
    assignment: &Assignment,
    lake: &wit::CommitResult,
    offsets_path: &str,
    completed: &[&SplitResult],
) -> Result<()> {
    let readable = match lake.readable {
        wit::ReadableSnapshot::Committed => Some(offsets_path.to_string()),
        wit::ReadableSnapshot::Unknown => None,
    };
    let earliest = earliest_snapshot_id_to_keep(lake);
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
                    log_end_offset: r.end_offset,
                    max_timestamp: r.max_timestamp,
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

/// `CommitLakeTableSnapshot` of a lake snapshot an earlier round committed to the lake only
/// (its offsets file already verified), keeping every snapshot Fluss registered before.
pub async fn register_recovered_snapshot(
    ctx: &TieringContext,
    assignment: &Assignment,
    snapshot_id: i64,
    offsets_path: &str,
) -> Result<()> {
    let request = CommitLakeTableSnapshotRequest {
        tables_req: Vec::new(),
        lake_table_snapshot_metadata: vec![PbLakeTableSnapshotMetadata {
            table_id: assignment.table_id,
            snapshot_id,
            tiered_bucket_offsets_file_path: offsets_path.to_string(),
            readable_bucket_offsets_file_path: None,
            earliest_snapshot_id_to_keep: Some(KEEP_ALL_PREVIOUS),
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
        check_entry(
            "CommitLakeTableSnapshot",
            assignment,
            r.error_code,
            r.error_message.as_deref(),
        )?;
    }
    Ok(())
}

/// A per-table entry of a response: a non-zero error code is the coordinator refusing.
fn check_entry(
    api: &str,
    assignment: &Assignment,
    error_code: Option<i32>,
    error_message: Option<&str>,
) -> Result<()> {
    match error_code.filter(|c| *c != 0) {
        None => Ok(()),
        Some(code) => Err(Error::new(
            ErrorKind::Coordinator,
            format!(
                "{api} for {} failed: {}",
                assignment.path,
                error_message.unwrap_or("no message")
            ),
        )
        .with_code(code)),
    }
}

fn table_path(assignment: &Assignment) -> PbTablePath {
    PbTablePath {
        database_name: assignment.path.database().to_string(),
        table_name: assignment.path.table().to_string(),
    }
}
