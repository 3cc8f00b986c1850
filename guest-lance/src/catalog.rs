//! Table-level operations as Fluss's Java `LanceLakeCatalog` lays datasets out
//! (`<warehouse>/<db>/<table>.lance`): where a dataset lives, the log-table-only check, and
//! creating the dataset (version 1: the schema and no fragments) when it is missing.

use std::collections::HashMap;

use fluss_lake_guest_sdk::layout::Layout;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, ErrorKind, Result};

use crate::file_writer::{FILE_MAJOR_VERSION, FILE_MINOR_VERSION};
use crate::proto::lance::table as pb;
use crate::schema::{check_compatible, fields_for_fluss_table};
use crate::versions;
use crate::versions::{NEW_DATASET_NAMING, now, writer_version};

/// `<db>/<table>.lance`.
pub const LAYOUT: Layout = Layout {
    database_suffix: "",
    table_suffix: ".lance",
};

/// Lance tables are log tables only, as in Fluss's Java Lance plugin.
pub fn check_log_table(table: &TableInfo) -> Result<()> {
    if !table.primary_keys.is_empty() {
        return Err(Error::unsupported(format!(
            "{}.{} has a primary key: Lance tiering supports log tables only \
             (Fluss's Lance catalog rejects primary-key tables too)",
            table.path.database, table.path.table
        )));
    }
    Ok(())
}

pub fn validate_table(storage: &dyn Storage, table: &TableInfo) -> Result<()> {
    check_log_table(table)?;
    let (version, naming) = versions::latest(storage)?.ok_or_else(|| {
        Error::not_found(format!(
            "Lance dataset {}.{} does not exist (no _versions/)",
            table.path.database, table.path.table
        ))
    })?;
    let manifest = versions::read(storage, version, naming)?;
    check_compatible(&manifest.fields, table)?;
    if let Some(f) = &manifest.data_format
        && (f.file_format != "lance" || f.version != "2.0")
    {
        return Err(Error::unsupported(format!(
            "the dataset stores {} files version {}; this plugin writes Lance file format 2.0",
            f.file_format, f.version
        )));
    }
    Ok(())
}

/// The table config Fluss's Java catalog (Lance 0.33) gives new datasets: Lance writers
/// clean up versions older than 14 days every 20 commits.
fn default_config() -> HashMap<String, String> {
    HashMap::from([
        ("lance.auto_cleanup.interval".to_string(), "20".to_string()),
        (
            "lance.auto_cleanup.older_than".to_string(),
            "14days".to_string(),
        ),
    ])
}

/// Creates version 1 of the dataset unless it exists; `true` when created.
pub fn create_table_if_missing(storage: &dyn Storage, table: &TableInfo) -> Result<bool> {
    check_log_table(table)?;
    if versions::latest(storage)?.is_some() {
        validate_table(storage, table)?;
        return Ok(false);
    }
    let fields = fields_for_fluss_table(table)?;
    let tx = pb::Transaction {
        read_version: 0,
        uuid: uuid::Uuid::new_v4().to_string(),
        operation: Some(pb::transaction::Operation::Overwrite(
            pb::transaction::Overwrite {
                schema: fields.clone(),
                config_upsert_values: default_config(),
                ..Default::default()
            },
        )),
        ..Default::default()
    };
    let tx_file = versions::write_transaction(storage, &tx)?;
    let manifest = pb::Manifest {
        fields,
        version: 1,
        writer_version: Some(writer_version()),
        timestamp: Some(now()),
        transaction_file: tx_file,
        data_format: Some(pb::manifest::DataStorageFormat {
            file_format: "lance".to_string(),
            version: format!("{FILE_MAJOR_VERSION}.{FILE_MINOR_VERSION}"),
        }),
        config: default_config(),
        // FLAG_TABLE_CONFIG: the manifest carries table config
        writer_feature_flags: 8,
        ..Default::default()
    };
    match versions::publish(storage, &manifest, None, NEW_DATASET_NAMING) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::Conflict => {
            validate_table(storage, table)?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
