//! Nested columns (ARRAY, MAP, ROW, nested in each other, nulls and empty collections at every
//! level) of a real Fluss table, tiered by the host, read back by independent readers and
//! compared value for value with the rows Fluss acknowledged: Paimon, Iceberg, and Delta (a
//! format Fluss does not know: the table names the Delta plugin in its `lake.plugin` custom
//! property). And a primary-key table of the same columns over rounds of upserts that change
//! the nested values of existing keys (to and from null, to empty collections) and deletes:
//! the Paimon merge tree (KV files whose `_KEY_` fields are the key's, the value the nested
//! columns) and Iceberg's equality deletes (`equality_ids` the key; the files hold the whole
//! before-image, nested columns included, as Fluss's Java writer's do) read back merged as
//! Fluss looks every key up.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use fluss::client::FlussConnection;
use fluss::config::Config;
use fluss::metadata::{DataType, Schema, TableDescriptor, TablePath};
use fluss::row::{Datum, Decimal, FlussArrayWriter, FlussMapWriter, GenericRow, TimestampNtz};
use fluss_lake_e2e::delta::{self, READERS};
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::nested::{
    COLUMN_NAMES, CONTRACT_COLUMNS, as_pyiceberg_reads, batch, columns, row,
};
use fluss_lake_e2e::{Rng, cluster, data, host, iceberg, paimon, unique_name};
use fluss_lake_host::fluss::table::contract_type;
use serde_json::{Value, json};

use super::merge_engines::{KEYS, assert_lake_reads_as_fluss, spawn_host};

const BUCKETS: i32 = 2;

const ROWS: i64 = 600;

/// Creates the nested table on `c`, writes [`ROWS`] rows, starts a host with the `format`
/// plugin and waits until the lake holds them all. A `delta` table is routed to the Delta
/// plugin by its `lake.plugin` property (Fluss also creates it in the cluster's own lake
/// format, where it stays empty), the host told where the Delta warehouse is.
async fn tier(c: &cluster::Lease, format: &str) -> (String, host::HostProcess) {
    let conn = Arc::new(
        FlussConnection::new(Config {
            bootstrap_servers: c.bootstrap.clone(),
            ..Default::default()
        })
        .await
        .expect("connect to Fluss"),
    );
    let admin = conn.get_admin().unwrap();
    let table = unique_name(&format!("nested_{format}"));
    let path = TablePath::new("fluss", &table);
    let mut schema = Schema::builder();
    for ((name, ty), (_, spelled, _)) in columns().into_iter().zip(CONTRACT_COLUMNS) {
        // What the plugins' own tests write is what the host hands them for this table.
        assert_eq!(contract_type(&ty), spelled, "{name}");
        schema = schema.column(name, ty);
    }
    let mut descriptor = TableDescriptor::builder()
        .schema(schema.build().unwrap())
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s");
    if format == "delta" {
        descriptor = descriptor.custom_property("lake.plugin", "delta");
    }
    let descriptor = descriptor.build().unwrap();
    data::create_table(&admin, &path, &descriptor).await;
    let fluss_table = conn.get_table(&path).await.unwrap();
    let writer = fluss_table.new_append().unwrap().create_writer().unwrap();
    for first in (0..ROWS).step_by(200) {
        writer.append_arrow_batch(batch(first, 200)).unwrap();
    }
    writer.flush().await.unwrap();
    let ends = data::log_end_offsets(&admin, &path, BUCKETS).await;
    assert_eq!(ends.values().sum::<i64>(), ROWS);
    let delta_warehouse = c.delta_warehouse.display().to_string();
    let mut extra = vec!["--datalake.format", format];
    if format == "delta" {
        extra.extend(["--datalake.delta.warehouse", &delta_warehouse]);
    }
    let host = host::HostProcess::spawn(
        &host::args(&c.bootstrap, &[host::plugin(format)], &extra),
        &format!("{table}-host"),
    );
    data::wait_for_lake_offsets(&admin, &path, &ends, Duration::from_secs(180))
        .await
        .unwrap_or_else(|e| panic!("{e}\nhost log:\n{}", host.log()));
    (table, host)
}

fn expected() -> Vec<Value> {
    (0..ROWS).map(row).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_columns_tier_into_paimon_exactly() {
    let c = cluster::lease("paimon");
    let (table, _host) = tier(&c, "paimon").await;
    let lake = paimon::rows(&c.paimon_warehouse, "fluss", &table, None);
    assert_eq!(business(&lake), expected(), "pypaimon");
    let java = paimon::java_read(&c.paimon_warehouse, "fluss", &table, &COLUMN_NAMES);
    let rows: Vec<Value> = java["rows"].as_array().unwrap().clone();
    assert_eq!(business(&rows), expected(), "Java Paimon");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_columns_tier_into_iceberg_exactly() {
    let c = cluster::lease("iceberg");
    let (table, _host) = tier(&c, "iceberg").await;
    let dir = c.iceberg_warehouse.join("fluss").join(&table);
    let lake = iceberg::rows(&dir, None, "pyiceberg");
    let want: Vec<Value> = expected().into_iter().map(as_pyiceberg_reads).collect();
    assert_eq!(business(&lake), want, "pyiceberg");
    let lake = iceberg::rows(&dir, None, "duckdb");
    assert_eq!(business(&lake), expected(), "DuckDB");
    let java = iceberg::java_rows(&dir, &COLUMN_NAMES);
    let rows: Vec<Value> = java["rows"].as_array().unwrap().clone();
    assert_eq!(business(&rows), expected(), "Java Iceberg");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_columns_tier_into_delta_exactly() {
    // Any cluster format that takes nested columns serves: the table names its own plugin.
    let c = cluster::lease("paimon");
    let (table, _host) = tier(&c, "delta").await;
    let dir = c.delta_warehouse.join("fluss").join(&table);
    let commands: Vec<Vec<String>> = READERS
        .iter()
        .map(|reader| delta::rows_command(&dir, None, reader))
        .collect();
    for (reader, lake) in READERS.iter().zip(delta::batch(&commands)) {
        assert_eq!(business(&lake), expected(), "deltalake ({reader})");
    }
}

/// `value` (canonical JSON of a column of type `ty`) as fluss-rs's row writers take it:
/// arrays and maps in Fluss's binary form (`FlussArrayWriter`, `FlussMapWriter`), rows as
/// nested `GenericRow`s. fluss-rs's upsert writer takes rows, not Arrow batches, so this is
/// how a primary-key table gets nested values.
fn datum(value: &Value, ty: &DataType) -> Datum<'static> {
    if value.is_null() {
        return Datum::Null;
    }
    match ty {
        DataType::Int(_) => Datum::Int32(value.as_i64().unwrap() as i32),
        DataType::String(_) => Datum::String(Cow::Owned(value.as_str().unwrap().to_string())),
        DataType::Decimal(t) => {
            let digits: String = value.as_str().unwrap().replace('.', "");
            let unscaled = digits.parse().unwrap();
            Datum::Decimal(Decimal::from_unscaled_long(unscaled, t.precision(), t.scale()).unwrap())
        }
        DataType::Timestamp(_) => {
            let micros = value.as_i64().unwrap();
            let nanos = (micros.rem_euclid(1000) * 1000) as i32;
            Datum::TimestampNtz(
                TimestampNtz::from_millis_nanos(micros.div_euclid(1000), nanos).unwrap(),
            )
        }
        DataType::Array(t) => {
            let items = value.as_array().unwrap();
            let element = t.get_element_type();
            let mut w = FlussArrayWriter::new(items.len(), element);
            for (pos, item) in items.iter().enumerate() {
                match (datum(item, element), element) {
                    (Datum::Null, _) => w.set_null_at(pos),
                    (Datum::Int32(v), _) => w.write_int(pos, v),
                    (Datum::String(v), _) => w.write_string(pos, &v),
                    (Datum::Decimal(v), DataType::Decimal(t)) => {
                        w.write_decimal(pos, &v, t.precision())
                    }
                    (Datum::TimestampNtz(v), DataType::Timestamp(t)) => {
                        w.write_timestamp_ntz(pos, &v, t.precision())
                    }
                    (Datum::Array(v), _) => w.write_array(pos, &v),
                    (Datum::Map(v), _) => w.write_map(pos, &v),
                    (Datum::Row(v), _) => w.write_row(pos, v.as_ref()).unwrap(),
                    (other, _) => panic!("no array element {other:?} of {element:?}"),
                }
            }
            Datum::Array(w.complete().unwrap())
        }
        DataType::Map(t) => {
            let entries = value.as_array().unwrap();
            let mut w = FlussMapWriter::new(entries.len(), t.key_type(), t.value_type());
            for entry in entries {
                let key = datum(&entry[0], t.key_type());
                w.write_entry(key, datum(&entry[1], t.value_type()))
                    .unwrap();
            }
            Datum::Map(w.complete().unwrap())
        }
        DataType::Row(t) => Datum::Row(Box::new(GenericRow {
            values: t
                .fields()
                .iter()
                .map(|f| datum(&value[f.name()], f.data_type()))
                .collect(),
        })),
        other => panic!("no nested test column of type {other:?}"),
    }
}

/// A row of the nested table (canonical JSON) as the upsert writer takes it.
fn generic_row(value: &Value) -> GenericRow<'static> {
    GenericRow {
        values: columns()
            .iter()
            .map(|(name, ty)| datum(&value[*name], ty))
            .collect(),
    }
}

/// Value `v` of key `id`: every nested column null (`v % 8 == 0`), every one an empty
/// collection (1), empties one level down (2: an empty string in a list, a map entry whose
/// value is null, an event with an empty map, a map value that is an empty list), or the log
/// table's row `v` (nulls at every level by `v`), so successive values of a key go to and
/// from null at every level.
fn pk_row(id: u64, v: u64) -> Value {
    let mut value = match v % 8 {
        0 => json!({"tags": null, "nums": null, "attrs": null, "point": null, "events": null}),
        1 => {
            json!({"tags": [], "nums": [], "attrs": [], "point": {"x": null, "y": ""}, "events": []})
        }
        2 => json!({
            "tags": [""], "nums": [0], "attrs": [["", null]], "point": {"x": 0, "y": ""},
            "events": [{"at": null, "labels": []}, {"at": 0, "labels": [["k", []], ["z", null]]}],
        }),
        _ => row(v as i64),
    };
    value["id"] = json!(id);
    value
}

/// What the rounds did to existing keys, so that the test is known to cover what it claims.
#[derive(Debug, Default)]
struct Coverage {
    updated: usize,
    to_null: usize,
    from_null: usize,
    to_empty: usize,
    deleted: usize,
    reinserted: usize,
}

/// Rounds of writes to the primary-key table: round 0 inserts every key once (inserts only:
/// no deletes in the lake, so pyiceberg reads it too), later rounds upsert random keys with
/// random values ([`pk_row`]; a key may change several times in a round) and delete some.
/// `model` is what the table must then hold.
struct Writes {
    rng: Rng,
    model: BTreeMap<u64, Value>,
    deleted: BTreeSet<u64>,
    coverage: Coverage,
}

impl Writes {
    fn round(&mut self, round: usize, writer: &fluss::client::UpsertWriter) {
        if round == 0 {
            for id in 0..KEYS {
                self.upsert(writer, pk_row(id, id));
            }
            return;
        }
        for _ in 0..400 {
            let id = self.rng.below(KEYS);
            if self.rng.below(6) == 0 {
                let key = json!({"id": id});
                writer.delete(&generic_row(&key)).unwrap();
                if self.model.remove(&id).is_some() {
                    self.deleted.insert(id);
                    self.coverage.deleted += 1;
                }
            } else {
                let v = self.rng.below(1 << 20);
                self.upsert(writer, pk_row(id, v));
            }
        }
    }

    fn upsert(&mut self, writer: &fluss::client::UpsertWriter, value: Value) {
        writer.upsert(&generic_row(&value)).unwrap();
        let id = value["id"].as_u64().unwrap();
        let c = &mut self.coverage;
        match self.model.get(&id) {
            Some(old) => {
                c.updated += 1;
                for name in &COLUMN_NAMES[1..] {
                    let (old, new) = (&old[*name], &value[*name]);
                    c.to_null += usize::from(!old.is_null() && new.is_null());
                    c.from_null += usize::from(old.is_null() && !new.is_null());
                    c.to_empty += usize::from(*new == json!([]) && old != new);
                }
            }
            None => c.reinserted += usize::from(self.deleted.contains(&id)),
        }
        self.model.insert(id, value);
    }

    fn expected(&self) -> Vec<Value> {
        self.model.values().cloned().collect()
    }
}

/// The nested columns as primary-key table columns: `id` the key, two buckets.
fn pk_descriptor() -> TableDescriptor {
    let mut schema = Schema::builder();
    for (name, ty) in columns() {
        schema = schema.column(name, ty);
    }
    let schema = schema.primary_key(vec!["id"]).unwrap().build().unwrap();
    TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s")
        .build()
        .unwrap()
}

const ROUNDS: usize = 3;

/// One primary-key table of the nested columns on one `format` cluster, one host: after
/// every round the lake's merged read equals Fluss's lookup of every key
/// (`assert_lake_reads_as_fluss`: pypaimon, Java Iceberg), which equals the model of what was
/// written; `more_readers` checks the format's other readers against the same rows.
async fn run_pk(format: &str, more_readers: impl Fn(&cluster::Lease, &TablePath, usize, &[Value])) {
    let c = cluster::lease(format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name(&format!("nested_pk_{format}")));
    data::create_table(&admin, &path, &pk_descriptor()).await;
    let writer = data::upsert_writer(&conn, &path).await;
    let h = spawn_host(&c, format, &format!("{}-host", path.table()), &[]);
    let mut writes = Writes {
        rng: Rng(0x9e57_ed0b_1c75),
        model: BTreeMap::new(),
        deleted: BTreeSet::new(),
        coverage: Coverage::default(),
    };
    for round in 0..ROUNDS {
        writes.round(round, &writer);
        writer.flush().await.unwrap();
        let what = format!("{} round {round}", path.table());
        let fluss =
            assert_lake_reads_as_fluss(&c, &conn, &admin, format, &path, &COLUMN_NAMES, &what, &h)
                .await;
        assert_eq!(
            fluss,
            writes.expected(),
            "{what}: Fluss's lookups differ from the rows written"
        );
        more_readers(&c, &path, round, &fluss);
    }
    let c = &writes.coverage;
    eprintln!("{}: {c:?}", path.table());
    assert!(
        c.updated > 0
            && c.to_null > 0
            && c.from_null > 0
            && c.to_empty > 0
            && c.deleted > 0
            && c.reinserted > 0,
        "the rounds cover less than they claim: {c:?}"
    );
}

/// Paimon: pypaimon (in `assert_lake_reads_as_fluss`) and Java Paimon merge the KV files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_primary_key_upserts_and_deletes_read_merged_from_paimon() {
    run_pk("paimon", |c, path, round, fluss| {
        let java = paimon::java_read(&c.paimon_warehouse, "fluss", path.table(), &COLUMN_NAMES);
        let rows: Vec<Value> = java["rows"].as_array().unwrap().clone();
        assert_eq!(business(&rows), fluss, "round {round}: Java Paimon");
    })
    .await;
}

/// Iceberg: Java Iceberg (in `assert_lake_reads_as_fluss`) and DuckDB apply the equality
/// deletes; pyiceberg, which refuses tables with equality deletes, reads round 0 (inserts
/// only). The last round's snapshots must have held equality deletes, or the rounds did not
/// test them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_primary_key_upserts_and_deletes_read_merged_from_iceberg() {
    run_pk("iceberg", |c, path, round, fluss| {
        let dir = c.iceberg_warehouse.join("fluss").join(path.table());
        let duck = iceberg::rows(&dir, None, "duckdb");
        assert_eq!(business(&duck), fluss, "round {round}: DuckDB");
        if round == 0 {
            let want: Vec<Value> = fluss.iter().cloned().map(as_pyiceberg_reads).collect();
            let py = iceberg::rows(&dir, None, "pyiceberg");
            assert_eq!(business(&py), want, "round 0: pyiceberg");
        }
        if round == ROUNDS - 1 {
            let equality_deletes = iceberg::snapshots(&dir)
                .iter()
                .filter_map(|s| {
                    s["summary"]["total-equality-deletes"]
                        .as_str()?
                        .parse()
                        .ok()
                })
                .max()
                .unwrap_or(0u64);
            assert!(equality_deletes > 0, "no snapshot held equality deletes");
        }
    })
    .await;
}
