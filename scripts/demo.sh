#!/usr/bin/env bash
# Sets everything up from a fresh machine and runs the demo: starts a real Fluss cluster,
# creates lake-enabled tables, writes rows, tiers them with one host process and WebAssembly
# lake plugins, and prints what each format's own reader reads from the lake. Stops the
# cluster after.
#
#   scripts/demo.sh            one host tiers Paimon, Iceberg, Lance and Delta tables at once
#   scripts/demo.sh paimon|iceberg|lance      one table, one format
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
rustup target add wasm32-wasip2
scripts/setup-python.sh
WITH_ICEBERG=1 WITH_LANCE=1 cluster/setup.sh
scripts/build-plugins.sh
cargo build --release -p fluss-lake-host -p fluss-lake-e2e --bin fluss-lake-host --bin demo
cluster/stop.sh >/dev/null 2>&1 || true
MODE="${1:-mixed}"
# The cluster starts without a lake format; the demo switches it per table at run time.
DATALAKE_FORMAT=none cluster/start.sh --clean
trap 'cluster/stop.sh || true' EXIT
target/release/demo "$MODE"
