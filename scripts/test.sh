#!/usr/bin/env bash
# Sets everything up from a fresh machine and runs every check and test:
# toolchain target, Python readers, Fluss jars, formatting, lints, plugins, unit tests,
# and the end-to-end tests against a real Fluss cluster (started here, stopped on exit).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
rustup target add wasm32-wasip2
rustup component add rustfmt clippy >/dev/null

step "python readers"
scripts/setup-python.sh

step "Fluss jars from Maven Central (Paimon, Iceberg and Lance lake plugins)"
WITH_ICEBERG=1 WITH_LANCE=1 cluster/setup.sh

step "format"
cargo fmt --all -- --check
for example in examples/*/Cargo.toml; do cargo fmt --manifest-path "$example" -- --check; done

step "lints (host target)"
cargo clippy --workspace --all-targets --release -- -D warnings
step "lints (wasm32-wasip2 guests)"
cargo clippy -p fluss-lake-guest-sdk -p fluss-lake-paimon -p fluss-lake-iceberg -p fluss-lake-lance -p fluss-lake-test-null -p fluss-lake-test-evil --target wasm32-wasip2 --profile guest -- -D warnings
step "third-party example plugins (own workspaces, SDK only): lints and unit tests"
for example in examples/*/Cargo.toml; do
  cargo clippy --manifest-path "$example" --target-dir target --target wasm32-wasip2 --profile guest -- -D warnings
  cargo test --manifest-path "$example" --target-dir target --release
done

step "plugins"
scripts/build-plugins.sh
step "plugin smoke tests without the Rust host (wasmtime-py + pypaimon / pyiceberg / pylance)"
for format in paimon iceberg lance; do
  smoke_dir="$(mktemp -d)"
  target/venv/bin/python tests/python/wasm_smoke.py "target/plugins/$format.wasm" "$smoke_dir"
  rm -rf "$smoke_dir"
done

step "host"
cargo build --release -p fluss-lake-host

step "Fluss cluster"
cluster/stop.sh >/dev/null 2>&1 || true
cluster/start.sh --clean
trap 'cluster/stop.sh || true' EXIT

step "unit and end-to-end tests"
# Tests needing another lake format restart the cluster with it (tests/src/cluster.rs).
cargo test --workspace --release -- --test-threads=1
