//! Lake snapshots Fluss missed: a previous round committed to the lake and stopped before
//! registering in Fluss, so the next round registers that snapshot first.
//!
//! The claim comes from the plugin, which is not trusted: registering a snapshot moves
//! Fluss's tiered offsets to whatever its `fluss-offsets` file says. So the host accepts
//! only an offsets file that the coordinator itself wrote for this very table — its exact
//! path `<remote.data.dir>/lake/<database>/<table>-<table id>/metadata/<uuid>.offsets`, with
//! `remote.data.dir` taken from the cluster's configuration — that still exists, names this
//! table, and does not move any bucket back from what Fluss already holds. The host also
//! deletes the offsets file of every round it aborted after preparing it, so such a path
//! cannot be replayed later, by this host or another.

use std::collections::HashMap;

use super::FLUSS_OFFSETS_PROPERTY;
use super::context::Assignment;
use crate::error::{Error, ErrorKind, Result};
use crate::fluss::cluster_config::ClusterConfig;
use crate::fluss::offsets::TieredOffsets;
use crate::fluss::remote_dir::{RemotePath, RemoteStorage};
use crate::plugin::wit;

/// Largest offsets file read: a table with 100 000 buckets still fits.
const MAX_OFFSETS_FILE_BYTES: u64 = 16 << 20;

/// Checks the missing snapshot the plugin reported and returns the offsets file to register
/// it with; see the module documentation for what is checked.
pub async fn verify_missing_snapshot(
    assignment: &Assignment,
    storage: &RemoteStorage,
    cluster: &ClusterConfig,
    fluss: &TieredOffsets,
    missing: &wit::CommittedSnapshot,
) -> Result<String> {
    let bad = |why: String| {
        Error::new(
            ErrorKind::Plugin,
            format!(
                "{}: the plugin reported a lake snapshot {} Fluss missed, but {why}; not registered",
                assignment.path, missing.snapshot_id
            ),
        )
    };
    // Ids are not ordered in every format (Iceberg's are random): only the snapshot Fluss
    // already has, or an impossible id, can be refused on the id alone.
    if missing.snapshot_id < 0 || fluss.snapshot_id == Some(missing.snapshot_id) {
        return Err(bad(format!(
            "it is not a new snapshot (Fluss has {:?})",
            fluss.snapshot_id
        )));
    }
    let path = missing
        .properties
        .iter()
        .find(|(k, _)| k == FLUSS_OFFSETS_PROPERTY)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| bad(format!("it has no {FLUSS_OFFSETS_PROPERTY} property")))?;
    if path.trim_start().starts_with('{') {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "lake snapshot {} of {} stores offsets inline (Fluss 0.8 layout); cannot recover it",
                missing.snapshot_id, assignment.path
            ),
        ));
    }
    let remote = cluster.remote_data_dir.as_deref().ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            format!(
                "{}: lake snapshot {} is unknown to Fluss, but the cluster does not report its remote.data.dir, \
                 so its offsets file cannot be verified; give the host --fluss.remote.data.dir",
                assignment.path, missing.snapshot_id
            ),
        )
    })?;
    let file = check_offsets_path(assignment, remote, &path).map_err(bad)?;
    // A missing (or oversized) file refutes the snapshot's claim; a store that fails or
    // cannot be reached fails the round (retried), not the claim.
    let offsets = match storage.read(&file, MAX_OFFSETS_FILE_BYTES).await {
        Ok(bytes) => parse_offsets(&bytes, assignment.table_id),
        Err(e) if matches!(e.kind(), ErrorKind::Storage | ErrorKind::NotFound) => {
            Err(e.message().to_string())
        }
        Err(e) => {
            return Err(e.context(format!(
                "{}: the offsets file {path} of lake snapshot {}",
                assignment.path, missing.snapshot_id
            )));
        }
    };
    let offsets = offsets.map_err(|why| bad(format!("its offsets file {path} {why}")))?;
    check_not_behind(fluss, &offsets)
        .map_err(|why| bad(format!("its offsets file {path} {why}")))?;
    Ok(path)
}

/// The offsets file must be exactly `<remote>/lake/<db>/<table>-<id>/metadata/<uuid>.offsets`.
/// One of an earlier table of the same name (another id) is named as such: the lake table
/// holds a snapshot committed for a dropped table, which only its owner can resolve.
fn check_offsets_path(
    assignment: &Assignment,
    remote: &str,
    path: &str,
) -> std::result::Result<RemotePath, String> {
    let remote =
        RemotePath::parse(remote).ok_or("the cluster's remote.data.dir cannot be parsed")?;
    let file = RemotePath::parse(path).ok_or("its offsets path is not a plain absolute path")?;
    let mut expected = remote.segments.clone();
    expected.extend([
        "lake".to_string(),
        assignment.path.database().to_string(),
        format!("{}-{}", assignment.path.table(), assignment.table_id),
        "metadata".to_string(),
    ]);
    let name = file.segments.last().map(String::as_str).unwrap_or_default();
    let uuid = name.strip_suffix(".offsets").unwrap_or_default();
    if file.root != remote.root
        || file.segments.len() != expected.len() + 1
        || file.segments[..expected.len()] != expected[..]
        || uuid.is_empty()
        || !uuid.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
    {
        let dir = file
            .segments
            .len()
            .checked_sub(3)
            .map(|i| &file.segments[i]);
        let earlier = dir
            .and_then(|d| d.strip_prefix(&format!("{}-", assignment.path.table())))
            .and_then(|id| id.parse::<i64>().ok())
            .filter(|id| *id != assignment.table_id && file.root == remote.root);
        return Err(match earlier {
            Some(id) => format!(
                "it was committed for an earlier Fluss table of this name (table id {id}; this one \
                 is {}): the lake table still holds a dropped table's snapshot (a commit that \
                 landed after its files were deleted?). Drop the lake table and delete its files; \
                 the next round creates it again",
                assignment.table_id
            ),
            None => "its offsets file is not one the coordinator wrote for this table".to_string(),
        });
    }
    Ok(file)
}

/// Reads an offsets file (`TableBucketOffsetsJsonSerde`): bucket → offset, `-1` entries
/// left out.
fn parse_offsets(
    bytes: &[u8],
    table_id: i64,
) -> std::result::Result<HashMap<(Option<i64>, i32), i64>, String> {
    let json: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("is not JSON: {e}"))?;
    if json.get("table_id").and_then(|v| v.as_i64()) != Some(table_id) {
        return Err(format!("is not for table id {table_id}"));
    }
    let mut out = HashMap::new();
    let mut add = |partition: Option<i64>, offsets: &serde_json::Value| {
        let offsets = offsets.as_array().ok_or("has no bucket offsets")?;
        for (bucket, offset) in offsets.iter().enumerate() {
            let offset = offset.as_i64().ok_or("has a non-integer offset")?;
            if offset >= 0 {
                out.insert((partition, bucket as i32), offset);
            }
        }
        Ok::<_, String>(())
    };
    if let Some(buckets) = json.get("bucket_offsets") {
        add(None, buckets)?;
    } else if let Some(partitions) = json.get("partition_offsets").and_then(|p| p.as_array()) {
        for p in partitions {
            let id = p
                .get("partition_id")
                .and_then(|v| v.as_i64())
                .ok_or("has a partition without id")?;
            add(
                Some(id),
                p.get("bucket_offsets").unwrap_or(&serde_json::Value::Null),
            )?;
        }
    } else {
        return Err("has no bucket offsets".into());
    }
    Ok(out)
}

/// Registering the file must not move any bucket back from what Fluss holds: that would
/// tier rows the lake already has again.
fn check_not_behind(
    fluss: &TieredOffsets,
    file: &HashMap<(Option<i64>, i32), i64>,
) -> std::result::Result<(), String> {
    let mut buckets: Vec<_> = fluss.buckets.iter().collect();
    buckets.sort();
    for (&(partition, bucket), &held) in buckets {
        match file.get(&(partition, bucket)) {
            Some(&offset) if offset >= held => {}
            other => {
                return Err(format!(
                    "would move bucket {bucket}{} back from offset {held} to {other:?}",
                    partition
                        .map(|p| format!(" of partition {p}"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    Ok(())
}

/// Deletes the offsets file of a round that prepared it and then aborted, so that the path
/// can never be registered later (a plugin replaying it as a snapshot Fluss "missed"). On
/// object storage it is deleted with the credentials the cluster hands out. Best effort: a
/// file left behind is still refused by nothing but this deletion, so a failure is logged.
pub async fn discard_offsets_file(storage: &RemoteStorage, path: &str) {
    let Some(file) = RemotePath::parse(path) else {
        return;
    };
    match storage.delete(&file).await {
        Ok(()) => tracing::debug!(path, "deleted the offsets file of an aborted round"),
        Err(e) => tracing::warn!(
            path,
            "cannot delete the offsets file of an aborted round: {}",
            e.message()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment() -> Assignment {
        Assignment {
            table_id: 7,
            path: fluss::metadata::TablePath::new("fluss".to_string(), "orders".to_string()),
            tiering_epoch: 1,
            coordinator_epoch: 1,
        }
    }

    const UUID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    #[test]
    fn only_the_coordinators_own_offsets_path_for_the_table_is_accepted() {
        let a = assignment();
        let ok = format!("file:/data/remote/lake/fluss/orders-7/metadata/{UUID}.offsets");
        assert!(check_offsets_path(&a, "/data/remote", &ok).is_ok());
        assert!(check_offsets_path(&a, "file:///data/remote/", &ok).is_ok());
        let s3 = format!("s3://bucket/remote/lake/fluss/orders-7/metadata/{UUID}.offsets");
        assert!(check_offsets_path(&a, "s3://bucket/remote", &s3).is_ok());
        for bad in [
            // Written by the plugin inside its own table.
            format!("/wh/fluss.db/orders/x/lake/fluss/orders-7/metadata/{UUID}.offsets"),
            // Another table, or the same name with another id.
            format!("/data/remote/lake/fluss/orders_v2-7/metadata/{UUID}.offsets"),
            format!("/data/remote/lake/fluss/orders-8/metadata/{UUID}.offsets"),
            // Escapes and extra folders.
            format!(
                "/data/remote/lake/fluss/orders-7/metadata/../../orders-7/metadata/{UUID}.offsets"
            ),
            format!("/data/remote/lake/fluss/orders-7/metadata/x/{UUID}.offsets"),
            format!("/data/remote//lake/fluss/orders-7/metadata/{UUID}.offsets"),
            // Another filesystem, a relative path, a file that is no offsets file.
            format!("s3://other/data/remote/lake/fluss/orders-7/metadata/{UUID}.offsets"),
            format!("data/remote/lake/fluss/orders-7/metadata/{UUID}.offsets"),
            "/data/remote/lake/fluss/orders-7/metadata/passwd".to_string(),
            "/data/remote/lake/fluss/orders-7/metadata/.offsets".to_string(),
        ] {
            assert!(
                check_offsets_path(&a, "/data/remote", &bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_earlier_table_of_the_same_name_is_named() {
        let a = assignment();
        let earlier = format!("/data/remote/lake/fluss/orders-5/metadata/{UUID}.offsets");
        let why = check_offsets_path(&a, "/data/remote", &earlier).unwrap_err();
        assert!(
            why.contains("earlier Fluss table of this name (table id 5; this one is 7)"),
            "{why}"
        );
        let other = format!("/data/remote/lake/fluss/orders_v2-5/metadata/{UUID}.offsets");
        let why = check_offsets_path(&a, "/data/remote", &other).unwrap_err();
        assert_eq!(
            why,
            "its offsets file is not one the coordinator wrote for this table"
        );
    }

    #[test]
    fn offsets_files_parse_and_may_not_go_back() {
        let file = parse_offsets(
            br#"{"version":1,"table_id":7,"bucket_offsets":[10,-1,30]}"#,
            7,
        )
        .unwrap();
        assert_eq!(file.len(), 2);
        assert!(parse_offsets(br#"{"version":1,"table_id":8,"bucket_offsets":[1]}"#, 7).is_err());
        let parts = parse_offsets(
            br#"{"version":1,"table_id":7,"partition_offsets":[{"partition_id":3,"bucket_offsets":[5]}]}"#,
            7,
        )
        .unwrap();
        assert_eq!(parts.get(&(Some(3), 0)), Some(&5));

        let mut fluss = TieredOffsets::default();
        fluss.buckets.insert((None, 0), 10);
        assert!(check_not_behind(&fluss, &file).is_ok());
        fluss.buckets.insert((None, 2), 31);
        let e = check_not_behind(&fluss, &file).unwrap_err();
        assert!(e.contains("bucket 2 back from offset 31"), "{e}");
        fluss.buckets.remove(&(None, 2));
        fluss.buckets.insert((None, 1), 1);
        assert!(
            check_not_behind(&fluss, &file).is_err(),
            "a bucket the file lacks"
        );
    }
}
