//! Generates the coordinator RPC message types from `proto/coordinator.proto`.
//!
//! `protox` is a pure-Rust protobuf compiler, so building the host needs no `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/coordinator.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
