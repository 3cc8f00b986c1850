#!/usr/bin/env bash
# Start a real local Fluss cluster on loopback: ZooKeeper, one CoordinatorServer and TS_COUNT
# TabletServers, each a background JVM (pid files in $CLUSTER_WORK_DIR/pids, logs in .../log).
#
#   cluster/start.sh [--clean]      --clean: wipe $CLUSTER_WORK_DIR (all data, logs, warehouse) first
#
# Waits (START_TIMEOUT, default 120 s) until the coordinator has registered every tablet server.
# On failure: prints the tail of every log, stops what it started, exits 1.
# On success the last lines are machine-readable:
#   BOOTSTRAP=127.0.0.1:9123  DATALAKE_FORMAT=paimon  PAIMON_WAREHOUSE=...  REMOTE_DATA_DIR=...  ...
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

CLEAN=0
for a in "$@"; do
  case "$a" in
    --clean) CLEAN=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) die "unknown argument: $a" ;;
  esac
done

# ---- preconditions ---------------------------------------------------------------
[ -f "$FLUSS_DIST_DIR/.lib.ok" ] || die "no Fluss jars in $FLUSS_DIST_DIR; run cluster/setup.sh first"
SERVER_CP="$(jar_cp "$FLUSS_DIST_DIR/lib" 'fluss-server*.jar')"   # fluss-server last, like fluss-dist
case "$DATALAKE_FORMAT" in
  paimon|iceberg|lance)
    [ -f "$FLUSS_DIST_DIR/.$DATALAKE_FORMAT.ok" ] \
      || die "plugins/$DATALAKE_FORMAT missing; run: WITH_${DATALAKE_FORMAT^^}=1 cluster/setup.sh" ;;
  none) ;;
  *) die "DATALAKE_FORMAT must be paimon, iceberg, lance or none (got '$DATALAKE_FORMAT')" ;;
esac
NAMES=(zookeeper coordinator-server)
PORTS=("$ZK_PORT" "$COORDINATOR_PORT")
for ((i = 0; i < TS_COUNT; i++)); do NAMES+=("tablet-server-$i"); PORTS+=("$((TABLET_PORT_BASE + i))"); done
for n in "${NAMES[@]}"; do
  pf="$PID_DIR/$n.pid"
  if [ -f "$pf" ] && pid_matches "$n" "$(cat "$pf")"; then
    die "$n is already running (pid $(cat "$pf")); run cluster/stop.sh first"
  fi
done
[ -z "$SASL_USERS" ] || for p in "${PORTS[@]:1}"; do PORTS+=("$((p + SASL_PORT_SHIFT))"); done
for p in "${PORTS[@]}"; do ! port_open "$p" || die "port $FLUSS_HOST:$p is already in use"; done
S3_YAML=""
case "$STORAGE" in
  local) ;;
  s3)
    s3_settings
    REMOTE_DATA_DIR="$S3_ROOT/remote-data"
    # Small log segments copied to S3 every few seconds: a backlog reaches remote storage in
    # seconds (the test of a round whose backlog is only there). Production sets its own.
    : "${S3_LOG_SEGMENT_SIZE:=1mb}" "${S3_REMOTE_LOG_INTERVAL:=2s}"
    # Fluss's S3 file system: its own access with the static keys, and session credentials
    # for clients (fluss-rs reading remote log segments) from STS AssumeRole.
    S3_YAML="s3.endpoint: $S3_ENDPOINT
s3.region: $S3_REGION
s3.path.style.access: true
s3.access-key: $S3_ACCESS_KEY
s3.secret-key: $S3_SECRET_KEY
s3.assumed.role.arn: $S3_ROLE_ARN
s3.assumed.role.sts.endpoint: $S3_ENDPOINT
log.segment.file-size: $S3_LOG_SEGMENT_SIZE
remote.log.task-interval-duration: $S3_REMOTE_LOG_INTERVAL"
    [ -f "$FLUSS_DIST_DIR/.s3.ok" ] || die "plugins/s3 missing; run: WITH_S3=1 cluster/setup.sh" ;;
  gcs)
    # fake-gcs-server (cluster/fake-gcs/start.sh), without authentication. Fluss 0.9 hands
    # clients no credentials for GCS: they reach it with their own (the host:
    # --fluss.client.fs.*). Small segments copied every few seconds, as for s3.
    source "$CLUSTER_DIR/fake-gcs/env.sh"
    curl -sf -o /dev/null "$FAKE_GCS_ENDPOINT/storage/v1/b/$FAKE_GCS_BUCKET" \
      || die "fake-gcs-server does not serve bucket $FAKE_GCS_BUCKET at $FAKE_GCS_ENDPOINT; run cluster/fake-gcs/start.sh"
    REMOTE_DATA_DIR="gs://$FAKE_GCS_BUCKET/cluster-$CLUSTER_INDEX/remote-data"
    : "${S3_LOG_SEGMENT_SIZE:=1mb}" "${S3_REMOTE_LOG_INTERVAL:=2s}"
    S3_YAML="fs.gs.storage.root.url: $FAKE_GCS_ENDPOINT
fs.gs.auth.service.account.enable: false
fs.gs.auth.null.enable: true
log.segment.file-size: $S3_LOG_SEGMENT_SIZE
remote.log.task-interval-duration: $S3_REMOTE_LOG_INTERVAL"
    [ -f "$FLUSS_DIST_DIR/.gs.ok" ] || die "plugins/gs missing; run: WITH_GCS=1 cluster/setup.sh" ;;
  *) die "STORAGE must be local, s3 or gcs (got '$STORAGE')" ;;
esac
SASL_YAML=""
if [ -n "$SASL_USERS" ]; then
  jaas_users=""
  read -ra sasl_entries <<< "$SASL_USERS"
  for u in "${sasl_entries[@]}"; do
    # A password may not hold what would end or break the JAAS line: quotes, ';', '\'.
    [[ "$u" =~ ^[A-Za-z0-9_-]+:[^\"\;\\[:space:]]+$ ]] || die "SASL_USERS entry '$u' is not user:password (no quotes, ';' or '\\' in the password)"
    jaas_users+=" user_${u%%:*}=\"${u#*:}\""
  done
  SASL_YAML="internal.listener.name: FLUSS
security.protocol.map: SECURE:SASL
security.sasl.enabled.mechanisms: PLAIN
security.sasl.plain.jaas.config: org.apache.fluss.security.auth.sasl.plain.PlainLoginModule required$jaas_users;"
fi

# ---- work dir & config -------------------------------------------------------------
if [ "$CLEAN" = 1 ]; then
  case "$CLUSTER_WORK_DIR" in ""|"/"|"$HOME"|"$REPO") die "refusing to wipe '$CLUSTER_WORK_DIR'" ;; esac
  # The end of the logs of the run wiped, for whoever looks into why it ended (a server that
  # died under a test): target/cluster-logs/<index>-<time>/.
  if compgen -G "$LOG_DIR/*.log" >/dev/null; then
    kept="$REPO/target/cluster-logs/$CLUSTER_INDEX-$(date +%H%M%S)"
    mkdir -p "$kept"
    for f in "$LOG_DIR"/*.log "$LOG_DIR"/*.out; do
      if [ -s "$f" ]; then tail -n 300 "$f" > "$kept/$(basename "$f")"; fi
    done
  fi
  rm -rf "$CLUSTER_WORK_DIR"
fi
rm -f "$PID_DIR"/*.pid 2>/dev/null || true
mkdir -p "$CONF_DIR" "$LOG_DIR/prev" "$PID_DIR" "$ZK_DATA_DIR" "$DATA_DIR" "$CLUSTER_WORK_DIR/tmp"
[ "$STORAGE" != local ] || mkdir -p "$REMOTE_DATA_DIR"
echo "$STORAGE" > "$CLUSTER_WORK_DIR/storage"
# readiness is read from the logs: keep the previous run's logs out of the way (log/prev/)
for f in "$LOG_DIR"/*.log "$LOG_DIR"/*.out; do [ -e "$f" ] && mv -f "$f" "$LOG_DIR/prev/"; done

case "$DATALAKE_FORMAT" in
  paimon)  LAKE_WAREHOUSE="$PAIMON_WAREHOUSE"
           LAKE_YAML="datalake.format: paimon
datalake.paimon.metastore: filesystem
datalake.paimon.warehouse: $PAIMON_WAREHOUSE" ;;
  iceberg) LAKE_WAREHOUSE="$ICEBERG_WAREHOUSE"
           LAKE_YAML="datalake.format: iceberg
datalake.iceberg.type: hadoop
datalake.iceberg.warehouse: $ICEBERG_WAREHOUSE" ;;
  lance)   LAKE_WAREHOUSE="$LANCE_WAREHOUSE"
           LAKE_YAML="datalake.format: lance
datalake.lance.warehouse: $LANCE_WAREHOUSE" ;;
  none)    LAKE_WAREHOUSE=""; LAKE_YAML="" ;;
esac
[ -z "$LAKE_WAREHOUSE" ] || mkdir -p "$LAKE_WAREHOUSE"

# server.yaml is flat "key: value" lines; tablet servers override id/listener/data dir with -D.
cat > "$CONF_DIR/server.yaml" <<EOF
zookeeper.address: $FLUSS_HOST:$ZK_PORT
zookeeper.path.root: /fluss
bind.listeners: $(listeners "$COORDINATOR_PORT")
default.bucket.number: $DEFAULT_BUCKETS
default.replication.factor: $REPLICATION_FACTOR
data.dir: $DATA_DIR
remote.data.dir: $REMOTE_DATA_DIR
tablet-server.id: 0
$LAKE_YAML
$SASL_YAML
$S3_YAML
$EXTRA_SERVER_YAML
EOF
cat > "$CONF_DIR/zookeeper.properties" <<EOF
dataDir=$ZK_DATA_DIR
clientPort=$ZK_PORT
clientPortAddress=$FLUSS_HOST
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
EOF
cp "$CLUSTER_DIR/conf/log4j2.properties" "$CONF_DIR/log4j2.properties"

# ---- process helpers -----------------------------------------------------------------
STARTED=()
dump_logs() {
  local f
  for f in "$LOG_DIR"/*.out "$LOG_DIR"/*.log; do
    [ -s "$f" ] || continue
    echo "----- tail -n 40 $f" >&2; tail -n 40 "$f" >&2
  done
}
fail() {
  echo "ERROR: $*" >&2
  dump_logs
  echo "start failed; stopping what was started" >&2
  "$CLUSTER_DIR/stop.sh" >&2 || true
  exit 1
}
trap 'fail "interrupted"' INT TERM

# start_jvm NAME MAIN_CLASS "JVM OPTS" ARGS...
start_jvm() {
  local name="$1" main="$2" opts="$3"; shift 3
  mkdir -p "$CLUSTER_WORK_DIR/tmp/$name"
  # shellcheck disable=SC2086  # option strings are intentionally word-split
  (cd "$CLUSTER_WORK_DIR" && exec nohup "$JAVA" $opts $FLUSS_JVM_OPTS $EXTRA_JVM_OPTS \
      -Djava.io.tmpdir="$CLUSTER_WORK_DIR/tmp/$name" \
      -Dlog.file="$LOG_DIR/$name.log" -Dlog4j.shutdownHookEnabled=false \
      -Dlog4j.configurationFile="file:$CONF_DIR/log4j2.properties" \
      -classpath "$SERVER_CP" "$main" "$@" >"$LOG_DIR/$name.out" 2>&1 </dev/null) &
  echo $! > "$PID_DIR/$name.pid"
  # The exact command, so restart-server.sh can start this server again as it was.
  printf '%q ' "$main" "$opts" "$@" > "$PID_DIR/$name.args"
  STARTED+=("$name")
  echo "started $name (pid $!)"
}

# wait_for DESCRIPTION COMMAND... : poll COMMAND until it succeeds; fail if a started JVM died or time is up
wait_for() {
  local what="$1" n; shift
  until "$@"; do
    for n in "${STARTED[@]}"; do
      kill -0 "$(cat "$PID_DIR/$n.pid")" 2>/dev/null || fail "$n exited while waiting for $what"
    done
    (( $(now_ms) < DEADLINE )) || fail "timed out after ${START_TIMEOUT}s waiting for $what"
    sleep 0.2
  done
  echo "  $what after $(( $(now_ms) - T0 )) ms"
}
zk_ok() { local r; r="$( (exec 3<>"/dev/tcp/$FLUSS_HOST/$ZK_PORT"; printf ruok >&3; head -c 4 <&3) 2>/dev/null)"; [ "$r" = imok ]; }
log_has() { grep -qF -- "$2" "$LOG_DIR/$1.log" 2>/dev/null; }

T0=$(now_ms)
DEADLINE=$(( T0 + START_TIMEOUT * 1000 ))

# ---- 1. ZooKeeper (the shaded ZooKeeper server inside fluss-server) -------------------
start_jvm zookeeper "$ZK_MAIN" "-Xms64m -Xmx$ZK_HEAP -XX:+UseSerialGC" "$CONF_DIR/zookeeper.properties"
wait_for "zookeeper ruok" zk_ok

# ---- 2. coordinator ----------------------------------------------------------------------
start_jvm coordinator-server "$COORDINATOR_MAIN" \
  "-Xms256m -Xmx$COORDINATOR_HEAP -XX:MaxDirectMemorySize=$COORDINATOR_DIRECT" --configDir "$CONF_DIR"
# logged by the coordinator event processor, after the RPC server started and the coordinator
# registered in ZooKeeper (and after the lake catalog was created)
wait_for "coordinator ready" log_has coordinator-server "End initializing coordinator context"

# ---- 3. tablet servers -------------------------------------------------------------------
for ((i = 0; i < TS_COUNT; i++)); do
  start_jvm "tablet-server-$i" "$TABLET_MAIN" \
    "-Xms256m -Xmx$TABLET_HEAP -XX:MaxDirectMemorySize=$TABLET_DIRECT" --configDir "$CONF_DIR" \
    "-Dtablet-server.id=$i" "-Dbind.listeners=$(listeners "$((TABLET_PORT_BASE + i))")" \
    "-Ddata.dir=$DATA_DIR/tablet-server-$i"
done
# a tablet server registers in ZooKeeper after its RPC server is up; the coordinator logs this
# line when it picks up that registration, i.e. when the cluster can place buckets on it
for ((i = 0; i < TS_COUNT; i++)); do
  wait_for "coordinator sees tablet server $i" \
    log_has coordinator-server "New tablet server callback for tablet server $i"
done
sleep 0.3   # the line is logged just before the coordinator updates its metadata cache
trap - INT TERM

# ERRORs in the logs (leader election for existing tables before their tablet server is back is
# expected on a restart without --clean and is left out)
errors="$(grep -H -E '^[0-9-]+ [0-9:,]+ (ERROR|FATAL)' "$LOG_DIR"/*.log \
  | grep -v -E 'elect leader for table bucket .* is empty|reason: Elect result is empty' || true)"
[ -z "$errors" ] || { echo "WARNING: errors in the logs:" >&2; head -n 20 <<< "$errors" >&2; }

# the lake format tables created now get; set-lake-format.sh keeps it current
echo "$DATALAKE_FORMAT" > "$CLUSTER_WORK_DIR/lake-format"

echo "Fluss $FLUSS_VERSION cluster up in $(( $(now_ms) - T0 )) ms (1 coordinator, $TS_COUNT tablet server(s)); logs: $LOG_DIR"
echo "BOOTSTRAP=$BOOTSTRAP"
[ -z "$SASL_USERS" ] || echo "SASL_BOOTSTRAP=$SASL_BOOTSTRAP"
echo "ZOOKEEPER=$FLUSS_HOST:$ZK_PORT"
echo "DATALAKE_FORMAT=$DATALAKE_FORMAT"
echo "LAKE_WAREHOUSE=$LAKE_WAREHOUSE"
[ "$DATALAKE_FORMAT" != paimon ] || echo "PAIMON_WAREHOUSE=$PAIMON_WAREHOUSE"
echo "REMOTE_DATA_DIR=$REMOTE_DATA_DIR"
echo "CLUSTER_WORK_DIR=$CLUSTER_WORK_DIR"
