//! Where plugins come from: `--plugin PATH[#sha256=HEX]` files and `--plugin-dir DIR`
//! directories (every `*.wasm` in them, looked at again on every reload).

use std::path::PathBuf;
use std::time::SystemTime;

use crate::error::{Error, ErrorKind, Result};

/// One plugin file, optionally pinned to the SHA-256 of its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginFile {
    pub path: PathBuf,
    /// Lower-case hex; a file with another digest is refused.
    pub sha256: Option<String>,
}

impl PluginFile {
    /// Parses `PATH` or `PATH#sha256=HEX`.
    pub fn parse(spec: &str) -> std::result::Result<Self, String> {
        match spec.rsplit_once("#sha256=") {
            Some((path, hex)) => {
                let hex = hex.trim().to_ascii_lowercase();
                if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(format!(
                        "--plugin '{spec}': the sha256 pin must be 64 hex digits"
                    ));
                }
                Ok(Self {
                    path: PathBuf::from(path),
                    sha256: Some(hex),
                })
            }
            None if spec.contains('#') => Err(format!(
                "--plugin '{spec}': the only pin is '#sha256=<64 hex digits>'"
            )),
            None => Ok(Self {
                path: PathBuf::from(spec),
                sha256: None,
            }),
        }
    }
}

/// Where the plugins come from, as the host and `plugins list` take it on the command line.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PluginArgs {
    /// A lake-format plugin (.wasm component), optionally pinned to its SHA-256
    /// (`PATH#sha256=HEX`: any other contents are refused). Repeat to serve several formats.
    #[arg(long = "plugin", value_name = "PATH[#sha256=HEX]", value_parser = PluginFile::parse)]
    pub plugins: Vec<PluginFile>,

    /// A directory of plugins: every `*.wasm` file in it, looked at again on every reload
    /// (files added, replaced or removed). Repeatable.
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,

    /// Do not load the plugins built into the binary (Paimon, Iceberg, Lance in a binary
    /// built with `embedded-plugins`); without this, they serve every format no `--plugin`
    /// file serves.
    #[arg(long = "no-builtin-plugins")]
    pub no_builtin_plugins: bool,
}

impl PluginArgs {
    /// `--plugin` files first, then `--plugin-dir` directories, each in command-line order.
    pub fn sources(&self) -> Vec<PluginSource> {
        self.plugins
            .iter()
            .cloned()
            .map(PluginSource::File)
            .chain(self.plugin_dirs.iter().cloned().map(PluginSource::Dir))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty() && self.plugin_dirs.is_empty()
    }
}

/// A `--plugin` or `--plugin-dir` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    File(PluginFile),
    Dir(PathBuf),
}

/// The plugin files the sources name now, in command-line order (a directory's files sorted
/// by name).
pub fn expand(sources: &[PluginSource]) -> Result<Vec<PluginFile>> {
    let mut files = Vec::new();
    for source in sources {
        match source {
            PluginSource::File(f) => files.push(f.clone()),
            PluginSource::Dir(dir) => {
                let entries = std::fs::read_dir(dir).map_err(|e| {
                    Error::new(
                        ErrorKind::PluginLoad,
                        format!("--plugin-dir {}: cannot read: {e}", dir.display()),
                    )
                })?;
                let mut found: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
                    .collect();
                found.sort();
                files.extend(
                    found
                        .into_iter()
                        .map(|path| PluginFile { path, sha256: None }),
                );
            }
        }
    }
    Ok(files)
}

/// What a change of the sources looks like without reading the files: every file's path,
/// size and modification time. Cheap enough to poll every few seconds.
pub fn fingerprint(sources: &[PluginSource]) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let files = expand(sources).unwrap_or_default();
    files
        .into_iter()
        .map(|f| {
            let meta = std::fs::metadata(&f.path).ok();
            (
                f.path,
                meta.as_ref().map(|m| m.len()).unwrap_or(0),
                meta.and_then(|m| m.modified().ok()),
            )
        })
        .collect()
}

/// Reads a plugin file and checks its pin; returns the bytes and their SHA-256, computed
/// once for the pin, the reload comparison and the compiled-code cache.
pub fn read_pinned(file: &PluginFile) -> Result<(Vec<u8>, String)> {
    let bytes = std::fs::read(&file.path).map_err(|e| {
        Error::new(
            ErrorKind::PluginLoad,
            format!("plugin {}: cannot read: {e}", file.path.display()),
        )
    })?;
    let actual = digest(&bytes);
    if let Some(pin) = &file.sha256
        && &actual != pin
    {
        return Err(Error::new(
            ErrorKind::PluginLoad,
            format!(
                "plugin {}: sha256 {actual} does not match the pinned {pin}; refused",
                file.path.display()
            ),
        ));
    }
    Ok((bytes, actual))
}

/// The SHA-256 of a plugin file, lower-case hex.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins() {
        let hex = "ab".repeat(32);
        let f = PluginFile::parse(&format!("/p/x.wasm#sha256={}", hex.to_uppercase())).unwrap();
        assert_eq!(f.path, PathBuf::from("/p/x.wasm"));
        assert_eq!(f.sha256.as_deref(), Some(hex.as_str()));
        assert!(PluginFile::parse("/p/x.wasm#sha256=abc").is_err());
        assert!(PluginFile::parse("/p/x.wasm#md5=abc").is_err());
        assert_eq!(PluginFile::parse("/p/x.wasm").unwrap().sha256, None);
    }

    #[test]
    fn directories_expand_to_their_wasm_files() {
        let dir = std::env::temp_dir().join(format!("plugin-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["b.wasm", "a.wasm", "notes.txt"] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        let files = expand(&[PluginSource::Dir(dir.clone())]).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.path.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(names, vec!["a.wasm", "b.wasm"]);
        let pinned = PluginFile {
            path: dir.join("a.wasm"),
            sha256: Some(digest(b"y")),
        };
        assert_eq!(
            read_pinned(&pinned).unwrap_err().kind(),
            ErrorKind::PluginLoad
        );
        let _ = std::fs::remove_dir_all(&dir);
        assert!(expand(&[PluginSource::Dir(dir)]).is_err());
    }
}
