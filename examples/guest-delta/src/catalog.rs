//! Table-level operations: where a Delta table lives (`<db>/<table>` under the warehouse),
//! the log-table-only rule, creating a table (version 0: `protocol`, `metaData`,
//! `commitInfo`) and checking that an existing one is the table Fluss tiers.
//!
//! Primary-key tables are refused: tiering their changelog into Delta needs updates and
//! deletes, i.e. merge-on-read with deletion vectors (or rewriting files copy-on-write),
//! which this plugin does not implement. Log tables only need blind appends.

use fluss_lake_guest_sdk::deps::serde_json::{Value, json};
use fluss_lake_guest_sdk::layout::Layout;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, ErrorKind, Result, clock};

use crate::actions::{Metadata, Protocol, check_writable};
use crate::delta_log::{self, TableState};
use crate::partition::check_partition_keys;

/// `<db>/<table>`.
pub const LAYOUT: Layout = Layout {
    database_suffix: "",
    table_suffix: "",
};

/// Refuses primary-key tables (`unsupported`).
pub fn check_log_table(table: &TableInfo) -> Result<()> {
    if !table.primary_keys.is_empty() {
        return Err(Error::unsupported(format!(
            "{}.{} has a primary key: Delta tiering supports log tables only (primary-key \
             tables need merge-on-read with deletion vectors, which this plugin does not write)",
            table.path.database, table.path.table
        )));
    }
    Ok(())
}

/// The error for a table that has no Delta log.
pub fn missing(table: &TableInfo) -> Error {
    Error::not_found(format!(
        "Delta table {}.{} does not exist (no _delta_log/ commits)",
        table.path.database, table.path.table
    ))
}

/// Checks that the Delta table exists, that this plugin can append to it, and that its
/// schema and partition columns are the Fluss table's.
pub fn validate_table(storage: &dyn Storage, table: &TableInfo) -> Result<()> {
    check_log_table(table)?;
    check_partition_keys(table)?;
    let state = delta_log::table_state(storage)?.ok_or_else(|| missing(table))?;
    check_state(&state, table)
}

fn check_state(state: &TableState, table: &TableInfo) -> Result<()> {
    let m = &state.metadata;
    check_writable(&state.protocol, m)?;
    m.schema.check_matches(table)?;
    if m.partition_columns != table.partition_keys {
        return Err(Error::invalid_input(format!(
            "the Delta table is partitioned by {:?}, the Fluss table by {:?}",
            m.partition_columns, table.partition_keys
        )));
    }
    Ok(())
}

/// Creates version 0 unless the table exists; `true` when created. An existing table (or one
/// a concurrent creator won) must pass [`validate_table`].
pub fn create_table_if_missing(storage: &dyn Storage, table: &TableInfo) -> Result<bool> {
    check_log_table(table)?;
    check_partition_keys(table)?;
    if delta_log::latest(storage)?.is_some() {
        validate_table(storage, table)?;
        return Ok(false);
    }
    let now = clock::now_millis();
    let id = fluss_lake_guest_sdk::deps::uuid::Uuid::new_v4().to_string();
    let metadata = Metadata::for_fluss_table(table, &id, now)?;
    let protocol = Protocol::for_schema(&metadata.schema);
    let properties: Value = metadata.configuration.clone().into();
    let commit_info = json!({"commitInfo": {
        "timestamp": now,
        "operation": "CREATE TABLE",
        "operationParameters": {
            "isManaged": "false",
            "description": null,
            "partitionBy": json!(table.partition_keys).to_string(),
            "properties": properties.to_string(),
        },
        "isBlindAppend": true,
        "engineInfo": crate::ENGINE_INFO,
    }});
    let actions = [commit_info, protocol.to_action(), metadata.to_action()];
    match delta_log::publish(storage, 0, &actions) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::Conflict => {
            validate_table(storage, table)?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{log_table, pk_table};

    use super::*;

    fn table() -> TableInfo {
        log_table(
            "db",
            "t",
            &[("id", "INT", false), ("ts", "TIMESTAMP(6)", true)],
            &[],
            1,
            &[],
        )
    }

    #[test]
    fn creates_version_zero_once() {
        let s = MemoryStorage::new();
        let t = table();
        assert_eq!(LAYOUT.location(&t).unwrap(), "db/t");
        assert_eq!(
            validate_table(&s, &t).unwrap_err().kind(),
            ErrorKind::NotFound
        );
        assert!(create_table_if_missing(&s, &t).unwrap());
        assert!(!create_table_if_missing(&s, &t).unwrap());
        validate_table(&s, &t).unwrap();
        let actions = delta_log::read_commit(&s, 0).unwrap();
        let kinds: Vec<&str> = actions
            .iter()
            .map(|a| a.as_object().unwrap().keys().next().unwrap().as_str())
            .collect();
        assert_eq!(kinds, ["commitInfo", "protocol", "metaData"]);
        assert_eq!(
            actions[1]["protocol"]["readerFeatures"],
            json!(["timestampNtz"])
        );
        assert_eq!(actions[0]["commitInfo"]["operation"], "CREATE TABLE");
        assert_eq!(delta_log::versions(&s).unwrap(), [0]);
    }

    #[test]
    fn a_different_table_is_invalid_input() {
        let s = MemoryStorage::new();
        assert!(create_table_if_missing(&s, &table()).unwrap());
        let mut other = table();
        other.columns[1].data_type = "TIMESTAMP_LTZ(6)".into();
        let e = validate_table(&s, &other).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.message().contains("column ts"), "{e}");
        assert_eq!(
            create_table_if_missing(&s, &other).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        let mut partitioned = table();
        partitioned.partition_keys = vec!["id".into()];
        assert_eq!(
            validate_table(&s, &partitioned).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }

    #[test]
    fn primary_key_tables_are_refused() {
        let s = MemoryStorage::new();
        let t = pk_table("db", "pk", &[("id", "INT", false)], &["id"], 1, &[]);
        let e = create_table_if_missing(&s, &t).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("log tables only"), "{e}");
        assert!(s.is_empty(), "nothing written");
        assert_eq!(
            validate_table(&s, &t).unwrap_err().kind(),
            ErrorKind::Unsupported
        );
    }
}
