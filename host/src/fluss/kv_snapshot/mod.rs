//! A primary-key bucket's KV snapshot: the RocksDB checkpoint Fluss keeps of its state, read
//! for the first tiering round of a bucket whose changelog no longer holds its whole history
//! (FlussLakeTiering's `TieringSnapshotSplit`). Work in progress (issue 34): the table reader.

pub mod sst;
pub mod values;
