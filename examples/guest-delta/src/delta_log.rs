//! The Delta log: `_delta_log/<version>.json` files (the version as 20 digits), one action
//! per line, version `v + 1` published with put-if-absent so that of two writers racing for
//! it exactly one wins — Delta's mutual exclusion requirement, met by the host's atomic
//! put-if-absent.
//!
//! The table state a writer needs is the newest `protocol` and `metaData`, found by reading
//! commits newest first. This plugin writes no checkpoints and reads none: checkpoints are
//! an optimisation for readers, and the JSON commits they summarise stay in the log until a
//! maintenance job cleans them up (`delta.logRetentionDuration`, 30 days by default, and only
//! once a newer checkpoint exists). If the commits holding the newest metadata were cleaned
//! up, [`table_state`] says so (`unsupported`) instead of guessing. Tables that other tools
//! checkpoint are fine: `*.checkpoint.parquet`, `_last_checkpoint` and `*.crc` files are
//! ignored when listing versions.

use fluss_lake_guest_sdk::commit::{self, Published};
use fluss_lake_guest_sdk::deps::serde_json::{self, Value};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result};

use crate::actions::{Metadata, Protocol};

pub const LOG_DIR: &str = "_delta_log";

/// `_delta_log/00000000000000000042.json`.
pub fn commit_path(version: u64) -> String {
    format!("{LOG_DIR}/{version:020}.json")
}

/// The version a commit file name (without directory) denotes.
pub fn parse_commit_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".json")?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Every committed version, oldest first.
pub fn versions(storage: &dyn Storage) -> Result<Vec<u64>> {
    let mut v: Vec<u64> = storage
        .list(LOG_DIR)?
        .iter()
        .filter_map(|m| {
            let rest = m.path.strip_prefix(LOG_DIR)?.strip_prefix('/')?;
            parse_commit_name(rest)
        })
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// The newest committed version, or `None` when the table does not exist.
pub fn latest(storage: &dyn Storage) -> Result<Option<u64>> {
    Ok(versions(storage)?.last().copied())
}

/// The actions of a commit, in order.
pub fn read_commit(storage: &dyn Storage, version: u64) -> Result<Vec<Value>> {
    let path = commit_path(version);
    let bytes = storage.get(&path)?;
    let text =
        std::str::from_utf8(&bytes).map_err(|_| Error::corrupt(format!("{path} is not UTF-8")))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| Error::corrupt(format!("{path}: {e}"))))
        .collect()
}

/// The body of the first action of kind `kind` (`"commitInfo"`, `"metaData"`, ...).
pub fn find_action<'a>(actions: &'a [Value], kind: &str) -> Option<&'a Value> {
    actions.iter().find_map(|a| a.get(kind))
}

/// Encodes actions as a commit file: one JSON object per line.
pub fn encode_commit(actions: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for a in actions {
        out.push_str(&a.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// Publishes `actions` as `version` unless it exists: `conflict` when another writer
/// committed that version first.
pub fn publish(storage: &dyn Storage, version: u64, actions: &[Value]) -> Result<()> {
    match commit::publish(storage, &commit_path(version), &encode_commit(actions))? {
        Published::Ours => Ok(()),
        Published::Theirs => Err(Error::conflict(format!(
            "Delta version {version} was committed concurrently"
        ))),
    }
}

/// What a writer needs to know of a table at a version.
#[derive(Debug, Clone)]
pub struct TableState {
    pub version: u64,
    pub protocol: Protocol,
    pub metadata: Metadata,
}

/// The newest version with its protocol and metadata, or `None` when the table does not
/// exist.
pub fn table_state(storage: &dyn Storage) -> Result<Option<TableState>> {
    let all = versions(storage)?;
    let Some(&version) = all.last() else {
        return Ok(None);
    };
    let (mut protocol, mut metadata) = (None, None);
    for &v in all.iter().rev() {
        let actions = read_commit(storage, v)?;
        if protocol.is_none()
            && let Some(p) = find_action(&actions, "protocol")
        {
            protocol = Some(Protocol::from_json(p)?);
        }
        if metadata.is_none()
            && let Some(m) = find_action(&actions, "metaData")
        {
            metadata = Some(Metadata::from_json(m)?);
        }
        if let (Some(protocol), Some(metadata)) = (&protocol, &metadata) {
            return Ok(Some(TableState {
                version,
                protocol: protocol.clone(),
                metadata: metadata.clone(),
            }));
        }
    }
    let oldest = all.first().copied().unwrap_or(0);
    Err(if oldest > 0 {
        Error::unsupported(format!(
            "the Delta log's commits before version {oldest} were cleaned up and the table's \
             protocol or metadata is only in a checkpoint; this plugin reads JSON commits only"
        ))
    } else {
        Error::corrupt("the Delta log has no protocol or metaData action")
    })
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::deps::serde_json::json;
    use fluss_lake_guest_sdk::storage::MemoryStorage;

    use fluss_lake_guest_sdk::ErrorKind;

    use super::*;

    #[test]
    fn versions_ignore_checkpoints_and_other_files() {
        let s = MemoryStorage::new();
        assert_eq!(latest(&s).unwrap(), None);
        for p in [
            commit_path(0),
            commit_path(1),
            commit_path(10),
            format!("{LOG_DIR}/00000000000000000010.checkpoint.parquet"),
            format!("{LOG_DIR}/00000000000000000010.crc"),
            format!("{LOG_DIR}/_last_checkpoint"),
            format!("{LOG_DIR}/_commits/00000000000000000011.uuid.json"),
            "part-1.parquet".to_string(),
        ] {
            s.put(&p, b"{}").unwrap();
        }
        assert_eq!(versions(&s).unwrap(), [0, 1, 10]);
        assert_eq!(commit_path(10), "_delta_log/00000000000000000010.json");
    }

    #[test]
    fn publish_is_exclusive_and_read_back_line_by_line() {
        let s = MemoryStorage::new();
        let actions = [
            json!({"commitInfo": {"a": 1}}),
            json!({"add": {"path": "x"}}),
        ];
        publish(&s, 0, &actions).unwrap();
        // The same bytes again are this writer's own version (a retried request that landed);
        // other bytes are another writer's.
        publish(&s, 0, &actions).unwrap();
        assert_eq!(
            publish(&s, 0, &actions[..1]).unwrap_err().kind(),
            ErrorKind::Conflict
        );
        assert_eq!(read_commit(&s, 0).unwrap(), actions);
        assert_eq!(find_action(&actions, "add").unwrap()["path"], json!("x"));
    }

    #[test]
    fn state_after_cleaned_up_log_is_unsupported() {
        let s = MemoryStorage::new();
        publish(&s, 5, &[json!({"commitInfo": {}})]).unwrap();
        assert_eq!(table_state(&s).unwrap_err().kind(), ErrorKind::Unsupported);
    }
}
