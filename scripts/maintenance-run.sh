#!/usr/bin/env bash
# The long run of table maintenance (issue 16), from a fresh machine: the e2e test
# `maintenance::long_run` (Paimon and Iceberg) with ROUNDS rounds (default 300; CI runs 40)
# on one Fluss cluster each,
# printing the curve of retained snapshots, metadata bytes and files, and pypaimon's read
# time per checkpoint, for the table with expiry and its twin without.
#
#   scripts/maintenance-run.sh               # 300 rounds
#   ROUNDS=100 scripts/maintenance-run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export AWS_METADATA_ENDPOINT=http://127.0.0.1:9 AWS_EC2_METADATA_DISABLED=true
rustup target add wasm32-wasip2
scripts/setup-python.sh
WITH_ICEBERG=1 WITH_LANCE=1 cluster/setup.sh
cluster/flink-tiering/setup.sh
scripts/build-plugins.sh
cargo build --release --test e2e -p fluss-lake-e2e
trap 'for i in 0 1; do CLUSTER_INDEX=$i cluster/stop.sh >/dev/null 2>&1 || true; done' EXIT
FLUSS_TEST_CLUSTERS=2 FLUSS_MAINTENANCE_ROUNDS="${ROUNDS:-300}" \
  cargo test --release -p fluss-lake-e2e --test e2e -- --nocapture maintenance::long_run:: \
  | tee target/maintenance-run.log
grep '^maintenance curve' target/maintenance-run.log | sed 's/^maintenance curve (\([a-z]*\)): //' \
  | target/venv/bin/python -c '
import json, sys
for line in sys.stdin:
    rows = json.loads(line)
    cols = ["round", "snapshots", "metadata_files", "metadata_bytes", "read_seconds",
            "unexpired_snapshots", "unexpired_metadata_files", "unexpired_metadata_bytes",
            "unexpired_read_seconds"]
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c]) for c in cols))
'
