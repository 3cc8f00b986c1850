//! The rounds this host has in flight, kept on disk so that a restarted host can hand them
//! back at once.
//!
//! After a crash the coordinator still believes the dead host is tiering its tables and
//! only re-queues them when their heartbeats time out (a fixed 120 s). A restarted host
//! reads this journal and reports those rounds failed in its first heartbeat, so their
//! tables are re-queued immediately. A lock on the state directory keeps two hosts from
//! sharing (and stealing each other's) journal.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub table_id: i64,
    pub coordinator_epoch: i32,
    pub tiering_epoch: i64,
}

pub struct Journal {
    path: PathBuf,
    entries: Vec<JournalEntry>,
    /// Held for the host's lifetime: the directory's exclusive lock.
    _lock: File,
}

impl Journal {
    /// Opens (and locks) the journal in `dir`, returning it with the entries a previous
    /// process left behind.
    pub fn open(dir: &Path) -> Result<(Self, Vec<JournalEntry>)> {
        let io = |what: &str, e: std::io::Error| {
            Error::new(
                ErrorKind::Config,
                format!("state directory {}: {what}", dir.display()),
            )
            .with_source(e)
        };
        std::fs::create_dir_all(dir).map_err(|e| io("cannot create", e))?;
        let lock =
            File::create(dir.join("lock")).map_err(|e| io("cannot create the lock file", e))?;
        lock.try_lock().map_err(|_| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "state directory {} is in use by another fluss-lake-host; give each host its own --state-dir",
                    dir.display()
                ),
            )
        })?;
        let path = dir.join("in-flight.json");
        let leftover = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!("ignoring unreadable {}: {e}", path.display());
                Vec::new()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io("cannot read in-flight.json", e)),
        };
        let journal = Self {
            path,
            entries: Vec::new(),
            _lock: lock,
        };
        journal.persist();
        Ok((journal, leftover))
    }

    pub fn add(&mut self, entry: JournalEntry) {
        self.entries.retain(|e| e.table_id != entry.table_id);
        self.entries.push(entry);
        self.persist();
    }

    pub fn remove(&mut self, table_id: i64) {
        self.entries.retain(|e| e.table_id != table_id);
        self.persist();
    }

    /// Rewrites the file atomically; a failure only costs the fast hand-back after a crash.
    fn persist(&self) {
        let tmp = self.path.with_extension("json.tmp");
        let result = serde_json::to_vec(&self.entries)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = result {
            tracing::warn!("cannot write {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftover_entries_survive_a_crash_and_the_directory_is_exclusive() {
        let dir = std::env::temp_dir().join(format!("journal-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let entry = JournalEntry {
            table_id: 7,
            coordinator_epoch: 0,
            tiering_epoch: 3,
        };
        {
            let (mut j, leftover) = Journal::open(&dir).unwrap();
            assert!(leftover.is_empty());
            j.add(entry.clone());
            j.add(JournalEntry {
                table_id: 8,
                ..entry.clone()
            });
            j.remove(8);
            assert!(
                Journal::open(&dir).is_err(),
                "a second host must not share the directory"
            );
            // dropped without removing table 7: as if the process died mid-round
        }
        let (_j, leftover) = Journal::open(&dir).unwrap();
        assert_eq!(leftover, vec![entry]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
