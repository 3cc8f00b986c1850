//! Generates the coordinator RPC message types from `proto/coordinator.proto`, the test-only
//! Fluss 1.0 messages of `proto/fluss-1.0-subset.proto`, and, with the `embedded-plugins`
//! feature, the table of plugins built into the binary.
//!
//! `protox` is a pure-Rust protobuf compiler, so building the host needs no `protoc`.

use std::path::PathBuf;

/// The standard plugins a binary with `embedded-plugins` carries.
const BUILTIN_FORMATS: [&str; 3] = ["paimon", "iceberg", "lance"];

/// The first bytes of a WebAssembly component (magic, component-model version and layer).
const COMPONENT_MAGIC: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/// Test-only copies of Fluss 1.0 messages the host reads through fluss-rs (see the file).
const SUBSET_PROTO: &str = "proto/fluss-1.0-subset.proto";
/// Where the subset's `fluss.rs` goes, apart from the host's own `$OUT_DIR/fluss.rs` (both
/// are `package fluss`).
const SUBSET_OUT_DIR: &str = "fluss-1.0-subset";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/coordinator.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    compile_subset()?;
    write_builtin_plugins()
}

/// Writes `$OUT_DIR/fluss-1.0-subset/fluss.rs`, included by the crate's tests only. A build
/// script cannot tell a test build from another, so it is always generated (it is tiny).
fn compile_subset() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={SUBSET_PROTO}");
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join(SUBSET_OUT_DIR);
    std::fs::create_dir_all(&out)?;
    let descriptors = protox::compile([SUBSET_PROTO], ["proto"])?;
    prost_build::Config::new()
        .out_dir(out)
        .compile_fds(descriptors)?;
    Ok(())
}

/// Writes `$OUT_DIR/builtin_plugins.rs`: `BUILTIN`, the embedded plugins' file names and
/// bytes (none without the feature). The plugins are built beforehand by
/// `scripts/build-plugins.sh` (a wasm32-wasip2 build cannot run inside this one: it needs
/// its own target and C toolchain); a missing or non-component file fails the build.
fn write_builtin_plugins() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-env-changed=FLUSS_LAKE_PLUGINS_DIR");
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("builtin_plugins.rs");
    let mut entries = Vec::new();
    if std::env::var_os("CARGO_FEATURE_EMBEDDED_PLUGINS").is_some() {
        let dir = match std::env::var_os("FLUSS_LAKE_PLUGINS_DIR") {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../target/plugins"),
        };
        for format in BUILTIN_FORMATS {
            let path = dir.join(format!("{format}.wasm"));
            println!("cargo:rerun-if-changed={}", path.display());
            let bytes = std::fs::read(&path).map_err(|e| {
                format!(
                    "embedded-plugins: cannot read {}: {e}; build the plugins first \
                     (scripts/build-plugins.sh) or point FLUSS_LAKE_PLUGINS_DIR at them",
                    path.display()
                )
            })?;
            if !bytes.starts_with(&COMPONENT_MAGIC) {
                return Err(format!(
                    "embedded-plugins: {} is not a WebAssembly component",
                    path.display()
                )
                .into());
            }
            let path = path.canonicalize()?;
            entries.push(format!(
                "    BuiltinPlugin {{ file_name: \"{format}.wasm\", bytes: include_bytes!({:?}) }},\n",
                path.display().to_string()
            ));
        }
    }
    std::fs::write(
        out,
        format!(
            "/// The plugins built into this binary.\npub static BUILTIN: &[BuiltinPlugin] = &[\n{}];\n",
            entries.concat()
        ),
    )?;
    Ok(())
}
