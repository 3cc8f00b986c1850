//! Fluss's Arrow columns as lake data files store them.
//!
//! The guest SDK (inside every plugin, as WebAssembly) and the host's native data plane
//! (contract 0.3.8's `data-plane` import) encode data files with this one crate, so a file is
//! the same whichever side encodes it:
//!
//! * [`convert`]: Fluss's Arrow types into the types a lake format stores;
//! * [`file_columns`]: a data file's columns and where each takes its values from (a Fluss
//!   column, nulls, or a system column: `__bucket`, `__offset`, `__timestamp`);
//! * [`stats`]: the per-column statistics formats describe their files with;
//! * [`encode`]: the Parquet writer settings and the encoder of one file.

pub mod convert;
pub mod encode;
pub mod error;
pub mod file_columns;
pub mod stats;

pub use error::{Error, Result};
