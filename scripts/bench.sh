#!/usr/bin/env bash
# Sets everything up from a fresh machine and runs the benchmark: this project's host against
# the real FlussLakeTiering job (Flink 1.20.3 MiniCluster, jars from Maven Central), the raw
# fluss-rs scan rate and the WASM tax, on one Fluss cluster with the same data in one run.
# Writes result.json, result.md and chart.svg to bench/results/<date>-<commit>/ (or --out).
#
#   scripts/bench.sh                                   # everything, the issue's sizes (about an hour)
#   scripts/bench.sh --workloads log3 --formats paimon --scale 0.1
#   scripts/bench.sh --help                            # every option of `bench run`
#
# The cluster is BENCH_CLUSTER (index 8, coordinator port 9203), outside the test pool: it is
# started clean when it is not up, and stopped at the end unless KEEP_CLUSTER=1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export AWS_METADATA_ENDPOINT=http://127.0.0.1:9 AWS_EC2_METADATA_DISABLED=true
if [[ "${1:-}" == "--help" ]]; then
  cargo run -q --release -p fluss-lake-bench -- run --help
  exit 0
fi
rustup target add wasm32-wasip2
WITH_ICEBERG=1 WITH_LANCE=1 WITH_S3=1 cluster/setup.sh
cluster/flink-tiering/setup.sh
scripts/build-plugins.sh
# The host alone, as it ships (no test failpoints compiled in); the benchmark after it (its
# test-harness dependency builds the host library with failpoints, not this binary).
cargo build --release -p fluss-lake-host --bin fluss-lake-host
cargo build --release -p fluss-lake-bench
CLUSTER_INDEX=8
if [[ "${KEEP_CLUSTER:-0}" != 1 ]]; then
  trap 'CLUSTER_INDEX=$CLUSTER_INDEX cluster/stop.sh >/dev/null 2>&1 || true' EXIT
fi
FLUSS_BENCH_COMMAND="scripts/bench.sh $*" target/release/bench run --cluster-index "$CLUSTER_INDEX" "$@"
