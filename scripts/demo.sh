#!/usr/bin/env bash
# Sets everything up from a fresh machine and runs the demo: starts a real Fluss cluster,
# creates a lake-enabled table, writes rows, tiers them with the host and a WebAssembly lake
# plugin, and prints what the format's own reader reads from the lake. Stops the cluster after.
#
#   scripts/demo.sh [paimon|iceberg|lance]      (default paimon)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
rustup target add wasm32-wasip2
scripts/setup-python.sh
WITH_ICEBERG=1 WITH_LANCE=$([ "${1:-}" = lance ] && echo 1 || echo 0) cluster/setup.sh
scripts/build-plugins.sh
cargo build --release -p fluss-lake-host -p fluss-lake-e2e --bin fluss-lake-host --bin demo
cluster/stop.sh >/dev/null 2>&1 || true
DATALAKE_FORMAT="${1:-paimon}" cluster/start.sh --clean
trap 'cluster/stop.sh || true' EXIT
target/release/demo "${1:-paimon}"
