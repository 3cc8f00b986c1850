//! `fluss-lake-host plugins list`: the plugins a host started with the same options would
//! serve — built-in and loaded from files — with their versions and digests.
//!
//! Loads them exactly as the host does (a plugin file that would stop the host fails the
//! command the same way) and prints one line per plugin, built-in plugins a file replaces
//! included and marked as such.

use std::sync::Arc;

use clap::Parser;

use super::cache::CacheArgs;
use super::compile::Compiler;
use super::engine::{EngineSettings, PluginEngine};
use super::registry::PluginRegistry;
use super::source::{self, PluginArgs};
use super::{CONTRACT_VERSION, builtin};
use crate::error::Result;

#[derive(Debug, Parser)]
#[command(
    name = "fluss-lake-host plugins list",
    about = "Lists the built-in plugins and the plugins loaded from files, with their digests"
)]
pub struct ListCli {
    /// The plugins, as the host takes them.
    #[command(flatten)]
    pub plugins: PluginArgs,

    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Writes the list to `out`.
pub async fn list(cli: &ListCli, out: &mut impl std::io::Write) -> Result<()> {
    let engine = Arc::new(PluginEngine::new(cli.plugins.engine_settings(
        EngineSettings {
            cache: cli.cache.settings()?,
            compiler: Compiler::this_binary()?,
            ..EngineSettings::default()
        },
    ))?);
    let sources = cli.plugins.sources();
    let files = PluginRegistry::load(engine.clone(), &source::expand(&sources)?).await?;
    let builtins = if cli.plugins.no_builtin_plugins {
        Vec::new()
    } else {
        builtin::load(&engine).await?
    };
    let _ = writeln!(
        out,
        "{:<10} {:<10} {:<9} {:<8} {:<64} LOCATION",
        "FORMAT", "VERSION", "CONTRACT", "SOURCE", "SHA256"
    );
    let mut rows: Vec<(String, String)> = Vec::new();
    for p in files.plugins() {
        rows.push((
            p.format().to_string(),
            row(p, "file", &super::sandbox::shown(p.path())),
        ));
    }
    for b in &builtins {
        let status = match files.get(b.format()) {
            Some(_) => "builtin (replaced by the file above)",
            None => "builtin",
        };
        rows.push((
            b.format().to_string(),
            row(b, status, "embedded in the binary"),
        ));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, r) in rows {
        let _ = writeln!(out, "{r}");
    }
    if files.is_empty() && builtins.is_empty() {
        let _ = writeln!(
            out,
            "(no plugins: this binary has no built-in plugins and no --plugin or --plugin-dir was given)"
        );
    }
    let _ = writeln!(out, "host contract: fluss:lake@{CONTRACT_VERSION}");
    Ok(())
}

fn row(p: &super::Plugin, source: &str, location: &str) -> String {
    // The source column is padded; a long status pushes the location along.
    format!(
        "{:<10} {:<10} {:<9} {:<8} {:<64} {location}",
        p.format(),
        p.version(),
        p.contract_version(),
        source,
        p.digest()
    )
}
