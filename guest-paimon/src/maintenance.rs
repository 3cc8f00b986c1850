//! Table maintenance after a tiering round (the contract's `maintenance` export), as Paimon's
//! own commit does it when a table is not `write-only`: compaction of data files first
//! ([`compact`]: universal compaction of primary-key buckets, small-file compaction of
//! bucketed append tables, one `COMPACT` snapshot per call), then snapshot expiry
//! ([`expire`]), so that expiry can already drop files a compaction replaced once their last
//! snapshot goes. Manifests are merged by every commit, as Paimon's `ManifestFileMerger` does.

use fluss_lake_guest_sdk::maintenance::nothing_done;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest};
use fluss_lake_guest_sdk::{Error, ErrorKind, Result, clock};

use crate::compact;
use crate::expire::{self, Retention};
use crate::schema::load_latest_schema;

/// Runs what `request` asks for on the table in `storage`; `plugin_config` overrides the
/// table's options. A table this plugin does not compact exactly as Paimon would is refused
/// (`unsupported`, nothing touched) — unless expiry was asked for too, which then still runs
/// (the refusal is logged).
pub fn maintain(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    request: &MaintenanceRequest,
) -> Result<MaintenanceReport> {
    let mut report = nothing_done();
    if !request.compact && !request.expire_snapshots {
        return Ok(report);
    }
    let schema = load_latest_schema(storage)?
        .ok_or_else(|| Error::not_found("the Paimon table has no schema"))?;
    if request.compact {
        match compact::compact(
            storage,
            plugin_config,
            &schema,
            &clock::now_millis,
            request.deadline_millis,
        ) {
            Ok(compacted) => {
                fluss_lake_guest_sdk::maintenance::report_over_budget(compacted.over_budget);
                compacted.add_to(&mut report)
            }
            Err(e) if e.kind() == ErrorKind::Unsupported && request.expire_snapshots => {
                fluss_lake_guest_sdk::warn!("{e}");
            }
            Err(e) => return Err(e),
        }
    }
    if !request.expire_snapshots {
        return Ok(report);
    }
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
