//! Partition specs: the one Fluss's Iceberg catalog creates (identity on each partition key,
//! then `bucket(N, key)` or `identity(__bucket)`), and the partition tuple of a Fluss
//! (partition, bucket) split: every split writes exactly one Iceberg partition, because Fluss
//! buckets rows with Iceberg's own bucket function (`IcebergBucketingFunction`).

use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::schema::{BUCKET_COLUMN, IcebergSchema};
use crate::types::IcebergType;

/// Field ids of partition fields start here (Iceberg's `PARTITION_DATA_ID_START`).
pub const FIRST_PARTITION_FIELD_ID: i32 = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transform {
    Identity,
    Bucket(u32),
    Void,
    /// A transform this plugin cannot compute (truncate, year, ...): refused at validation.
    Other(String),
}

impl Transform {
    pub fn parse(s: &str) -> Transform {
        match s {
            "identity" => Transform::Identity,
            "void" => Transform::Void,
            _ => s
                .strip_prefix("bucket[")
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|n| n.trim().parse().ok())
                .map(Transform::Bucket)
                .unwrap_or_else(|| Transform::Other(s.to_string())),
        }
    }
    pub fn name(&self) -> String {
        match self {
            Transform::Identity => "identity".into(),
            Transform::Bucket(n) => format!("bucket[{n}]"),
            Transform::Void => "void".into(),
            Transform::Other(s) => s.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionField {
    pub source_id: i32,
    pub field_id: i32,
    pub name: String,
    pub transform: Transform,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSpec {
    pub spec_id: i32,
    pub fields: Vec<PartitionField>,
}

/// One value of a partition tuple (Fluss partitions are strings, buckets ints).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PartitionValue {
    Int(i32),
    String(String),
}

impl PartitionValue {
    /// Iceberg's single-value binary form (manifest list partition summaries).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            PartitionValue::Int(v) => v.to_le_bytes().to_vec(),
            PartitionValue::String(s) => s.as_bytes().to_vec(),
        }
    }
    fn human(&self) -> String {
        match self {
            PartitionValue::Int(v) => v.to_string(),
            PartitionValue::String(s) => s.clone(),
        }
    }
}

fn bad(what: String) -> Error {
    Error::corrupt(format!("Iceberg partition spec: {what}"))
}

impl PartitionSpec {
    pub fn from_json(v: &Value) -> Result<PartitionSpec> {
        let spec_id = v.get("spec-id").and_then(Value::as_i64).unwrap_or(0) as i32;
        let fields = v
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no fields".into()))?
            .iter()
            .map(|f| {
                let int = |k: &str| {
                    f.get(k)
                        .and_then(Value::as_i64)
                        .map(|v| v as i32)
                        .ok_or_else(|| bad(format!("field without {k}")))
                };
                Ok(PartitionField {
                    source_id: int("source-id")?,
                    field_id: int("field-id")?,
                    name: f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("field without name".into()))?
                        .to_string(),
                    transform: Transform::parse(
                        f.get("transform")
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad("field without transform".into()))?,
                    ),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(PartitionSpec { spec_id, fields })
    }

    pub fn to_json(&self) -> Value {
        json!({"spec-id": self.spec_id, "fields": self.fields_json()})
    }

    /// The `fields` array alone (what manifests carry in their `partition-spec` metadata).
    pub fn fields_json(&self) -> Value {
        Value::Array(
            self.fields
                .iter()
                .map(|f| {
                    json!({"name": f.name, "transform": f.transform.name(),
                        "source-id": f.source_id, "field-id": f.field_id})
                })
                .collect(),
        )
    }

    pub fn last_field_id(&self) -> i32 {
        self.fields
            .iter()
            .map(|f| f.field_id)
            .max()
            .unwrap_or(FIRST_PARTITION_FIELD_ID - 1)
    }

    /// The spec Fluss 0.9's `IcebergLakeCatalog.createPartitionSpec` builds.
    pub fn for_fluss_table(table: &TableInfo, schema: &IcebergSchema) -> Result<PartitionSpec> {
        let mut fields = Vec::new();
        let mut add = |source: &str, name: String, transform: Transform| -> Result<()> {
            let f = schema.field(source).ok_or_else(|| {
                Error::invalid_input(format!("partition source column {source} missing"))
            })?;
            fields.push(PartitionField {
                source_id: f.id,
                field_id: FIRST_PARTITION_FIELD_ID + fields.len() as i32,
                name,
                transform,
            });
            Ok(())
        };
        for k in &table.partition_keys {
            let f = schema.field(k).ok_or_else(|| {
                Error::invalid_input(format!("partition key {k} is not a column"))
            })?;
            if f.ty != IcebergType::String {
                return Err(Error::invalid_input(format!(
                    "Partition key only support string type for iceberg currently. Column `{k}` is not string type."
                )));
            }
            add(k, k.clone(), Transform::Identity)?;
        }
        if table.bucket_keys.len() > 1 {
            return Err(Error::unsupported(
                "Only one bucket key is supported for Iceberg at the moment",
            ));
        }
        if table.num_buckets <= 0 {
            return Err(Error::invalid_input(
                "Bucket count (bucket.num) must be set",
            ));
        }
        match table.bucket_keys.first() {
            Some(k) => add(
                k,
                format!("{k}_bucket"),
                Transform::Bucket(table.num_buckets as u32),
            )?,
            None if !table.primary_keys.is_empty() => {
                return Err(Error::invalid_input(
                    "Bucket key must be set for primary key Iceberg tables",
                ));
            }
            None => add(
                BUCKET_COLUMN,
                BUCKET_COLUMN.to_string(),
                Transform::Identity,
            )?,
        }
        Ok(PartitionSpec { spec_id: 0, fields })
    }

    /// The result type of each partition field (the manifests' partition tuple schema).
    pub fn result_types(&self, schema: &IcebergSchema) -> Result<Vec<IcebergType>> {
        self.fields
            .iter()
            .map(|f| {
                let source = schema.field_by_id(f.source_id).ok_or_else(|| {
                    bad(format!(
                        "source field {} of {} missing",
                        f.source_id, f.name
                    ))
                })?;
                Ok(match f.transform {
                    Transform::Bucket(_) => IcebergType::Int,
                    _ => source.ty.clone(),
                })
            })
            .collect()
    }

    /// The partition tuple of the rows of Fluss `bucket` in Fluss partition `partition_name`
    /// (values joined by `$` in partition-key order). Refuses specs whose value is not fixed
    /// per split: those would need per-row partitioning that Fluss's plugin does not do either.
    pub fn values_for_split(
        &self,
        schema: &IcebergSchema,
        table: &TableInfo,
        partition_name: Option<&str>,
        bucket: i32,
    ) -> Result<Vec<Option<PartitionValue>>> {
        let parts: Vec<&str> = match partition_name {
            Some(p) => p.split('$').collect(),
            None => Vec::new(),
        };
        if parts.len() != table.partition_keys.len() {
            return Err(Error::invalid_input(format!(
                "partition {partition_name:?} does not match partition keys {:?}",
                table.partition_keys
            )));
        }
        self.fields
            .iter()
            .map(|f| {
                let source = schema
                    .field_by_id(f.source_id)
                    .ok_or_else(|| bad(format!("source field {} missing", f.source_id)))?;
                match &f.transform {
                    Transform::Void => Ok(None),
                    Transform::Identity if source.name == BUCKET_COLUMN => {
                        Ok(Some(PartitionValue::Int(bucket)))
                    }
                    Transform::Identity => {
                        let i = table
                            .partition_keys
                            .iter()
                            .position(|k| *k == source.name)
                            .ok_or_else(|| {
                                Error::unsupported(format!(
                                    "partition field {}: identity on non-partition column {}",
                                    f.name, source.name
                                ))
                            })?;
                        Ok(Some(PartitionValue::String(parts[i].to_string())))
                    }
                    Transform::Bucket(n)
                        if table.bucket_keys.len() == 1
                            && table.bucket_keys[0] == source.name
                            && *n as i32 == table.num_buckets =>
                    {
                        Ok(Some(PartitionValue::Int(bucket)))
                    }
                    other => Err(Error::unsupported(format!(
                        "partition field {} ({}) cannot be derived from Fluss bucket keys {:?} \
                         with {} buckets",
                        f.name,
                        other.name(),
                        table.bucket_keys,
                        table.num_buckets
                    ))),
                }
            })
            .collect()
    }

    /// The data directory of a partition: `name=value/...` with values URL-encoded as Java's
    /// `PartitionSpec.partitionToPath` does.
    pub fn path(&self, values: &[Option<PartitionValue>]) -> String {
        self.fields
            .iter()
            .zip(values)
            .map(|(f, v)| {
                let human = v.as_ref().map_or("null".to_string(), PartitionValue::human);
                format!("{}={}", url_encode(&f.name), url_encode(&human))
            })
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// `java.net.URLEncoder.encode(s, UTF_8)`.
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::testing::{log_table, pk_table};

    use super::*;

    #[test]
    fn specs_like_the_java_catalog() {
        let t = log_table(
            "db",
            "t",
            &[("a", "INT", true), ("dt", "STRING", true)],
            &[],
            3,
            &["dt"],
        );
        let schema = IcebergSchema::for_fluss_table(&t).unwrap();
        let spec = PartitionSpec::for_fluss_table(&t, &schema).unwrap();
        assert_eq!(
            spec.fields_json(),
            json!([
                {"name": "dt", "transform": "identity", "source-id": 2, "field-id": 1000},
                {"name": "__bucket", "transform": "identity", "source-id": 3, "field-id": 1001}
            ])
        );
        assert_eq!(PartitionSpec::from_json(&spec.to_json()).unwrap(), spec);
        let values = spec
            .values_for_split(&schema, &t, Some("2024-01-01"), 2)
            .unwrap();
        assert_eq!(
            values,
            [
                Some(PartitionValue::String("2024-01-01".into())),
                Some(PartitionValue::Int(2))
            ]
        );
        assert_eq!(spec.path(&values), "dt=2024-01-01/__bucket=2");
        assert_eq!(
            spec.result_types(&schema).unwrap(),
            [IcebergType::String, IcebergType::Int]
        );
        assert!(spec.values_for_split(&schema, &t, None, 0).is_err());

        let pk = pk_table(
            "db",
            "p",
            &[("id", "BIGINT", false), ("v", "STRING", true)],
            &["id"],
            4,
            &[],
        );
        let schema = IcebergSchema::for_fluss_table(&pk).unwrap();
        let spec = PartitionSpec::for_fluss_table(&pk, &schema).unwrap();
        assert_eq!(spec.fields[0].transform, Transform::Bucket(4));
        assert_eq!(spec.fields[0].name, "id_bucket");
        assert_eq!(
            spec.values_for_split(&schema, &pk, None, 3).unwrap(),
            [Some(PartitionValue::Int(3))]
        );
        // A split of a partition with another bucket count than the spec's bucket(4) (a
        // Fluss 1.0 table rescaled after the Iceberg table was made, which Fluss refuses for
        // Iceberg) cannot map its bucket onto the spec and is refused, naming the count.
        let mut rescaled = pk.clone();
        rescaled.num_buckets = 2;
        let err = spec
            .values_for_split(&schema, &rescaled, None, 1)
            .unwrap_err();
        assert_eq!(err.kind(), fluss_lake_guest_sdk::ErrorKind::Unsupported);
        assert!(err.message().contains("with 2 buckets"), "{err}");
        let int_partition = log_table("db", "t", &[("p", "INT", true)], &[], 1, &["p"]);
        let schema = IcebergSchema::for_fluss_table(&int_partition).unwrap();
        assert!(PartitionSpec::for_fluss_table(&int_partition, &schema).is_err());
    }

    #[test]
    fn paths_are_url_encoded() {
        assert_eq!(url_encode("a b/c=d"), "a+b%2Fc%3Dd");
        assert_eq!(url_encode("é"), "%C3%A9");
    }
}
