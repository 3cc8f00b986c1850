//! Table-level operations: where a table lives, creating it like Fluss's `PaimonLakeCatalog`
//! would, and checking that the plugin can tier it (Fluss `TieringTableValidator`).

use fluss_lake_guest_sdk::commit::{self, Published};
use fluss_lake_guest_sdk::layout::Layout;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::wit::TableInfo;
use fluss_lake_guest_sdk::{Error, Result, clock, config};

use crate::schema::{check_compatible, load_latest_schema, schema_for_fluss_table, schema_path};
use crate::table::{check_bucket_count, check_supported};

/// Plugin config key: whether tables created by [`create_table_if_missing`] get the Fluss
/// system columns (`__bucket`, `__offset`, `__timestamp`) as Fluss 0.9's Paimon catalog adds
/// them (default true); later Fluss versions create tables without them.
pub const SYSTEM_COLUMNS_CONFIG: &str = "create-system-columns";

/// `<db>.db/<table>`, the Paimon filesystem catalog layout.
pub const LAYOUT: Layout = Layout {
    database_suffix: ".db",
    table_suffix: "",
};

/// Checks that the Paimon table exists and that this plugin can write the Fluss table into it:
/// log tables and primary-key tables (the options it honours or refuses for the latter are in
/// [`crate::merge_tree::options`]).
pub fn validate_table(storage: &dyn Storage, table: &TableInfo) -> Result<()> {
    let schema = load_latest_schema(storage)?.ok_or_else(|| {
        Error::not_found(format!(
            "Paimon table {}.{} does not exist (no schema/schema-N)",
            table.path.database, table.path.table
        ))
    })?;
    check_supported(&schema, Some(table))?;
    check_bucket_count(&schema, table)?;
    check_compatible(&schema, table)?;
    // A malformed value is refused here, before any round; the compaction it asks for runs as
    // table maintenance when the host calls `maintain` (crate::maintenance).
    config::get_bool(&table.properties, AUTO_COMPACTION, false)?;
    Ok(())
}

/// Fluss property asking the tiering service to compact the lake table.
const AUTO_COMPACTION: &str = "table.datalake.auto-compaction";

/// Creates `schema/schema-0` for the table unless a schema exists; `true` when created.
/// An existing incompatible schema fails with `invalid-input`.
pub fn create_table_if_missing(
    storage: &dyn Storage,
    table: &TableInfo,
    config: &[(String, String)],
) -> Result<bool> {
    if let Some(existing) = load_latest_schema(storage)? {
        check_compatible(&existing, table)?;
        return Ok(false);
    }
    let with_system = config::get_bool(config, SYSTEM_COLUMNS_CONFIG, true)?;
    let schema = schema_for_fluss_table(table, with_system, clock::now_millis())?;
    // Through the commit kit's put: a lost acknowledgement of our own schema is recognised.
    match commit::publish(storage, &schema_path(0), &schema.to_json()?)? {
        Published::Ours => Ok(true),
        Published::Theirs => {
            let existing =
                load_latest_schema(storage)?.ok_or_else(|| Error::internal("schema-0 vanished"))?;
            check_compatible(&existing, table)?;
            Ok(false)
        }
    }
}
