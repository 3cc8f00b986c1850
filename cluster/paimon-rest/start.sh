#!/usr/bin/env bash
# Starts Apache Paimon's REST catalog test server (paimon-core's test fixture RESTCatalogServer;
# LoopbackPaimonRESTServer.java) as a background JVM on 127.0.0.1, after
# cluster/paimon-rest/setup.sh. Clients: metastore=rest, uri, warehouse=<name>,
# token.provider=bear, token (datalake.paimon.* on a Fluss cluster).
#
#   cluster/paimon-rest/start.sh [--clean]   # http://127.0.0.1:8281, files under target/paimon-rest/warehouse
#
# The server keeps the catalog (databases, tables, snapshots) in its memory: a new one knows
# nothing of the files an earlier one's clients wrote, so every start of a new server empties
# the data path first. Idempotent: a server already up with the same settings (port, warehouse
# name, data path, token, heap, setup) is left as it is, catalog and files; otherwise (and with
# --clean) it is stopped and started anew, empty. Waits (PAIMON_REST_START_TIMEOUT, 60 s) until
# GET /v1/config?warehouse=<name> answers with the token; on failure prints the end of its log,
# stops it and exits 1. Settings: env.sh (PAIMON_REST_PORT, _WAREHOUSE, _DATA, _TOKEN, _HEAP).
# On success the last lines are machine-readable, and $PAIMON_REST_DIR/server.env holds them
# for the tests:
#   PAIMON_REST_URI=http://127.0.0.1:8281  PAIMON_REST_WAREHOUSE=<name>  PAIMON_REST_DATA=<path>  PAIMON_REST_TOKEN=...
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"

CLEAN=0
for a in "$@"; do
  case "$a" in
    --clean) CLEAN=1 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) die "unknown argument: $a" ;;
  esac
done

[ -f "$PAIMON_REST_DIST_DIR/.ok" ] || die "no Paimon REST catalog server in $PAIMON_REST_DIST_DIR; run cluster/paimon-rest/setup.sh first"
PF="$PAIMON_REST_DIR/server.pid"
LOG="$PAIMON_REST_DIR/server.log"
running() { [ -f "$PF" ] && tr '\0' ' ' 2>/dev/null < "/proc/$(cat "$PF")/cmdline" | grep -qF " $PAIMON_REST_MAIN"; }
# The config request every client makes first: the warehouse name and the token are checked.
answers() {
  curl -fsS --max-time 2 -o /dev/null -H "Authorization: Bearer $PAIMON_REST_TOKEN" \
    "$PAIMON_REST_URI/v1/config?warehouse=$PAIMON_REST_WAREHOUSE" 2>/dev/null
}
# What a running server must have been started with to be left running (the token as a hash).
SETTINGS="port=$PAIMON_REST_PORT warehouse=$PAIMON_REST_WAREHOUSE data=$PAIMON_REST_DATA heap=$PAIMON_REST_HEAP token=$(printf %s "$PAIMON_REST_TOKEN" | md5sum | cut -c1-12) dist=$(cat "$PAIMON_REST_DIST_DIR/.ok")"

if running; then
  if [ "$CLEAN" = 0 ] && answers && [ -f "$PAIMON_REST_DIR/server.env" ] \
      && [ "$(cat "$PAIMON_REST_DIR/settings" 2>/dev/null)" = "$SETTINGS" ]; then
    echo "Paimon REST catalog already up: $PAIMON_REST_URI (pid $(cat "$PF"))"
    cat "$PAIMON_REST_DIR/server.env"
    exit 0
  fi
  "$HERE/stop.sh" >/dev/null
fi
rm -f "$PF" "$PAIMON_REST_DIR/server.env"
(exec 3<>"/dev/tcp/$PAIMON_REST_HOST/$PAIMON_REST_PORT") 2>/dev/null \
  && die "port $PAIMON_REST_HOST:$PAIMON_REST_PORT is already in use"

# A new server, an empty catalog: the files of the last one's go (see above); --clean also
# takes the logs.
for d in "$PAIMON_REST_DATA" $([ "$CLEAN" = 1 ] && echo "$PAIMON_REST_DIR"); do
  case "$d" in ""|"/"|"$HOME"|"$REPO") die "refusing to wipe '$d'" ;; esac
  rm -rf "$d"
done
mkdir -p "$PAIMON_REST_DIR/tmp" "$PAIMON_REST_DATA"
[ ! -f "$LOG" ] || mv -f "$LOG" "$LOG.prev"

# ---- the server ----------------------------------------------------------------------------
# A small heap, the serial collector and C1 alone: it serves small JSON requests and shares
# two cores with the clusters and the tests. flink-shaded-hadoop-2-uber goes last on the
# classpath: its old unshaded okio would otherwise shadow the one okhttp 4 needs.
T0=$(now_ms)
(cd "$PAIMON_REST_DIR" && exec nohup env PAIMON_REST_HOST="$PAIMON_REST_HOST" PAIMON_REST_PORT="$PAIMON_REST_PORT" \
    PAIMON_REST_DATA="$PAIMON_REST_DATA" PAIMON_REST_WAREHOUSE="$PAIMON_REST_WAREHOUSE" \
    PAIMON_REST_TOKEN="$PAIMON_REST_TOKEN" \
    "$JAVA" -Xms32m "-Xmx$PAIMON_REST_HEAP" \
    -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError \
    -Djava.io.tmpdir="$PAIMON_REST_DIR/tmp" \
    -cp "$PAIMON_REST_DIST_DIR/classes:$(jar_cp "$PAIMON_REST_DIST_DIR/lib" 'flink-shaded-hadoop-*')" \
    "$PAIMON_REST_MAIN" >"$LOG" 2>&1 </dev/null) &
echo $! > "$PF"
fail() {
  echo "ERROR: the Paimon REST catalog server $*; the end of $LOG:" >&2
  tail -n 40 "$LOG" >&2 || true
  "$HERE/stop.sh" >&2 || true
  exit 1
}
deadline=$(( T0 + PAIMON_REST_START_TIMEOUT * 1000 ))
until answers; do
  kill -0 "$(cat "$PF")" 2>/dev/null || fail "exited"
  (( $(now_ms) < deadline )) || fail "did not answer GET $PAIMON_REST_URI/v1/config within ${PAIMON_REST_START_TIMEOUT}s"
  sleep 0.1
done
echo "$SETTINGS" > "$PAIMON_REST_DIR/settings"
cat > "$PAIMON_REST_DIR/server.env" <<EOT
PAIMON_REST_URI=$PAIMON_REST_URI
PAIMON_REST_WAREHOUSE=$PAIMON_REST_WAREHOUSE
PAIMON_REST_DATA=$PAIMON_REST_DATA
PAIMON_REST_TOKEN=$PAIMON_REST_TOKEN
EOT
echo "Paimon REST catalog up in $(( $(now_ms) - T0 )) ms: $PAIMON_REST_URI (pid $(cat "$PF")), log $LOG"
cat "$PAIMON_REST_DIR/server.env"
