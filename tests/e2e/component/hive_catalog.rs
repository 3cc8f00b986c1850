//! The `table-catalog` import of kind `metadata-pointer` (AWS Glue, the Hive Metastore) in the
//! hands of the adversarial plugin (`tests/plugins/evil`, modes `catalog-swap-*`), against
//! Apache Hive's own metastore (`cluster/hive-metastore/`): every attempt to point the table at
//! something other than a successor of its own metadata (a file outside its metadata folder,
//! metadata that moves the table onto another table's files, another table's UUID, another
//! table's manifests, a metadata path elsewhere) is refused by the host before the metastore
//! is asked, and the metastore still points at the table's metadata file.

use std::sync::Arc;
use std::time::Duration;

use fluss_lake_e2e::component::assert_catalog_attack_refused;
use fluss_lake_e2e::hive::{self, HiveMetastore};
use fluss_lake_e2e::host::{self, plugin};
use fluss_lake_e2e::unique_name;
use fluss_lake_host::catalog::{HiveCatalog, HiveOptions};
use fluss_lake_host::plugin::Plugin;
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::table_catalog::{PointerScope, TableCatalogScope};
use fluss_lake_host::warehouse::Warehouse;
use serde_json::json;

/// The first metadata file of an empty Iceberg table at `location` (as Java writes one).
fn first_metadata(location: &str) -> String {
    json!({
        "format-version": 2,
        "table-uuid": "6f1d3c52-4d0e-4a53-9d57-2c3b7f0b9a11",
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": 1_700_000_000_000i64,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": true, "type": "int"}]}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": -1,
        "refs": {},
        "snapshots": [],
        "statistics": [],
        "snapshot-log": [],
        "metadata-log": []
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_plugin_cannot_point_its_table_elsewhere_through_the_metastore() {
    let hms = HiveMetastore::start();
    let engine = Arc::new(
        PluginEngine::new(EngineSettings {
            call_timeout: Duration::from_secs(20),
            cache: Some(host::plugin_cache()),
            ..EngineSettings::default()
        })
        .unwrap(),
    );
    let evil = Plugin::load(engine, &plugin("evil")).await.unwrap();
    let name = unique_name("target");
    let parent = std::env::temp_dir().join(unique_name("pointer-attacks"));
    let dir = parent.join(&name);
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    let location = format!("file:{}", dir.display());
    let first = dir.join("metadata/00000-first.metadata.json");
    std::fs::write(&first, first_metadata(&location)).unwrap();
    let registered = hive::register(
        hms.uri(),
        "attacks",
        &name,
        &format!("file:{}", first.display()),
    );

    let options = HiveOptions::from_lake_options(&[
        ("type".to_string(), "hive".to_string()),
        ("uri".to_string(), hms.uri().to_string()),
    ])
    .unwrap();
    let catalog = HiveCatalog::new(&options, Duration::from_secs(20)).unwrap();
    let target = Arc::new(catalog.table("attacks", &name));
    let storage = || {
        Warehouse::open(&parent.display().to_string(), &Default::default())
            .unwrap()
            .scope(&name)
            .unwrap()
    };
    let pointer = target.pointer().await.unwrap().expect("registered");
    let resolved = target.resolve(&storage(), pointer).await.unwrap();

    for (attack, refused_as) in [
        ("swap-escape", "not a metadata file under metadata/"),
        ("swap-moved", "moves the table"),
        ("swap-other-uuid", "names another table"),
        (
            "swap-foreign-manifest-list",
            "not under the table's location",
        ),
        ("swap-metadata-path", "write.metadata.path"),
    ] {
        assert_catalog_attack_refused(
            &evil,
            &name,
            storage(),
            TableCatalogScope::Pointer(PointerScope {
                table: target.clone(),
                resolved: resolved.clone(),
            }),
            attack,
            refused_as,
        )
        .await;
        assert_eq!(
            hive::pointer(hms.uri(), "attacks", &name).as_deref(),
            Some(registered.as_str()),
            "{attack}: the metastore still points at the table's metadata"
        );
    }
    let _ = std::fs::remove_dir_all(&parent);
}
