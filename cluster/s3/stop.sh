#!/usr/bin/env bash
# Stops the test S3 server started by cluster/s3/start.sh (LEGACY=1: the legacy one).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"
pf="$S3_DIR/server.pid"
[[ -f "$pf" ]] || exit 0
pid="$(cat "$pf")"
if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "cluster/s3/server.py"; then
  kill "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
fi
rm -f "$pf" "$S3_DIR/ready"
echo "S3 server stopped"
