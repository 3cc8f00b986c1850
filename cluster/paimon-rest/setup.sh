#!/usr/bin/env bash
# Materializes Apache Paimon's REST catalog test server from Maven Central (idempotent): the jars
# of cluster/poms/paimon-rest/pom.xml into $PAIMON_REST_DIST_DIR/lib, and
# LoopbackPaimonRESTServer.java (the test server on a fixed loopback port) into .../classes.
#
#   cluster/paimon-rest/setup.sh
#   FORCE=1 cluster/paimon-rest/setup.sh     # redo it
#
# A marker file keyed by the pom, the Java source and the Paimon version: a match is skipped.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

command -v "$MVN" >/dev/null 2>&1 || die "maven ($MVN) not found"
command -v "$JAVAC" >/dev/null 2>&1 || die "javac (a JDK 17) not found"

POM="$CLUSTER_DIR/poms/paimon-rest/pom.xml"
SRC="$PAIMON_REST_SRC/LoopbackPaimonRESTServer.java"
key="paimon=$PAIMON_REST_VERSION pom=$(md5sum < "$POM" | cut -c1-12) src=$(md5sum < "$SRC" | cut -c1-12)"
marker="$PAIMON_REST_DIST_DIR/.ok"
if [ "${FORCE:-0}" != 1 ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$key" ]; then
  echo "== paimon-rest: up to date ($key)"
  exit 0
fi
t0=$(date +%s)
echo "== paimon-rest: building ($key)"
rm -rf "$marker" "$PAIMON_REST_DIST_DIR/lib" "$PAIMON_REST_DIST_DIR/classes"
mkdir -p "$PAIMON_REST_DIST_DIR/classes"
echo ">> mvn -f poms/paimon-rest/pom.xml dependency:copy-dependencies"
# shellcheck disable=SC2086
"$MVN" -B -q $MVN_ARGS -f "$POM" "-Drest.dist=$PAIMON_REST_DIST_DIR" "-Dpaimon.version=$PAIMON_REST_VERSION" \
  dependency:copy-dependencies 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
for f in "paimon-core-$PAIMON_REST_VERSION-tests.jar" "paimon-bundle-$PAIMON_REST_VERSION.jar"; do
  [ -f "$PAIMON_REST_DIST_DIR/lib/$f" ] || die "mvn did not produce lib/$f"
done
echo ">> javac LoopbackPaimonRESTServer.java"
"$JAVAC" -nowarn -J-XX:TieredStopAtLevel=1 -d "$PAIMON_REST_DIST_DIR/classes" \
  -cp "$(jar_cp "$PAIMON_REST_DIST_DIR/lib" 'flink-shaded-hadoop-*')" "$SRC"
echo "$key" > "$marker"
echo "paimon-rest setup done in $(( $(date +%s) - t0 ))s: $PAIMON_REST_DIST_DIR ($(ls "$PAIMON_REST_DIST_DIR/lib" | wc -l) jars)"
