#!/usr/bin/env bash
# Stops the Iceberg REST catalog server started by cluster/iceberg-rest/start.sh (the instance of
# ICEBERG_REST_INDEX, or ICEBERG_REST_DIR). Only the pid in its pid file is touched, and only while
# its command line is the server's. SIGTERM, SIGKILL after 10 s. The catalog and the warehouse
# stay (start.sh --clean wipes them).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

PF="$ICEBERG_REST_DIR/server.pid"
rm -f "$ICEBERG_REST_DIR/server.env"
[ -f "$PF" ] || exit 0
pid="$(cat "$PF")"
ours() { tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -qF " $ICEBERG_REST_MAIN"; }
if ours; then
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do ours || break; sleep 0.1; done
  if ours; then
    echo "Iceberg REST catalog server (pid $pid) still alive after 10 s: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  echo "Iceberg REST catalog server stopped (pid $pid)"
fi
rm -f "$PF"
