//! Primary-key tables with Fluss 0.9's `aggregation` merge engine, tiered into Paimon and
//! Iceberg over rounds of upserts that repeat keys and hold nulls: after every round Fluss's
//! lookup (`Lookuper`) of every key equals the aggregates a model of the functions computes
//! from the same inputs (so the table really aggregates), and the lake's merged read equals
//! Fluss's lookup.
//!
//! fluss-rs cannot declare a column's aggregate function, so the tables are created by Fluss's
//! own Java client (`tests/java/AggregationTables.java`, with the 0.9.1 jars `cluster/setup.sh`
//! installs); the upserts go through fluss-rs, each row being the input the server aggregates.
//! Every function of 0.9.1 is used once (bitmaps for `rbm32`/`rbm64` are serialized by the
//! RoaringBitmap the server ships).
//!
//! What 0.9.1 does with such a table: the KV tablet merges each upsert into the stored row
//! with the column's function and logs the result as full rows (`+I` for a new key, then
//! `-U` old aggregate / `+U` new aggregate; FULL changelog image is required), deletes are
//! ignored unless `table.delete.behavior = allow`, which logs `-D` of the whole row. The
//! coordinator creates the lake table without any aggregate: a Paimon primary-key table with
//! the default `deduplicate` engine (`changelog-producer = input`, the Fluss options under
//! `fluss.`), an Iceberg merge-on-read table. So the newest change of a key in the lake is the
//! aggregate Fluss serves, and the plugins tier (and compact) it as any primary-key table.
//!
//! Two tables per format: deletes ignored (the default), and deletes allowed with
//! `table.datalake.auto-compaction` (Paimon with `num-sorted-run.compaction-trigger = 2`),
//! read once more after a compaction has been committed.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fluss::client::UpsertWriter;
use fluss::metadata::TablePath;
use fluss::row::{Decimal, GenericRow};
use fluss_lake_e2e::cluster::ClusterInfo;
use fluss_lake_e2e::host::HostProcess;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{Rng, cluster, data, iceberg, java, repo_root, unique_name};
use serde_json::{Value, json};

use super::merge_engines::{BUCKETS, KEYS, assert_lake_reads_as_fluss, spawn_host};

/// The value columns after the key `id INT`: name, Fluss type, aggregate function
/// (`function[:delimiter]`; empty: none declared, the engine's `last_value_ignore_nulls`).
const COLUMNS: [(&str, &str, &str); 17] = [
    ("sum_big", "BIGINT", "sum"),
    ("sum_dec", "DECIMAL(12, 2)", "sum"),
    ("product_big", "BIGINT", "product"),
    ("max_dbl", "DOUBLE", "max"),
    ("min_int", "INT", "min"),
    ("max_str", "STRING", "max"),
    ("last_str", "STRING", "last_value"),
    ("last_nn_big", "BIGINT", "last_value_ignore_nulls"),
    ("default_str", "STRING", ""),
    ("first_str", "STRING", "first_value"),
    ("first_nn_int", "INT", "first_value_ignore_nulls"),
    ("listagg_str", "STRING", "listagg:|"),
    ("string_agg_str", "STRING", "string_agg"),
    ("and_bool", "BOOLEAN", "bool_and"),
    ("or_bool", "BOOLEAN", "bool_or"),
    ("rbm32_bytes", "BYTES", "rbm32"),
    ("rbm64_bytes", "BYTES", "rbm64"),
];

/// Distinct bitmaps of each width an input picks from.
const BITMAPS: usize = 8;

/// A value of the model: an input, or an aggregate. `Bits` holds the indices of the bitmaps
/// an `rbm` column has seen.
#[derive(Clone, Debug, PartialEq)]
enum Cell {
    Null,
    Int(i32),
    Big(i64),
    /// DECIMAL(12, 2), unscaled.
    Dec(i64),
    Dbl(f64),
    Str(String),
    Bool(bool),
    Bits(BTreeSet<usize>),
}

/// One upsert's value of a column: null one time in five.
fn input(rng: &mut Rng, ty: &str, function: &str, round: usize) -> Cell {
    if rng.below(5) == 0 {
        return Cell::Null;
    }
    match (ty, function) {
        ("INT", _) => Cell::Int(rng.below(100_000) as i32 - 50_000),
        ("BIGINT", "product") => Cell::Big([-1, 1, 2, 3][rng.below(4) as usize]),
        ("BIGINT", _) => Cell::Big(rng.below(2_000) as i64 - 500),
        ("DECIMAL(12, 2)", _) => Cell::Dec(rng.below(100_000) as i64),
        // Multiples of 1/8: exact in binary, so every reader prints the same number.
        ("DOUBLE", _) => Cell::Dbl(rng.below(80_000) as f64 / 8.0 - 2_000.0),
        ("STRING", _) => Cell::Str(format!("r{round}-{}", rng.below(1_000))),
        // Mostly true for AND, mostly false for OR, so that both results occur.
        ("BOOLEAN", "bool_and") => Cell::Bool(rng.below(12) != 0),
        ("BOOLEAN", _) => Cell::Bool(rng.below(12) == 0),
        ("BYTES", _) => Cell::Bits(BTreeSet::from([rng.below(BITMAPS as u64) as usize])),
        _ => panic!("no input for {ty} {function}"),
    }
}

fn compare(a: &Cell, b: &Cell) -> Ordering {
    match (a, b) {
        (Cell::Int(a), Cell::Int(b)) => a.cmp(b),
        (Cell::Big(a), Cell::Big(b)) | (Cell::Dec(a), Cell::Dec(b)) => a.cmp(b),
        (Cell::Dbl(a), Cell::Dbl(b)) => a.partial_cmp(b).unwrap(),
        // Fluss compares strings by their UTF-8 bytes, as Rust does.
        (Cell::Str(a), Cell::Str(b)) => a.cmp(b),
        _ => panic!("cannot compare {a:?} and {b:?}"),
    }
}

/// `acc` aggregated with `input` by `function`, as Fluss 0.9.1's field aggregators do. A key's
/// first row is stored as it comes, which is this fold from an all-null row.
fn agg(function: &str, acc: Cell, input: Cell) -> Cell {
    use Cell::*;
    let (name, delimiter) = function.split_once(':').unwrap_or((function, ","));
    match (name, acc, input) {
        ("last_value", _, i) => i,
        // Every other function keeps the aggregate on a null input, and takes the first
        // non-null input as it is (first_value too: a null aggregate is replaced).
        (_, a, Null) => a,
        (_, Null, i) => i,
        ("sum", Big(a), Big(b)) => Big(a.wrapping_add(b)),
        ("sum", Dec(a), Dec(b)) => Dec(a + b),
        ("product", Big(a), Big(b)) => Big(a.wrapping_mul(b)),
        ("max", a, b) => {
            if compare(&a, &b) == Ordering::Less {
                b
            } else {
                a
            }
        }
        ("min", a, b) => {
            if compare(&a, &b) == Ordering::Greater {
                b
            } else {
                a
            }
        }
        ("" | "last_value_ignore_nulls", _, i) => i,
        ("first_value" | "first_value_ignore_nulls", a, _) => a,
        ("listagg" | "string_agg", Str(a), Str(b)) => Str(format!("{a}{delimiter}{b}")),
        ("bool_and", Bool(a), Bool(b)) => Bool(a && b),
        ("bool_or", Bool(a), Bool(b)) => Bool(a || b),
        ("rbm32" | "rbm64", Bits(a), Bits(b)) => Bits(a.union(&b).copied().collect()),
        (f, a, b) => panic!("{f} of {a:?} and {b:?}"),
    }
}

/// The canonical JSON of a model value; a bitmap as `"bitmap"` (see [`comparable`]).
fn json(cell: &Cell) -> Value {
    match cell {
        Cell::Null => Value::Null,
        Cell::Int(v) => json!(v),
        Cell::Big(v) => json!(v),
        Cell::Dec(v) => {
            let sign = if *v < 0 { "-" } else { "" };
            json!(format!("{sign}{}.{:02}", v.abs() / 100, v.abs() % 100))
        }
        Cell::Dbl(v) => json!(v),
        Cell::Str(v) => json!(v),
        Cell::Bool(v) => json!(v),
        Cell::Bits(_) => json!("bitmap"),
    }
}

/// A row with its BYTES values replaced by `"bitmap"`: the model knows which bitmaps a key
/// has seen, not the bytes Fluss serializes their union to (the lake is compared with Fluss
/// on the bytes themselves).
fn comparable(row: &Value) -> Value {
    let mut row = row.clone();
    for (name, ty, _) in COLUMNS {
        if ty == "BYTES" && !row[name].is_null() {
            row[name] = json!("bitmap");
        }
    }
    row
}

/// The model's rows, as [`comparable`] Fluss rows.
fn model_rows(model: &BTreeMap<i32, Vec<Cell>>) -> Vec<Value> {
    model
        .iter()
        .map(|(id, cells)| {
            let mut row = serde_json::Map::new();
            row.insert("id".into(), json!(id));
            for ((name, _, _), cell) in COLUMNS.iter().zip(cells) {
                row.insert(name.to_string(), json(cell));
            }
            Value::Object(row)
        })
        .collect()
}

/// The serialized bitmaps inputs pick from, per width.
struct Bitmaps {
    rbm32: Vec<Vec<u8>>,
    rbm64: Vec<Vec<u8>>,
}

/// `cell` set in `row` at `pos`, the value of a column of `function`.
fn set(row: &mut GenericRow<'_>, pos: usize, function: &str, cell: &Cell, bitmaps: &Bitmaps) {
    match cell {
        Cell::Null => {}
        Cell::Int(v) => row.set_field(pos, *v),
        Cell::Big(v) => row.set_field(pos, *v),
        Cell::Dec(v) => row.set_field(pos, Decimal::from_unscaled_long(*v, 12, 2).unwrap()),
        Cell::Dbl(v) => row.set_field(pos, *v),
        Cell::Str(v) => row.set_field(pos, v.clone()),
        Cell::Bool(v) => row.set_field(pos, *v),
        Cell::Bits(set) => {
            let i = *set.iter().next().unwrap();
            let bytes = if function == "rbm32" {
                &bitmaps.rbm32[i]
            } else {
                &bitmaps.rbm64[i]
            };
            row.set_field(pos, bytes.clone());
        }
    }
}

/// One aggregation table of the test.
struct Table {
    name: String,
    path: TablePath,
    /// `table.delete.behavior = allow`: a delete removes the key (else deletes are ignored).
    deletes: bool,
    /// `table.datalake.auto-compaction`.
    compacted: bool,
    /// Table and custom properties beyond the engine and `table.datalake.enabled`.
    properties: Vec<(&'static str, &'static str)>,
}

/// The jars of Fluss's Java client, and the Fluss server's (for its shaded RoaringBitmap).
fn java_classpath() -> Vec<PathBuf> {
    let dist = repo_root().join("target/fluss-dist");
    let mut cp = java::jars(&[dist.join("lib-client")], |_| true, "cluster/setup.sh");
    cp.sort();
    assert!(
        cp.iter()
            .any(|p| p.to_string_lossy().contains("fluss-client")),
        "the Fluss client jar is missing: run cluster/setup.sh (WITH_CLIENT=1)"
    );
    cp.extend(java::jars(
        &[dist.join("lib")],
        |name| name.starts_with("fluss-server"),
        "cluster/setup.sh",
    ));
    cp
}

/// Creates the tables with Fluss's Java client; returns what the server reports of each
/// (TableInfo, by table name) and the serialized bitmaps.
fn create_tables(c: &ClusterInfo, tables: &[Table]) -> (BTreeMap<String, Value>, Bitmaps) {
    let columns: Vec<String> = std::iter::once("id:INT".to_string())
        .chain(COLUMNS.iter().map(|(n, t, f)| format!("{n}:{t}:{f}")))
        .collect();
    let mut args: Vec<String> = vec![
        c.bootstrap.clone(),
        "fluss".into(),
        BUCKETS.to_string(),
        columns.join(";"),
        BITMAPS.to_string(),
    ];
    for t in tables {
        let props: Vec<String> = t
            .properties
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        args.push(
            std::iter::once(t.name.clone())
                .chain(props)
                .collect::<Vec<_>>()
                .join(";"),
        );
    }
    let args: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
    let refs: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    let mut out = java::run_check("AggregationTables", &java_classpath(), &refs);
    let last = out.pop().expect("AggregationTables printed nothing");
    let unhex = |v: &Value| -> Vec<Vec<u8>> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let h = h.as_str().unwrap();
                (0..h.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
                    .collect()
            })
            .collect()
    };
    let bitmaps = Bitmaps {
        rbm32: unhex(&last["rbm32"]),
        rbm64: unhex(&last["rbm64"]),
    };
    let infos = out
        .into_iter()
        .map(|v| (v["table"].as_str().unwrap().to_string(), v))
        .collect();
    (infos, bitmaps)
}

/// The server kept every column's aggregate function, the engine, and the delete behavior
/// (which the coordinator sets to `IGNORE` when the table does not say).
fn check_table_info(t: &Table, info: &Value) {
    let columns = info["columns"].as_array().unwrap();
    assert_eq!(columns.len(), 1 + COLUMNS.len(), "{info}");
    assert_eq!(columns[0]["agg"], Value::Null, "{info}");
    for ((name, _, function), column) in COLUMNS.iter().zip(&columns[1..]) {
        let expected = match function.split_once(':') {
            _ if function.is_empty() => Value::Null,
            Some((f, d)) => json!(format!("{f}{{delimiter={d}}}")),
            None => json!(function),
        };
        assert_eq!(column["name"], json!(name), "{info}");
        assert_eq!(column["agg"], expected, "{name}: {info}");
    }
    let properties = &info["properties"];
    assert_eq!(properties["table.merge-engine"], "aggregation", "{info}");
    let deletes = if t.deletes { "allow" } else { "IGNORE" };
    assert_eq!(properties["table.delete.behavior"], deletes, "{info}");
}

/// The lake table the coordinator created holds no aggregate: Paimon's merges as
/// `deduplicate` (no `merge-engine`, no `fields.<c>.aggregate-function`), with input
/// changelog; both carry the Fluss options under `fluss.`.
fn check_lake_table(c: &ClusterInfo, format: &str, t: &Table) {
    let (file, options_key) = if format == "paimon" {
        let dir = c.paimon_warehouse.join(format!("fluss.db/{}", t.name));
        (dir.join("schema/schema-0"), "options")
    } else {
        let dir = c.iceberg_warehouse.join(format!("fluss/{}", t.name));
        (dir.join("metadata/v1.metadata.json"), "properties")
    };
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}: no lake table", file.display()));
    let meta: Value = serde_json::from_str(&text).unwrap();
    let options = meta[options_key].as_object().unwrap();
    assert_eq!(options["fluss.table.merge-engine"], "aggregation", "{text}");
    if format == "paimon" {
        assert_eq!(meta["primaryKeys"], json!(["id"]), "{text}");
        assert_eq!(options["changelog-producer"], "input", "{text}");
        assert!(
            !options
                .keys()
                .any(|k| k == "merge-engine" || k.starts_with("fields.")),
            "{text}"
        );
    } else {
        assert_eq!(options["write.update.mode"], "merge-on-read", "{text}");
    }
}

/// Whether a compaction of the host's has been committed to the lake table.
fn compacted(c: &ClusterInfo, format: &str, t: &Table) -> bool {
    if format == "paimon" {
        let dir = c
            .paimon_warehouse
            .join(format!("fluss.db/{}/snapshot", t.name));
        return std::fs::read_dir(&dir).unwrap().flatten().any(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.starts_with("snapshot-")
                && std::fs::read_to_string(e.path())
                    .ok()
                    .and_then(|s| serde_json::from_str::<Value>(&s).ok())
                    .is_some_and(|s| s["commitKind"] == "COMPACT")
        });
    }
    let dir = c.iceberg_warehouse.join(format!("fluss/{}", t.name));
    iceberg::snapshots(&dir).iter().any(|s| {
        s["operation"] == "replace"
            && s["summary"]["deleted-data-files"]
                .as_str()
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n > 0)
    })
}

async fn run(format: &str) {
    let c = cluster::lease(format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let base = unique_name(&format!("{format}_agg"));
    let mut compaction: Vec<(&str, &str)> = vec![("table.datalake.auto-compaction", "true")];
    if format == "paimon" {
        compaction.push(("paimon.num-sorted-run.compaction-trigger", "2"));
    }
    let freshness = ("table.datalake.freshness", "2s");
    let tables = [
        Table {
            name: base.clone(),
            path: TablePath::new("fluss", base.clone()),
            deletes: false,
            compacted: false,
            properties: vec![freshness],
        },
        Table {
            name: format!("{base}_deletes"),
            path: TablePath::new("fluss", format!("{base}_deletes")),
            deletes: true,
            compacted: true,
            properties: [freshness, ("table.delete.behavior", "allow")]
                .into_iter()
                .chain(compaction)
                .collect(),
        },
    ];
    let (infos, bitmaps) = create_tables(&c, &tables);
    let mut writers: Vec<UpsertWriter> = Vec::new();
    for t in &tables {
        check_table_info(t, &infos[&t.name]);
        check_lake_table(&c, format, t);
        data::wait_until_served(&admin, &t.path, Duration::from_secs(120)).await;
        let table = conn.get_table(&t.path).await.unwrap();
        writers.push(table.new_upsert().unwrap().create_writer().unwrap());
    }
    let h: HostProcess = spawn_host(
        &c,
        format,
        &format!("{format}-aggregation-host"),
        &["--maintenance.idle-interval", "2s"],
    );
    let columns: Vec<&str> = std::iter::once("id")
        .chain(COLUMNS.iter().map(|(n, _, _)| *n))
        .collect();
    let mut models: Vec<BTreeMap<i32, Vec<Cell>>> = vec![BTreeMap::new(); tables.len()];
    let mut rng = Rng(0xa66_0fe9_91e5);
    for round in 0..3 {
        for ((t, writer), model) in tables.iter().zip(&writers).zip(&mut models) {
            for _ in 0..600 {
                let id = rng.below(KEYS) as i32;
                let mut row = GenericRow::new(1 + COLUMNS.len());
                row.set_field(0, id);
                let acc = model
                    .remove(&id)
                    .unwrap_or_else(|| vec![Cell::Null; COLUMNS.len()]);
                let mut next = Vec::with_capacity(COLUMNS.len());
                for (pos, ((_, ty, function), acc)) in COLUMNS.iter().zip(acc).enumerate() {
                    let value = input(&mut rng, ty, function, round);
                    set(&mut row, pos + 1, function, &value, &bitmaps);
                    next.push(agg(function, acc, value));
                }
                model.insert(id, next);
                writer.upsert(&row).unwrap();
            }
            // Deletes: the whole row goes where the table allows them, else they are ignored.
            for _ in 0..40 {
                let id = rng.below(KEYS) as i32;
                let mut row = GenericRow::new(1 + COLUMNS.len());
                row.set_field(0, id);
                writer.delete(&row).unwrap();
                if t.deletes {
                    model.remove(&id);
                }
            }
            writer.flush().await.unwrap();
        }
        for (t, model) in tables.iter().zip(&models) {
            let what = format!("{} round {round}", t.name);
            let fluss =
                assert_lake_reads_as_fluss(&c, &conn, &admin, format, &t.path, &columns, &what, &h)
                    .await;
            let fluss: Vec<Value> = fluss.iter().map(comparable).collect();
            let expected = business(&model_rows(model));
            if let Some((got, want)) = fluss.iter().zip(&expected).find(|(g, w)| g != w) {
                panic!(
                    "{what}: Fluss's lookup is not the aggregate of the inputs:\n got  {got}\n want {want}"
                );
            }
            assert_eq!(fluss.len(), expected.len(), "{what}: keys differ");
        }
    }
    // The compacted table: once a compaction is committed, it still reads as Fluss.
    for t in tables.iter().filter(|t| t.compacted) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !compacted(&c, format, t) {
            assert!(
                Instant::now() < deadline,
                "{}: no compaction committed in 120 s\n{}",
                t.name,
                h.log()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let what = format!("{} after compaction", t.name);
        assert_lake_reads_as_fluss(&c, &conn, &admin, format, &t.path, &columns, &what, &h).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_aggregation_tables_read_as_fluss_looks_them_up() {
    run("paimon").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_aggregation_tables_read_as_fluss_looks_them_up() {
    run("iceberg").await;
}
