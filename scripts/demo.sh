#!/usr/bin/env bash
# Sets everything up from a fresh machine and runs the demo: starts a real Fluss cluster,
# creates a lake-enabled table, writes rows, tiers them with the host and the Paimon
# WebAssembly plugin, and prints what pypaimon reads from the lake. Stops the cluster after.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
rustup target add wasm32-wasip2
scripts/setup-python.sh
cluster/setup.sh
scripts/build-plugins.sh
cargo build --release -p fluss-lake-host -p fluss-lake-e2e --bin fluss-lake-host --bin demo
cluster/stop.sh >/dev/null 2>&1 || true
cluster/start.sh --clean
trap 'cluster/stop.sh || true' EXIT
target/release/demo
