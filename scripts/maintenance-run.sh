#!/usr/bin/env bash
# The long run of table maintenance (issue 16), from a fresh machine: the e2e tests
# `maintenance::long_run` (Paimon, Iceberg, Lance) with ROUNDS rounds (default 300; CI runs
# 40) on one Fluss cluster each, printing per table (log, primary key; maintained and its
# twin without maintenance) the curve of retained snapshots, live data files, metadata bytes
# and the independent reader's read time at every checkpoint (every 50 rounds).
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
trap 'for i in 0 1 2; do CLUSTER_INDEX=$i cluster/stop.sh >/dev/null 2>&1 || true; done' EXIT
FLUSS_TEST_CLUSTERS=3 FLUSS_MAINTENANCE_ROUNDS="${ROUNDS:-300}" \
  cargo test --release -p fluss-lake-e2e --test e2e -- --nocapture maintenance::long_run:: \
  | tee target/maintenance-run.log
grep '^maintenance curve' target/maintenance-run.log | sed 's/^maintenance curve (\([a-z]*\)): /\1 /' \
  | target/venv/bin/python -c '
import json, sys
fields = ["snapshots", "live_files", "metadata_bytes", "read_seconds"]
for line in sys.stdin:
    fmt, data = line.split(" ", 1)
    rows = json.loads(data)
    for kind in [k for k in ("log", "log_plain", "pk", "pk_plain") if k in rows[0]]:
        print(f"\n{fmt} {kind}: round | " + " | ".join(fields))
        for r in rows:
            v = r[kind]
            print(str(r["round"]) + " | " + " | ".join(
                f"{v[f]:.2f}" if isinstance(v[f], float) else str(v[f]) for f in fields))
'
