//! Fluss table metadata converted to the contract's `table-info`.

use fluss::metadata::{DataType, TableInfo};

use crate::plugin::wit;

/// The property naming a table's lake format.
pub const DATALAKE_FORMAT_PROPERTY: &str = "table.datalake.format";
/// The property with the table's freshness, which also bounds a tiering round.
pub const DATALAKE_FRESHNESS_PROPERTY: &str = "table.datalake.freshness";

/// The table's `table.datalake.freshness` (Fluss's default: 3 minutes): how stale its lake
/// may be, and so how long one round (and its maintenance) may take.
pub fn freshness(info: &TableInfo) -> std::time::Duration {
    info.get_properties()
        .get(DATALAKE_FRESHNESS_PROPERTY)
        .and_then(|v| crate::config::parse_duration(v).ok())
        .unwrap_or(std::time::Duration::from_secs(180))
}

/// The contract's spelling of a column type (wit `column.data-type`), without the column's own
/// nullability: fluss-rs's for primitive types; for nested types the contract's grammar, in
/// which every nested type carries its ` NOT NULL` and a `ROW` field's name is quoted in
/// backticks and its description in single quotes (each quote doubled inside), so that any
/// name or description reads back as it is. fluss-rs's own `Display` writes names bare and
/// drops descriptions: `ROW<a b INT>` would not read back.
pub fn contract_type(dt: &DataType) -> String {
    let mut out = String::new();
    write_type(dt, &mut out);
    out
}

fn write_type(dt: &DataType, out: &mut String) {
    let nested = |dt: &DataType, out: &mut String| {
        write_type(dt, out);
        if !dt.is_nullable() {
            out.push_str(" NOT NULL");
        }
    };
    match dt {
        DataType::Array(a) => {
            out.push_str("ARRAY<");
            nested(a.get_element_type(), out);
            out.push('>');
        }
        DataType::Map(m) => {
            out.push_str("MAP<");
            nested(m.key_type(), out);
            out.push_str(", ");
            nested(m.value_type(), out);
            out.push('>');
        }
        DataType::Row(r) => {
            out.push_str("ROW<");
            for (i, f) in r.fields().iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push('`');
                out.push_str(&f.name().replace('`', "``"));
                out.push_str("` ");
                nested(f.data_type(), out);
                if let Some(d) = &f.description {
                    out.push_str(" '");
                    out.push_str(&d.replace('\'', "''"));
                    out.push('\'');
                }
            }
            out.push('>');
        }
        primitive => {
            let full = primitive.to_string();
            out.push_str(full.strip_suffix(" NOT NULL").unwrap_or(&full));
        }
    }
}

/// The table as the plugin of `format` sees it. Other formats' `table.datalake.<format>.*`
/// properties are left out: they may hold another lake's credentials.
pub fn to_wit(info: &TableInfo, format: &str) -> wit::TableInfo {
    let path = info.get_table_path();
    let schema = info.get_schema();
    let columns = schema
        .columns()
        .iter()
        .map(|c| {
            let dt = c.data_type();
            wit::Column {
                name: c.name().to_string(),
                data_type: contract_type(dt),
                nullable: dt.is_nullable(),
                comment: c.comment().map(str::to_string),
            }
        })
        .collect();
    let mut properties: Vec<(String, String)> = info
        .get_properties()
        .iter()
        .filter(|(k, _)| !is_other_formats_property(k, format) && !is_storage_property(k, format))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    properties.sort();
    let mut custom_properties: Vec<(String, String)> = info
        .get_custom_properties()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    custom_properties.sort();
    wit::TableInfo {
        table_id: info.get_table_id(),
        path: wit::TablePath {
            database: path.database().to_string(),
            table: path.table().to_string(),
        },
        schema_id: info.get_schema_id(),
        columns,
        primary_keys: info.get_primary_keys().clone(),
        bucket_keys: if info.is_default_bucket_key() && !info.has_primary_key() {
            Vec::new()
        } else {
            info.get_bucket_keys().to_vec()
        },
        num_buckets: info.get_num_buckets(),
        partition_keys: info.get_partition_keys().to_vec(),
        properties,
        custom_properties,
    }
}

/// `table.datalake.<f>.<key>` for a format `f` other than `format`.
/// `table.datalake.<format>.<storage key>`: credentials and endpoints the host opens the
/// warehouse with, kept from the plugin (see [`crate::warehouse::options`]).
fn is_storage_property(key: &str, format: &str) -> bool {
    key.strip_prefix("table.datalake.")
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(f, k)| {
            f.eq_ignore_ascii_case(format) && crate::warehouse::options::is_storage_key(k)
        })
}

fn is_other_formats_property(key: &str, format: &str) -> bool {
    key.strip_prefix("table.datalake.")
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(f, _)| !f.eq_ignore_ascii_case(format))
}

/// The raw `table.datalake.format` property (not fluss-rs's enum, which lacks some formats).
pub fn lake_format(info: &TableInfo) -> Option<String> {
    info.get_properties()
        .get(DATALAKE_FORMAT_PROPERTY)
        .map(|f| f.to_ascii_lowercase())
}

/// The plugin configuration for `format`: the table's `table.datalake.<format>.*` properties
/// (which the coordinator injects from its own `datalake.<format>.*` settings) with the prefix
/// stripped, overlaid by the host's `--datalake.<format>.*` options.
pub fn plugin_config(
    info: &TableInfo,
    format: &str,
    host_overrides: &std::collections::BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let prefix = format!("table.datalake.{format}.");
    let mut merged: std::collections::BTreeMap<String, String> = info
        .get_properties()
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|k| (k.to_string(), v.clone())))
        .collect();
    for (k, v) in host_overrides {
        merged.insert(k.clone(), v.clone());
    }
    merged.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use fluss::metadata::{DataField, DataTypes};

    use super::{contract_type, is_other_formats_property, is_storage_property};

    #[test]
    fn nested_types_quote_names_and_descriptions_and_keep_inner_nullability() {
        let row = DataTypes::row(vec![
            DataField::new(
                "a b`c",
                DataTypes::int().as_non_nullable(),
                Some("it's".into()),
            ),
            DataField::new(
                "m",
                DataTypes::map(
                    DataTypes::string().as_non_nullable(),
                    DataTypes::array(DataTypes::decimal(10, 2)),
                ),
                None,
            ),
        ]);
        assert_eq!(
            contract_type(&row.as_non_nullable()),
            "ROW<`a b``c` INT NOT NULL 'it''s', `m` MAP<STRING NOT NULL, ARRAY<DECIMAL(10, 2)>>>"
        );
        assert_eq!(
            contract_type(&DataTypes::bigint().as_non_nullable()),
            "BIGINT"
        );
    }

    #[test]
    fn storage_properties_are_withheld() {
        assert!(is_storage_property(
            "table.datalake.paimon.s3.secret-key",
            "paimon"
        ));
        assert!(is_storage_property(
            "table.datalake.lance.secret_access_key",
            "lance"
        ));
        assert!(is_storage_property(
            "table.datalake.iceberg.client.region",
            "iceberg"
        ));
        assert!(!is_storage_property(
            "table.datalake.paimon.warehouse",
            "paimon"
        ));
        assert!(!is_storage_property("table.datalake.freshness", "paimon"));
    }

    #[test]
    fn other_formats_properties_are_withheld() {
        assert!(is_other_formats_property(
            "table.datalake.iceberg.s3.secret-key",
            "paimon"
        ));
        assert!(!is_other_formats_property(
            "table.datalake.paimon.warehouse",
            "paimon"
        ));
        assert!(!is_other_formats_property(
            "table.datalake.format",
            "paimon"
        ));
        assert!(!is_other_formats_property(
            "table.datalake.freshness",
            "paimon"
        ));
        assert!(!is_other_formats_property(
            "table.datalake.enabled",
            "paimon"
        ));
        assert!(!is_other_formats_property(
            "table.replication.factor",
            "paimon"
        ));
    }
}
