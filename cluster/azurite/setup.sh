#!/usr/bin/env bash
# Installs Azurite (the Azure Storage emulator, from the npm registry) into target/azurite-dist,
# exactly the versions of package-lock.json (npm ci). Idempotent, and safe to run concurrently
# (one install at a time): start.sh runs it too.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"
command -v node >/dev/null && command -v npm >/dev/null \
  || { echo "ERROR: Azurite needs Node.js and npm (not found on PATH)" >&2; exit 1; }
mkdir -p "$AZURITE_INSTALL"
exec 9>"$AZURITE_INSTALL.lock"
flock 9
want="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ -f "$AZURITE_INSTALL/node_modules/azurite/package.json" \
      && "$(cat "$AZURITE_INSTALL/.lock.sha256" 2>/dev/null)" == "$want" ]]; then
  exit 0
fi
echo "installing Azurite $(sed -n 's/.*"azurite": "\(.*\)".*/\1/p' "$HERE/package.json") into $AZURITE_INSTALL (npm ci)"
cp "$HERE/package.json" "$HERE/package-lock.json" "$AZURITE_INSTALL/"
(cd "$AZURITE_INSTALL" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" > "$AZURITE_INSTALL/.lock.sha256"
