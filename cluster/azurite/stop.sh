#!/usr/bin/env bash
# Stops Azurite started by cluster/azurite/start.sh (its data was in memory: gone with it).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"
pf="$AZURITE_DIR/server.pid"
[[ -f "$pf" ]] || exit 0
pid="$(cat "$pf")"
if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "azurite/dist/src/blob/main.js"; then
  kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
fi
rm -f "$pf" "$AZURITE_DIR/ready"
echo "Azurite stopped"
