//! Guest SDK for fluss:lake WebAssembly lake-format plugins.
//!
//! Everything a format plugin needs besides its own format logic lives here, once:
//!
//! * [`bindings`] — the wit-bindgen bindings of the `lake-plugin-maintained` world; a format crate
//!   implements the generated `Guest*` traits and calls [`export!`].
//! * [`storage`] — the [`Storage`](storage::Storage) trait format code is written against,
//!   with the host implementation and in-memory / local-directory ones for native runs.
//! * [`error`] — the one error type, convertible to and from the WIT `lake-error`.
//! * [`layout`] — the table layout a plugin declares, and the locations composed from it.
//! * [`ipc`] — decoding of `row-batch`es into Arrow `RecordBatch`es.
//! * [`convert`], [`file_columns`], [`stats`] — Fluss's columns as lake files store them
//!   (the `fluss-lake-columns` crate, shared with the host's native data plane);
//!   [`parquet`], [`avro`] — data and metadata file writing; [`parquet_read`] —
//!   reading data files back a row group at a time (compaction).
//! * [`ord`] — ordering rows the way Java orders keys, for formats that sort their files.
//! * [`commit`] — the commit kit: attempts, lost races, unknown outcomes and cleanup, once
//!   for every format.
//! * [`maintenance`] — what every format's table maintenance shares.
//! * [`replace`] — the buckets a commit replaces (a primary-key bucket rebuilt from its KV
//!   snapshot), validated once, and the rules every format keeps when it replaces them.
//! * [`config`], [`datatype`], [`log`], [`clock`] — small helpers.

pub mod arrow_util;
pub mod avro;
pub mod bindings;
pub mod clock;
pub mod commit;
pub mod config;
pub mod data_plane;
pub mod datatype;
pub mod error;
pub mod ipc;
pub mod layout;
pub mod log;
pub mod maintenance;
pub mod memo;
pub mod ord;
pub mod parquet;
pub mod parquet_read;
pub mod plugin;
pub mod replace;
pub mod storage;
pub mod table_catalog;
pub mod testing;

pub use bindings::export;
pub use error::{Error, ErrorKind, Result, ResultExt, SdkError};
/// Fluss's Arrow columns in lake files' types, the system columns, and column statistics:
/// shared with the host's native data plane, which encodes files with the same code.
pub use fluss_lake_columns::{convert, file_columns, stats};

/// Re-exports of the crates format plugins use through the SDK, so that every plugin builds
/// against the same versions.
pub mod deps {
    pub use apache_avro;
    pub use arrow_array;
    pub use arrow_buffer;
    pub use arrow_ipc;
    pub use arrow_schema;
    pub use arrow_select;
    pub use parquet;
    pub use prost;
    pub use serde;
    pub use serde_json;
    pub use uuid;
}

/// The WIT record and enum types (plain Rust data, usable natively too).
pub mod wit {
    pub use crate::bindings::exports::fluss::lake::bucket_replace::BucketRef;
    pub use crate::bindings::exports::fluss::lake::maintenance::{
        MaintenanceReport, MaintenanceRequest,
    };
    pub use crate::bindings::exports::fluss::lake::plugin::{PluginInfo, TableLayout};
    pub use crate::bindings::fluss::lake::types::{
        ChangeType as WitChangeType, Column, CommitResult, CommittedSnapshot, CommitterContext,
        ErrorKind as WitErrorKind, LakeError, ObjectMeta as WitObjectMeta, ReadableSnapshot,
        RowBatch, TableInfo, TablePath, TieringStats, WriteResult, WriterContext,
    };
}

/// The version of the WIT contract these bindings were generated from.
pub const CONTRACT_VERSION: &str = "0.3.9";

/// The commit user Fluss's tiering service commits lake snapshots with.
pub const FLUSS_COMMIT_USER: &str = "__fluss_lake_tiering";

/// The commit user of snapshots table maintenance commits (compaction, manifest merging) in
/// every format: never Fluss's tiering user, whose latest snapshot Fluss's recovery reads its
/// offsets from. One fixed user rather than one per call: the snapshot id already identifies
/// the call, and no format ties state to a commit user that a later compaction would need.
pub const MAINTENANCE_COMMIT_USER: &str = "__fluss_lake_maintenance";

/// The snapshot property holding the path of the Fluss offsets file.
pub const FLUSS_OFFSETS_PROPERTY: &str = "fluss-offsets";
