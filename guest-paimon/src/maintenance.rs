//! Table maintenance after a tiering round (the contract's `maintenance` export): snapshot
//! expiry as Paimon's own commit does it when a table is not `write-only` ([`expire`]).
//! Manifests are already merged by every commit, as Paimon's `ManifestFileMerger` does.
//! Compaction of data files is not implemented yet: a request for it is logged once per call
//! and otherwise ignored, so the table keeps working as a write-only Paimon table does.

use fluss_lake_guest_sdk::maintenance::nothing_done;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest};
use fluss_lake_guest_sdk::{Error, Result, clock};

use crate::expire::{self, Retention};
use crate::schema::load_latest_schema;

/// Runs what `request` asks for on the table in `storage`; `plugin_config` overrides the
/// table's options.
pub fn maintain(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    request: &MaintenanceRequest,
) -> Result<MaintenanceReport> {
    let mut report = nothing_done();
    if request.compact {
        fluss_lake_guest_sdk::debug!(
            "data file compaction is not implemented by this plugin yet; manifests are merged by every commit"
        );
    }
    if !request.expire_snapshots {
        return Ok(report);
    }
    let schema = load_latest_schema(storage)?
        .ok_or_else(|| Error::not_found("the Paimon table has no schema"))?;
    let retention = Retention::of(plugin_config, &schema)?;
    if let Some(reason) = expire::unsupported_reason(storage, plugin_config, &schema, &retention)? {
        return Err(Error::unsupported(format!(
            "snapshots not expired: {reason}"
        )));
    }
    let expired = expire::expire(
        storage,
        &schema,
        &retention,
        request.keep_since,
        &clock::now_millis,
        request.deadline_millis,
    )?;
    expired.add_to(&mut report);
    Ok(report)
}
