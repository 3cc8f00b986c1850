#!/usr/bin/env bash
# Start one server of a running local cluster again, with the command line start.sh gave it
# (after a test killed it), and wait until it is back: ZooKeeper answers `ruok`, the coordinator
# has initialised its context again, the coordinator sees a tablet server again.
#
#   cluster/restart-server.sh tablet-server-0       (or zookeeper, coordinator-server)
#
# The wait is bounded by RESTART_TIMEOUT seconds (default 120); on timeout, or when the server
# exits meanwhile, it prints the tail of the logs that tell why and exits 1. A coordinator
# restarted after a SIGKILL is back only once ZooKeeper has expired the killed one's session
# (it logs "Coordinator server already registered in Zookeeper. retrying register" until then):
# about 60 s, Fluss's zookeeper.client.session-timeout.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

name="${1:?usage: restart-server.sh NAME (zookeeper, coordinator-server, tablet-server-N)}"
main_class_of "$name" >/dev/null || die "unknown server '$name' (zookeeper, coordinator-server, tablet-server-N)"
: "${RESTART_TIMEOUT:=120}"
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
server_args=("$@")
SERVER_CP="$(jar_cp "$FLUSS_DIST_DIR/lib" 'fluss-server*.jar')"
# The logs are appended to (log4j2 append=true, `>>` below): what tells that the server is back
# is a line whose count rises above its count now.
count() { local n; n="$(grep -c -F -- "$2" "$LOG_DIR/$1.log" 2>/dev/null || true)"; echo "${n:-0}"; }
COORDINATOR_READY="End initializing coordinator context"   # what start.sh waits for, too
tablet_seen() { echo "New tablet server callback for tablet server ${name#tablet-server-}"; }
case "$name" in
  coordinator-server) seen_before=$(count coordinator-server "$COORDINATOR_READY") ;;
  tablet-server-*) seen_before=$(count coordinator-server "$(tablet_seen)") ;;
esac
# launch: start the server in the background, its pid in the pid file.
launch() {
  # shellcheck disable=SC2086  # option strings are intentionally word-split
  (cd "$CLUSTER_WORK_DIR" && exec nohup "$JAVA" $opts $FLUSS_JVM_OPTS ${EXTRA_JVM_OPTS:-} \
      -Djava.io.tmpdir="$CLUSTER_WORK_DIR/tmp/$name" \
      -Dlog.file="$LOG_DIR/$name.log" -Dlog4j.shutdownHookEnabled=false \
      -Dlog4j.configurationFile="file:$CONF_DIR/log4j2.properties" \
      -classpath "$SERVER_CP" "$main" "$@" >>"$LOG_DIR/$name.out" 2>&1 </dev/null) &
  echo $! > "$PID_DIR/$name.pid"
  echo "restarted $name (pid $!)"
}
# A coordinator gives up registering after 60 s of "already registered" (its predecessor's
# ZooKeeper session, as long, may expire a little later) and exits: Fluss 0.9.1's race, which a
# supervisor answers by starting it again, as this script does.
GAVE_UP_REGISTERING="exceeded total retry time"
gave_up_before=$(count "$name" "$GAVE_UP_REGISTERING")
launch "$@"
T0=$(now_ms)
deadline=$(( T0 + RESTART_TIMEOUT * 1000 ))

# give_up WHY: the tails of the restarted server's logs (and the coordinator's, which tells
# whether it saw a tablet server), then exit 1.
give_up() {
  echo "ERROR: $1" >&2
  local f logs=("$LOG_DIR/$name.out" "$LOG_DIR/$name.log")
  [ "$name" = coordinator-server ] || logs+=("$LOG_DIR/coordinator-server.log")
  for f in "${logs[@]}"; do
    [ -s "$f" ] || continue
    echo "----- tail -n 40 $f" >&2; tail -n 40 "$f" >&2
  done
  exit 1
}
# wait_for WHAT COMMAND...: poll COMMAND until it succeeds, giving up when the server exited
# or RESTART_TIMEOUT is up.
wait_for() {
  local what="$1"; shift
  until "$@"; do
    if ! running && [ "$name" = coordinator-server ] \
        && (( $(count "$name" "$GAVE_UP_REGISTERING") > gave_up_before )); then
      gave_up_before=$(count "$name" "$GAVE_UP_REGISTERING")
      echo "$name gave up registering in ZooKeeper before its predecessor's session expired: starting it again"
      launch "${server_args[@]}"
    fi
    running || give_up "$name exited while waiting for $what"
    (( $(now_ms) < deadline )) || give_up "timed out after ${RESTART_TIMEOUT}s waiting for $what"
    sleep 0.2
  done
}
# (as start.sh's, with the read bounded: a stopped ZooKeeper accepts the connection and never answers)
zk_ok() { local r; r="$( (exec 3<>"/dev/tcp/$FLUSS_HOST/$ZK_PORT"; printf ruok >&3; timeout 2 head -c 4 <&3) 2>/dev/null)"; [ "$r" = imok ]; }
rose() { (( $(count "$1" "$2") > seen_before )); }
case "$name" in
  zookeeper) wait_for "zookeeper ruok" zk_ok ;;
  coordinator-server)
    wait_for "the coordinator to initialise its context" rose coordinator-server "$COORDINATOR_READY" ;;
  tablet-server-*)
    wait_for "the coordinator to see $name" rose coordinator-server "$(tablet_seen)" ;;
esac
echo "$name is back after $(( $(now_ms) - T0 )) ms"
