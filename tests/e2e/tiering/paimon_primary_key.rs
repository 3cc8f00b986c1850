//! Primary-key tables tiered into Paimon on the real cluster: randomized upserts and
//! deletes over several rounds; pypaimon's merged read must equal the Fluss table's state,
//! and point lookups (which prune by Paimon's bucket hash) must find every live key.

use std::collections::BTreeMap;
use std::time::Duration;

use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{Rng, cluster, data, host, paimon, unique_name};
use serde_json::{Value, json};

const BUCKETS: i32 = 3;
const KEYS: u64 = 3_000;

#[derive(Clone, Debug, PartialEq)]
struct Row {
    name: String,
    val: i64,
    price: f64,
    flag: bool,
}

fn descriptor(partitioned: bool) -> TableDescriptor {
    let mut schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("name", DataTypes::string())
        .column("val", DataTypes::bigint())
        .column("price", DataTypes::double())
        .column("flag", DataTypes::boolean());
    if partitioned {
        schema = schema.column("region", DataTypes::string());
    }
    let pk: Vec<&str> = if partitioned {
        vec!["id", "region"]
    } else {
        vec!["id"]
    };
    let mut b = TableDescriptor::builder()
        .schema(schema.primary_key(pk).unwrap().build().unwrap())
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s");
    if partitioned {
        b = b.partitioned_by(vec!["region"]);
    }
    b.build().unwrap()
}

/// The Fluss row for a key and its values.
fn fluss_row(id: i32, r: &Row, region: Option<&str>) -> GenericRow<'static> {
    let mut row = GenericRow::new(if region.is_some() { 6 } else { 5 });
    row.set_field(0, id);
    row.set_field(1, r.name.clone());
    row.set_field(2, r.val);
    row.set_field(3, r.price);
    row.set_field(4, r.flag);
    if let Some(region) = region {
        row.set_field(5, region.to_string());
    }
    row
}

fn canonical(id: i32, r: &Row, region: Option<&str>) -> Value {
    let mut v = json!({"id": id, "name": r.name, "val": r.val, "price": r.price, "flag": r.flag});
    if let Some(region) = region {
        v["region"] = json!(region);
    }
    v
}

async fn run(partitioned: bool) {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new(
        "fluss",
        unique_name(if partitioned { "pk_part" } else { "pk" }),
    );
    data::create_table(&admin, &path, &descriptor(partitioned)).await;
    let regions: Vec<Option<&str>> = if partitioned {
        for r in ["eu", "us"] {
            data::create_partition(&admin, &path, &[("region", r)]).await;
        }
        vec![Some("eu"), Some("us")]
    } else {
        vec![None]
    };
    let table = conn.get_table(&path).await.unwrap();
    let writer = table.new_upsert().unwrap().create_writer().unwrap();
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &[]),
        &format!("{}-host", path.table()),
    );
    let mut rng = Rng(0xfeed_beef_1234);
    let mut model: BTreeMap<(i32, Option<&str>), Row> = BTreeMap::new();
    for round in 0..4 {
        for _ in 0..1_500 {
            let id = rng.below(KEYS) as i32;
            let region = regions[rng.below(regions.len() as u64) as usize];
            let r = Row {
                name: format!("n{round}-{id}-{}", rng.below(1000)),
                val: rng.below(1 << 40) as i64,
                price: rng.below(100_000) as f64 / 8.0,
                flag: rng.below(2) == 0,
            };
            writer.upsert(&fluss_row(id, &r, region)).unwrap();
            model.insert((id, region), r);
        }
        let live: Vec<(i32, Option<&str>)> = model.keys().copied().collect();
        for _ in 0..300 {
            let (id, region) = live[rng.below(live.len() as u64) as usize];
            let Some(r) = model.remove(&(id, region)) else {
                continue;
            };
            writer.delete(&fluss_row(id, &r, region)).unwrap();
        }
        writer.flush().await.unwrap();
        let ends = data::all_log_end_offsets(&admin, &path).await;
        data::wait_for_all_lake_offsets(&admin, &path, &ends, Duration::from_secs(180))
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}\nhost log:\n{}", h.log()));

        let lake = paimon::rows(&c.paimon_warehouse, "fluss", path.table(), None);
        let mut expected: Vec<Value> = model
            .iter()
            .map(|((id, region), r)| canonical(*id, r, *region))
            .collect();
        expected.sort_by_key(|v| {
            (
                v["id"].as_i64().unwrap(),
                v["region"].as_str().map(str::to_string),
            )
        });
        let mut got = business(&lake);
        got.sort_by_key(|v| {
            (
                v["id"].as_i64().unwrap(),
                v["region"].as_str().map(str::to_string),
            )
        });
        assert_eq!(got.len(), expected.len(), "round {round}: merged row count");
        assert_eq!(
            got, expected,
            "round {round}: merged read differs from the Fluss state"
        );

        // Point lookups by key: live keys are found, deleted keys are not.
        for _ in 0..8 {
            let id = rng.below(KEYS) as i32;
            let found = business(&paimon::lookup(
                &c.paimon_warehouse,
                "fluss",
                path.table(),
                "id",
                &json!(id),
            ));
            let want: Vec<Value> = model
                .iter()
                .filter(|((k, _), _)| *k == id)
                .map(|((k, region), r)| canonical(*k, r, *region))
                .collect();
            let mut found = found;
            found.sort_by_key(|v| v["region"].as_str().map(str::to_string));
            assert_eq!(found, want, "round {round}: lookup of id {id}");
        }
    }
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_key_table_merged_read_equals_fluss_state() {
    run(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_primary_key_table_merged_read_equals_fluss_state() {
    run(true).await;
}

/// Deletes of keys that do not exist append log batches that hold no record. A round whose
/// range ends in such batches still completes, on the offset the scanner consumed rather
/// than at the table's freshness, and commits that progress. (Before, every round ran to its
/// 10 s freshness, was force-finished and threw its progress away: the lake offsets never
/// reached the high watermark.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_ending_in_empty_log_batches_completes_and_commits() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("pk_empty_batches"));
    let descriptor = TableDescriptor::builder()
        .schema(
            Schema::builder()
                .column("id", DataTypes::int())
                .column("name", DataTypes::string())
                .column("val", DataTypes::bigint())
                .column("price", DataTypes::double())
                .column("flag", DataTypes::boolean())
                .primary_key(vec!["id"])
                .unwrap()
                .build()
                .unwrap(),
        )
        .distributed_by(Some(1), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "10s")
        .build()
        .unwrap();
    data::create_table(&admin, &path, &descriptor).await;
    let table = conn.get_table(&path).await.unwrap();
    let writer = table.new_upsert().unwrap().create_writer().unwrap();
    let row = |id: i32| Row {
        name: format!("n{id}"),
        val: id as i64,
        price: 1.5,
        flag: true,
    };
    for id in 0..20 {
        writer.upsert(&fluss_row(id, &row(id), None)).unwrap();
    }
    writer.flush().await.unwrap();
    let mut h = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin("paimon")], &[]),
        &format!("{}-host", path.table()),
    );
    let before = data::all_log_end_offsets(&admin, &path).await;
    fluss_lake_e2e::lake_check::wait_registered(&c, &admin, &path, &before, &h).await;

    for batch in 0..3 {
        for id in 1_000 + batch * 10..1_010 + batch * 10 {
            writer.delete(&fluss_row(id, &row(id), None)).unwrap();
        }
        writer.flush().await.unwrap();
    }
    let after = data::all_log_end_offsets(&admin, &path).await;
    assert!(
        after[&(None, 0)] > before[&(None, 0)],
        "deleting missing keys advanced the log: {before:?} → {after:?}"
    );
    data::wait_for_all_lake_offsets(&admin, &path, &after, Duration::from_secs(40))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", h.log()));
    let log = h.log();
    assert!(
        !log.contains("round reached the table's freshness"),
        "the round ran to its freshness:\n{log}"
    );
    let lake = business(&paimon::rows(
        &c.paimon_warehouse,
        "fluss",
        path.table(),
        None,
    ));
    // Exactly the 20 upserted rows: the deletes of missing keys changed nothing.
    let mut ids: Vec<i64> = lake.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..20).collect::<Vec<i64>>(), "{lake:?}");
    for r in &lake {
        let id = r["id"].as_i64().unwrap();
        assert_eq!(r["name"].as_str(), Some(format!("n{id}").as_str()), "{r}");
        assert_eq!(r["val"].as_i64(), Some(id), "{r}");
    }
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}
