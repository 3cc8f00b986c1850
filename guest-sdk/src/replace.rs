//! The buckets a commit replaces (the WIT `bucket-replace` export, contract 0.3.7).
//!
//! The host asks for a replace when a primary-key bucket's changelog lost rows the lake never
//! received (a log gap) and the table accepts gaps: it reads the bucket's latest KV snapshot in
//! full, and the round's files of that bucket must become the bucket's only files. Every format
//! that replaces buckets keeps these rules; a format only edits its own manifests:
//!
//! 1. The files removed are those the bucket holds **in the base each attempt publishes on**,
//!    computed again in every attempt, never once before the first: a compaction published
//!    between two attempts would otherwise survive, and with it keys the gap deleted.
//! 2. Removed files are never deleted by the commit (a reader of an older snapshot may still
//!    read them); snapshot expiry deletes them once no kept snapshot references them.
//! 3. The tiered-base rule of `committer.commit` holds unchanged and is final: a replace must
//!    never publish on a base another round already tiered past.
//! 4. A lost race is retried on the new base, as for any commit (the commit kit's loop).
//! 5. The committable holds only the new files, so that `abort` never touches a removed one.
//! 6. A replaced bucket without new files (every key deleted) still loses its files.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::wit::{BucketRef, TableInfo};

/// One bucket to replace, checked against its table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReplacedBucket {
    /// Fluss partition name (values joined by `$`), none for a non-partitioned table.
    pub partition_name: Option<String>,
    pub bucket: i32,
    /// The bucket count of the bucket's partition.
    pub num_buckets: i32,
}

/// The buckets one commit replaces: primary-key buckets of its table, each named once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplaceSet {
    buckets: Vec<ReplacedBucket>,
}

impl ReplaceSet {
    /// Checks `refs` against `table`: a primary-key table, a partition name exactly when the
    /// table is partitioned, a bucket within its partition's count, no bucket twice.
    pub fn new(table: &TableInfo, refs: &[BucketRef]) -> Result<Self> {
        if table.primary_keys.is_empty() {
            return Err(Error::invalid_input(format!(
                "{}.{} has no primary key: only a primary-key table's buckets are replaced",
                table.path.database, table.path.table
            )));
        }
        let partitioned = !table.partition_keys.is_empty();
        let mut seen = HashSet::new();
        let mut buckets = Vec::with_capacity(refs.len());
        for r in refs {
            if r.partition_name.is_some() != partitioned {
                return Err(Error::invalid_input(format!(
                    "bucket {} to replace {} a partition name, but the table is {}partitioned",
                    r.bucket,
                    if partitioned { "lacks" } else { "has" },
                    if partitioned { "" } else { "not " }
                )));
            }
            if r.num_buckets <= 0 || !(0..r.num_buckets).contains(&r.bucket) {
                return Err(Error::invalid_input(format!(
                    "bucket {} to replace is not one of the partition's {} buckets",
                    r.bucket, r.num_buckets
                )));
            }
            let b = ReplacedBucket {
                partition_name: r.partition_name.clone(),
                bucket: r.bucket,
                num_buckets: r.num_buckets,
            };
            if !seen.insert((b.partition_name.clone(), b.bucket)) {
                return Err(Error::invalid_input(format!(
                    "bucket {}{} to replace is named twice",
                    b.bucket,
                    b.partition_name
                        .as_deref()
                        .map(|p| format!(" of partition {p}"))
                        .unwrap_or_default()
                )));
            }
            buckets.push(b);
        }
        Ok(ReplaceSet { buckets })
    }

    pub fn buckets(&self) -> &[ReplacedBucket] {
        &self.buckets
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pk_table;

    fn r(partition: Option<&str>, bucket: i32, num_buckets: i32) -> BucketRef {
        BucketRef {
            partition_id: partition.map(|_| 7),
            partition_name: partition.map(str::to_string),
            bucket,
            num_buckets,
        }
    }

    #[test]
    fn only_buckets_of_the_table_each_once() {
        let cols = [("id", "INT", false), ("p", "STRING", false)];
        let plain = pk_table("db", "t", &cols, &["id"], 4, &[]);
        let parted = pk_table("db", "t", &cols, &["id", "p"], 4, &["p"]);
        let set = ReplaceSet::new(&plain, &[r(None, 0, 4), r(None, 3, 4)]).unwrap();
        assert_eq!(set.buckets().len(), 2);
        assert!(ReplaceSet::new(&parted, &[r(Some("a"), 1, 2)]).is_ok());
        for (table, refs, says) in [
            (&plain, vec![r(None, 4, 4)], "not one of"),
            (&plain, vec![r(None, -1, 4)], "not one of"),
            (&plain, vec![r(None, 1, 4), r(None, 1, 4)], "named twice"),
            (&plain, vec![r(Some("a"), 1, 4)], "has a partition name"),
            (&parted, vec![r(None, 1, 4)], "lacks a partition name"),
        ] {
            let err = ReplaceSet::new(table, &refs).unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
        let mut log = plain.clone();
        log.primary_keys.clear();
        let err = ReplaceSet::new(&log, &[r(None, 0, 4)]).unwrap_err();
        assert!(err.to_string().contains("no primary key"), "{err}");
    }
}
