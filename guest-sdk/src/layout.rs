//! Where a format keeps its tables: the contract's `table-layout`.
//!
//! A plugin declares its layout once, in `info`; the host composes each table's location from
//! it and confines the plugin's storage to that location, so a plugin never names a location.
//! [`Layout::location`] composes the same path for native runs and for formats that record a
//! table's absolute location in their metadata (Iceberg).

use crate::error::{Error, Result};
use crate::wit::TableInfo;

/// The suffixes a format appends to database and table names (empty, or `.` and a few
/// lowercase letters, digits, `_` or `-`: the host refuses anything else at load).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub database_suffix: &'static str,
    pub table_suffix: &'static str,
}

impl Layout {
    /// `<database><database-suffix>/<table><table-suffix>`, relative to the warehouse.
    pub fn location(&self, table: &TableInfo) -> Result<String> {
        let (db, t) = (table.path.database.as_str(), table.path.table.as_str());
        for part in [db, t] {
            if part.is_empty() || part.contains(['/', '.']) {
                return Err(Error::invalid_input(format!("invalid table path {db}.{t}")));
            }
        }
        Ok(format!(
            "{db}{}/{t}{}",
            self.database_suffix, self.table_suffix
        ))
    }

    /// The contract record.
    pub fn to_wit(self) -> crate::wit::TableLayout {
        crate::wit::TableLayout {
            database_suffix: self.database_suffix.into(),
            table_suffix: self.table_suffix.into(),
        }
    }
}

/// The storage path (relative to the table location) of `uri`, an absolute URI of a file
/// inside the table whose absolute location is `location`, as formats that record absolute
/// paths in their metadata (Iceberg) name their files. `invalid-input` for a URI outside it.
pub fn relative_path<'a>(location: &str, uri: &'a str) -> Result<&'a str> {
    uri.strip_prefix(location)
        .and_then(|r| r.strip_prefix('/'))
        .ok_or_else(|| {
            Error::invalid_input(format!("{uri} is not inside the table location {location}"))
        })
}
