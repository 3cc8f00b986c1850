//! What one picked compaction of a primary-key bucket does with its files (Paimon
//! `MergeTreeCompactTask` over `IntervalPartition`): the files are split into sections of
//! overlapping key ranges; a section of several runs is rewritten (merged), and so is a
//! file smaller than `compactionFileSize` together with its neighbours, while a large file
//! no other file overlaps is only moved to the output level (an *upgrade*: the same file
//! recorded at another level) — unless it holds retractions and goes to the highest level,
//! or `compaction.force-rewrite-all-files` is set.

use std::cmp::Ordering;

use super::levels::{KeyedFile, cmp_keys};

/// Files to merge: sections (key-disjoint, in key order) of sorted runs (key-ordered,
/// key-disjoint files).
pub type Sections = Vec<Vec<Vec<KeyedFile>>>;

/// One step of a compaction.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Merge these sections into new files at the output level.
    Rewrite(Sections),
    /// Record this file at the output level.
    Upgrade(Box<KeyedFile>),
}

/// The steps compacting `files` to `output_level`.
pub fn plan(
    files: Vec<KeyedFile>,
    output_level: usize,
    max_level: usize,
    compaction_file_size: u64,
    force_rewrite_all_files: bool,
) -> Vec<Step> {
    let mut planner = Planner {
        output_level,
        max_level,
        force_rewrite_all_files,
        steps: Vec::new(),
    };
    let mut candidate: Sections = Vec::new();
    for section in interval_partition(files) {
        if section.len() > 1 {
            candidate.push(section);
            continue;
        }
        for file in section.into_iter().flatten() {
            if (file.meta.file_size.max(0) as u64) < compaction_file_size {
                candidate.push(vec![vec![file]]);
            } else {
                planner.rewrite(&mut candidate);
                planner.upgrade(file);
            }
        }
    }
    planner.rewrite(&mut candidate);
    planner.steps
}

struct Planner {
    output_level: usize,
    max_level: usize,
    force_rewrite_all_files: bool,
    steps: Vec<Step>,
}

impl Planner {
    fn upgrade(&mut self, file: KeyedFile) {
        let has_retractions = file.meta.delete_row_count.is_none_or(|d| d > 0);
        if (self.output_level == self.max_level && has_retractions) || self.force_rewrite_all_files
        {
            self.steps.push(Step::Rewrite(vec![vec![vec![file]]]));
        } else if file.meta.level.max(0) as usize != self.output_level {
            self.steps.push(Step::Upgrade(Box::new(file)));
        }
    }

    fn rewrite(&mut self, candidate: &mut Sections) {
        if candidate.is_empty() {
            return;
        }
        if candidate.len() == 1 && candidate[0].len() <= 1 {
            let section = candidate.pop().expect("one section");
            for file in section.into_iter().flatten() {
                self.upgrade(file);
            }
            return;
        }
        self.steps.push(Step::Rewrite(std::mem::take(candidate)));
    }
}

fn cmp_range(a: &KeyedFile, b: &KeyedFile) -> Ordering {
    cmp_keys(&a.min_key, &b.min_key).then_with(|| cmp_keys(&a.max_key, &b.max_key))
}

/// Paimon `IntervalPartition`: sections of files whose key ranges chain into each other,
/// each split into the fewest sorted runs (a file joins the run whose last file ends lowest,
/// when it starts after that end).
pub fn interval_partition(mut files: Vec<KeyedFile>) -> Vec<Vec<Vec<KeyedFile>>> {
    files.sort_by(cmp_range);
    let mut sections = Vec::new();
    let mut section: Vec<KeyedFile> = Vec::new();
    let mut bound: Option<crate::compact::levels::Key> = None;
    for file in files {
        if let Some(b) = &bound
            && !section.is_empty()
            && cmp_keys(&file.min_key, b).is_gt()
        {
            sections.push(split_into_runs(std::mem::take(&mut section)));
            bound = None;
        }
        if bound
            .as_ref()
            .is_none_or(|b| cmp_keys(&file.max_key, b).is_gt())
        {
            bound = Some(file.max_key.clone());
        }
        section.push(file);
    }
    if !section.is_empty() {
        sections.push(split_into_runs(section));
    }
    sections
}

fn split_into_runs(files: Vec<KeyedFile>) -> Vec<Vec<KeyedFile>> {
    let mut runs: Vec<Vec<KeyedFile>> = Vec::new();
    for file in files {
        // The run whose last file ends lowest (Paimon's priority queue head).
        let lowest = runs
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| {
                cmp_keys(
                    &a.last().expect("runs are not empty").max_key,
                    &b.last().expect("runs are not empty").max_key,
                )
            })
            .map(|(i, _)| i);
        match lowest {
            Some(i)
                if cmp_keys(&file.min_key, &runs[i].last().expect("not empty").max_key).is_gt() =>
            {
                runs[i].push(file)
            }
            _ => runs.push(vec![file]),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::levels::tests::file;

    fn names(sections: &Sections) -> Vec<Vec<Vec<String>>> {
        sections
            .iter()
            .map(|s| {
                s.iter()
                    .map(|r| r.iter().map(|f| f.meta.file_name.clone()).collect())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn sections_split_where_no_range_crosses() {
        let sections = interval_partition(vec![
            file("c", 0, 1, (20, 30), (3, 3)),
            file("a", 0, 1, (0, 10), (1, 1)),
            file("b", 0, 1, (5, 15), (2, 2)),
            file("d", 0, 1, (12, 18), (4, 4)),
        ]);
        assert_eq!(
            names(&sections),
            [
                vec![
                    vec!["a".to_string(), "d".to_string()],
                    vec!["b".to_string()]
                ],
                vec![vec!["c".to_string()]],
            ]
        );
    }

    #[test]
    fn large_lone_files_move_up_and_small_ones_are_rewritten() {
        let big = 1000;
        let steps = plan(
            vec![
                file("small-a", 0, 10, (0, 4), (1, 1)),
                file("small-b", 0, 10, (5, 9), (2, 2)),
                file("big", 0, big, (10, 19), (3, 3)),
                file("x", 0, 10, (20, 29), (4, 4)),
                file("y", 0, 10, (25, 35), (5, 5)),
            ],
            3,
            5,
            500,
            false,
        );
        let summary: Vec<String> = steps
            .iter()
            .map(|s| match s {
                Step::Rewrite(sections) => format!("rewrite {:?}", names(sections)),
                Step::Upgrade(f) => format!("upgrade {}", f.meta.file_name),
            })
            .collect();
        assert_eq!(
            summary,
            [
                r#"rewrite [[["small-a"]], [["small-b"]]]"#,
                "upgrade big",
                r#"rewrite [[["x"], ["y"]]]"#,
            ]
        );
        // A lone small file is moved up; to the highest level a file with retractions is
        // rewritten (its retractions dropped), one without is moved.
        let mut with_deletes = file("d", 0, 10, (0, 4), (1, 1));
        with_deletes.meta.delete_row_count = Some(2);
        assert!(matches!(
            plan(vec![with_deletes.clone()], 3, 5, 500, false)[..],
            [Step::Upgrade(_)]
        ));
        assert!(matches!(
            plan(vec![with_deletes], 5, 5, 500, false)[..],
            [Step::Rewrite(_)]
        ));
        assert!(matches!(
            plan(vec![file("e", 0, 10, (0, 4), (1, 1))], 5, 5, 500, false)[..],
            [Step::Upgrade(_)]
        ));
        assert!(plan(vec![file("f", 5, 10, (0, 4), (1, 1))], 5, 5, 500, false).is_empty());
    }
}
