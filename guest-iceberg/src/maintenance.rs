//! Table maintenance after a tiering round (the contract's `maintenance` export), in this
//! order within one call:
//! 1. with `compact` (`table.datalake.auto-compaction`): small data files rewritten per Fluss
//!    bucket, deletes applied, as one `replace` snapshot ([`compaction`]); then, if the
//!    current snapshot still lists more than `commit.manifest.min-count-to-merge` manifests,
//!    a `replace` snapshot merging them ([`rewrite_manifests`]). Tiering commits merge
//!    manifests themselves, as Java's `MergeAppend` does ([`merge`](crate::merge)).
//! 2. with `expire_snapshots`: snapshot expiry with Iceberg's `history.expire.*` options
//!    ([`expire`]); the files compaction replaced go when the snapshots still using them
//!    expire.
//!
//! Maintenance snapshots are committed by `__fluss_lake_maintenance`, never by Fluss's tiering
//! user, and carry no `fluss-offsets`: Fluss's recovery keeps reading the last tiering
//! snapshot. Fluss's Java Iceberg plugin never expires snapshots; this one does when the table
//! asks (`table.datalake.auto-expire-snapshot` or the host's `lake.tiering.auto-expire-snapshot`).

use fluss_lake_guest_sdk::maintenance::{Compacted, nothing_done};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest};
use fluss_lake_guest_sdk::{Result, clock};

use crate::{compaction, expire, rewrite_manifests};

/// Runs what `request` asks for on the table in `storage`; `plugin_config` overrides the
/// table's properties. A failed compaction does not keep expiry from running; its error is
/// returned after it.
pub fn maintain(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    request: &MaintenanceRequest,
) -> Result<MaintenanceReport> {
    maintain_at(storage, plugin_config, request, &clock::now_millis)
}

/// [`maintain`] with its clock (tests).
pub fn maintain_at(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    request: &MaintenanceRequest,
    now: &dyn Fn() -> i64,
) -> Result<MaintenanceReport> {
    let mut report = nothing_done();
    let compacted = if request.compact {
        compact(storage, plugin_config, now, request.deadline_millis)
    } else {
        Ok(Compacted::default())
    };
    match &compacted {
        Ok(c) => c.add_to(&mut report),
        Err(e) => fluss_lake_guest_sdk::warn!("compaction failed: {e}"),
    }
    if request.expire_snapshots {
        expire::expire(
            storage,
            plugin_config,
            request.keep_since,
            now,
            request.deadline_millis,
        )?
        .add_to(&mut report);
    }
    compacted.map(|_| report)
}

/// Data files first, then manifests (the rewrite's own commit merges some already).
fn compact(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    now: &dyn Fn() -> i64,
    deadline_millis: i64,
) -> Result<Compacted> {
    let mut done = compaction::compact(storage, plugin_config, now, deadline_millis)?;
    if now() >= deadline_millis {
        done.more_to_do = true;
        return Ok(done);
    }
    if let Some(s) = rewrite_manifests::merge_if_too_many(storage, plugin_config)? {
        done.committed_snapshots.push(s.snapshot_id);
    }
    Ok(done)
}
