//! The plugin runtime: WebAssembly components that implement the `fluss:lake` contract.
//!
//! - [`engine`] owns the wasmtime engine and the on-disk cache of compiled components.
//! - [`registry`] loads `--plugin` files and answers "which plugin writes format X".
//! - [`instance`] is one sandboxed instance of a plugin, with typed calls into it.
//! - [`host_api`] implements what the host provides to plugins: storage, logging, clock.
//! - [`storage`] confines a plugin's storage calls to one table's lake location.

pub mod engine;
pub mod host_api;
pub mod instance;
pub mod registry;
pub mod storage;

/// Rust bindings of the WIT world, generated at compile time from `wit/`.
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "lake-plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

pub use bindings::fluss::lake::types as wit;
pub use instance::PluginInstance;
pub use registry::{Plugin, PluginRegistry};

/// The contract version this host implements (the WIT package version).
pub const CONTRACT_VERSION: &str = "0.1.0";
