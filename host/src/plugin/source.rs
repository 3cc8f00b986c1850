//! Where plugins come from: `--plugin PATH[#sha256=HEX]` files and `--plugin-dir DIR`
//! directories (every `*.wasm` in them, looked at again on every reload).

use std::path::PathBuf;
use std::time::SystemTime;

use super::engine::{EngineSettings, header_problem};
use super::sandbox::shown;
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

    /// Largest plugin file the host reads (e.g. 64mb); a larger one is refused unread.
    #[arg(long = "plugin-max-file-size", value_name = "SIZE", default_value = "128mb", value_parser = crate::config::parse_size)]
    pub max_file_size: usize,
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

    /// The engine settings these arguments set, over `base`.
    pub fn engine_settings(&self, base: EngineSettings) -> EngineSettings {
        EngineSettings {
            max_file_bytes: self.max_file_size as u64,
            ..base
        }
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
                        format!("--plugin-dir {}: cannot read: {e}", shown(dir)),
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

/// Who a file is, as the file system says without reading it. Any write moves its change
/// time (which no user can set back) and a replaced file gets another inode, so a file whose
/// identity has not moved holds the bytes it held; except right after a change, within one
/// tick of the file system's clock ([`is_recent`](Self::is_recent)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
    inode: u64,
    device: u64,
}

/// How long after a change a file's identity is not trusted to move on the next change: far
/// more than a file system timestamp tick (a jiffy, at most 10 ms).
pub const RECENT: std::time::Duration = std::time::Duration::from_secs(2);

impl FileIdentity {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        Self {
            len: meta.len(),
            modified_ns: ns(meta.mtime(), meta.mtime_nsec()),
            changed_ns: ns(meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            device: meta.dev(),
        }
    }

    /// Whether the file changed within [`RECENT`] before `looked_at`: another write in the
    /// same clock tick would leave its identity as it is, so it must be read again (as git
    /// does with "racily clean" entries).
    pub fn is_recent(&self, looked_at: SystemTime) -> bool {
        let at = looked_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        self.modified_ns.max(self.changed_ns) > at - RECENT.as_nanos() as i128
    }
}

/// What the sources hold, without reading the files: every file's path and identity (`None`
/// when it cannot be looked at), and when they were looked at. Cheap enough to poll every
/// few seconds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fingerprint {
    files: Vec<(PathBuf, Option<FileIdentity>)>,
    looked_at: Option<SystemTime>,
}

impl Fingerprint {
    pub fn of(sources: &[PluginSource]) -> Self {
        let looked_at = SystemTime::now();
        let files = expand(sources)
            .unwrap_or_default()
            .into_iter()
            .map(|f| {
                let identity = std::fs::metadata(&f.path)
                    .ok()
                    .map(|m| FileIdentity::of(&m));
                (f.path, identity)
            })
            .collect();
        Self {
            files,
            looked_at: Some(looked_at),
        }
    }

    /// Whether `now` may name other contents than `self`: a file appeared, went or moved,
    /// or one had changed too recently when `self` was taken to trust that it did not change
    /// again.
    pub fn differs(&self, now: &Fingerprint) -> bool {
        let same_files = self.files.len() == now.files.len()
            && self
                .files
                .iter()
                .zip(&now.files)
                .all(|((p, a), (q, b))| p == q && a == b);
        let recent = self.looked_at.is_none_or(|at| {
            self.files
                .iter()
                .any(|(_, id)| id.is_some_and(|id| id.is_recent(at)))
        });
        !same_files || recent
    }
}

/// A plugin file read whole: its bytes, their SHA-256 (computed once for the pin, the reload
/// comparison and the compiled-code cache) and the identity of the file they were read from.
pub struct ReadPlugin {
    pub bytes: Vec<u8>,
    pub digest: String,
    pub identity: FileIdentity,
    /// When it was read (see [`FileIdentity::is_recent`]).
    pub read_at: SystemTime,
}

/// [`read_pinned`] on a blocking thread: a read of up to `max_bytes` from a slow disk never
/// holds a worker of the async runtime.
pub async fn read_pinned_blocking(file: &PluginFile, max_bytes: u64) -> Result<ReadPlugin> {
    let file = file.clone();
    tokio::task::spawn_blocking(move || read_pinned(&file, max_bytes))
        .await
        .map_err(|e| Error::new(ErrorKind::Internal, format!("plugin read thread: {e}")))?
}

/// Reads a plugin file and checks its pin. What costs nothing is checked first: a file
/// larger than `max_bytes` is refused unread, then its first 8 bytes must be a WebAssembly
/// component header; only then is the rest read, never more than `max_bytes` in all.
pub fn read_pinned(file: &PluginFile, max_bytes: u64) -> Result<ReadPlugin> {
    use std::io::Read;
    let refuse = |what: String| {
        Error::new(
            ErrorKind::PluginLoad,
            format!("plugin {}: {what}", shown(&file.path)),
        )
    };
    let read_at = SystemTime::now();
    // Not blocking on open: a FIFO put in a plugin's place would wait for a writer forever.
    let mut f = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&file.path)
            .map_err(|e| refuse(format!("cannot read: {e}")))?
    };
    let meta = f
        .metadata()
        .map_err(|e| refuse(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file".into()));
    }
    if meta.len() > max_bytes {
        return Err(refuse(format!(
            "{} bytes, over the {max_bytes}-byte limit (--plugin-max-file-size); refused unread",
            meta.len()
        )));
    }
    let mut head = Vec::with_capacity(8);
    (&mut f)
        .take(8)
        .read_to_end(&mut head)
        .map_err(|e| refuse(format!("cannot read: {e}")))?;
    if let Some(problem) = header_problem(&head) {
        return Err(refuse(problem.into()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    bytes.extend_from_slice(&head);
    f.take(max_bytes.saturating_add(1) - head.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot read: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(refuse(format!(
            "grew past the {max_bytes}-byte limit (--plugin-max-file-size) while read; refused"
        )));
    }
    let actual = digest(&bytes);
    if let Some(pin) = &file.sha256
        && &actual != pin
    {
        return Err(refuse(format!(
            "sha256 {actual} does not match the pinned {pin}; refused"
        )));
    }
    Ok(ReadPlugin {
        bytes,
        digest: actual,
        identity: FileIdentity::of(&meta),
        read_at,
    })
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
        assert!(matches!(
            read_pinned(&pinned, 1 << 20),
            Err(e) if e.kind() == ErrorKind::PluginLoad
        ));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(expand(&[PluginSource::Dir(dir)]).is_err());
    }

    /// A file looked at within [`RECENT`] of its last change may change again without its
    /// identity moving: such a fingerprint differs even from itself, until it is older.
    #[test]
    fn recently_changed_files_are_not_trusted_to_be_unchanged() {
        let dir = std::env::temp_dir().join(format!("plugin-recent-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.wasm"), b"x").unwrap();
        let sources = [PluginSource::Dir(dir.clone())];
        let now = Fingerprint::of(&sources);
        assert!(now.differs(&now.clone()), "changed just now");
        let later = Fingerprint {
            looked_at: Some(SystemTime::now() + RECENT),
            ..now.clone()
        };
        assert!(
            !later.differs(&now),
            "the same identities, looked at long after"
        );
        std::fs::write(dir.join("b.wasm"), b"y").unwrap();
        assert!(later.differs(&Fingerprint::of(&sources)), "a new file");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
