//! Paimon manifests: Avro files of `ManifestEntry` records (`manifest/manifest-*`) and of
//! `ManifestFileMeta` records (`manifest/manifest-list-*`), with Paimon 1.3's exact record
//! and field names and order (Paimon `ManifestEntry.SCHEMA`, `DataFileMeta.SCHEMA`,
//! `SimpleStats.SCHEMA`, `ManifestFileMeta.SCHEMA`, each behind a `_VERSION` field, converted
//! the way Paimon's `AvroSchemaConverter` does: nullable types as `["null", T]` with a null
//! default, nested records named `<parent>_<field>`).
//!
//! Readers look fields up by name, so manifests written by other Paimon writers (which may
//! add fields) are read too.

use std::cmp::Ordering;
use std::rc::Rc;

use fluss_lake_guest_sdk::avro::{self, AvroCodec, Schema, Value as AvroValue, access};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt, clock};

use crate::binary_row::{BinaryRowReader, BinaryRowWriter, Value, empty_row};
use crate::stats::SimpleStats;
use crate::types::PaimonType;

/// Directory of manifests and manifest lists.
pub const MANIFEST_DIR: &str = "manifest";
/// `_VERSION` of manifest entries and manifest file metas.
pub const MANIFEST_VERSION: i32 = 2;
/// Avro namespace + record name Paimon uses for its generated schemas.
const RECORD: &str = "org.apache.paimon.avro.generated.record";

/// Whether an entry adds or deletes a file (`FileKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// 0
    Add,
    /// 1
    Delete,
}

/// Why a data file was written (Paimon `FileSource`, `_FILE_SOURCE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSource {
    /// Written by a writer from new records.
    Append = 0,
    /// Written by a compaction from older files.
    Compact = 1,
}

/// Paimon `DataFileMeta` (1.3 layout).
#[derive(Debug, Clone, PartialEq)]
pub struct DataFileMeta {
    /// File name (no directory).
    pub file_name: String,
    /// Bytes.
    pub file_size: i64,
    /// Rows.
    pub row_count: i64,
    /// Serialized min key (empty row for append tables).
    pub min_key: Vec<u8>,
    /// Serialized max key.
    pub max_key: Vec<u8>,
    /// Key statistics.
    pub key_stats: SimpleStats,
    /// Value statistics.
    pub value_stats: SimpleStats,
    /// Lowest sequence number in the file.
    pub min_sequence_number: i64,
    /// Highest sequence number in the file.
    pub max_sequence_number: i64,
    /// Schema the file was written with.
    pub schema_id: i64,
    /// LSM level (0 for new files).
    pub level: i32,
    /// Extra files (e.g. index files).
    pub extra_files: Vec<String>,
    /// Creation time, epoch millis.
    pub creation_time: Option<i64>,
    /// Deleted rows.
    pub delete_row_count: Option<i64>,
    /// Embedded file index.
    pub embedded_index: Option<Vec<u8>>,
    /// 0 = APPEND, 1 = COMPACT.
    pub file_source: Option<i32>,
    /// Columns covered by `value_stats` (`None` = all).
    pub value_stats_cols: Option<Vec<String>>,
    /// External location.
    pub external_path: Option<String>,
    /// Row tracking.
    pub first_row_id: Option<i64>,
    /// Written columns (data evolution).
    pub write_cols: Option<Vec<String>>,
}

impl DataFileMeta {
    /// A file a writer of this plugin just wrote, before its keys, sequence numbers and
    /// statistics are filled in: level 0, `FileSource.APPEND`, created now, no deleted rows,
    /// extra files, embedded index, external path or row tracking — what Paimon records for
    /// newly written files of append and primary-key tables alike.
    pub fn new_file(file_name: String, file_size: i64, row_count: i64, schema_id: i64) -> Self {
        DataFileMeta {
            file_name,
            file_size,
            row_count,
            min_key: empty_row(),
            max_key: empty_row(),
            key_stats: SimpleStats::empty(),
            value_stats: SimpleStats::empty(),
            min_sequence_number: 0,
            max_sequence_number: 0,
            schema_id,
            level: 0,
            extra_files: Vec::new(),
            creation_time: Some(clock::now_millis()),
            delete_row_count: Some(0),
            embedded_index: None,
            file_source: Some(FileSource::Append as i32),
            value_stats_cols: None,
            external_path: None,
            first_row_id: None,
            write_cols: None,
        }
    }
}

/// Paimon `ManifestEntry`.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntry {
    /// Add or delete.
    pub kind: FileKind,
    /// Serialized partition `BinaryRow`.
    pub partition: Vec<u8>,
    /// Bucket.
    pub bucket: i32,
    /// Total buckets (-1 for bucket-unaware tables).
    pub total_buckets: i32,
    /// The file.
    pub file: DataFileMeta,
}

impl ManifestEntry {
    /// Identity used to cancel an ADD with a later DELETE (Paimon `FileEntry.Identifier`).
    pub fn identifier(&self) -> FileIdentifier {
        FileIdentifier {
            partition: self.partition.clone(),
            bucket: self.bucket,
            level: self.file.level,
            file_name: self.file.file_name.clone(),
            extra_files: self.file.extra_files.clone(),
            embedded_index: self.file.embedded_index.clone(),
            external_path: self.file.external_path.clone(),
        }
    }
}

/// What identifies a data file across ADD/DELETE entries (Paimon `FileEntry.Identifier`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileIdentifier {
    partition: Vec<u8>,
    bucket: i32,
    level: i32,
    file_name: String,
    extra_files: Vec<String>,
    embedded_index: Option<Vec<u8>>,
    external_path: Option<String>,
}

/// Paimon `ManifestFileMeta` (1.3 layout).
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFileMeta {
    /// Manifest file name (in `manifest/`).
    pub file_name: String,
    /// Bytes.
    pub file_size: i64,
    /// ADD entries.
    pub num_added_files: i64,
    /// DELETE entries.
    pub num_deleted_files: i64,
    /// Min/max/null counts of the entries' partitions.
    pub partition_stats: SimpleStats,
    /// Schema id.
    pub schema_id: i64,
    /// Lowest bucket.
    pub min_bucket: Option<i32>,
    /// Highest bucket.
    pub max_bucket: Option<i32>,
    /// Lowest level.
    pub min_level: Option<i32>,
    /// Highest level.
    pub max_level: Option<i32>,
}

fn simple_stats_schema(name: &str) -> String {
    format!(
        r#"{{"type":"record","name":"{name}","fields":[
            {{"name":"_MIN_VALUES","type":"bytes"}},
            {{"name":"_MAX_VALUES","type":"bytes"}},
            {{"name":"_NULL_COUNTS","type":["null",{{"type":"array","items":["null","long"]}}],"default":null}}]}}"#
    )
}

fn opt(t: &str) -> String {
    format!(r#"["null",{t}],"default":null"#)
}

/// The Avro schema (JSON) of manifest files.
pub fn manifest_entry_schema_json() -> String {
    let file = format!("{RECORD}__FILE");
    format!(
        r#"{{"type":"record","name":"{RECORD}","fields":[
        {{"name":"_VERSION","type":"int"}},
        {{"name":"_KIND","type":"int"}},
        {{"name":"_PARTITION","type":"bytes"}},
        {{"name":"_BUCKET","type":"int"}},
        {{"name":"_TOTAL_BUCKETS","type":"int"}},
        {{"name":"_FILE","type":{{"type":"record","name":"{file}","fields":[
            {{"name":"_FILE_NAME","type":"string"}},
            {{"name":"_FILE_SIZE","type":"long"}},
            {{"name":"_ROW_COUNT","type":"long"}},
            {{"name":"_MIN_KEY","type":"bytes"}},
            {{"name":"_MAX_KEY","type":"bytes"}},
            {{"name":"_KEY_STATS","type":{key_stats}}},
            {{"name":"_VALUE_STATS","type":{value_stats}}},
            {{"name":"_MIN_SEQUENCE_NUMBER","type":"long"}},
            {{"name":"_MAX_SEQUENCE_NUMBER","type":"long"}},
            {{"name":"_SCHEMA_ID","type":"long"}},
            {{"name":"_LEVEL","type":"int"}},
            {{"name":"_EXTRA_FILES","type":{{"type":"array","items":"string"}}}},
            {{"name":"_CREATION_TIME","type":{ts}}},
            {{"name":"_DELETE_ROW_COUNT","type":{long}}},
            {{"name":"_EMBEDDED_FILE_INDEX","type":{bytes}}},
            {{"name":"_FILE_SOURCE","type":{int}}},
            {{"name":"_VALUE_STATS_COLS","type":{arr}}},
            {{"name":"_EXTERNAL_PATH","type":{string}}},
            {{"name":"_FIRST_ROW_ID","type":{long}}},
            {{"name":"_WRITE_COLS","type":{arr}}}]}}}}]}}"#,
        key_stats = simple_stats_schema(&format!("{file}__KEY_STATS")),
        value_stats = simple_stats_schema(&format!("{file}__VALUE_STATS")),
        ts = opt(r#"{"type":"long","logicalType":"timestamp-millis"}"#),
        long = opt(r#""long""#),
        int = opt(r#""int""#),
        bytes = opt(r#""bytes""#),
        string = opt(r#""string""#),
        arr = opt(r#"{"type":"array","items":"string"}"#),
    )
}

/// The Avro schema (JSON) of manifest lists.
pub fn manifest_file_meta_schema_json() -> String {
    format!(
        r#"{{"type":"record","name":"{RECORD}","fields":[
        {{"name":"_VERSION","type":"int"}},
        {{"name":"_FILE_NAME","type":"string"}},
        {{"name":"_FILE_SIZE","type":"long"}},
        {{"name":"_NUM_ADDED_FILES","type":"long"}},
        {{"name":"_NUM_DELETED_FILES","type":"long"}},
        {{"name":"_PARTITION_STATS","type":{stats}}},
        {{"name":"_SCHEMA_ID","type":"long"}},
        {{"name":"_MIN_BUCKET","type":{int}}},
        {{"name":"_MAX_BUCKET","type":{int}}},
        {{"name":"_MIN_LEVEL","type":{int}}},
        {{"name":"_MAX_LEVEL","type":{int}}}]}}"#,
        stats = simple_stats_schema(&format!("{RECORD}__PARTITION_STATS")),
        int = opt(r#""int""#),
    )
}

/// The parsed manifest entry schema (parsed once: every split's write result is encoded with
/// it).
pub fn manifest_entry_schema() -> Result<Rc<Schema>> {
    avro::parse_schema_once(&manifest_entry_schema_json())
}

/// The parsed manifest file meta schema.
pub fn manifest_file_meta_schema() -> Result<Rc<Schema>> {
    avro::parse_schema_once(&manifest_file_meta_schema_json())
}

// ---- encoding -------------------------------------------------------------------------------

fn null() -> AvroValue {
    AvroValue::Union(0, Box::new(AvroValue::Null))
}
fn some(v: AvroValue) -> AvroValue {
    AvroValue::Union(1, Box::new(v))
}
fn opt_v<T>(v: &Option<T>, f: impl FnOnce(&T) -> AvroValue) -> AvroValue {
    v.as_ref().map_or_else(null, |x| some(f(x)))
}
fn strings(v: &[String]) -> AvroValue {
    AvroValue::Array(v.iter().map(|s| AvroValue::String(s.clone())).collect())
}
fn rec(fields: Vec<(&str, AvroValue)>) -> AvroValue {
    AvroValue::Record(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

fn stats_to_avro(s: &SimpleStats) -> AvroValue {
    rec(vec![
        ("_MIN_VALUES", AvroValue::Bytes(s.min_values.clone())),
        ("_MAX_VALUES", AvroValue::Bytes(s.max_values.clone())),
        (
            "_NULL_COUNTS",
            opt_v(&s.null_counts, |c| {
                AvroValue::Array(
                    c.iter()
                        .map(|n| opt_v(n, |n| AvroValue::Long(*n)))
                        .collect(),
                )
            }),
        ),
    ])
}

fn file_to_avro(f: &DataFileMeta) -> AvroValue {
    rec(vec![
        ("_FILE_NAME", AvroValue::String(f.file_name.clone())),
        ("_FILE_SIZE", AvroValue::Long(f.file_size)),
        ("_ROW_COUNT", AvroValue::Long(f.row_count)),
        ("_MIN_KEY", AvroValue::Bytes(f.min_key.clone())),
        ("_MAX_KEY", AvroValue::Bytes(f.max_key.clone())),
        ("_KEY_STATS", stats_to_avro(&f.key_stats)),
        ("_VALUE_STATS", stats_to_avro(&f.value_stats)),
        (
            "_MIN_SEQUENCE_NUMBER",
            AvroValue::Long(f.min_sequence_number),
        ),
        (
            "_MAX_SEQUENCE_NUMBER",
            AvroValue::Long(f.max_sequence_number),
        ),
        ("_SCHEMA_ID", AvroValue::Long(f.schema_id)),
        ("_LEVEL", AvroValue::Int(f.level)),
        ("_EXTRA_FILES", strings(&f.extra_files)),
        (
            "_CREATION_TIME",
            opt_v(&f.creation_time, |t| AvroValue::TimestampMillis(*t)),
        ),
        (
            "_DELETE_ROW_COUNT",
            opt_v(&f.delete_row_count, |n| AvroValue::Long(*n)),
        ),
        (
            "_EMBEDDED_FILE_INDEX",
            opt_v(&f.embedded_index, |b| AvroValue::Bytes(b.clone())),
        ),
        (
            "_FILE_SOURCE",
            opt_v(&f.file_source, |s| AvroValue::Int(*s)),
        ),
        (
            "_VALUE_STATS_COLS",
            opt_v(&f.value_stats_cols, |c| strings(c)),
        ),
        (
            "_EXTERNAL_PATH",
            opt_v(&f.external_path, |p| AvroValue::String(p.clone())),
        ),
        (
            "_FIRST_ROW_ID",
            opt_v(&f.first_row_id, |n| AvroValue::Long(*n)),
        ),
        ("_WRITE_COLS", opt_v(&f.write_cols, |c| strings(c))),
    ])
}

/// Encodes one manifest entry as the Avro record Paimon writes.
pub fn entry_to_avro(e: &ManifestEntry) -> AvroValue {
    rec(vec![
        ("_VERSION", AvroValue::Int(MANIFEST_VERSION)),
        (
            "_KIND",
            AvroValue::Int(if e.kind == FileKind::Add { 0 } else { 1 }),
        ),
        ("_PARTITION", AvroValue::Bytes(e.partition.clone())),
        ("_BUCKET", AvroValue::Int(e.bucket)),
        ("_TOTAL_BUCKETS", AvroValue::Int(e.total_buckets)),
        ("_FILE", file_to_avro(&e.file)),
    ])
}

fn meta_to_avro(m: &ManifestFileMeta) -> AvroValue {
    rec(vec![
        ("_VERSION", AvroValue::Int(MANIFEST_VERSION)),
        ("_FILE_NAME", AvroValue::String(m.file_name.clone())),
        ("_FILE_SIZE", AvroValue::Long(m.file_size)),
        ("_NUM_ADDED_FILES", AvroValue::Long(m.num_added_files)),
        ("_NUM_DELETED_FILES", AvroValue::Long(m.num_deleted_files)),
        ("_PARTITION_STATS", stats_to_avro(&m.partition_stats)),
        ("_SCHEMA_ID", AvroValue::Long(m.schema_id)),
        ("_MIN_BUCKET", opt_v(&m.min_bucket, |v| AvroValue::Int(*v))),
        ("_MAX_BUCKET", opt_v(&m.max_bucket, |v| AvroValue::Int(*v))),
        ("_MIN_LEVEL", opt_v(&m.min_level, |v| AvroValue::Int(*v))),
        ("_MAX_LEVEL", opt_v(&m.max_level, |v| AvroValue::Int(*v))),
    ])
}

// ---- decoding -------------------------------------------------------------------------------

fn strings_from(v: &AvroValue) -> Result<Vec<String>> {
    access::as_array(v)?
        .iter()
        .map(|s| access::as_str(s).map(str::to_string))
        .collect()
}

fn opt_strings(r: &AvroValue, name: &str) -> Result<Option<Vec<String>>> {
    access::opt(access::field(r, name)?)
        .map(strings_from)
        .transpose()
        .map_err(|e| e.context(name))
}

fn opt_i32(r: &AvroValue, name: &str) -> Result<Option<i32>> {
    Ok(access::opt_i64_field(r, name)?.map(|v| v as i32))
}

fn stats_from(v: &AvroValue) -> Result<SimpleStats> {
    let null_counts = match access::opt(access::field(v, "_NULL_COUNTS")?) {
        None => None,
        Some(a) => Some(
            access::as_array(a)?
                .iter()
                .map(|n| access::opt(n).map(access::as_i64).transpose())
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    Ok(SimpleStats {
        min_values: access::bytes_field(v, "_MIN_VALUES")?.to_vec(),
        max_values: access::bytes_field(v, "_MAX_VALUES")?.to_vec(),
        null_counts,
    })
}

fn file_from(f: &AvroValue) -> Result<DataFileMeta> {
    Ok(DataFileMeta {
        file_name: access::str_field(f, "_FILE_NAME")?.to_string(),
        file_size: access::i64_field(f, "_FILE_SIZE")?,
        row_count: access::i64_field(f, "_ROW_COUNT")?,
        min_key: access::bytes_field(f, "_MIN_KEY")?.to_vec(),
        max_key: access::bytes_field(f, "_MAX_KEY")?.to_vec(),
        key_stats: stats_from(access::field(f, "_KEY_STATS")?).context("_KEY_STATS")?,
        value_stats: stats_from(access::field(f, "_VALUE_STATS")?).context("_VALUE_STATS")?,
        min_sequence_number: access::i64_field(f, "_MIN_SEQUENCE_NUMBER")?,
        max_sequence_number: access::i64_field(f, "_MAX_SEQUENCE_NUMBER")?,
        schema_id: access::i64_field(f, "_SCHEMA_ID")?,
        level: access::i64_field(f, "_LEVEL")? as i32,
        extra_files: strings_from(access::field(f, "_EXTRA_FILES")?).context("_EXTRA_FILES")?,
        creation_time: access::opt_i64_field(f, "_CREATION_TIME")?,
        delete_row_count: access::opt_i64_field(f, "_DELETE_ROW_COUNT")?,
        embedded_index: access::opt(access::field(f, "_EMBEDDED_FILE_INDEX")?)
            .map(|b| access::as_bytes(b).map(<[u8]>::to_vec))
            .transpose()?,
        file_source: opt_i32(f, "_FILE_SOURCE")?,
        value_stats_cols: opt_strings(f, "_VALUE_STATS_COLS")?,
        external_path: access::opt(access::field(f, "_EXTERNAL_PATH")?)
            .map(|s| access::as_str(s).map(str::to_string))
            .transpose()?,
        first_row_id: access::opt_i64_field(f, "_FIRST_ROW_ID")?,
        write_cols: opt_strings(f, "_WRITE_COLS")?,
    })
}

/// Decodes one manifest entry record.
pub fn entry_from_avro(r: &AvroValue) -> Result<ManifestEntry> {
    let version = access::i64_field(r, "_VERSION")?;
    if version != MANIFEST_VERSION as i64 {
        return Err(Error::corrupt(format!(
            "unsupported manifest entry version {version}"
        )));
    }
    Ok(ManifestEntry {
        kind: match access::i64_field(r, "_KIND")? {
            0 => FileKind::Add,
            1 => FileKind::Delete,
            k => return Err(Error::corrupt(format!("unknown file kind {k}"))),
        },
        partition: access::bytes_field(r, "_PARTITION")?.to_vec(),
        bucket: access::i64_field(r, "_BUCKET")? as i32,
        total_buckets: access::i64_field(r, "_TOTAL_BUCKETS")? as i32,
        file: file_from(access::field(r, "_FILE")?).context("_FILE")?,
    })
}

fn meta_from(r: &AvroValue) -> Result<ManifestFileMeta> {
    Ok(ManifestFileMeta {
        file_name: access::str_field(r, "_FILE_NAME")?.to_string(),
        file_size: access::i64_field(r, "_FILE_SIZE")?,
        num_added_files: access::i64_field(r, "_NUM_ADDED_FILES")?,
        num_deleted_files: access::i64_field(r, "_NUM_DELETED_FILES")?,
        partition_stats: stats_from(access::field(r, "_PARTITION_STATS")?)?,
        schema_id: access::i64_field(r, "_SCHEMA_ID")?,
        min_bucket: opt_i32(r, "_MIN_BUCKET")?,
        max_bucket: opt_i32(r, "_MAX_BUCKET")?,
        min_level: opt_i32(r, "_MIN_LEVEL")?,
        max_level: opt_i32(r, "_MAX_LEVEL")?,
    })
}

/// Encodes entries as an Avro container (the format of manifest files, write results and
/// committables).
pub fn encode_entries(entries: &[ManifestEntry], codec: AvroCodec) -> Result<Vec<u8>> {
    let schema = manifest_entry_schema()?;
    avro::write_container(&schema, entries.iter().map(entry_to_avro), codec)
}

/// Decodes an Avro container of manifest entries.
pub fn decode_entries(bytes: &[u8]) -> Result<Vec<ManifestEntry>> {
    let records = avro::read_container_records(bytes)?;
    records.iter().map(entry_from_avro).collect()
}

/// Encodes a manifest list.
pub fn encode_manifest_list(metas: &[ManifestFileMeta], codec: AvroCodec) -> Result<Vec<u8>> {
    let schema = manifest_file_meta_schema()?;
    avro::write_container(&schema, metas.iter().map(meta_to_avro), codec)
}

/// Decodes a manifest list.
pub fn decode_manifest_list(bytes: &[u8]) -> Result<Vec<ManifestFileMeta>> {
    let records = avro::read_container_records(bytes)?;
    records.iter().map(meta_from).collect()
}

// ---- files ----------------------------------------------------------------------------------

/// The codec of Paimon's manifests when the table does not set `manifest.compression`
/// (Paimon's default: zstd).
pub const DEFAULT_MANIFEST_CODEC: AvroCodec = AvroCodec::Zstandard { level: 1 };

/// How a committer's new manifest files are named and encoded: named the way Paimon names
/// them (`manifest-<uuid>-<n>`, `manifest-list-<uuid>-<n>`, one uuid per committer), and
/// compressed with the table's `manifest.compression`.
#[derive(Debug)]
pub struct ManifestFiles {
    uuid: String,
    manifests: u32,
    lists: u32,
    /// The Avro codec of new manifests and manifest lists.
    pub codec: AvroCodec,
}

impl Default for ManifestFiles {
    fn default() -> Self {
        ManifestFiles {
            uuid: uuid::Uuid::new_v4().to_string(),
            manifests: 0,
            lists: 0,
            codec: DEFAULT_MANIFEST_CODEC,
        }
    }
}

impl ManifestFiles {
    /// Next manifest file name.
    pub fn manifest(&mut self) -> String {
        self.manifests += 1;
        format!("manifest-{}-{}", self.uuid, self.manifests - 1)
    }
    /// Next manifest list name.
    pub fn manifest_list(&mut self) -> String {
        self.lists += 1;
        format!("manifest-list-{}-{}", self.uuid, self.lists - 1)
    }
}

/// Path of a file in the manifest directory.
pub fn manifest_path(name: &str) -> String {
    format!("{MANIFEST_DIR}/{name}")
}

/// Compares two values of one type as Java compares Paimon's internal values; `None` for
/// values of different types.
pub fn cmp_values(a: &Value, b: &Value) -> Option<Ordering> {
    use Value::*;
    Some(match (a, b) {
        (Boolean(x), Boolean(y)) => x.cmp(y),
        (TinyInt(x), TinyInt(y)) => x.cmp(y),
        (SmallInt(x), SmallInt(y)) => x.cmp(y),
        (Int(x), Int(y)) => x.cmp(y),
        (BigInt(x), BigInt(y)) => x.cmp(y),
        (Float(x), Float(y)) => x.total_cmp(y),
        (Double(x), Double(y)) => x.total_cmp(y),
        (String(x), String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Binary(x), Binary(y)) => x.cmp(y),
        (Decimal(x), Decimal(y)) => x.cmp(y),
        (
            Timestamp {
                millis: m1,
                nanos_of_milli: n1,
            },
            Timestamp {
                millis: m2,
                nanos_of_milli: n2,
            },
        ) => (m1, n1).cmp(&(m2, n2)),
        _ => return None,
    })
}

/// Partition statistics of entries (Paimon collects them in full, not dense).
pub fn partition_stats(
    entries: &[ManifestEntry],
    partition_types: &[PaimonType],
) -> Result<SimpleStats> {
    let n = partition_types.len();
    let mut min: Vec<Option<Value>> = vec![None; n];
    let mut max: Vec<Option<Value>> = vec![None; n];
    let mut nulls = vec![0i64; n];
    for e in entries {
        let row = BinaryRowReader::new(&e.partition)?;
        if row.arity() != n {
            return Err(Error::corrupt(format!(
                "partition of arity {} in a table with {n} partition keys",
                row.arity()
            )));
        }
        for (i, ty) in partition_types.iter().enumerate() {
            match row.get(i, ty)? {
                None => nulls[i] += 1,
                Some(v) => {
                    if min[i]
                        .as_ref()
                        .is_none_or(|m| cmp_values(&v, m) == Some(Ordering::Less))
                    {
                        min[i] = Some(v.clone());
                    }
                    if max[i]
                        .as_ref()
                        .is_none_or(|m| cmp_values(&v, m) == Some(Ordering::Greater))
                    {
                        max[i] = Some(v);
                    }
                }
            }
        }
    }
    let (mut lo, mut hi) = (BinaryRowWriter::new(n), BinaryRowWriter::new(n));
    for (i, ty) in partition_types.iter().enumerate() {
        let ty = ty.with_nullable(true);
        lo.set(i, &ty, min[i].as_ref())?;
        hi.set(i, &ty, max[i].as_ref())?;
    }
    Ok(SimpleStats {
        min_values: lo.finish_serialized(),
        max_values: hi.finish_serialized(),
        null_counts: Some(nulls.into_iter().map(Some).collect()),
    })
}

/// Rough encoded size of an entry, to roll manifest files at the target size.
fn estimated_size(e: &ManifestEntry) -> u64 {
    (96 + e.partition.len()
        + e.file.file_name.len()
        + e.file.value_stats.min_values.len()
        + e.file.value_stats.max_values.len()
        + 2 * e.file.value_stats.null_counts.as_ref().map_or(0, Vec::len)
        + e.file.key_stats.min_values.len()
        + e.file.key_stats.max_values.len()) as u64
}

/// Writes entries into manifest files of about `target_size` bytes each (none when there are
/// no entries), returning their metadata.
pub fn write_manifests(
    storage: &dyn Storage,
    names: &mut ManifestFiles,
    entries: &[ManifestEntry],
    schema_id: i64,
    partition_types: &[PaimonType],
    target_size: u64,
) -> Result<Vec<ManifestFileMeta>> {
    let mut metas = Vec::new();
    let mut start = 0;
    while start < entries.len() {
        let mut end = start;
        let mut size = 0;
        while end < entries.len() && (end == start || size < target_size) {
            size += estimated_size(&entries[end]);
            end += 1;
        }
        let chunk = &entries[start..end];
        let name = names.manifest();
        let bytes = encode_entries(chunk, names.codec)?;
        storage
            .put(&manifest_path(&name), &bytes)
            .with_context(|| format!("writing manifest {name}"))?;
        metas.push(ManifestFileMeta {
            file_name: name,
            file_size: bytes.len() as i64,
            num_added_files: chunk.iter().filter(|e| e.kind == FileKind::Add).count() as i64,
            num_deleted_files: chunk.iter().filter(|e| e.kind == FileKind::Delete).count() as i64,
            partition_stats: partition_stats(chunk, partition_types)?,
            schema_id,
            min_bucket: chunk.iter().map(|e| e.bucket).min(),
            max_bucket: chunk.iter().map(|e| e.bucket).max(),
            min_level: chunk.iter().map(|e| e.file.level).min(),
            max_level: chunk.iter().map(|e| e.file.level).max(),
        });
        start = end;
    }
    Ok(metas)
}

/// Reads the entries of one manifest file.
pub fn read_manifest(storage: &dyn Storage, name: &str) -> Result<Vec<ManifestEntry>> {
    let bytes = storage
        .get(&manifest_path(name))
        .with_context(|| format!("reading manifest {name}"))?;
    decode_entries(&bytes).with_context(|| format!("decoding manifest {name}"))
}

/// Writes a manifest list, returning `(name, size)`.
pub fn write_manifest_list(
    storage: &dyn Storage,
    names: &mut ManifestFiles,
    metas: &[ManifestFileMeta],
) -> Result<(String, i64)> {
    let name = names.manifest_list();
    let bytes = encode_manifest_list(metas, names.codec)?;
    storage
        .put(&manifest_path(&name), &bytes)
        .with_context(|| format!("writing manifest list {name}"))?;
    Ok((name, bytes.len() as i64))
}

/// Reads a manifest list.
pub fn read_manifest_list(storage: &dyn Storage, name: &str) -> Result<Vec<ManifestFileMeta>> {
    let bytes = storage
        .get(&manifest_path(name))
        .with_context(|| format!("reading manifest list {name}"))?;
    decode_manifest_list(&bytes).with_context(|| format!("decoding manifest list {name}"))
}

/// Merges ADD/DELETE entries: a DELETE cancels an earlier ADD of the same file (Paimon
/// `FileEntry.mergeEntries`); unmatched DELETEs are kept.
pub fn merge_entries(entries: Vec<ManifestEntry>) -> Vec<ManifestEntry> {
    let mut out: Vec<Option<ManifestEntry>> = Vec::with_capacity(entries.len());
    let mut index = std::collections::HashMap::new();
    for e in entries {
        let id = e.identifier();
        match (e.kind, index.get(&id).copied()) {
            (FileKind::Delete, Some(i)) => {
                out[i] = None;
                index.remove(&id);
            }
            _ => {
                index.insert(id, out.len());
                out.push(Some(e));
            }
        }
    }
    out.into_iter().flatten().collect()
}

/// Paimon's minor manifest compaction (`ManifestFileMerger.tryMinorCompaction`): consecutive
/// manifests are merged once they add up to `target_size`, and the small tail is merged when
/// it has at least `min_count` files. Returns the new list and the names of files written.
pub fn merge_manifests(
    storage: &dyn Storage,
    names: &mut ManifestFiles,
    input: Vec<ManifestFileMeta>,
    schema_id: i64,
    partition_types: &[PaimonType],
    target_size: u64,
    min_count: usize,
) -> Result<(Vec<ManifestFileMeta>, Vec<String>)> {
    let mut result = Vec::new();
    let mut written = Vec::new();
    let mut candidates: Vec<ManifestFileMeta> = Vec::new();
    let mut total = 0u64;
    let mut merge = |candidates: &mut Vec<ManifestFileMeta>,
                     result: &mut Vec<ManifestFileMeta>|
     -> Result<()> {
        if candidates.len() <= 1 {
            result.append(candidates);
            return Ok(());
        }
        let mut entries = Vec::new();
        for m in candidates.iter() {
            entries.extend(read_manifest(storage, &m.file_name)?);
        }
        let merged = merge_entries(entries);
        let metas = write_manifests(
            storage,
            names,
            &merged,
            schema_id,
            partition_types,
            target_size,
        )?;
        written.extend(metas.iter().map(|m| m.file_name.clone()));
        result.extend(metas);
        candidates.clear();
        Ok(())
    };
    for m in input {
        total += m.file_size.max(0) as u64;
        candidates.push(m);
        if total >= target_size {
            merge(&mut candidates, &mut result)?;
            total = 0;
        }
    }
    if candidates.len() >= min_count {
        merge(&mut candidates, &mut result)?;
    } else {
        result.append(&mut candidates);
    }
    Ok((result, written))
}

#[cfg(test)]
pub(crate) mod tests {
    use fluss_lake_guest_sdk::storage::MemoryStorage;

    use super::*;
    use crate::binary_row::{empty_row, to_serialized_row};

    pub(crate) fn entry(name: &str, bucket: i32, rows: i64) -> ManifestEntry {
        ManifestEntry {
            kind: FileKind::Add,
            partition: empty_row(),
            bucket,
            total_buckets: 3,
            file: DataFileMeta {
                file_name: name.to_string(),
                file_size: 100,
                row_count: rows,
                min_key: empty_row(),
                max_key: empty_row(),
                key_stats: SimpleStats::empty(),
                value_stats: SimpleStats {
                    min_values: empty_row(),
                    max_values: empty_row(),
                    null_counts: Some(vec![Some(0), None]),
                },
                min_sequence_number: 0,
                max_sequence_number: rows - 1,
                schema_id: 0,
                level: 0,
                extra_files: vec![],
                creation_time: Some(1_700_000_000_000),
                delete_row_count: Some(0),
                embedded_index: None,
                file_source: Some(0),
                value_stats_cols: None,
                external_path: None,
                first_row_id: None,
                write_cols: None,
            },
        }
    }

    #[test]
    fn avro_schemas_use_paimon_names_in_paimon_order() {
        let schema: serde_json::Value =
            serde_json::from_str(&manifest_entry_schema_json()).unwrap();
        let names: Vec<_> = schema["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "_VERSION",
                "_KIND",
                "_PARTITION",
                "_BUCKET",
                "_TOTAL_BUCKETS",
                "_FILE"
            ]
        );
        let file = &schema["fields"][5]["type"];
        assert_eq!(
            file["name"],
            "org.apache.paimon.avro.generated.record__FILE"
        );
        let names: Vec<_> = file["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "_FILE_NAME",
                "_FILE_SIZE",
                "_ROW_COUNT",
                "_MIN_KEY",
                "_MAX_KEY",
                "_KEY_STATS",
                "_VALUE_STATS",
                "_MIN_SEQUENCE_NUMBER",
                "_MAX_SEQUENCE_NUMBER",
                "_SCHEMA_ID",
                "_LEVEL",
                "_EXTRA_FILES",
                "_CREATION_TIME",
                "_DELETE_ROW_COUNT",
                "_EMBEDDED_FILE_INDEX",
                "_FILE_SOURCE",
                "_VALUE_STATS_COLS",
                "_EXTERNAL_PATH",
                "_FIRST_ROW_ID",
                "_WRITE_COLS"
            ]
        );
        assert_eq!(
            file["fields"][6]["type"]["name"],
            "org.apache.paimon.avro.generated.record__FILE__VALUE_STATS"
        );
        let list: serde_json::Value =
            serde_json::from_str(&manifest_file_meta_schema_json()).unwrap();
        let names: Vec<_> = list["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "_VERSION",
                "_FILE_NAME",
                "_FILE_SIZE",
                "_NUM_ADDED_FILES",
                "_NUM_DELETED_FILES",
                "_PARTITION_STATS",
                "_SCHEMA_ID",
                "_MIN_BUCKET",
                "_MAX_BUCKET",
                "_MIN_LEVEL",
                "_MAX_LEVEL"
            ]
        );
    }

    #[test]
    fn manifest_round_trip() {
        let entries = vec![
            entry("data-a-0.parquet", 0, 10),
            entry("data-b-0.parquet", 2, 5),
        ];
        let bytes = encode_entries(&entries, DEFAULT_MANIFEST_CODEC).unwrap();
        assert_eq!(decode_entries(&bytes).unwrap(), entries);
        // The container records carry Paimon's field names.
        let (_, recs) = avro::read_container(&bytes).unwrap();
        let file = access::field(&recs[0], "_FILE").unwrap();
        assert_eq!(
            access::str_field(file, "_FILE_NAME").unwrap(),
            "data-a-0.parquet"
        );

        let storage = MemoryStorage::new();
        let mut names = ManifestFiles::default();
        let metas = write_manifests(&storage, &mut names, &entries, 0, &[], 8 << 20).unwrap();
        assert_eq!(metas.len(), 1);
        assert_eq!(
            (metas[0].min_bucket, metas[0].max_bucket),
            (Some(0), Some(2))
        );
        assert_eq!(metas[0].num_added_files, 2);
        assert_eq!(metas[0].partition_stats, SimpleStats::empty());
        assert_eq!(
            read_manifest(&storage, &metas[0].file_name).unwrap(),
            entries
        );
        let (list, _) = write_manifest_list(&storage, &mut names, &metas).unwrap();
        assert_eq!(read_manifest_list(&storage, &list).unwrap(), metas);
        let (empty, _) = write_manifest_list(&storage, &mut names, &[]).unwrap();
        assert!(read_manifest_list(&storage, &empty).unwrap().is_empty());
    }

    #[test]
    fn merges_small_manifests_once_there_are_enough() {
        let storage = MemoryStorage::new();
        let mut names = ManifestFiles::default();
        let mut metas = Vec::new();
        for i in 0..5 {
            metas.extend(
                write_manifests(
                    &storage,
                    &mut names,
                    &[entry(&format!("f{i}"), 0, 1)],
                    0,
                    &[],
                    8 << 20,
                )
                .unwrap(),
            );
        }
        let (same, written) =
            merge_manifests(&storage, &mut names, metas.clone(), 0, &[], 8 << 20, 30).unwrap();
        assert_eq!(same, metas);
        assert!(written.is_empty());
        let (merged, written) =
            merge_manifests(&storage, &mut names, metas, 0, &[], 8 << 20, 5).unwrap();
        assert_eq!(merged.len(), 1);
        assert_eq!(written.len(), 1);
        assert_eq!(merged[0].num_added_files, 5);
        let names: Vec<_> = read_manifest(&storage, &merged[0].file_name)
            .unwrap()
            .into_iter()
            .map(|e| e.file.file_name)
            .collect();
        assert_eq!(names, ["f0", "f1", "f2", "f3", "f4"]);
    }

    #[test]
    fn delete_cancels_add() {
        let a = entry("a", 0, 1);
        let mut del = a.clone();
        del.kind = FileKind::Delete;
        let b = entry("b", 0, 1);
        assert_eq!(merge_entries(vec![a, b.clone(), del]), vec![b]);
    }

    #[test]
    fn partition_stats_span_entries() {
        let s = PaimonType::parse("STRING").unwrap();
        let mut e1 = entry("a", 0, 1);
        e1.partition = to_serialized_row(&[(&s, Some(&Value::String("b".into())))]).unwrap();
        let mut e2 = entry("b", 0, 1);
        e2.partition = to_serialized_row(&[(&s, Some(&Value::String("a".into())))]).unwrap();
        let st = partition_stats(&[e1.clone(), e2.clone()], &[s]).unwrap();
        assert_eq!(st.min_values, e2.partition);
        assert_eq!(st.max_values, e1.partition);
        assert_eq!(st.null_counts, Some(vec![Some(0)]));
    }
}
