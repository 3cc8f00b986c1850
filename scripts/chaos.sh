#!/usr/bin/env bash
# A seeded chaos run (tests/e2e/faults/chaos.rs): FAULTS faults drawn with SEED from KINDS (all
# kinds when not given) while writers keep writing and three hosts tier Paimon, Iceberg and Lance
# tables on the chaos cluster (two tablet servers, replication factor 2). The same SEED replays
# the same faults in the same order. Prints the fault log, the count per kind and the time the
# lakes took to converge after the last fault; fails unless every lake equals Fluss exactly.
#
#   scripts/chaos.sh 42 100
#   scripts/chaos.sh 7 20 tablet-kill,coordinator-kill,host-kill
#
# Kinds: host-kill host-term tablet-kill coordinator-kill zookeeper-pause coordinator-pause
# plugin-swap partition-drop store-failing table-recreate; the first faults are each kind once.
# Needs what `scripts/test.sh` sets up (clusters' jars, plugins, Python readers); run it once
# first on a fresh machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [[ $# -lt 2 ]]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
export CHAOS_SEED="$1" CHAOS_FAULTS="$2" CHAOS_KINDS="${3:-}"
export AWS_METADATA_ENDPOINT=http://127.0.0.1:9 AWS_EC2_METADATA_DISABLED=true
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$ROOT/scripts/test-runner.sh"
scripts/build-plugins.sh >/dev/null
# The host as the tests build it (with the test failpoints, as every e2e run expects).
cargo build --workspace --release
cargo test --release -p fluss-lake-e2e --test e2e -- --exact --include-ignored --nocapture \
  faults::chaos::alone::from_env
