//! Files and bytes a service left in the lake for the tables it tiered: a table's whole
//! directory (data, manifests, metadata), and its data files alone.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use fluss::metadata::TablePath;
use fluss_lake_e2e::cluster::ClusterInfo;
use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct LakeFiles {
    pub files: u64,
    pub bytes: u64,
    /// Parquet data files (both formats write Parquet).
    pub data_files: u64,
    pub data_bytes: u64,
}

/// The lake directory of `t` in cluster `c`'s warehouse of `format`, as the Java catalogs
/// (and the plugins' layouts) name it: Paimon `<db>.db/<table>`, Iceberg's Hadoop catalog
/// `<db>/<table>`.
pub fn table_dir(c: &ClusterInfo, format: &str, t: &TablePath) -> Result<PathBuf> {
    Ok(match format {
        "paimon" => c
            .paimon_warehouse
            .join(format!("{}.db", t.database()))
            .join(t.table()),
        "iceberg" => c.iceberg_warehouse.join(t.database()).join(t.table()),
        other => bail!("no lake layout for {other}"),
    })
}

/// Sums the files of every table.
pub fn of_tables(c: &ClusterInfo, format: &str, tables: &[TablePath]) -> Result<LakeFiles> {
    let mut sum = LakeFiles::default();
    for t in tables {
        walk(&table_dir(c, format, t)?, &mut sum)?;
    }
    Ok(sum)
}

fn walk(dir: &Path, sum: &mut LakeFiles) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries {
        let e = e?;
        let meta = e.metadata()?;
        if meta.is_dir() {
            walk(&e.path(), sum)?;
        } else {
            sum.files += 1;
            sum.bytes += meta.len();
            if e.file_name().to_string_lossy().ends_with(".parquet") {
                sum.data_files += 1;
                sum.data_bytes += meta.len();
            }
        }
    }
    Ok(())
}
