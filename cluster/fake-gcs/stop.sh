#!/usr/bin/env bash
# Stops fake-gcs-server started by cluster/fake-gcs/start.sh (its data was in memory: gone with it).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"
pf="$FAKE_GCS_DIR/server.pid"
[[ -f "$pf" ]] || exit 0
pid="$(cat "$pf")"
if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "fake-gcs-server"; then
  kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
fi
rm -f "$pf" "$FAKE_GCS_DIR/ready"
echo "fake-gcs-server stopped"
