//! Schemas that change after a table is made, on the real cluster, read back by independent
//! readers and compared row for row with what was written:
//!
//! - Fluss `ALTER TABLE … ADD COLUMN` (Paimon: Fluss 0.9.1 adds the column to the lake table
//!   itself, before the system columns), log and primary-key tables, with rows of both schema
//!   ids in one round. (Fluss 0.9.1 refuses ADD COLUMN on Iceberg lake tables; the plugin's
//!   handling of the column as Fluss 1.0 adds it is tested at the component level.)
//! - The lake table changed by another engine between rounds (Java Paimon, Java Iceberg,
//!   Fluss #4038): a nullable column added and a column moved keep the table tiered with the
//!   extra column null; a Fluss column dropped from the lake, or retyped there, is one error
//!   per round naming the column, and nothing more is written.
//! - A lake table as Fluss 1.0 creates it (FIP-27, no system columns): the 0.9.1 coordinator
//!   refuses to adopt one, so the test recreates the lake table it made as 1.0 would, before
//!   anything is tiered.

use std::collections::BTreeMap;
use std::time::Duration;

use fluss::client::{AppendWriter, FlussConnection, UpsertWriter};
use fluss::metadata::{
    AddColumn, AlterTableChanges, ColumnPositionType, DataTypes, JsonSerde, Schema,
    TableDescriptor, TablePath,
};
use fluss::row::GenericRow;
use fluss_lake_e2e::lake_check::business;
use fluss_lake_e2e::{cluster, data, host, iceberg, paimon, unique_name};
use serde_json::{Value, json};

const BUCKETS: i32 = 2;

/// What a table is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// Fluss ADD COLUMN `extra` with rows of both schemas before the first round (Paimon).
    FlussAddColumn,
    /// The same on a primary-key table, later rows updating earlier keys (Paimon).
    FlussAddColumnPk,
    /// The lake gains a nullable column `note` and `v` moves to the front, between rounds.
    LakeCompatible,
    /// The lake drops Fluss's column `name` between rounds.
    LakeDropsColumn,
    /// The lake retypes a Fluss column between rounds (Paimon `v` BIGINT to DOUBLE, Iceberg
    /// `id` int promoted to long).
    LakeRetypesColumn,
    /// The lake table is recreated as Fluss 1.0 creates it before anything is tiered.
    Clean,
}

struct Table {
    case: Case,
    path: TablePath,
    /// The rows the lake must read, by id, in the readers' canonical JSON.
    expected: BTreeMap<i64, Value>,
}

fn descriptor(primary_key: bool) -> TableDescriptor {
    let mut schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("name", DataTypes::string())
        .column("v", DataTypes::bigint());
    if primary_key {
        schema = schema.primary_key(vec!["id"]).unwrap();
    }
    TableDescriptor::builder()
        .schema(schema.build().unwrap())
        .distributed_by(Some(BUCKETS), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s")
        .build()
        .unwrap()
}

/// A log table's writer or a primary-key table's.
enum Writer {
    Append(AppendWriter),
    Upsert(UpsertWriter),
}

/// Writes rows `ids` (with `extra` when the table has that column), each acknowledged by
/// Fluss, and records what the lake must read for them.
///
/// Right after an ALTER, a tablet server that has not yet learned the new schema refuses a
/// write of it (`SchemaNotExistException`), which fluss-rs reports only through the row's
/// result: such rows are written again until every one is acknowledged (a refused batch
/// was not appended, so nothing is written twice).
async fn write(conn: &FlussConnection, t: &mut Table, ids: std::ops::Range<i32>, round: u32) {
    let table = conn.get_table(&t.path).await.unwrap();
    let fields = table.get_table_info().get_schema().columns().len();
    let writer = if t.case == Case::FlussAddColumnPk {
        Writer::Upsert(table.new_upsert().unwrap().create_writer().unwrap())
    } else {
        Writer::Append(table.new_append().unwrap().create_writer().unwrap())
    };
    let mut pending: Vec<(i32, Option<String>, i64, Option<String>)> = Vec::new();
    for id in ids {
        let name = (id % 7 != 3).then(|| format!("n{id}-r{round}"));
        let v = id as i64 * 1_000 + round as i64;
        let extra = (fields == 4 && id % 5 != 0).then(|| format!("x{id}"));
        let mut want = json!({"id": id, "name": name, "v": v});
        match t.case {
            Case::FlussAddColumn | Case::FlussAddColumnPk => want["extra"] = json!(extra),
            Case::LakeCompatible => want["note"] = Value::Null,
            _ => {}
        }
        t.expected.insert(id as i64, want);
        pending.push((id, name, v, extra));
    }
    for attempt in 0.. {
        let mut results = Vec::with_capacity(pending.len());
        for (id, name, v, extra) in &pending {
            let mut row = GenericRow::new(fields);
            row.set_field(0, *id);
            if let Some(name) = name {
                row.set_field(1, name.as_str());
            }
            row.set_field(2, *v);
            if let Some(extra) = extra {
                row.set_field(3, extra.as_str());
            }
            results.push(match &writer {
                Writer::Append(w) => w.append(&row).unwrap(),
                Writer::Upsert(w) => w.upsert(&row).unwrap(),
            });
        }
        match &writer {
            Writer::Append(w) => w.flush().await.unwrap(),
            Writer::Upsert(w) => w.flush().await.unwrap(),
        }
        let mut refused = Vec::new();
        for (row, result) in pending.into_iter().zip(results) {
            match result.await {
                Ok(()) => {}
                Err(e) if e.to_string().contains("schema") && attempt < 30 => refused.push(row),
                Err(e) => panic!("{}: row {} was not written: {e}", t.path, row.0),
            }
        }
        if refused.is_empty() {
            return;
        }
        eprintln!(
            "{}: {} rows refused for a schema the server did not know yet, written again",
            t.path,
            refused.len()
        );
        pending = refused;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Fluss `ALTER TABLE … ADD COLUMN extra STRING` (nullable, last: what Fluss allows).
async fn add_fluss_column(conn: &FlussConnection, path: &TablePath) {
    let json = serde_json::to_vec(&DataTypes::string().serialize_json().unwrap()).unwrap();
    let changes = AlterTableChanges {
        add_columns: vec![AddColumn {
            column_name: "extra".into(),
            data_type_json: json,
            comment: None,
            position: ColumnPositionType::Last,
        }],
        ..Default::default()
    };
    let admin = conn.get_admin().unwrap();
    admin.alter_table(path, false, changes).await.unwrap();
}

/// The lake's rows of `t`, by every reader the format's tests use.
fn lake_rows(
    c: &cluster::Lease,
    format: &str,
    t: &Table,
    columns: &[&str],
) -> Vec<(&'static str, Vec<Value>)> {
    let table = t.path.table();
    match format {
        "paimon" => {
            let java = paimon::java_read(&c.paimon_warehouse, "fluss", table, columns);
            vec![
                (
                    "pypaimon",
                    paimon::rows(&c.paimon_warehouse, "fluss", table, None),
                ),
                ("Java Paimon", java["rows"].as_array().unwrap().clone()),
            ]
        }
        _ => {
            let dir = c.iceberg_warehouse.join("fluss").join(table);
            let java = iceberg::java_rows(&dir, columns);
            vec![
                ("pyiceberg", iceberg::rows(&dir, None, "pyiceberg")),
                ("Java Iceberg", java["rows"].as_array().unwrap().clone()),
            ]
        }
    }
}

/// Changes the lake table of `t` with the format's Java library; its columns afterwards.
fn alter_lake(c: &cluster::Lease, format: &str, t: &Table, changes: &[&str]) -> Value {
    match format {
        "paimon" => paimon::java_alter(&c.paimon_warehouse, "fluss", t.path.table(), changes),
        _ => iceberg::java_alter(
            &c.iceberg_warehouse.join("fluss").join(t.path.table()),
            changes,
        ),
    }
}

fn column_names(columns: &Value) -> Vec<String> {
    columns["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

async fn run(format: &str) {
    let c = cluster::lease(format);
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let mut cases = vec![
        Case::LakeCompatible,
        Case::LakeDropsColumn,
        Case::LakeRetypesColumn,
        Case::Clean,
    ];
    if format == "paimon" {
        cases.extend([Case::FlussAddColumn, Case::FlussAddColumnPk]);
    }
    let mut tables = Vec::new();
    for case in cases {
        let name = format!("{format}_{case:?}").to_ascii_lowercase();
        let path = TablePath::new("fluss", unique_name(&name));
        data::create_table(&admin, &path, &descriptor(case == Case::FlussAddColumnPk)).await;
        tables.push(Table {
            case,
            path,
            expected: BTreeMap::new(),
        });
    }
    // Before the host starts: the first round sees everything written here.
    for t in &mut tables {
        match t.case {
            Case::FlussAddColumn | Case::FlussAddColumnPk => {
                write(&conn, t, 0..150, 0).await;
                add_fluss_column(&conn, &t.path).await;
                // Rows of the new schema; the primary-key table's update half the keys.
                let from = if t.case == Case::FlussAddColumnPk {
                    75
                } else {
                    150
                };
                write(&conn, t, from..250, 1).await;
            }
            Case::Clean => {
                let columns = alter_lake(&c, format, t, &["clean"]);
                assert_eq!(column_names(&columns), ["id", "name", "v"], "{columns}");
                write(&conn, t, 0..200, 0).await;
            }
            Case::LakeCompatible | Case::LakeDropsColumn | Case::LakeRetypesColumn => {
                write(&conn, t, 0..200, 0).await
            }
        }
    }
    let h = host::HostProcess::spawn(
        &host::args(
            &c.bootstrap,
            &[host::plugin(format)],
            &["--datalake.format", format],
        ),
        &format!("{format}-schema-changes-host"),
    );
    let tiered = |path: TablePath| {
        let admin = &admin;
        let h = &h;
        async move {
            let ends = data::all_log_end_offsets(admin, &path).await;
            data::wait_for_all_lake_offsets(admin, &path, &ends, Duration::from_secs(180))
                .await
                .unwrap_or_else(|e| panic!("{path}: {e}\nhost log:\n{}", h.log()))
        }
    };
    for t in &tables {
        tiered(t.path.clone()).await;
    }

    // Another engine changes three lake tables between rounds.
    for t in &mut tables {
        match t.case {
            Case::LakeCompatible => {
                let (add, first) = match format {
                    "paimon" => ("add:note:STRING", "first:v"),
                    _ => ("add:note:string", "first:v"),
                };
                let columns = alter_lake(&c, format, t, &[add, first]);
                assert_eq!(column_names(&columns)[0], "v", "{columns}");
                for row in t.expected.values_mut() {
                    row["note"] = Value::Null;
                }
                write(&conn, t, 200..400, 2).await;
            }
            Case::LakeDropsColumn => {
                alter_lake(&c, format, t, &["drop:name"]);
                write(&conn, t, 200..300, 2).await;
            }
            Case::LakeRetypesColumn => {
                let retype = match format {
                    "paimon" => "retype:v:DOUBLE",
                    _ => "retype:id:long",
                };
                alter_lake(&c, format, t, &[retype]);
                write(&conn, t, 200..300, 2).await;
            }
            _ => {}
        }
    }
    let mut incompatible = Vec::new();
    for t in &tables {
        match t.case {
            Case::LakeCompatible => {
                tiered(t.path.clone()).await;
            }
            Case::LakeDropsColumn | Case::LakeRetypesColumn => incompatible.push(t),
            _ => {}
        }
    }
    // The tables whose lake lost or retyped a Fluss column: one error naming it per round,
    // nothing written. Their lake snapshots stay where the first round left them.
    let mut h = h;
    for t in incompatible {
        let before = admin.get_latest_lake_snapshot(&t.path).await.unwrap();
        let needle = match (t.case, format) {
            (Case::LakeDropsColumn, _) => "Fluss column name is not in the",
            (_, "paimon") => "Fluss column v BIGINT does not match Paimon column v DOUBLE",
            _ => "column id: Fluss type INT maps to Iceberg int, but the Iceberg column is long",
        };
        h.wait_for_log_count(needle, 2, Duration::from_secs(120))
            .await;
        let after = admin.get_latest_lake_snapshot(&t.path).await.unwrap();
        assert_eq!(
            after.snapshot_id, before.snapshot_id,
            "{:?}: a snapshot was written",
            t.case
        );
        assert_eq!(
            data::snapshot_offsets(&after),
            data::snapshot_offsets(&before)
        );
    }

    for t in &tables {
        let mut want: Vec<Value> = t.expected.values().cloned().collect();
        if matches!(t.case, Case::LakeDropsColumn | Case::LakeRetypesColumn) {
            // The first round's rows only, as the lake reads them now (without `name`, or
            // Paimon's `v` as a DOUBLE).
            want = want
                .into_iter()
                .filter(|r| r["id"].as_i64().unwrap() < 200)
                .map(|mut r| {
                    if t.case == Case::LakeDropsColumn {
                        r.as_object_mut().unwrap().remove("name");
                    } else if format == "paimon" {
                        r["v"] = json!(r["v"].as_i64().unwrap() as f64);
                    }
                    r
                })
                .collect();
        }
        let columns: Vec<&str> = want[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for (reader, rows) in lake_rows(&c, format, t, &columns) {
            assert_eq!(business(&rows), want, "{:?} read by {reader}", t.case);
            if t.case == Case::Clean {
                assert!(
                    rows.iter().all(|r| r
                        .as_object()
                        .unwrap()
                        .keys()
                        .all(|k| !k.starts_with("__"))),
                    "{reader} reads system columns from a clean table"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paimon_tables_keep_tiering_through_schema_changes() {
    run("paimon").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_keep_tiering_through_schema_changes() {
    run("iceberg").await;
}
