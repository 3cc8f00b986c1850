//! Split generation, exactly as Flink's `TieringSplitGenerator` for log tables: for each
//! bucket, tier from the offset the lake already holds (or from the earliest offset when
//! the bucket was never tiered) up to the high watermark sampled now; a caught-up or empty
//! bucket gets no split.

use std::collections::HashMap;

use crate::fluss::offsets::TieredOffsets;
use crate::fluss::reader::{BucketRange, EARLIEST_OFFSET};

/// The splits of a non-partitioned table, in bucket order.
pub fn log_table_splits(
    tiered: &TieredOffsets,
    high_watermarks: &HashMap<i32, i64>,
    num_buckets: i32,
) -> Vec<BucketRange> {
    (0..num_buckets)
        .filter_map(|bucket| {
            let latest = *high_watermarks.get(&bucket)?;
            split_for_bucket(
                None,
                bucket,
                tiered.buckets.get(&(None, bucket)).copied(),
                latest,
            )
        })
        .collect()
}

/// The split of one bucket, if it has anything to tier.
pub fn split_for_bucket(
    partition_id: Option<i64>,
    bucket: i32,
    committed: Option<i64>,
    latest: i64,
) -> Option<BucketRange> {
    if latest <= 0 {
        return None;
    }
    let start = match committed {
        None => EARLIEST_OFFSET,
        Some(c) if c < latest => c,
        Some(_) => return None,
    };
    Some(BucketRange {
        partition_id,
        bucket,
        start,
        stop: latest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiered(entries: &[(i32, i64)]) -> TieredOffsets {
        TieredOffsets {
            snapshot_id: Some(1),
            buckets: entries.iter().map(|(b, o)| ((None, *b), *o)).collect(),
        }
    }

    #[test]
    fn never_tiered_buckets_start_at_earliest() {
        let hw = HashMap::from([(0, 10), (1, 0), (2, 5)]);
        let splits = log_table_splits(&TieredOffsets::default(), &hw, 3);
        assert_eq!(
            splits,
            vec![
                BucketRange {
                    partition_id: None,
                    bucket: 0,
                    start: EARLIEST_OFFSET,
                    stop: 10
                },
                BucketRange {
                    partition_id: None,
                    bucket: 2,
                    start: EARLIEST_OFFSET,
                    stop: 5
                },
            ]
        );
    }

    #[test]
    fn tiered_buckets_resume_and_caught_up_buckets_are_skipped() {
        let hw = HashMap::from([(0, 10), (1, 7), (2, 5)]);
        let splits = log_table_splits(&tiered(&[(0, 4), (1, 7), (2, 9)]), &hw, 3);
        assert_eq!(
            splits,
            vec![BucketRange {
                partition_id: None,
                bucket: 0,
                start: 4,
                stop: 10
            }]
        );
    }

    #[test]
    fn partially_tiered_table_mixes_both() {
        // bucket 1 was never tiered (absent from the snapshot), bucket 0 was.
        let hw = HashMap::from([(0, 3), (1, 3)]);
        let splits = log_table_splits(&tiered(&[(0, 1)]), &hw, 2);
        assert_eq!(splits[0].start, 1);
        assert_eq!(splits[1].start, EARLIEST_OFFSET);
    }

    #[test]
    fn buckets_missing_from_list_offsets_get_no_split() {
        let splits = log_table_splits(&TieredOffsets::default(), &HashMap::from([(1, 9)]), 3);
        assert_eq!(splits.len(), 1);
        assert_eq!(splits[0].bucket, 1);
    }
}
