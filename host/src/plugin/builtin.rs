//! The standard plugins built into the binary (the `embedded-plugins` feature): Paimon,
//! Iceberg and Lance, so that one file tiers a stock cluster.
//!
//! They load like any plugin file (compiled, cached by digest, sandboxed the same way); a
//! `--plugin` file serving the same format replaces the built-in one, and
//! `--no-builtin-plugins` leaves them out.

use std::path::Path;
use std::sync::Arc;

use super::engine::PluginEngine;
use super::registry::Plugin;
use super::source::digest;
use crate::error::Result;

/// One plugin embedded in the binary.
pub struct BuiltinPlugin {
    pub file_name: &'static str,
    pub bytes: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// What a built-in plugin is called where a file path would be shown.
pub const BUILTIN_PREFIX: &str = "builtin:";

/// Loads every built-in plugin.
pub async fn load(engine: &Arc<PluginEngine>) -> Result<Vec<Arc<Plugin>>> {
    let mut plugins = Vec::with_capacity(BUILTIN.len());
    for b in BUILTIN {
        let name = format!("{BUILTIN_PREFIX}{}", b.file_name);
        let plugin =
            Plugin::from_bytes(engine.clone(), Path::new(&name), b.bytes, digest(b.bytes)).await?;
        let plugin = plugin.into_builtin();
        super::registry::log_loaded(&plugin);
        plugins.push(Arc::new(plugin));
    }
    Ok(plugins)
}
