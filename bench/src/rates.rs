//! What every throughput figure is made of, and the rates it is reported in: one formula for
//! the host, Flink and the raw scan.

use serde::{Deserialize, Serialize};

/// `records` log records (rows, or changes of a primary-key table) handled in `wall_s`
/// seconds using `cpu_s` CPU seconds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Throughput {
    pub records: u64,
    pub wall_s: f64,
    pub cpu_s: f64,
}

impl Throughput {
    pub fn rows_per_s(&self) -> f64 {
        self.records as f64 / self.wall_s.max(1e-9)
    }

    /// Records per CPU-second: the "per core" figure.
    pub fn rows_per_cpu_s(&self) -> f64 {
        self.records as f64 / self.cpu_s.max(1e-9)
    }

    pub fn cpu_s_per_million(&self) -> f64 {
        self.cpu_s * 1e6 / self.records.max(1) as f64
    }
}
