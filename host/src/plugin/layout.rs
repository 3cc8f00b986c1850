//! Where a format keeps its tables: the layout a plugin declares once, and the table locations
//! the host composes from it.
//!
//! A plugin never names a location (contract 0.1.0 let it, and a prefix check could not stop
//! `fluss.db/orders_v2` or extra folders). It declares two suffixes; the host writes
//! `<database><database-suffix>/<table><table-suffix>` itself. Fluss names are ASCII
//! alphanumerics, `_` and `-` (`TablePath.detectInvalidName`), and a suffix is empty or starts
//! with `.`, so a location's two segments decode to exactly one (name, suffix) pair each: two
//! tables never share a location, and as every location is exactly two segments deep, none lies
//! inside another. This holds for every table, in flight or not, and for every host process
//! sharing the warehouse, since it needs no bookkeeping at all.

use crate::error::{Error, ErrorKind, Result};

use super::bindings::exports::fluss::lake::plugin::TableLayout as WitLayout;

/// Longest suffix, dot included.
const MAX_SUFFIX_BYTES: usize = 17;

/// Longest Fluss database or table name (`TablePath.MAX_NAME_LENGTH`).
const MAX_NAME_BYTES: usize = 200;

/// A checked table layout.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableLayout {
    database_suffix: String,
    table_suffix: String,
}

impl TableLayout {
    /// Checks a plugin's declared layout; refuses any suffix but empty or `.` + 1..16 of
    /// `a-z0-9_-`.
    pub fn from_wit(layout: &WitLayout) -> Result<Self> {
        for (what, suffix) in [
            ("database", &layout.database_suffix),
            ("table", &layout.table_suffix),
        ] {
            if !suffix_is_valid(suffix) {
                return Err(Error::new(
                    ErrorKind::PluginLoad,
                    format!(
                        "declares the {what} suffix {:?}: a suffix is empty or '.' followed by 1 to 16 of a-z, 0-9, '_', '-'",
                        super::sandbox::plugin_text(suffix, 64)
                    ),
                ));
            }
        }
        Ok(Self {
            database_suffix: layout.database_suffix.clone(),
            table_suffix: layout.table_suffix.clone(),
        })
    }

    /// The table's location relative to the warehouse. Refuses names Fluss itself would refuse
    /// (the host never composes a path from anything else).
    pub fn location(&self, database: &str, table: &str) -> Result<String> {
        for name in [database, table] {
            if !name_is_valid(name) {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "table {database}.{table}: '{name}' is not a Fluss name (1 to {MAX_NAME_BYTES} of ASCII alphanumerics, '_', '-'): refused"
                    ),
                ));
            }
        }
        Ok(format!(
            "{database}{}/{table}{}",
            self.database_suffix, self.table_suffix
        ))
    }

    /// `<db><suffix>/<table><suffix>`, for logs and `plugins inspect`.
    pub fn describe(&self) -> String {
        format!(
            "<database>{}/<table>{}",
            self.database_suffix, self.table_suffix
        )
    }
}

fn name_is_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn suffix_is_valid(suffix: &str) -> bool {
    match suffix.strip_prefix('.') {
        None => suffix.is_empty(),
        Some(rest) => {
            !rest.is_empty()
                && suffix.len() <= MAX_SUFFIX_BYTES
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(database_suffix: &str, table_suffix: &str) -> Result<TableLayout> {
        TableLayout::from_wit(&WitLayout {
            database_suffix: database_suffix.into(),
            table_suffix: table_suffix.into(),
        })
    }

    #[test]
    fn hostile_suffixes_are_refused() {
        for (d, t) in [
            ("", "_v2"),
            ("", "/x"),
            ("/..", ""),
            (".db/victim", ""),
            ("", "."),
            ("", ".."),
            (".db", "./"),
            ("", ".Lance"),
            ("", ".lance\n"),
            ("", ".été"),
            ("", ".0123456789abcdefg"),
            ("x", ""),
        ] {
            assert_eq!(
                layout(d, t).unwrap_err().kind(),
                ErrorKind::PluginLoad,
                "{d:?} {t:?}"
            );
        }
        for (d, t) in [("", ""), (".db", ""), ("", ".lance"), (".a-b_9", ".x")] {
            layout(d, t).unwrap();
        }
    }

    #[test]
    fn names_fluss_would_refuse_are_refused() {
        let l = layout(".db", "").unwrap();
        assert_eq!(l.location("fluss", "orders").unwrap(), "fluss.db/orders");
        for (db, t) in [
            ("fluss", "a/b"),
            ("..", "t"),
            ("fluss", "o.v2"),
            ("", "t"),
            ("fluss", &"x".repeat(201)),
        ] {
            assert_eq!(
                l.location(db, t).unwrap_err().kind(),
                ErrorKind::Config,
                "{db} {t}"
            );
        }
    }

    /// The guarantee itself: over tables and layouts chosen to collide (a name that is another's
    /// prefix, every suffix shape), distinct (layout, table) pairs never give locations that are
    /// equal or nested, in the same warehouse.
    #[test]
    fn no_location_equals_or_contains_another_tables() {
        let layouts = [
            ("", ""),
            (".db", ""),
            ("", ".lance"),
            (".db", ".v2"),
            ("", ".db"),
        ];
        let names = [
            "orders",
            "orders_v2",
            "orders-db",
            "o",
            "db",
            "fluss",
            "victim",
        ];
        let mut seen: Vec<((usize, &str, &str), String)> = Vec::new();
        for (i, (d, t)) in layouts.iter().enumerate() {
            let l = layout(d, t).unwrap();
            for db in names {
                for table in names {
                    seen.push(((i, db, table), l.location(db, table).unwrap()));
                }
            }
        }
        for (a, la) in &seen {
            for (b, lb) in &seen {
                let same_table = a.1 == b.1 && a.2 == b.2;
                if same_table && layouts[a.0] == layouts[b.0] {
                    continue;
                }
                assert_ne!(la, lb, "{a:?} and {b:?}");
                assert!(
                    !lb.starts_with(&format!("{la}/")),
                    "{lb} ({b:?}) inside {la} ({a:?})"
                );
            }
        }
    }
}
