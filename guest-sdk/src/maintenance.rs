//! What every format's table maintenance shares: the outcome of a snapshot expiry, of a
//! compaction, and the report the contract's `maintenance.maintain` returns.

use crate::wit::MaintenanceReport;

/// What one snapshot expiry did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Expired {
    /// Snapshots removed from the table.
    pub snapshots: u64,
    /// Files deleted and their bytes (as far as the metadata records sizes).
    pub files_deleted: u64,
    pub bytes_deleted: u64,
    /// The deadline or the per-call limit left expirable snapshots for a later call.
    pub more_to_do: bool,
}

impl Expired {
    /// Adds this expiry to `report`.
    pub fn add_to(&self, report: &mut MaintenanceReport) {
        report.snapshots_expired += self.snapshots;
        report.files_deleted += self.files_deleted;
        report.bytes_deleted += self.bytes_deleted;
        report.more_to_do |= self.more_to_do;
    }
}

/// What one compaction (data files rewritten, manifests merged) did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Compacted {
    /// Data files replaced, and the files that replaced them with their bytes.
    pub files_compacted: u64,
    pub files_written: u64,
    pub bytes_written: u64,
    /// Snapshots (versions) the compaction committed, oldest first.
    pub committed_snapshots: Vec<i64>,
    /// The deadline or the per-call input bound left compactable files for a later call.
    pub more_to_do: bool,
    /// Parts of the table (Paimon: buckets) whose due compaction does not fit even a whole
    /// call's input budget, so that no later call does it either: [`report_over_budget`]
    /// tells the host.
    pub over_budget: u32,
}

impl Compacted {
    /// Adds this compaction to `report`.
    pub fn add_to(&self, report: &mut MaintenanceReport) {
        report.files_compacted += self.files_compacted;
        report.files_written += self.files_written;
        report.bytes_written += self.bytes_written;
        report
            .committed_snapshots
            .extend_from_slice(&self.committed_snapshots);
        report.more_to_do |= self.more_to_do;
    }
}

/// Tells the host how many parts of the table have due compaction work that does not fit the
/// call's input budget (the contract's `maintenance-status.over-budget`), for its metrics; the
/// last value of a `maintain` call counts. Natively there is no host: nothing happens.
pub fn report_over_budget(parts: u32) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::fluss::lake::maintenance_status::over_budget(parts);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = parts;
}

/// A maintenance report of a call that did nothing, for plugins to fill in.
pub fn nothing_done() -> MaintenanceReport {
    MaintenanceReport {
        snapshots_expired: 0,
        files_deleted: 0,
        bytes_deleted: 0,
        files_compacted: 0,
        files_written: 0,
        bytes_written: 0,
        committed_snapshots: Vec::new(),
        more_to_do: false,
    }
}
