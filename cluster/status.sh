#!/usr/bin/env bash
# Which local Fluss processes (started by start.sh) are alive. Exit 0 iff all of them are.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

names=(zookeeper coordinator-server)
for ((i = 0; i < TS_COUNT; i++)); do names+=("tablet-server-$i"); done
for pf in "$PID_DIR"/tablet-server-*.pid; do   # extra ones from a start with a larger TS_COUNT
  [ -f "$pf" ] && [[ " ${names[*]} " != *" $(basename "$pf" .pid) "* ]] && names+=("$(basename "$pf" .pid)")
done
all=0
printf '%-20s %-8s %-6s %-9s %s\n' PROCESS PID STATE RSS PORT
for n in "${names[@]}"; do
  case "$n" in
    zookeeper) port=$ZK_PORT ;;
    coordinator-server) port=$COORDINATOR_PORT ;;
    *) port=$((TABLET_PORT_BASE + ${n#tablet-server-})) ;;
  esac
  pf="$PID_DIR/$n.pid"; pid=-; state=down; rss=-
  if [ -f "$pf" ]; then
    pid="$(cat "$pf")"
    if pid_matches "$n" "$pid"; then
      state=up; rss="$(awk '/VmRSS/ {printf "%dMiB", $2/1024}' "/proc/$pid/status" 2>/dev/null)"
    fi
  fi
  [ "$state" = up ] || all=1
  if port_open "$port"; then ps="$FLUSS_HOST:$port open"; else ps="$FLUSS_HOST:$port closed"; fi
  printf '%-20s %-8s %-6s %-9s %s\n' "$n" "$pid" "$state" "$rss" "$ps"
done
exit "$all"
