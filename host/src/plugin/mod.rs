//! The plugin runtime: WebAssembly components that implement the `fluss:lake` contract.
//!
//! - [`engine`] owns the wasmtime engine and the on-disk cache of compiled components.
//! - [`compile`] compiles a plugin as an untrusted workload: structure checked, then in a
//!   child process under memory, CPU and wall bounds.
//! - [`builtin`] holds the standard plugins embedded in the binary (`embedded-plugins`).
//! - [`source`] names the plugin files: `--plugin PATH[#sha256=…]` and `--plugin-dir DIR`.
//! - [`registry`] loads plugin files and answers "which plugin writes format X".
//! - [`reload`] swaps in new plugin versions while the host runs (hot swap).
//! - [`instance`] is one sandboxed instance of a plugin, with typed calls into it.
//! - [`layout`] composes table locations from the layout a plugin declares.
//! - [`sandbox`] holds the limits instances run under: memory, deadlines, result sizes,
//!   location claims.
//! - [`host_api`] implements what the host provides to plugins: storage, logging, clock.
//! - [`storage`] confines a plugin's storage calls to one table's lake location.
//! - [`inspect`] is `fluss-lake-host plugins inspect PATH`, [`list`] is `plugins list`.

pub mod builtin;
pub mod cache;
pub mod compile;
pub mod data_plane;
pub mod engine;
pub mod host_api;
pub mod inspect;
pub mod instance;
pub mod layout;
pub mod list;
pub mod registry;
pub mod reload;
pub mod sandbox;
pub mod source;
pub mod storage;
pub mod table_catalog;

/// Rust bindings of the WIT world, generated at compile time from `wit/`.
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "lake-plugin",
        imports: { default: async },
        exports: { default: async },
        // A plugin's upload handle is the host's upload of one object.
        with: { "fluss:lake/storage.upload": super::storage::Upload },
    });
}

/// Bindings of the optional `maintenance` export (`wit/` world `lake-maintenance`), looked up
/// apart from the others so that a plugin without it still loads; its records are the main
/// bindings' types.
pub mod maintenance_bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "lake-maintenance",
        exports: { default: async },
        with: { "fluss:lake/types": super::bindings::fluss::lake::types },
    });
}

/// Bindings of the optional `bucket-replace` export (`wit/` world `lake-bucket-replace`, contract
/// 0.3.7), looked up apart from the others so that a plugin without it still loads.
pub mod replace_bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "lake-bucket-replace",
        exports: { default: async },
        with: { "fluss:lake/types": super::bindings::fluss::lake::types },
    });
}

/// Bindings of the optional `batch-writer` export and the `data-plane` import it uses (`wit/`
/// world `lake-batch-write`, contract 0.3.8), looked up apart from the others so that a plugin
/// without it still loads; its batches and files are the host's own
/// ([`data_plane`]).
pub mod batch_write_bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "lake-batch-write",
        imports: { default: async },
        exports: { default: async },
        with: {
            "fluss:lake/types": super::bindings::fluss::lake::types,
            "fluss:lake/data-plane.batch": super::data_plane::HostRows,
            "fluss:lake/data-plane.parquet-file": super::data_plane::NativeFile,
            "fluss:lake/data-plane.kept-batch": super::data_plane::KeptRows,
        },
    });
}

pub use bindings::fluss::lake::types as wit;
pub use instance::PluginInstance;
pub use maintenance_bindings::exports::fluss::lake::maintenance::{
    MaintenanceReport, MaintenanceRequest,
};
pub use registry::{Plugin, PluginRegistry};
pub use reload::PluginSet;
pub use replace_bindings::exports::fluss::lake::bucket_replace::BucketRef;

/// The contract version this host implements (the WIT package version).
pub const CONTRACT_VERSION: &str = "0.3.9";
