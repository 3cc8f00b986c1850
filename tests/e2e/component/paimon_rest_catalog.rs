//! The host's client of Paimon's REST catalog against Paimon's own REST catalog server
//! (`cluster/paimon-rest/`): a table's id and location, its latest snapshot, a commit the
//! catalog applies and one it refuses as a lost race, a table dropped and created again, a
//! wrong token; and the `version-catalog` import in the hands of the adversarial plugin
//! (`tests/plugins/evil`, modes `catalog-version-*`): a snapshot naming another table's
//! manifests, an oversized snapshot and deeply nested statistics are refused by the host before
//! the catalog sees them, and the table in the catalog is exactly as it was.

use std::sync::Arc;
use std::time::Duration;

use fluss_lake_e2e::component::assert_catalog_attack_refused;
use fluss_lake_e2e::host::{self, plugin};
use fluss_lake_e2e::paimon::{self, PaimonRest};
use fluss_lake_e2e::unique_name;
use fluss_lake_host::ErrorKind;
use fluss_lake_host::catalog::{PaimonRestCatalog, PaimonRestOptions};
use fluss_lake_host::plugin::Plugin;
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::table_catalog::{TableCatalogScope, VersionScope};
use fluss_lake_host::warehouse::Warehouse;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

/// The lake options of the server with `token`.
fn options(rest: &PaimonRest, token: &str) -> PaimonRestOptions {
    let o = |k: &str, v: &str| (k.to_string(), v.to_string());
    PaimonRestOptions::from_lake_options(&[
        o("metastore", "rest"),
        o("uri", &rest.uri),
        o("warehouse", &rest.warehouse),
        o("token.provider", "bear"),
        o("token", token),
    ])
    .unwrap()
}

/// Creates `database.table` in the catalog, as the coordinator does through Java's client.
fn create_table(rest: &PaimonRest, database: &str, table: &str) {
    let (status, body) = rest.call(
        "POST",
        "/v1/paimon/databases",
        Some(&json!({"name": database, "options": {}}).to_string()),
    );
    assert!(
        status == 200 || status == 409,
        "create database: {status} {body}"
    );
    let request = json!({
        "identifier": {"database": database, "object": table},
        "schema": {
            "fields": [{"id": 0, "name": "id", "type": "INT NOT NULL"}],
            "partitionKeys": [], "primaryKeys": [], "options": {"bucket": "-1"}, "comment": null
        }
    });
    let (status, body) = rest.call(
        "POST",
        &format!("/v1/paimon/databases/{database}/tables"),
        Some(&request.to_string()),
    );
    assert_eq!(status, 200, "create table: {body}");
}

fn snapshot(id: i64, base: &str) -> String {
    json!({"version": 3, "id": id, "schemaId": 0, "baseManifestList": base,
        "deltaManifestList": format!("{base}-delta"), "commitUser": "host-test",
        "commitIdentifier": 1, "commitKind": "APPEND", "timeMillis": 1})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_loads_and_commits_through_paimons_rest_catalog() {
    let rest = paimon::rest_catalog();
    let database = unique_name("prest_client");
    let name = unique_name("t");
    create_table(&rest, &database, &name);
    let catalog = PaimonRestCatalog::connect(&options(&rest, &rest.token), DEADLINE)
        .await
        .unwrap();
    let table = catalog.table(&database, &name);
    let info = table.load().await.unwrap().expect("the table");
    assert!(info.path.contains(&name), "{info:?}");
    assert_eq!(table.latest_snapshot().await.unwrap(), None);
    assert_eq!(
        catalog
            .table(&database, "no_such_table")
            .load()
            .await
            .unwrap(),
        None
    );

    // Committed once; the same id again is a lost race, not an error.
    assert!(
        table
            .commit(&info.id, &snapshot(1, "manifest-list-a"), "[]")
            .await
            .unwrap()
    );
    assert!(
        !table
            .commit(&info.id, &snapshot(1, "manifest-list-b"), "[]")
            .await
            .unwrap()
    );
    let latest: serde_json::Value =
        serde_json::from_str(&table.latest_snapshot().await.unwrap().unwrap()).unwrap();
    assert_eq!(
        (latest["id"].as_i64(), latest["baseManifestList"].as_str()),
        (Some(1), Some("manifest-list-a"))
    );
    // The catalog wrote the snapshot file itself.
    let location = info.path.strip_prefix("file:").unwrap_or(&info.path);
    assert!(
        std::path::Path::new(location)
            .join("snapshot/snapshot-1")
            .exists(),
        "{location}"
    );

    // A commit naming another table's id (this one dropped and created again) is refused.
    let e = table
        .commit(
            "00000000-0000-0000-0000-000000000000",
            &snapshot(2, "manifest-list-c"),
            "[]",
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.message().contains("nothing was committed"), "{e}");

    // A wrong token: one line naming the catalog, never the token.
    let e = PaimonRestCatalog::connect(&options(&rest, "not-the-token"), DEADLINE)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Authentication, "{e}");
    assert!(
        e.message().contains(&rest.uri) && !e.message().contains('\n'),
        "{e}"
    );
    assert!(!e.message().contains("not-the-token"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_plugin_cannot_reach_beyond_its_own_table_through_the_version_catalog() {
    let rest = paimon::rest_catalog();
    let engine = Arc::new(
        PluginEngine::new(EngineSettings {
            call_timeout: Duration::from_secs(20),
            cache: Some(host::plugin_cache()),
            ..EngineSettings::default()
        })
        .unwrap(),
    );
    let evil = Plugin::load(engine, &plugin("evil")).await.unwrap();
    let database = unique_name("prest_attacks");
    let name = unique_name("target");
    create_table(&rest, &database, &name);
    let catalog = PaimonRestCatalog::connect(&options(&rest, &rest.token), DEADLINE)
        .await
        .unwrap();
    let table = Arc::new(catalog.table(&database, &name));
    let info = table.load().await.unwrap().unwrap();
    let scratch = std::env::temp_dir().join(unique_name("version-attacks"));
    std::fs::create_dir_all(&scratch).unwrap();
    for (attack, refused_as) in [
        ("version-foreign-manifest", "is not a plain file name"),
        ("version-huge", "byte limit"),
        (
            "version-deep-json",
            "the statistics are not JSON PartitionStatistics",
        ),
    ] {
        assert_catalog_attack_refused(
            &evil,
            &name,
            Warehouse::open(&scratch.display().to_string(), &Default::default())
                .unwrap()
                .scope("attacks/target")
                .unwrap(),
            TableCatalogScope::Versions(VersionScope {
                table: table.clone(),
                table_id: info.id.clone(),
            }),
            attack,
            refused_as,
        )
        .await;
        assert_eq!(
            rest.latest_snapshot(&database, &name),
            None,
            "{attack}: the table in the catalog is unchanged"
        );
    }
}
