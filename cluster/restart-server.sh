#!/usr/bin/env bash
# Start one server of a running local cluster again, with the command line start.sh gave it
# (after a test killed it), and wait until the coordinator sees it (tablet servers) or it is
# ready (coordinator).
#
#   cluster/restart-server.sh tablet-server-0
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

name="${1:?usage: restart-server.sh NAME (e.g. tablet-server-0)}"
args_file="$PID_DIR/$name.args"
[ -f "$args_file" ] || die "$args_file missing: was $name started by start.sh?"
# Running: the pid file's process exists and is not a zombie (a server that exited, waiting for
# its parent, init, to reap it: `kill -0` still succeeds for it).
running() {
  local pid
  pid="$(cat "$PID_DIR/$name.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}
if running; then
  die "$name is still running"
fi
eval "set -- $(cat "$args_file")"
main="$1" opts="$2"; shift 2
SERVER_CP="$(jar_cp "$FLUSS_DIST_DIR/lib" 'fluss-server*.jar')"
seen_before=$(grep -c "New tablet server callback for tablet server ${name#tablet-server-}" \
  "$LOG_DIR/coordinator-server.log" 2>/dev/null || true)
# shellcheck disable=SC2086  # option strings are intentionally word-split
(cd "$CLUSTER_WORK_DIR" && exec nohup "$JAVA" $opts $FLUSS_JVM_OPTS ${EXTRA_JVM_OPTS:-} \
    -Djava.io.tmpdir="$CLUSTER_WORK_DIR/tmp/$name" \
    -Dlog.file="$LOG_DIR/$name.log" -Dlog4j.shutdownHookEnabled=false \
    -Dlog4j.configurationFile="file:$CONF_DIR/log4j2.properties" \
    -classpath "$SERVER_CP" "$main" "$@" >>"$LOG_DIR/$name.out" 2>&1 </dev/null) &
echo $! > "$PID_DIR/$name.pid"
echo "restarted $name (pid $!)"
deadline=$(( $(now_ms) + 120000 ))
case "$name" in
  tablet-server-*)
    until (( $(grep -c "New tablet server callback for tablet server ${name#tablet-server-}" \
              "$LOG_DIR/coordinator-server.log" 2>/dev/null || true) > seen_before )); do
      kill -0 "$(cat "$PID_DIR/$name.pid")" 2>/dev/null || die "$name exited; see $LOG_DIR/$name.out"
      (( $(now_ms) < deadline )) || die "the coordinator did not see $name within 120 s"
      sleep 0.2
    done ;;
esac
echo "$name is back"
