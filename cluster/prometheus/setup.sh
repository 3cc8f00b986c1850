#!/usr/bin/env bash
# Puts Debian's prometheus package (prometheus and promtool) under $PROM_DIST
# (target/prometheus-dist) without installing it: `apt-get download` + `dpkg-deb -x`. The
# package's postinst is never run, so no daemon is started on 0.0.0.0:9090 and nothing is
# written outside target/. Needs no root unless the apt lists must be refreshed.
# Idempotent: does nothing when $PROM_DIST/usr/bin/prometheus runs.
#
#   cluster/prometheus/setup.sh
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

works() { "$PROM_BIN" --version >/dev/null 2>&1 && "$PROMTOOL" --version >/dev/null 2>&1; }
if works; then
  echo "prometheus already in $PROM_DIST: $("$PROM_BIN" --version 2>&1 | head -n 1)"
  exit 0
fi

# One setup at a time (scripts/test.sh runs it in the background; a test run may start by hand).
mkdir -p "$(dirname "$PROM_DIST")"
exec 9>"$PROM_DIST.lock"
flock 9
if works; then
  echo "prometheus already in $PROM_DIST: $("$PROM_BIN" --version 2>&1 | head -n 1)"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# apt downloads as its sandbox user _apt, which must be able to write there.
chmod 755 "$tmp"
if [[ "$(id -u)" == 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
sudo=()
[[ "$(id -u)" == 0 ]] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
echo "downloading Debian's prometheus package"
if ! (cd "$tmp" && apt-get download -qq prometheus); then
  "${sudo[@]}" apt-get update -qq
  (cd "$tmp" && apt-get download -qq prometheus)
fi
deb="$(ls "$tmp"/prometheus_*.deb)"
echo "extracting $(basename "$deb") into $PROM_DIST"
rm -rf "$PROM_DIST.tmp"
dpkg-deb -x "$deb" "$PROM_DIST.tmp"
rm -rf "$PROM_DIST"
mv "$PROM_DIST.tmp" "$PROM_DIST"
if ! works; then
  echo "ERROR: $PROM_BIN or $PROMTOOL does not run after extracting $(basename "$deb")" >&2
  exit 1
fi
echo "prometheus in $PROM_DIST: $("$PROM_BIN" --version 2>&1 | head -n 1)"
