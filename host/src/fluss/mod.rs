//! What the host needs from Fluss beyond the tiering RPCs, on top of fluss-rs: table
//! metadata in the contract's shape ([`table`]), lake snapshot and offset lookups
//! ([`offsets`]) and reading a bucket up to its stop offset as Arrow batches ([`reader`]).

pub mod offsets;
pub mod reader;
pub mod table;
