//! The Delta log actions this plugin reads and writes, as the Delta protocol specifies their
//! JSON: `protocol`, `metaData`, `add` and `commitInfo` (one action per line of a commit).
//!
//! A writer must understand every feature a table's protocol lists, so [`check_writable`]
//! accepts only protocols and table settings under which a blind append of Parquet files is
//! all a commit needs: no column mapping, constraints, generated or identity columns, row
//! tracking or in-commit timestamps.

use fluss_lake_guest_sdk::deps::serde_json::{Map, Value, json};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result};

use crate::schema::DeltaSchema;

/// Reader features a table may list for this plugin to read its log (it reads the JSON
/// commits only, so features that change how data files are read do not matter).
const READER_FEATURES: &[&str] = &[
    "timestampNtz",
    "deletionVectors",
    "vacuumProtocolCheck",
    "columnMapping",
];

/// Writer features whose obligations a blind append meets (`columnMapping` and
/// `checkConstraints` only while they are not in use, see [`check_writable`]).
const WRITER_FEATURES: &[&str] = &[
    "appendOnly",
    "invariants",
    "timestampNtz",
    "changeDataFeed",
    "deletionVectors",
    "vacuumProtocolCheck",
    "domainMetadata",
    "columnMapping",
    "checkConstraints",
];

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("Delta log: {what}"))
}

/// The `protocol` action.
#[derive(Debug, Clone, PartialEq)]
pub struct Protocol {
    pub min_reader_version: i64,
    pub min_writer_version: i64,
    pub reader_features: Option<Vec<String>>,
    pub writer_features: Option<Vec<String>>,
}

impl Protocol {
    /// The protocol a new table with `schema` gets: the legacy (1, 2) unless a column is or
    /// holds a `timestamp_ntz` (a field of a struct, an array element, ...), which is a table
    /// feature (reader 3, writer 7, `timestampNtz`). Nested types need no feature.
    pub fn for_schema(schema: &DeltaSchema) -> Protocol {
        if schema.has_timestamp_ntz() {
            Protocol {
                min_reader_version: 3,
                min_writer_version: 7,
                reader_features: Some(vec!["timestampNtz".into()]),
                writer_features: Some(vec!["timestampNtz".into()]),
            }
        } else {
            Protocol {
                min_reader_version: 1,
                min_writer_version: 2,
                reader_features: None,
                writer_features: None,
            }
        }
    }

    pub fn from_json(v: &Value) -> Result<Protocol> {
        let version = |k: &str| {
            v.get(k)
                .and_then(Value::as_i64)
                .ok_or_else(|| corrupt(format!("protocol without {k}")))
        };
        let features = |k: &str| {
            v.get(k).and_then(Value::as_array).map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
        };
        Ok(Protocol {
            min_reader_version: version("minReaderVersion")?,
            min_writer_version: version("minWriterVersion")?,
            reader_features: features("readerFeatures"),
            writer_features: features("writerFeatures"),
        })
    }

    /// The whole action (`{"protocol": {...}}`).
    pub fn to_action(&self) -> Value {
        let mut p = json!({
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        });
        if let Some(f) = &self.reader_features {
            p["readerFeatures"] = json!(f);
        }
        if let Some(f) = &self.writer_features {
            p["writerFeatures"] = json!(f);
        }
        json!({ "protocol": p })
    }
}

/// The `metaData` action.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    pub id: String,
    pub schema: DeltaSchema,
    pub partition_columns: Vec<String>,
    /// Table properties (string values).
    pub configuration: Map<String, Value>,
    pub created_time: Option<i64>,
}

impl Metadata {
    /// The metadata of a new table for `table`: Parquet files, the Fluss partition keys as
    /// partition columns, and the Fluss table properties as `fluss.<key>` (the plugin's own
    /// `table.datalake.delta.*` settings are left out, as Fluss's lake catalogs leave them).
    pub fn for_fluss_table(table: &TableInfo, id: &str, created_time: i64) -> Result<Metadata> {
        let mut configuration = Map::new();
        for (k, v) in table.properties.iter().chain(&table.custom_properties) {
            if !k.starts_with("table.datalake.delta.") {
                configuration.insert(format!("fluss.{k}"), json!(v));
            }
        }
        Ok(Metadata {
            id: id.to_string(),
            schema: DeltaSchema::for_fluss_table(table)?,
            partition_columns: table.partition_keys.clone(),
            configuration,
            created_time: Some(created_time),
        })
    }

    pub fn from_json(v: &Value) -> Result<Metadata> {
        let provider = v.pointer("/format/provider").and_then(Value::as_str);
        if provider.is_some_and(|p| p != "parquet") {
            return Err(Error::unsupported(format!(
                "the Delta table stores {provider:?} files; this plugin writes Parquet"
            )));
        }
        Ok(Metadata {
            id: v
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| corrupt("metaData without id"))?
                .to_string(),
            schema: DeltaSchema::parse(
                v.get("schemaString")
                    .and_then(Value::as_str)
                    .ok_or_else(|| corrupt("metaData without schemaString"))?,
            )?,
            partition_columns: v
                .get("partitionColumns")
                .and_then(Value::as_array)
                .ok_or_else(|| corrupt("metaData without partitionColumns"))?
                .iter()
                .map(|c| c.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| corrupt("partition column that is not a string"))?,
            configuration: v
                .get("configuration")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            created_time: v.get("createdTime").and_then(Value::as_i64),
        })
    }

    /// The whole action (`{"metaData": {...}}`).
    pub fn to_action(&self) -> Value {
        json!({"metaData": {
            "id": self.id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": self.schema.to_schema_string(),
            "partitionColumns": self.partition_columns,
            "configuration": self.configuration,
            "createdTime": self.created_time,
        }})
    }

    fn config(&self, key: &str) -> Option<&str> {
        self.configuration.get(key).and_then(Value::as_str)
    }
}

/// Checks that this plugin may append to a table with this protocol and metadata
/// (`unsupported` otherwise, naming what is in the way).
pub fn check_writable(protocol: &Protocol, metadata: &Metadata) -> Result<()> {
    let refuse = |what: String| {
        Err(Error::unsupported(format!(
            "{what}; this plugin appends to Delta tables without it"
        )))
    };
    if protocol.min_reader_version > 3 || protocol.min_writer_version > 7 {
        return refuse(format!(
            "the Delta table needs reader version {} / writer version {}",
            protocol.min_reader_version, protocol.min_writer_version
        ));
    }
    let unknown = |features: &Option<Vec<String>>, known: &[&str]| {
        features
            .iter()
            .flatten()
            .filter(|f| !known.contains(&f.as_str()))
            .cloned()
            .collect::<Vec<_>>()
    };
    let reader = unknown(&protocol.reader_features, READER_FEATURES);
    let writer = unknown(&protocol.writer_features, WRITER_FEATURES);
    if !reader.is_empty() || !writer.is_empty() {
        let mut all = reader;
        all.extend(writer);
        all.dedup();
        return refuse(format!("the Delta table uses the table features {all:?}"));
    }
    if let Some(mode) = metadata.config("delta.columnMapping.mode")
        && mode != "none"
    {
        return refuse(format!("the Delta table uses column mapping (mode {mode})"));
    }
    if let Some(k) = metadata
        .configuration
        .keys()
        .find(|k| k.starts_with("delta.constraints."))
    {
        return refuse(format!("the Delta table has the CHECK constraint {k}"));
    }
    // Invariants may sit on nested fields too (Spark's legacy NOT NULL of a nested field).
    for (path, f) in metadata.schema.all_fields() {
        if let Some(k) = f.metadata.keys().find(|k| {
            k.as_str() == "delta.generationExpression"
                || k.as_str() == "delta.invariants"
                || k.starts_with("delta.identity.")
        }) {
            return refuse(format!("column {path} has {k}"));
        }
    }
    Ok(())
}

/// The `add` action of one data file.
#[derive(Debug, Clone, PartialEq)]
pub struct AddFile {
    /// Relative to the table root, URI-encoded (see [`crate::partition::encode_uri_path`]).
    pub path: String,
    /// Partition column → value as Delta serializes partition values (null for null).
    pub partition_values: Vec<(String, Option<String>)>,
    pub size: u64,
    pub modification_time: i64,
    /// Rows in the file (also in `stats`; kept for the commit's metrics).
    pub num_records: u64,
    /// The statistics JSON (see [`crate::stats`]).
    pub stats: Option<String>,
}

impl AddFile {
    /// The action's body (the value of `"add"`).
    pub fn to_json(&self) -> Value {
        let partition_values: Map<String, Value> = self
            .partition_values
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let mut add = json!({
            "path": self.path,
            "partitionValues": partition_values,
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": true,
        });
        if let Some(stats) = &self.stats {
            add["stats"] = json!(stats);
        }
        add
    }

    pub fn from_json(v: &Value) -> Result<AddFile> {
        let field = |k: &str| v.get(k).ok_or_else(|| corrupt(format!("add without {k}")));
        let stats = v.get("stats").and_then(Value::as_str).map(str::to_string);
        let num_records = stats
            .as_deref()
            .and_then(|s| fluss_lake_guest_sdk::deps::serde_json::from_str::<Value>(s).ok())
            .and_then(|s| s.get("numRecords").and_then(Value::as_u64))
            .unwrap_or(0);
        Ok(AddFile {
            path: field("path")?
                .as_str()
                .ok_or_else(|| corrupt("add path is not a string"))?
                .to_string(),
            partition_values: field("partitionValues")?
                .as_object()
                .ok_or_else(|| corrupt("add partitionValues is not an object"))?
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string)))
                .collect(),
            size: field("size")?
                .as_u64()
                .ok_or_else(|| corrupt("add size is not a number"))?,
            modification_time: field("modificationTime")?.as_i64().unwrap_or(0),
            num_records,
            stats,
        })
    }
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::ErrorKind;
    use fluss_lake_guest_sdk::testing::log_table;

    use super::*;

    fn table(ts: &str) -> TableInfo {
        log_table(
            "db",
            "t",
            &[("id", "INT", false), ("ts", ts, true)],
            &[],
            1,
            &[],
        )
    }

    #[test]
    fn protocol_follows_the_columns() {
        let plain = Metadata::for_fluss_table(&table("TIMESTAMP_LTZ(3)"), "x", 0).unwrap();
        let p = Protocol::for_schema(&plain.schema);
        assert_eq!(
            p.to_action(),
            json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
        );
        let ntz = Metadata::for_fluss_table(&table("TIMESTAMP(6)"), "x", 0).unwrap();
        let p = Protocol::for_schema(&ntz.schema);
        assert_eq!(
            p.to_action(),
            json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                "readerFeatures": ["timestampNtz"], "writerFeatures": ["timestampNtz"]}})
        );
        assert_eq!(Protocol::from_json(&p.to_action()["protocol"]).unwrap(), p);
        check_writable(&p, &ntz).unwrap();
        // A timestamp_ntz inside a nested type needs the feature too; nested types alone not.
        let nested = |ty: &str| {
            let t = log_table("db", "t", &[("n", ty, true)], &[], 1, &[]);
            Protocol::for_schema(&Metadata::for_fluss_table(&t, "x", 0).unwrap().schema)
        };
        assert_eq!(
            nested("MAP<STRING NOT NULL, ARRAY<ROW<`at` TIMESTAMP(6)>>>").reader_features,
            Some(vec!["timestampNtz".to_string()])
        );
        assert_eq!(
            nested("MAP<STRING NOT NULL, ARRAY<ROW<`at` TIMESTAMP_LTZ(6)>>>").min_writer_version,
            2
        );
    }

    #[test]
    fn metadata_round_trips_and_keeps_fluss_properties() {
        let mut t = table("TIMESTAMP(6)");
        t.properties
            .push(("table.datalake.delta.warehouse".into(), "/wh".into()));
        let m = Metadata::for_fluss_table(&t, "id-1", 42).unwrap();
        let action = m.to_action();
        assert_eq!(action["metaData"]["format"]["provider"], "parquet");
        assert_eq!(
            action["metaData"]["configuration"]["fluss.table.datalake.enabled"],
            "true"
        );
        assert!(
            action["metaData"]["configuration"]
                .get("fluss.table.datalake.delta.warehouse")
                .is_none()
        );
        assert_eq!(Metadata::from_json(&action["metaData"]).unwrap(), m);
    }

    #[test]
    fn refuses_features_a_blind_append_cannot_honour() {
        let m = Metadata::for_fluss_table(&table("TIMESTAMP(6)"), "x", 0).unwrap();
        let mut p = Protocol::for_schema(&m.schema);
        p.writer_features = Some(vec!["timestampNtz".into(), "rowTracking".into()]);
        let e = check_writable(&p, &m).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("rowTracking"), "{e}");

        let p = Protocol::for_schema(&m.schema);
        let mut mapped = m.clone();
        mapped
            .configuration
            .insert("delta.columnMapping.mode".into(), json!("name"));
        assert!(check_writable(&p, &mapped).is_err());
        let mut constrained = m.clone();
        constrained
            .configuration
            .insert("delta.constraints.positive".into(), json!("id > 0"));
        assert!(check_writable(&p, &constrained).is_err());
        let mut generated = m.clone();
        generated.schema.fields[0]
            .metadata
            .insert("delta.generationExpression".into(), json!("1"));
        assert!(check_writable(&p, &generated).is_err());
        // ... at any depth: an invariant on a field of a struct in an array.
        let nested = log_table(
            "db",
            "t",
            &[("a", "ARRAY<ROW<`x` INT>>", true)],
            &[],
            1,
            &[],
        );
        let mut invariant = Metadata::for_fluss_table(&nested, "x", 0).unwrap();
        let crate::schema::DeltaType::Array { element, .. } = &mut invariant.schema.fields[0].ty
        else {
            panic!()
        };
        let crate::schema::DeltaType::Struct(fields) = element.as_mut() else {
            panic!()
        };
        fields[0]
            .metadata
            .insert("delta.invariants".into(), json!("{}"));
        let e = check_writable(&Protocol::for_schema(&invariant.schema), &invariant).unwrap_err();
        assert!(e.message().contains("column a.element.x"), "{e}");
        let newer = Protocol {
            min_reader_version: 4,
            ..p
        };
        assert!(check_writable(&newer, &m).is_err());
    }

    #[test]
    fn add_round_trips() {
        let add = AddFile {
            path: "p=a%253Ab/part-1.parquet".into(),
            partition_values: vec![("p".into(), Some("a:b".into()))],
            size: 10,
            modification_time: 7,
            num_records: 3,
            stats: Some(r#"{"numRecords":3}"#.into()),
        };
        let v = add.to_json();
        assert_eq!(v["dataChange"], true);
        assert_eq!(v["partitionValues"], json!({"p": "a:b"}));
        assert_eq!(AddFile::from_json(&v).unwrap(), add);
    }
}
