//! Test tables and rows: Fluss DDL, deterministic Arrow batches to append, and the same rows
//! in the canonical JSON form the Python readers print, so lake contents can be compared
//! with what was written, value for value.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array,
    Int32Array, Int64Array, LargeBinaryArray, ListArray, MapArray, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema, TimeUnit};
use fluss::client::{FlussAdmin, FlussConnection};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::rpc::message::OffsetSpec;
use serde_json::{Value, json};

/// The columns of the standard test table: one of every type the issue names.
pub fn all_types_schema() -> Schema {
    all_types_schema_with(&[])
}

/// The standard columns followed by extra STRING columns (partition keys).
pub fn all_types_schema_with(extra_string_columns: &[&str]) -> Schema {
    let mut b = Schema::builder()
        .column("id", DataTypes::int())
        .column("seq", DataTypes::bigint())
        .column("name", DataTypes::string())
        .column("price", DataTypes::double())
        .column("flag", DataTypes::boolean())
        .column("ts", DataTypes::timestamp_with_precision(6))
        .column("day", DataTypes::date())
        .column("amount", DataTypes::decimal(10, 2));
    for c in extra_string_columns {
        b = b.column(*c, DataTypes::string());
    }
    b.build().expect("valid schema")
}

pub fn arrow_schema() -> Arc<ArrowSchema> {
    Arc::new(ArrowSchema::new(vec![
        Field::new("id", ArrowType::Int32, true),
        Field::new("seq", ArrowType::Int64, true),
        Field::new("name", ArrowType::Utf8, true),
        Field::new("price", ArrowType::Float64, true),
        Field::new("flag", ArrowType::Boolean, true),
        Field::new(
            "ts",
            ArrowType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
        Field::new("day", ArrowType::Date32, true),
        Field::new("amount", ArrowType::Decimal128(10, 2), true),
    ]))
}

/// A lake-enabled log table with `buckets` buckets; `bucket_key` is optional.
pub fn lake_log_table(buckets: i32, bucket_key: Option<&str>, freshness: &str) -> TableDescriptor {
    lake_partitioned_log_table(buckets, bucket_key, freshness, &[])
}

/// [`lake_log_table`] bucketed by `id`, with one custom property (`lake.plugin`,
/// `evil.mode`, …): it routes or configures the table without being a Fluss option.
pub fn lake_log_table_with(
    buckets: i32,
    freshness: &str,
    key: &str,
    value: &str,
) -> TableDescriptor {
    let base = lake_log_table(buckets, Some("id"), freshness);
    let mut builder = TableDescriptor::builder()
        .schema(base.schema().clone())
        .distributed_by(Some(buckets), vec!["id".to_string()])
        .custom_property(key, value);
    for (k, v) in base.properties() {
        builder = builder.property(k.clone(), v.clone());
    }
    builder.build().unwrap()
}

/// A lake-enabled primary-key table `id INT` (the key), `ver BIGINT`, `name STRING` of `buckets`
/// buckets by `id`, freshness 2 s.
pub fn lake_pk_table(buckets: i32) -> TableDescriptor {
    let schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("ver", DataTypes::bigint())
        .column("name", DataTypes::string())
        .primary_key(vec!["id"])
        .unwrap()
        .build()
        .unwrap();
    TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(buckets), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", "2s")
        .build()
        .unwrap()
}

/// A lake-enabled log table partitioned by the given STRING columns (appended to the
/// standard columns); no partition columns gives a non-partitioned table.
pub fn lake_partitioned_log_table(
    buckets: i32,
    bucket_key: Option<&str>,
    freshness: &str,
    partition_keys: &[&str],
) -> TableDescriptor {
    let mut builder = TableDescriptor::builder()
        .schema(all_types_schema_with(partition_keys))
        .distributed_by(
            Some(buckets),
            bucket_key.map(|k| vec![k.to_string()]).unwrap_or_default(),
        )
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", freshness);
    if !partition_keys.is_empty() {
        builder = builder.partitioned_by(partition_keys.to_vec());
    }
    builder.build().expect("valid descriptor")
}

/// Creates `path` (and its database, if missing) without waiting for its leaders.
async fn create_table_only(admin: &FlussAdmin, path: &TablePath, descriptor: &TableDescriptor) {
    if !admin.database_exists(path.database()).await.unwrap() {
        admin
            .create_database(path.database(), None, true)
            .await
            .unwrap();
    }
    admin.create_table(path, descriptor, false).await.unwrap();
}

/// Sets a table's `table.datalake.freshness` (when it is next due for tiering).
pub async fn set_freshness(
    admin: &FlussAdmin,
    path: &TablePath,
    freshness: &str,
) -> Result<(), fluss::error::Error> {
    use fluss::metadata::{AlterConfig, AlterConfigOpType, AlterTableChanges};
    let changes = AlterTableChanges {
        config_changes: vec![AlterConfig::new(
            "table.datalake.freshness",
            Some(freshness.to_string()),
            AlterConfigOpType::Set,
        )],
        ..Default::default()
    };
    admin.alter_table(path, false, changes).await
}

pub async fn create_table(admin: &FlussAdmin, path: &TablePath, descriptor: &TableDescriptor) {
    create_table_only(admin, path, descriptor).await;
    // Wait until every bucket has a leader that serves offsets (partitions: see
    // `create_partition`).
    if descriptor.is_partitioned() {
        return;
    }
    // A cluster busy with other tests' tables can take a while to elect every leader. And
    // Fluss 0.9.1's coordinator can miss the ZooKeeper event of a table created while the
    // tables of the lease before are being deleted: it registers the table and never elects
    // its buckets' leaders (seen in full runs of the suite: its log has no "New table" line
    // for it). Its coordinator is then started again, which elects the leaders of every table
    // it finds in ZooKeeper. (Dropping the table and creating it again does not do: Fluss
    // keeps the lake table of the first creation, which Iceberg's catalog then refuses as
    // "The lake table already exists".) This is the test's setup, not what is under test.
    if let Err(e) = served_within(admin, path, Duration::from_secs(90)).await {
        restart_coordinator_that_missed(admin, &e).await;
        wait_until_served(admin, path, Duration::from_secs(180)).await;
    }
}

/// Creates `paths` with one descriptor, one at a time (Fluss 0.9.1's coordinator misses
/// tables more often when they are created concurrently), then waits until every one is
/// served. The coordinator misses about one table in a few hundred ([`create_table`]): the
/// tables it missed are elected by one restart of the coordinator for them all, instead of
/// a 90 s wait and a restart for each, and every table is served again before this returns.
pub async fn create_tables(admin: &FlussAdmin, paths: &[TablePath], descriptor: &TableDescriptor) {
    for path in paths {
        create_table_only(admin, path, descriptor).await;
    }
    if descriptor.is_partitioned() {
        return;
    }
    let mut missed = Vec::new();
    for path in paths {
        // The first tables had the others' creation time to be elected; once one is missing,
        // the coordinator restarts anyway, so the others are only glanced at.
        let budget = Duration::from_secs(if missed.is_empty() { 30 } else { 2 });
        if let Err(e) = served_within(admin, path, budget).await {
            missed.push((path, e));
        }
    }
    if let Some((_, e)) = missed.first() {
        let e = format!("{e} (and {} other table(s))", missed.len() - 1);
        restart_coordinator_that_missed(admin, &e).await;
        // Every table: until the new coordinator has told the tablet servers of them all,
        // tables served before are "not found" too.
        for path in paths {
            wait_until_served(admin, path, Duration::from_secs(180)).await;
        }
    }
}

/// Starts the coordinator of the test cluster `admin` talks to again: it elects the leaders
/// of every table it finds in ZooKeeper, the ones it missed included ([`create_table`]).
async fn restart_coordinator_that_missed(admin: &FlussAdmin, why: &str) {
    let coordinator = admin
        .get_server_nodes()
        .await
        .unwrap()
        .into_iter()
        .find(|n| *n.server_type() == fluss::ServerType::CoordinatorServer)
        .expect("the cluster names its coordinator");
    let index = crate::cluster::index_of_coordinator_port(coordinator.port())
        .unwrap_or_else(|| panic!("{why}; and no test cluster listens on {coordinator:?}"));
    eprintln!("{why}; starting cluster {index}'s coordinator again (one that missed it)");
    tokio::task::spawn_blocking(move || crate::cluster::restart_coordinator(index))
        .await
        .unwrap();
}

/// Rows `first..first+count` of the standard table, deterministic in the row number;
/// every tenth row has nulls in the nullable columns.
pub fn batch(first: i64, count: usize) -> RecordBatch {
    let ids: Vec<i64> = (first..first + count as i64).collect();
    let null = |i: i64| i % 10 == 7;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter(ids.iter().map(|&i| Some(i as i32)))),
        Arc::new(Int64Array::from_iter(
            ids.iter().map(|&i| Some(i * 1_000_003)),
        )),
        Arc::new(StringArray::from_iter(ids.iter().map(|&i| {
            (!null(i)).then(|| format!("name-{i}-{}", "x".repeat((i % 13) as usize)))
        }))),
        Arc::new(Float64Array::from_iter(
            ids.iter()
                .map(|&i| (!null(i)).then_some(i as f64 * 1.25 - 100.5)),
        )),
        Arc::new(BooleanArray::from_iter(
            ids.iter().map(|&i| (!null(i)).then_some(i % 3 == 0)),
        )),
        Arc::new(TimestampMicrosecondArray::from_iter(ids.iter().map(|&i| {
            (!null(i)).then_some(1_700_000_000_000_000 + i * 1_000_001)
        }))),
        Arc::new(Date32Array::from_iter(
            ids.iter()
                .map(|&i| (!null(i)).then_some(19_000 + (i % 2000) as i32)),
        )),
        Arc::new(
            Decimal128Array::from_iter(
                ids.iter()
                    .map(|&i| (!null(i)).then_some((i as i128) * 137 - 50_000)),
            )
            .with_precision_and_scale(10, 2)
            .unwrap(),
        ),
    ];
    RecordBatch::try_new(arrow_schema(), cols).unwrap()
}

/// Appends rows `first..first+count` in batches of `batch_rows`.
pub async fn write_rows(
    conn: &FlussConnection,
    path: &TablePath,
    first: i64,
    count: usize,
    batch_rows: usize,
) {
    write_partition_rows(conn, path, &[], first, count, batch_rows).await;
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Canonical JSON of every row of `batch`, as the readers print them: decimals as strings
/// with exactly `scale` digits, dates as days since the epoch, timestamps as epoch micros,
/// bytes as lowercase hex;
/// lists as arrays, maps as `[[key, value], ...]` in entry order, rows as objects (the SDK's
/// `testing::json_array` form), so Fluss's own reads of nested columns compare with the
/// lake's.
pub fn canonical_rows(batch: &RecordBatch) -> Vec<Value> {
    let schema = batch.schema();
    (0..batch.num_rows())
        .map(|row| {
            let mut obj = serde_json::Map::new();
            for (i, field) in schema.fields().iter().enumerate() {
                obj.insert(field.name().clone(), cell(batch.column(i).as_ref(), row));
            }
            Value::Object(obj)
        })
        .collect()
}

fn cell(col: &dyn Array, row: usize) -> Value {
    if col.is_null(row) {
        return Value::Null;
    }
    let any = col.as_any();
    if let Some(a) = any.downcast_ref::<Int32Array>() {
        return json!(a.value(row));
    }
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        return json!(a.value(row));
    }
    if let Some(a) = any.downcast_ref::<StringArray>() {
        return json!(a.value(row));
    }
    if let Some(a) = any.downcast_ref::<Float64Array>() {
        return json!(a.value(row));
    }
    if let Some(a) = any.downcast_ref::<BooleanArray>() {
        return json!(a.value(row));
    }
    if let Some(a) = any.downcast_ref::<TimestampMicrosecondArray>() {
        return json!(a.value(row));
    }
    if let Some(a) = any.downcast_ref::<Date32Array>() {
        return json!(a.value(row));
    }
    if let Some(a) = any.downcast_ref::<Decimal128Array>() {
        return json!(a.value_as_string(row));
    }
    if let Some(a) = any.downcast_ref::<BinaryArray>() {
        return json!(hex(a.value(row)));
    }
    if let Some(a) = any.downcast_ref::<LargeBinaryArray>() {
        return json!(hex(a.value(row)));
    }
    if let Some(a) = any.downcast_ref::<ListArray>() {
        let items = a.value(row);
        return (0..items.len()).map(|i| cell(items.as_ref(), i)).collect();
    }
    if let Some(a) = any.downcast_ref::<MapArray>() {
        let entries = a.value(row);
        let (keys, values) = (entries.column(0), entries.column(1));
        return (0..entries.len())
            .map(|i| json!([cell(keys.as_ref(), i), cell(values.as_ref(), i)]))
            .collect();
    }
    if let Some(a) = any.downcast_ref::<StructArray>() {
        let fields = a.fields().iter().zip(a.columns());
        return fields
            .map(|(f, c)| (f.name().clone(), cell(c.as_ref(), row)))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    panic!("unsupported test column type {:?}", col.data_type());
}

/// Sorts rows by their `id`, for order-insensitive comparison.
pub fn sorted_by_id(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|r| r["id"].as_i64().unwrap());
    rows
}

/// Polls Fluss until its latest lake snapshot covers `expected` (bucket → end offset) of a
/// non-partitioned table; returns the snapshot id and the offsets it holds.
pub async fn wait_for_lake_offsets(
    admin: &FlussAdmin,
    path: &TablePath,
    expected: &HashMap<i32, i64>,
    timeout: Duration,
) -> Result<(i64, HashMap<i32, i64>), String> {
    let all: HashMap<(Option<i64>, i32), i64> =
        expected.iter().map(|(b, o)| ((None, *b), *o)).collect();
    let snapshot = wait_for_all_lake_offsets(admin, path, &all, timeout).await?;
    let offsets = admin
        .get_latest_lake_snapshot(path)
        .await
        .map_err(|e| e.to_string())?
        .table_buckets_offset
        .iter()
        .map(|(tb, o)| (tb.bucket_id(), *o))
        .collect();
    Ok((snapshot, offsets))
}

/// The high watermark of every bucket.
pub async fn log_end_offsets(
    admin: &FlussAdmin,
    path: &TablePath,
    buckets: i32,
) -> HashMap<i32, i64> {
    admin
        .list_offsets(path, &(0..buckets).collect::<Vec<_>>(), OffsetSpec::Latest)
        .await
        .unwrap()
}

/// Rows of the standard table plus constant partition columns `(name, value)`.
pub fn partitioned_batch(first: i64, count: usize, partition: &[(&str, &str)]) -> RecordBatch {
    let base = batch(first, count);
    if partition.is_empty() {
        return base;
    }
    let mut fields: Vec<Field> = base
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut cols: Vec<ArrayRef> = base.columns().to_vec();
    for (name, value) in partition {
        fields.push(Field::new(*name, ArrowType::Utf8, true));
        cols.push(Arc::new(StringArray::from(vec![*value; count])));
    }
    RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), cols).unwrap()
}

/// Appends rows `first..first+count` of one partition in batches of `batch_rows`.
pub async fn write_partition_rows(
    conn: &FlussConnection,
    path: &TablePath,
    partition: &[(&str, &str)],
    first: i64,
    count: usize,
    batch_rows: usize,
) {
    let table = conn.get_table(path).await.unwrap();
    let writer = table.new_append().unwrap().create_writer().unwrap();
    let mut done = 0;
    while done < count {
        let n = batch_rows.min(count - done);
        writer
            .append_arrow_batch(partitioned_batch(first + done as i64, n, partition))
            .unwrap();
        done += n;
    }
    writer.flush().await.unwrap();
}

/// Creates a partition and waits until its buckets serve offsets; returns its name.
pub async fn create_partition(
    admin: &FlussAdmin,
    path: &TablePath,
    partition: &[(&str, &str)],
) -> String {
    let spec = fluss::metadata::PartitionSpec::new(
        partition
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<HashMap<_, _>>(),
    );
    admin.create_partition(path, &spec, false).await.unwrap();
    let name = partition
        .iter()
        .map(|(_, v)| *v)
        .collect::<Vec<_>>()
        .join("$");
    let buckets: Vec<i32> =
        (0..admin.get_table_info(path).await.unwrap().get_num_buckets()).collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while admin
        .list_partition_offsets(path, &name, &buckets, OffsetSpec::Latest)
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "partition {name} of {path} never became ready"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    name
}

/// Waits until every bucket of the (unpartitioned) table `path` has a leader that answers
/// for its offsets: after a table is created, or after a tablet server restarts, its buckets
/// are led only once the coordinator has elected them (tens of seconds on a loaded machine),
/// and a writer created before that can wait for an answer that never comes.
pub async fn wait_until_served(admin: &FlussAdmin, path: &TablePath, timeout: Duration) {
    if let Err(e) = served_within(admin, path, timeout).await {
        panic!("{e}");
    }
}

/// [`wait_until_served`] that says why the table was not served instead of failing.
async fn served_within(
    admin: &FlussAdmin,
    path: &TablePath,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        // Each ask bounded too: an ask sent to a server that is not up yet may never answer.
        let asked = tokio::time::timeout(Duration::from_secs(10), async {
            let buckets: Vec<i32> =
                (0..admin.get_table_info(path).await?.get_num_buckets()).collect();
            admin.list_offsets(path, &buckets, OffsetSpec::Latest).await
        })
        .await;
        let e = match asked {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "no answer within 10 s".to_string(),
        };
        if std::time::Instant::now() >= deadline {
            return Err(format!("{path} was not served within {timeout:?}: {e}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A writer of upserts and deletes to the primary-key table `path`.
pub async fn upsert_writer(
    conn: &FlussConnection,
    path: &TablePath,
) -> fluss::client::UpsertWriter {
    conn.get_table(path)
        .await
        .unwrap()
        .new_upsert()
        .unwrap()
        .create_writer()
        .unwrap()
}

/// Every (partition id, bucket) → high watermark of a table (all partitions, or the table).
pub async fn all_log_end_offsets(
    admin: &FlussAdmin,
    path: &TablePath,
) -> HashMap<(Option<i64>, i32), i64> {
    try_all_log_end_offsets(admin, path).await.unwrap()
}

/// [`all_log_end_offsets`], failing when Fluss does not answer (a bucket whose leader died and
/// has no new one yet) instead of panicking.
pub async fn try_all_log_end_offsets(
    admin: &FlussAdmin,
    path: &TablePath,
) -> fluss::error::Result<HashMap<(Option<i64>, i32), i64>> {
    let info = admin.get_table_info(path).await?;
    let buckets: Vec<i32> = (0..info.get_num_buckets()).collect();
    let mut out = HashMap::new();
    if info.is_partitioned() {
        for p in admin.list_partition_infos(path).await? {
            let offsets = admin
                .list_partition_offsets(path, &p.get_partition_name(), &buckets, OffsetSpec::Latest)
                .await?;
            for (b, o) in offsets {
                out.insert((Some(p.get_partition_id()), b), o);
            }
        }
    } else {
        for (b, o) in admin
            .list_offsets(path, &buckets, OffsetSpec::Latest)
            .await?
        {
            out.insert((None, b), o);
        }
    }
    Ok(out)
}

/// Polls Fluss until its latest lake snapshot covers `expected` ((partition, bucket) → end
/// offset; buckets with end offset 0 need no entry). Returns the snapshot id.
pub async fn wait_for_all_lake_offsets(
    admin: &FlussAdmin,
    path: &TablePath,
    expected: &HashMap<(Option<i64>, i32), i64>,
    timeout: Duration,
) -> Result<i64, String> {
    let deadline = std::time::Instant::now() + timeout;
    let mut last = String::from("no lake snapshot yet");
    while std::time::Instant::now() < deadline {
        match admin.get_latest_lake_snapshot(path).await {
            Ok(s) => {
                let got = snapshot_offsets(&s);
                if expected
                    .iter()
                    .all(|(k, o)| *o == 0 || got.get(k) == Some(o))
                {
                    return Ok(s.snapshot_id);
                }
                last = format!("snapshot {} has offsets {got:?}", s.snapshot_id);
            }
            Err(e) => last = format!("{e}"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("lake never reached offsets {expected:?}: {last}"))
}

/// A lake snapshot's offsets: (partition id, bucket) → the offset the lake holds up to.
pub fn snapshot_offsets(s: &fluss::metadata::LakeSnapshot) -> HashMap<(Option<i64>, i32), i64> {
    s.table_buckets_offset
        .iter()
        .map(|(tb, o)| ((tb.partition_id(), tb.bucket_id()), *o))
        .collect()
}
