//! Table maintenance after a tiering round (the contract's `maintenance` export): version
//! cleanup as Lance's `cleanup_old_versions` does it ([`cleanup`], when the request expires
//! snapshots; Lance versions are the snapshot ids Fluss records) and fragment compaction as
//! Lance's `compact_files` does it ([`compact`], when the request compacts). Cleanup runs
//! first: it frees what compaction left before, and compaction's new version is the latest,
//! which cleanup never removes. Both keep to the request's deadline.

use fluss_lake_guest_sdk::maintenance::nothing_done;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::{MaintenanceReport, MaintenanceRequest};
use fluss_lake_guest_sdk::{Result, clock};

use crate::{cleanup, compact};

/// Runs what `request` asks for on the dataset in `storage`; `plugin_config` overrides the
/// dataset's config (`lance.auto_cleanup.*`, `lance.compaction.*`).
pub fn maintain(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    request: &MaintenanceRequest,
) -> Result<MaintenanceReport> {
    let mut report = nothing_done();
    if request.expire_snapshots {
        cleanup::cleanup(
            storage,
            plugin_config,
            request.keep_since,
            &clock::now_millis,
            request.deadline_millis,
        )?
        .add_to(&mut report);
    }
    if request.compact && clock::now_millis() < request.deadline_millis {
        let done = compact::compact(
            storage,
            plugin_config,
            &clock::now_millis,
            request.deadline_millis,
        )?;
        report.files_compacted += done.files_compacted;
        report.files_written += done.files_written;
        report.bytes_written += done.bytes_written;
        report
            .committed_snapshots
            .extend(done.version.map(|v| v as i64));
        report.more_to_do |= done.more_to_do;
    } else if request.compact {
        report.more_to_do = true;
    }
    Ok(report)
}
