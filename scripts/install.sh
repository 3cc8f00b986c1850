#!/usr/bin/env bash
# Builds and installs the one self-contained binary: fluss-lake-host with the standard Paimon,
# Iceberg and Lance plugins embedded (the `embedded-plugins` feature), so that
#   fluss-lake-host --fluss.bootstrap.servers HOST:PORT
# tiers a stock cluster with no other file. `cargo install` with the workspace's lock file and
# patches; extra arguments go to it (e.g. --root /opt/fluss-lake).
#
#   scripts/install.sh                   # installs into ~/.cargo/bin
#   scripts/install.sh --root /usr/local
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# The plugins are WebAssembly components built for wasm32-wasip2; build.rs embeds them.
scripts/build-plugins.sh
# --locked: the versions this repository was tested with. The workspace's target directory is
# reused, so installing after a build compiles only what differs.
cargo install --locked --path host --features embedded-plugins --target-dir "$ROOT/target" "$@"
