//! Compaction of data files, as Paimon's own writers compact when a table is not
//! `write-only`, committed as a `COMPACT` snapshot of its own commit user.
//!
//! * Primary-key tables ([`universal`], [`unit`], [`merge`]): per bucket, universal compaction
//!   picks sorted runs (size amplification, size ratio, run count over
//!   `num-sorted-run.compaction-trigger`) and an output level; overlapping files are merged
//!   a batch at a time with the deduplicate merge function (highest sequence number wins,
//!   retractions dropped once nothing older is left below the output level), large lone files
//!   are moved up a level without being rewritten. Output files are written by the same
//!   [`KvFileWriter`] tiering uses, at the output level, with `FileSource.COMPACT`.
//! * Append tables with fixed buckets ([`append`]): runs of `compaction.min.file-num` small
//!   files are rewritten into files of `target-file-size`, rows in order. Bucket-unaware
//!   tables (`bucket = -1`) are not compacted: Paimon's own writers never compact them either.
//!
//! Refused (`unsupported`, nothing written): merge engines other than deduplicate, changelog
//! producers that need compaction to produce changelog (`lookup`, `full-compaction`),
//! deletion vectors and the other features tiering refuses ([`check_supported`]),
//! `record-level.expire-time`, and options whose behaviour needs state kept across writes
//! ([`options`]). Skipped with a debug line: `write-only` tables, buckets holding files of
//! an older schema or outside the table.
//!
//! Bounds: buckets are compacted one after the other until the deadline, and the data files
//! read per call add up to at most `maintenance.compaction.max-input-bytes` (default 256 MiB).
//! When the compaction universal compaction picks reads more than the call has left, the
//! biggest valid compaction of at least 2 of its sorted runs that fits is done instead and
//! `more_to_do` reported; an append bucket compacts the longest part (2 files or more) of its
//! window that fits. A bucket where not even that fits the whole budget is over budget:
//! warned about naming the option, and counted in [`Compacted::over_budget`], which the host
//! exports as a metric. Memory: one batch per sorted run merged plus the live
//! file list. All buckets done in a call are committed together in one `COMPACT` snapshot with
//! [`MAINTENANCE_COMMIT_USER`]. When another writer committed in between, every file the
//! compaction replaces must still be live (and levels above 0 key-disjoint) or the call gives
//! up: its new files are deleted and `more_to_do` is reported.

pub mod append;
pub mod file_rows;
pub mod levels;
pub mod live_files;
pub mod merge;
pub mod options;
pub mod unit;
pub mod universal;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use fluss_lake_guest_sdk::maintenance::Compacted;
use fluss_lake_guest_sdk::parquet::ParquetOptions;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, ErrorKind, Result};

use crate::commit_message::CommitMessage;
use crate::committer::PaimonCommitter;
use crate::manifest::{DataFileMeta, FileKind, ManifestEntry};
use crate::merge_tree::file_writer::{KvFileSettings, KvFileWriter};
use crate::merge_tree::kv::KvLayout;
use crate::merge_tree::options::{MergeTreeOptions, check_parquet_at, data_stats_mode};
use crate::rows::table_file_schema;
use crate::schema::{TableLayout, TableSchema};
use crate::snapshot::{Snapshot, latest_snapshot_id, read_snapshot};
use crate::table::{BucketMode, DataFileNames, Partition, bucket_dir, check_supported};
use crate::types::PaimonType;
use crate::writer::{file_compression, file_compression_at};
use append::AppendQueue;
use levels::{KeyedFile, Levels, SortedRun};
use live_files::{BucketKey, live_files_by_bucket, live_identifiers};
use merge::{MergePolicy, merge_sections};
use options::{CompactionOptions, MAX_INPUT_BYTES};
use unit::Step;
use universal::{LevelRun, Pick, Segment};

pub use fluss_lake_guest_sdk::MAINTENANCE_COMMIT_USER;

/// Compactions of one bucket per call at most (each one re-picks on the updated levels).
const MAX_COMPACTIONS_PER_BUCKET: usize = 16;

/// Why a table is not compacted at all, `None` when it is.
fn skip_reason(schema: &TableSchema) -> Result<Option<&'static str>> {
    if schema
        .option("write-only")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return Ok(Some(
            "the table is write-only (compacted by a dedicated Paimon job)",
        ));
    }
    if schema.primary_keys.is_empty() && BucketMode::of(schema)? == BucketMode::Unaware {
        return Ok(Some(
            "bucket-unaware append tables (bucket = -1) are not compacted by Paimon's writers",
        ));
    }
    Ok(None)
}

/// Checks that this plugin compacts the table exactly as Paimon would: `unsupported`
/// otherwise (nothing is touched).
pub fn check_compactable(plugin_config: &[(String, String)], schema: &TableSchema) -> Result<()> {
    check_supported(schema, None)
        .and_then(|()| CompactionOptions::of(plugin_config, schema).map(|_| ()))
        .map_err(|e| e.context("compaction refused"))
}

/// Compacts the table in `storage` as far as the deadline and the input budget allow.
pub fn compact(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    schema: &TableSchema,
    now: &dyn Fn() -> i64,
    deadline_millis: i64,
) -> Result<Compacted> {
    check_compactable(plugin_config, schema)?;
    if let Some(reason) = skip_reason(schema)? {
        fluss_lake_guest_sdk::debug!("not compacting: {reason}");
        return Ok(Compacted::default());
    }
    let options = CompactionOptions::of(plugin_config, schema)?;
    let Some(head_id) = latest_snapshot_id(storage)? else {
        return Ok(Compacted::default());
    };
    let head = read_snapshot(storage, head_id)?
        .ok_or_else(|| Error::conflict(format!("snapshot {head_id} disappeared")))?;
    let kind = TableKind::of(schema)?;
    let mut job = Job {
        storage,
        schema,
        plugin_config,
        options,
        now,
        deadline_millis,
        budget_left: 0,
        written: Rc::new(RefCell::new(Vec::new())),
        more_to_do: false,
        over_budget: 0,
    };
    job.budget_left = job.options.max_input_bytes;
    let mut changes = Vec::new();
    let planned = (|| -> Result<()> {
        for ((partition, bucket), entries) in live_files_by_bucket(storage, &head)? {
            if now() >= deadline_millis {
                job.more_to_do = true;
                break;
            }
            let mut bucket_changes = BucketChanges::new(
                partition,
                bucket,
                entries.first().map_or(bucket + 1, |e| e.total_buckets),
            );
            let files: Vec<DataFileMeta> = entries.into_iter().map(|e| e.file).collect();
            let dir = bucket_dir(
                &Partition::from_row(schema, &bucket_changes.partition)?,
                bucket,
            );
            if let Some(reason) = unreadable(schema, &files) {
                fluss_lake_guest_sdk::debug!("not compacting {dir}: {reason}");
                continue;
            }
            match &kind {
                TableKind::PrimaryKey(kv) => {
                    job.primary_key_bucket(kv, &dir, files, &mut bucket_changes)?
                }
                TableKind::Append => job.append_bucket(&dir, files, &mut bucket_changes)?,
            }
            if !bucket_changes.before.is_empty() {
                changes.push(bucket_changes);
            }
        }
        Ok(())
    })();
    if let Err(e) = planned {
        job.discard_written();
        return Err(e);
    }
    if changes.is_empty() {
        return Ok(Compacted {
            more_to_do: job.more_to_do,
            over_budget: job.over_budget,
            ..Compacted::default()
        });
    }
    job.commit(&kind, head_id, changes)
}

/// Why the files of a bucket cannot be read back for compaction, `None` when they can.
fn unreadable(schema: &TableSchema, files: &[DataFileMeta]) -> Option<String> {
    if let Some(f) = files.iter().find(|f| f.schema_id != schema.id) {
        return Some(format!(
            "{} was written with schema {}, not the latest ({})",
            f.file_name, f.schema_id, schema.id
        ));
    }
    if let Some(f) = files.iter().find(|f| f.external_path.is_some()) {
        return Some(format!("{} lives outside the table", f.file_name));
    }
    if let Some(f) = files.iter().find(|f| !f.file_name.ends_with(".parquet")) {
        return Some(format!("{} is not a Parquet file", f.file_name));
    }
    None
}

/// What kind of table is compacted, with what primary-key tables need.
enum TableKind {
    PrimaryKey(Box<KvTable>),
    Append,
}

/// A primary-key table's file layout and merge settings.
struct KvTable {
    layout: KvLayout,
    key_types: Vec<PaimonType>,
    merge: MergeTreeOptions,
}

impl TableKind {
    fn of(schema: &TableSchema) -> Result<TableKind> {
        if schema.primary_keys.is_empty() {
            return Ok(TableKind::Append);
        }
        let table_layout = TableLayout::of(schema)?;
        let layout = KvLayout::new(schema, &table_layout, &table_file_schema(&table_layout))?;
        Ok(TableKind::PrimaryKey(Box::new(KvTable {
            key_types: layout.key_types().to_vec(),
            layout,
            merge: MergeTreeOptions::of(schema)?,
        })))
    }
}

/// What compaction changed in one bucket: files replaced (as committed) and files replacing
/// them.
#[derive(Debug, Clone)]
struct BucketChanges {
    partition: Vec<u8>,
    bucket: i32,
    total_buckets: i32,
    /// Files of the snapshot compacted from, as it holds them (each name once, at its level
    /// there): the commit's DELETE entries. Every published snapshot up to the base may use
    /// them, so they are never deleted here (expiry does, once their last snapshot goes).
    before: Vec<DataFileMeta>,
    /// The files replacing them, at their final levels: the commit's ADD entries.
    after: Vec<DataFileMeta>,
    /// Names of the files this call's compactions of the bucket wrote (new names, not files
    /// moved up a level): the only files a later compaction of the call may delete.
    written: HashSet<String>,
}

impl BucketChanges {
    fn new(partition: Vec<u8>, bucket: i32, total_buckets: i32) -> BucketChanges {
        BucketChanges {
            partition,
            bucket,
            total_buckets,
            before: Vec::new(),
            after: Vec::new(),
            written: HashSet::new(),
        }
    }

    /// Adds one compaction's result, as Paimon's `MergeTreeWriter.updateCompactResult` does.
    /// A file an earlier compaction of this call produced (in `after`) and this one replaces
    /// never reaches a snapshot: it leaves `after`, and the DELETE already recorded for the
    /// snapshot's file stands. Whether it also leaves storage is a separate question
    /// ([`Self::may_delete`]): an upgrade produces no new file, it records a file of the
    /// snapshot at another level, so replacing that entry must not delete the file.
    fn record(
        &mut self,
        storage: &dyn Storage,
        dir: &str,
        before: Vec<DataFileMeta>,
        after: Vec<DataFileMeta>,
    ) {
        // An upgrade keeps its input's name: only outputs named like no input are new files.
        let new: Vec<String> = after
            .iter()
            .filter(|a| !before.iter().any(|b| b.file_name == a.file_name))
            .map(|a| a.file_name.clone())
            .collect();
        for b in before {
            let ours = self
                .after
                .iter()
                .position(|a| a.file_name == b.file_name && a.level == b.level);
            match ours {
                Some(i) => {
                    self.after.remove(i);
                    if self.may_delete(&b.file_name, &after) {
                        let path = format!("{dir}/{}", b.file_name);
                        if let Err(e) = storage.delete(&path) {
                            fluss_lake_guest_sdk::warn!("cannot delete {path}: {e}");
                        }
                    }
                }
                None => self.before.push(b),
            }
        }
        self.written.extend(new);
        self.after.extend(after);
    }

    /// Whether the file `name`, produced by an earlier compaction of this call and replaced
    /// by the current one (whose outputs are `after`), may be deleted from storage: only when
    /// this call wrote it and no published snapshot references it. A file of the snapshot
    /// that an earlier compaction only moved up a level (Paimon: "the input of upgraded") is
    /// used by every snapshot up to the base, and a file the current compaction moves up
    /// ("the output of upgraded") stays in use; neither is deleted.
    fn may_delete(&self, name: &str, after: &[DataFileMeta]) -> bool {
        self.written.contains(name)
            && !self.before.iter().any(|f| f.file_name == name)
            && !after.iter().any(|a| a.file_name == name)
    }

    /// The commit's entries for this bucket: DELETE of the snapshot's files replaced, ADD of
    /// the files replacing them.
    fn entries(&self) -> impl Iterator<Item = ManifestEntry> + '_ {
        let deleted = self.before.iter().map(|f| self.entry(FileKind::Delete, f));
        deleted.chain(self.after.iter().map(|f| self.entry(FileKind::Add, f)))
    }

    fn entry(&self, kind: FileKind, file: &DataFileMeta) -> ManifestEntry {
        ManifestEntry {
            kind,
            partition: self.partition.clone(),
            bucket: self.bucket,
            total_buckets: self.total_buckets,
            file: file.clone(),
        }
    }
}

/// One compaction of a primary-key bucket, planned.
struct Planned {
    steps: Vec<Step>,
    output_level: usize,
    drop_delete: bool,
    /// Input bytes its rewrites read.
    cost: u64,
}

/// One call's compaction.
struct Job<'a> {
    storage: &'a dyn Storage,
    schema: &'a TableSchema,
    plugin_config: &'a [(String, String)],
    options: CompactionOptions,
    now: &'a dyn Fn() -> i64,
    deadline_millis: i64,
    /// Input bytes this call may still read.
    budget_left: u64,
    /// Paths of every data file this call wrote, to delete when it gives up.
    written: Rc<RefCell<Vec<String>>>,
    more_to_do: bool,
    /// Buckets whose due compaction does not fit even a whole call's budget.
    over_budget: u32,
}

impl Job<'_> {
    fn past_deadline(&mut self) -> bool {
        let past = (self.now)() >= self.deadline_millis;
        self.more_to_do |= past;
        past
    }

    /// The longest start of an append bucket's `window` (2 files or more: merging consecutive
    /// files keeps rows in order) whose bytes fit what the call has left, taken from the
    /// budget; `more_to_do` when files of the window are left. `None` when no 2 files fit:
    /// `more_to_do` when a later call's whole budget would fit them, otherwise the bucket is
    /// over budget.
    fn append_within_budget(
        &mut self,
        mut window: Vec<DataFileMeta>,
        dir: &str,
    ) -> Option<Vec<DataFileMeta>> {
        let size = |f: &DataFileMeta| f.file_size.max(0) as u64;
        let (mut cost, mut fit) = (0u64, 0usize);
        for file in &window {
            if cost + size(file) > self.budget_left {
                break;
            }
            cost += size(file);
            fit += 1;
        }
        if fit >= 2 {
            self.budget_left -= cost;
            self.more_to_do |= fit < window.len();
            window.truncate(fit);
            return Some(window);
        }
        let two: u64 = window.iter().take(2).map(size).sum();
        if two <= self.options.max_input_bytes {
            self.more_to_do = true;
        } else {
            self.over_budget += 1;
            fluss_lake_guest_sdk::warn!(
                "bucket {dir} is over the compaction budget: its 2 oldest small files read \
                 {two} bytes, more than {MAX_INPUT_BYTES} = {} allows per call; raise it to \
                 compact this bucket",
                self.options.max_input_bytes
            );
        }
        None
    }

    /// A path generator for new files of `dir` that records every path it hands out.
    fn new_paths(&self, dir: &str) -> impl FnMut() -> String + 'static {
        let prefix = self
            .schema
            .option("data-file.prefix")
            .unwrap_or("data-")
            .to_string();
        let mut paths = DataFileNames::new(dir.to_string()).paths(&prefix);
        let written = self.written.clone();
        move || {
            let path = paths();
            written.borrow_mut().push(path.clone());
            path
        }
    }

    fn discard_written(&self) {
        for path in self.written.borrow().iter() {
            if let Err(e) = self.storage.delete(path) {
                fluss_lake_guest_sdk::warn!("cannot delete {path}: {e}");
            }
        }
    }

    fn primary_key_bucket(
        &mut self,
        kv: &KvTable,
        dir: &str,
        files: Vec<DataFileMeta>,
        changes: &mut BucketChanges,
    ) -> Result<()> {
        let files = files
            .into_iter()
            .map(|f| KeyedFile::new(f, &kv.key_types))
            .collect::<Result<Vec<_>>>()?;
        let mut levels = match Levels::new(files, self.options.num_levels) {
            Ok(levels) => levels,
            Err(e) => {
                fluss_lake_guest_sdk::warn!("not compacting {dir}: {e}");
                return Ok(());
            }
        };
        for _ in 0..MAX_COMPACTIONS_PER_BUCKET {
            if self.past_deadline() {
                break;
            }
            let runs = levels.sorted_runs();
            let summary: Vec<LevelRun> = runs.iter().map(SortedRun::summary).collect();
            let Some(pick) = universal::pick(&self.options, levels.num_levels(), &summary) else {
                break;
            };
            let whole = Segment {
                start: 0,
                end: pick.runs,
                output_level: pick.output_level,
            };
            let Some(planned) = self.plan_unit(&levels, &runs, whole) else {
                break;
            };
            let planned = if planned.cost <= self.budget_left {
                planned
            } else {
                match self.within_budget(&levels, &runs, &summary, pick, planned.cost, dir) {
                    Some(smaller) => smaller,
                    None => break,
                }
            };
            self.budget_left -= planned.cost;
            let Planned {
                steps,
                output_level,
                drop_delete,
                ..
            } = planned;
            let policy = MergePolicy {
                drop_delete,
                ignore_delete: kv.merge.ignore_delete,
            };
            let (before, after) = self.run_steps(kv, dir, steps, output_level, policy)?;
            fluss_lake_guest_sdk::debug!(
                "compacted {} files of {dir} into {} at level {output_level}",
                before.len(),
                after.len()
            );
            levels.update(&before, after.clone())?;
            changes.record(
                self.storage,
                dir,
                before.into_iter().map(|f| f.meta).collect(),
                after.into_iter().map(|f| f.meta).collect(),
            );
        }
        Ok(())
    }

    /// The steps compacting runs `unit.start..unit.end` of `runs` (the sorted runs of
    /// `levels`) and the input bytes they read; `None` when there is nothing to do.
    fn plan_unit(&self, levels: &Levels, runs: &[SortedRun], unit: Segment) -> Option<Planned> {
        let files: Vec<KeyedFile> = runs[unit.start..unit.end]
            .iter()
            .flat_map(|r| r.files.iter().cloned())
            .collect();
        let output_level = unit.output_level;
        if files.is_empty() || (files.len() == 1 && files[0].meta.level as usize == output_level) {
            return None;
        }
        // Retractions can go once nothing older lies outside the compaction.
        let drop_delete = output_level != 0
            && levels
                .non_empty_highest_level()
                .is_none_or(|highest| output_level >= highest);
        let steps = unit::plan(
            files,
            output_level,
            levels.num_levels() - 1,
            self.options.compaction_file_size,
            self.options.force_rewrite_all_files,
        );
        if steps.is_empty() {
            return None;
        }
        let cost: u64 = steps
            .iter()
            .filter_map(|s| match s {
                Step::Rewrite(sections) => Some(
                    sections
                        .iter()
                        .flatten()
                        .flatten()
                        .map(|f| f.meta.file_size.max(0) as u64)
                        .sum::<u64>(),
                ),
                Step::Upgrade(_) => None,
            })
            .sum();
        Some(Planned {
            steps,
            output_level,
            drop_delete,
            cost,
        })
    }

    /// When the compaction universal compaction picks reads `cost` bytes, more than the call
    /// has left: the biggest smaller compaction within it that fits ([`universal::smaller_units`],
    /// the rest waits for a later call: `more_to_do`). When none fits, a later call with the
    /// whole budget may still do one (`more_to_do`), or not even the whole budget holds a
    /// compaction of 2 runs: the bucket is over budget, warned about and counted, as its
    /// sorted runs grow until the budget is raised.
    fn within_budget(
        &mut self,
        levels: &Levels,
        runs: &[SortedRun],
        summary: &[LevelRun],
        pick: Pick,
        cost: u64,
        dir: &str,
    ) -> Option<Planned> {
        let mut fits_a_whole_budget = cost <= self.options.max_input_bytes;
        for unit in universal::smaller_units(levels.num_levels() - 1, summary, pick) {
            let Some(planned) = self.plan_unit(levels, runs, unit) else {
                continue;
            };
            if planned.cost <= self.budget_left {
                fluss_lake_guest_sdk::debug!(
                    "compacting sorted runs {}..{} of {} in {dir} ({} bytes) instead of the {} \
                     runs picked ({cost} bytes): {MAX_INPUT_BYTES} leaves {} bytes",
                    unit.start,
                    unit.end,
                    runs.len(),
                    planned.cost,
                    pick.runs,
                    self.budget_left
                );
                self.more_to_do = true;
                return Some(planned);
            }
            fits_a_whole_budget |= planned.cost <= self.options.max_input_bytes;
        }
        if fits_a_whole_budget {
            self.more_to_do = true;
        } else {
            self.over_budget += 1;
            fluss_lake_guest_sdk::warn!(
                "bucket {dir} is over the compaction budget: compacting it reads {cost} bytes \
                 and no compaction of 2 or more of its {} sorted runs reads at most \
                 {MAX_INPUT_BYTES} = {} bytes; its sorted runs grow until you raise \
                 {MAX_INPUT_BYTES}",
                runs.len(),
                self.options.max_input_bytes
            );
        }
        None
    }

    fn run_steps(
        &self,
        kv: &KvTable,
        dir: &str,
        steps: Vec<Step>,
        output_level: usize,
        policy: MergePolicy,
    ) -> Result<(Vec<KeyedFile>, Vec<KeyedFile>)> {
        let level = output_level as i32;
        check_parquet_at(self.schema, level)?;
        let settings = KvFileSettings::new(
            &kv.layout,
            self.schema.id,
            &self.schema.options,
            &data_stats_mode(self.schema, level)?,
            ParquetOptions {
                target_file_size: self.options.target_file_size,
                compression: file_compression_at(self.plugin_config, &self.schema.options, level)?,
                struct_field_stats: false,
                ..ParquetOptions::default()
            },
        )?
        .for_compaction(level);
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for step in steps {
            match step {
                Step::Upgrade(file) => {
                    after.push(file.upgraded(output_level));
                    before.push(*file);
                }
                Step::Rewrite(sections) => {
                    before.extend(sections.iter().flatten().flatten().cloned());
                    let mut writer =
                        KvFileWriter::new(self.storage, &kv.layout, &settings, self.new_paths(dir));
                    let counts = merge_sections(
                        self.storage,
                        dir,
                        &kv.layout,
                        sections,
                        policy,
                        &mut |batch| writer.write(batch),
                    )?;
                    fluss_lake_guest_sdk::debug!(
                        "merged {} rows of {dir} into {}",
                        counts.rows_read,
                        counts.rows_written
                    );
                    for meta in writer.finish()? {
                        after.push(KeyedFile::new(meta, &kv.key_types)?);
                    }
                }
            }
        }
        Ok((before, after))
    }

    fn append_bucket(
        &mut self,
        dir: &str,
        files: Vec<DataFileMeta>,
        changes: &mut BucketChanges,
    ) -> Result<()> {
        let mut queue = AppendQueue::new(files);
        for _ in 0..MAX_COMPACTIONS_PER_BUCKET {
            if self.past_deadline() {
                break;
            }
            let Some(window) = queue.pick(self.options.min_file_num, self.options.target_file_size)
            else {
                break;
            };
            let Some(window) = self.append_within_budget(window, dir) else {
                break;
            };
            let parquet = ParquetOptions {
                target_file_size: self.options.target_file_size,
                compression: file_compression(self.plugin_config, &self.schema.options)?,
                struct_field_stats: false,
                ..ParquetOptions::default()
            };
            let after = append::rewrite(
                self.storage,
                self.schema,
                dir,
                &window,
                parquet,
                self.new_paths(dir),
            )?;
            fluss_lake_guest_sdk::debug!(
                "compacted {} files of {dir} into {}",
                window.len(),
                after.len()
            );
            if let Some(last) = after.last()
                && (last.file_size.max(0) as u64) < self.options.target_file_size
            {
                queue.push(last.clone());
            }
            changes.record(self.storage, dir, window, after);
        }
        Ok(())
    }

    /// Commits every bucket's changes as one `COMPACT` snapshot through the commit kit, which
    /// owns the new files from then on; a conflict reports `more_to_do`.
    fn commit(
        &mut self,
        kind: &TableKind,
        planned_from: i64,
        changes: Vec<BucketChanges>,
    ) -> Result<Compacted> {
        let message = CommitMessage {
            data_files: changes.iter().flat_map(BucketChanges::entries).collect(),
            ..CommitMessage::default()
        };
        let key_types = match kind {
            TableKind::PrimaryKey(kv) => Some(kv.key_types.clone()),
            TableKind::Append => None,
        };
        let mut still_applies = |storage: &dyn Storage, head: &Snapshot| -> Result<()> {
            if head.id == planned_from {
                return Ok(());
            }
            check_still_applies(storage, head, &message, key_types.as_deref())
        };
        let mut committer = PaimonCommitter::new(self.storage, self.plugin_config.to_vec());
        let written = self.written.borrow().clone();
        match committer.commit_compaction(
            &message,
            &written,
            MAINTENANCE_COMMIT_USER,
            &mut still_applies,
        ) {
            Ok(snapshot) => {
                let mut done = Compacted {
                    committed_snapshots: vec![snapshot.id],
                    more_to_do: self.more_to_do,
                    over_budget: self.over_budget,
                    ..Compacted::default()
                };
                for c in &changes {
                    let before: HashSet<&str> =
                        c.before.iter().map(|f| f.file_name.as_str()).collect();
                    let after: HashSet<&str> =
                        c.after.iter().map(|f| f.file_name.as_str()).collect();
                    done.files_compacted += before.difference(&after).count() as u64;
                    for f in c
                        .after
                        .iter()
                        .filter(|f| !before.contains(f.file_name.as_str()))
                    {
                        done.files_written += 1;
                        done.bytes_written += f.file_size.max(0) as u64;
                    }
                }
                Ok(done)
            }
            // The commit kit deleted the new files when the compaction provably was not
            // published, and kept them when that cannot be told.
            Err(e) if e.kind() == ErrorKind::Conflict => {
                fluss_lake_guest_sdk::warn!(
                    "compaction not committed: {e}; its files are deleted and the next call \
                     plans again"
                );
                Ok(Compacted {
                    more_to_do: true,
                    over_budget: self.over_budget,
                    ..Compacted::default()
                })
            }
            Err(e) => Err(e.context("committing the compaction")),
        }
    }
}

/// Paimon's commit conflict check for a compaction committed after `head` (`noConflictsOrFail`):
/// every file it deletes is still live in `head`, and, for primary-key tables (`key_types`),
/// the files of each level above 0 stay key-disjoint once it is applied.
fn check_still_applies(
    storage: &dyn Storage,
    head: &Snapshot,
    message: &CommitMessage,
    key_types: Option<&[PaimonType]>,
) -> Result<()> {
    let touched: HashSet<BucketKey> = message
        .data_files
        .iter()
        .map(|e| (e.partition.clone(), e.bucket))
        .collect();
    let (live, entries) = live_identifiers(storage, head, &touched)?;
    for e in message
        .data_files
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
    {
        if !live.contains(&e.identifier()) {
            return Err(Error::conflict(format!(
                "data file {} (bucket {}, level {}) was compacted or removed by another writer \
                 since snapshot {}",
                e.file.file_name, e.bucket, e.file.level, head.id
            )));
        }
    }
    let Some(key_types) = key_types else {
        return Ok(());
    };
    let deleted: HashSet<_> = message
        .data_files
        .iter()
        .filter(|e| e.kind == FileKind::Delete)
        .map(ManifestEntry::identifier)
        .collect();
    let mut levels: HashMap<(Vec<u8>, i32, i32), Vec<KeyedFile>> = HashMap::new();
    let remaining = entries
        .iter()
        .filter(|e| !deleted.contains(&e.identifier()));
    let added = message
        .data_files
        .iter()
        .filter(|e| e.kind == FileKind::Add);
    for e in remaining.chain(added).filter(|e| e.file.level >= 1) {
        levels
            .entry((e.partition.clone(), e.bucket, e.file.level))
            .or_default()
            .push(KeyedFile::new(e.file.clone(), key_types)?);
    }
    for ((_, bucket, level), files) in levels {
        if let Err(e) = Levels::new(files, 2) {
            return Err(Error::conflict(format!(
                "level {level} of bucket {bucket} would overlap after another writer's commit: \
                 {e}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
