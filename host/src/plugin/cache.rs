//! The on-disk cache of compiled plugins: native code, so authenticated before it is loaded.
//!
//! Loading a cached entry runs its bytes as machine code in the host, outside the sandbox.
//! Whoever can put a file there could run anything as the host, and the names are
//! predictable (the digest of a public `.wasm`). So:
//! - the directory must be owned by the host's user and closed to everyone else (mode 0700);
//!   it is created so, and refused otherwise, never replaced by a temporary directory;
//! - every entry carries an HMAC-SHA256 of its name and bytes under a key kept apart from the
//!   cache (by default in the host's state directory, `--plugin-cache-key`): an entry copied
//!   from another machine, restored from a backup or planted through a shared volume is
//!   refused (and removed) before a byte of it is deserialised, and the bytes checked are the
//!   bytes loaded (read into memory, never mapped from a file that may change after the check);
//! - entries of plugins no longer loaded are removed once unused for a while
//!   ([`CacheSettings::keep_unused`]), so that hosts sharing the cache and key (and a host
//!   swapping back) still find theirs.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::sandbox::shown;
use crate::error::{Error, ErrorKind, Result};

/// How long an entry of a plugin no longer loaded is kept after its last use.
pub const DEFAULT_KEEP_UNUSED: Duration = Duration::from_secs(600);

/// Bytes of the key and of an entry's tag.
const KEY_BYTES: usize = 32;
const TAG_BYTES: usize = 32;
/// What every entry starts with, before its tag.
const MAGIC: &[u8; 8] = b"FLKCWSM1";
const SUFFIX: &str = ".cwasm";

/// Where the cache is and what authenticates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSettings {
    pub dir: PathBuf,
    /// The key file (created with 32 random bytes, mode 0600, when missing).
    pub key_file: PathBuf,
    /// How long an entry no loaded plugin uses is kept after its last use.
    pub keep_unused: Duration,
}

/// The cache options of `plugins inspect` and `plugins list` (the host has its own, with
/// the state directory's key as default).
#[derive(Debug, Clone, clap::Args)]
pub struct CacheArgs {
    /// Directory for compiled plugins (as the host's `--plugin-cache-dir`); default: none.
    #[arg(long = "plugin-cache-dir", value_name = "DIR")]
    pub plugin_cache_dir: Option<PathBuf>,

    /// The key of that cache (as the host's `--plugin-cache-key`); default: plugin-cache.key
    /// in the host's default state directory.
    #[arg(long = "plugin-cache-key", value_name = "FILE")]
    pub plugin_cache_key: Option<PathBuf>,
}

impl CacheArgs {
    pub fn settings(&self) -> Result<Option<CacheSettings>> {
        let Some(dir) = self.plugin_cache_dir.clone() else {
            return Ok(None);
        };
        let key_file = match self
            .plugin_cache_key
            .clone()
            .or_else(|| crate::config::default_state_dir().map(|d| d.join("plugin-cache.key")))
        {
            Some(key) => key,
            None => {
                return Err(refused(
                    "--plugin-cache-dir needs --plugin-cache-key: neither XDG_STATE_HOME nor HOME \
                     is set to find the default one"
                        .into(),
                ));
            }
        };
        Ok(Some(CacheSettings {
            dir,
            key_file,
            keep_unused: DEFAULT_KEEP_UNUSED,
        }))
    }
}

/// An open, checked cache.
#[derive(Clone)]
pub struct PluginCache {
    dir: PathBuf,
    key: [u8; KEY_BYTES],
    /// The first 8 hex digits of the key's SHA-256: in every entry's name, so that hosts with
    /// other keys sharing the directory neither refuse nor remove each other's entries.
    key_id: String,
    keep_unused: Duration,
}

impl std::fmt::Debug for PluginCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginCache")
            .field("dir", &self.dir)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

fn refused(what: String) -> Error {
    Error::new(ErrorKind::Config, what)
}

/// Why `meta` (of `path`) is not private to this user; `None` when it is.
fn not_private(path: &Path, meta: &std::fs::Metadata, what: &str) -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Some(format!(
            "{what} {} is owned by user {}, not by this host's user {me}",
            shown(path),
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Some(format!(
            "{what} {} is open to other users (mode {mode:03o}); `chmod go-rwx` it",
            shown(path)
        ));
    }
    None
}

impl PluginCache {
    /// Opens (creating when missing) the directory and the key, refusing either unless it is
    /// this user's alone.
    pub fn open(settings: &CacheSettings) -> Result<Self> {
        let dir = &settings.dir;
        let cannot = |what: &str, e: std::io::Error| {
            refused(format!("plugin cache: cannot {what} {}: {e}", shown(dir)))
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| cannot("create", e))?;
        let meta = std::fs::symlink_metadata(dir).map_err(|e| cannot("read", e))?;
        if !meta.is_dir() {
            return Err(refused(format!(
                "plugin cache {} is not a directory (a link is not followed)",
                shown(dir)
            )));
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() == me && meta.permissions().mode() & 0o077 != 0 {
            // This user's directory, left open (by an older host version, or by hand): closed
            // now. What others may have put there before is refused entry by entry (the tag).
            let mode = meta.permissions().mode() & 0o777;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| cannot("close to other users", e))?;
            tracing::warn!(cache = %shown(dir), "the plugin cache directory was open to other users (mode {mode:03o}); set to 0700");
        } else if let Some(why) = not_private(dir, &meta, "plugin cache directory") {
            return Err(refused(format!("{why}; or pass --no-plugin-cache")));
        }
        let key = read_or_create_key(&settings.key_file)?;
        let key_id = {
            use sha2::Digest;
            let d = Sha256::digest(key);
            d[..4].iter().map(|b| format!("{b:02x}")).collect()
        };
        Ok(Self {
            dir: dir.clone(),
            key,
            key_id,
            keep_unused: settings.keep_unused,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry name of a plugin (`digest`) compiled by an engine (`engine_tag`).
    pub fn name(&self, digest: &str, engine_tag: &str) -> String {
        format!("{digest}-{engine_tag}-{}{SUFFIX}", self.key_id)
    }

    fn tag(&self, name: &str, artifact: &[u8]) -> [u8; TAG_BYTES] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(&(name.len() as u64).to_le_bytes());
        mac.update(name.as_bytes());
        mac.update(artifact);
        mac.finalize().into_bytes().into()
    }

    /// The authenticated artifact of entry `name`, at most `max_bytes`; `None` when there is
    /// none. An entry that fails its check is removed, with a warning, and is `None`.
    pub fn get(&self, name: &str, max_bytes: u64) -> Option<Vec<u8>> {
        let path = self.dir.join(name);
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(cache = %shown(&path), "cannot open cached plugin: {e}");
                return None;
            }
        };
        let header = (MAGIC.len() + TAG_BYTES) as u64;
        let checked = (|| {
            let meta = file.metadata().map_err(|e| e.to_string())?;
            if !meta.is_file() || meta.len() > max_bytes + header {
                return Err(format!(
                    "not a file of at most {} bytes",
                    max_bytes + header
                ));
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            (&mut file)
                .take(max_bytes + header + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| e.to_string())?;
            if bytes.len() < header as usize || &bytes[..MAGIC.len()] != MAGIC {
                return Err("not an entry of this cache".into());
            }
            let artifact = bytes.split_off(header as usize);
            let expected = self.tag(name, &artifact);
            // Constant time: how much of a planted tag matched says nothing about the key.
            if !constant_time_eq(&bytes[MAGIC.len()..], &expected) {
                return Err("its authentication tag does not match this host's key".into());
            }
            Ok(artifact)
        })();
        match checked {
            Ok(artifact) => {
                // Its last use, for eviction.
                let _ = file.set_modified(SystemTime::now());
                Some(artifact)
            }
            Err(why) => {
                tracing::warn!(cache = %shown(&path), "refusing a cached plugin, removed: {why}");
                // Only the file checked: another host may have just put a good one in place.
                let same = |m: std::io::Result<std::fs::Metadata>| m.map(|m| (m.dev(), m.ino()));
                if same(file.metadata()).ok() == same(std::fs::symlink_metadata(&path)).ok() {
                    let _ = std::fs::remove_file(&path);
                }
                None
            }
        }
    }

    /// Stores `artifact` as entry `name` (written aside, then renamed into place).
    pub fn put(&self, name: &str, artifact: &[u8]) -> std::io::Result<()> {
        // Unique per process and per call: two engines of one process (or two threads) may
        // cache the same plugin at once.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self
            .dir
            .join(format!("{name}.tmp{}-{n}", std::process::id()));
        let write = || {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            use std::io::Write;
            file.write_all(MAGIC)?;
            file.write_all(&self.tag(name, artifact))?;
            file.write_all(artifact)?;
            file.sync_all()?;
            std::fs::rename(&tmp, self.dir.join(name))
        };
        write().inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    /// Removes this key's entries (and leftover partial writes) that are not in `in_use` and
    /// were last used over [`CacheSettings::keep_unused`] ago. Returns how many went.
    pub fn evict(&self, in_use: &HashSet<String>) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let own = format!("-{}{SUFFIX}", self.key_id);
        let now = SystemTime::now();
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let entry_name = match name.split_once(".tmp") {
                Some((entry_name, _)) if entry_name.ends_with(&own) => entry_name,
                None if name.ends_with(&own) => name,
                _ => continue,
            };
            if name == entry_name && in_use.contains(entry_name) {
                continue;
            }
            let unused_for = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .unwrap_or_default();
            if unused_for >= self.keep_unused && std::fs::remove_file(entry.path()).is_ok() {
                tracing::info!(cache = %shown(&entry.path()), "removed an unused compiled plugin");
                removed += 1;
            }
        }
        removed
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The key in `path`, created (32 random bytes, mode 0600) when missing; refused unless the
/// file is this user's alone and holds exactly a key.
fn read_or_create_key(path: &Path) -> Result<[u8; KEY_BYTES]> {
    let cannot = |what: &str, e: &dyn std::fmt::Display| {
        refused(format!(
            "plugin cache key {}: cannot {what}: {e}",
            shown(path)
        ))
    };
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| cannot("create its directory", &e))?;
    }
    let mut key = [0u8; KEY_BYTES];
    if !path.exists() {
        // Written whole aside, then linked into place: a host starting at the same time
        // either wins or reads the winner's whole key, never half of one.
        getrandom::fill(&mut key).map_err(|e| cannot("draw a random key", &e))?;
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(|e| cannot("draw a random name", &e))?;
        let tmp = path.with_extension(format!("tmp{}", u64::from_le_bytes(nonce)));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut file| {
                use std::io::Write;
                file.write_all(&key).and_then(|()| file.sync_all())
            })
            .and_then(|()| std::fs::hard_link(&tmp, path));
        let _ = std::fs::remove_file(&tmp);
        match written {
            Ok(()) => return Ok(key),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(cannot("create", &e)),
        }
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| cannot("open", &e))?;
    let meta = file.metadata().map_err(|e| cannot("read", &e))?;
    if let Some(why) = not_private(path, &meta, "plugin cache key") {
        return Err(refused(why));
    }
    let mut bytes = Vec::new();
    file.take(KEY_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot("read", &e))?;
    if bytes.len() != KEY_BYTES {
        return Err(refused(format!(
            "plugin cache key {} holds {} bytes, not a {KEY_BYTES}-byte key",
            shown(path),
            bytes.len()
        )));
    }
    key.copy_from_slice(&bytes);
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn settings(root: &Path) -> CacheSettings {
        CacheSettings {
            dir: root.join("cache"),
            key_file: root.join("state/plugin-cache.key"),
            keep_unused: Duration::ZERO,
        }
    }

    #[test]
    fn entries_are_authenticated_by_the_key_and_bound_to_their_name() {
        let root = scratch("auth");
        let cache = PluginCache::open(&settings(&root)).unwrap();
        let meta = std::fs::metadata(cache.dir()).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        let key_meta = std::fs::metadata(root.join("state/plugin-cache.key")).unwrap();
        assert_eq!(
            (key_meta.permissions().mode() & 0o777, key_meta.len()),
            (0o600, 32)
        );

        let (a, b) = (cache.name("aa", "e1"), cache.name("bb", "e1"));
        cache.put(&a, b"native code A").unwrap();
        cache.put(&b, b"native code B").unwrap();
        assert_eq!(
            cache.get(&a, 1 << 20).as_deref(),
            Some(&b"native code A"[..])
        );
        assert_eq!(cache.get(&cache.name("cc", "e1"), 1 << 20), None);
        // Over the size bound: refused and removed.
        assert_eq!(cache.get(&b, 4), None);
        assert!(!cache.dir().join(&b).exists());

        // Valid bytes under another entry's name: refused and removed.
        std::fs::copy(cache.dir().join(&a), cache.dir().join(&b)).unwrap();
        assert_eq!(cache.get(&b, 1 << 20), None);
        assert!(!cache.dir().join(&b).exists());

        // A planted entry (the right name, bytes tagged with another key): refused.
        let other = PluginCache::open(&CacheSettings {
            key_file: root.join("other.key"),
            ..settings(&root)
        })
        .unwrap();
        let mut planted = std::fs::read(cache.dir().join(&a)).unwrap();
        planted.truncate(MAGIC.len());
        planted.extend(other.tag(&a, b"attacker code"));
        planted.extend(b"attacker code");
        std::fs::write(cache.dir().join(&a), &planted).unwrap();
        assert_eq!(cache.get(&a, 1 << 20), None);

        // The same key read back by a second host authenticates the first one's entries.
        cache.put(&a, b"native code A").unwrap();
        let again = PluginCache::open(&settings(&root)).unwrap();
        assert_eq!(
            again.get(&a, 1 << 20).as_deref(),
            Some(&b"native code A"[..])
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn directories_and_keys_open_to_others_are_refused() {
        let root = scratch("perm");
        let s = settings(&root);
        PluginCache::open(&s).unwrap();
        std::fs::set_permissions(&s.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        // This user's: closed to others, and used.
        PluginCache::open(&s).unwrap();
        let mode = std::fs::metadata(&s.dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Another user's: refused.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&s.dir, Some(65534), None).unwrap();
            let e = PluginCache::open(&s).unwrap_err();
            assert!(e.message().contains("is owned by user 65534"), "{e}");
            std::os::unix::fs::chown(&s.dir, Some(0), None).unwrap();
        }
        std::fs::set_permissions(&s.key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = PluginCache::open(&s).unwrap_err();
        assert!(
            e.message().contains("plugin cache key") && e.message().contains("644"),
            "{e}"
        );
        std::fs::set_permissions(&s.key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&s.key_file, b"short").unwrap();
        let e = PluginCache::open(&s).unwrap_err();
        assert!(e.message().contains("holds 5 bytes"), "{e}");
        // A link in place of the directory is not followed.
        let link = root.join("link");
        std::os::unix::fs::symlink(&s.dir, &link).unwrap();
        let e = PluginCache::open(&CacheSettings {
            dir: link,
            key_file: root.join("k2"),
            ..s.clone()
        })
        .unwrap_err();
        assert!(e.message().contains("not a directory"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn unused_entries_of_this_key_are_evicted() {
        let root = scratch("evict");
        let cache = PluginCache::open(&settings(&root)).unwrap();
        let other = PluginCache::open(&CacheSettings {
            key_file: root.join("other.key"),
            ..settings(&root)
        })
        .unwrap();
        let (used, old) = (cache.name("aa", "e"), cache.name("bb", "e"));
        cache.put(&used, b"a").unwrap();
        cache.put(&old, b"b").unwrap();
        other.put(&other.name("bb", "e"), b"b").unwrap();
        std::fs::write(cache.dir().join(format!("{old}.tmp7-0")), b"partial").unwrap();
        std::fs::write(cache.dir().join("unrelated"), b"x").unwrap();
        let removed = cache.evict(&HashSet::from([used.clone()]));
        assert_eq!(removed, 2);
        let mut left: Vec<_> = std::fs::read_dir(cache.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut expected = vec![used, other.name("bb", "e"), "unrelated".to_string()];
        expected.sort();
        assert_eq!(left, expected);
        // Kept while used recently.
        let keeping = PluginCache::open(&CacheSettings {
            keep_unused: Duration::from_secs(3600),
            ..settings(&root)
        })
        .unwrap();
        assert_eq!(keeping.evict(&HashSet::new()), 0);
        let _ = std::fs::remove_dir_all(&root);
    }
}
