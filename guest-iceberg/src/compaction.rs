//! Small-file compaction of data files, per Fluss bucket, as Fluss's Java
//! `IcebergRewriteDataFiles` plans it, committed as Iceberg's `RewriteDataFiles` commits
//! (see [`rewrite_commit`](crate::rewrite_commit)).
//!
//! Planning, on the current snapshot: the live Parquet data files of the default partition
//! spec are grouped by partition tuple (which holds the Fluss partition and bucket) and by
//! `__bucket` (from the file's bounds, for specs without a bucket field). A bucket is
//! compacted when at least [`MIN_INPUT_FILES`] of its files are smaller than the target
//! size, `min(read.split.target-size, write.target-file-size-bytes)` (128 MiB by default, as
//! Fluss computes it). Its files, small and large, are sorted by their `__offset` lower bound
//! and packed front to back into contiguous bins of at most the target; bins of one file
//! stay as they are.
//!
//! Rewriting, a bucket at a time (the deadline is checked between buckets): the deletes that
//! apply to the bucket's files are loaded ([`deletes`](crate::deletes), bounded by
//! `maintenance.compaction.max-delete-bytes`), each bin's files are streamed a row group at a
//! time, rows deleted dropped, into new data files written like tiering's (same schema, field
//! ids, metrics, codec, target file size). At most `maintenance.compaction.max-input-bytes` of
//! input are rewritten per call; what is left is reported as `more_to_do`.
//!
//! Memory: planning holds one counter per bucket, then the entries of the buckets chosen;
//! rewriting holds one row group, one batch and the bucket's deletes.

use std::collections::{BTreeMap, HashSet};

use fluss_lake_guest_sdk::layout::relative_path;
use fluss_lake_guest_sdk::maintenance::Compacted;
use fluss_lake_guest_sdk::parquet::ParquetOptions;
use fluss_lake_guest_sdk::parquet_read::{ParquetFileReader, ReadLimits};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt, config};

use crate::bins::pack;
use crate::deletes::{BucketDeletes, DEFAULT_MAX_DELETE_BYTES, DeleteSource, MAX_DELETE_BYTES};
use crate::file_rows::project;
use crate::file_writer::{ContentWriter, SplitTarget};
use crate::manifest::{
    DataFile, FileContent, ManifestEntry, ManifestFile, read_entries, read_manifest_list,
};
use crate::metadata::Snapshot;
use crate::partition::{PartitionSpec, PartitionValue};
use crate::rewrite_commit::{self, Outcome, Rewrite};
use crate::schema::{BUCKET_COLUMN, IcebergSchema, OFFSET_COLUMN, TableLayout};
use crate::tables::{self, Loaded};
use crate::writer::{TARGET_FILE_SIZE, data_compression, target_file_size};

/// Plugin option / table property: data file bytes one maintenance call rewrites at most.
pub const MAX_INPUT_BYTES: &str = "maintenance.compaction.max-input-bytes";
/// Default of [`MAX_INPUT_BYTES`]: 256 MiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 << 20;
/// Iceberg's `read.split.target-size` (default 128 MiB), one bound of the bin size.
pub const READ_SPLIT_TARGET_SIZE: &str = "read.split.target-size";
const DEFAULT_READ_SPLIT_TARGET_SIZE: u64 = 128 << 20;
/// Iceberg's default `write.target-file-size-bytes`, the other bound.
const DEFAULT_WRITE_TARGET_FILE_SIZE: u64 = 512 << 20;
/// Small files a bucket needs before it is compacted (Fluss's `MIN_FILES_TO_COMPACT`).
pub const MIN_INPUT_FILES: usize = 3;

/// What compaction may do, from the plugin configuration, then the table's properties.
#[derive(Debug, Clone)]
pub struct CompactionOptions {
    /// Files below it are small; bins hold at most this much.
    pub target_size: u64,
    pub max_input_bytes: u64,
    pub max_delete_bytes: u64,
    /// How new files are written.
    pub output: ParquetOptions,
}

impl CompactionOptions {
    pub fn of(plugin_config: &[(String, String)], loaded: &Loaded) -> Result<CompactionOptions> {
        let m = &loaded.metadata;
        let get = |key: &str| config::get(plugin_config, key).or_else(|| m.property(key));
        let size = |key: &str, default: u64| -> Result<u64> {
            get(key).map_or(Ok(default), |v| {
                config::parse_size(v).map_err(|e| e.context(format!("option {key}")))
            })
        };
        let target_size = size(READ_SPLIT_TARGET_SIZE, DEFAULT_READ_SPLIT_TARGET_SIZE)?
            .min(size(TARGET_FILE_SIZE, DEFAULT_WRITE_TARGET_FILE_SIZE)?)
            .max(1);
        Ok(CompactionOptions {
            target_size,
            max_input_bytes: size(MAX_INPUT_BYTES, DEFAULT_MAX_INPUT_BYTES)?.max(1),
            max_delete_bytes: size(MAX_DELETE_BYTES, DEFAULT_MAX_DELETE_BYTES)?,
            output: ParquetOptions {
                target_file_size: target_file_size(plugin_config, m.property(TARGET_FILE_SIZE))?,
                compression: data_compression(plugin_config, |k| m.property(k))?,
                ..Default::default()
            },
        })
    }

    /// The largest bin: the target, and never more than one call's input.
    fn bin_size(&self) -> u64 {
        self.target_size.min(self.max_input_bytes)
    }
}

/// A Fluss bucket of the lake table: a partition tuple of one spec, and the `__bucket` its
/// files hold when their bounds say.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BucketKey {
    pub spec_id: i32,
    pub partition: Vec<Option<PartitionValue>>,
    pub bucket: Option<i32>,
}

/// Field ids compaction reads from file metrics.
struct MetricIds {
    bucket: Option<i32>,
    offset: Option<i32>,
}

impl MetricIds {
    fn of(schema: &IcebergSchema) -> MetricIds {
        MetricIds {
            bucket: schema.field(BUCKET_COLUMN).map(|f| f.id),
            offset: schema.field(OFFSET_COLUMN).map(|f| f.id),
        }
    }

    fn bucket_of(&self, f: &DataFile) -> Option<i32> {
        let id = self.bucket?;
        let bound = |b: &[(i32, Vec<u8>)]| {
            b.iter()
                .find(|(i, _)| *i == id)
                .and_then(|(_, v)| <[u8; 4]>::try_from(v.as_slice()).ok())
                .map(i32::from_le_bytes)
        };
        match (bound(&f.lower_bounds), bound(&f.upper_bounds)) {
            (Some(lo), Some(hi)) if lo == hi => Some(lo),
            _ => None,
        }
    }

    /// The file's lowest `__offset` (files without the bound sort first).
    fn first_offset(&self, f: &DataFile) -> i64 {
        self.offset
            .and_then(|id| f.lower_bounds.iter().find(|(i, _)| *i == id))
            .and_then(|(_, v)| <[u8; 8]>::try_from(v.as_slice()).ok())
            .map_or(i64::MIN, i64::from_le_bytes)
    }
}

/// The table, as a compaction call sees it.
struct Table<'a> {
    storage: &'a dyn Storage,
    location: String,
    schema: IcebergSchema,
    spec: PartitionSpec,
    start: Snapshot,
    manifests: Vec<ManifestFile>,
    ids: MetricIds,
}

impl Table<'_> {
    fn key(&self, f: &DataFile) -> BucketKey {
        BucketKey {
            spec_id: f.spec_id,
            partition: f.partition.clone(),
            bucket: self.ids.bucket_of(f),
        }
    }

    /// A data file compaction can rewrite: live Parquet data of the default spec, inside the
    /// table.
    fn rewritable(&self, e: &ManifestEntry) -> bool {
        e.is_live()
            && e.file.content == FileContent::Data
            && e.file.spec_id == self.spec.spec_id
            && e.carried.format().eq_ignore_ascii_case("PARQUET")
            && relative_path(&self.location, &e.file.file_path).is_ok()
    }

    /// Calls `each` with every entry of the snapshot's manifests of `content` (0 data, 1
    /// deletes), one manifest at a time.
    fn scan(&self, content: i32, mut each: impl FnMut(ManifestEntry)) -> Result<()> {
        for m in self.manifests.iter().filter(|m| m.content == content) {
            let rel = relative_path(&self.location, &m.manifest_path)?;
            let bytes = self
                .storage
                .get(rel)
                .with_context(|| format!("reading {rel}"))?;
            for e in read_entries(&bytes, m, &self.spec)? {
                each(e);
            }
        }
        Ok(())
    }
}

/// Small files per bucket: (count, bytes).
type Candidates = BTreeMap<BucketKey, (usize, u64)>;

/// A bucket chosen for compaction: its data files in `__offset` order, its bins, and the
/// delete files that may apply to them.
struct Chosen {
    key: BucketKey,
    bins: Vec<Vec<ManifestEntry>>,
    deletes: Vec<ManifestEntry>,
}

/// Compacts the table's small data files; what it did.
pub fn compact(
    storage: &dyn Storage,
    plugin_config: &[(String, String)],
    now: &dyn Fn() -> i64,
    deadline_millis: i64,
) -> Result<Compacted> {
    let mut done = Compacted::default();
    let loaded =
        tables::load(storage)?.ok_or_else(|| Error::not_found("Iceberg table has no metadata"))?;
    let Some(start) = loaded.metadata.current_snapshot()? else {
        return Ok(done);
    };
    let options = CompactionOptions::of(plugin_config, &loaded)?;
    let location = loaded.metadata.location()?.to_string();
    let manifests =
        read_manifest_list(&storage.get(relative_path(&location, &start.manifest_list)?)?)?;
    let schema = loaded.metadata.current_schema()?;
    let table = Table {
        storage,
        location,
        spec: loaded.metadata.default_spec()?,
        ids: MetricIds::of(&schema),
        schema,
        start,
        manifests,
    };
    // Files of older specs (or global deletes of an unpartitioned one) are not this
    // compaction's: refused rather than half understood.
    let other_specs: HashSet<i32> = table
        .manifests
        .iter()
        .map(|m| m.partition_spec_id)
        .filter(|id| *id != table.spec.spec_id)
        .collect();
    if !other_specs.is_empty() {
        return Err(Error::unsupported(format!(
            "the table has manifests of partition specs {other_specs:?} besides the default \
             one; compact it with Iceberg"
        )));
    }

    let mut candidates: Candidates = BTreeMap::new();
    table.scan(0, |e| {
        if table.rewritable(&e) && (e.file.file_size_in_bytes.max(0) as u64) < options.target_size {
            let c = candidates.entry(table.key(&e.file)).or_default();
            c.0 += 1;
            c.1 += e.file.file_size_in_bytes.max(0) as u64;
        }
    })?;
    candidates.retain(|_, (n, _)| *n >= MIN_INPUT_FILES);
    if candidates.is_empty() {
        return Ok(done);
    }
    // The buckets whose small files fit this call's input (at least one).
    let mut budget = 0u64;
    let mut selected: HashSet<BucketKey> = HashSet::new();
    for (key, (_, bytes)) in &candidates {
        if !selected.is_empty() && budget + bytes > options.max_input_bytes {
            done.more_to_do = true;
            break;
        }
        budget += bytes;
        selected.insert(key.clone());
    }
    let chosen = choose(&table, &options, &selected)?;

    let mut removed: Vec<ManifestEntry> = Vec::new();
    let mut added: Vec<DataFile> = Vec::new();
    let rewritten = rewrite_buckets(
        &table,
        &options,
        chosen,
        (now, deadline_millis),
        (&mut removed, &mut added),
        &mut done,
    );
    if let Err(e) = rewritten {
        delete_files(storage, &table.location, &added);
        return Err(e);
    }
    if removed.is_empty() {
        return Ok(done);
    }
    let rewrite = Rewrite {
        start: &table.start,
        removed: &removed,
        added: &added,
        delete_limit: options.max_delete_bytes,
    };
    match rewrite_commit::commit(storage, plugin_config, &rewrite) {
        Ok(Outcome::Committed(snapshot)) => {
            fluss_lake_guest_sdk::info!(
                "compacted {} data files into {} (replace snapshot {})",
                removed.len(),
                added.len(),
                snapshot.snapshot_id
            );
            done.files_compacted += removed.len() as u64;
            done.files_written += added.len() as u64;
            done.bytes_written += added
                .iter()
                .map(|f| f.file_size_in_bytes.max(0) as u64)
                .sum::<u64>();
            done.committed_snapshots.push(snapshot.snapshot_id);
            Ok(done)
        }
        // The commit kit deleted the new files when the rewrite was abandoned or provably not
        // published, and kept them when whether it was published cannot be told.
        Ok(Outcome::Abandoned(why)) => {
            fluss_lake_guest_sdk::warn!("compaction abandoned: {why}; the next call plans again");
            done.more_to_do = true;
            Ok(done)
        }
        Err(e) => Err(e),
    }
}

/// The chosen buckets' files (second pass over the manifests), packed into bins.
fn choose(
    table: &Table<'_>,
    options: &CompactionOptions,
    selected: &HashSet<BucketKey>,
) -> Result<Vec<Chosen>> {
    let mut files: BTreeMap<BucketKey, Vec<ManifestEntry>> = BTreeMap::new();
    table.scan(0, |e| {
        if table.rewritable(&e) {
            let key = table.key(&e.file);
            if selected.contains(&key) {
                files.entry(key).or_default().push(e);
            }
        }
    })?;
    let partitions: HashSet<&Vec<Option<PartitionValue>>> =
        selected.iter().map(|k| &k.partition).collect();
    let mut deletes: Vec<ManifestEntry> = Vec::new();
    table.scan(1, |e| {
        if e.is_live() && (e.file.partition.is_empty() || partitions.contains(&e.file.partition)) {
            deletes.push(e);
        }
    })?;
    Ok(files
        .into_iter()
        .map(|(key, mut entries)| {
            entries.sort_by_key(|e| table.ids.first_offset(&e.file));
            let bins = pack(entries, options.bin_size(), |e| {
                e.file.file_size_in_bytes.max(0) as u64
            })
            .into_iter()
            .filter(|b| b.len() > 1)
            .collect();
            let deletes = deletes
                .iter()
                .filter(|d| d.file.partition.is_empty() || d.file.partition == key.partition)
                .cloned()
                .collect();
            Chosen { key, bins, deletes }
        })
        .collect())
}

/// Rewrites the chosen buckets' bins, a bucket at a time, until the deadline or the input
/// bound: the files replaced go to `removed`, the new ones to `added` (also when failing, so
/// the caller deletes them).
fn rewrite_buckets(
    table: &Table<'_>,
    options: &CompactionOptions,
    chosen: Vec<Chosen>,
    (now, deadline_millis): (&dyn Fn() -> i64, i64),
    (removed, added): (&mut Vec<ManifestEntry>, &mut Vec<DataFile>),
    done: &mut Compacted,
) -> Result<()> {
    let mut input = 0u64;
    for bucket in chosen {
        if now() >= deadline_millis {
            done.more_to_do = true;
            return Ok(());
        }
        let mut bins = Vec::new();
        for bin in bucket.bins {
            let bytes: u64 = bin
                .iter()
                .map(|e| e.file.file_size_in_bytes.max(0) as u64)
                .sum();
            if input > 0 && input + bytes > options.max_input_bytes {
                done.more_to_do = true;
                break;
            }
            input += bytes;
            bins.push(bin);
        }
        if bins.is_empty() {
            if done.more_to_do {
                return Ok(());
            }
            continue;
        }
        let inputs: Vec<ManifestEntry> = bins.iter().flatten().cloned().collect();
        let source = DeleteSource {
            storage: table.storage,
            location: &table.location,
            schema: &table.schema,
            limit: options.max_delete_bytes,
        };
        let deletes = BucketDeletes::load(&source, &inputs, &bucket.deletes)?;
        let target = SplitTarget {
            layout: TableLayout::of_table_rows(&table.schema),
            spec: table.spec.clone(),
            partition: bucket.key.partition.clone(),
            location: table.location.clone(),
            dir: match table.spec.path(&bucket.key.partition) {
                p if p.is_empty() => "data".to_string(),
                p => format!("data/{p}"),
            },
            bucket: bucket.key.bucket.unwrap_or(0),
            parquet: options.output.clone(),
            file_counter: Default::default(),
            operation_id: uuid::Uuid::new_v4().to_string(),
        };
        for bin in &bins {
            let mut writer = ContentWriter::rows(table.storage, &target, None);
            let rewritten = rewrite_bin(table, &deletes, &target, &mut writer, bin);
            let written = writer.finish();
            if let Ok(files) = &written {
                added.extend(files.iter().cloned());
            }
            rewritten?;
            written?;
        }
        removed.extend(inputs);
        if done.more_to_do {
            return Ok(());
        }
    }
    Ok(())
}

/// Streams the live rows of `bin`'s files into `writer`.
fn rewrite_bin(
    table: &Table<'_>,
    deletes: &BucketDeletes,
    target: &SplitTarget,
    writer: &mut ContentWriter<&dyn Storage>,
    bin: &[ManifestEntry],
) -> Result<()> {
    for e in bin {
        let rel = relative_path(&table.location, &e.file.file_path)?;
        let reader = ParquetFileReader::open(
            table.storage,
            rel,
            Some(e.file.file_size_in_bytes.max(0) as u64),
            ReadLimits::default(),
        )
        .with_context(|| format!("reading data file {rel}"))?;
        let mut row = 0i64;
        for batch in reader {
            let batch = batch?;
            let n = batch.num_rows() as i64;
            let rows = project(&batch, &table.schema, &target.layout.file_schema)
                .with_context(|| format!("reading data file {rel}"))?;
            let rows = match deletes.live_rows(e, &batch, row)? {
                None => rows,
                Some(mask) => {
                    fluss_lake_guest_sdk::deps::arrow_select::filter::filter_record_batch(
                        &rows, &mask,
                    )?
                }
            };
            writer.write(&rows)?;
            row += n;
        }
    }
    Ok(())
}

/// Deletes files a failed or abandoned rewrite wrote (nothing refers to them).
fn delete_files(storage: &dyn Storage, location: &str, files: &[DataFile]) {
    for f in files {
        match relative_path(location, &f.file_path) {
            Ok(rel) => {
                if let Err(e) = storage.delete(rel) {
                    fluss_lake_guest_sdk::warn!("could not delete {rel}: {e}");
                }
            }
            Err(e) => fluss_lake_guest_sdk::warn!("not deleting {}: {e}", f.file_path),
        }
    }
}
