//! Where a bucket's sequence numbers continue (Paimon `FileSystemWriteRestore` +
//! `DataFileMeta.getMaxSequenceNumber`): a writer numbers its records from one above the
//! highest `_MAX_SEQUENCE_NUMBER` among the live files of its partition and bucket in the
//! latest snapshot, so that every round's records win over the records of earlier rounds when
//! readers merge. Only manifests whose bucket range covers the bucket are read.

use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result};

use crate::compact::live_files::live_entries;
use crate::snapshot::{latest_snapshot_id, read_snapshot};

/// The highest sequence number of the live files of `bucket` of `partition` (serialized
/// `BinaryRow`), `-1` when it has none. Fails when those files were written for another
/// bucket count than `total_buckets`, as Paimon refuses to write a rescaled bucket.
pub fn restore_max_sequence_number(
    storage: &dyn Storage,
    partition: &[u8],
    bucket: i32,
    total_buckets: i32,
) -> Result<i64> {
    let Some(id) = latest_snapshot_id(storage)? else {
        return Ok(-1);
    };
    let snapshot = read_snapshot(storage, id)?.ok_or_else(|| {
        Error::conflict(format!(
            "snapshot {id} disappeared while restoring a writer"
        ))
    })?;
    let entries = live_entries(storage, &snapshot, Some(bucket))?;
    let mut max = -1;
    for e in entries.iter().filter(|e| e.partition == partition) {
        if e.total_buckets != total_buckets {
            return Err(Error::invalid_input(format!(
                "bucket {bucket} was written with {} buckets but the table now has {total_buckets}; \
                 Paimon refuses to write a rescaled bucket",
                e.total_buckets
            )));
        }
        max = max.max(e.file.max_sequence_number);
    }
    Ok(max)
}
