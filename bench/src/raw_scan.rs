//! The physical limits: fluss-rs's Arrow batch scanner reads every bucket of a log table from
//! its start to its end and writes nothing (the raw scan); with `--encode-zstd-level`, it also
//! encodes every row natively as a lake data file holds it (the table's columns and the three
//! system columns, one Parquet file per bucket rolled at 128 MiB, zstd at the format's level,
//! with the encoder and options the plugins and the host's data plane use) into a sink that
//! stores nothing: the limit the host's CPU per row is held to. Run in a child process of its
//! own (`bench raw-scan`) so that its CPU seconds are its alone.

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use fluss::metadata::TablePath;
use fluss::rpc::message::OffsetSpec;

use fluss_lake_bench::proc_stats;
use fluss_lake_columns::encode::{FileEncoder, ParquetOptions};
use fluss_lake_columns::file_columns::{ColumnSource, FileColumns};

use crate::rates::Throughput;

/// Runs `bench raw-scan` in a child process and reads its figures; with `encode_zstd_level`,
/// the limit (the scan plus a native encode at that zstd level).
pub fn in_child(
    bootstrap: &str,
    t: &TablePath,
    encode_zstd_level: Option<i32>,
) -> Result<Throughput> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["raw-scan", "--bootstrap", bootstrap, "--table"])
        .arg(format!("{}.{}", t.database(), t.table()));
    if let Some(level) = encode_zstd_level {
        cmd.arg("--encode-zstd-level").arg(level.to_string());
    }
    let out = cmd.output().context("running bench raw-scan")?;
    if !out.status.success() {
        bail!(
            "bench raw-scan failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("bench raw-scan's output")
}

/// Reads `table` (`db.table`, not partitioned) to its end, encoding its rows when
/// `encode_zstd_level` is set; the figures of this process.
pub async fn run(
    bootstrap: &str,
    table: &str,
    encode_zstd_level: Option<i32>,
) -> Result<Throughput> {
    let (db, name) = table
        .split_once('.')
        .context("the table is named db.table")?;
    let path = TablePath::new(db, name);
    let conn = fluss_lake_e2e::connect(bootstrap).await;
    let admin = conn.get_admin()?;
    let info = admin.get_table_info(&path).await?;
    let buckets: Vec<i32> = (0..info.get_num_buckets()).collect();
    let ends: HashMap<i32, i64> = admin
        .list_offsets(&path, &buckets, OffsetSpec::Latest)
        .await?;
    let cpu0 = proc_stats::own_cpu_seconds()?;
    let started = Instant::now();
    let table = conn.get_table(&path).await?;
    let scanner = table.new_scan().create_record_batch_log_scanner()?;
    let mut left: HashMap<i32, i64> = ends.into_iter().filter(|(_, e)| *e > 0).collect();
    let from: HashMap<i32, i64> = left.keys().map(|b| (*b, 0)).collect();
    scanner.subscribe_buckets(&from).await?;
    let mut records = 0u64;
    let mut files: HashMap<i32, LakeFile> = HashMap::new();
    while !left.is_empty() {
        if started.elapsed() > Duration::from_secs(3600) {
            bail!("the scan did not reach the end of buckets {left:?}");
        }
        for batch in scanner.poll(Duration::from_millis(500)).await? {
            let bucket = batch.bucket().bucket_id();
            let end = batch.last_offset() + 1;
            records += batch.num_records() as u64;
            if let Some(level) = encode_zstd_level {
                let file = match files.entry(bucket) {
                    std::collections::hash_map::Entry::Occupied(f) => f.into_mut(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(LakeFile::new(batch.batch(), bucket, level)?)
                    }
                };
                file.encode(&batch)?;
            }
            if left.get(&bucket).is_some_and(|e| end >= *e) {
                left.remove(&bucket);
            }
        }
    }
    for (_, f) in files {
        f.finish()?;
    }
    Ok(Throughput {
        records,
        wall_s: started.elapsed().as_secs_f64(),
        cpu_s: proc_stats::own_cpu_seconds()? - cpu0,
    })
}

/// Where the limit's files roll, as the plugins roll theirs.
const TARGET_FILE_SIZE: u64 = 128 << 20;

/// One bucket's data file being encoded: the table's columns and the system columns.
struct LakeFile {
    columns: FileColumns,
    bucket: i32,
    options: ParquetOptions,
    encoder: FileEncoder<std::io::Sink>,
}

impl LakeFile {
    fn new(rows: &arrow::array::RecordBatch, bucket: i32, zstd_level: i32) -> Result<Self> {
        use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
        let mut fields: Vec<Field> = rows
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new("__bucket", DataType::Int32, false));
        fields.push(Field::new("__offset", DataType::Int64, false));
        fields.push(Field::new(
            "__timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ));
        let n = rows.num_columns();
        let mut sources: Vec<ColumnSource> = (0..n).map(ColumnSource::Fluss).collect();
        sources.extend([
            ColumnSource::Bucket,
            ColumnSource::Offset,
            ColumnSource::Timestamp,
        ]);
        let columns = FileColumns::new(std::sync::Arc::new(Schema::new(fields)), sources)?;
        let options = ParquetOptions {
            compression: parquet::basic::Compression::ZSTD(parquet::basic::ZstdLevel::try_new(
                zstd_level,
            )?),
            target_file_size: TARGET_FILE_SIZE,
            ..Default::default()
        };
        let encoder = FileEncoder::new(std::io::sink(), columns.schema().clone(), &options)?;
        Ok(LakeFile {
            columns,
            bucket,
            options,
            encoder,
        })
    }

    fn encode(&mut self, batch: &fluss::record::ScanBatch) -> Result<()> {
        let n = batch.num_records();
        let base = batch.base_offset();
        let offsets: Vec<i64> = (base..base + n as i64).collect();
        let timestamps = vec![batch.commit_timestamp().unwrap_or(0); n];
        let rows = self
            .columns
            .assemble(batch.batch(), &offsets, &timestamps, self.bucket)?;
        self.encoder.write(&rows)?;
        if self.encoder.size() >= self.options.target_file_size {
            let full = std::mem::replace(
                &mut self.encoder,
                FileEncoder::new(
                    std::io::sink(),
                    self.columns.schema().clone(),
                    &self.options,
                )?,
            );
            full.finish()?;
        }
        Ok(())
    }

    fn finish(self) -> Result<()> {
        self.encoder.finish()?;
        Ok(())
    }
}
