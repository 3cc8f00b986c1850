//! The WASM tax: the same guest code (a format's writer and committer) writing the same rows,
//! once compiled natively over the SDK's local storage, and as the `.wasm` plugin in the
//! host's plugin runtime with the host's default sandbox limits (memory ceiling, call
//! deadlines, epoch interruption, scoped storage, result bounds) two ways: the pure-guest path
//! (`writer`: the plugin encodes its files in WebAssembly) and the data-plane path
//! (`batch-writer`, contract 0.3.8: the rows stay in the host, which encodes the files the
//! plugin lays out). The rows are prepared beforehand (contract row batches, or the host's
//! batches), so every side is timed on the writing alone. The three alternate [`REPEATS`]
//! times and each side's median counts, as single runs on shared cores vary by a fifth.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use arrow::array::RecordBatch;
use fluss_lake_e2e::component::{self, ComponentDriver};
use fluss_lake_e2e::data;
use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
use fluss_lake_guest_sdk::storage::LocalStorage;
use fluss_lake_guest_sdk::wit as guest;
use fluss_lake_host::plugin::engine::EngineSettings;
use serde::Serialize;

use fluss_lake_bench::proc_stats;

/// Rows per row batch handed to the writer (one boundary crossing each): about what the host
/// gathers into one call (4 MiB of these columns) while a plugin is busy.
pub const BATCH_ROWS: usize = 65_536;
/// Native and WASM rounds measured, alternately.
const REPEATS: usize = 3;
/// The commit timestamp (millis) of every row.
const TS_MS: i64 = 1_700_000_000_123;

#[derive(Debug, Clone, Serialize)]
pub struct TaxFigures {
    pub format: String,
    pub records: u64,
    pub batch_rows: usize,
    pub native_wall_s: f64,
    pub native_cpu_s: f64,
    /// The pure-guest path.
    pub wasm_wall_s: f64,
    pub wasm_cpu_s: f64,
    /// The data-plane path.
    pub data_plane_wall_s: f64,
    pub data_plane_cpu_s: f64,
}

impl TaxFigures {
    /// WASM CPU seconds (pure-guest path) over native CPU seconds for the same work.
    pub fn ratio(&self) -> f64 {
        self.wasm_cpu_s / self.native_cpu_s.max(1e-9)
    }

    /// Data-plane CPU seconds over native CPU seconds for the same work.
    pub fn data_plane_ratio(&self) -> f64 {
        self.data_plane_cpu_s / self.native_cpu_s.max(1e-9)
    }
}

/// The standard columns as the host describes them to a plugin.
const COLUMNS: &[(&str, &str, bool)] = &[
    ("id", "INT", true),
    ("seq", "BIGINT", true),
    ("name", "STRING", true),
    ("price", "DOUBLE", true),
    ("flag", "BOOLEAN", true),
    ("ts", "TIMESTAMP(6)", true),
    ("day", "DATE", true),
    ("amount", "DECIMAL(10, 2)", true),
];

/// Writes `rows` rows of one bucket and commits them, natively and as `.wasm`, each into a
/// warehouse of its own under `dir`.
pub async fn measure(format: &str, rows: usize, dir: &Path) -> Result<TaxFigures> {
    let arrow: Vec<_> = (0..rows)
        .step_by(BATCH_ROWS)
        .map(|first| data::batch(first as i64, BATCH_ROWS.min(rows - first)))
        .collect();

    let driver = ComponentDriver::load_with_settings(
        &fluss_lake_e2e::host::plugin(format),
        &dir.join("wasm"),
        EngineSettings::default(),
    )
    .await;
    let (mut native, mut wasm, mut data_plane) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..REPEATS {
        native.push(native_once(format, &arrow, &dir.join(format!("native-{i}"))).await?);
        wasm.push(wasm_once(format, &driver, &arrow, &format!("tax{i}"), false).await?);
        data_plane.push(wasm_once(format, &driver, &arrow, &format!("plane{i}"), true).await?);
    }
    let (native_wall_s, native_cpu_s) = median(native);
    let (wasm_wall_s, wasm_cpu_s) = median(wasm);
    let (data_plane_wall_s, data_plane_cpu_s) = median(data_plane);
    Ok(TaxFigures {
        format: format.to_string(),
        records: rows as u64,
        batch_rows: BATCH_ROWS,
        native_wall_s,
        native_cpu_s,
        wasm_wall_s,
        wasm_cpu_s,
        data_plane_wall_s,
        data_plane_cpu_s,
    })
}

/// The native round: the format crate over local storage, on a thread of its own, into a
/// warehouse of its own. Wall and CPU seconds.
async fn native_once(format: &str, arrow: &[RecordBatch], dir: &Path) -> Result<(f64, f64)> {
    std::fs::create_dir_all(dir)?;
    let guest_batches = arrow
        .iter()
        .scan(0i64, |offset, b| {
            let batch = fluss_lake_guest_sdk::ipc::make_row_batch(b, *offset, TS_MS);
            *offset += b.num_rows() as i64;
            Some(batch)
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("{e}"))?;
    let table = guest_table(format);
    let (fmt, dir) = (format.to_string(), dir.to_path_buf());
    tokio::task::spawn_blocking(move || native_round(&fmt, &dir, &table, guest_batches)).await?
}

/// The WASM round: the plugin in the host's runtime with the host's default limits, into a
/// table of its own, through `writer` or, with `data_plane`, `batch-writer`. Wall and CPU
/// seconds.
async fn wasm_once(
    format: &str,
    driver: &ComponentDriver,
    arrow: &[RecordBatch],
    name: &str,
    data_plane: bool,
) -> Result<(f64, f64)> {
    let table = component::table(format, name, COLUMNS, &[], &[], 1, &[]);
    driver.create(&table).await;
    let offsets = arrow.iter().scan(0i64, |offset, b| {
        let first = *offset;
        *offset += b.num_rows() as i64;
        Some((b, first))
    });
    let (row_batches, host_rows): (Vec<_>, Vec<_>) = if data_plane {
        let rows = offsets
            .map(|(b, first)| component::host_rows(b, first, TS_MS))
            .collect();
        (Vec::new(), rows)
    } else {
        let batches = offsets
            .map(|(b, first)| component::row_batch(b, Vec::new(), first, TS_MS))
            .collect();
        (batches, Vec::new())
    };
    let cpu0 = proc_stats::own_cpu_seconds()?;
    let started = Instant::now();
    let (_, commit) = if data_plane {
        driver
            .streamed_native_round(&table, host_rows.into_iter(), offsets_property())
            .await
    } else {
        driver
            .streamed_round(&table, row_batches.into_iter(), offsets_property())
            .await
    };
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_s = proc_stats::own_cpu_seconds()? - cpu0;
    if commit.snapshot_id < 1 {
        bail!("the plugin committed no snapshot");
    }
    Ok((wall_s, cpu_s))
}

/// The (wall, CPU) pair of the run with the median CPU seconds.
fn median(mut runs: Vec<(f64, f64)>) -> (f64, f64) {
    runs.sort_by(|a, b| a.1.total_cmp(&b.1));
    runs[runs.len() / 2]
}

fn offsets_property() -> Vec<(String, String)> {
    vec![(
        "fluss-offsets".to_string(),
        "/remote/lake/fluss/t-1/metadata/bench.offsets".to_string(),
    )]
}

fn guest_table(format: &str) -> guest::TableInfo {
    let mut t = fluss_lake_guest_sdk::testing::log_table("fluss", "tax", COLUMNS, &[], 1, &[]);
    for (k, v) in &mut t.properties {
        if k == "table.datalake.format" {
            *v = format.to_string();
        }
    }
    t
}

/// One native round: create the table, write every batch, commit. Wall and CPU seconds of
/// the write and commit.
fn native_round(
    format: &str,
    warehouse: &Path,
    table: &guest::TableInfo,
    batches: Vec<guest::RowBatch>,
) -> Result<(f64, f64)> {
    use fluss_lake_iceberg as i;
    use fluss_lake_paimon as p;
    match format {
        "paimon" => native::<p::writer::PaimonWriter<_>, p::committer::PaimonCommitter<_>>(
            &p::catalog::LAYOUT,
            p::catalog::create_table_if_missing,
            warehouse,
            table,
            batches,
        ),
        "iceberg" => native::<i::writer::IcebergWriter<_>, i::committer::IcebergCommitter<_>>(
            &i::catalog::LAYOUT,
            i::catalog::create_table_if_missing,
            warehouse,
            table,
            batches,
        ),
        other => bail!("the WASM tax is measured for paimon and iceberg, not {other}"),
    }
}

/// A format's catalog call that creates its table.
type CreateTable = fn(
    &dyn fluss_lake_guest_sdk::storage::Storage,
    &guest::TableInfo,
    &[(String, String)],
) -> fluss_lake_guest_sdk::Result<bool>;

/// [`native_round`] of the format with writer `W`, committer `C`, layout and catalog.
fn native<W, C>(
    layout: &fluss_lake_guest_sdk::layout::Layout,
    create_table: CreateTable,
    warehouse: &Path,
    table: &guest::TableInfo,
    batches: Vec<guest::RowBatch>,
) -> Result<(f64, f64)>
where
    W: FormatWriter<LocalStorage>,
    C: FormatCommitter<LocalStorage>,
{
    let config = vec![("warehouse".to_string(), warehouse.display().to_string())];
    let storage = LocalStorage::new(warehouse.join(layout.location(table).map_err(err)?));
    create_table(&storage, table, &config).map_err(err)?;
    timed(|| round::<W, C>(table, &config, &storage, batches))
}

fn timed(f: impl FnOnce() -> Result<()>) -> Result<(f64, f64)> {
    let cpu0 = proc_stats::own_cpu_seconds()?;
    let started = Instant::now();
    f()?;
    Ok((
        started.elapsed().as_secs_f64(),
        proc_stats::own_cpu_seconds()? - cpu0,
    ))
}

fn round<W, C>(
    table: &guest::TableInfo,
    config: &[(String, String)],
    storage: &LocalStorage,
    batches: Vec<guest::RowBatch>,
) -> Result<()>
where
    W: FormatWriter<LocalStorage>,
    C: FormatCommitter<LocalStorage>,
{
    let context = guest::WriterContext {
        table: table.clone(),
        bucket: 0,
        partition_id: None,
        partition_name: None,
        split_index: 0,
        round_timestamp: 0,
        config: config.to_vec(),
    };
    let mut w = W::open(&context, storage.clone()).map_err(err)?;
    for b in batches {
        w.write(b).map_err(err)?;
    }
    let result = w.complete().map_err(err)?;
    let mut c = C::open(
        guest::CommitterContext {
            table: table.clone(),
            config: config.to_vec(),
            tiering_config: Vec::new(),
        },
        storage.clone(),
    )
    .map_err(err)?;
    let committable = c.to_committable(&[result.payload]).map_err(err)?;
    c.commit(&committable, &offsets_property(), None)
        .map_err(err)
        .context("native commit")?;
    Ok(())
}

fn err(e: fluss_lake_guest_sdk::Error) -> anyhow::Error {
    anyhow!("{e}")
}
