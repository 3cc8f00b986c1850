#!/usr/bin/env bash
# Stops the Hive metastore started by cluster/hive-metastore/start.sh. Only the pid in its pid
# file is touched, and only while its command line is the metastore's. SIGTERM, SIGKILL after
# 10 s. The Derby database and the warehouse stay (start.sh --clean wipes them).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

PF="$HIVE_METASTORE_DIR/server.pid"
rm -f "$HIVE_METASTORE_DIR/server.env"
[ -f "$PF" ] || exit 0
pid="$(cat "$PF")"
ours() { tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -qF " $HIVE_METASTORE_MAIN"; }
if ours; then
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do ours || break; sleep 0.1; done
  if ours; then
    echo "Hive metastore (pid $pid) still alive after 10 s: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  echo "Hive metastore stopped (pid $pid)"
fi
rm -f "$PF"
