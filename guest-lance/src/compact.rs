//! Fragment compaction, as Lance's `compact_files` (`dataset/optimize.rs`) plans and commits it.
//!
//! Planning, over the fragments in manifest order: a fragment whose deleted share exceeds
//! `materialize_deletions_threshold` (default 0.1, when `materialize_deletions`) is rewritten
//! on its own; one with fewer physical rows than `target_rows_per_fragment` (default
//! 1,048,576) is rewritten with its neighbours. Runs of adjacent candidates form tasks (a run of
//! a single small fragment is left alone), cut so that each task but the last reaches the
//! target, as Lance's `split_for_size` does. The options are the dataset's manifest config
//! `lance.compaction.<name>`, overridden by the plugin configuration's keys of the same names.
//! Each call reads at most `lance.compaction.max_source_bytes` (default [`DEFAULT_MAX_SOURCE_BYTES`]
//! here, unbounded in Lance), `max_source_fragments` and `max_source_rows`; a task that does not
//! fit is cut to the adjacent fragments that do (Lance drops it), so a call always progresses.
//!
//! Rewriting: each task's fragments are read in order with [`LanceFileReader`], rows their
//! deletion files delete are dropped, and the rest is written with [`LanceFileWriter`] into new
//! fragments of up to `target_rows_per_fragment` rows (or `max_bytes_per_file` bytes). Every
//! input file is opened (footer and page encodings) before anything is written, so a dataset
//! this reader cannot decode is refused (`unsupported`) untouched. The deadline is checked
//! between tasks; the tasks done are committed, the rest left for a later call.
//!
//! Commit: one version whose transaction is a `Rewrite` (one group of old → new fragments per
//! task), published with put-if-absent of the next manifest like an append (same naming, a
//! transaction file, this plugin's `writer_version`, new fragment ids above `max_fragment_id`,
//! fragments sorted by id as Lance leaves them). Its commit user is [`MAINTENANCE_COMMIT_USER`]
//! and it carries no `fluss-offsets`: Fluss's recovery looks for the newest version committed
//! by `__fluss_lake_tiering` and passes over it. On a lost race the new head is read again: if
//! it still holds every rewritten fragment unchanged (Lance's rule: appends are compatible, a
//! delete or rewrite of those fragments is not) the commit is retried on it, else the new files
//! are deleted and the call fails with `conflict`.
//!
//! Refused: stable row ids (compaction would have to carry the row id sequences), indices
//! (they would need remapping), fragments with several data files, overlays or row lineage,
//! data files of another format version.

use std::collections::{HashMap, HashSet};

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::SchemaRef;
use fluss_lake_guest_sdk::commit::{self, Attempt, Plan, Proposal, RetryPolicy, Written};
use fluss_lake_guest_sdk::storage::{ObjectWriter, Storage};
use fluss_lake_guest_sdk::{Error, Result, config};
use prost::Message;

use crate::deletion::{self, Deleted};
use crate::file_reader::LanceFileReader;
use crate::file_writer::{FILE_MAJOR_VERSION, FILE_MINOR_VERSION, LanceFileWriter};
use crate::proto::lance::file as pbfile;
use crate::proto::lance::table as pb;
use crate::schema::{arrow_schema, check_flat};
use crate::versions::{self, Head};
use crate::versions::{COMMIT_USER, new_fragment, now, writer_version};
use crate::writer::DEFAULT_MAX_BYTES_PER_FILE;

pub use fluss_lake_guest_sdk::MAINTENANCE_COMMIT_USER;

/// Prefix of Lance's compaction options in the manifest config.
pub const CONFIG_PREFIX: &str = "lance.compaction.";
/// Bytes of source data files one call reads when `max_source_bytes` is not set.
pub const DEFAULT_MAX_SOURCE_BYTES: u64 = 256 << 20;
/// Rows gathered into one page of a new file.
const PAGE_ROWS: usize = 64 * 1024;
/// Feature flags compaction understands: deletion files and table config.
const KNOWN_FLAGS: u64 = 1 | 8;
const FLAG_DELETION_FILES: u64 = 1;
const FLAG_STABLE_ROW_IDS: u64 = 2;

/// Lance's `CompactionOptions` this plugin honours.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub target_rows_per_fragment: u64,
    pub max_bytes_per_file: u64,
    pub materialize_deletions: bool,
    pub materialize_deletions_threshold: f64,
    pub max_source_fragments: Option<usize>,
    pub max_source_rows: Option<u64>,
    pub max_source_bytes: u64,
}

impl Options {
    pub fn of(
        plugin_config: &[(String, String)],
        manifest_config: &HashMap<String, String>,
    ) -> Result<Options> {
        let get = |name: &str| {
            let key = format!("{CONFIG_PREFIX}{name}");
            config::get(plugin_config, &key)
                .or_else(|| manifest_config.get(&key).map(String::as_str))
                .map(|v| (key, v.trim().to_string()))
        };
        let int = |name: &str| -> Result<Option<u64>> {
            get(name)
                .map(|(k, v)| {
                    v.parse::<u64>().map_err(|_| {
                        Error::invalid_input(format!("{k} = {v:?} is not a non-negative integer"))
                    })
                })
                .transpose()
        };
        let positive = |name: &str| -> Result<Option<u64>> {
            match int(name)? {
                Some(0) => Err(Error::invalid_input(format!(
                    "{CONFIG_PREFIX}{name} must be greater than 0"
                ))),
                other => Ok(other),
            }
        };
        let materialize_deletions = match get("materialize_deletions") {
            None => true,
            Some((k, v)) => match v.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(Error::invalid_input(format!(
                        "{k} = {v:?} is not a boolean"
                    )));
                }
            },
        };
        let threshold = match get("materialize_deletions_threshold") {
            None => 0.1,
            Some((k, v)) => v
                .parse::<f64>()
                .map_err(|_| Error::invalid_input(format!("{k} = {v:?} is not a number")))?,
        };
        if let Some((k, v)) = get("data_storage_version")
            && v != "2.0"
            && v != "legacy"
        {
            return Err(Error::unsupported(format!(
                "{k} = {v}: this plugin writes Lance file format 2.0 only"
            )));
        }
        Ok(Options {
            target_rows_per_fragment: int("target_rows_per_fragment")?
                .unwrap_or(1024 * 1024)
                .max(1),
            max_bytes_per_file: int("max_bytes_per_file")?
                .unwrap_or(DEFAULT_MAX_BYTES_PER_FILE)
                .max(1),
            // Lance's `validate`: a threshold of 1.0 or more turns materialization off.
            materialize_deletions: materialize_deletions && threshold < 1.0,
            materialize_deletions_threshold: threshold,
            max_source_fragments: positive("max_source_fragments")?.map(|n| n as usize),
            max_source_rows: positive("max_source_rows")?,
            max_source_bytes: positive("max_source_bytes")?.unwrap_or(DEFAULT_MAX_SOURCE_BYTES),
        })
    }
}

/// Why the dataset whose latest manifest is `m` cannot be compacted by this plugin.
pub fn unsupported_reason(raw: &[u8], m: &pb::Manifest) -> Result<Option<String>> {
    let flags = m.reader_feature_flags | m.writer_feature_flags;
    if flags & FLAG_STABLE_ROW_IDS != 0 {
        return Ok(Some(
            "the dataset uses stable row ids, which compaction would have to carry over".into(),
        ));
    }
    if flags & !KNOWN_FLAGS != 0 {
        return Ok(Some(format!(
            "the dataset uses Lance feature flags {:#x}",
            flags & !KNOWN_FLAGS
        )));
    }
    if !m.base_paths.is_empty() {
        return Ok(Some("the dataset has several base paths".into()));
    }
    if let Some(pos) = m.index_section {
        let section = pb::IndexSection::decode(versions::index_section(raw, pos)?.as_slice())
            .map_err(|e| Error::corrupt(format!("Lance index section: {e}")))?;
        if !section.indices.is_empty() {
            return Ok(Some(
                "the dataset has indices, which compaction would have to remap".into(),
            ));
        }
    }
    if let Some(f) = &m.data_format
        && (f.file_format != "lance" || f.version != "2.0")
    {
        return Ok(Some(format!(
            "the dataset stores {} files version {}; this plugin reads and writes 2.0",
            f.file_format, f.version
        )));
    }
    if let Err(e) = check_flat(&m.fields) {
        return Ok(Some(e.message().to_string()));
    }
    Ok(None)
}

/// Why this plugin cannot rewrite `f`.
fn fragment_unsupported(f: &pb::DataFragment) -> Option<String> {
    let why = if f.files.len() != 1 {
        format!("{} data files", f.files.len())
    } else if !f.overlays.is_empty() {
        "data overlay files".into()
    } else if f.row_id_sequence.is_some()
        || f.last_updated_at_version_sequence.is_some()
        || f.created_at_version_sequence.is_some()
    {
        "row lineage".into()
    } else if (f.files[0].file_major_version, f.files[0].file_minor_version)
        != (FILE_MAJOR_VERSION, FILE_MINOR_VERSION)
    {
        format!(
            "a Lance {}.{} data file",
            f.files[0].file_major_version, f.files[0].file_minor_version
        )
    } else {
        return None;
    };
    Some(format!("fragment {} has {why}", f.id))
}

/// One task: adjacent fragments rewritten together.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub fragments: Vec<pb::DataFragment>,
}

/// The deleted rows of a fragment, from the manifest or (when it does not say) its file.
fn deleted_rows(storage: &dyn Storage, f: &pb::DataFragment) -> Result<u64> {
    match &f.deletion_file {
        None => Ok(0),
        Some(d) if d.num_deleted_rows > 0 => Ok(d.num_deleted_rows),
        Some(_) => Ok(deletion::read(storage, f)?.count()),
    }
}

fn source_bytes(f: &pb::DataFragment) -> u64 {
    f.files.iter().map(|d| d.file_size_bytes).sum()
}

/// The tasks of one call (Lance's `plan_compaction` and its source budgets) and whether
/// candidates were left for a later call.
pub fn plan(
    storage: &dyn Storage,
    manifest: &pb::Manifest,
    options: &Options,
) -> Result<(Vec<Task>, bool)> {
    #[derive(PartialEq)]
    enum Candidate {
        Itself,
        WithNeighbors,
    }
    let mut bins: Vec<Vec<(pb::DataFragment, Candidate, u64)>> = vec![Vec::new()];
    for f in &manifest.fragments {
        let deleted = deleted_rows(storage, f)?;
        let live = f.physical_rows.saturating_sub(deleted);
        let candidate = if options.materialize_deletions
            && f.physical_rows > 0
            && deleted as f64 / f.physical_rows as f64 > options.materialize_deletions_threshold
        {
            Some(Candidate::Itself)
        } else if f.physical_rows < options.target_rows_per_fragment {
            Some(Candidate::WithNeighbors)
        } else {
            None
        };
        match candidate {
            Some(c) => bins.last_mut().expect("a bin").push((f.clone(), c, live)),
            None => bins.push(Vec::new()),
        }
    }
    let target = options.target_rows_per_fragment;
    let mut tasks = Vec::new();
    for bin in bins {
        if bin.is_empty() || (bin.len() == 1 && bin[0].1 == Candidate::WithNeighbors) {
            continue;
        }
        // Lance's `split_for_size`: cut once a task reaches the target, if the rest does too.
        let total: u64 = bin.iter().map(|(_, _, live)| live).sum();
        let (mut current, mut rows, mut rest) = (Vec::new(), 0u64, total);
        for (f, _, live) in bin {
            current.push(f);
            rows += live;
            rest -= live;
            if rows >= target && rest >= target {
                tasks.push(Task {
                    fragments: std::mem::take(&mut current),
                });
                rows = 0;
            }
        }
        if !current.is_empty() {
            tasks.push(Task { fragments: current });
        }
    }
    limit_to_budget(storage, tasks, options)
}

/// Keeps tasks, in order, while the sources fit the per-call budgets; a task that does not fit
/// is cut to its first fragments that do (at least two, or one materializing deletions).
fn limit_to_budget(
    storage: &dyn Storage,
    tasks: Vec<Task>,
    options: &Options,
) -> Result<(Vec<Task>, bool)> {
    let (mut fragments, mut rows, mut bytes) = (0usize, 0u64, 0u64);
    let mut out = Vec::new();
    for task in tasks {
        let mut kept = Vec::new();
        for f in &task.fragments {
            let live = f.physical_rows.saturating_sub(deleted_rows(storage, f)?);
            let fits = options.max_source_fragments.is_none_or(|m| fragments < m)
                && options.max_source_rows.is_none_or(|m| rows + live <= m)
                && bytes + source_bytes(f) <= options.max_source_bytes;
            if !fits {
                break;
            }
            fragments += 1;
            rows += live;
            bytes += source_bytes(f);
            kept.push(f.clone());
        }
        let whole = kept.len() == task.fragments.len();
        let worth = kept.len() >= 2 || (whole && !kept.is_empty());
        if worth {
            out.push(Task { fragments: kept });
        }
        if !whole {
            if out.is_empty() {
                fluss_lake_guest_sdk::warn!(
                    "Lance compaction: the first fragments to compact exceed the per-call source \
                     budget ({CONFIG_PREFIX}max_source_bytes = {}, max_source_fragments = {:?}, \
                     max_source_rows = {:?}); raise it to let compaction progress",
                    options.max_source_bytes,
                    options.max_source_fragments,
                    options.max_source_rows
                );
            }
            return Ok((out, true));
        }
    }
    Ok((out, false))
}

/// What rewriting one task produced.
struct Rewritten {
    old: Vec<pb::DataFragment>,
    /// New fragments, ids still 0.
    new: Vec<pb::DataFragment>,
}

/// Writes new fragments of at most `target` rows / `max_bytes` bytes.
struct FragmentWriter<'a> {
    storage: &'a dyn Storage,
    fields: Vec<pbfile::Field>,
    schema: SchemaRef,
    target_rows: u64,
    max_bytes: u64,
    open: Option<(String, LanceFileWriter)>,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    done: Vec<pb::DataFragment>,
    /// Every file this writer created (to delete on failure).
    written: &'a mut Vec<String>,
}

impl FragmentWriter<'_> {
    fn push(&mut self, batch: RecordBatch) -> Result<()> {
        let mut batch = batch;
        while batch.num_rows() > 0 {
            let in_file =
                self.open.as_ref().map_or(0, |(_, w)| w.rows()) + self.pending_rows as u64;
            let room = (self.target_rows - in_file).min(batch.num_rows() as u64) as usize;
            self.pending_rows += room;
            self.pending.push(batch.slice(0, room));
            batch = batch.slice(room, batch.num_rows() - room);
            if self.pending_rows >= PAGE_ROWS || in_file + room as u64 >= self.target_rows {
                self.flush_page()?;
            }
        }
        Ok(())
    }

    fn flush_page(&mut self) -> Result<()> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        let batch = arrow_select::concat::concat_batches(&self.schema, &self.pending)?;
        self.pending.clear();
        self.pending_rows = 0;
        if self.open.is_none() {
            let name = format!("{}.lance", uuid::Uuid::new_v4());
            let path = format!("data/{name}");
            let out = ObjectWriter::create(self.storage, &path)?;
            self.written.push(path);
            self.open = Some((name, LanceFileWriter::new(self.fields.clone(), out)));
        }
        let (_, w) = self.open.as_mut().expect("open");
        w.write(&batch)?;
        if w.rows() >= self.target_rows || w.size() >= self.max_bytes {
            self.roll()?;
        }
        Ok(())
    }

    fn roll(&mut self) -> Result<()> {
        if let Some((name, w)) = self.open.take() {
            let rows = w.rows();
            let size = w.finish()?;
            let ids: Vec<i32> = self.fields.iter().map(|f| f.id).collect();
            self.done.push(new_fragment(0, name, rows, size, &ids));
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<pb::DataFragment>> {
        self.flush_page()?;
        self.roll()?;
        Ok(self.done)
    }
}

/// Rewrites one task's fragments (their readers opened already, in order).
fn rewrite(
    storage: &dyn Storage,
    manifest: &pb::Manifest,
    task: &Task,
    readers: Vec<LanceFileReader<'_>>,
    options: &Options,
    written: &mut Vec<String>,
) -> Result<Rewritten> {
    let schema = arrow_schema(&manifest.fields)?;
    let mut out = FragmentWriter {
        storage,
        fields: manifest.fields.clone(),
        schema: schema.clone(),
        target_rows: options.target_rows_per_fragment,
        max_bytes: options.max_bytes_per_file,
        open: None,
        pending: Vec::new(),
        pending_rows: 0,
        done: Vec::new(),
        written,
    };
    for (f, mut reader) in task.fragments.iter().zip(readers) {
        if reader.rows() != f.physical_rows {
            return Err(Error::corrupt(format!(
                "fragment {}: its data file has {} rows, the manifest says {}",
                f.id,
                reader.rows(),
                f.physical_rows
            )));
        }
        let deleted: Deleted = deletion::read(storage, f)?;
        let mut row = 0u64;
        while let Some(columns) = reader.next_batch(PAGE_ROWS)? {
            let batch = RecordBatch::try_new(schema.clone(), columns)?;
            let n = batch.num_rows() as u64;
            let batch = if deleted.count() > 0 {
                let keep: BooleanArray = (row..row + n)
                    .map(|r| Some(!deleted.is_deleted(r)))
                    .collect();
                arrow_select::filter::filter_record_batch(&batch, &keep)?
            } else {
                batch
            };
            row += n;
            out.push(batch)?;
        }
    }
    Ok(Rewritten {
        old: task.fragments.clone(),
        new: out.finish()?,
    })
}

/// What a compaction call did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Compacted {
    /// The version committed, if any.
    pub version: Option<u64>,
    pub files_compacted: u64,
    pub files_written: u64,
    pub bytes_written: u64,
    pub more_to_do: bool,
}

/// The manifest of `head + 1`: `base` with the rewritten fragments replaced; `None` when
/// `base` no longer holds every old fragment as it was planned (a conflicting commit).
fn rewrite_manifest(
    base: &pb::Manifest,
    planned: &pb::Manifest,
    groups: &[Rewritten],
) -> Option<(pb::Manifest, Vec<pb::transaction::rewrite::RewriteGroup>)> {
    if base.fields != planned.fields
        || (base.reader_feature_flags | base.writer_feature_flags) & !KNOWN_FLAGS != 0
    {
        return None;
    }
    let current: HashMap<u64, &pb::DataFragment> =
        base.fragments.iter().map(|f| (f.id, f)).collect();
    let old_ids: HashSet<u64> = groups
        .iter()
        .flat_map(|g| g.old.iter().map(|f| f.id))
        .collect();
    for g in groups {
        for f in &g.old {
            if current.get(&f.id) != Some(&f) {
                return None;
            }
        }
    }
    let mut next_id = base
        .max_fragment_id
        .map(|m| m as u64 + 1)
        .into_iter()
        .chain(base.fragments.iter().map(|f| f.id + 1))
        .max()
        .unwrap_or(0);
    let mut fragments: Vec<pb::DataFragment> = base
        .fragments
        .iter()
        .filter(|f| !old_ids.contains(&f.id))
        .cloned()
        .collect();
    let mut tx_groups = Vec::new();
    for g in groups {
        let new: Vec<pb::DataFragment> = g
            .new
            .iter()
            .map(|f| {
                let mut f = f.clone();
                f.id = next_id;
                next_id += 1;
                f
            })
            .collect();
        fragments.extend(new.iter().cloned());
        tx_groups.push(pb::transaction::rewrite::RewriteGroup {
            old_fragments: g.old.clone(),
            new_fragments: new,
        });
    }
    fragments.sort_by_key(|f| f.id);
    let mut m = base.clone();
    m.version = base.version + 1;
    m.max_fragment_id = next_id
        .checked_sub(1)
        .map(|n| n as u32)
        .max(base.max_fragment_id);
    let has_deletions = fragments.iter().any(|f| f.deletion_file.is_some());
    for flags in [&mut m.reader_feature_flags, &mut m.writer_feature_flags] {
        *flags = if has_deletions {
            *flags | FLAG_DELETION_FILES
        } else {
            *flags & !FLAG_DELETION_FILES
        };
    }
    m.fragments = fragments;
    m.timestamp = Some(now());
    m.writer_version = Some(writer_version());
    m.tag = String::new();
    m.transaction_section = None;
    Some((m, tx_groups))
}

/// A rewrite published as the next version (a `Rewrite` transaction by the maintenance commit
/// user), as the commit kit runs it; `None` when a newer version changed fragments it
/// rewrote (then it is abandoned, planned again next time).
struct RewriteVersion<'a> {
    planned: &'a pb::Manifest,
    groups: &'a [Rewritten],
}

impl Attempt for RewriteVersion<'_> {
    type Base = Head;
    type Output = Option<u64>;

    fn read_base(&mut self, storage: &dyn Storage) -> Result<Head> {
        versions::read_head(storage)
    }

    fn check(&mut self, _: &dyn Storage, _: &Head) -> Result<()> {
        Ok(())
    }

    fn build(
        &mut self,
        _: &dyn Storage,
        head: &Head,
        written: &mut Written<'_>,
    ) -> Result<Plan<Option<u64>>> {
        let Some((mut manifest, tx_groups)) =
            rewrite_manifest(&head.manifest, self.planned, self.groups)
        else {
            fluss_lake_guest_sdk::warn!(
                "Lance version {} changed fragments this compaction rewrote (planned on \
                 version {}); its files are deleted and it is planned again next time",
                head.version,
                self.planned.version
            );
            return Ok(Plan::Done(None));
        };
        let tx = pb::Transaction {
            read_version: self.planned.version,
            uuid: uuid::Uuid::new_v4().to_string(),
            transaction_properties: HashMap::from([(
                COMMIT_USER.to_string(),
                MAINTENANCE_COMMIT_USER.to_string(),
            )]),
            operation: Some(pb::transaction::Operation::Rewrite(
                pb::transaction::Rewrite {
                    groups: tx_groups,
                    ..Default::default()
                },
            )),
            ..Default::default()
        };
        let (tx_name, tx_path, tx_bytes) = versions::transaction_file(&tx);
        written.put(tx_path, &tx_bytes)?;
        manifest.transaction_file = tx_name;
        let (path, bytes) =
            versions::proposal(&manifest, head.index_section.as_deref(), head.naming);
        Ok(Plan::Publish(Proposal {
            path,
            bytes,
            unreferenced: Vec::new(),
            output: Some(manifest.version),
        }))
    }
}

/// Publishes the rewrite on the newest version through the commit kit; the version it
/// committed, or `None` when it was abandoned. The new data and deletion files (`written`)
/// are the kit's: kept when published or when the outcome is unknown, deleted otherwise.
fn commit(
    storage: &dyn Storage,
    planned: &pb::Manifest,
    groups: &[Rewritten],
    written: &[String],
) -> Result<Option<u64>> {
    let mut prepared = Written::new(storage);
    for path in written {
        prepared.add(path.clone());
    }
    let policy = RetryPolicy::retries(crate::versions::DEFAULT_COMMIT_RETRIES);
    let mut attempt = RewriteVersion { planned, groups };
    Ok(commit::commit(storage, policy, "Lance compaction", prepared, &mut attempt)?.output)
}

/// Compacts the dataset's small fragments as `plugin_config` and the manifest config say.
pub fn compact(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    now: &dyn Fn() -> i64,
    deadline_millis: i64,
) -> Result<Compacted> {
    let mut done = Compacted::default();
    let Some((version, naming)) = versions::latest(storage)? else {
        return Ok(done);
    };
    let raw = storage.get(&naming.path(version))?;
    let manifest = versions::decode_manifest(&raw)?;
    if let Some(reason) = unsupported_reason(&raw, &manifest)? {
        return Err(Error::unsupported(format!(
            "Lance dataset not compacted: {reason}"
        )));
    }
    let options = Options::of(plugin_config, &manifest.config)?;
    let (tasks, more_due) = plan(storage, &manifest, &options)?;
    done.more_to_do = more_due;
    if tasks.is_empty() {
        return Ok(done);
    }
    // Every input is checked before anything is written.
    for task in &tasks {
        for f in &task.fragments {
            if let Some(why) = fragment_unsupported(f) {
                return Err(Error::unsupported(format!(
                    "Lance dataset not compacted: {why}"
                )));
            }
            if let Some(d) = &f.deletion_file
                && d.base_id.is_some()
            {
                return Err(Error::unsupported(format!(
                    "Lance dataset not compacted: fragment {} has a deletion file in another base path",
                    f.id
                )));
            }
            LanceFileReader::open(storage, &f.files[0], &manifest.fields)
                .map_err(|e| e.context("Lance dataset not compacted"))?;
        }
    }
    let mut written = Vec::new();
    let result = (|| -> Result<Vec<Rewritten>> {
        let mut groups = Vec::new();
        for task in &tasks {
            if now() >= deadline_millis {
                done.more_to_do = true;
                break;
            }
            let readers = task
                .fragments
                .iter()
                .map(|f| LanceFileReader::open(storage, &f.files[0], &manifest.fields))
                .collect::<Result<Vec<_>>>()?;
            groups.push(rewrite(
                storage,
                &manifest,
                task,
                readers,
                &options,
                &mut written,
            )?);
        }
        Ok(groups)
    })();
    let groups = match result {
        Ok(groups) => groups,
        Err(e) => {
            // Nothing was published: what this call wrote goes.
            for path in &written {
                if let Err(d) = storage.delete(path) {
                    fluss_lake_guest_sdk::warn!("could not delete {path}: {d}");
                }
            }
            return Err(e);
        }
    };
    if groups.is_empty() {
        return Ok(done);
    }
    match commit(storage, &manifest, &groups, &written)? {
        Some(v) => {
            done.version = Some(v);
            for g in &groups {
                done.files_compacted += g.old.iter().map(|f| f.files.len() as u64).sum::<u64>();
                done.files_written += g.new.len() as u64;
                done.bytes_written += g.new.iter().map(source_bytes).sum::<u64>();
            }
            fluss_lake_guest_sdk::info!(
                "compacted {} Lance fragments into {} in version {v}",
                groups.iter().map(|g| g.old.len()).sum::<usize>(),
                done.files_written
            );
        }
        None => done.more_to_do = true,
    }
    Ok(done)
}
