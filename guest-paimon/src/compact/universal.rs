//! Which sorted runs of a primary-key bucket to compact, as Paimon 1.3's
//! `UniversalCompaction` picks them (wrapped in `ForceUpLevel0Compaction` when
//! `compaction.force-up-level-0` or `force-lookup` is set).
//!
//! Runs come newest first: each level-0 file is a run of its own, then each non-empty level
//! from 1 up is one run. A pick is the first `runs` runs and the level to write them to.

use super::options::CompactionOptions;

/// A sorted run as the picking sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelRun {
    /// Its level.
    pub level: usize,
    /// Bytes of its files.
    pub size: u64,
}

/// The runs picked for one compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    /// How many runs, from the newest.
    pub runs: usize,
    /// The level the result is written to.
    pub output_level: usize,
}

/// Picks a compaction among `runs` of a bucket with `num_levels` levels, or none.
pub fn pick(options: &CompactionOptions, num_levels: usize, runs: &[LevelRun]) -> Option<Pick> {
    let max_level = num_levels - 1;
    let universal = || {
        // `FullCompactTrigger` with only a total size threshold (the interval is refused).
        if let Some(threshold) = options.total_size_threshold
            && runs.len() > 1
            && total(runs) < threshold
        {
            return Some(Pick {
                runs: runs.len(),
                output_level: max_level,
            });
        }
        if let Some(unit) = pick_for_size_amplification(options, max_level, runs) {
            return Some(unit);
        }
        if runs.len() >= options.sorted_run_trigger
            && let Some(unit) = pick_for_size_ratio(options, max_level, runs, 1, false)
        {
            return Some(unit);
        }
        if runs.len() > options.sorted_run_trigger {
            let candidates = runs.len() - options.sorted_run_trigger + 1;
            return pick_for_size_ratio(options, max_level, runs, candidates, false);
        }
        None
    };
    universal().or_else(|| {
        if !options.force_up_level0 {
            return None;
        }
        // `forcePickL0`: every level-0 run, grown by size ratio.
        let level0 = runs.iter().take_while(|r| r.level == 0).count();
        (level0 > 0).then(|| pick_for_size_ratio(options, max_level, runs, level0, true))?
    })
}

fn total(runs: &[LevelRun]) -> u64 {
    runs.iter().map(|r| r.size).sum()
}

/// `pickForSizeAmp`: every run when the newer runs add more than
/// `max-size-amplification-percent` to the oldest one.
fn pick_for_size_amplification(
    options: &CompactionOptions,
    max_level: usize,
    runs: &[LevelRun],
) -> Option<Pick> {
    if runs.len() < options.sorted_run_trigger {
        return None;
    }
    let (oldest, newer) = runs.split_last()?;
    let candidates = total(newer) as u128;
    (candidates * 100 > options.max_size_amplification_percent as u128 * oldest.size as u128)
        .then_some(Pick {
            runs: runs.len(),
            output_level: max_level,
        })
}

/// `pickForSizeRatio`: from the first `candidates` runs, takes in each next run as long as
/// it is not larger than the candidates so far by more than `compaction.size-ratio` percent.
fn pick_for_size_ratio(
    options: &CompactionOptions,
    max_level: usize,
    runs: &[LevelRun],
    mut candidates: usize,
    force: bool,
) -> Option<Pick> {
    let mut size = total(&runs[..candidates]) as f64;
    for next in &runs[candidates..] {
        if size * (100.0 + options.size_ratio as f64) / 100.0 < next.size as f64 {
            break;
        }
        size += next.size as f64;
        candidates += 1;
    }
    (force || candidates > 1).then(|| create_unit(runs, max_level, candidates))
}

/// `createUnit`: the output level is just below the next run's, never 0 (runs are taken in
/// until a run above level 0 is), and the highest level when every run is in.
fn create_unit(runs: &[LevelRun], max_level: usize, mut count: usize) -> Pick {
    let mut output_level = if count == runs.len() {
        max_level
    } else {
        runs[count].level.saturating_sub(1)
    };
    if output_level == 0 {
        while count < runs.len() {
            let next = runs[count];
            count += 1;
            if next.level != 0 {
                output_level = next.level;
                break;
            }
        }
    }
    if count == runs.len() {
        output_level = max_level;
    }
    Pick {
        runs: count,
        output_level,
    }
}

/// Runs `start..end` (newest first) compacted into one output level: what is compacted
/// instead when the pick reads more than the input budget allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// The first run taken: every run before it is at level 0 and stays there, newer than
    /// the output.
    pub start: usize,
    /// One past the last run taken.
    pub end: usize,
    /// The level the result is written to.
    pub output_level: usize,
}

/// The compactions of at least 2 runs within `pick` that leave the levels as valid as
/// Paimon's own `createUnit` leaves them, most runs first (then newest first), `pick` itself
/// excluded. A segment is runs `start..end` where every run before `start` is at level 0
/// (level-0 files newer than the output stay newer), written, as `createUnit` writes a
/// prefix, to the level just below the next run, or to the highest level when no run
/// follows: that level must be above 0, and it is empty once the inputs are removed (runs
/// above level 0 have distinct, increasing levels, and every input is below the next run).
/// A segment ending before a run at level 0 or 1 cannot go anywhere and is left out, as
/// `createUnit` takes such a run in.
pub fn smaller_units(max_level: usize, runs: &[LevelRun], pick: Pick) -> Vec<Segment> {
    let level0 = runs.iter().take_while(|r| r.level == 0).count();
    let mut units = Vec::new();
    for end in 2..=pick.runs.min(runs.len()) {
        let output_level = match runs.get(end) {
            None => max_level,
            Some(next) if next.level >= 2 => next.level - 1,
            Some(_) => continue,
        };
        if output_level < runs[end - 1].level {
            continue;
        }
        for start in 0..=level0.min(end - 2) {
            if start == 0 && end == pick.runs {
                continue;
            }
            units.push(Segment {
                start,
                end,
                output_level,
            });
        }
    }
    units.sort_by_key(|u| (std::cmp::Reverse(u.end - u.start), u.start));
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> CompactionOptions {
        CompactionOptions {
            sorted_run_trigger: 5,
            num_levels: 6,
            max_size_amplification_percent: 200,
            size_ratio: 1,
            force_up_level0: false,
            total_size_threshold: None,
            force_rewrite_all_files: false,
            target_file_size: 128 << 20,
            compaction_file_size: 90 << 20,
            min_file_num: 5,
            max_input_bytes: 256 << 20,
        }
    }

    fn runs(spec: &[(usize, u64)]) -> Vec<LevelRun> {
        spec.iter()
            .map(|&(level, size)| LevelRun { level, size })
            .collect()
    }

    fn unit(runs: usize, output_level: usize) -> Option<Pick> {
        Some(Pick { runs, output_level })
    }

    /// Cases of Paimon's `UniversalCompactionTest`.
    #[test]
    fn picks_as_paimon_does() {
        let o = options();
        // Fewer runs than the trigger: nothing.
        assert_eq!(pick(&o, 3, &runs(&[(0, 1), (0, 1), (1, 1)])), None);
        // Size amplification: everything to the highest level.
        assert_eq!(
            pick(&o, 6, &runs(&[(0, 1), (0, 1), (0, 1), (0, 1), (5, 1)])),
            unit(5, 5)
        );
        // Size ratio: the small newest runs, written just below the next run.
        assert_eq!(
            pick(
                &o,
                6,
                &runs(&[(0, 1), (0, 1), (0, 1), (0, 1), (4, 100), (5, 1000)])
            ),
            unit(4, 3)
        );
        // A large newest run takes in the smaller ones after it.
        assert_eq!(
            pick(
                &o,
                6,
                &runs(&[(0, 10), (0, 1), (0, 1), (3, 100), (5, 1000)])
            ),
            unit(3, 2)
        );
        // Growing runs: nothing by ratio, and 5 runs are not more than the trigger.
        let growing = [(0, 1), (0, 10), (0, 100), (3, 1000), (5, 100_000)];
        assert_eq!(pick(&o, 6, &runs(&growing)), None);
        // 6 runs > 5: the two newest by count, then level-0 runs up to the first above it.
        let r = runs(&[
            (0, 1),
            (0, 10),
            (0, 100),
            (0, 1000),
            (3, 10_000),
            (5, 1_000_000),
        ]);
        assert_eq!(pick(&o, 6, &r), unit(5, 3));
    }

    #[test]
    fn create_unit_never_outputs_level_0() {
        let r = runs(&[(0, 1), (0, 1), (0, 1), (1, 10), (2, 100)]);
        assert_eq!(
            create_unit(&r, 5, 1),
            Pick {
                runs: 4,
                output_level: 1
            }
        );
        let r = runs(&[(0, 1), (0, 1)]);
        assert_eq!(
            create_unit(&r, 5, 1),
            Pick {
                runs: 2,
                output_level: 5
            }
        );
        let r = runs(&[(0, 1), (3, 1)]);
        assert_eq!(
            create_unit(&r, 5, 1),
            Pick {
                runs: 1,
                output_level: 2
            }
        );
    }

    #[test]
    fn smaller_units_keep_the_levels_valid() {
        let seg = |start, end, output_level| Segment {
            start,
            end,
            output_level,
        };
        // Only level-0 runs: older ones go to the top, the newest stay at level 0.
        let r = runs(&[(0, 1), (0, 1), (0, 1), (0, 1)]);
        assert_eq!(
            smaller_units(5, &r, unit(4, 5).unwrap()),
            [seg(1, 4, 5), seg(2, 4, 5)]
        );
        // Level-0 runs then levels 1, 3 and 5: a segment ends before level 3 (written to 2)
        // or 5 (written to 4) or at the end, never before level 0 or 1.
        let r = runs(&[(0, 1), (0, 1), (1, 1), (3, 1), (5, 1)]);
        assert_eq!(
            smaller_units(5, &r, unit(5, 5).unwrap()),
            [
                seg(0, 4, 4),
                seg(1, 5, 5),
                seg(0, 3, 2),
                seg(1, 4, 4),
                seg(2, 5, 5),
                seg(1, 3, 2),
                seg(2, 4, 4),
            ]
        );
        // Within the pick only.
        assert_eq!(smaller_units(5, &r, unit(3, 2).unwrap()), [seg(1, 3, 2)]);
        assert_eq!(smaller_units(5, &r[..2], unit(2, 5).unwrap()), []);
    }

    #[test]
    fn force_up_level0_and_total_size_threshold() {
        let mut o = options();
        let r = runs(&[(0, 1), (5, 100)]);
        assert_eq!(pick(&o, 6, &r), None);
        o.force_up_level0 = true;
        assert_eq!(pick(&o, 6, &r), unit(1, 4));
        o.force_up_level0 = false;
        o.total_size_threshold = Some(1000);
        assert_eq!(pick(&o, 6, &r), unit(2, 5));
        assert_eq!(
            pick(&o, 6, &r[..1]),
            None,
            "a single run is never compacted"
        );
    }
}
