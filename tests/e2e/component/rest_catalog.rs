//! The host's Iceberg REST catalog client against Apache Iceberg's own REST catalog server
//! (OAuth2 tokens, create, load, commit, the catalog's refusals), and the `table-catalog`
//! import in the hands of the adversarial plugin (`tests/plugins/evil`,
//! modes `catalog-*`), against Apache Iceberg's own REST catalog server: every attempt to
//! reach beyond the plugin's own table (move it onto another table's files, re-identify it,
//! commit another table's manifests, assert another table's UUID, flood or nest the request,
//! create a table of its choosing) is refused by the host before the catalog sees it, and
//! the table in the catalog is exactly as it was.

use std::sync::Arc;
use std::time::Duration;

use fluss_lake_e2e::component::assert_catalog_attack_refused;
use fluss_lake_e2e::host::{self, plugin};
use fluss_lake_e2e::{iceberg, unique_name};
use fluss_lake_host::ErrorKind;
use fluss_lake_host::catalog::{CatalogAuth, CatalogOptions, RestCatalog, Secret};
use fluss_lake_host::plugin::Plugin;
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::table_catalog::{Resolved, RestScope, TableCatalogScope};
use fluss_lake_host::warehouse::Warehouse;
use serde_json::{Value, json};

/// A table in the REST catalog, created by the host's client as the coordinator would.
async fn catalog_table(
    uri: &str,
    name: &str,
) -> (Arc<fluss_lake_host::catalog::RestTable>, Resolved) {
    let options = CatalogOptions::from_lake_options(&[
        ("type".to_string(), "rest".to_string()),
        ("uri".to_string(), uri.to_string()),
    ])
    .unwrap()
    .expect("a REST catalog");
    let catalog = RestCatalog::connect(&options, Duration::from_secs(30))
        .await
        .unwrap();
    let t = Arc::new(catalog.table("attacks", name));
    let request = json!({
        "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": true, "type": "int"}]},
        "partition-spec": {"spec-id": 0, "fields": []},
        "properties": {},
    });
    let loaded = t.create(request.to_string().as_bytes()).await.unwrap();
    let resolved = Resolved {
        location: loaded.location.clone(),
        uuid: loaded.uuid.clone(),
    };
    (t, resolved)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_plugin_cannot_reach_beyond_its_own_table_through_the_catalog() {
    let rest = iceberg::rest_catalog(0);
    let engine = Arc::new(
        PluginEngine::new(EngineSettings {
            call_timeout: Duration::from_secs(20),
            cache: Some(host::plugin_cache()),
            ..EngineSettings::default()
        })
        .unwrap(),
    );
    let evil = Plugin::load(engine, &plugin("evil")).await.unwrap();
    let scratch = std::env::temp_dir().join(unique_name("catalog-attacks"));
    std::fs::create_dir_all(&scratch).unwrap();
    let name = unique_name("target");
    let (rest_table, resolved) = catalog_table(&rest.uri, &name).await;
    let before = iceberg::rest_load_table(&rest.uri, "attacks", &name).unwrap();
    for (attack, refused_as) in [
        ("set-location", "set-location"),
        ("assign-uuid", "assign-uuid"),
        ("foreign-manifest-list", "not under"),
        ("other-uuid", "uuid"),
        ("huge-updates", "bytes"),
        ("deep-json", "JSON"),
        ("create-elsewhere", "location"),
    ] {
        assert_catalog_attack_refused(
            &evil,
            &name,
            Warehouse::open(&scratch.display().to_string(), &Default::default())
                .unwrap()
                .scope("attacks/target")
                .unwrap(),
            TableCatalogScope::Rest(RestScope {
                table: rest_table.clone(),
                resolved: Some(resolved.clone()),
            }),
            attack,
            refused_as,
        )
        .await;
        let after = iceberg::rest_load_table(&rest.uri, "attacks", &name).unwrap();
        assert_eq!(
            after["metadata-location"], before["metadata-location"],
            "{attack}: the table in the catalog is unchanged"
        );
    }
    assert!(
        iceberg::rest_load_table(&rest.uri, "attacks", "victim").is_none(),
        "no table of the plugin's choosing was created"
    );
}

fn append(snapshot_id: i64, location: &str) -> String {
    json!([
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": snapshot_id, "sequence-number": 1,
            "timestamp-ms": fluss_lake_host::time::now_millis(),
            "manifest-list": format!("{location}/metadata/snap-{snapshot_id}.avro"),
            "summary": {"operation": "append", "fluss-offsets": "x"}}},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}
    ])
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_creates_loads_and_commits_through_a_real_rest_catalog() {
    const DEADLINE: Duration = Duration::from_secs(30);
    const CREATE: &str = r#"{"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a","required":false,"type":"int"}]},"properties":{"fluss.table":"yes"}}"#;
    let rest = iceberg::rest_catalog(0);
    let options = CatalogOptions::from_lake_options(&[
        ("type".to_string(), "rest".to_string()),
        ("uri".to_string(), rest.uri.clone()),
    ])
    .unwrap()
    .unwrap();
    let catalog = RestCatalog::connect(&options, DEADLINE).await.unwrap();
    let database = unique_name("catalog_client");
    // The server's OAuth2 endpoint issues a token to any client.
    let mut with_credential = options.clone();
    with_credential.auth = CatalogAuth::ClientCredentials {
        client_id: Some("tiering".into()),
        client_secret: Secret::new("secret"),
        server_uri: "v1/oauth/tokens".into(),
        scope: "catalog".into(),
        audience: None,
        resource: None,
        refresh: true,
    };
    let oauth = RestCatalog::connect(&with_credential, DEADLINE)
        .await
        .unwrap();
    assert!(oauth.table(&database, "t").load().await.unwrap().is_none());
    let table = catalog.table(&database, "t");
    assert!(table.load().await.unwrap().is_none());
    // The namespace does not exist yet: the host creates it, as Fluss's Java catalog does.
    let created = table.create(CREATE.as_bytes()).await.unwrap();
    assert!(
        created.metadata_file().unwrap().starts_with("metadata/"),
        "{created:?}"
    );
    let e = table.create(CREATE.as_bytes()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");

    let loaded = table.load().await.unwrap().unwrap();
    assert_eq!(loaded.uuid, created.uuid);
    let requirements = r#"[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}]"#;
    let committed = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            requirements.as_bytes(),
            append(7, &loaded.location).as_bytes(),
        )
        .await
        .unwrap();
    let metadata: Value = serde_json::from_slice(&committed.metadata).unwrap();
    assert_eq!(metadata["current-snapshot-id"], 7, "{metadata}");
    assert_ne!(committed.metadata_location, loaded.metadata_location);

    // The same requirement again: refused, the table moved on.
    let e = table
        .commit(
            &loaded.uuid,
            &loaded.location,
            requirements.as_bytes(),
            append(8, &loaded.location).as_bytes(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    // Another table's UUID: refused by the catalog through the host's assert-table-uuid.
    let e = table
        .commit(
            "00000000-0000-0000-0000-000000000000",
            &loaded.location,
            b"[]",
            b"[]",
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    // A table that does not exist.
    let e = catalog
        .table(&database, "missing")
        .commit(&loaded.uuid, &loaded.location, b"[]", b"[]")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}
