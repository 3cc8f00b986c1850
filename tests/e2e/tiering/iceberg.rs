//! Iceberg end to end: a real Fluss cluster whose `datalake.format` is `iceberg` (its
//! coordinator creates the Iceberg tables through Fluss's Java Iceberg plugin), the host
//! binary with the Iceberg WebAssembly plugin, and pyiceberg / DuckDB reading back exactly
//! the Fluss data, with Fluss's lake snapshot offsets matching what the lake holds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{ArrayRef, BinaryArray, RecordBatch, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema as ArrowSchema, TimeUnit};
use fluss::client::FlussAdmin;
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::component::ComponentDriver;
use fluss_lake_e2e::iceberg::{java_check, plan, rows, snapshots};
use fluss_lake_e2e::lake_check::{business, nonzero, read_offsets_file, wait_registered};
use fluss_lake_e2e::{Rng, cluster, crash, data, host, lake_check, unique_name};
use serde_json::{Value, json};

const BUCKETS: i32 = 3;

/// The standard test columns plus TIMESTAMP_LTZ(3) and BYTES, bucketed by `id`.
fn log_descriptor() -> TableDescriptor {
    let base = data::all_types_schema();
    let mut b = Schema::builder();
    for c in base.columns() {
        b = b.column(c.name(), c.data_type().clone());
    }
    let schema = b
        .column("ltz", DataTypes::timestamp_ltz_with_precision(3))
        .column("bin", DataTypes::bytes())
        .build()
        .unwrap();
    TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s")
        .build()
        .unwrap()
}

fn ltz(i: i64) -> Option<i64> {
    (i % 10 != 7).then_some(1_650_000_000_000 + i * 13)
}

fn bin(i: i64) -> Option<Vec<u8>> {
    (i % 10 != 7).then(|| vec![(i % 256) as u8, 0, 0xfe])
}

/// Rows `first..first+count` and their canonical JSON.
fn log_batch(first: i64, count: usize) -> (RecordBatch, Vec<Value>) {
    let base = data::batch(first, count);
    let mut fields: Vec<Field> = base
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(
        "ltz",
        DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        true,
    ));
    fields.push(Field::new("bin", DataType::Binary, true));
    let ids = first..first + count as i64;
    let mut cols: Vec<ArrayRef> = base.columns().to_vec();
    cols.push(Arc::new(
        TimestampMillisecondArray::from_iter(ids.clone().map(ltz)).with_timezone("UTC"),
    ));
    cols.push(Arc::new(BinaryArray::from_iter(ids.clone().map(bin))));
    let batch = RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), cols).unwrap();
    let mut canonical = data::canonical_rows(&base);
    for (r, i) in canonical.iter_mut().zip(ids) {
        r["ltz"] = ltz(i).map_or(Value::Null, |v| json!(v * 1000));
        r["bin"] = bin(i).map_or(Value::Null, |b| {
            json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>())
        });
    }
    (batch, canonical)
}

async fn append(
    conn: &fluss::client::FlussConnection,
    path: &TablePath,
    first: i64,
    count: usize,
) -> Vec<Value> {
    let table = conn.get_table(path).await.unwrap();
    let writer = table.new_append().unwrap().create_writer().unwrap();
    let mut expected = Vec::new();
    let mut done = 0;
    while done < count {
        let n = 4_000.min(count - done);
        let (batch, rows) = log_batch(first + done as i64, n);
        writer.append_arrow_batch(batch).unwrap();
        expected.extend(rows);
        done += n;
    }
    writer.flush().await.unwrap();
    expected
}

/// The offsets Fluss registered for the latest lake snapshot equal the log end offsets,
/// and the Iceberg snapshot it names is the table's current one, carrying the same offsets
/// file. Returns the snapshot id.
async fn check_registered(
    c: &fluss_lake_e2e::cluster::ClusterInfo,
    admin: &FlussAdmin,
    path: &TablePath,
    dir: &Path,
    ends: &HashMap<(Option<i64>, i32), i64>,
    h: &host::HostProcess,
) -> i64 {
    let snap = wait_registered(c, admin, path, ends, h).await;
    let snaps = snapshots(dir);
    let last = snaps.last().expect("an Iceberg snapshot");
    assert_eq!(
        last["snapshot-id"].as_i64(),
        Some(snap),
        "Fluss registered the current snapshot"
    );
    assert_eq!(last["summary"]["commit-user"], "__fluss_lake_tiering");
    let offsets_path = last["summary"]["fluss-offsets"]
        .as_str()
        .expect("fluss-offsets")
        .to_string();
    assert_eq!(
        read_offsets_file(&offsets_path),
        nonzero(ends),
        "the offsets file of snapshot {snap}"
    );
    snap
}

/// The plugin's own `create-table-if-missing` (for tables the coordinator did not create)
/// defines the table exactly as the coordinator's Java catalog did: same schema with field
/// ids, identifier fields, partition spec, sort order and properties (but the Parquet codec).
async fn assert_plugin_creates_the_same_table(admin: &FlussAdmin, path: &TablePath, dir: &Path) {
    let info = admin.get_table_info(path).await.unwrap();
    let wit = fluss_lake_host::fluss::table::to_wit(&info, "iceberg");
    let wh = std::env::temp_dir().join(unique_name("iceberg-create"));
    let driver = ComponentDriver::load(&host::plugin("iceberg"), &wh).await;
    assert!(driver.create(&wit).await);
    let ours_dir = driver.table_dir(&wit).await;
    let read = |d: &Path| -> Value {
        serde_json::from_slice(&std::fs::read(d.join("metadata/v1.metadata.json")).unwrap())
            .unwrap()
    };
    let (java, ours) = (read(dir), read(&ours_dir));
    for key in [
        "format-version",
        "last-column-id",
        "current-schema-id",
        "schemas",
        "default-spec-id",
        "partition-specs",
        "last-partition-id",
        "default-sort-order-id",
        "sort-orders",
        "current-snapshot-id",
    ] {
        assert_eq!(ours[key], java[key], "{key}");
    }
    let props = |v: &Value| -> BTreeMap<String, Value> {
        serde_json::from_value(v["properties"].clone()).unwrap()
    };
    assert_eq!(props(&ours), props(&java), "table properties");
    std::fs::remove_dir_all(&wh).ok();
}

/// Every (bucket, offset) once, offsets of each bucket exactly 0..end.
fn check_system_columns(rows: &[Value], ends: &HashMap<(Option<i64>, i32), i64>) {
    let mut seen: HashMap<i64, HashSet<i64>> = HashMap::new();
    for r in rows {
        let (b, o) = (
            r["__bucket"].as_i64().unwrap(),
            r["__offset"].as_i64().unwrap(),
        );
        assert!(
            seen.entry(b).or_default().insert(o),
            "duplicate (bucket {b}, offset {o})"
        );
        assert!(r["__timestamp"].as_i64().unwrap() > 0);
    }
    for b in 0..BUCKETS {
        let end = ends.get(&(None, b)).copied().unwrap_or(0);
        assert_eq!(
            seen.get(&(b as i64)).map_or(0, |s| s.len()) as i64,
            end,
            "bucket {b}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_table_tiers_into_iceberg_over_three_rounds() {
    let c = cluster::lease("iceberg");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name("ice_log");
    let path = TablePath::new("fluss", &table);
    data::create_table(&admin, &path, &log_descriptor()).await;
    let dir = c.iceberg_warehouse.join("fluss").join(&table);
    assert!(
        dir.join("metadata/v1.metadata.json").exists(),
        "the coordinator created the Iceberg table"
    );

    assert_plugin_creates_the_same_table(&admin, &path, &dir).await;

    let mut expected = append(&conn, &path, 0, 30_000).await;
    let mut h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin("iceberg")],
            &["--datalake.format", "iceberg"],
        ),
        &format!("{table}-host"),
    );
    let ends1 = data::all_log_end_offsets(&admin, &path).await;
    let snap1 = check_registered(&c, &admin, &path, &dir, &ends1, &h).await;
    let lake = rows(&dir, None, "pyiceberg");
    assert_eq!(lake.len(), 30_000);
    assert_eq!(
        business(&lake),
        data::sorted_by_id(expected.clone()),
        "round 1 content"
    );
    check_system_columns(&lake, &ends1);

    // pyiceberg prunes with the bucket transform: Fluss (fluss-rs) bucketed each row with
    // Iceberg's bucket function, so a key is in exactly one bucket's files.
    for id in [0i64, 12_345, 29_999] {
        let p = plan(&dir, None, Some(("id", "=", json!(id))));
        assert_eq!(p["files"], json!(1), "id {id}: {p}");
    }
    assert_eq!(
        plan(&dir, None, Some(("id", "<", json!(0))))["files"],
        json!(0)
    );

    // Round 2 appends exactly the new rows; round 1 stays readable by time travel.
    expected.extend(append(&conn, &path, 30_000, 12_000).await);
    let ends2 = data::all_log_end_offsets(&admin, &path).await;
    let snap2 = check_registered(&c, &admin, &path, &dir, &ends2, &h).await;
    assert_ne!(snap1, snap2);
    let lake2 = rows(&dir, None, "duckdb");
    assert_eq!(
        business(&lake2),
        data::sorted_by_id(expected.clone()),
        "round 2 content (DuckDB)"
    );
    check_system_columns(&lake2, &ends2);
    let old = rows(&dir, Some(snap1), "pyiceberg");
    assert_eq!(old.len(), 30_000, "time travel to round 1");

    // Java Iceberg plans exactly the rows of each registered snapshot.
    let java = &java_check(&[&dir])[0];
    let planned = |id: i64| -> i64 {
        let s = java["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"].as_i64() == Some(id))
            .unwrap_or_else(|| panic!("Java does not see snapshot {id}"));
        s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["rows"].as_i64().unwrap())
            .sum()
    };
    assert_eq!(planned(snap1), 30_000);
    assert_eq!(planned(snap2), 42_000);

    // Idle: nothing new is committed while no data arrives, over two idle rounds.
    let idle = lake_check::after_idle_rounds(&mut h, &admin, &path, 2).await;
    assert_eq!(idle.snapshot_id, snap2);
    assert!(h.exited().is_none(), "host exited:\n{}", h.log());
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

#[derive(Clone, Debug)]
struct Row {
    name: String,
    val: i64,
}

fn fluss_row(id: i32, r: &Row, region: Option<&str>) -> GenericRow<'static> {
    let mut row = GenericRow::new(if region.is_some() { 4 } else { 3 });
    row.set_field(0, id);
    row.set_field(1, r.name.clone());
    row.set_field(2, r.val);
    if let Some(region) = region {
        row.set_field(3, region.to_string());
    }
    row
}

async fn run_primary_key(partitioned: bool) {
    let c = cluster::lease("iceberg");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let table = unique_name(if partitioned { "ice_pk_part" } else { "ice_pk" });
    let path = TablePath::new("fluss", &table);
    let mut schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("name", DataTypes::string())
        .column("val", DataTypes::bigint());
    if partitioned {
        schema = schema.column("region", DataTypes::string());
    }
    let pk = if partitioned {
        vec!["id", "region"]
    } else {
        vec!["id"]
    };
    let mut descriptor = TableDescriptor::builder()
        .schema(schema.primary_key(pk).unwrap().build().unwrap())
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s");
    if partitioned {
        descriptor = descriptor.partitioned_by(vec!["region"]);
    }
    data::create_table(&admin, &path, &descriptor.build().unwrap()).await;
    let regions: Vec<Option<&str>> = if partitioned {
        for r in ["eu", "us"] {
            data::create_partition(&admin, &path, &[("region", r)]).await;
        }
        vec![Some("eu"), Some("us")]
    } else {
        vec![None]
    };
    let dir = c.iceberg_warehouse.join("fluss").join(&table);
    assert_plugin_creates_the_same_table(&admin, &path, &dir).await;
    let writer = data::upsert_writer(&conn, &path).await;
    let mut host_process: Option<host::HostProcess> = None;
    let mut rng = Rng(0x1ce_be49);
    let mut model: BTreeMap<(i32, Option<&str>), Row> = BTreeMap::new();
    for round in 0..3 {
        // upserts (new keys, and updates of keys of this and earlier rounds), then deletes
        for _ in 0..1_200 {
            let id = rng.below(1_500) as i32;
            let region = regions[rng.below(regions.len() as u64) as usize];
            let r = Row {
                name: format!("r{round}-{}", rng.below(10_000)),
                val: rng.below(1 << 40) as i64,
            };
            writer.upsert(&fluss_row(id, &r, region)).unwrap();
            model.insert((id, region), r);
        }
        if round > 0 {
            let live: Vec<(i32, Option<&str>)> = model.keys().copied().collect();
            for _ in 0..200 {
                let (id, region) = live[rng.below(live.len() as u64) as usize];
                if let Some(r) = model.remove(&(id, region)) {
                    writer.delete(&fluss_row(id, &r, region)).unwrap();
                }
            }
        }
        writer.flush().await.unwrap();
        // The host starts once round 0 is in Fluss, so round 0 is one lake round.
        let h = host_process.get_or_insert_with(|| {
            host::HostProcess::spawn(
                &host::args(
                    &c.bootstrap,
                    &[host::plugin("iceberg")],
                    &["--datalake.format", "iceberg"],
                ),
                &format!("{table}-host"),
            )
        });
        let ends = data::all_log_end_offsets(&admin, &path).await;
        let snap = check_registered(&c, &admin, &path, &dir, &ends, h).await;
        let expected: Vec<Value> = sorted(
            model
                .iter()
                .map(|((id, region), r)| {
                    let mut v = json!({"id": id, "name": r.name, "val": r.val});
                    if let Some(region) = region {
                        v["region"] = json!(region);
                    }
                    v
                })
                .collect(),
        );
        let got = sorted(business(&rows(&dir, Some(snap), "duckdb")));
        assert_eq!(
            got.len(),
            expected.len(),
            "round {round}: live keys (DuckDB)"
        );
        assert_eq!(
            got, expected,
            "round {round}: DuckDB's merge-on-read equals the Fluss state"
        );
        if round == 0 {
            // Inserts and same-round updates only (position deletes): pyiceberg reads it too.
            assert_eq!(
                sorted(business(&rows(&dir, Some(snap), "pyiceberg"))),
                expected
            );
        }
    }
    let ops: Vec<String> = snapshots(&dir)
        .iter()
        .map(|s| s["operation"].as_str().unwrap().to_string())
        .collect();
    assert!(ops.iter().any(|o| o == "overwrite"), "row deltas: {ops:?}");
    assert!(
        ops.iter()
            .all(|o| ["append", "overwrite", "delete"].contains(&o.as_str())),
        "{ops:?}"
    );
    let java = &java_check(&[&dir])[0];
    assert_eq!(
        java["snapshots"].as_array().unwrap().len(),
        ops.len(),
        "Java Iceberg reads every snapshot"
    );
    let identifiers = if partitioned {
        json!([1, 4])
    } else {
        json!([1])
    };
    assert_eq!(java["identifier_field_ids"], identifiers);
    let mut h = host_process.unwrap();
    assert!(h.terminate(Duration::from_secs(40)).unwrap().success());
}

/// Canonical rows in a total order (keys may repeat across partitions).
fn sorted(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|r| r.to_string());
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_key_table_tiers_into_iceberg_with_deletes() {
    run_primary_key(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_primary_key_table_tiers_into_iceberg_with_deletes() {
    run_primary_key(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_across_random_crashes() {
    let c = cluster::lease("iceberg");
    let warehouse = c.iceberg_warehouse.clone();
    crash::exactly_once_across_random_crashes(&c, "iceberg", |table| {
        rows(&warehouse.join("fluss").join(table), None, "pyiceberg")
    })
    .await;
}
