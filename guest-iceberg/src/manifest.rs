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

fn data_file_record(f: &DataFile, spec: &PartitionSpec) -> Avro {
    Avro::Record(vec![
        ("content".into(), Avro::Int(f.content as i32)),
        ("file_path".into(), Avro::String(f.file_path.clone())),
        ("file_format".into(), Avro::String("PARQUET".into())),
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
        ("column_sizes".into(), null()),
        ("value_counts".into(), kv_array(&f.value_counts, Avro::Long)),
        (
            "null_value_counts".into(),
            kv_array(&f.null_value_counts, Avro::Long),
        ),
        ("nan_value_counts".into(), null()),
        (
            "lower_bounds".into(),
            kv_array(&f.lower_bounds, Avro::Bytes),
        ),
        (
            "upper_bounds".into(),
            kv_array(&f.upper_bounds, Avro::Bytes),
        ),
        ("key_metadata".into(), null()),
        ("split_offsets".into(), null()),
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

/// Writes a manifest of files ADDED by `snapshot_id`; their sequence numbers are inherited
/// from the manifest list (null here), as Java writes them, so a retried commit that lands
/// at a later sequence number stays correct. All files must share one content class
/// (data, or deletes).
pub fn write_manifest(
    schema: &IcebergSchema,
    spec: &PartitionSpec,
    snapshot_id: i64,
    files: &[DataFile],
) -> Result<Vec<u8>> {
    let deletes = files
        .first()
        .is_some_and(|f| f.content != FileContent::Data);
    if files
        .iter()
        .any(|f| (f.content != FileContent::Data) != deletes)
    {
        return Err(Error::internal("a manifest mixes data and delete files"));
    }
    let types = spec.result_types(schema)?;
    let avro_schema = avro::parse_schema(&manifest_entry_schema(spec, &types).to_string())?;
    let records = files.iter().map(|f| {
        Avro::Record(vec![
            ("status".into(), Avro::Int(1)),
            ("snapshot_id".into(), some(Avro::Long(snapshot_id))),
            ("sequence_number".into(), null()),
            ("file_sequence_number".into(), null()),
            ("data_file".into(), data_file_record(f, spec)),
        ])
    });
    let metadata = [
        ("schema", schema.to_json().to_string()),
        ("schema-id", schema.schema_id.to_string()),
        ("partition-spec", spec.fields_json().to_string()),
        ("partition-spec-id", spec.spec_id.to_string()),
        ("format-version", "2".to_string()),
        (
            "content",
            if deletes { "deletes" } else { "data" }.to_string(),
        ),
    ];
    avro::write_container_with_metadata(&avro_schema, records, AvroCodec::Deflate, &metadata)
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
    /// The list entry of a manifest holding `files`, all added by this snapshot.
    pub fn for_added(
        manifest_path: String,
        manifest_length: i64,
        spec: &PartitionSpec,
        sequence_number: i64,
        snapshot_id: i64,
        files: &[DataFile],
    ) -> ManifestFile {
        let partitions = (0..spec.fields.len())
            .map(|i| {
                let values: Vec<&Option<PartitionValue>> =
                    files.iter().map(|f| &f.partition[i]).collect();
                let present = values.iter().filter_map(|v| v.as_ref());
                FieldSummary {
                    contains_null: values.iter().any(|v| v.is_none()),
                    contains_nan: Some(false),
                    lower_bound: present.clone().min().map(PartitionValue::to_bytes),
                    upper_bound: present.max().map(PartitionValue::to_bytes),
                }
            })
            .collect();
        let deletes = files
            .first()
            .is_some_and(|f| f.content != FileContent::Data);
        ManifestFile {
            manifest_path,
            manifest_length,
            partition_spec_id: spec.spec_id,
            content: deletes as i32,
            sequence_number,
            min_sequence_number: sequence_number,
            added_snapshot_id: snapshot_id,
            added_files_count: files.len() as i32,
            existing_files_count: 0,
            deleted_files_count: 0,
            added_rows_count: files.iter().map(|f| f.record_count).sum(),
            existing_rows_count: 0,
            deleted_rows_count: 0,
            partitions: Some(partitions),
            key_metadata: None,
        }
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

/// Entry status of a file a snapshot deleted.
pub const STATUS_DELETED: i32 = 2;

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

        let m = ManifestFile::for_added("file:/t/metadata/m.avro".into(), 10, &spec, 5, 42, &files);
        assert_eq!(m.added_rows_count, 6);
        let p = &m.partitions.as_ref().unwrap()[0];
        assert_eq!(p.lower_bound.as_deref(), Some(&[0u8, 0, 0, 0][..]));
        assert_eq!(p.upper_bound.as_deref(), Some(&[1u8, 0, 0, 0][..]));
        let list = write_manifest_list(std::slice::from_ref(&m), 42, None, 5).unwrap();
        assert_eq!(read_manifest_list(&list).unwrap(), vec![m]);
    }
}
