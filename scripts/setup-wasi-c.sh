#!/usr/bin/env bash
# Installs the C toolchain the plugins' C code (zstd-sys) is compiled with for wasm32-wasip2:
# Debian's clang (with llvm-ar) and wasi-libc's headers. `.cargo/config.toml` sets the flags.
# Idempotent: does nothing when they are present.
#
#   scripts/setup-wasi-c.sh
set -euo pipefail

if command -v clang >/dev/null && command -v llvm-ar >/dev/null \
  && [[ -f /usr/include/wasm32-wasi/stdlib.h ]]; then
  exit 0
fi
packages=(clang llvm wasi-libc)
echo "installing the WASI C toolchain: Debian packages ${packages[*]}"
sudo=()
[[ "$(id -u)" == 0 ]] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; then
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi
if ! command -v clang >/dev/null || [[ ! -f /usr/include/wasm32-wasi/stdlib.h ]]; then
  echo "ERROR: clang or /usr/include/wasm32-wasi/stdlib.h still missing after installing ${packages[*]}" >&2
  exit 1
fi
