//! `fluss-lake-host plugins inspect PATH`: what a plugin file is, before running it.
//!
//! Prints the file's size and digest (what `--plugin PATH#sha256=…` pins), then loads it
//! exactly as the host would (compile or cache, link against the contract, instantiate under
//! the sandbox limits, ask `info`) and prints who it says it is and how long a fresh instance
//! takes. Exits non-zero when the file would be refused.

use std::sync::Arc;

use clap::Parser;

use super::cache::CacheArgs;
use super::compile::{CompileLimits, Compiler, Structure};
use super::engine::{EngineSettings, PluginEngine};
use super::registry::Plugin;
use super::sandbox::shown;
use super::source::{self, PluginFile};
use super::{CONTRACT_VERSION, PluginInstance};
use crate::config::parse_size;
use crate::error::Result;

#[derive(Debug, Parser)]
#[command(
    name = "fluss-lake-host plugins inspect",
    about = "Describes a plugin file and checks that it loads"
)]
pub struct InspectCli {
    /// The plugin (.wasm component), optionally `PATH#sha256=HEX` to check a pin.
    #[arg(value_name = "PATH[#sha256=HEX]", value_parser = PluginFile::parse)]
    pub plugin: PluginFile,

    /// Linear-memory limit of the instance (as `--plugin-memory-limit`).
    #[arg(long = "plugin-memory-limit", value_name = "SIZE", default_value = "2gb", value_parser = parse_size)]
    pub plugin_memory_limit: usize,

    /// Longest time compiling the plugin may take (as the host's `--plugin-compile-timeout`).
    #[arg(long = "plugin-compile-timeout", value_name = "DURATION", default_value = "120s", value_parser = crate::config::parse_duration)]
    pub plugin_compile_timeout: std::time::Duration,

    /// Address space of the compile process (as the host's `--plugin-compile-memory-limit`).
    #[arg(long = "plugin-compile-memory-limit", value_name = "SIZE", default_value = "4gb", value_parser = parse_size)]
    pub plugin_compile_memory_limit: usize,

    /// Largest plugin file read (as the host's `--plugin-max-file-size`).
    #[arg(long = "plugin-max-file-size", value_name = "SIZE", default_value = "128mb", value_parser = parse_size)]
    pub plugin_max_file_size: usize,

    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Writes the report to `out`; returns whether the plugin loads.
pub async fn inspect(cli: &InspectCli, out: &mut impl std::io::Write) -> Result<bool> {
    let path = &cli.plugin.path;
    let w = |out: &mut dyn std::io::Write, k: &str, v: String| {
        let _ = writeln!(out, "{:<18}{v}", format!("{k}:"));
    };
    w(out, "path", shown(path));
    let engine = Arc::new(PluginEngine::new(EngineSettings {
        cache: cli.cache.settings()?,
        instance_memory_limit: cli.plugin_memory_limit,
        max_file_bytes: cli.plugin_max_file_size as u64,
        compiler: Compiler::this_binary()?,
        compile_limits: CompileLimits {
            timeout: cli.plugin_compile_timeout,
            memory_bytes: cli.plugin_compile_memory_limit as u64,
            ..CompileLimits::default()
        },
        ..EngineSettings::default()
    })?);
    // Read once, as the host reads it (bounded, header first), and loaded from those bytes.
    let read =
        match source::read_pinned_blocking(&cli.plugin, engine.settings().max_file_bytes).await {
            Ok(read) => read,
            Err(e) => {
                w(out, "loads", format!("no: {e}"));
                return Ok(false);
            }
        };
    w(out, "size", format!("{} bytes", read.bytes.len()));
    w(out, "sha256", read.digest.clone());
    match Structure::of(&read.bytes) {
        Ok(structure) => w(out, "structure", structure.describe()),
        Err(malformed) => {
            w(out, "loads", format!("no: {malformed}"));
            return Ok(false);
        }
    }
    let plugin = match Plugin::from_bytes(engine, path, &read.bytes, read.digest).await {
        Ok(p) => p,
        Err(e) => {
            w(out, "loads", format!("no: {e}"));
            return Ok(false);
        }
    };
    w(out, "format", plugin.format().to_string());
    w(out, "plugin version", plugin.version().to_string());
    w(
        out,
        "contract version",
        format!(
            "{} (host implements {CONTRACT_VERSION}: compatible)",
            plugin.contract_version()
        ),
    );
    w(out, "table layout", plugin.layout().describe());
    w(
        out,
        "maintenance",
        if plugin.maintains_tables() {
            "exported (snapshot expiry, compaction when the table asks)".to_string()
        } else {
            "not exported (its tables are tiered, not maintained)".to_string()
        },
    );
    w(
        out,
        "bucket replace",
        if plugin.replaces_buckets() {
            "exported (a primary-key bucket that lost log rows can be rebuilt from its KV snapshot)"
                .to_string()
        } else {
            "not exported (a primary-key bucket that lost log rows stays refused)".to_string()
        },
    );
    w(
        out,
        "batch writer",
        if plugin.writes_batches() {
            "exported (rows stay in the host, which encodes the files the plugin lays out)"
                .to_string()
        } else {
            "not exported (the plugin encodes its files in WebAssembly)".to_string()
        },
    );
    // The first instance was created while loading; time a few more, as rounds create them.
    let mut best = plugin.instantiate_time();
    for _ in 0..5 {
        let started = std::time::Instant::now();
        PluginInstance::new(&plugin, "inspect".into()).await?;
        best = best.min(started.elapsed());
    }
    w(
        out,
        "loads",
        format!(
            "yes: instantiates in {} µs (pre-instantiated component, fastest of 6)",
            best.as_micros()
        ),
    );
    Ok(true)
}
