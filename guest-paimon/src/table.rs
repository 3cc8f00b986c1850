//! What this plugin supports of a Paimon table, and where its files live: bucket mode,
//! partition directories (`k=v/`, `partition.legacy-name = false`) and data file paths.

use std::cell::Cell;
use std::rc::Rc;

use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result};

use crate::binary_row::{BinaryRowReader, BinaryRowWriter, Value};
use crate::merge_tree::options::MergeTreeOptions;
use crate::schema::TableSchema;
use crate::types::{PaimonType, escape_path_name, format_partition_value, parse_partition_value};

/// Paimon's default `partition.default-name`.
pub const DEFAULT_PARTITION_NAME: &str = "__DEFAULT_PARTITION__";
/// Fluss's separator of partition values in a partition name.
pub const FLUSS_PARTITION_SEPARATOR: char = '$';

/// How rows map to Paimon buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketMode {
    /// `bucket = -1` append table: everything in `bucket-0`, `_TOTAL_BUCKETS = -1`.
    Unaware,
    /// `bucket = N`: Fluss bucket b is Paimon bucket b.
    Fixed(i32),
}

impl BucketMode {
    /// The bucket mode of an append table.
    pub fn of(schema: &TableSchema) -> Result<BucketMode> {
        match schema.bucket_option()? {
            -1 => Ok(BucketMode::Unaware),
            n if n > 0 => Ok(BucketMode::Fixed(n)),
            n => Err(Error::unsupported(format!(
                "Paimon bucket mode bucket={n} is not supported"
            ))),
        }
    }

    /// `(paimon bucket, _TOTAL_BUCKETS)` for rows of Fluss bucket `fluss_bucket` of a
    /// partition with `partition_buckets` buckets.
    ///
    /// A fixed-bucket table's files carry their partition's own count, not the table's
    /// `bucket` option, as Fluss 1.0's Paimon writer stamps them (`bucketCountActual`): a
    /// partition keeps the count it was created with when the table's `bucket.num` changes,
    /// and Paimon readers place a file's rows by its `_TOTAL_BUCKETS`.
    pub fn place(&self, fluss_bucket: i32, partition_buckets: i32) -> Result<(i32, i32)> {
        match *self {
            BucketMode::Unaware => Ok((0, -1)),
            BucketMode::Fixed(_) if (0..partition_buckets).contains(&fluss_bucket) => {
                Ok((fluss_bucket, partition_buckets))
            }
            BucketMode::Fixed(_) => Err(Error::invalid_input(format!(
                "Fluss bucket {fluss_bucket} does not exist in a partition with \
                 {partition_buckets} buckets"
            ))),
        }
    }
}

fn truthy(schema: &TableSchema, key: &str) -> bool {
    schema
        .option(key)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Rejects tables using Paimon features this plugin does not write correctly, with kind
/// `unsupported`, and tables it could write but Fluss would not tier (`invalid-input`).
pub fn check_supported(schema: &TableSchema, table: Option<&TableInfo>) -> Result<()> {
    let unsupported = |what: &str| {
        Err(Error::unsupported(format!(
            "the paimon plugin does not support {what} yet"
        )))
    };
    if !schema.primary_keys.is_empty() {
        MergeTreeOptions::of(schema)?;
    } else if table.is_some_and(|t| !t.primary_keys.is_empty()) {
        return Err(Error::invalid_input(
            "the Fluss table has a primary key but the Paimon table has none",
        ));
    }
    if truthy(schema, "deletion-vectors.enabled") {
        return unsupported("tables with deletion-vectors.enabled");
    }
    if truthy(schema, "row-tracking.enabled") || truthy(schema, "data-evolution.enabled") {
        return unsupported("row tracking / data evolution");
    }
    if let Some(f) = schema.option("file.format")
        && !f.eq_ignore_ascii_case("parquet")
    {
        return unsupported(&format!("file.format={f} (only parquet)"));
    }
    if let Some(f) = schema.option("manifest.format")
        && !f.eq_ignore_ascii_case("avro")
    {
        return unsupported(&format!("manifest.format={f} (only avro)"));
    }
    for key in ["data-file.external-paths", "data-file.path-directory"] {
        if schema.option(key).is_some() {
            return unsupported(&format!("option {key}"));
        }
    }
    BucketMode::of(schema)?;
    for ty in schema.partition_types()? {
        // Probe that the partition type can be parsed from Fluss partition names.
        if let Err(e) = parse_partition_value("0", &ty)
            && e.kind() == fluss_lake_guest_sdk::ErrorKind::Unsupported
        {
            return Err(e);
        }
    }
    Ok(())
}

/// Checks that a fixed-bucket Paimon table has the Fluss table's bucket count (`table` is the
/// table-level info: after Fluss 1.0 changes `bucket.num`, the coordinator sets the Paimon
/// `bucket` option to the new count, while older partitions keep theirs, see
/// [`BucketMode::place`]).
pub fn check_bucket_count(schema: &TableSchema, table: &TableInfo) -> Result<()> {
    match BucketMode::of(schema)? {
        BucketMode::Fixed(n) if n != table.num_buckets => Err(Error::invalid_input(format!(
            "the Paimon table has {n} buckets but the Fluss table {}",
            table.num_buckets
        ))),
        _ => Ok(()),
    }
}

/// A resolved partition: its serialized `BinaryRow` and its directory (`k1=v1/k2=v2/`, empty
/// for non-partitioned tables).
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// Serialized `BinaryRow` of the partition values.
    pub row: Vec<u8>,
    /// Directory prefix, ending with `/` unless empty.
    pub dir: String,
}

fn default_name(schema: &TableSchema) -> &str {
    schema
        .option("partition.default-name")
        .unwrap_or(DEFAULT_PARTITION_NAME)
}

/// The partition's values as text by key, in key order (Paimon
/// `InternalRowPartitionComputer.generatePartValues`): a null or blank value is the table's
/// default partition name.
fn part_values(
    schema: &TableSchema,
    values: &[Option<Value>],
    types: &[PaimonType],
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::with_capacity(types.len());
    for ((key, v), ty) in schema.partition_keys.iter().zip(values).zip(types) {
        let text = match v {
            None => default_name(schema).to_string(),
            Some(v) => {
                let t = format_partition_value(v, ty)?;
                if t.trim().is_empty() {
                    default_name(schema).to_string()
                } else {
                    t
                }
            }
        };
        out.push((key.clone(), text));
    }
    Ok(out)
}

fn dir_of(schema: &TableSchema, values: &[Option<Value>], types: &[PaimonType]) -> Result<String> {
    let mut dir = String::new();
    for (key, text) in part_values(schema, values, types)? {
        dir.push_str(&format!(
            "{}={}/",
            escape_path_name(&key),
            escape_path_name(&text)
        ));
    }
    Ok(dir)
}

impl Partition {
    /// The partition of a Fluss partition name (`v1$v2`), or the empty partition.
    pub fn from_fluss_name(schema: &TableSchema, name: Option<&str>) -> Result<Partition> {
        let types = schema.partition_types()?;
        if types.is_empty() {
            return Ok(Partition {
                row: BinaryRowWriter::new(0).finish_serialized(),
                dir: String::new(),
            });
        }
        let name =
            name.ok_or_else(|| Error::invalid_input("a partitioned table needs a partition name"))?;
        let parts: Vec<&str> = name.split(FLUSS_PARTITION_SEPARATOR).collect();
        if parts.len() != types.len() {
            return Err(Error::invalid_input(format!(
                "partition name {name:?} has {} values but the table has {} partition keys",
                parts.len(),
                types.len()
            )));
        }
        let values = parts
            .iter()
            .zip(&types)
            .map(|(p, t)| {
                if *p == default_name(schema) {
                    Ok(None)
                } else {
                    parse_partition_value(p, t).map(Some)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Self::from_values(schema, &values, &types)
    }

    fn from_values(
        schema: &TableSchema,
        values: &[Option<Value>],
        types: &[PaimonType],
    ) -> Result<Partition> {
        let mut w = BinaryRowWriter::new(types.len());
        for (i, (v, t)) in values.iter().zip(types).enumerate() {
            w.set(i, &t.with_nullable(true), v.as_ref())?;
        }
        Ok(Partition {
            row: w.finish_serialized(),
            dir: dir_of(schema, values, types)?,
        })
    }

    /// The partition of a serialized `BinaryRow` read from a manifest.
    pub fn from_row(schema: &TableSchema, row: &[u8]) -> Result<Partition> {
        let (values, types) = Self::values(schema, row)?;
        Ok(Partition {
            row: row.to_vec(),
            dir: dir_of(schema, &values, &types)?,
        })
    }

    /// The values of a serialized partition `BinaryRow` as text by key (a partition spec, as
    /// Paimon's catalogs take it); empty for a table without partition keys.
    pub fn spec(schema: &TableSchema, row: &[u8]) -> Result<Vec<(String, String)>> {
        let (values, types) = Self::values(schema, row)?;
        part_values(schema, &values, &types)
    }

    fn values(schema: &TableSchema, row: &[u8]) -> Result<(Vec<Option<Value>>, Vec<PaimonType>)> {
        let types = schema.partition_types()?;
        let reader = BinaryRowReader::new(row)?;
        let values = (0..types.len())
            .map(|i| reader.get(i, &types[i]))
            .collect::<Result<Vec<_>>>()?;
        Ok((values, types))
    }
}

/// Directory of a bucket's data files, relative to the table.
pub fn bucket_dir(partition: &Partition, bucket: i32) -> String {
    format!("{}bucket-{bucket}", partition.dir)
}

/// Names the files one writer puts into a bucket directory the way Paimon's
/// `DataFilePathFactory` does: `<prefix><uuid>-<n>.parquet` with one uuid per writer and one
/// counter shared by all its files, data and changelog alike, so names never collide.
#[derive(Debug, Clone)]
pub struct DataFileNames {
    dir: String,
    uuid: String,
    counter: Rc<Cell<u64>>,
}

impl DataFileNames {
    /// Names for files in `dir` (relative to the table).
    pub fn new(dir: String) -> DataFileNames {
        DataFileNames {
            dir,
            uuid: uuid::Uuid::new_v4().to_string(),
            counter: Rc::new(Cell::new(0)),
        }
    }

    /// A generator of table-relative paths of new files whose names start with `prefix`.
    pub fn paths(&self, prefix: &str) -> impl FnMut() -> String + use<> {
        let (dir, uuid, counter) = (self.dir.clone(), self.uuid.clone(), self.counter.clone());
        let prefix = prefix.to_string();
        move || {
            let n = counter.get();
            counter.set(n + 1);
            format!("{dir}/{prefix}{uuid}-{n}.parquet")
        }
    }
}

/// The name of a file from its table-relative path.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
