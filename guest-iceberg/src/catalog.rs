//! Table-level operations as Iceberg's Hadoop catalog lays tables out
//! (`<warehouse>/<db>/<table>`): where a table lives, checking that this plugin can tier it,
//! and creating it the way Fluss's `IcebergLakeCatalog` does when the coordinator did not.

use fluss_lake_guest_sdk::layout::Layout;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, ErrorKind, Result, clock, config};

use crate::hadoop_tables;
use crate::metadata::TableMetadata;
use crate::partition::PartitionSpec;
use crate::schema::{IcebergSchema, TableLayout};
use crate::tables;
use crate::writer::COMPRESSION_CODEC;
use fluss_lake_guest_sdk::table_catalog::{self, CatalogKind};

/// `<db>/<table>`, the Hadoop catalog layout.
pub const LAYOUT: Layout = Layout {
    database_suffix: "",
    table_suffix: "",
};

/// The table's absolute location for new tables: the warehouse joined with the Hadoop
/// layout, written as Java's Hadoop catalog writes it (the warehouse string as configured,
/// so a plain absolute path stays scheme-less).
pub fn location_uri(table: &TableInfo, plugin_config: &[(String, String)]) -> Result<String> {
    let warehouse = config::get(plugin_config, "warehouse")
        .ok_or_else(|| Error::invalid_input("no 'warehouse' in the Iceberg plugin config"))?
        .trim_end_matches('/');
    if !warehouse.starts_with('/') && !warehouse.contains(':') {
        return Err(Error::invalid_input(format!(
            "warehouse {warehouse:?} must be an absolute path or a URI"
        )));
    }
    Ok(format!("{warehouse}/{}", LAYOUT.location(table)?))
}

/// Checks that the Iceberg table exists and that this plugin can write the Fluss table into
/// it (schema, partition spec, format version).
pub fn validate_table(storage: &dyn Storage, table: &TableInfo) -> Result<()> {
    let loaded = tables::load(storage)?.ok_or_else(|| {
        Error::not_found(format!(
            "Iceberg table {}.{} does not exist (no metadata/v<N>.metadata.json)",
            table.path.database, table.path.table
        ))
    })?;
    let m = &loaded.metadata;
    let schema = m.current_schema()?;
    TableLayout::new(&schema, table)?;
    let spec = m.default_spec()?;
    let sample_partition =
        (!table.partition_keys.is_empty()).then(|| vec!["x"; table.partition_keys.len()].join("$"));
    spec.values_for_split(&schema, table, sample_partition.as_deref(), 0)?;
    if !table.primary_keys.is_empty() {
        let mut ids = schema.identifier_field_ids.clone();
        ids.sort_unstable();
        let mut pk: Vec<i32> = table
            .primary_keys
            .iter()
            .filter_map(|k| schema.field(k).map(|f| f.id))
            .collect();
        pk.sort_unstable();
        if ids != pk {
            return Err(Error::invalid_input(format!(
                "the Iceberg table's identifier fields {ids:?} are not the Fluss primary key {:?}",
                table.primary_keys
            )));
        }
    }
    Ok(())
}

/// Iceberg table properties for a Fluss table: `iceberg.<k>` passed through, other Fluss
/// properties as `fluss.<k>`, merge-on-read for primary-key tables (Java's
/// `buildTableProperties`), and the Parquet codec Iceberg (since 1.4) records in every new
/// table unless one is given: zstd.
fn table_properties(table: &TableInfo) -> Vec<(String, String)> {
    let mut props = Vec::new();
    if !table.primary_keys.is_empty() {
        for k in ["write.delete.mode", "write.update.mode", "write.merge.mode"] {
            props.push((k.to_string(), "merge-on-read".to_string()));
        }
    }
    for (k, v) in table.properties.iter().chain(&table.custom_properties) {
        // The lake catalog's own settings reach Fluss tables only after the lake table is
        // created, so Java never copies them.
        if k.starts_with("table.datalake.iceberg.") {
            continue;
        }
        match k.strip_prefix("iceberg.") {
            Some(rest) => props.push((rest.to_string(), v.clone())),
            None => props.push((format!("fluss.{k}"), v.clone())),
        }
    }
    if !props.iter().any(|(k, _)| k == COMPRESSION_CODEC) {
        props.push((COMPRESSION_CODEC.to_string(), "zstd".to_string()));
    }
    props
}

/// Creates `metadata/v1.metadata.json` unless the table exists; `true` when created. An
/// existing table this plugin cannot write fails validation.
pub fn create_table_if_missing(
    storage: &dyn Storage,
    table: &TableInfo,
    plugin_config: &[(String, String)],
) -> Result<bool> {
    if tables::load(storage)?.is_some() {
        validate_table(storage, table)?;
        return Ok(false);
    }
    let schema = IcebergSchema::for_fluss_table(table)?;
    let spec = PartitionSpec::for_fluss_table(table, &schema)?;
    if tables::kind() == CatalogKind::IcebergRest {
        return create_in_catalog(storage, table, &schema, &spec);
    }
    let metadata = TableMetadata::new_table(
        &location_uri(table, plugin_config)?,
        &schema,
        &spec,
        table_properties(table),
        &uuid::Uuid::new_v4().to_string(),
        clock::now_millis(),
    );
    match hadoop_tables::publish(storage, None, &metadata) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::Conflict => {
            validate_table(storage, table)?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Creates the table through its REST catalog, which picks the location and writes the
/// first metadata file: the request carries the schema, spec and properties a Hadoop table
/// would get (the host names the table and refuses a location).
fn create_in_catalog(
    storage: &dyn Storage,
    table: &TableInfo,
    schema: &IcebergSchema,
    spec: &PartitionSpec,
) -> Result<bool> {
    // The new Hadoop metadata lays the schema and spec out as Java does; the request takes
    // them from there.
    let m = TableMetadata::new_table("", schema, spec, vec![], "", 0);
    let fields = m.fields();
    let first = |key: &str| {
        fields
            .get(key)
            .and_then(serde_json::Value::as_array)
            .and_then(|a| a.first())
            .cloned()
            .ok_or_else(|| Error::internal(format!("new table metadata without {key}")))
    };
    let properties: serde_json::Map<String, serde_json::Value> = table_properties(table)
        .into_iter()
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect();
    let request = serde_json::json!({
        "schema": first("schemas")?,
        "partition-spec": first("partition-specs")?,
        "properties": properties,
    });
    match table_catalog::current().create(&request.to_string()) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            validate_table(storage, table)?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
