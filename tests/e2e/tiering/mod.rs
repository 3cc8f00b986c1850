//! The host binary tiering tables of a real Fluss cluster into every lake format, read back
//! by independent readers; each test leases a cluster of its own.

mod aggregation;
mod catalog_rounds;
mod iceberg;
mod iceberg_glue;
mod iceberg_hive;
mod iceberg_rest;
mod kv_snapshots;
mod lance;
mod log_gaps;
mod merge_engines;
mod mixed_evil_plugins;
mod mixed_formats;
mod mixed_hot_swap;
mod nested_types;
mod object_stores;
mod paimon_hive;
mod paimon_log_table;
mod paimon_partitioned_concurrent;
mod paimon_primary_key;
mod paimon_rest;
mod pieces;
mod remote_log_stores;
mod sasl;
mod scale;
mod schema_changes;
