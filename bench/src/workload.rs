//! The workloads of the benchmark: which tables, how much data, written how. Every backlog
//! workload is written with no tiering service running, then handed to one service, so each
//! service starts from the same backlog: the same rows in the same kind of tables.
//!
//! A new lake table becomes due for tiering `table.datalake.freshness` after its creation.
//! Tables are created with a short freshness (so they are due by the time the writing ends)
//! and then altered to a long one, so that a round is never cut short by the freshness in the
//! middle of a backlog: one round per table measures throughput, not round overhead. The
//! steady workload keeps its freshness: it measures exactly that.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use fluss::client::{FlussAdmin, FlussConnection};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss::row::GenericRow;
use fluss_lake_e2e::data;
use futures::StreamExt;
use serde::Serialize;

/// The workloads; sizes are the at `--scale 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// The log-3 rows in one bucket: fewer buckets than cores (Fluss #2915).
    Log1,
    /// A log table of 10M rows (the standard 8 columns), 3 buckets.
    Log3,
    /// The same rows in 12 buckets.
    Log12,
    /// A primary-key table receiving 2M changes: a third of them updates, every 50th a delete.
    Pk,
    /// A log table of 24 partitions × 4 buckets with a small backlog in each (setup cost
    /// dominates).
    Partitioned,
    /// 50 small log tables at once (3 buckets, 20k rows each).
    ManyTables,
    /// A log table of 200 partitions × 8 buckets, 400 rows in each bucket (640k rows): 1,600
    /// splits, where each split's fixed cost dominates.
    Splits,
    /// A writer at a fixed rate for several minutes; freshness percentiles.
    Steady,
    /// 1,000 small lake log tables (1 bucket, 200 rows each): what grows with the tables a
    /// host serves (assignment to first write, heartbeats, memory), not with the rows.
    ScaleTables,
    /// One log table of 50 partitions × 64 buckets, 4 rows per bucket (12,800 rows, 3,200
    /// splits): split generation of one wide table (Fluss #3811: 13 × 800 buckets took
    /// FlussLakeTiering 450–490 s to plan).
    ScaleBuckets,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Log1 => "log-1",
            WorkloadKind::Log3 => "log-3",
            WorkloadKind::Log12 => "log-12",
            WorkloadKind::Pk => "pk",
            WorkloadKind::Partitioned => "partitioned",
            WorkloadKind::ManyTables => "many-tables",
            WorkloadKind::Splits => "splits",
            WorkloadKind::Steady => "steady",
            WorkloadKind::ScaleTables => "scale-tables",
            WorkloadKind::ScaleBuckets => "scale-buckets",
        }
    }

    /// Whether the raw fluss-rs scan rate of the same table is measured too.
    pub fn has_raw_scan(self) -> bool {
        matches!(
            self,
            WorkloadKind::Log1 | WorkloadKind::Log3 | WorkloadKind::Log12
        )
    }
}

/// How big each workload is: the sizes times `scale` (at least a few rows each).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sizes {
    pub log_rows: usize,
    pub pk_changes: usize,
    pub partitions: usize,
    pub rows_per_partition: usize,
    pub tables: usize,
    pub rows_per_table: usize,
    /// Partitions of the splits workload (8 buckets, 3,200 rows each).
    pub split_partitions: usize,
    /// Rows per second of the steady writer.
    pub steady_rate: usize,
    pub steady_seconds: u64,
    /// `table.datalake.freshness` of the steady table.
    pub steady_freshness_s: u64,
    /// Tables of the scale-tables workload (1 bucket, `scale_rows_per_table` rows each).
    pub scale_tables: usize,
    pub scale_rows_per_table: usize,
    /// Partitions of the scale-buckets workload (`scale_buckets` buckets each).
    pub scale_partitions: usize,
    pub scale_buckets: i32,
    /// Rows written into each partition of the scale-buckets table: a few per bucket.
    pub scale_rows_per_partition: usize,
}

impl Sizes {
    pub fn scaled(scale: f64) -> Sizes {
        let n = |full: f64, min: usize| ((full * scale).round() as usize).max(min);
        Sizes {
            log_rows: n(10_000_000.0, 1_000),
            pk_changes: n(2_000_000.0, 300),
            partitions: 24,
            rows_per_partition: n(5_000.0, 50),
            // Fewer tables below scale 1, so a smoke run stays short.
            tables: ((50.0 * scale.min(1.0).sqrt()).round() as usize).max(2),
            rows_per_table: n(20_000.0, 100),
            split_partitions: n(200.0, 4).min(200),
            steady_rate: n(20_000.0, 200),
            steady_seconds: ((180.0 * scale.min(1.0).sqrt()).round() as u64).max(20),
            steady_freshness_s: 10,
            // The count scales, not the rows: these workloads measure per-table and
            // per-bucket costs.
            scale_tables: n(1_000.0, 4),
            scale_rows_per_table: 200,
            scale_partitions: n(50.0, 2),
            scale_buckets: 64,
            scale_rows_per_partition: 64 * 4,
        }
    }
}

/// The freshness tables are created with: due for tiering this long after creation.
const CREATE_FRESHNESS: Duration = Duration::from_secs(2);
/// The freshness a backlog table gets once due: no round is cut short while it is measured.
const BACKLOG_FRESHNESS: &str = "30min";
/// Rows per appended Arrow batch.
const WRITE_BATCH: usize = 20_000;
/// Tables (or partitions) written at once by the scale workloads: one at a time, a thousand
/// tables would take most of the run to write.
const SCALE_WRITERS: usize = 8;

/// Tables written and due for tiering.
pub struct Prepared {
    pub tables: Vec<TablePath>,
    /// Per table: (partition, bucket) → log end offset the lake must reach.
    pub ends: Vec<HashMap<(Option<i64>, i32), i64>>,
    /// Log records to tier (rows, or changes of a primary-key table).
    pub records: u64,
    /// How long writing took (not part of any figure).
    pub write_seconds: f64,
}

/// Creates the tables of `kind` under names starting with `prefix`, writes their backlog and
/// makes them due for tiering.
pub async fn prepare(
    kind: WorkloadKind,
    sizes: &Sizes,
    conn: &FlussConnection,
    admin: &FlussAdmin,
    prefix: &str,
) -> Result<Prepared> {
    let started = Instant::now();
    let freshness = format!("{}s", CREATE_FRESHNESS.as_secs());
    // When the last table was created: every table is due `CREATE_FRESHNESS` after its own
    // creation, and one altered before it is due would wait for the long freshness.
    let mut last_created = started;
    let path = |suffix: &str| TablePath::new("fluss", format!("{prefix}_{suffix}"));
    let mut tables = Vec::new();
    match kind {
        WorkloadKind::Log1 | WorkloadKind::Log3 | WorkloadKind::Log12 => {
            let buckets = match kind {
                WorkloadKind::Log1 => 1,
                WorkloadKind::Log3 => 3,
                _ => 12,
            };
            let t = path("log");
            data::create_table(
                admin,
                &t,
                &data::lake_log_table(buckets, Some("id"), &freshness),
            )
            .await;
            last_created = Instant::now();
            data::write_rows(conn, &t, 0, sizes.log_rows, WRITE_BATCH).await;
            tables.push(t);
        }
        WorkloadKind::Pk => {
            let t = path("pk");
            data::create_table(admin, &t, &pk_table(3, &freshness)?).await;
            last_created = Instant::now();
            write_pk_changes(conn, &t, sizes.pk_changes).await?;
            tables.push(t);
        }
        WorkloadKind::Partitioned => {
            let t = path("parts");
            data::create_table(
                admin,
                &t,
                &data::lake_partitioned_log_table(4, Some("id"), &freshness, &["p"]),
            )
            .await;
            last_created = Instant::now();
            for k in 0..sizes.partitions {
                let value = format!("p{k:02}");
                let spec: &[(&str, &str)] = &[("p", &value)];
                data::create_partition(admin, &t, spec).await;
                let first = (k * sizes.rows_per_partition) as i64;
                data::write_partition_rows(
                    conn,
                    &t,
                    spec,
                    first,
                    sizes.rows_per_partition,
                    WRITE_BATCH,
                )
                .await;
            }
            tables.push(t);
        }
        WorkloadKind::Splits => {
            let t = path("splits");
            data::create_table(
                admin,
                &t,
                &data::lake_partitioned_log_table(8, Some("id"), &freshness, &["p"]),
            )
            .await;
            last_created = Instant::now();
            for k in 0..sizes.split_partitions {
                let value = format!("p{k:03}");
                let spec: &[(&str, &str)] = &[("p", &value)];
                data::create_partition(admin, &t, spec).await;
                data::write_partition_rows(conn, &t, spec, (k * 3_200) as i64, 3_200, 3_200).await;
            }
            tables.push(t);
        }
        WorkloadKind::ManyTables => {
            for k in 0..sizes.tables {
                let t = path(&format!("t{k:02}"));
                data::create_table(admin, &t, &data::lake_log_table(3, Some("id"), &freshness))
                    .await;
                last_created = Instant::now();
                data::write_rows(conn, &t, 0, sizes.rows_per_table, WRITE_BATCH).await;
                tables.push(t);
            }
        }
        WorkloadKind::ScaleTables => {
            tables = (0..sizes.scale_tables)
                .map(|k| path(&format!("t{k:04}")))
                .collect();
            let descriptor = data::lake_log_table(1, Some("id"), &freshness);
            data::create_tables(admin, &tables, &descriptor).await;
            last_created = Instant::now();
            let rows = sizes.scale_rows_per_table;
            futures::stream::iter(tables.iter().enumerate())
                .map(|(k, t)| data::write_rows(conn, t, (k * rows) as i64, rows, rows))
                .buffer_unordered(SCALE_WRITERS)
                .collect::<Vec<()>>()
                .await;
        }
        WorkloadKind::ScaleBuckets => {
            let t = path("wide");
            data::create_table(
                admin,
                &t,
                &data::lake_partitioned_log_table(
                    sizes.scale_buckets,
                    Some("id"),
                    &freshness,
                    &["p"],
                ),
            )
            .await;
            last_created = Instant::now();
            let specs: Vec<[(&str, String); 1]> = (0..sizes.scale_partitions)
                .map(|k| [("p", format!("p{k:03}"))])
                .collect();
            // One at a time, as `data::create_tables` creates tables.
            for spec in &specs {
                data::create_partition(admin, &t, &[(spec[0].0, spec[0].1.as_str())]).await;
            }
            let rows = sizes.scale_rows_per_partition;
            futures::stream::iter(specs.iter().enumerate())
                .map(|(k, spec)| {
                    let t = &t;
                    async move {
                        let spec: &[(&str, &str)] = &[(spec[0].0, spec[0].1.as_str())];
                        data::write_partition_rows(conn, t, spec, (k * rows) as i64, rows, rows)
                            .await;
                    }
                })
                .buffer_unordered(SCALE_WRITERS)
                .collect::<Vec<()>>()
                .await;
            tables.push(t);
        }
        WorkloadKind::Steady => unreachable!("the steady workload writes while it is measured"),
    }
    let mut ends = Vec::new();
    let mut records = 0u64;
    for t in &tables {
        let e = data::all_log_end_offsets(admin, t).await;
        records += e.values().map(|o| *o as u64).sum::<u64>();
        ends.push(e);
    }
    // Due: the coordinator queued the tables `CREATE_FRESHNESS` after their creation (its
    // timer ticks once a second); a longer freshness from now on keeps every round whole.
    let due = CREATE_FRESHNESS + Duration::from_secs(3);
    if let Some(wait) = due.checked_sub(last_created.elapsed()) {
        tokio::time::sleep(wait).await;
    }
    for t in &tables {
        set_freshness(admin, t, BACKLOG_FRESHNESS).await?;
    }
    Ok(Prepared {
        tables,
        ends,
        records,
        write_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Sets a table's `table.datalake.freshness`.
pub async fn set_freshness(admin: &FlussAdmin, t: &TablePath, freshness: &str) -> Result<()> {
    data::set_freshness(admin, t, freshness)
        .await
        .with_context(|| format!("altering the freshness of {t}"))
}

/// The primary-key table: `id INT` (key), `name STRING`, `val BIGINT`, `price DOUBLE`.
pub fn pk_table(buckets: i32, freshness: &str) -> Result<TableDescriptor> {
    let schema = Schema::builder()
        .column("id", DataTypes::int())
        .column("name", DataTypes::string())
        .column("val", DataTypes::bigint())
        .column("price", DataTypes::double())
        .primary_key(vec!["id"])?
        .build()?;
    Ok(TableDescriptor::builder()
        .schema(schema)
        .distributed_by(Some(buckets), vec!["id".to_string()])
        .property("table.datalake.enabled", "true")
        .property("table.datalake.freshness", freshness)
        .build()?)
}

/// `changes` upserts over two thirds as many keys (so a third are updates), every 50th a
/// delete of its key.
async fn write_pk_changes(conn: &FlussConnection, t: &TablePath, changes: usize) -> Result<()> {
    let table = conn.get_table(t).await?;
    let w = table.new_upsert()?.create_writer()?;
    let keys = (changes * 2 / 3).max(1) as i64;
    for i in 0..changes as i64 {
        let mut row = GenericRow::new(4);
        row.set_field(0, (i % keys) as i32);
        row.set_field(1, format!("name-{i}"));
        row.set_field(2, i);
        row.set_field(3, i as f64 * 0.5);
        if i % 50 == 49 {
            w.delete(&row)?;
        } else {
            w.upsert(&row)?;
        }
    }
    w.flush().await?;
    Ok(())
}
