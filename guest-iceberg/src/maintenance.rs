//! Table maintenance after a tiering round (the contract's `maintenance` export): snapshot
//! expiry with Iceberg's `history.expire.*` options ([`expire`]). Fluss's Java Iceberg plugin
//! never expires snapshots; this one does when the table asks
//! (`table.datalake.auto-expire-snapshot` or the host's `lake.tiering.auto-expire-snapshot`).
//! Compaction (rewriting small files, merging manifests) is not implemented yet: a request
//! for it is logged and otherwise ignored.

use fluss_lake_guest_sdk::maintenance::nothing_done;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest};
use fluss_lake_guest_sdk::{Result, clock};

use crate::expire;

/// Runs what `request` asks for on the table in `storage`; `plugin_config` overrides the
/// table's properties.
pub fn maintain(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    request: &MaintenanceRequest,
) -> Result<MaintenanceReport> {
    let mut report = nothing_done();
    if request.compact {
        fluss_lake_guest_sdk::debug!(
            "data file compaction and manifest merging are not implemented by this plugin yet"
        );
    }
    if request.expire_snapshots {
        expire::expire(
            storage,
            plugin_config,
            request.keep_since,
            &clock::now_millis,
            request.deadline_millis,
        )?
        .add_to(&mut report);
    }
    Ok(report)
}
