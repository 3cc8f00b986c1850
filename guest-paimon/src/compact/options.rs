//! The options compaction honours, under Paimon's names and with Paimon 1.3's defaults
//! (plugin configuration first, then the table's options), and the one plugin option of its
//! own: `maintenance.compaction.max-input-bytes`, the bytes of data files one call may read.

use fluss_lake_guest_sdk::{Error, Result, config};

use crate::schema::TableSchema;
use crate::writer::target_file_size_or;

/// Paimon `num-sorted-run.compaction-trigger` default.
const DEFAULT_SORTED_RUN_TRIGGER: i64 = 5;
/// Paimon `compaction.max-size-amplification-percent` default.
const DEFAULT_MAX_SIZE_AMPLIFICATION_PERCENT: i64 = 200;
/// Paimon `compaction.size-ratio` default.
const DEFAULT_SIZE_RATIO: i64 = 1;
/// Paimon `compaction.min.file-num` default (append tables).
const DEFAULT_MIN_FILE_NUM: i64 = 5;
/// Paimon's `target-file-size` default for primary-key tables.
const DEFAULT_PK_TARGET_FILE_SIZE: u64 = 128 << 20;
/// Paimon's `target-file-size` default for append tables.
const DEFAULT_APPEND_TARGET_FILE_SIZE: u64 = 256 << 20;
/// The plugin option bounding the data file bytes one maintenance call reads.
pub const MAX_INPUT_BYTES: &str = "maintenance.compaction.max-input-bytes";
/// Its default: a few hundred MiB, rewritten well within a typical freshness interval.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 << 20;

/// How one table is compacted.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionOptions {
    /// `num-sorted-run.compaction-trigger`: sorted runs of a bucket that trigger a compaction.
    pub sorted_run_trigger: usize,
    /// `num-levels` (default trigger + 1): the highest level is `num_levels - 1`.
    pub num_levels: usize,
    /// `compaction.max-size-amplification-percent`.
    pub max_size_amplification_percent: u64,
    /// `compaction.size-ratio` (percent).
    pub size_ratio: u64,
    /// `compaction.force-up-level-0` or `force-lookup` (Paimon's `ForceUpLevel0Compaction`):
    /// when universal compaction picks nothing, level-0 files are still compacted up.
    pub force_up_level0: bool,
    /// `compaction.total-size-threshold`: a bucket smaller than this is fully compacted.
    pub total_size_threshold: Option<u64>,
    /// `compaction.force-rewrite-all-files`: files are rewritten, never just moved up a level.
    pub force_rewrite_all_files: bool,
    /// `target-file-size` (128 MB for primary-key tables, 256 MB for append tables).
    pub target_file_size: u64,
    /// Files below this size are rewritten rather than moved to the output level
    /// (Paimon `compactionFileSize`: 70 % of the target).
    pub compaction_file_size: u64,
    /// `compaction.min.file-num`: small files of an append bucket that trigger a compaction.
    pub min_file_num: usize,
    /// Data file bytes one call may read ([`MAX_INPUT_BYTES`]).
    pub max_input_bytes: u64,
}

fn positive(key: &str, value: i64) -> Result<i64> {
    if value < 1 {
        return Err(Error::invalid_input(format!(
            "option {key} = {value} must be at least 1"
        )));
    }
    Ok(value)
}

fn flag(key: &str, value: Option<&str>) -> Result<bool> {
    match value.map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) if v == "true" => Ok(true),
        Some(v) if v == "false" => Ok(false),
        Some(v) => Err(Error::invalid_input(format!(
            "option {key}: {v:?} is not a boolean"
        ))),
    }
}

impl CompactionOptions {
    /// The options of the table in `schema`, `plugin_config` first. Fails with `unsupported`
    /// for Paimon compaction settings whose behaviour needs state a maintenance call does not
    /// have (`compaction.optimization-interval`, `lookup-compact = gentle`) or that make
    /// compaction change rows (`record-level.expire-time`).
    pub fn of(
        plugin_config: &[(String, String)],
        schema: &TableSchema,
    ) -> Result<CompactionOptions> {
        let get = |key: &str| config::get(plugin_config, key).or_else(|| schema.option(key));
        let int = |key: &str, default: i64| -> Result<i64> {
            positive(key, config::parse_i64(key, get(key), default)?)
        };
        let size = |key: &str| -> Result<Option<u64>> {
            get(key)
                .map(|v| config::parse_size(v).map_err(|e| e.context(format!("option {key}"))))
                .transpose()
        };
        if let Some(v) = get("compaction.optimization-interval") {
            return Err(Error::unsupported(format!(
                "compaction.optimization-interval = {v}: a periodic full compaction needs the \
                 time of the last one, which this plugin does not keep; unset it or compact \
                 the table with Paimon"
            )));
        }
        if let Some(v) = get("record-level.expire-time") {
            return Err(Error::unsupported(format!(
                "record-level.expire-time = {v}: Paimon drops expired records while compacting, \
                 which this plugin does not; unset it or compact the table with Paimon"
            )));
        }
        let force_lookup = flag("force-lookup", get("force-lookup"))?;
        if force_lookup
            && get("lookup-compact").is_some_and(|v| v.trim().eq_ignore_ascii_case("gentle"))
        {
            return Err(Error::unsupported(
                "lookup-compact = gentle counts compactions across writes, which this plugin \
                 does not keep; use radical or compact the table with Paimon",
            ));
        }
        let trigger = int(
            "num-sorted-run.compaction-trigger",
            DEFAULT_SORTED_RUN_TRIGGER,
        )?;
        let num_levels = int("num-levels", trigger.saturating_add(1))?;
        if num_levels < 2 {
            return Err(Error::invalid_input(format!(
                "option num-levels = {num_levels} must be at least 2"
            )));
        }
        let has_primary_key = !schema.primary_keys.is_empty();
        let default_target = if has_primary_key {
            DEFAULT_PK_TARGET_FILE_SIZE
        } else {
            DEFAULT_APPEND_TARGET_FILE_SIZE
        };
        let target_file_size =
            target_file_size_or(plugin_config, &schema.options, default_target)?.max(1);
        let max_input_bytes = match config::get(plugin_config, MAX_INPUT_BYTES)
            .or_else(|| schema.option(MAX_INPUT_BYTES))
        {
            Some(v) => config::parse_size(v).map_err(|e| e.context(MAX_INPUT_BYTES))?,
            None => DEFAULT_MAX_INPUT_BYTES,
        };
        Ok(CompactionOptions {
            sorted_run_trigger: trigger as usize,
            num_levels: num_levels as usize,
            max_size_amplification_percent: int(
                "compaction.max-size-amplification-percent",
                DEFAULT_MAX_SIZE_AMPLIFICATION_PERCENT,
            )? as u64,
            size_ratio: config::parse_i64(
                "compaction.size-ratio",
                get("compaction.size-ratio"),
                DEFAULT_SIZE_RATIO,
            )?
            .max(0) as u64,
            force_up_level0: force_lookup
                || flag(
                    "compaction.force-up-level-0",
                    get("compaction.force-up-level-0"),
                )?,
            total_size_threshold: size("compaction.total-size-threshold")?,
            force_rewrite_all_files: flag(
                "compaction.force-rewrite-all-files",
                get("compaction.force-rewrite-all-files"),
            )?,
            target_file_size,
            compaction_file_size: target_file_size / 10 * 7,
            min_file_num: int("compaction.min.file-num", DEFAULT_MIN_FILE_NUM)? as usize,
            max_input_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use fluss_lake_guest_sdk::ErrorKind;
    use fluss_lake_guest_sdk::testing::{id_name_table, pk_table};

    use super::*;
    use crate::schema::schema_for_fluss_table;

    fn pk_schema(options: &[(&str, &str)]) -> TableSchema {
        let t = pk_table("db", "t", &[("id", "INT", false)], &["id"], 2, &[]);
        let mut s = schema_for_fluss_table(&t, true, 0).unwrap();
        for (k, v) in options {
            s.options.insert(k.to_string(), v.to_string());
        }
        s
    }

    #[test]
    fn paimon_defaults_and_overrides() {
        let o = CompactionOptions::of(&[], &pk_schema(&[])).unwrap();
        assert_eq!(
            o,
            CompactionOptions {
                sorted_run_trigger: 5,
                num_levels: 6,
                max_size_amplification_percent: 200,
                size_ratio: 1,
                force_up_level0: false,
                total_size_threshold: None,
                force_rewrite_all_files: false,
                target_file_size: 128 << 20,
                compaction_file_size: (128 << 20) / 10 * 7,
                min_file_num: 5,
                max_input_bytes: 256 << 20,
            }
        );
        let append = schema_for_fluss_table(&id_name_table(), true, 0).unwrap();
        let o = CompactionOptions::of(&[], &append).unwrap();
        assert_eq!(o.target_file_size, 256 << 20);

        let schema = pk_schema(&[
            ("num-sorted-run.compaction-trigger", "3"),
            ("target-file-size", "1 mb"),
            ("compaction.force-up-level-0", "true"),
            (MAX_INPUT_BYTES, "1gb"),
        ]);
        let config = vec![(MAX_INPUT_BYTES.to_string(), "10 mb".to_string())];
        let o = CompactionOptions::of(&config, &schema).unwrap();
        assert_eq!((o.sorted_run_trigger, o.num_levels), (3, 4));
        assert_eq!(o.target_file_size, 1 << 20);
        assert!(o.force_up_level0);
        assert_eq!(o.max_input_bytes, 10 << 20, "the plugin config wins");

        for bad in [
            ("compaction.optimization-interval", "1 h"),
            ("record-level.expire-time", "1 d"),
            ("num-sorted-run.compaction-trigger", "0"),
            ("num-levels", "1"),
            ("compaction.force-up-level-0", "yes"),
        ] {
            let e = CompactionOptions::of(&[], &pk_schema(&[bad])).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::InvalidInput),
                "{bad:?}: {e}"
            );
        }
        let gentle = pk_schema(&[("force-lookup", "true"), ("lookup-compact", "gentle")]);
        assert_eq!(
            CompactionOptions::of(&[], &gentle).unwrap_err().kind(),
            ErrorKind::Unsupported
        );
    }
}
