//! Snapshot summaries with the counters Java's `SnapshotSummary.Builder` writes: what the
//! snapshot added and removed, and the table's running totals carried from its parent, plus
//! who committed it (`commit-user`).

use crate::manifest::{DataFile, FileContent};
use crate::metadata::Snapshot;

/// Snapshot summary key naming who committed (Java: `commit-user`).
pub const COMMIT_USER: &str = "commit-user";

pub use fluss_lake_guest_sdk::MAINTENANCE_COMMIT_USER;

/// Files, records, bytes and deletes of one side of a change.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    data_files: i64,
    records: i64,
    size: i64,
    eq_files: i64,
    pos_files: i64,
    eq_deletes: i64,
    pos_deletes: i64,
}

impl Counts {
    fn of<'a>(files: impl IntoIterator<Item = &'a DataFile>) -> Counts {
        let mut c = Counts::default();
        for f in files {
            c.size += f.file_size_in_bytes;
            match f.content {
                FileContent::Data => {
                    c.data_files += 1;
                    c.records += f.record_count;
                }
                FileContent::EqualityDeletes => {
                    c.eq_files += 1;
                    c.eq_deletes += f.record_count;
                }
                FileContent::PositionDeletes => {
                    c.pos_files += 1;
                    c.pos_deletes += f.record_count;
                }
            }
        }
        c
    }
}

fn total(parent: Option<&Snapshot>, key: &str) -> i64 {
    parent
        .and_then(|p| p.summary_value(key))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// What a snapshot changes: the files it adds and removes.
#[derive(Debug, Default, Clone, Copy)]
pub struct Change<'a> {
    pub added: &'a [DataFile],
    pub removed: &'a [DataFile],
}

/// The summary of snapshot `operation` making `change` on top of `parent`, committed by
/// `commit_user`; `properties` (Fluss's `fluss-offsets` for tiering) come last and win.
pub fn summary(
    operation: &str,
    change: Change<'_>,
    parent: Option<&Snapshot>,
    commit_user: &str,
    properties: &[(String, String)],
) -> Vec<(String, String)> {
    let added = Counts::of(change.added);
    let removed = Counts::of(change.removed);
    let mut partitions: Vec<(i32, &Vec<_>)> = change
        .added
        .iter()
        .chain(change.removed)
        .map(|f| (f.spec_id, &f.partition))
        .collect();
    partitions.sort();
    partitions.dedup();

    let mut s: Vec<(String, String)> = vec![("operation".into(), operation.into())];
    let mut put = |k: &str, v: i64, always: bool| {
        if always || v != 0 {
            s.push((k.to_string(), v.to_string()));
        }
    };
    put("added-data-files", added.data_files, false);
    put("deleted-data-files", removed.data_files, false);
    put("added-records", added.records, false);
    put("deleted-records", removed.records, false);
    put("added-files-size", added.size, false);
    put("removed-files-size", removed.size, false);
    put(
        "added-delete-files",
        added.eq_files + added.pos_files,
        false,
    );
    put(
        "removed-delete-files",
        removed.eq_files + removed.pos_files,
        false,
    );
    put("added-equality-delete-files", added.eq_files, false);
    put("removed-equality-delete-files", removed.eq_files, false);
    put("added-position-delete-files", added.pos_files, false);
    put("removed-position-delete-files", removed.pos_files, false);
    put("added-equality-deletes", added.eq_deletes, false);
    put("removed-equality-deletes", removed.eq_deletes, false);
    put("added-position-deletes", added.pos_deletes, false);
    put("removed-position-deletes", removed.pos_deletes, false);
    put("changed-partition-count", partitions.len() as i64, true);
    let mut running = |key: &str, delta: i64| {
        put(key, total(parent, key) + delta, true);
    };
    running("total-records", added.records - removed.records);
    running("total-files-size", added.size - removed.size);
    running("total-data-files", added.data_files - removed.data_files);
    running(
        "total-delete-files",
        added.eq_files + added.pos_files - removed.eq_files - removed.pos_files,
    );
    running(
        "total-position-deletes",
        added.pos_deletes - removed.pos_deletes,
    );
    running(
        "total-equality-deletes",
        added.eq_deletes - removed.eq_deletes,
    );
    s.push((COMMIT_USER.into(), commit_user.into()));
    for (k, v) in properties {
        s.retain(|(key, _)| key != k);
        s.push((k.clone(), v.clone()));
    }
    s
}
