//! Table metadata (`vN.metadata.json`, format version 2). The JSON is kept whole and only the
//! fields a commit changes are edited, so everything another writer put there (statistics,
//! extra refs, properties, fields of newer spec revisions) survives our commits.

use fluss_lake_guest_sdk::{Error, Result};
use serde_json::{Map, Value, json};

use crate::partition::PartitionSpec;
use crate::schema::{IcebergSchema, OFFSET_COLUMN};

/// Table property: how many previous metadata files `metadata-log` keeps (Iceberg's
/// `write.metadata.previous-versions-max`, default 100).
const PREVIOUS_VERSIONS_MAX: &str = "write.metadata.previous-versions-max";

#[derive(Debug, Clone, PartialEq)]
pub struct TableMetadata {
    json: Map<String, Value>,
}

/// A snapshot of the table history, as stored in metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub snapshot_id: i64,
    pub parent_snapshot_id: Option<i64>,
    pub sequence_number: i64,
    pub timestamp_ms: i64,
    pub manifest_list: String,
    pub summary: Vec<(String, String)>,
    pub schema_id: Option<i32>,
}

impl Snapshot {
    pub fn from_json(v: &Value) -> Result<Snapshot> {
        let bad = |k: &str| Error::corrupt(format!("Iceberg snapshot without {k}"));
        Ok(Snapshot {
            snapshot_id: v
                .get("snapshot-id")
                .and_then(Value::as_i64)
                .ok_or_else(|| bad("snapshot-id"))?,
            parent_snapshot_id: v.get("parent-snapshot-id").and_then(Value::as_i64),
            sequence_number: v
                .get("sequence-number")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            timestamp_ms: v.get("timestamp-ms").and_then(Value::as_i64).unwrap_or(0),
            manifest_list: v
                .get("manifest-list")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("manifest-list (v1 manifests field is not supported)"))?
                .to_string(),
            summary: v
                .get("summary")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| {
                            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                            (k.clone(), v)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            schema_id: v.get("schema-id").and_then(Value::as_i64).map(|i| i as i32),
        })
    }

    pub fn to_json(&self) -> Value {
        let summary: Map<String, Value> = self
            .summary
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let mut o = json!({
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "timestamp-ms": self.timestamp_ms,
            "manifest-list": self.manifest_list,
            "summary": summary,
        });
        if let Some(p) = self.parent_snapshot_id {
            o["parent-snapshot-id"] = json!(p);
        }
        if let Some(s) = self.schema_id {
            o["schema-id"] = json!(s);
        }
        o
    }

    pub fn summary_value(&self, key: &str) -> Option<&str> {
        self.summary
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

impl TableMetadata {
    pub fn parse(bytes: &[u8]) -> Result<TableMetadata> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| Error::corrupt(format!("Iceberg table metadata is not JSON: {e}")))?;
        let json = match v {
            Value::Object(m) => m,
            _ => {
                return Err(Error::corrupt(
                    "Iceberg table metadata is not a JSON object",
                ));
            }
        };
        let m = TableMetadata { json };
        match m.json.get("format-version").and_then(Value::as_i64) {
            Some(2) => Ok(m),
            other => Err(Error::unsupported(format!(
                "Iceberg format version {other:?}: this plugin writes format version 2 tables"
            ))),
        }
    }

    /// The metadata's JSON fields, as stored.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.json
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec_pretty(&self.json)
            .map_err(|e| Error::internal(format!("encoding table metadata: {e}")))
    }

    /// New table metadata as Iceberg's `TableMetadata.newTableMetadata` lays it out.
    pub fn new_table(
        location: &str,
        schema: &IcebergSchema,
        spec: &PartitionSpec,
        properties: Vec<(String, String)>,
        table_uuid: &str,
        now_ms: i64,
    ) -> TableMetadata {
        let offset_id = schema.field(OFFSET_COLUMN).map(|f| f.id);
        let sort_order = match offset_id {
            Some(id) => json!({"order-id": 1, "fields": [{"transform": "identity",
                "source-id": id, "direction": "asc", "null-order": "nulls-first"}]}),
            None => json!({"order-id": 0, "fields": []}),
        };
        let sort_order_id = sort_order["order-id"].clone();
        let props: Map<String, Value> = properties
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let v = json!({
            "format-version": 2,
            "table-uuid": table_uuid,
            "location": location,
            "last-sequence-number": 0,
            "last-updated-ms": now_ms,
            "last-column-id": schema.highest_field_id(),
            "current-schema-id": schema.schema_id,
            "schemas": [schema.to_json()],
            "default-spec-id": spec.spec_id,
            "partition-specs": [spec.to_json()],
            "last-partition-id": spec.last_field_id(),
            "default-sort-order-id": sort_order_id,
            "sort-orders": [sort_order],
            "properties": props,
            "current-snapshot-id": -1,
            "refs": {},
            "snapshots": [],
            "statistics": [],
            "partition-statistics": [],
            "snapshot-log": [],
            "metadata-log": [],
        });
        TableMetadata {
            json: v.as_object().cloned().expect("object"),
        }
    }

    fn str_field(&self, k: &str) -> Result<&str> {
        self.json
            .get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| Error::corrupt(format!("Iceberg table metadata without {k}")))
    }

    pub fn location(&self) -> Result<&str> {
        self.str_field("location").map(|l| l.trim_end_matches('/'))
    }

    pub fn table_uuid(&self) -> Option<&str> {
        self.json.get("table-uuid").and_then(Value::as_str)
    }

    pub fn last_sequence_number(&self) -> i64 {
        self.json
            .get("last-sequence-number")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }

    pub fn last_updated_ms(&self) -> i64 {
        self.json
            .get("last-updated-ms")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }

    pub fn property(&self, key: &str) -> Option<&str> {
        self.json
            .get("properties")
            .and_then(|p| p.get(key))
            .and_then(Value::as_str)
    }

    pub fn current_schema(&self) -> Result<IcebergSchema> {
        let id = self
            .json
            .get("current-schema-id")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let schema = self
            .json
            .get("schemas")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .find(|s| s.get("schema-id").and_then(Value::as_i64).unwrap_or(0) == id)
            })
            .ok_or_else(|| Error::corrupt(format!("Iceberg current schema {id} missing")))?;
        IcebergSchema::from_json(schema)
    }

    pub fn default_spec(&self) -> Result<PartitionSpec> {
        let id = self
            .json
            .get("default-spec-id")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let spec = self
            .json
            .get("partition-specs")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .find(|s| s.get("spec-id").and_then(Value::as_i64).unwrap_or(0) == id)
            })
            .ok_or_else(|| Error::corrupt(format!("Iceberg partition spec {id} missing")))?;
        PartitionSpec::from_json(spec)
    }

    /// The partition spec `id` (manifests written under an older spec name theirs).
    pub fn partition_spec(&self, id: i32) -> Result<PartitionSpec> {
        let spec = self
            .json
            .get("partition-specs")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .find(|s| s.get("spec-id").and_then(Value::as_i64).unwrap_or(0) == id as i64)
            })
            .ok_or_else(|| Error::corrupt(format!("Iceberg partition spec {id} missing")))?;
        PartitionSpec::from_json(spec)
    }

    pub fn default_sort_order_id(&self) -> Option<i32> {
        self.json
            .get("default-sort-order-id")
            .and_then(Value::as_i64)
            .map(|v| v as i32)
    }

    /// Every snapshot, in the order metadata lists them (commit order).
    pub fn snapshots(&self) -> Result<Vec<Snapshot>> {
        self.json
            .get("snapshots")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Snapshot::from_json).collect())
            .unwrap_or_else(|| Ok(Vec::new()))
    }

    pub fn current_snapshot_id(&self) -> Option<i64> {
        // The main branch is authoritative when present; -1 means "no snapshot".
        let from_ref = self
            .json
            .get("refs")
            .and_then(|r| r.get("main"))
            .and_then(|m| m.get("snapshot-id"))
            .and_then(Value::as_i64);
        from_ref
            .or_else(|| self.json.get("current-snapshot-id").and_then(Value::as_i64))
            .filter(|id| *id >= 0)
    }

    pub fn current_snapshot(&self) -> Result<Option<Snapshot>> {
        let Some(id) = self.current_snapshot_id() else {
            return Ok(None);
        };
        Ok(self.snapshots()?.into_iter().find(|s| s.snapshot_id == id))
    }

    pub fn snapshot(&self, id: i64) -> Result<Option<Snapshot>> {
        Ok(self.snapshots()?.into_iter().find(|s| s.snapshot_id == id))
    }

    /// Records `previous_file` (the metadata file a commit replaces) in `metadata-log`, keeping
    /// the newest `write.metadata.previous-versions-max` entries.
    fn push_metadata_log(&self, json: &mut Map<String, Value>, previous_file: &str) {
        let entry = json!({"timestamp-ms": self.last_updated_ms(), "metadata-file": previous_file});
        match json.get_mut("metadata-log").and_then(Value::as_array_mut) {
            Some(log) => log.push(entry),
            None => {
                json.insert("metadata-log".into(), Value::Array(vec![entry]));
            }
        }
        let keep = self
            .property(PREVIOUS_VERSIONS_MAX)
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(100)
            .max(1);
        if let Some(log) = json.get_mut("metadata-log").and_then(Value::as_array_mut)
            && log.len() > keep
        {
            let excess = log.len() - keep;
            log.drain(..excess);
        }
    }

    /// The metadata files `metadata-log` names.
    pub fn metadata_log_files(&self) -> Vec<String> {
        self.json
            .get("metadata-log")
            .and_then(Value::as_array)
            .map(|log| {
                log.iter()
                    .filter_map(|e| e.get("metadata-file")?.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Names of the table's refs (branches and tags).
    pub fn ref_names(&self) -> Vec<String> {
        self.json
            .get("refs")
            .and_then(Value::as_object)
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Statistics files (`statistics`, `partition-statistics`) of the given snapshots.
    pub fn statistics_files(&self, of: &std::collections::HashSet<i64>) -> Vec<String> {
        let mut out = Vec::new();
        for key in ["statistics", "partition-statistics"] {
            for e in self
                .json
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if e.get("snapshot-id")
                    .and_then(Value::as_i64)
                    .is_some_and(|id| of.contains(&id))
                    && let Some(path) = e.get("statistics-path").and_then(Value::as_str)
                {
                    out.push(path.to_string());
                }
            }
        }
        out
    }

    /// The metadata after removing snapshots `expired` (Iceberg `RemoveSnapshots`): they leave
    /// `snapshots` with their statistics entries, and `snapshot-log` keeps only the entries
    /// after the last removed one; `previous_file` is the metadata file this one replaces.
    pub fn without_snapshots(
        &self,
        expired: &std::collections::HashSet<i64>,
        previous_file: &str,
        now_ms: i64,
    ) -> TableMetadata {
        let mut json = self.json.clone();
        let gone = |v: &Value| {
            v.get("snapshot-id")
                .and_then(Value::as_i64)
                .is_some_and(|id| expired.contains(&id))
        };
        for key in ["snapshots", "statistics", "partition-statistics"] {
            if let Some(a) = json.get_mut(key).and_then(Value::as_array_mut) {
                a.retain(|v| !gone(v));
            }
        }
        if let Some(log) = json.get_mut("snapshot-log").and_then(Value::as_array_mut)
            && let Some(last) = log.iter().rposition(gone)
        {
            log.drain(..=last);
        }
        self.push_metadata_log(&mut json, previous_file);
        json.insert(
            "last-updated-ms".into(),
            json!(now_ms.max(self.last_updated_ms())),
        );
        TableMetadata { json }
    }

    /// The metadata after committing `snapshot` on the main branch; `previous_file` is the
    /// metadata file this one replaces (recorded in `metadata-log`).
    pub fn with_snapshot(&self, snapshot: &Snapshot, previous_file: &str) -> TableMetadata {
        let mut json = self.json.clone();
        let ts = snapshot.timestamp_ms;
        let push = |json: &mut Map<String, Value>, key: &str, v: Value| match json
            .get_mut(key)
            .and_then(Value::as_array_mut)
        {
            Some(a) => a.push(v),
            None => {
                json.insert(key.to_string(), Value::Array(vec![v]));
            }
        };
        push(&mut json, "snapshots", snapshot.to_json());
        push(
            &mut json,
            "snapshot-log",
            json!({"timestamp-ms": ts, "snapshot-id": snapshot.snapshot_id}),
        );
        self.push_metadata_log(&mut json, previous_file);
        json.insert(
            "last-sequence-number".into(),
            json!(snapshot.sequence_number),
        );
        json.insert("last-updated-ms".into(), json!(ts));
        json.insert("current-snapshot-id".into(), json!(snapshot.snapshot_id));
        let refs = json
            .entry("refs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(refs) = refs.as_object_mut() {
            refs.insert(
                "main".into(),
                json!({"snapshot-id": snapshot.snapshot_id, "type": "branch"}),
            );
        }
        TableMetadata { json }
    }
}

#[cfg(test)]
impl TableMetadata {
    /// The snapshot ids `snapshot-log` lists, in order.
    pub fn json_snapshot_log_ids(&self) -> Vec<i64> {
        self.json["snapshot-log"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["snapshot-id"].as_i64().unwrap())
            .collect()
    }

    /// The metadata with a tag `name` on `snapshot_id`.
    pub fn with_tag(&self, name: &str, snapshot_id: i64) -> TableMetadata {
        let mut json = self.json.clone();
        json["refs"][name] = json!({"snapshot-id": snapshot_id, "type": "tag"});
        TableMetadata { json }
    }
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::testing::log_table;

    use super::*;

    #[test]
    fn new_table_and_snapshots() {
        let t = log_table("db", "t", &[("a", "INT", true)], &[], 2, &[]);
        let schema = IcebergSchema::for_fluss_table(&t).unwrap();
        let spec = PartitionSpec::for_fluss_table(&t, &schema).unwrap();
        let m = TableMetadata::new_table(
            "file:/wh/db/t",
            &schema,
            &spec,
            vec![("fluss.k".into(), "v".into())],
            "00000000-0000-0000-0000-000000000001",
            10,
        );
        let m = TableMetadata::parse(&m.to_bytes().unwrap()).unwrap();
        assert_eq!(m.location().unwrap(), "file:/wh/db/t");
        assert_eq!(m.current_schema().unwrap(), schema);
        assert_eq!(m.default_spec().unwrap(), spec);
        assert_eq!(m.current_snapshot().unwrap(), None);
        assert_eq!(m.property("fluss.k"), Some("v"));
        assert_eq!(m.default_sort_order_id(), Some(1));

        let s = Snapshot {
            snapshot_id: 7,
            parent_snapshot_id: None,
            sequence_number: 1,
            timestamp_ms: 20,
            manifest_list: "file:/wh/db/t/metadata/snap-7.avro".into(),
            summary: vec![("operation".into(), "append".into())],
            schema_id: Some(0),
        };
        let m2 = m.with_snapshot(&s, "file:/wh/db/t/metadata/v1.metadata.json");
        assert_eq!(m2.current_snapshot().unwrap(), Some(s.clone()));
        assert_eq!(m2.last_sequence_number(), 1);
        assert_eq!(m2.json["metadata-log"].as_array().unwrap().len(), 1);
        assert_eq!(m2.json["refs"]["main"]["snapshot-id"], 7);
        assert_eq!(Snapshot::from_json(&s.to_json()).unwrap(), s);
        let mut v1 = m.clone();
        v1.json.insert("format-version".into(), json!(1));
        assert!(TableMetadata::parse(&v1.to_bytes().unwrap()).is_err());
    }
}
