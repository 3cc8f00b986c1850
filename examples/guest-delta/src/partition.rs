//! Partitions: the partition values of a split (Fluss names a partition by its values joined
//! with `$`, in partition-key order), and the Hive-style directory its files go to
//! (`k=v/...`, escaped as Spark's `ExternalCatalogUtils.escapePathName` escapes it, which is
//! what Delta on Spark writes).
//!
//! Readers take partition values from the `add` actions' `partitionValues`, never from the
//! directory names, so the directory layout is a convention for humans and other tools. The
//! `add` path is a URI reference, so the escaped directory is percent-encoded once more
//! (`%3A` in a directory name is `%253A` in the path) — as Spark and delta-rs write it.

use fluss_lake_guest_sdk::datatype::{ColumnType, FlussType};
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result};

/// The partition key types whose Fluss partition-name text maps to Delta's serialized
/// partition value (strings as they are, integers and booleans as text, dates as
/// `YYYY-MM-DD`).
fn partition_type(table: &TableInfo, key: &str) -> Result<FlussType> {
    let column = table
        .columns
        .iter()
        .find(|c| c.name == key)
        .ok_or_else(|| Error::invalid_input(format!("partition key {key} is not a column")))?;
    let t = match ColumnType::parse(&column.data_type)? {
        ColumnType::Primitive(t) => t,
        nested => {
            return Err(Error::invalid_input(format!(
                "partition key {key} is {nested}; Delta tables are partitioned by primitive \
                 columns only"
            )));
        }
    };
    match t {
        FlussType::String
        | FlussType::Char(_)
        | FlussType::Boolean
        | FlussType::TinyInt
        | FlussType::SmallInt
        | FlussType::Int
        | FlussType::BigInt
        | FlussType::Date => Ok(t),
        _ => Err(Error::invalid_input(format!(
            "partition key {key} is {t}; Delta tables tiered by this plugin are partitioned \
             by STRING, CHAR, BOOLEAN, integer or DATE columns only"
        ))),
    }
}

/// Checks that every partition key is a column of a supported type.
pub fn check_partition_keys(table: &TableInfo) -> Result<()> {
    for k in &table.partition_keys {
        partition_type(table, k)?;
    }
    Ok(())
}

/// Delta's serialized partition value of one component of a Fluss partition name.
fn delta_value(text: &str, t: FlussType, key: &str) -> Result<String> {
    let bad = || Error::invalid_input(format!("partition value {text:?} of {key} is not a {t}"));
    if text.is_empty() {
        // Delta reads an empty partition value as null, which no Fluss partition is.
        return Err(bad());
    }
    Ok(match t {
        FlussType::Boolean => match text.to_ascii_lowercase().as_str() {
            v @ ("true" | "false") => v.to_string(),
            _ => return Err(bad()),
        },
        FlussType::TinyInt => text.parse::<i8>().map_err(|_| bad())?.to_string(),
        FlussType::SmallInt => text.parse::<i16>().map_err(|_| bad())?.to_string(),
        FlussType::Int => text.parse::<i32>().map_err(|_| bad())?.to_string(),
        FlussType::BigInt => text.parse::<i64>().map_err(|_| bad())?.to_string(),
        FlussType::Date => {
            let parts: Vec<&str> = text.split('-').collect();
            let [y, m, d] = parts.as_slice() else {
                return Err(bad());
            };
            let (y, m, d): (u32, u32, u32) = (
                y.parse().map_err(|_| bad())?,
                m.parse().map_err(|_| bad())?,
                d.parse().map_err(|_| bad())?,
            );
            if y > 9999 || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
                return Err(bad());
            }
            format!("{y:04}-{m:02}-{d:02}")
        }
        _ => text.to_string(),
    })
}

/// The `partitionValues` of a split's files: partition key → value, in key order. Empty for
/// a non-partitioned table.
pub fn partition_values(
    table: &TableInfo,
    partition_name: Option<&str>,
) -> Result<Vec<(String, Option<String>)>> {
    let keys = &table.partition_keys;
    match (keys.is_empty(), partition_name) {
        (true, None) => Ok(Vec::new()),
        (true, Some(p)) => Err(Error::invalid_input(format!(
            "partition {p:?} given for a non-partitioned table"
        ))),
        (false, None) => Err(Error::invalid_input(
            "no partition given for a split of a partitioned table",
        )),
        (false, Some(name)) => {
            let values: Vec<&str> = name.split('$').collect();
            if values.len() != keys.len() {
                return Err(Error::invalid_input(format!(
                    "partition {name:?} has {} values for the partition keys {keys:?}",
                    values.len()
                )));
            }
            keys.iter()
                .zip(values)
                .map(|(k, v)| {
                    Ok((
                        k.clone(),
                        Some(delta_value(v, partition_type(table, k)?, k)?),
                    ))
                })
                .collect()
        }
    }
}

/// Spark's `escapePathName`: `%XX` (upper-case hex) for control characters and
/// `"#%'*/:=?\{[]^` and DEL; everything else, non-ASCII included, stays.
pub fn escape_path_name(s: &str) -> String {
    const SPECIAL: &[char] = &[
        '"', '#', '%', '\'', '*', '/', ':', '=', '?', '\\', '\u{7f}', '{', '[', ']', '^',
    ];
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c < ' ' || SPECIAL.contains(&c) {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The storage directory of a partition (`k1=v1/k2=v2`); empty when not partitioned. A
/// null value would be Spark's `__HIVE_DEFAULT_PARTITION__`.
pub fn partition_dir(values: &[(String, Option<String>)]) -> String {
    values
        .iter()
        .map(|(k, v)| {
            let v = v.as_deref().unwrap_or("__HIVE_DEFAULT_PARTITION__");
            format!("{}={}", escape_path_name(k), escape_path_name(v))
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A storage path as the URI reference an `add` action holds: bytes other than unreserved
/// characters, `/` and `=` percent-encoded (UTF-8).
pub fn encode_uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/=".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The storage path an `add` action's URI reference denotes (percent-decoded).
pub fn decode_uri_path(uri: &str) -> Result<String> {
    let bad = || Error::corrupt(format!("bad data file path {uri:?} in the Delta log"));
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = uri.get(i + 1..i + 3).ok_or_else(bad)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::storage::validate_path;
    use fluss_lake_guest_sdk::testing::log_table;

    use super::*;

    fn table(partition_types: &[(&str, &str)]) -> TableInfo {
        let mut cols = vec![("id", "INT", false)];
        cols.extend(partition_types.iter().map(|(n, t)| (*n, *t, false)));
        let keys: Vec<&str> = partition_types.iter().map(|(n, _)| *n).collect();
        log_table("db", "t", &cols, &[], 1, &keys)
    }

    #[test]
    fn escapes_like_spark() {
        assert_eq!(escape_path_name("a b/c:d%=é"), "a b%2Fc%3Ad%25%3Dé");
        assert_eq!(
            escape_path_name("x\ty{}[]^#?*'\"\\"),
            "x%09y%7B}%5B%5D%5E%23%3F%2A%27%22%5C"
        );
        assert_eq!(escape_path_name("2024-01-01"), "2024-01-01");
    }

    #[test]
    fn partition_dirs_and_uris() {
        let t = table(&[("region", "STRING"), ("day", "DATE")]);
        let values = partition_values(&t, Some("a b/c:d%=é$2024-1-2")).unwrap();
        assert_eq!(
            values,
            vec![
                ("region".to_string(), Some("a b/c:d%=é".to_string())),
                ("day".to_string(), Some("2024-01-02".to_string())),
            ]
        );
        let dir = partition_dir(&values);
        assert_eq!(dir, "region=a b%2Fc%3Ad%25%3Dé/day=2024-01-02");
        let path = format!("{dir}/part-1.parquet");
        validate_path(&path).unwrap();
        let uri = encode_uri_path(&path);
        assert_eq!(
            uri,
            "region=a%20b%252Fc%253Ad%2525%253D%C3%A9/day=2024-01-02/part-1.parquet"
        );
        assert_eq!(decode_uri_path(&uri).unwrap(), path);
        assert!(decode_uri_path("a%2").is_err());
        assert!(decode_uri_path("a%zz").is_err());
    }

    #[test]
    fn typed_partition_values_are_normalised_and_checked() {
        let t = table(&[("b", "BOOLEAN"), ("n", "BIGINT"), ("s", "SMALLINT")]);
        assert_eq!(
            partition_values(&t, Some("TRUE$-5$7")).unwrap(),
            vec![
                ("b".to_string(), Some("true".to_string())),
                ("n".to_string(), Some("-5".to_string())),
                ("s".to_string(), Some("7".to_string())),
            ]
        );
        for bad in ["yes$1$1", "true$x$1", "true$1$99999", "true$1", "true$$1"] {
            assert!(partition_values(&t, Some(bad)).is_err(), "{bad}");
        }
        assert!(partition_values(&t, None).is_err());
        assert!(check_partition_keys(&table(&[("f", "DOUBLE")])).is_err());
        let e = check_partition_keys(&table(&[("r", "ROW<`x` INT>")])).unwrap_err();
        assert_eq!(e.kind(), fluss_lake_guest_sdk::ErrorKind::InvalidInput);
        assert!(e.message().contains("primitive"), "{e}");
        assert!(partition_values(&table(&[]), Some("x")).is_err());
        assert!(partition_values(&table(&[]), None).unwrap().is_empty());
    }
}
