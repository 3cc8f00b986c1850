#!/usr/bin/env bash
# Builds every guest plugin (each guest-*/ crate with [package.metadata.fluss-lake] format = "...")
# as a WebAssembly component and copies it to target/plugins/<format>.wasm, then runs the
# build.sh of every third-party example plugin (examples/*/), which does the same.
#
#   scripts/build-plugins.sh            # all plugins, --profile guest (LTO, opt-level 3)
#   PROFILE=dev scripts/build-plugins.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROFILE="${PROFILE:-guest}"
TARGET=wasm32-wasip2
cd "$ROOT"

if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
    rustup target add "$TARGET"
fi
# zstd-sys is C: compiled by Debian's clang against wasi-libc (.cargo/config.toml).
scripts/setup-wasi-c.sh

packages=()
formats=()
libs=()
for manifest in guest-*/Cargo.toml tests/plugins/*/Cargo.toml; do
    format="$(sed -n '/^\[package.metadata.fluss-lake\]/,/^\[/s/^format *= *"\(.*\)"/\1/p' "$manifest")"
    [[ -n "$format" ]] || continue
    package="$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$manifest" | head -1)"
    lib="$(sed -n '/^\[lib\]/,/^\[/s/^name *= *"\(.*\)"/\1/p' "$manifest")"
    packages+=("$package")
    formats+=("$format")
    libs+=("${lib:-${package//-/_}}")
done
if [[ ${#packages[@]} -eq 0 ]]; then
    echo "no guest plugin found" >&2
    exit 1
fi

args=()
for p in "${packages[@]}"; do args+=(-p "$p"); done
echo "building ${packages[*]} for $TARGET (profile $PROFILE)"
cargo build --target "$TARGET" --profile "$PROFILE" "${args[@]}"

outdir="$ROOT/target/$TARGET/$PROFILE"
[[ "$PROFILE" == dev ]] && outdir="$ROOT/target/$TARGET/debug"
mkdir -p "$ROOT/target/plugins"
for i in "${!packages[@]}"; do
    wasm="$outdir/${libs[$i]}.wasm"
    # A component (not a core module) starts with \0asm, version 0x0d, layer 1.
    magic="$(head -c 8 "$wasm" | od -An -tx1 | tr -d ' \n')"
    if [[ "$magic" != "0061736d0d000100" ]]; then
        echo "error: $wasm is not a WebAssembly component (header $magic)" >&2
        exit 1
    fi
    cp "$wasm" "$ROOT/target/plugins/${formats[$i]}.wasm"
    echo "target/plugins/${formats[$i]}.wasm ($(stat -c %s "$wasm") bytes)"
done

# Third-party example plugins: their own workspaces, each with its own build script.
for build in examples/*/build.sh; do
    PROFILE="$PROFILE" bash "$build"
done
