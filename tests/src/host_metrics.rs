//! The host's own `/metrics`, read back: the unlabelled (host-wide) samples and histograms of
//! one scrape, for the tests and the benchmark that check what the host reports about itself.

use std::collections::HashMap;

use serde::Serialize;

/// One scrape of the host's metrics endpoint (`--metrics.address`).
pub struct Exposition {
    /// Unlabelled samples by name, and histogram buckets as `name{le="…"}`.
    samples: HashMap<String, f64>,
    /// Per histogram name: (upper bound, cumulative count), in exposition order.
    buckets: HashMap<String, Vec<(f64, u64)>>,
}

/// A host histogram summed up: how many observations, their mean, quantiles interpolated
/// within buckets as Prometheus's `histogram_quantile` does, and the upper bound of the
/// highest bucket holding an observation (the largest value is at most that).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct HistogramSummary {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max_at_most: f64,
}

impl Exposition {
    /// Reads the OpenMetrics text of `GET /metrics`.
    pub fn parse(text: &str) -> Self {
        let mut samples = HashMap::new();
        let mut buckets: HashMap<String, Vec<(f64, u64)>> = HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((name, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            if let Some((family, labels)) = name.split_once("_bucket{le=\"")
                && let Some(le) = labels.strip_suffix("\"}")
            {
                let bound = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap_or(f64::NAN)
                };
                buckets
                    .entry(family.to_string())
                    .or_default()
                    .push((bound, value as u64));
            } else if !name.contains('{') {
                samples.insert(name.to_string(), value);
            }
        }
        Self { samples, buckets }
    }

    /// Scrapes `address` (HOST:PORT).
    pub fn scrape(address: &str) -> anyhow::Result<Self> {
        let (status, body) = crate::prometheus::http_get(address, "/metrics")?;
        anyhow::ensure!(status == 200, "GET /metrics answered {status}: {body}");
        Ok(Self::parse(&body))
    }

    /// An unlabelled sample (a host gauge, or a counter with its `_total`).
    pub fn value(&self, name: &str) -> Option<f64> {
        self.samples.get(name).copied()
    }

    /// An unlabelled histogram, by its name without `_bucket`.
    pub fn histogram(&self, name: &str) -> Option<HistogramSummary> {
        let buckets = self.buckets.get(name)?;
        let count = self.value(&format!("{name}_count"))? as u64;
        let sum = self.value(&format!("{name}_sum"))?;
        let quantile = |q: f64| quantile(buckets, count, q);
        let max_at_most = buckets
            .iter()
            .find(|(_, cumulative)| *cumulative >= count)
            .map_or(f64::INFINITY, |(bound, _)| *bound);
        Some(HistogramSummary {
            count,
            mean: if count > 0 { sum / count as f64 } else { 0.0 },
            p50: quantile(0.5),
            p99: quantile(0.99),
            max_at_most: if count > 0 { max_at_most } else { 0.0 },
        })
    }
}

/// The `q` quantile of cumulative `buckets`, linear within the bucket it falls in (the first
/// bucket from 0); the highest finite bound when it falls in `+Inf`.
fn quantile(buckets: &[(f64, u64)], count: u64, q: f64) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let rank = q * count as f64;
    let mut below = (0.0, 0u64);
    for &(bound, cumulative) in buckets {
        if cumulative as f64 >= rank {
            if bound.is_infinite() {
                return below.0;
            }
            let within = (cumulative - below.1).max(1) as f64;
            return below.0 + (bound - below.0) * (rank - below.1 as f64) / within;
        }
        below = (bound, cumulative);
    }
    below.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# TYPE fluss_lake_round_plan_duration_seconds histogram
fluss_lake_round_plan_duration_seconds_sum 1.5
fluss_lake_round_plan_duration_seconds_count 4
fluss_lake_round_plan_duration_seconds_bucket{le=\"0.1\"} 2
fluss_lake_round_plan_duration_seconds_bucket{le=\"0.2\"} 3
fluss_lake_round_plan_duration_seconds_bucket{le=\"0.4\"} 4
fluss_lake_round_plan_duration_seconds_bucket{le=\"+Inf\"} 4
fluss_lake_heartbeat_request_max_bytes 120
fluss_lake_table_lag_records{database=\"db\",table=\"t\"} 7
# EOF
";

    #[test]
    fn host_samples_and_histograms_are_read_back() {
        let e = Exposition::parse(TEXT);
        assert_eq!(
            e.value("fluss_lake_heartbeat_request_max_bytes"),
            Some(120.0)
        );
        // Per-table series are not host samples.
        assert_eq!(e.value("fluss_lake_table_lag_records"), None);
        let h = e
            .histogram("fluss_lake_round_plan_duration_seconds")
            .unwrap();
        assert_eq!(h.count, 4);
        assert_eq!(h.mean, 0.375);
        // Rank 2 of 4 is the first bucket's top; rank 3.96 is 96% into the third bucket.
        assert_eq!(h.p50, 0.1);
        assert!((h.p99 - 0.392).abs() < 1e-9, "{}", h.p99);
        assert_eq!(h.max_at_most, 0.4);
        assert!(e.histogram("fluss_lake_missing").is_none());
    }
}
