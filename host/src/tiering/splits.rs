//! Split generation, as Flink's `TieringSplitGenerator`: for each bucket (of each partition),
//! tier from the offset the lake already holds — or from the beginning when the bucket was
//! never tiered — up to the high watermark sampled now; a caught-up or empty bucket gets no
//! split.
//!
//! A primary-key bucket never tiered starts, as in Java, from its latest KV snapshot when it has
//! one: the snapshot split reads the snapshot alone and leaves the bucket tiered up to the
//! snapshot's log offset, from where the next round reads the changelog. Without a snapshot it
//! is read from its changelog at offset 0, which replays the same state, as long as the log
//! still starts there; when it does not (Java would silently tier a partial state), that bucket
//! is refused with a clear error until the cluster takes a snapshot, and the table's other
//! buckets are tiered as usual.
//!
//! A bucket already tiered resumes at the lake's offset. When its log no longer starts there
//! (`table.log.ttl` expired rows the lake never received), tiering it on would commit a
//! silent gap: it is refused with an error naming the lost range, unless the table accepts
//! gaps, in which case a log table's bucket goes on from the log start and the gap is kept
//! with the plan for the lake snapshot to record, and a primary-key bucket is rebuilt from
//! its latest KV snapshot (once one holds the bucket up to its log start): a split that
//! reads the snapshot and replaces the bucket's lake files in the round's commit.
//!
//! Splits come out ordered by lag, most behind first, ties in random order: a round that
//! reaches its freshness stops its splits where they are, so a fixed (partition, bucket)
//! order would start the same buckets every round and starve the rest. By lag, the buckets
//! a forced round left behind lead the next one.

use std::collections::HashMap;

use crate::config::OnLogGap;
use crate::error::{Error, ErrorKind};
use crate::fluss::kv_snapshot::SnapshotSource;
use crate::fluss::offsets::TieredOffsets;
use crate::fluss::reader::{BucketRange, EARLIEST_OFFSET, Piece};

/// What split generation knows about one partition (or the whole non-partitioned table).
#[derive(Debug, Clone, Default)]
pub struct PartitionOffsets {
    /// `(id, name)`, none for a non-partitioned table.
    pub partition: Option<(i64, String)>,
    /// The partition's bucket count (the table's, for a non-partitioned table or a partition
    /// created at the table's current count).
    pub buckets: i32,
    /// High watermark per bucket.
    pub latest: HashMap<i32, i64>,
    /// Log start offset per bucket; fetched for primary-key tables, and for log tables whose
    /// reads found the log shorter than the lake expected.
    pub earliest: Option<HashMap<i32, i64>>,
    /// The latest KV snapshot per bucket; only fetched for primary-key tables with a bucket
    /// never tiered or whose log starts past the lake's offset.
    pub kv_snapshots: Option<HashMap<i32, SnapshotSource>>,
}

/// What a round tiers: its splits, most lagging first, and the buckets it cannot tier.
#[derive(Debug, Default)]
pub struct Plan {
    pub splits: Vec<BucketRange>,
    /// Buckets with rows to tier that this host cannot read, with why.
    pub refused: Vec<Error>,
    /// Buckets whose log starts after the lake's offset, refused or accepted.
    pub gaps: Vec<LogGap>,
}

/// A tiered bucket whose log lost the rows from the lake's offset to its log start.
/// Accepted, a log table's bucket skips them and a primary-key bucket is rebuilt from its KV
/// snapshot (its split replaces the bucket in the lake).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogGap {
    pub partition: Option<String>,
    pub bucket: i32,
    /// The offset the lake holds the bucket up to (exclusive).
    pub lake_offset: i64,
    /// Where the log starts now.
    pub log_start: i64,
    /// Tiered on (the table accepts gaps): from `log_start`, or for a primary-key bucket from
    /// a KV snapshot replacing the bucket; not refused.
    pub accepted: bool,
}

impl LogGap {
    /// Records lost to the lake.
    pub fn records(&self) -> u64 {
        u64::try_from(self.log_start - self.lake_offset).unwrap_or(0)
    }
}

impl LogGap {
    /// The error a refused gap is reported with: the bucket, the lost range, and `way_out`.
    pub fn refusal(&self, way_out: &str) -> Error {
        Error::new(
            ErrorKind::LogGap,
            format!(
                "bucket {}{}: the lake holds it up to offset {} but its log now starts at {}; \
                 offsets {}..{} ({} records) are lost to the lake and the bucket is not tiered \
                 ({way_out}; docs/operations.md, \"Log gaps\")",
                self.bucket,
                self.partition
                    .as_ref()
                    .map(|n| format!(" of partition {n}"))
                    .unwrap_or_default(),
                self.lake_offset,
                self.log_start,
                self.lake_offset,
                self.log_start,
                self.records()
            ),
        )
    }
}

/// How the lake snapshot records the gaps a round skipped: `[partition/]bucket:from-to`,
/// comma-separated.
impl std::fmt::Display for LogGap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(p) = &self.partition {
            write!(f, "{p}/")?;
        }
        write!(f, "{}:{}-{}", self.bucket, self.lake_offset, self.log_start)
    }
}

/// What split generation needs to know of the table itself.
#[derive(Debug, Clone, Copy)]
pub struct TableKind {
    pub primary_key: bool,
    pub on_log_gap: OnLogGap,
}

/// Tables whose reads found their log shorter than the lake expected. A log table's round
/// asks Fluss for its buckets' log starts only while it is one of them (a primary-key
/// table's round always does), so the common case costs no extra request; a plan that finds
/// no gap clears it.
#[derive(Debug, Default)]
pub struct LogGapSuspects(std::sync::Mutex<std::collections::HashSet<i64>>);

impl LogGapSuspects {
    fn set(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<i64>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn suspect(&self, table_id: i64) {
        self.set().insert(table_id);
    }

    pub fn is_suspect(&self, table_id: i64) -> bool {
        self.set().contains(&table_id)
    }

    pub fn clear(&self, table_id: i64) {
        self.set().remove(&table_id);
    }
}

/// The table's custom property that overrides `--tiering.on-log-gap` for it.
pub const ON_LOG_GAP_PROPERTY: &str = "lake.tiering.on-log-gap";

impl TableKind {
    /// The table's kind, with its own gap policy if it sets [`ON_LOG_GAP_PROPERTY`].
    pub fn of(
        info: &fluss::metadata::TableInfo,
        host_policy: OnLogGap,
    ) -> crate::error::Result<Self> {
        use clap::ValueEnum;
        let on_log_gap = match info.get_custom_properties().get(ON_LOG_GAP_PROPERTY) {
            None => host_policy,
            Some(v) => OnLogGap::from_str(v.trim(), true).map_err(|_| {
                Error::new(
                    ErrorKind::Config,
                    format!("{}: custom property '{ON_LOG_GAP_PROPERTY}' is '{v}', not 'refuse' or 'accept'", info.table_path),
                )
            })?,
        };
        Ok(Self {
            primary_key: info.has_primary_key(),
            on_log_gap,
        })
    }
}

/// All splits of a round.
pub fn plan(tiered: &TieredOffsets, partitions: &[PartitionOffsets], table: TableKind) -> Plan {
    let mut splits = Vec::new();
    let mut refused = Vec::new();
    let mut gaps = Vec::new();
    for p in partitions {
        let pid = p.partition.as_ref().map(|(id, _)| *id);
        for bucket in 0..p.buckets {
            let Some(&latest) = p.latest.get(&bucket) else {
                continue;
            };
            let committed = tiered.buckets.get(&(pid, bucket)).copied();
            let Some(mut range) = split_for_bucket(pid, bucket, p.buckets, committed, latest)
            else {
                continue;
            };
            range.partition_name = p.partition.as_ref().map(|(_, name)| name.clone());
            let of_partition = || {
                p.partition
                    .as_ref()
                    .map(|(_, n)| format!(" of partition {n}"))
                    .unwrap_or_default()
            };
            let log_start = p
                .earliest
                .as_ref()
                .map(|e| e.get(&bucket).copied().unwrap_or(0));
            if let (Some(lake_offset), Some(log_start)) = (committed, log_start)
                && log_start > lake_offset
            {
                let accepts = table.on_log_gap == OnLogGap::Accept;
                // A primary-key bucket cannot skip changelog rows (a key changed or deleted in
                // the gap would be wrong in the lake): it is rebuilt from a KV snapshot that
                // holds the bucket at least up to its log start, from where its changelog goes
                // on.
                let rebuild_from = p
                    .kv_snapshots
                    .as_ref()
                    .and_then(|s| s.get(&bucket))
                    .filter(|s| s.log_offset >= log_start);
                let accepted = accepts && (!table.primary_key || rebuild_from.is_some());
                let gap = LogGap {
                    partition: range.partition_name.clone(),
                    bucket,
                    lake_offset,
                    log_start,
                    accepted,
                };
                if accepted && let Some(source) = rebuild_from.filter(|_| table.primary_key) {
                    range.snapshot = Some(*source);
                    range.start = EARLIEST_OFFSET;
                    range.stop = source.log_offset;
                    range.replace = true;
                } else if accepted {
                    range.start = log_start;
                } else {
                    let way_out = match (table.primary_key, accepts) {
                        (true, true) => {
                            "it is rebuilt from the cluster's next KV snapshot of it: none holds the bucket up to its log start yet"
                        }
                        (true, false) => {
                            "to rebuild it from the cluster's KV snapshot, set --tiering.on-log-gap accept or the table property 'lake.tiering.on-log-gap'='accept'"
                        }
                        (false, _) => {
                            "to tier it on from the log start, set --tiering.on-log-gap accept or the table property 'lake.tiering.on-log-gap'='accept'"
                        }
                    };
                    refused.push(gap.refusal(way_out));
                }
                gaps.push(gap);
                if !accepted {
                    continue;
                }
            }
            if committed.is_none()
                && let Some(source) = p.kv_snapshots.as_ref().and_then(|s| s.get(&bucket))
            {
                // The changelog must go on from the snapshot's offset: one older than the log
                // start would leave a gap no later round could read.
                if let Some(start) = log_start.filter(|s| source.log_offset < *s) {
                    refused.push(Error::new(
                        ErrorKind::Unavailable,
                        format!(
                            "bucket {bucket}{} was never tiered and its latest KV snapshot ({}, up to offset {}) is older than its changelog, which starts at {start}: \
                             it is tiered from the cluster's next snapshot",
                            of_partition(),
                            source.snapshot_id,
                            source.log_offset
                        ),
                    ));
                    continue;
                }
                range.snapshot = Some(*source);
                range.start = EARLIEST_OFFSET;
                range.stop = source.log_offset;
            } else if committed.is_none()
                && table.primary_key
                && let Some(start) = log_start
            {
                if start > 0 {
                    refused.push(Error::new(
                        ErrorKind::Unavailable,
                        format!(
                            "bucket {bucket}{} was never tiered, its changelog now starts at offset {start} and the cluster has no KV snapshot of it yet: \
                             it is tiered from its first KV snapshot",
                            of_partition()
                        ),
                    ));
                    continue;
                }
                range.start = 0;
            }
            splits.push(range);
        }
    }
    order_by_lag(&mut splits, &std::collections::hash_map::RandomState::new());
    Plan {
        splits,
        refused,
        gaps,
    }
}

/// How far behind a split's bucket is: rows between its start and stop (from 0 when it
/// starts at the earliest offset).
fn lag(range: &BucketRange) -> i64 {
    range.stop - range.start.max(0)
}

/// Most lagging first; equal lags in an order drawn from `ties`.
fn order_by_lag(splits: &mut [BucketRange], ties: &impl std::hash::BuildHasher) {
    splits.sort_by_cached_key(|r| {
        (
            std::cmp::Reverse(lag(r)),
            ties.hash_one((r.partition_id, r.bucket)),
        )
    });
}

/// The split of one bucket, if it has anything to tier.
fn split_for_bucket(
    partition_id: Option<i64>,
    bucket: i32,
    buckets: i32,
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
        partition_name: None,
        bucket,
        buckets,
        start,
        stop: latest,
        snapshot: None,
        replace: false,
        piece: None,
    })
}

/// The fewest records a piece of a bucket holds: below it, a piece's fixed cost (an instance,
/// a file) outweighs the parallelism it buys.
pub const MIN_PIECE_RECORDS: u64 = 256 * 1024;

/// Cuts the largest log-table ranges into consecutive pieces until the round has `writers`
/// ranges (or no range is worth cutting), so that a table with fewer buckets than the host
/// has writers keeps them all busy (Fluss #2915: one split per bucket). Every piece holds at
/// least [`MIN_PIECE_RECORDS`]; a range whose start is not known (`EARLIEST_OFFSET` with no
/// log start in `log_start`) or that reads a KV snapshot is never cut. Pieces of a bucket
/// are written in parallel and committed together, and only the last may stop short.
pub fn cut_into_pieces(
    splits: Vec<BucketRange>,
    log_start: impl Fn(&BucketRange) -> Option<i64>,
    writers: usize,
) -> Vec<BucketRange> {
    if splits.is_empty() || splits.len() >= writers {
        return splits;
    }
    // Known starts, and how many pieces each range gets: one more to the largest piece while
    // the round has fewer than `writers` and that piece would still hold enough records.
    let starts: Vec<Option<i64>> = splits
        .iter()
        .map(|r| match (r.snapshot, r.start) {
            (Some(_), _) => None,
            (None, s) if s >= 0 => Some(s),
            (None, _) => log_start(r).filter(|s| *s >= 0),
        })
        .collect();
    let records =
        |i: usize| starts[i].map_or(0, |s| u64::try_from(splits[i].stop - s).unwrap_or(0));
    let mut pieces = vec![1u64; splits.len()];
    let mut total = splits.len();
    while total < writers {
        let Some(i) = (0..splits.len())
            .filter(|&i| records(i) / (pieces[i] + 1) >= MIN_PIECE_RECORDS)
            .max_by_key(|&i| records(i) / pieces[i])
        else {
            break;
        };
        pieces[i] += 1;
        total += 1;
    }
    let mut out = Vec::with_capacity(total);
    for ((range, start), count) in splits.into_iter().zip(starts).zip(pieces) {
        let Some(start) = start.filter(|_| count > 1) else {
            out.push(range);
            continue;
        };
        let len = range.stop - start;
        let count_i = count as i64;
        for index in 0..count_i {
            out.push(BucketRange {
                start: start + len * index / count_i,
                stop: start + len * (index + 1) / count_i,
                piece: Some(Piece {
                    index: index as u32,
                    count: count as u32,
                }),
                ..range.clone()
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_plan(tiered: &TieredOffsets, partitions: &[PartitionOffsets]) -> Plan {
        plan(tiered, partitions, kind(false, OnLogGap::Refuse))
    }

    fn pk_plan(tiered: &TieredOffsets, partitions: &[PartitionOffsets]) -> Plan {
        plan(tiered, partitions, kind(true, OnLogGap::Refuse))
    }

    fn kind(primary_key: bool, on_log_gap: OnLogGap) -> TableKind {
        TableKind {
            primary_key,
            on_log_gap,
        }
    }

    fn tiered(entries: &[(Option<i64>, i32, i64)]) -> TieredOffsets {
        TieredOffsets {
            snapshot_id: Some(1),
            buckets: entries.iter().map(|(p, b, o)| ((*p, *b), *o)).collect(),
        }
    }

    fn table(latest: &[(i32, i64)], buckets: i32) -> Vec<PartitionOffsets> {
        vec![PartitionOffsets {
            latest: latest.iter().copied().collect(),
            buckets,
            ..Default::default()
        }]
    }

    fn range(bucket: i32, start: i64, stop: i64, buckets: i32) -> BucketRange {
        BucketRange {
            partition_id: None,
            partition_name: None,
            bucket,
            buckets,
            start,
            stop,
            snapshot: None,
            replace: false,
            piece: None,
        }
    }

    #[test]
    fn a_table_with_fewer_buckets_than_writers_is_cut_into_pieces() {
        let big = 4 * MIN_PIECE_RECORDS as i64;
        // One bucket of a table never tiered (its log starts at 100), four writers.
        let never = range(0, EARLIEST_OFFSET, 100 + big, 1);
        let cut = cut_into_pieces(vec![never.clone()], |_| Some(100), 4);
        assert_eq!(cut.len(), 4);
        assert_eq!(cut[0].start, 100);
        assert_eq!(cut[3].stop, 100 + big);
        for (i, w) in cut.windows(2).enumerate() {
            assert_eq!(w[0].stop, w[1].start, "pieces are consecutive");
            assert_eq!(
                w[0].piece,
                Some(Piece {
                    index: i as u32,
                    count: 4
                })
            );
            assert!(!w[0].ends_its_bucket());
        }
        assert!(cut[3].ends_its_bucket());
        // Without a known log start, nothing is cut.
        assert_eq!(cut_into_pieces(vec![never], |_| None, 4).len(), 1);
        // Pieces go to the largest ranges, never below the minimum.
        let small = range(1, 0, MIN_PIECE_RECORDS as i64, 2);
        let large = range(0, 0, big, 2);
        let cut = cut_into_pieces(vec![large, small.clone()], |_| None, 8);
        assert_eq!(cut.iter().filter(|r| r.bucket == 0).count(), 4);
        assert_eq!(
            cut.iter().filter(|r| r.bucket == 1).collect::<Vec<_>>(),
            vec![&small]
        );
        // As many ranges as writers: nothing to cut.
        let two = vec![range(0, 0, big, 2), range(1, 0, big, 2)];
        assert_eq!(cut_into_pieces(two.clone(), |_| None, 2), two);
    }

    #[test]
    fn never_tiered_buckets_start_at_earliest() {
        let splits = log_plan(
            &TieredOffsets::default(),
            &table(&[(0, 10), (1, 0), (2, 5)], 3),
        )
        .splits;
        assert_eq!(
            splits,
            vec![
                range(0, EARLIEST_OFFSET, 10, 3),
                range(2, EARLIEST_OFFSET, 5, 3)
            ]
        );
    }

    #[test]
    fn tiered_buckets_resume_and_caught_up_buckets_are_skipped() {
        let t = tiered(&[(None, 0, 4), (None, 1, 7), (None, 2, 9)]);
        let splits = log_plan(&t, &table(&[(0, 10), (1, 7), (2, 5)], 3)).splits;
        assert_eq!(splits, vec![range(0, 4, 10, 3)]);
    }

    #[test]
    fn partially_tiered_table_mixes_both() {
        let splits = log_plan(&tiered(&[(None, 0, 1)]), &table(&[(0, 3), (1, 3)], 2)).splits;
        assert_eq!(
            splits,
            vec![range(1, EARLIEST_OFFSET, 3, 2), range(0, 1, 3, 2)]
        );
    }

    #[test]
    fn buckets_missing_from_list_offsets_get_no_split() {
        let splits = log_plan(&TieredOffsets::default(), &table(&[(1, 9)], 3)).splits;
        assert_eq!(splits, vec![range(1, EARLIEST_OFFSET, 9, 3)]);
    }

    #[test]
    fn partitions_are_split_per_bucket_with_their_own_offsets() {
        let parts = vec![
            PartitionOffsets {
                partition: Some((11, "2024$eu".into())),
                buckets: 2,
                latest: HashMap::from([(0, 5), (1, 2)]),
                earliest: None,
                kv_snapshots: None,
            },
            PartitionOffsets {
                partition: Some((12, "2024$us".into())),
                buckets: 2,
                latest: HashMap::from([(0, 4), (1, 0)]),
                earliest: None,
                kv_snapshots: None,
            },
        ];
        // partition 11 bucket 0 is caught up; partition 12 was never tiered.
        let splits = log_plan(&tiered(&[(Some(11), 0, 5), (Some(11), 1, 1)]), &parts).splits;
        let got: Vec<_> = splits
            .iter()
            .map(|r| {
                (
                    r.partition_id,
                    r.partition_name.clone().unwrap(),
                    r.bucket,
                    r.start,
                    r.stop,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(12), "2024$us".to_string(), 0, EARLIEST_OFFSET, 4),
                (Some(11), "2024$eu".to_string(), 1, 1, 2),
            ]
        );
    }

    /// A Fluss 1.0 table whose `bucket.num` changed: an older partition keeps its 2 buckets,
    /// a newer one has 4, and each split carries its own partition's count.
    #[test]
    fn partitions_are_split_by_their_own_bucket_counts() {
        let latest = |n: i32| (0..n).map(|b| (b, 10)).collect::<HashMap<_, _>>();
        let parts = vec![
            PartitionOffsets {
                partition: Some((11, "2025".into())),
                buckets: 2,
                latest: latest(4),
                earliest: None,
                kv_snapshots: None,
            },
            PartitionOffsets {
                partition: Some((12, "2026".into())),
                buckets: 4,
                latest: latest(4),
                earliest: None,
                kv_snapshots: None,
            },
        ];
        let mut got: Vec<_> = log_plan(&TieredOffsets::default(), &parts)
            .splits
            .iter()
            .map(|r| (r.partition_id, r.bucket, r.buckets))
            .collect();
        got.sort();
        let want = [
            (11, 0, 2),
            (11, 1, 2),
            (12, 0, 4),
            (12, 1, 4),
            (12, 2, 4),
            (12, 3, 4),
        ];
        assert_eq!(got, want.map(|(p, b, n)| (Some(p), b, n)));
    }

    #[test]
    fn primary_key_buckets_replay_the_whole_changelog_or_are_refused_alone() {
        let mut parts = table(&[(0, 8), (1, 6)], 2);
        parts[0].earliest = Some(HashMap::from([(0, 0), (1, 0)]));
        let p = pk_plan(&tiered(&[(None, 1, 2)]), &parts);
        assert_eq!(p.splits, vec![range(0, 0, 8, 2), range(1, 2, 6, 2)]);
        assert!(p.refused.is_empty());

        // Bucket 0's log no longer starts at 0 and it has no KV snapshot yet: it is refused
        // until it has one, bucket 1 is still tiered.
        parts[0].earliest = Some(HashMap::from([(0, 3), (1, 0)]));
        let p = pk_plan(&TieredOffsets::default(), &parts);
        assert_eq!(p.splits, vec![range(1, 0, 6, 2)]);
        let [err] = p.refused.as_slice() else {
            panic!("{:?}", p.refused)
        };
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        assert!(err.message().contains("bucket 0"), "{err}");
        assert!(err.message().contains("no KV snapshot of it yet"), "{err}");
        // Once tiered, a bucket resumes from the lake whatever the log start is.
        let p = pk_plan(&tiered(&[(None, 0, 5), (None, 1, 6)]), &parts);
        assert!(p.refused.is_empty());
    }

    #[test]
    fn buckets_never_tiered_start_from_their_kv_snapshot() {
        let snapshot = SnapshotSource {
            snapshot_id: 4,
            log_offset: 5,
        };
        let mut parts = table(&[(0, 8), (1, 6)], 2);
        parts[0].earliest = Some(HashMap::from([(0, 3), (1, 0)]));
        parts[0].kv_snapshots = Some(HashMap::from([(0, snapshot)]));
        // Bucket 0 (never tiered) reads its snapshot up to its log offset; bucket 1 (no
        // snapshot, whole log) replays its changelog.
        let p = pk_plan(&TieredOffsets::default(), &parts);
        assert!(p.refused.is_empty(), "{:?}", p.refused);
        let mut from_snapshot = range(0, EARLIEST_OFFSET, 5, 2);
        from_snapshot.snapshot = Some(snapshot);
        assert_eq!(p.splits, vec![range(1, 0, 6, 2), from_snapshot]);
        // A bucket tiered before continues from the lake, snapshot or not.
        let p = pk_plan(&tiered(&[(None, 0, 6), (None, 1, 6)]), &parts);
        assert_eq!(p.splits, vec![range(0, 6, 8, 2)]);
        // A snapshot older than the log start would leave a gap: refused until a newer one.
        parts[0].earliest = Some(HashMap::from([(0, 6), (1, 0)]));
        let p = pk_plan(&TieredOffsets::default(), &parts);
        assert_eq!(p.splits, vec![range(1, 0, 6, 2)]);
        let [err] = p.refused.as_slice() else {
            panic!("{:?}", p.refused)
        };
        assert!(err.message().contains("older than its changelog"), "{err}");
    }

    /// A tiered bucket whose log now starts past the lake's offset is never read from the
    /// log start silently: refused naming the lost range, or (a table that accepts gaps)
    /// tiered from the log start with the gap kept for the lake snapshot (log table) or
    /// rebuilt from a KV snapshot replacing the lake's bucket (primary-key table).
    #[test]
    fn buckets_whose_log_starts_past_the_lake_are_refused_or_skip_the_named_gap() {
        let mut parts = table(&[(0, 90), (1, 50)], 2);
        parts[0].partition = Some((7, "2024".to_string()));
        parts[0].earliest = Some(HashMap::from([(0, 40), (1, 10)]));
        let t = TieredOffsets {
            snapshot_id: Some(1),
            buckets: HashMap::from([((Some(7), 0), 25), ((Some(7), 1), 12)]),
        };
        let mut bucket1 = range(1, 12, 50, 2);
        bucket1.partition_id = Some(7);
        bucket1.partition_name = Some("2024".to_string());

        for primary_key in [false, true] {
            let p = plan(&t, &parts, kind(primary_key, OnLogGap::Refuse));
            assert_eq!(p.splits, vec![bucket1.clone()], "bucket 1 is tiered on");
            let [err] = p.refused.as_slice() else {
                panic!("{:?}", p.refused)
            };
            assert_eq!(err.kind(), ErrorKind::LogGap);
            for part in ["bucket 0 of partition 2024", "25..40 (15 records)"] {
                assert!(err.message().contains(part), "{err}");
            }
            assert_eq!(p.gaps.len(), 1);
            assert!(!p.gaps[0].accepted);
        }

        let p = plan(&t, &parts, kind(false, OnLogGap::Accept));
        assert!(p.refused.is_empty(), "{:?}", p.refused);
        let mut bucket0 = range(0, 40, 90, 2);
        bucket0.partition_id = Some(7);
        bucket0.partition_name = Some("2024".to_string());
        assert_eq!(p.splits, vec![bucket0, bucket1.clone()]);
        assert_eq!(p.gaps[0].to_string(), "2024/0:25-40");
        assert!(p.gaps[0].accepted);
        assert_eq!(p.gaps[0].records(), 15);

        // A primary-key table's changelog cannot skip rows: accepted, the bucket is rebuilt
        // from a KV snapshot holding it up to its log start at least, replacing the lake's
        // bucket; until the cluster has one, it is refused.
        let p = plan(&t, &parts, kind(true, OnLogGap::Accept));
        assert_eq!(p.splits, vec![bucket1.clone()]);
        assert_eq!(p.refused[0].kind(), ErrorKind::LogGap);
        assert!(
            p.refused[0].message().contains("next KV snapshot"),
            "{}",
            p.refused[0]
        );
        assert!(!p.gaps[0].accepted);
        for (snapshot_offset, rebuilt) in [(39, false), (40, true), (70, true)] {
            let source = SnapshotSource {
                snapshot_id: 3,
                log_offset: snapshot_offset,
            };
            parts[0].kv_snapshots = Some(HashMap::from([(0, source), (1, source)]));
            let p = plan(&t, &parts, kind(true, OnLogGap::Accept));
            assert_eq!(p.gaps[0].accepted, rebuilt);
            if rebuilt {
                let mut bucket0 = range(0, EARLIEST_OFFSET, snapshot_offset, 2);
                bucket0.partition_id = Some(7);
                bucket0.partition_name = Some("2024".to_string());
                bucket0.snapshot = Some(source);
                bucket0.replace = true;
                assert!(p.refused.is_empty(), "{:?}", p.refused);
                // Bucket 1 (no gap) goes on from the lake's offset, not from the snapshot.
                assert_eq!(p.splits, vec![bucket0, bucket1.clone()]);
            } else {
                assert_eq!(p.splits, vec![bucket1.clone()]);
                assert_eq!(p.refused.len(), 1);
            }
            // Refused by policy, snapshot or not.
            let p = plan(&t, &parts, kind(true, OnLogGap::Refuse));
            assert!(
                p.refused[0]
                    .message()
                    .contains("to rebuild it from the cluster's KV snapshot")
            );
        }
        parts[0].kv_snapshots = None;
        // A bucket never tiered has no lake offset, so no gap: a log table starts at the log
        // start, as in Java.
        let p = plan(
            &TieredOffsets::default(),
            &parts,
            kind(false, OnLogGap::Refuse),
        );
        assert!(p.gaps.is_empty() && p.refused.is_empty());
        assert!(p.splits.iter().all(|r| r.start == EARLIEST_OFFSET));
    }

    #[test]
    fn splits_are_ordered_most_lagging_first() {
        let t = tiered(&[(None, 0, 90), (None, 1, 10), (None, 2, 50)]);
        let p = log_plan(&t, &table(&[(0, 100), (1, 100), (2, 100), (3, 30)], 4));
        let order: Vec<i32> = p.splits.iter().map(|r| r.bucket).collect();
        assert_eq!(order, vec![1, 2, 3, 0]);
    }

    /// Rounds that only ever get through the first few splits before their freshness still
    /// move every bucket forward over a few rounds (in fixed bucket order, buckets 3.. would
    /// never move).
    #[test]
    fn force_finished_rounds_do_not_starve_any_bucket() {
        let buckets = 12;
        let mut t = TieredOffsets::default();
        for b in 0..buckets {
            t.buckets.insert((None, b), 0);
        }
        let mut high_watermark = 1_000;
        for _round in 0..8 {
            high_watermark += 100;
            let latest: Vec<(i32, i64)> = (0..buckets).map(|b| (b, high_watermark)).collect();
            let p = log_plan(&t, &table(&latest, buckets));
            // Only three splits start before the round reaches its freshness, each getting
            // through 400 offsets.
            for r in p.splits.iter().take(3) {
                t.buckets.insert((None, r.bucket), r.start + 400);
            }
        }
        for b in 0..buckets {
            assert!(t.buckets[&(None, b)] > 0, "bucket {b} never moved: {t:?}");
        }
    }
}
