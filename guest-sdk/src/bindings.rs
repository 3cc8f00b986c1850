//! Generated bindings of the `fluss:lake/lake-plugin-maintained` world (`wit/fluss-lake.wit`):
//! the plugin world plus the optional `maintenance` and `bucket-replace` exports, which every
//! SDK plugin exports (a format that does not maintain its tables, or cannot replace a bucket,
//! answers `unsupported`).
//!
//! They live in the SDK so that every format plugin shares one copy and one version of the
//! contract: a format crate implements the generated `Guest*` traits and calls
//! [`crate::export!`]. Off-wasm, wit-bindgen generates stubs for the imports (calling them
//! panics), which is why format code never calls the imports directly but goes through
//! [`crate::storage::Storage`], [`crate::log`] and [`crate::clock`], which have native fallbacks.
#![allow(missing_docs, clippy::all, unsafe_op_in_unsafe_fn)]

wit_bindgen::generate!({
    path: "../wit",
    world: "lake-plugin-maintained",
    pub_export_macro: true,
    export_macro_name: "export",
    default_bindings_module: "fluss_lake_guest_sdk::bindings",
    // Lets tests compare WIT records (commit results, snapshots) directly.
    additional_derives: [PartialEq],
});
