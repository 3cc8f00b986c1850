//! The options of a primary-key table this plugin honours when writing it like Paimon's
//! `MergeTreeWriter` in write-only mode (what Fluss's tiering runs), and the refusal of every
//! option whose semantics it does not implement, so such tables fail validation instead of
//! being written subtly wrong.

use fluss_lake_guest_sdk::{Error, Result, config};

use crate::schema::TableSchema;

/// Paimon's `write-buffer-size` default: rows buffered (and sorted) before a level-0 file is
/// flushed.
pub const DEFAULT_WRITE_BUFFER_SIZE: u64 = 256 << 20;
/// Paimon's `metadata.stats-mode` default.
const DEFAULT_STATS_MODE: &str = "truncate(16)";
/// Keys under which Paimon reads `ignore-delete` (the option and its fallback keys).
const IGNORE_DELETE_KEYS: &[&str] = &[
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
];

/// How a primary-key table is written.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeTreeOptions {
    /// Bytes of table rows buffered before a sorted run is flushed as a level-0 file.
    pub write_buffer_size: u64,
    /// `changelog-producer = input`: the unmerged input is also written as changelog files.
    pub input_changelog: bool,
    /// `ignore-delete`: retractions never win the merge (keys whose every record is a
    /// retraction are left out of the data files).
    pub ignore_delete: bool,
    /// Name prefix of data files (`data-file.prefix`).
    pub data_file_prefix: String,
    /// Name prefix of changelog files (`changelog-file.prefix`).
    pub changelog_file_prefix: String,
    /// Statistics mode of level-0 data files (`metadata.stats-mode.per.level` for level 0,
    /// else `metadata.stats-mode`).
    pub data_stats_mode: String,
    /// Statistics mode of changelog files (`changelog-file.stats-mode`, else as data files).
    pub changelog_stats_mode: String,
}

/// Lower-cases and turns `_` into `-`, as Paimon's enum options accept either spelling.
fn normalized(value: &str) -> String {
    value.trim().to_ascii_lowercase().replace('_', "-")
}

fn unsupported<T>(what: impl std::fmt::Display) -> Result<T> {
    Err(Error::unsupported(format!(
        "the paimon plugin does not support {what} for primary-key tables"
    )))
}

fn flag(schema: &TableSchema, key: &str) -> Result<bool> {
    match schema.option(key) {
        None => Ok(false),
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(Error::invalid_input(format!(
                "Paimon option {key}={v:?} is not a boolean"
            ))),
        },
    }
}

/// The value of a per-level map option (`0:avro,1:parquet`) for `level`.
pub fn per_level(schema: &TableSchema, key: &str, level: i32) -> Result<Option<String>> {
    let Some(text) = schema.option(key) else {
        return Ok(None);
    };
    let level = level.to_string();
    Ok(config::parse_map(text)
        .map_err(|e| e.context(format!("Paimon option {key}")))?
        .into_iter()
        .find(|(l, _)| *l == level)
        .map(|(_, v)| v))
}

/// The statistics mode of data files written at `level` (`metadata.stats-mode.per.level`,
/// else `metadata.stats-mode`, else Paimon's default).
pub fn data_stats_mode(schema: &TableSchema, level: i32) -> Result<String> {
    Ok(
        match per_level(schema, "metadata.stats-mode.per.level", level)? {
            Some(mode) => mode,
            None => schema
                .option("metadata.stats-mode")
                .unwrap_or(DEFAULT_STATS_MODE)
                .to_string(),
        },
    )
}

/// Refuses data files at `level` in another format than Parquet (`file.format.per.level`).
pub fn check_parquet_at(schema: &TableSchema, level: i32) -> Result<()> {
    check_parquet(
        &format!("file.format.per.level (level {level})"),
        per_level(schema, "file.format.per.level", level)?,
    )
}

fn check_parquet(what: &str, format: Option<String>) -> Result<()> {
    match format {
        Some(f) if !f.trim().eq_ignore_ascii_case("parquet") => {
            unsupported(format!("{what}={f} (only parquet)"))
        }
        _ => Ok(()),
    }
}

impl MergeTreeOptions {
    /// The options of a primary-key table's schema; `unsupported` for features this plugin
    /// does not write (other merge engines, changelog producers that need compaction,
    /// user-defined sequence or row-kind fields, thin data files, dynamic or postponed
    /// buckets, non-Parquet level-0 or changelog files).
    pub fn of(schema: &TableSchema) -> Result<MergeTreeOptions> {
        if schema.primary_keys.is_empty() {
            return Err(Error::internal(
                "merge-tree options of a table without primary key",
            ));
        }
        check_keys(schema)?;
        match schema.bucket_option()? {
            n if n > 0 => {}
            -1 => return unsupported("dynamic bucket mode (bucket = -1)"),
            -2 => return unsupported("postponed bucket mode (bucket = -2)"),
            n => return unsupported(format!("bucket = {n}")),
        }
        if let Some(engine) = schema.option("merge-engine")
            && normalized(engine) != "deduplicate"
        {
            return unsupported(format!(
                "merge-engine={engine} (only deduplicate, which Fluss uses)"
            ));
        }
        let input_changelog = match schema.option("changelog-producer").map(normalized) {
            None => false,
            Some(p) if p == "none" => false,
            Some(p) if p == "input" => true,
            Some(p) => {
                return unsupported(format!(
                    "changelog-producer={p} (it produces changelog by compaction, which this \
                     plugin does not run; only none and input)"
                ));
            }
        };
        for key in ["sequence.field", "rowkind.field"] {
            if let Some(v) = schema.option(key) {
                return unsupported(format!("{key}={v}"));
            }
        }
        if flag(schema, "data-file.thin-mode")? {
            return unsupported("data-file.thin-mode=true");
        }
        check_parquet_at(schema, 0)?;
        if input_changelog {
            check_parquet(
                "changelog-file.format",
                schema.option("changelog-file.format").map(str::to_string),
            )?;
        }
        let mut ignore_delete = false;
        for key in IGNORE_DELETE_KEYS {
            ignore_delete |= flag(schema, key)?;
        }
        let write_buffer_size = match schema.option("write-buffer-size") {
            Some(v) => config::parse_size(v).map_err(|e| e.context("write-buffer-size"))?,
            None => DEFAULT_WRITE_BUFFER_SIZE,
        };
        let data_stats_mode = data_stats_mode(schema, 0)?;
        Ok(MergeTreeOptions {
            write_buffer_size,
            input_changelog,
            ignore_delete,
            data_file_prefix: schema
                .option("data-file.prefix")
                .unwrap_or("data-")
                .to_string(),
            changelog_file_prefix: schema
                .option("changelog-file.prefix")
                .unwrap_or("changelog-")
                .to_string(),
            changelog_stats_mode: schema
                .option("changelog-file.stats-mode")
                .map_or_else(|| data_stats_mode.clone(), str::to_string),
            data_stats_mode,
        })
    }

    /// The table's options overlaid by the plugin configuration: `write-buffer-size` set in
    /// the plugin config wins over the table option (it sizes guest memory, a deployment
    /// concern).
    pub fn with_config(mut self, plugin_config: &[(String, String)]) -> Result<MergeTreeOptions> {
        if let Some(v) = config::get(plugin_config, "write-buffer-size") {
            self.write_buffer_size =
                config::parse_size(v).map_err(|e| e.context("plugin config write-buffer-size"))?;
        }
        if self.write_buffer_size == 0 {
            return Err(Error::invalid_input("write-buffer-size must be positive"));
        }
        Ok(self)
    }
}

/// Paimon's own constraints on primary keys (enforced when it creates a table): partition keys
/// are part of the primary key, which has columns left once they are removed.
fn check_keys(schema: &TableSchema) -> Result<()> {
    for k in &schema.primary_keys {
        if !schema.fields.iter().any(|f| &f.name == k) {
            return Err(Error::corrupt(format!("primary key {k} is not a column")));
        }
    }
    for p in &schema.partition_keys {
        if !schema.primary_keys.contains(p) {
            return Err(Error::invalid_input(format!(
                "partition key {p} is not part of the primary key {:?}",
                schema.primary_keys
            )));
        }
    }
    if schema.primary_keys.len() == schema.partition_keys.len() {
        return Err(Error::invalid_input(
            "the primary key must have columns besides the partition keys",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use fluss_lake_guest_sdk::ErrorKind;

    use super::*;
    use crate::schema::schema_for_fluss_table;

    fn schema(options: &[(&str, &str)]) -> TableSchema {
        let t = fluss_lake_guest_sdk::testing::pk_table(
            "db",
            "t",
            &[("id", "INT", false), ("v", "STRING", true)],
            &["id"],
            3,
            &[],
        );
        let mut s = schema_for_fluss_table(&t, true, 0).unwrap();
        s.options.extend(
            options
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        );
        s
    }

    #[test]
    fn fluss_tables_use_input_changelog_and_paimon_defaults() {
        let o = MergeTreeOptions::of(&schema(&[])).unwrap();
        assert_eq!(
            o,
            MergeTreeOptions {
                write_buffer_size: 256 << 20,
                input_changelog: true,
                ignore_delete: false,
                data_file_prefix: "data-".into(),
                changelog_file_prefix: "changelog-".into(),
                data_stats_mode: "truncate(16)".into(),
                changelog_stats_mode: "truncate(16)".into(),
            }
        );
        let o = MergeTreeOptions::of(&schema(&[
            ("write-buffer-size", "64 mb"),
            ("metadata.stats-mode.per.level", "0:none,1:full"),
            ("changelog-file.stats-mode", "full"),
            ("deduplicate.ignore-delete", "true"),
            ("merge-engine", "DEDUPLICATE"),
        ]))
        .unwrap();
        assert_eq!(o.write_buffer_size, 64 << 20);
        assert_eq!(o.data_stats_mode, "none");
        assert_eq!(o.changelog_stats_mode, "full");
        assert!(o.ignore_delete);
        let o = o
            .with_config(&[("write-buffer-size".into(), "1kb".into())])
            .unwrap();
        assert_eq!(o.write_buffer_size, 1024);
    }

    #[test]
    fn rejects_what_it_does_not_implement() {
        for bad in [
            ("merge-engine", "first-row"),
            ("merge-engine", "partial-update"),
            ("merge-engine", "aggregation"),
            ("changelog-producer", "lookup"),
            ("changelog-producer", "full-compaction"),
            ("sequence.field", "v"),
            ("rowkind.field", "v"),
            ("data-file.thin-mode", "true"),
            ("bucket", "-1"),
            ("bucket", "-2"),
            ("file.format.per.level", "0:avro"),
            ("changelog-file.format", "orc"),
        ] {
            let err = MergeTreeOptions::of(&schema(&[bad])).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unsupported, "{bad:?}: {err}");
        }
        let err = MergeTreeOptions::of(&schema(&[("write-buffer-size", "lots")])).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }
}
