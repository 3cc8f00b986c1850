#!/usr/bin/env bash
# Starts Apache Hive's standalone metastore (HiveMetaStore 4.0.1, embedded Derby, warehouse on
# local disk) as a background JVM on 127.0.0.1, after cluster/hive-metastore/setup.sh.
#
#   cluster/hive-metastore/start.sh [--clean]   # thrift://127.0.0.1:9883, state under target/hive-metastore/
#
# --clean wipes $HIVE_METASTORE_DIR first: the Derby database, and the warehouse when it is the
# default one there. The Derby schema is created by schematool on the first start, after --clean
# and after a new setup. Idempotent: a metastore already up with the same settings (port,
# warehouse, heap, setup) is left as it is; otherwise (and with --clean) it is stopped and
# started anew. Waits (HIVE_METASTORE_START_TIMEOUT, 90 s) until the Thrift port answers a call;
# on failure prints the end of its log, stops it and exits 1. Settings: env.sh
# (HIVE_METASTORE_PORT, _WAREHOUSE, _HEAP). On success the last lines are machine-readable, and
# $HIVE_METASTORE_DIR/server.env holds them for the tests:
#   HIVE_METASTORE_URI=thrift://127.0.0.1:9883  HIVE_METASTORE_WAREHOUSE=...
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"

CLEAN=0
for a in "$@"; do
  case "$a" in
    --clean) CLEAN=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) die "unknown argument: $a" ;;
  esac
done

[ -f "$HIVE_METASTORE_DIST_DIR/.ok" ] || die "no Hive metastore in $HIVE_METASTORE_DIST_DIR; run cluster/hive-metastore/setup.sh first"
PF="$HIVE_METASTORE_DIR/server.pid"
LOG="$HIVE_METASTORE_DIR/server.log"
CONF="$HIVE_METASTORE_DIR/conf"
running() { [ -f "$PF" ] && tr '\0' ' ' 2>/dev/null < "/proc/$(cat "$PF")/cmdline" | grep -qF " $HIVE_METASTORE_MAIN"; }
# A listening port is not yet a serving metastore: it must answer fb303's getStatus (a Thrift
# binary-protocol call without arguments, on the metastore's default transport) with ALIVE. The
# answer is read whole (29 bytes), so the metastore sees the connection end cleanly, not reset.
answers() {
  local reply
  reply="$(timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "\x80\x01\x00\x01\x00\x00\x00\x09getStatus\x00\x00\x00\x01\x00" >&3
    head -c 29 <&3 | od -An -tx1' "$HIVE_METASTORE_HOST" "$HIVE_METASTORE_PORT" 2>/dev/null)" || return 1
  # REPLY "getStatus" seqid 1, field 0 (i32) = 2 (fb_status.ALIVE), stop
  [ "$(echo $reply)" = "80 01 00 02 00 00 00 09 67 65 74 53 74 61 74 75 73 00 00 00 01 08 00 00 00 00 00 02 00" ]
}
# What a running metastore must have been started with to be left running.
SETTINGS="port=$HIVE_METASTORE_PORT warehouse=$HIVE_METASTORE_WAREHOUSE heap=$HIVE_METASTORE_HEAP dist=$(cat "$HIVE_METASTORE_DIST_DIR/.ok")"

if running; then
  if [ "$CLEAN" = 0 ] && answers && [ -f "$HIVE_METASTORE_DIR/server.env" ] \
      && [ "$(cat "$HIVE_METASTORE_DIR/settings" 2>/dev/null)" = "$SETTINGS" ]; then
    echo "Hive metastore already up: $HIVE_METASTORE_URI (pid $(cat "$PF"))"
    cat "$HIVE_METASTORE_DIR/server.env"
    exit 0
  fi
  "$HERE/stop.sh" >/dev/null
fi
rm -f "$PF" "$HIVE_METASTORE_DIR/server.env"
(exec 3<>"/dev/tcp/$HIVE_METASTORE_HOST/$HIVE_METASTORE_PORT") 2>/dev/null \
  && die "port $HIVE_METASTORE_HOST:$HIVE_METASTORE_PORT is already in use"

if [ "$CLEAN" = 1 ]; then
  case "$HIVE_METASTORE_DIR" in ""|"/"|"$HOME"|"$REPO") die "refusing to wipe '$HIVE_METASTORE_DIR'" ;; esac
  rm -rf "$HIVE_METASTORE_DIR"
fi
mkdir -p "$CONF" "$HIVE_METASTORE_DIR/tmp" "$HIVE_METASTORE_WAREHOUSE"
[ ! -f "$LOG" ] || mv -f "$LOG" "$LOG.prev"

# ---- configuration -------------------------------------------------------------------------
# metastore-site.xml, read from the classpath (conf/ first):
# - embedded Derby in db/, its schema created by schematool (below) and verified at start;
# - the Thrift server on loopback only, with few idle worker threads (200 by default);
# - column type changes allowed: Iceberg's HiveCatalog writes a table's columns into the
#   metastore on every schema change, and a dropped or retyped column is otherwise refused;
# - synchronous logging: asynchronous Log4j needs LMAX Disruptor, which the jars lack;
# - no housekeeping threads (event, statistics and ACID cleaners): a test metastore needs none,
#   and one of the defaults (HiveProtoEventsCleanerTask) lives in hive-exec, so their start
#   fails with a stack trace.
cat > "$CONF/metastore-site.xml" <<EOF
<?xml version="1.0"?>
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName=$HIVE_METASTORE_DIR/db;create=true</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
  <property><name>datanucleus.schema.autoCreateAll</name><value>false</value></property>
  <property><name>metastore.schema.verification</name><value>true</value></property>
  <property><name>metastore.warehouse.dir</name><value>file://$HIVE_METASTORE_WAREHOUSE</value></property>
  <property><name>metastore.thrift.bind.host</name><value>$HIVE_METASTORE_HOST</value></property>
  <property><name>metastore.thrift.port</name><value>$HIVE_METASTORE_PORT</value></property>
  <property><name>metastore.server.min.threads</name><value>4</value></property>
  <property><name>metastore.disallow.incompatible.col.type.changes</name><value>false</value></property>
  <property><name>metastore.async.log.enabled</name><value>false</value></property>
  <property><name>metastore.task.threads.always</name><value></value></property>
  <property><name>metastore.task.threads.remote</name><value></value></property>
</configuration>
EOF
# The metastore's Log4j 2 configuration (LogUtils looks for this name on the classpath): INFO to
# the console, which is server.log; DataNucleus's and Derby's chatter at WARN.
cat > "$CONF/metastore-log4j2.properties" <<'EOF'
status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_OUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %-5p [%t] %c{1}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
logger.datanucleus.name = DataNucleus
logger.datanucleus.level = WARN
logger.datanucleus2.name = org.datanucleus
logger.datanucleus2.level = WARN
EOF

# ---- the Derby schema ----------------------------------------------------------------------
# Created once by schematool from the release's own script (hive-schema-<version>.derby.sql):
# every table, the transaction and lock tables included, in which Iceberg's HiveCatalog takes a
# lock for each commit (DataNucleus's autoCreateAll makes only the tables of its JDO model, and
# a lock request then fails: "Table/View 'HIVE_LOCKS' does not exist"). schema.ok marks a
# finished one with the setup it was made by (the script is patched there, setup.sh): a
# half-made database, or one of another setup, is made anew.
T0=$(now_ms)
if [ "$(cat "$HIVE_METASTORE_DIR/schema.ok" 2>/dev/null)" != "$(cat "$HIVE_METASTORE_DIST_DIR/.ok")" ]; then
  rm -rf "$HIVE_METASTORE_DIR/db"
  (cd "$HIVE_METASTORE_DIR" && METASTORE_HOME="$HIVE_METASTORE_DIST_DIR" "$JAVA" -Xmx256m \
      -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      -Djava.io.tmpdir="$HIVE_METASTORE_DIR/tmp" -Dderby.stream.error.file="$HIVE_METASTORE_DIR/derby.log" \
      -cp "$CONF:$(jar_cp "$HIVE_METASTORE_DIST_DIR/lib")" \
      org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool -initSchema -dbType derby \
      >"$HIVE_METASTORE_DIR/schematool.log" 2>&1 </dev/null) || {
    echo "ERROR: schematool could not create the metastore's Derby schema; the end of $HIVE_METASTORE_DIR/schematool.log:" >&2
    tail -n 40 "$HIVE_METASTORE_DIR/schematool.log" >&2
    exit 1
  }
  cp "$HIVE_METASTORE_DIST_DIR/.ok" "$HIVE_METASTORE_DIR/schema.ok"
  echo "Derby schema created in $(( $(now_ms) - T0 )) ms (log $HIVE_METASTORE_DIR/schematool.log)"
fi

# ---- the server ----------------------------------------------------------------------------
# A small heap, the serial collector and C1 alone: it serves a few small calls per commit and
# shares two cores with the clusters and the tests.
(cd "$HIVE_METASTORE_DIR" && exec nohup "$JAVA" -Xms32m "-Xmx$HIVE_METASTORE_HEAP" \
    -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError \
    -Djava.io.tmpdir="$HIVE_METASTORE_DIR/tmp" -Dderby.stream.error.file="$HIVE_METASTORE_DIR/derby.log" \
    -cp "$CONF:$(jar_cp "$HIVE_METASTORE_DIST_DIR/lib")" \
    "$HIVE_METASTORE_MAIN" -p "$HIVE_METASTORE_PORT" >"$LOG" 2>&1 </dev/null) &
echo $! > "$PF"
fail() {
  echo "ERROR: the Hive metastore $*; the end of $LOG:" >&2
  tail -n 40 "$LOG" >&2 || true
  "$HERE/stop.sh" >&2 || true
  exit 1
}
deadline=$(( T0 + HIVE_METASTORE_START_TIMEOUT * 1000 ))
until answers; do
  kill -0 "$(cat "$PF")" 2>/dev/null || fail "exited"
  (( $(now_ms) < deadline )) || fail "did not answer on $HIVE_METASTORE_URI within ${HIVE_METASTORE_START_TIMEOUT}s"
  sleep 0.2
done
echo "$SETTINGS" > "$HIVE_METASTORE_DIR/settings"
cat > "$HIVE_METASTORE_DIR/server.env" <<EOF
HIVE_METASTORE_URI=$HIVE_METASTORE_URI
HIVE_METASTORE_WAREHOUSE=$HIVE_METASTORE_WAREHOUSE
EOF
echo "Hive metastore up in $(( $(now_ms) - T0 )) ms: $HIVE_METASTORE_URI (pid $(cat "$PF")), log $LOG"
cat "$HIVE_METASTORE_DIR/server.env"
