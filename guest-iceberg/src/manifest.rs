//! Manifests and manifest lists (Avro, format version 2). Every Avro field carries its
//! Iceberg `field-id` (readers resolve by id: pyiceberg refuses files without them); record
//! and map-entry names follow Java's `V2Metadata` so name-based readers (DuckDB) agree too.

use apache_avro::types::Value as Avro;
use fluss_lake_guest_sdk::avro::{self, AvroCodec, access};
use fluss_lake_guest_sdk::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::partition::{PartitionSpec, PartitionValue};
use crate::schema::IcebergSchema;
use crate::types::IcebergType;

/// Content of a data or delete file (`data_file.content`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileContent {
    Data = 0,
    PositionDeletes = 1,
    EqualityDeletes = 2,
}

/// A data or delete file written by a round (also the writer's result payload).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataFile {
    pub content: FileContent,
    /// Absolute URI, as stored in manifests.
    pub file_path: String,
    pub record_count: i64,
    pub file_size_in_bytes: i64,
    pub spec_id: i32,
    pub partition: Vec<Option<PartitionValue>>,
    pub value_counts: Vec<(i32, i64)>,
    pub null_value_counts: Vec<(i32, i64)>,
    pub lower_bounds: Vec<(i32, Vec<u8>)>,
    pub upper_bounds: Vec<(i32, Vec<u8>)>,
    pub equality_ids: Option<Vec<i32>>,
    pub sort_order_id: Option<i32>,
    /// For position deletes against a single data file.
    pub referenced_data_file: Option<String>,
}

fn map_field(name: &str, id: i32, key_id: i32, value_id: i32, value_type: &str) -> Value {
    json!({"name": name, "type": ["null", {"type": "array", "logicalType": "map",
        "items": {"type": "record", "name": format!("k{key_id}_v{value_id}"), "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value_type, "field-id": value_id}]}}],
        "default": null, "field-id": id})
}

/// The `manifest_entry` Avro schema for a partition tuple of `partition_types`.
fn manifest_entry_schema(spec: &PartitionSpec, partition_types: &[IcebergType]) -> Value {
    let partition_fields: Vec<Value> = spec
        .fields
        .iter()
        .zip(partition_types)
        .map(|(f, t)| {
            json!({"name": f.name, "type": ["null", t.avro_type()], "default": null,
                "field-id": f.field_id})
        })
        .collect();
    json!({"type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": ["null", "long"], "default": null, "field-id": 1},
        {"name": "sequence_number", "type": ["null", "long"], "default": null, "field-id": 3},
        {"name": "file_sequence_number", "type": ["null", "long"], "default": null, "field-id": 4},
        {"name": "data_file", "field-id": 2, "type": {"type": "record", "name": "r2", "fields": [
            {"name": "content", "type": "int", "field-id": 134},
            {"name": "file_path", "type": "string", "field-id": 100},
            {"name": "file_format", "type": "string", "field-id": 101},
            {"name": "partition", "type": {"type": "record", "name": "r102",
                "fields": partition_fields}, "field-id": 102},
            {"name": "record_count", "type": "long", "field-id": 103},
            {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
            map_field("column_sizes", 108, 117, 118, "long"),
            map_field("value_counts", 109, 119, 120, "long"),
            map_field("null_value_counts", 110, 121, 122, "long"),
            map_field("nan_value_counts", 137, 138, 139, "long"),
            map_field("lower_bounds", 125, 126, 127, "bytes"),
            map_field("upper_bounds", 128, 129, 130, "bytes"),
            {"name": "key_metadata", "type": ["null", "bytes"], "default": null, "field-id": 131},
            {"name": "split_offsets", "type": ["null", {"type": "array", "items": "long",
                "element-id": 133}], "default": null, "field-id": 132},
            {"name": "equality_ids", "type": ["null", {"type": "array", "items": "int",
                "element-id": 136}], "default": null, "field-id": 135},
            {"name": "sort_order_id", "type": ["null", "int"], "default": null, "field-id": 140},
            {"name": "referenced_data_file", "type": ["null", "string"], "default": null,
                "field-id": 143}
        ]}}
    ]})
}

fn null() -> Avro {
    Avro::Union(0, Box::new(Avro::Null))
}

fn some(v: Avro) -> Avro {
    Avro::Union(1, Box::new(v))
}

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Avro) -> Avro {
    v.map_or_else(null, |v| some(f(v)))
}

fn kv_array<V: Clone>(pairs: &[(i32, V)], f: impl Fn(V) -> Avro) -> Avro {
    if pairs.is_empty() {
        return null();
    }
    some(Avro::Array(
        pairs
            .iter()
            .map(|(k, v)| {
                Avro::Record(vec![
                    ("key".into(), Avro::Int(*k)),
                    ("value".into(), f(v.clone())),
                ])
            })
            .collect(),
    ))
}

fn partition_value(v: &Option<PartitionValue>) -> Avro {
    match v {
        None => null(),
        Some(PartitionValue::Int(i)) => some(Avro::Int(*i)),
        Some(PartitionValue::String(s)) => some(Avro::String(s.clone())),
    }
}

fn data_file_record(f: &DataFile, spec: &PartitionSpec, carried: &CarriedFields) -> Avro {
    Avro::Record(vec![
        ("content".into(), Avro::Int(f.content as i32)),
        ("file_path".into(), Avro::String(f.file_path.clone())),
        ("file_format".into(), Avro::String(carried.format().into())),
        (
            "partition".into(),
            Avro::Record(
                spec.fields
                    .iter()
                    .zip(&f.partition)
                    .map(|(pf, v)| (pf.name.clone(), partition_value(v)))
                    .collect(),
            ),
        ),
        ("record_count".into(), Avro::Long(f.record_count)),
        (
            "file_size_in_bytes".into(),
            Avro::Long(f.file_size_in_bytes),
        ),
        (
            "column_sizes".into(),
            kv_array(&carried.column_sizes, Avro::Long),
        ),
        ("value_counts".into(), kv_array(&f.value_counts, Avro::Long)),
        (
            "null_value_counts".into(),
            kv_array(&f.null_value_counts, Avro::Long),
        ),
        (
            "nan_value_counts".into(),
            kv_array(&carried.nan_value_counts, Avro::Long),
        ),
        (
            "lower_bounds".into(),
            kv_array(&f.lower_bounds, Avro::Bytes),
        ),
        (
            "upper_bounds".into(),
            kv_array(&f.upper_bounds, Avro::Bytes),
        ),
        (
            "key_metadata".into(),
            opt(carried.key_metadata.clone(), Avro::Bytes),
        ),
        (
            "split_offsets".into(),
            opt(carried.split_offsets.clone(), |o| {
                Avro::Array(o.into_iter().map(Avro::Long).collect())
            }),
        ),
        (
            "equality_ids".into(),
            opt(f.equality_ids.clone(), |ids| {
                Avro::Array(ids.into_iter().map(Avro::Int).collect())
            }),
        ),
        ("sort_order_id".into(), opt(f.sort_order_id, Avro::Int)),
        (
            "referenced_data_file".into(),
            opt(f.referenced_data_file.clone(), Avro::String),
        ),
    ])
}

/// Entry status (`manifest_entry.status`): a file carried over from an earlier snapshot.
pub const STATUS_EXISTING: i32 = 0;
/// Entry status of a file the manifest's snapshot added.
pub const STATUS_ADDED: i32 = 1;
/// Entry status of a file a snapshot deleted.
pub const STATUS_DELETED: i32 = 2;

/// `manifest_file.content` of a manifest of data files.
pub const MANIFEST_DATA: i32 = 0;
/// `manifest_file.content` of a manifest of delete files.
pub const MANIFEST_DELETES: i32 = 1;

impl FileContent {
    /// The content of `data_file.content`.
    pub fn from_i32(v: i32) -> Result<FileContent> {
        match v {
            0 => Ok(FileContent::Data),
            1 => Ok(FileContent::PositionDeletes),
            2 => Ok(FileContent::EqualityDeletes),
            other => Err(Error::corrupt(format!("data_file.content {other}"))),
        }
    }

    /// The `manifest_file.content` of a manifest holding files of this content.
    pub fn manifest_content(self) -> i32 {
        match self {
            FileContent::Data => MANIFEST_DATA,
            _ => MANIFEST_DELETES,
        }
    }
}

/// Fields of `data_file` this plugin does not interpret but must carry unchanged when it
/// rewrites an entry another writer made (a merge or a filter rewrites every entry of a
/// manifest).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CarriedFields {
    /// `file_format`; `None` is `PARQUET`, what this plugin writes.
    pub file_format: Option<String>,
    pub column_sizes: Vec<(i32, i64)>,
    pub nan_value_counts: Vec<(i32, i64)>,
    pub key_metadata: Option<Vec<u8>>,
    pub split_offsets: Option<Vec<i64>>,
}

impl CarriedFields {
    /// The file's format as manifests spell it (`PARQUET`, `ORC`, `AVRO`).
    pub fn format(&self) -> &str {
        self.file_format.as_deref().unwrap_or("PARQUET")
    }
}

/// An entry of a manifest, whole: what rewriting it (merge, filter) needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntry {
    /// [`STATUS_EXISTING`], [`STATUS_ADDED`] or [`STATUS_DELETED`].
    pub status: i32,
    /// The snapshot that added (or deleted) the file, inherited from the manifest when read.
    pub snapshot_id: Option<i64>,
    /// The data sequence number (inherited for added entries when read).
    pub sequence_number: Option<i64>,
    pub file_sequence_number: Option<i64>,
    pub file: DataFile,
    pub carried: CarriedFields,
}

impl ManifestEntry {
    /// Not deleted: the file is part of the snapshot that lists the manifest.
    pub fn is_live(&self) -> bool {
        self.status != STATUS_DELETED
    }

    /// The data sequence number (0 when unknown: a v1 file, older than everything).
    pub fn data_sequence_number(&self) -> i64 {
        self.sequence_number.unwrap_or(0)
    }
}

/// The Avro schema and header of the manifests of one partition spec.
pub struct ManifestSchema {
    avro: avro::Schema,
    spec: PartitionSpec,
    header: Vec<(&'static str, String)>,
}

impl ManifestSchema {
    pub fn new(schema: &IcebergSchema, spec: &PartitionSpec) -> Result<ManifestSchema> {
        let types = spec.result_types(schema)?;
        let avro = avro::parse_schema(&manifest_entry_schema(spec, &types).to_string())?;
        Ok(ManifestSchema {
            avro,
            spec: spec.clone(),
            header: vec![
                ("schema", schema.to_json().to_string()),
                ("schema-id", schema.schema_id.to_string()),
                ("partition-spec", spec.fields_json().to_string()),
                ("partition-spec-id", spec.spec_id.to_string()),
                ("format-version", "2".to_string()),
            ],
        })
    }

    pub fn spec(&self) -> &PartitionSpec {
        &self.spec
    }

    /// A writer of a manifest of `content` (data or deletes, [`MANIFEST_DATA`] /
    /// [`MANIFEST_DELETES`]) committed by snapshot `snapshot_id` at `sequence_number`.
    pub fn writer(
        &self,
        content: i32,
        snapshot_id: i64,
        sequence_number: i64,
    ) -> Result<ManifestWriter<'_>> {
        let mut writer = apache_avro::Writer::with_codec(
            &self.avro,
            Vec::new(),
            apache_avro::Codec::Deflate(apache_avro::DeflateSettings::default()),
        );
        let kind = if content == MANIFEST_DATA {
            "data"
        } else {
            "deletes"
        };
        for (k, v) in self
            .header
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .chain([("content", kind)])
        {
            writer
                .add_user_metadata(k.to_string(), v.as_bytes())
                .map_err(|e| Error::internal(format!("avro metadata {k}: {e}")))?;
        }
        Ok(ManifestWriter {
            spec: &self.spec,
            writer,
            content,
            snapshot_id,
            sequence_number,
            counts: [(0, 0); 3],
            partitions: vec![PartitionRange::default(); self.spec.fields.len()],
            min_sequence_number: None,
        })
    }
}

#[derive(Debug, Clone, Default)]
struct PartitionRange {
    contains_null: bool,
    lower: Option<PartitionValue>,
    upper: Option<PartitionValue>,
}

/// Writes one manifest entry by entry (streamed: a merge of many manifests holds one input
/// manifest and the output's encoded bytes), keeping the counts, partition summaries and
/// minimum sequence number its manifest-list entry needs, as Java's `ManifestWriter` does.
pub struct ManifestWriter<'a> {
    spec: &'a PartitionSpec,
    writer: apache_avro::Writer<'a, Vec<u8>>,
    content: i32,
    snapshot_id: i64,
    sequence_number: i64,
    /// (files, rows) of existing, added and deleted entries, by status.
    counts: [(i32, i64); 3],
    partitions: Vec<PartitionRange>,
    min_sequence_number: Option<i64>,
}

impl ManifestWriter<'_> {
    /// A file added by this snapshot; `data_sequence_number` `None` inherits the snapshot's
    /// (what a commit appending new files writes, so a retry at another sequence number
    /// stays right), `Some` is explicit (a rewrite keeping the starting sequence number).
    pub fn add(&mut self, file: &DataFile, data_sequence_number: Option<i64>) -> Result<()> {
        self.append(
            STATUS_ADDED,
            Some(self.snapshot_id),
            data_sequence_number,
            None,
            file,
            &CarriedFields::default(),
        )
    }

    /// An entry of an earlier manifest carried as it is: `EXISTING` with its snapshot and
    /// sequence numbers, or `ADDED` when this snapshot added it.
    pub fn keep(&mut self, e: &ManifestEntry) -> Result<()> {
        if e.status == STATUS_ADDED && e.snapshot_id == Some(self.snapshot_id) {
            return self.append(
                STATUS_ADDED,
                e.snapshot_id,
                e.sequence_number,
                e.file_sequence_number,
                &e.file,
                &e.carried,
            );
        }
        self.append(
            STATUS_EXISTING,
            e.snapshot_id,
            e.sequence_number,
            e.file_sequence_number,
            &e.file,
            &e.carried,
        )
    }

    /// A file this snapshot deletes: `DELETED` by this snapshot, its sequence numbers kept.
    pub fn delete(&mut self, e: &ManifestEntry) -> Result<()> {
        self.append(
            STATUS_DELETED,
            Some(self.snapshot_id),
            e.sequence_number,
            e.file_sequence_number,
            &e.file,
            &e.carried,
        )
    }

    /// A `DELETED` entry of this snapshot carried into a merged manifest.
    pub fn keep_deleted(&mut self, e: &ManifestEntry) -> Result<()> {
        self.delete(e)
    }

    /// Entries written so far.
    pub fn entries(&self) -> i32 {
        self.counts.iter().map(|(f, _)| f).sum()
    }

    fn append(
        &mut self,
        status: i32,
        snapshot_id: Option<i64>,
        sequence_number: Option<i64>,
        file_sequence_number: Option<i64>,
        file: &DataFile,
        carried: &CarriedFields,
    ) -> Result<()> {
        if file.content.manifest_content() != self.content {
            return Err(Error::internal("a manifest mixes data and delete files"));
        }
        if file.partition.len() != self.spec.fields.len() {
            return Err(Error::internal(format!(
                "{} has {} partition values, spec {} has {} fields",
                file.file_path,
                file.partition.len(),
                self.spec.spec_id,
                self.spec.fields.len()
            )));
        }
        let record = Avro::Record(vec![
            ("status".into(), Avro::Int(status)),
            ("snapshot_id".into(), opt(snapshot_id, Avro::Long)),
            ("sequence_number".into(), opt(sequence_number, Avro::Long)),
            (
                "file_sequence_number".into(),
                opt(file_sequence_number, Avro::Long),
            ),
            (
                "data_file".into(),
                data_file_record(file, self.spec, carried),
            ),
        ]);
        self.writer
            .append(record)
            .map_err(|e| Error::internal(format!("avro encode: {e}")))?;
        let c = &mut self.counts[status as usize];
        c.0 += 1;
        c.1 += file.record_count;
        for (range, v) in self.partitions.iter_mut().zip(&file.partition) {
            match v {
                None => range.contains_null = true,
                Some(v) => {
                    if range.lower.as_ref().is_none_or(|l| v < l) {
                        range.lower = Some(v.clone());
                    }
                    if range.upper.as_ref().is_none_or(|u| v > u) {
                        range.upper = Some(v.clone());
                    }
                }
            }
        }
        if status != STATUS_DELETED {
            let seq = sequence_number.unwrap_or(self.sequence_number);
            self.min_sequence_number = Some(self.min_sequence_number.map_or(seq, |m| m.min(seq)));
        }
        Ok(())
    }

    /// The manifest's bytes and its manifest-list entry, for the manifest stored at
    /// `manifest_path` (absolute) with those bytes.
    pub fn finish(self, manifest_path: String) -> Result<(Vec<u8>, ManifestFile)> {
        let bytes = self
            .writer
            .into_inner()
            .map_err(|e| Error::internal(format!("avro encode: {e}")))?;
        let [existing, added, deleted] = self.counts;
        let manifest = ManifestFile {
            manifest_path,
            manifest_length: bytes.len() as i64,
            partition_spec_id: self.spec.spec_id,
            content: self.content,
            sequence_number: self.sequence_number,
            min_sequence_number: self.min_sequence_number.unwrap_or(self.sequence_number),
            added_snapshot_id: self.snapshot_id,
            added_files_count: added.0,
            existing_files_count: existing.0,
            deleted_files_count: deleted.0,
            added_rows_count: added.1,
            existing_rows_count: existing.1,
            deleted_rows_count: deleted.1,
            partitions: Some(
                self.partitions
                    .into_iter()
                    .map(|r| FieldSummary {
                        contains_null: r.contains_null,
                        contains_nan: Some(false),
                        lower_bound: r.lower.as_ref().map(PartitionValue::to_bytes),
                        upper_bound: r.upper.as_ref().map(PartitionValue::to_bytes),
                    })
                    .collect(),
            ),
            key_metadata: None,
        };
        Ok((bytes, manifest))
    }
}

/// Writes a manifest of `files`, all ADDED by `snapshot_id` with inherited sequence numbers
/// (a commit's new files), all of one content class (data, or deletes).
pub fn write_manifest(
    schema: &IcebergSchema,
    spec: &PartitionSpec,
    snapshot_id: i64,
    files: &[DataFile],
) -> Result<Vec<u8>> {
    let content = files
        .first()
        .map_or(MANIFEST_DATA, |f| f.content.manifest_content());
    let manifest_schema = ManifestSchema::new(schema, spec)?;
    let mut w = manifest_schema.writer(content, snapshot_id, 0)?;
    for f in files {
        w.add(f, None)?;
    }
    Ok(w.finish(String::new())?.0)
}

/// Summary of one partition field over a manifest's files (`field_summary`).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSummary {
    pub contains_null: bool,
    pub contains_nan: Option<bool>,
    pub lower_bound: Option<Vec<u8>>,
    pub upper_bound: Option<Vec<u8>>,
}

/// An entry of a manifest list (`manifest_file`).
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestFile {
    pub manifest_path: String,
    pub manifest_length: i64,
    pub partition_spec_id: i32,
    /// 0 data, 1 deletes.
    pub content: i32,
    pub sequence_number: i64,
    pub min_sequence_number: i64,
    pub added_snapshot_id: i64,
    pub added_files_count: i32,
    pub existing_files_count: i32,
    pub deleted_files_count: i32,
    pub added_rows_count: i64,
    pub existing_rows_count: i64,
    pub deleted_rows_count: i64,
    pub partitions: Option<Vec<FieldSummary>>,
    pub key_metadata: Option<Vec<u8>>,
}

impl ManifestFile {
    /// Whether a snapshot other than the one that wrote it still needs this manifest: it
    /// lists a live file (Java's `shouldKeep`: a manifest of only `DELETED` entries matters
    /// to the snapshot that wrote it alone).
    pub fn has_live_files(&self) -> bool {
        self.added_files_count > 0 || self.existing_files_count > 0
    }

    /// Files the manifest lists alive.
    pub fn live_files(&self) -> i64 {
        self.added_files_count as i64 + self.existing_files_count as i64
    }
}

const MANIFEST_LIST_SCHEMA: &str = r#"{"type": "record", "name": "manifest_file", "fields": [
  {"name": "manifest_path", "type": "string", "field-id": 500},
  {"name": "manifest_length", "type": "long", "field-id": 501},
  {"name": "partition_spec_id", "type": "int", "field-id": 502},
  {"name": "content", "type": "int", "field-id": 517},
  {"name": "sequence_number", "type": "long", "field-id": 515},
  {"name": "min_sequence_number", "type": "long", "field-id": 516},
  {"name": "added_snapshot_id", "type": "long", "field-id": 503},
  {"name": "added_files_count", "type": "int", "field-id": 504},
  {"name": "existing_files_count", "type": "int", "field-id": 505},
  {"name": "deleted_files_count", "type": "int", "field-id": 506},
  {"name": "added_rows_count", "type": "long", "field-id": 512},
  {"name": "existing_rows_count", "type": "long", "field-id": 513},
  {"name": "deleted_rows_count", "type": "long", "field-id": 514},
  {"name": "partitions", "type": ["null", {"type": "array", "element-id": 508, "items": {
      "type": "record", "name": "r508", "fields": [
        {"name": "contains_null", "type": "boolean", "field-id": 509},
        {"name": "contains_nan", "type": ["null", "boolean"], "default": null, "field-id": 518},
        {"name": "lower_bound", "type": ["null", "bytes"], "default": null, "field-id": 510},
        {"name": "upper_bound", "type": ["null", "bytes"], "default": null, "field-id": 511}]}}],
    "default": null, "field-id": 507},
  {"name": "key_metadata", "type": ["null", "bytes"], "default": null, "field-id": 519}
]}"#;

/// Writes a manifest list with the file metadata Java writes.
pub fn write_manifest_list(
    manifests: &[ManifestFile],
    snapshot_id: i64,
    parent_snapshot_id: Option<i64>,
    sequence_number: i64,
) -> Result<Vec<u8>> {
    let schema = avro::parse_schema(MANIFEST_LIST_SCHEMA)?;
    let records = manifests.iter().map(|m| {
        let partitions = opt(m.partitions.clone(), |ps| {
            Avro::Array(
                ps.into_iter()
                    .map(|p| {
                        Avro::Record(vec![
                            ("contains_null".into(), Avro::Boolean(p.contains_null)),
                            ("contains_nan".into(), opt(p.contains_nan, Avro::Boolean)),
                            ("lower_bound".into(), opt(p.lower_bound, Avro::Bytes)),
                            ("upper_bound".into(), opt(p.upper_bound, Avro::Bytes)),
                        ])
                    })
                    .collect(),
            )
        });
        Avro::Record(vec![
            (
                "manifest_path".into(),
                Avro::String(m.manifest_path.clone()),
            ),
            ("manifest_length".into(), Avro::Long(m.manifest_length)),
            ("partition_spec_id".into(), Avro::Int(m.partition_spec_id)),
            ("content".into(), Avro::Int(m.content)),
            ("sequence_number".into(), Avro::Long(m.sequence_number)),
            (
                "min_sequence_number".into(),
                Avro::Long(m.min_sequence_number),
            ),
            ("added_snapshot_id".into(), Avro::Long(m.added_snapshot_id)),
            ("added_files_count".into(), Avro::Int(m.added_files_count)),
            (
                "existing_files_count".into(),
                Avro::Int(m.existing_files_count),
            ),
            (
                "deleted_files_count".into(),
                Avro::Int(m.deleted_files_count),
            ),
            ("added_rows_count".into(), Avro::Long(m.added_rows_count)),
            (
                "existing_rows_count".into(),
                Avro::Long(m.existing_rows_count),
            ),
            (
                "deleted_rows_count".into(),
                Avro::Long(m.deleted_rows_count),
            ),
            ("partitions".into(), partitions),
            (
                "key_metadata".into(),
                opt(m.key_metadata.clone(), Avro::Bytes),
            ),
        ])
    });
    let metadata = [
        ("snapshot-id", snapshot_id.to_string()),
        (
            "parent-snapshot-id",
            parent_snapshot_id.map_or("null".to_string(), |p| p.to_string()),
        ),
        ("sequence-number", sequence_number.to_string()),
        ("format-version", "2".to_string()),
    ];
    avro::write_container_with_metadata(&schema, records, AvroCodec::Deflate, &metadata)
}

/// Reads a manifest list (ours or Java's) so a commit can carry its manifests forward.
pub fn read_manifest_list(bytes: &[u8]) -> Result<Vec<ManifestFile>> {
    let (_, records) = avro::read_container(bytes)?;
    records
        .iter()
        .map(|r| {
            let int = |k: &str| access::i64_field(r, k);
            let opt_int = |k: &str| access::opt_i64_field(r, k);
            let opt_bytes = |v: &Avro, k: &str| -> Result<Option<Vec<u8>>> {
                access::opt(access::field(v, k)?)
                    .map(|b| access::as_bytes(b).map(<[u8]>::to_vec))
                    .transpose()
            };
            let partitions = match access::opt(access::field(r, "partitions")?) {
                None => None,
                Some(a) => Some(
                    access::as_array(a)?
                        .iter()
                        .map(|p| {
                            Ok(FieldSummary {
                                contains_null: matches!(
                                    access::unwrap_union(access::field(p, "contains_null")?),
                                    Avro::Boolean(true)
                                ),
                                contains_nan: match access::opt(access::field(p, "contains_nan")?) {
                                    Some(Avro::Boolean(b)) => Some(*b),
                                    _ => None,
                                },
                                lower_bound: opt_bytes(p, "lower_bound")?,
                                upper_bound: opt_bytes(p, "upper_bound")?,
                            })
                        })
                        .collect::<Result<Vec<_>>>()?,
                ),
            };
            let sequence_number = int("sequence_number")?;
            Ok(ManifestFile {
                manifest_path: access::str_field(r, "manifest_path")?.to_string(),
                manifest_length: int("manifest_length")?,
                partition_spec_id: int("partition_spec_id")? as i32,
                content: opt_int("content")?.unwrap_or(0) as i32,
                sequence_number,
                min_sequence_number: opt_int("min_sequence_number")?.unwrap_or(sequence_number),
                added_snapshot_id: int("added_snapshot_id")?,
                added_files_count: opt_int("added_files_count")?.unwrap_or(0) as i32,
                existing_files_count: opt_int("existing_files_count")?.unwrap_or(0) as i32,
                deleted_files_count: opt_int("deleted_files_count")?.unwrap_or(0) as i32,
                added_rows_count: opt_int("added_rows_count")?.unwrap_or(0),
                existing_rows_count: opt_int("existing_rows_count")?.unwrap_or(0),
                deleted_rows_count: opt_int("deleted_rows_count")?.unwrap_or(0),
                partitions,
                key_metadata: opt_bytes(r, "key_metadata")?,
            })
        })
        .collect()
}

/// An entry of a manifest: a file and what a snapshot did to it.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestEntryInfo {
    /// 0 existing, 1 added, 2 deleted.
    pub status: i32,
    /// The snapshot that added or deleted the file (inherited from the manifest when null).
    pub snapshot_id: Option<i64>,
    pub content: i32,
    pub file_path: String,
    pub file_size_in_bytes: i64,
}

/// The entries of a manifest: status, snapshot and file (for snapshot expiry).
pub fn read_manifest_entries(bytes: &[u8]) -> Result<Vec<ManifestEntryInfo>> {
    let (_, records) = avro::read_container(bytes)?;
    records
        .iter()
        .map(|r| {
            let f = access::field(r, "data_file")?;
            Ok(ManifestEntryInfo {
                status: access::i64_field(r, "status")? as i32,
                snapshot_id: access::opt_i64_field(r, "snapshot_id")?,
                content: access::i64_field(f, "content")? as i32,
                file_path: access::str_field(f, "file_path")?.to_string(),
                file_size_in_bytes: access::i64_field(f, "file_size_in_bytes")?,
            })
        })
        .collect()
}

/// `(key, value)` pairs of an Iceberg map stored as an array of records.
fn read_kv<V>(
    record: &Avro,
    name: &str,
    value: impl Fn(&Avro) -> Result<V>,
) -> Result<Vec<(i32, V)>> {
    let Some(items) = access::opt(access::field(record, name)?) else {
        return Ok(Vec::new());
    };
    match access::unwrap_union(items) {
        Avro::Array(items) => items
            .iter()
            .map(|kv| {
                Ok((
                    access::i64_field(kv, "key")? as i32,
                    value(access::field(kv, "value")?)?,
                ))
            })
            .collect::<Result<Vec<_>>>()
            .map_err(|e| e.context(name)),
        // Avro-native maps (string keys) are not what Iceberg writes for these fields.
        other => Err(Error::corrupt(format!(
            "{name}: expected an array, got {other:?}"
        ))),
    }
}

fn read_partition(record: &Avro, spec: &PartitionSpec) -> Result<Vec<Option<PartitionValue>>> {
    let partition = access::field(record, "partition")?;
    spec.fields
        .iter()
        .map(|f| match access::opt(access::field(partition, &f.name)?) {
            None => Ok(None),
            Some(Avro::Int(i)) => Ok(Some(PartitionValue::Int(*i))),
            Some(Avro::String(s)) => Ok(Some(PartitionValue::String(s.clone()))),
            Some(other) => Err(Error::unsupported(format!(
                "partition field {} holds {other:?}: this plugin rewrites manifests whose \
                 partition values are ints or strings only",
                f.name
            ))),
        })
        .collect()
}

/// Every entry of `manifest` (its `bytes`, written with `spec`), whole, with the snapshot id
/// and sequence numbers it inherits from its manifest-list entry filled in (as Java's
/// `InheritableMetadata` does), so the entry can be written elsewhere as `EXISTING`.
pub fn read_entries(
    bytes: &[u8],
    manifest: &ManifestFile,
    spec: &PartitionSpec,
) -> Result<Vec<ManifestEntry>> {
    let (_, records) = avro::read_container(bytes)?;
    records
        .iter()
        .map(|r| {
            let f = access::field(r, "data_file")?;
            let status = access::i64_field(r, "status")? as i32;
            let inherits = manifest.sequence_number == 0 || status == STATUS_ADDED;
            let inherited = |v: Option<i64>| match v {
                None if inherits => Some(manifest.sequence_number),
                v => v,
            };
            let opt_bytes = |k: &str| -> Result<Option<Vec<u8>>> {
                access::opt(access::field(f, k)?)
                    .map(|b| access::as_bytes(b).map(<[u8]>::to_vec))
                    .transpose()
            };
            let ints = |k: &str| -> Result<Option<Vec<i64>>> {
                access::opt(access::field(f, k)?)
                    .map(|a| access::as_array(a)?.iter().map(access::as_i64).collect())
                    .transpose()
            };
            let long = |v: &Avro| access::as_i64(v);
            let bytes_of = |v: &Avro| access::as_bytes(v).map(<[u8]>::to_vec);
            let file = DataFile {
                content: FileContent::from_i32(access::i64_field(f, "content")? as i32)?,
                file_path: access::str_field(f, "file_path")?.to_string(),
                record_count: access::i64_field(f, "record_count")?,
                file_size_in_bytes: access::i64_field(f, "file_size_in_bytes")?,
                spec_id: manifest.partition_spec_id,
                partition: read_partition(f, spec)?,
                value_counts: read_kv(f, "value_counts", long)?,
                null_value_counts: read_kv(f, "null_value_counts", long)?,
                lower_bounds: read_kv(f, "lower_bounds", bytes_of)?,
                upper_bounds: read_kv(f, "upper_bounds", bytes_of)?,
                equality_ids: ints("equality_ids")?
                    .map(|ids| ids.into_iter().map(|i| i as i32).collect()),
                sort_order_id: access::opt_i64_field(f, "sort_order_id")?.map(|i| i as i32),
                referenced_data_file: access::opt(access::field(f, "referenced_data_file")?)
                    .map(|v| access::as_str(v).map(str::to_string))
                    .transpose()?,
            };
            let file_format = access::str_field(f, "file_format")?;
            Ok(ManifestEntry {
                status,
                snapshot_id: access::opt_i64_field(r, "snapshot_id")?
                    .or(Some(manifest.added_snapshot_id)),
                sequence_number: inherited(access::opt_i64_field(r, "sequence_number")?),
                file_sequence_number: inherited(access::opt_i64_field(r, "file_sequence_number")?),
                carried: CarriedFields {
                    file_format: (!file_format.eq_ignore_ascii_case("PARQUET"))
                        .then(|| file_format.to_string()),
                    column_sizes: read_kv(f, "column_sizes", long)?,
                    nan_value_counts: read_kv(f, "nan_value_counts", long)?,
                    key_metadata: opt_bytes("key_metadata")?,
                    split_offsets: ints("split_offsets")?,
                },
                file,
            })
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| e.context(format!("reading {}", manifest.manifest_path)))
}

/// The paths of the files a manifest lists (used by tests and diagnostics).
pub fn read_manifest_paths(bytes: &[u8]) -> Result<Vec<(i32, String)>> {
    let (_, records) = avro::read_container(bytes)?;
    records
        .iter()
        .map(|r| {
            let f = access::field(r, "data_file")?;
            Ok((
                access::i64_field(f, "content")? as i32,
                access::str_field(f, "file_path")?.to_string(),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::testing::log_table;

    use super::*;

    fn file(content: FileContent, bucket: i32) -> DataFile {
        DataFile {
            content,
            file_path: format!("file:/t/data/__bucket={bucket}/f.parquet"),
            record_count: 3,
            file_size_in_bytes: 100,
            spec_id: 0,
            partition: vec![Some(PartitionValue::Int(bucket))],
            value_counts: vec![(1, 3)],
            null_value_counts: vec![(1, 0)],
            lower_bounds: vec![(1, vec![1, 0, 0, 0])],
            upper_bounds: vec![(1, vec![9, 0, 0, 0])],
            equality_ids: (content == FileContent::EqualityDeletes).then(|| vec![1]),
            sort_order_id: None,
            referenced_data_file: None,
        }
    }

    #[test]
    fn manifests_and_lists_round_trip() {
        let t = log_table("db", "t", &[("a", "INT", true)], &[], 2, &[]);
        let schema = IcebergSchema::for_fluss_table(&t).unwrap();
        let spec = PartitionSpec::for_fluss_table(&t, &schema).unwrap();
        let files = [file(FileContent::Data, 0), file(FileContent::Data, 1)];
        let bytes = write_manifest(&schema, &spec, 42, &files).unwrap();
        let meta = avro::read_metadata(&bytes).unwrap();
        assert_eq!(meta["content"], b"data");
        assert_eq!(meta["format-version"], b"2");
        let header = serde_json::to_string(&avro::read_container(&bytes).unwrap().0).unwrap();
        assert!(header.contains("\"field-id\":1000"), "{header}");
        assert!(header.contains("\"logicalType\":\"map\""), "{header}");
        assert!(header.contains("\"element-id\":136"), "{header}");
        assert_eq!(read_manifest_paths(&bytes).unwrap().len(), 2);
        assert!(
            write_manifest(
                &schema,
                &spec,
                1,
                &[
                    file(FileContent::Data, 0),
                    file(FileContent::EqualityDeletes, 0)
                ]
            )
            .is_err()
        );

        let ms = ManifestSchema::new(&schema, &spec).unwrap();
        let mut w = ms.writer(MANIFEST_DATA, 42, 5).unwrap();
        for f in &files {
            w.add(f, None).unwrap();
        }
        let (bytes, m) = w.finish("file:/t/metadata/m.avro".into()).unwrap();
        assert_eq!(m.added_rows_count, 6);
        assert_eq!((m.sequence_number, m.min_sequence_number), (5, 5));
        let p = &m.partitions.as_ref().unwrap()[0];
        assert_eq!(p.lower_bound.as_deref(), Some(&[0u8, 0, 0, 0][..]));
        assert_eq!(p.upper_bound.as_deref(), Some(&[1u8, 0, 0, 0][..]));
        let list = write_manifest_list(std::slice::from_ref(&m), 42, None, 5).unwrap();
        assert_eq!(read_manifest_list(&list).unwrap(), vec![m.clone()]);

        // Entries read back inherit the manifest's snapshot and sequence number, and an
        // entry rewritten as EXISTING / DELETED keeps them (and the fields this plugin does
        // not interpret) explicitly.
        let entries = read_entries(&bytes, &m, &spec).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].file, files[0]);
        assert_eq!(
            (
                entries[0].status,
                entries[0].snapshot_id,
                entries[0].sequence_number
            ),
            (STATUS_ADDED, Some(42), Some(5))
        );
        let mut carried = entries[1].clone();
        carried.carried.file_format = Some("ORC".into());
        carried.carried.column_sizes = vec![(1, 77)];
        carried.carried.split_offsets = Some(vec![4]);
        let mut w = ms.writer(MANIFEST_DATA, 43, 6).unwrap();
        w.keep(&entries[0]).unwrap();
        w.delete(&carried).unwrap();
        let (bytes2, m2) = w.finish("file:/t/metadata/m2.avro".into()).unwrap();
        assert_eq!(
            (
                m2.existing_files_count,
                m2.deleted_files_count,
                m2.added_files_count
            ),
            (1, 1, 0)
        );
        assert_eq!(m2.min_sequence_number, 5, "the existing entry's own");
        let back = read_entries(&bytes2, &m2, &spec).unwrap();
        assert_eq!(
            (back[0].status, back[0].snapshot_id, back[0].sequence_number),
            (STATUS_EXISTING, Some(42), Some(5))
        );
        assert_eq!(
            (back[1].status, back[1].snapshot_id, back[1].sequence_number),
            (STATUS_DELETED, Some(43), Some(5))
        );
        assert_eq!(back[1].carried, carried.carried);
    }
}
