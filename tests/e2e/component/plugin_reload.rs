//! Hot swap in the host's plugin set, driven by file changes (the poll the host runs every
//! `--plugin-watch-interval`): a changed file is loaded for the next rounds while plugins
//! already handed out keep working; new files are added, removed files dropped, and a broken
//! or conflicting new file is refused with the previous version kept. `mixed_hot_swap.rs`
//! proves the same through SIGHUP on a live host.

use std::sync::Arc;
use std::time::Duration;

use fluss_lake_e2e::{host, repo_root, unique_name};
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::source::{PluginSource, digest};
use fluss_lake_host::plugin::{PluginInstance, PluginSet};

#[tokio::test]
async fn changed_plugin_files_are_swapped_in_and_broken_ones_refused() {
    let dir = repo_root()
        .join("target/test-scratch")
        .join(unique_name("reload"));
    std::fs::create_dir_all(&dir).unwrap();
    let v1 = std::fs::read(host::plugin("paimon")).unwrap();
    let v2 = host::new_version_of(&v1, b"2");
    host::install_plugin(&dir, "paimon", &v1);
    let engine = Arc::new(PluginEngine::new(EngineSettings::default()).unwrap());
    let set = PluginSet::load(engine, vec![PluginSource::Dir(dir.clone())], Vec::new())
        .await
        .unwrap();
    let old = set.current().get("paimon").unwrap();
    assert_eq!(old.digest(), digest(&v1));
    assert_eq!(
        set.reload(false).await,
        Default::default(),
        "nothing changed"
    );

    // A new version: the next rounds get it; the one handed out before still instantiates.
    host::install_plugin(&dir, "paimon", &v2);
    let report = set.reload(false).await;
    assert_eq!(report.loaded.len(), 1, "{report:?}");
    assert_eq!(set.current().get("paimon").unwrap().digest(), digest(&v2));
    let mut in_flight = PluginInstance::new(&old, "in flight".into()).await.unwrap();
    assert_eq!(in_flight.info().await.unwrap().format, "paimon");

    // A new file adds a format; removing it drops the format.
    host::install_plugin(
        &dir,
        "lance",
        &std::fs::read(host::plugin("lance")).unwrap(),
    );
    assert_eq!(set.reload(false).await.loaded.len(), 1);
    assert!(set.current().get("lance").is_some());
    std::fs::remove_file(dir.join("lance.wasm")).unwrap();
    assert_eq!(set.reload(false).await.removed.len(), 1);
    assert!(set.current().get("lance").is_none());

    // A broken new version is refused; the loaded one keeps serving.
    host::install_plugin(&dir, "paimon", &v2[..v2.len() / 3]);
    let report = set.reload(false).await;
    assert_eq!(report.refused.len(), 1, "{report:?}");
    assert!(
        report.refused[0].1.contains("not a valid component"),
        "{report:?}"
    );
    assert_eq!(set.current().get("paimon").unwrap().digest(), digest(&v2));

    // So is a second file claiming a format another file serves.
    host::install_plugin(&dir, "paimon", &v2);
    host::install_plugin(&dir, "zz-paimon-again", &v1);
    let report = set.reload(false).await;
    assert!(
        report
            .refused
            .iter()
            .any(|(_, why)| why.contains("both claim format 'paimon'")),
        "{report:?}"
    );
    assert_eq!(set.current().get("paimon").unwrap().digest(), digest(&v2));

    // A new plugin whose version is 300 bytes of three-byte characters loads, its version cut
    // between characters: nothing a plugin returns can panic a reload.
    host::install_plugin(&dir, "evil", &host::evil_with_version(&"€".repeat(100)));
    let report = set.reload(false).await;
    assert!(
        report.loaded.iter().any(|(p, _)| p.ends_with("evil.wasm")),
        "{report:?}"
    );
    let evil = set.current().get("evil").unwrap();
    assert!(
        evil.version().starts_with(&"€".repeat(85)) && evil.version().ends_with("… (truncated)"),
        "{}",
        evil.version()
    );
}

/// Built-in plugins (the test binary is built with `embedded-plugins`) serve every format no
/// file serves: a file of the same format replaces the built-in one on reload, and removing
/// the file brings the built-in back; the other built-ins serve throughout.
#[tokio::test]
async fn a_plugin_file_replaces_a_builtin_and_removing_it_brings_the_builtin_back() {
    let dir = repo_root()
        .join("target/test-scratch")
        .join(unique_name("builtin-reload"));
    std::fs::create_dir_all(&dir).unwrap();
    let engine = Arc::new(
        PluginEngine::new(EngineSettings {
            cache: Some(host::plugin_cache()),
            ..EngineSettings::default()
        })
        .unwrap(),
    );
    let builtins = fluss_lake_host::plugin::builtin::load(&engine)
        .await
        .unwrap();
    assert_eq!(builtins.len(), 3, "paimon, iceberg and lance are built in");
    let set = PluginSet::load(engine, vec![PluginSource::Dir(dir.clone())], builtins)
        .await
        .unwrap();
    let builtin_paimon = set.current().get("paimon").unwrap();
    assert!(builtin_paimon.is_builtin());
    assert_eq!(
        builtin_paimon.digest(),
        digest(&std::fs::read(host::plugin("paimon")).unwrap())
    );

    let v2 = host::new_version_of(&std::fs::read(host::plugin("paimon")).unwrap(), b"file");
    host::install_plugin(&dir, "paimon", &v2);
    assert_eq!(set.reload(false).await.loaded.len(), 1);
    let from_file = set.current().get("paimon").unwrap();
    assert!(!from_file.is_builtin());
    assert_eq!(from_file.digest(), digest(&v2));

    std::fs::remove_file(dir.join("paimon.wasm")).unwrap();
    let report = set.reload(false).await;
    assert_eq!(report.removed.len(), 1, "{report:?}");
    let back = set.current().get("paimon").unwrap();
    assert!(back.is_builtin());
    assert_eq!(back.digest(), builtin_paimon.digest());
    for format in ["iceberg", "lance"] {
        assert!(set.current().get(format).unwrap().is_builtin(), "{format}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A new version written in place with the old one's size and modification time (set back
/// after the write) is still seen by the poll: the file's change time moved, which no user
/// can set back.
#[tokio::test]
async fn a_change_that_keeps_size_and_modification_time_is_swapped_in() {
    let dir = repo_root()
        .join("target/test-scratch")
        .join(unique_name("samesize"));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (host::evil_with_version("1"), host::evil_with_version("2"));
    assert_eq!(a.len(), b.len());
    let path = dir.join("evil.wasm");
    std::fs::write(&path, &a).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let engine = Arc::new(PluginEngine::new(EngineSettings::default()).unwrap());
    let set = PluginSet::load(engine, vec![PluginSource::Dir(dir.clone())], Vec::new())
        .await
        .unwrap();
    // Past the window in which a change may keep the file's timestamps.
    tokio::time::sleep(fluss_lake_host::plugin::source::RECENT + Duration::from_millis(200)).await;
    assert_eq!(set.reload(false).await, Default::default());
    assert_eq!(
        set.reload(false).await,
        Default::default(),
        "nothing changed"
    );

    std::fs::write(&path, &b).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(
        (meta.len(), meta.modified().unwrap()),
        (a.len() as u64, modified)
    );
    let report = set.reload(false).await;
    assert_eq!(report.loaded.len(), 1, "{report:?}");
    assert_eq!(set.current().get("evil").unwrap().digest(), digest(&b));
}

/// A plugin file over `--plugin-max-file-size` (a 3 GiB sparse file: no bytes on disk) is
/// refused before it is read; a file whose name holds a newline and a line shaped like the
/// host's log is named escaped, on one line.
#[tokio::test]
async fn huge_files_are_refused_unread_and_hostile_names_are_escaped() {
    let dir = repo_root()
        .join("target/test-scratch")
        .join(unique_name("hostilefiles"));
    std::fs::create_dir_all(&dir).unwrap();
    host::install_plugin(&dir, "evil", &host::evil_with_version("1"));
    let engine = Arc::new(PluginEngine::new(EngineSettings::default()).unwrap());
    let set = PluginSet::load(engine, vec![PluginSource::Dir(dir.clone())], Vec::new())
        .await
        .unwrap();

    let huge = std::fs::File::create(dir.join("huge.wasm")).unwrap();
    huge.set_len(3 << 30).unwrap();
    let forged = "x\n2026-12-03T00:00:00Z  INFO plugin swapped in\n.wasm";
    std::fs::write(dir.join(forged), b"\0asm\x0d\0\x01\0garbage").unwrap();
    let report = set.reload(false).await;
    let huge_refusal = report
        .refused
        .iter()
        .find(|(p, _)| p.ends_with("huge.wasm"))
        .unwrap_or_else(|| panic!("{report:?}"));
    assert!(
        huge_refusal
            .1
            .contains("3221225472 bytes, over the 134217728-byte limit")
            && huge_refusal.1.contains("refused unread"),
        "{report:?}"
    );
    let named = report
        .refused
        .iter()
        .find(|(p, _)| p.to_string_lossy().contains("swapped in"))
        .unwrap_or_else(|| panic!("{report:?}"));
    assert!(
        !named.1.contains('\n')
            && named
                .1
                .contains("x\\n2026-12-03T00:00:00Z  INFO plugin swapped in\\n.wasm"),
        "{:?}",
        named.1
    );
    assert!(
        set.current().get("evil").is_some(),
        "the good plugin keeps serving"
    );
}

/// A compiled-plugin cache entry replaced by another plugin's compiled code (valid, but
/// tagged for another name), or by code tagged under another key, is refused and removed
/// before it is loaded: the plugin is compiled again and is what its file says. The code of a
/// plugin swapped out is removed once unused (here at once).
#[tokio::test]
async fn planted_compiled_code_is_refused_and_swapped_out_code_evicted() {
    use fluss_lake_host::plugin::cache::CacheSettings;
    let dir = repo_root()
        .join("target/test-scratch")
        .join(unique_name("planted"));
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let cache = CacheSettings {
        dir: dir.join("cache"),
        key_file: dir.join("state/plugin-cache.key"),
        keep_unused: Duration::ZERO,
    };
    let engine = || {
        Arc::new(
            PluginEngine::new(EngineSettings {
                cache: Some(cache.clone()),
                ..EngineSettings::default()
            })
            .unwrap(),
        )
    };
    // Every plugin of the directory, through a new engine on the cache (as a new host).
    let load = async || {
        PluginSet::load(
            engine(),
            vec![PluginSource::Dir(plugins.clone())],
            Vec::new(),
        )
        .await
        .unwrap()
    };
    // The code that answers as evil is evil's (not the planted test-null code).
    let evil_answers = async |set: &PluginSet| {
        let evil = set.current().get("evil").unwrap();
        let mut instance = PluginInstance::new(&evil, "t".into()).await.unwrap();
        assert_eq!(instance.info().await.unwrap().format, "evil");
    };
    let entries = || {
        let mut names: Vec<String> = std::fs::read_dir(&cache.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let (evil, null) = (
        std::fs::read(host::plugin("evil")).unwrap(),
        std::fs::read(host::plugin("test-null")).unwrap(),
    );
    host::install_plugin(&plugins, "evil", &evil);
    host::install_plugin(&plugins, "null", &null);
    load().await;
    let names = entries();
    assert_eq!(names.len(), 2, "{names:?}");
    let named = |d: &str| names.iter().find(|n| n.starts_with(d)).unwrap().clone();
    let (evil_entry, null_entry) = (named(&digest(&evil)), named(&digest(&null)));

    // test-null's compiled code under evil's name.
    std::fs::copy(cache.dir.join(&null_entry), cache.dir.join(&evil_entry)).unwrap();
    let set = load().await;
    assert!(set.current().get("evil").is_some() && set.current().get("test-null").is_some());
    evil_answers(&set).await;

    // Code tagged under another key, with evil's name.
    let other = fluss_lake_host::plugin::cache::PluginCache::open(&CacheSettings {
        key_file: dir.join("other.key"),
        ..cache.clone()
    })
    .unwrap();
    // (An entry is an 8-byte magic and a 32-byte tag, then the compiled code.)
    let null_code = std::fs::read(cache.dir.join(&null_entry)).unwrap()[40..].to_vec();
    other.put(&evil_entry, &null_code).unwrap();
    let set = load().await;
    // Recompiled from its file: the code that answers is evil's, not test-null's.
    evil_answers(&set).await;

    // null.wasm swapped out: its compiled code goes.
    std::fs::remove_file(plugins.join("null.wasm")).unwrap();
    let report = set.reload(false).await;
    assert_eq!(report.removed.len(), 1, "{report:?}");
    assert_eq!(entries(), vec![evil_entry.clone()]);
    let _ = std::fs::remove_dir_all(&dir);
}
