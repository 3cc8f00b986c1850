#!/usr/bin/env bash
# Runs the real FlussLakeTiering job (org.apache.fluss.flink.tiering.FlussLakeTieringEntrypoint,
# the tiering jar's Main-Class) in this process, on a Flink local MiniCluster, as the baseline
# of the benchmark. The JVM replaces this script (exec), so the caller measures the JVM itself.
#
#   cluster/flink-tiering/run.sh paimon|iceberg|lance <FlussLakeTiering arguments...>
#   e.g. cluster/flink-tiering/run.sh paimon --fluss.bootstrap.servers 127.0.0.1:9123 --datalake.format paimon \
#        --datalake.paimon.metastore filesystem --datalake.paimon.warehouse /abs/warehouse
#
# Parallelism: the local environment's default, the machine's processors (`nproc`), as
# FlussLakeTiering gets it outside `flink run`. Heap: FLINK_HEAP (default 2g), direct memory
# FLINK_DIRECT (default 1g): a TaskManager's defaults are in that range, and a smaller heap
# would slow Flink down, not make the comparison fairer. Logs: FLINK_LOG (default
# target/flink-tiering/tiering.log). Ready when stdout prints
# "Starting data tiering service from Fluss to <format>".
#
# FLINK_EXTRA_JVM_OPTS (unset by default): JVM options, split at whitespace, appended after
# the ones below, so they win over them (e.g. "-XX:-UseG1GC -XX:+UseSerialGC" replaces the
# collector). Opt-in for runs that are not measured: the benchmark never sets it (its Flink is
# the baseline, configured as here; tests/src/flink_tiering.rs `command` clears it), the
# migration tests set it to options for a short-lived JVM (FlinkTiering::start there).
set -euo pipefail
FLINK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$FLINK_DIR/../env.sh"

FORMAT="${1:-}"; shift || true
case "$FORMAT" in paimon|iceberg|lance) ;; *) die "usage: $0 paimon|iceberg|lance <FlussLakeTiering arguments>" ;; esac
LIB="$REPO/target/flink-tiering/lib-tiering"
[ -f "$REPO/target/flink-tiering/.lib-tiering.ok" ] || die "no Flink tiering classpath: run cluster/flink-tiering/setup.sh"
PLUGIN_JAR="$FLUSS_PLUGINS_DIR/$FORMAT/fluss-lake-$FORMAT-$FLUSS_VERSION.jar"
[ -f "$PLUGIN_JAR" ] || die "no $PLUGIN_JAR: run cluster/flink-tiering/setup.sh"

# The fluss-* and paimon-* jars first, then the lake plugin, then the rest: Flink's own copies
# of shared libraries must lose, as in a Flink distribution where these jars come with the job.
first=""; rest=""
for f in "$LIB"/*.jar; do
  case "$(basename "$f")" in fluss-*|paimon-*) first="$first:$f" ;; *) rest="$rest:$f" ;; esac
done
CP="${first#:}:$PLUGIN_JAR$rest"
if [ "$FORMAT" = iceberg ]; then
  # The Iceberg plugin's own dependencies besides Hadoop (which lib-tiering has).
  for f in "$FLUSS_PLUGINS_DIR/iceberg"/*.jar; do
    case "$(basename "$f")" in fluss-lake-iceberg-*|hadoop-*) ;; *) CP="$CP:$f" ;; esac
  done
fi

LOG="${FLINK_LOG:-$REPO/target/flink-tiering/tiering.log}"
TMP="$REPO/target/flink-tiering/tmp"
mkdir -p "$(dirname "$LOG")" "$TMP"
# Flink 1.20's default env.java.opts.all for Java 17 (its config.yaml), which the MiniCluster
# needs as much as a Flink cluster does.
FLINK_JDK17_OPTS=(
  -XX:+IgnoreUnrecognizedVMOptions
  --add-exports=java.base/sun.net.util=ALL-UNNAMED
  --add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED
  --add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-opens=java.base/java.lang=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED
  --add-opens=java.base/java.nio=ALL-UNNAMED
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.text=ALL-UNNAMED
  --add-opens=java.base/java.time=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED
)
read -ra EXTRA_OPTS <<< "${FLINK_EXTRA_JVM_OPTS:-}"
exec "$JAVA" -Xms512m "-Xmx${FLINK_HEAP:-2g}" "-XX:MaxDirectMemorySize=${FLINK_DIRECT:-1g}" -XX:+UseG1GC \
  -XX:+ExitOnOutOfMemoryError "${FLINK_JDK17_OPTS[@]}" "-Djava.io.tmpdir=$TMP" \
  "-Dlog.file=$LOG" "-Dlog4j.configurationFile=file:$FLINK_DIR/log4j2.properties" \
  ${EXTRA_OPTS[@]+"${EXTRA_OPTS[@]}"} -classpath "$CP" org.apache.fluss.flink.tiering.FlussLakeTieringEntrypoint "$@"
