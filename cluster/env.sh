# Settings for the local Apache Fluss cluster scripts (sourced, not executed).
# Every value can be overridden from the environment, e.g.
#   COORDINATOR_PORT=19123 TS_COUNT=3 cluster/start.sh --clean

CLUSTER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${REPO:=$(cd "$CLUSTER_DIR/.." && pwd)}"

# ---- versions (Maven Central) ------------------------------------------------
: "${FLUSS_VERSION:=0.9.1-incubating}"     # only Fluss release on Maven Central (org.apache.fluss)
: "${PAIMON_VERSION:=1.3.1}"               # paimon.version of Fluss 0.9.1
: "${LOG4J_VERSION:=2.25.4}"               # log4j.version of Fluss 0.9.1 (what fluss-dist ships)
: "${PAIMON_HADOOP_GAV:=org.apache.flink:flink-shaded-hadoop-2-uber:2.8.3-10.0}"  # as in fluss-dist
: "${ICEBERG_HADOOP_VERSION:=3.3.5-2}"     # io.trino.hadoop:hadoop-apache, for WITH_ICEBERG=1

# ---- optional parts built by setup.sh -----------------------------------------
: "${WITH_CLIENT:=1}"    # lib-client/ + tools/*.java (Java smoke test, lake-smoke.sh)
: "${WITH_ICEBERG:=0}"   # plugins/iceberg/
: "${WITH_LANCE:=0}"     # plugins/lance/
: "${WITH_S3:=0}"        # plugins/s3/ (fluss-fs-s3) + paimon-s3 in plugins/paimon/
: "${WITH_GCS:=0}"       # plugins/gs/ (fluss-fs-gs): remote.data.dir on GCS (STORAGE=gcs)

# ---- several clusters side by side -----------------------------------------------
# The test suite runs one cluster per concurrent test (tests/src/cluster.rs). Cluster i keeps
# its state in target/fluss-cluster-<i> (cluster 0: target/fluss-cluster) and shifts every
# port by 10*i, so clusters never share a directory or a port.
: "${CLUSTER_INDEX:=0}"
[[ "$CLUSTER_INDEX" =~ ^[0-9]$ ]] || { echo "ERROR: CLUSTER_INDEX must be 0-9 (got '$CLUSTER_INDEX')" >&2; exit 1; }
if [ "$CLUSTER_INDEX" = 0 ]; then _CLUSTER_SUFFIX=""; else _CLUSTER_SUFFIX="-$CLUSTER_INDEX"; fi

# ---- layout (both under target/, i.e. git-ignored build output) -------------
: "${FLUSS_DIST_DIR:=$REPO/target/fluss-dist}"        # jars: lib/ plugins/<lake>/ lib-client/ tools-classes/
: "${CLUSTER_WORK_DIR:=$REPO/target/fluss-cluster$_CLUSTER_SUFFIX}"   # runtime state: conf/ log/ pids/ data ...
export FLUSS_PLUGINS_DIR="${FLUSS_PLUGINS_DIR:-$FLUSS_DIST_DIR/plugins}"   # read by the server JVMs
CONF_DIR="$CLUSTER_WORK_DIR/conf"
LOG_DIR="$CLUSTER_WORK_DIR/log"
PID_DIR="$CLUSTER_WORK_DIR/pids"
: "${ZK_DATA_DIR:=$CLUSTER_WORK_DIR/zookeeper}"
: "${DATA_DIR:=$CLUSTER_WORK_DIR/data}"                # tablet server i uses $DATA_DIR/tablet-server-i
: "${REMOTE_DATA_DIR:=$CLUSTER_WORK_DIR/remote-data}"

# ---- network: loopback only -----------------------------------------------------
: "${FLUSS_HOST:=127.0.0.1}"
: "${ZK_PORT:=$((2181 + 10 * CLUSTER_INDEX))}"
: "${COORDINATOR_PORT:=$((9123 + 10 * CLUSTER_INDEX))}"
: "${TABLET_PORT_BASE:=$((9124 + 10 * CLUSTER_INDEX))}"    # tablet server i listens on TABLET_PORT_BASE + i (i < 9)
: "${TS_COUNT:=1}"
BOOTSTRAP="$FLUSS_HOST:$COORDINATOR_PORT"
# SASL: when SASL_USERS is set ("user:password user2:password2"), every server also listens on
# its port + SASL_PORT_SHIFT with SASL/PLAIN (listener SECURE) for those users; the FLUSS
# listener stays plaintext (and internal).
: "${SASL_USERS:=}"
: "${SASL_PORT_SHIFT:=10000}"
SASL_BOOTSTRAP="$FLUSS_HOST:$((COORDINATOR_PORT + SASL_PORT_SHIFT))"
# The bind.listeners value of a server whose plaintext port is $1.
listeners() {
  if [ -n "$SASL_USERS" ]; then
    echo "FLUSS://$FLUSS_HOST:$1,SECURE://$FLUSS_HOST:$(($1 + SASL_PORT_SHIFT))"
  else
    echo "FLUSS://$FLUSS_HOST:$1"
  fi
}

# ---- cluster / lake settings rendered into server.yaml ----------------------
: "${DEFAULT_BUCKETS:=1}"
: "${REPLICATION_FACTOR:=1}"
: "${DATALAKE_FORMAT:=paimon}"   # paimon | iceberg | lance | none
: "${PAIMON_WAREHOUSE:=$CLUSTER_WORK_DIR/paimon-warehouse}"
: "${ICEBERG_WAREHOUSE:=$CLUSTER_WORK_DIR/iceberg-warehouse}"
: "${LANCE_WAREHOUSE:=$CLUSTER_WORK_DIR/lance-warehouse}"
: "${EXTRA_SERVER_YAML:=}"       # extra "key: value" lines appended to server.yaml
# STORAGE=s3: remote.data.dir and the lake warehouses on the test S3 server (cluster/s3/start.sh),
# under s3://<bucket>/cluster-<i>/; the credentials come from its credentials.env.
: "${STORAGE:=local}"
: "${S3_CREDENTIALS:=$REPO/target/s3/credentials.env}"
# The S3 settings of a cluster started with STORAGE=s3 (S3_* from $S3_CREDENTIALS): sourced.
s3_settings() {
  [ -f "$S3_CREDENTIALS" ] || die "no $S3_CREDENTIALS: start the S3 server first (cluster/s3/start.sh)"
  # shellcheck disable=SC1090
  source "$S3_CREDENTIALS"
  S3_ROOT="s3://$S3_BUCKET/cluster-$CLUSTER_INDEX"
}

# ---- JVMs (2 cores / 24 GiB box shared with Rust builds) --------------------
: "${ZK_HEAP:=256m}"
: "${COORDINATOR_HEAP:=768m}"
: "${COORDINATOR_DIRECT:=256m}"
: "${TABLET_HEAP:=1536m}"
: "${TABLET_DIRECT:=1g}"
: "${EXTRA_JVM_OPTS:=}"
# fluss-daemon.sh adds this on JDK >= 17 (Arrow needs java.nio open; Arrow is shaded -> unnamed module)
: "${FLUSS_JVM_OPTS:=--add-opens=java.base/java.nio=ALL-UNNAMED -XX:+ExitOnOutOfMemoryError}"
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
  JAVA="$JAVA_HOME/bin/java"; JAVAC="$JAVA_HOME/bin/javac"
else
  JAVA=java; JAVAC=javac
fi
: "${MVN:=mvn}"
: "${MVN_ARGS:=}"   # e.g. "-o" for an offline re-run from a warm ~/.m2
# Maven's own JVM lives for seconds: C1 alone (no C2 optimising compiler) halves its CPU time
# (7.5 -> 3.7 CPU-s for one dependency:get from a warm ~/.m2). Set MAVEN_OPTS to override.
: "${MAVEN_OPTS:=-XX:TieredStopAtLevel=1}"
export MAVEN_OPTS

# ---- timeouts (seconds) ---------------------------------------------------------
: "${START_TIMEOUT:=120}"
: "${STOP_TIMEOUT:=30}"

# ---- main classes (what stop.sh matches against /proc/<pid>/cmdline) -------------
ZK_MAIN=org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain
COORDINATOR_MAIN=org.apache.fluss.server.coordinator.CoordinatorServer
TABLET_MAIN=org.apache.fluss.server.tablet.TabletServer

# ---- helpers ------------------------------------------------------------------------
die() { echo "ERROR: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
# port_open PORT -> 0 if something accepts TCP connections on $FLUSS_HOST:PORT
port_open() { (exec 3<>"/dev/tcp/$FLUSS_HOST/$1") >/dev/null 2>&1; }
# jar_cp DIR [LAST_GLOB] -> ':'-joined DIR/*.jar; jars matching LAST_GLOB go last (fluss-dist's order)
jar_cp() {
  local dir="$1" last="${2:-}" cp="" tail="" f
  for f in "$dir"/*.jar; do
    [ -e "$f" ] || continue
    if [ -n "$last" ] && [[ "$(basename "$f")" == $last ]]; then tail="$tail:$f"; else cp="$cp:$f"; fi
  done
  cp="$cp$tail"; echo "${cp#:}"
}
# main_class_of NAME -> expected main class for a pid-file name
main_class_of() {
  case "$1" in
    zookeeper) echo "$ZK_MAIN" ;;
    coordinator-server) echo "$COORDINATOR_MAIN" ;;
    tablet-server-*) echo "$TABLET_MAIN" ;;
    *) return 1 ;;
  esac
}
# pid_matches NAME PID -> 0 if PID is alive and its command line contains NAME's main class
pid_matches() {
  local main; main="$(main_class_of "$1")" || return 1
  [ -r "/proc/$2/cmdline" ] && tr '\0' ' ' < "/proc/$2/cmdline" | grep -qF -- " $main "
}
