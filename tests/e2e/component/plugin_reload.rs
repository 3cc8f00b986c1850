//! Hot swap in the host's plugin set, driven by file changes (the poll the host runs every
//! `--plugin-watch-interval`): a changed file is loaded for the next rounds while plugins
//! already handed out keep working; new files are added, removed files dropped, and a broken
//! or conflicting new file is refused with the previous version kept. `mixed_hot_swap.rs`
//! proves the same through SIGHUP on a live host.

use std::path::Path;
use std::sync::Arc;

use fluss_lake_e2e::{host, repo_root, unique_name};
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::source::{PluginSource, digest};
use fluss_lake_host::plugin::{PluginInstance, PluginSet};

fn install(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!("{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(tmp, dir.join(name)).unwrap();
}

#[tokio::test]
async fn changed_plugin_files_are_swapped_in_and_broken_ones_refused() {
    let dir = repo_root()
        .join("target/test-scratch")
        .join(unique_name("reload"));
    std::fs::create_dir_all(&dir).unwrap();
    let v1 = std::fs::read(host::plugin("paimon")).unwrap();
    let v2 = host::new_version_of(&v1, b"2");
    install(&dir, "paimon.wasm", &v1);
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
    install(&dir, "paimon.wasm", &v2);
    let report = set.reload(false).await;
    assert_eq!(report.loaded.len(), 1, "{report:?}");
    assert_eq!(set.current().get("paimon").unwrap().digest(), digest(&v2));
    let mut in_flight = PluginInstance::new(&old, "in flight".into()).await.unwrap();
    assert_eq!(in_flight.info().await.unwrap().format, "paimon");

    // A new file adds a format; removing it drops the format.
    install(
        &dir,
        "lance.wasm",
        &std::fs::read(host::plugin("lance")).unwrap(),
    );
    assert_eq!(set.reload(false).await.loaded.len(), 1);
    assert!(set.current().get("lance").is_some());
    std::fs::remove_file(dir.join("lance.wasm")).unwrap();
    assert_eq!(set.reload(false).await.removed.len(), 1);
    assert!(set.current().get("lance").is_none());

    // A broken new version is refused; the loaded one keeps serving.
    install(&dir, "paimon.wasm", &v2[..v2.len() / 3]);
    let report = set.reload(false).await;
    assert_eq!(report.refused.len(), 1, "{report:?}");
    assert!(
        report.refused[0].1.contains("not a valid component"),
        "{report:?}"
    );
    assert_eq!(set.current().get("paimon").unwrap().digest(), digest(&v2));

    // So is a second file claiming a format another file serves.
    install(&dir, "paimon.wasm", &v2);
    install(&dir, "zz-paimon-again.wasm", &v1);
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
    install(
        &dir,
        "evil.wasm",
        &host::evil_with_version(&"€".repeat(100)),
    );
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
            cache_dir: Some(host::plugin_cache_dir()),
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
    install(&dir, "paimon.wasm", &v2);
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
