#!/usr/bin/env bash
# Stop the local Fluss cluster started by start.sh: tablet servers, then the coordinator, then
# ZooKeeper. Only PIDs from $CLUSTER_WORK_DIR/pids are touched, and only while /proc/<pid>/cmdline
# still contains the expected main class. SIGTERM first (servers run their shutdown hooks),
# SIGKILL after STOP_TIMEOUT seconds (default 30).
#
#   cluster/stop.sh [--purge]       --purge: also delete $CLUSTER_WORK_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

PURGE=0
for a in "$@"; do
  case "$a" in
    --purge) PURGE=1 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) die "unknown argument: $a" ;;
  esac
done

stop_one() { # NAME
  local name="$1" pf="$PID_DIR/$1.pid" pid t
  [ -f "$pf" ] || return 0
  pid="$(cat "$pf")"
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "$name: not running"; rm -f "$pf"; return 0
  fi
  if ! pid_matches "$name" "$pid"; then
    echo "$name: pid $pid is not $(main_class_of "$name"); leaving it alone" >&2; rm -f "$pf"; return 0
  fi
  kill -TERM "$pid" 2>/dev/null
  t=$(now_ms)
  while kill -0 "$pid" 2>/dev/null && pid_matches "$name" "$pid"; do
    if (( $(now_ms) - t > STOP_TIMEOUT * 1000 )); then
      echo "$name: still alive after ${STOP_TIMEOUT}s, SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null; sleep 0.5; break
    fi
    sleep 0.2
  done
  echo "$name: stopped (pid $pid) in $(( $(now_ms) - t )) ms"
  rm -f "$pf"
}

if [ -d "$PID_DIR" ]; then
  for pf in $(ls -1r "$PID_DIR"/tablet-server-*.pid 2>/dev/null); do stop_one "$(basename "$pf" .pid)"; done
  stop_one coordinator-server
  stop_one zookeeper
fi

if [ "$PURGE" = 1 ]; then
  case "$CLUSTER_WORK_DIR" in ""|"/"|"$HOME"|"$REPO") die "refusing to purge '$CLUSTER_WORK_DIR'" ;; esac
  rm -rf "$CLUSTER_WORK_DIR"; echo "purged $CLUSTER_WORK_DIR"
fi
