#!/usr/bin/env bash
# Stops Paimon's REST catalog test server started by cluster/paimon-rest/start.sh. Only the pid in
# its pid file is touched, and only while its command line is the server's. SIGTERM, SIGKILL
# after 10 s. The files under the data path stay (start.sh wipes them: the catalog that knew
# them lived in the server's memory).
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

PF="$PAIMON_REST_DIR/server.pid"
rm -f "$PAIMON_REST_DIR/server.env"
[ -f "$PF" ] || exit 0
pid="$(cat "$PF")"
ours() { tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -qF " $PAIMON_REST_MAIN"; }
if ours; then
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do ours || break; sleep 0.1; done
  if ours; then
    echo "Paimon REST catalog server (pid $pid) still alive after 10 s: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  echo "Paimon REST catalog server stopped (pid $pid)"
fi
rm -f "$PF"
