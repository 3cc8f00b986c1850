//! Where the host copies remote files to read them (remote log segments, KV snapshot files):
//! directories in the system's temporary directory named `<prefix><pid>-<random>`, removed by
//! their owner, and by the next host to start when their owner stopped without removing them
//! (a crash).

use std::path::Path;

/// Remote log segments ([`super::remote_log`]).
pub const SEGMENTS: &str = "fluss-lake-host-segments-";
/// KV snapshot files ([`super::kv_snapshot`]).
pub const KV_SNAPSHOTS: &str = "fluss-lake-host-kv-";

/// A new copy directory in `parent`, named `<prefix><pid>-<random>`, removed when dropped.
pub fn create(parent: &Path, prefix: &str) -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .tempdir_in(parent)
}

/// Removes the copy directories that hosts no longer running left in `parent`. Only where
/// `/proc` tells which processes run.
pub fn remove_stale(parent: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| {
                [SEGMENTS, KV_SNAPSHOTS]
                    .iter()
                    .find_map(|p| n.strip_prefix(p))
            })
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            tracing::info!(dir = %entry.path().display(), "removing the copies a stopped host left");
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copies_of_stopped_hosts_are_removed_and_running_ones_kept() {
        let parent = tempfile::tempdir().unwrap();
        let dir = |prefix: &str, pid: &str| parent.path().join(format!("{prefix}{pid}-x1"));
        // pid_max is at most 2^22 on Linux: this process cannot exist.
        let stopped = [dir(SEGMENTS, "99999999"), dir(KV_SNAPSHOTS, "99999999")];
        let running = [
            dir(SEGMENTS, &std::process::id().to_string()),
            dir(KV_SNAPSHOTS, &std::process::id().to_string()),
        ];
        let other = parent.path().join("unrelated-99999999-x1");
        for d in stopped.iter().chain(&running).chain([&other]) {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("file"), b"x").unwrap();
        }
        remove_stale(parent.path());
        assert!(stopped.iter().all(|d| !d.exists()));
        assert!(running.iter().all(|d| d.join("file").exists()));
        assert!(other.exists());
    }
}
