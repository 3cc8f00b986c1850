//! The plugin's native build against independent readers (pypaimon, Java Paimon): one test
//! binary with a module per check, instead of one binary (and one link) per file.

mod common;
mod java_paimon_crosscheck;
mod pypaimon_nested;
mod pypaimon_nested_compaction;
mod pypaimon_pk;
mod pypaimon_roundtrip;
