#!/usr/bin/env bash
# Builds the Delta plugin as a WebAssembly component and installs it as
# target/plugins/delta.wasm of the repository, where the host and the tests look for plugins.
#
#   examples/guest-delta/build.sh             # --profile guest (LTO, opt-level 3)
#   PROFILE=dev examples/guest-delta/build.sh
#
# The plugin is its own cargo workspace; it builds into the repository's target/ (or
# CARGO_TARGET_DIR) so that the dependencies it shares with the other plugins compile once.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PROFILE="${PROFILE:-guest}"
TARGET=wasm32-wasip2

if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
    rustup target add "$TARGET"
fi

TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
cargo build --manifest-path "$HERE/Cargo.toml" --target-dir "$TARGET_DIR" \
    --target "$TARGET" --profile "$PROFILE"

outdir="$TARGET_DIR/$TARGET/$PROFILE"
[[ "$PROFILE" == dev ]] && outdir="$TARGET_DIR/$TARGET/debug"
wasm="$outdir/fluss_lake_delta.wasm"
# A component (not a core module) starts with \0asm, version 0x0d, layer 1.
magic="$(head -c 8 "$wasm" | od -An -tx1 | tr -d ' \n')"
if [[ "$magic" != "0061736d0d000100" ]]; then
    echo "error: $wasm is not a WebAssembly component (header $magic)" >&2
    exit 1
fi
mkdir -p "$ROOT/target/plugins"
cp "$wasm" "$ROOT/target/plugins/delta.wasm"
echo "target/plugins/delta.wasm ($(stat -c %s "$wasm") bytes)"
