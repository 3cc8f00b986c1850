#!/usr/bin/env bash
# Materializes Apache Iceberg's REST catalog server from Maven Central (idempotent): the jars of
# cluster/poms/iceberg-rest/pom.xml into $ICEBERG_REST_DIST_DIR/lib, and
# LoopbackRESTCatalogServer.java (the fixture's server on loopback) into .../classes.
#
#   cluster/iceberg-rest/setup.sh
#   FORCE=1 cluster/iceberg-rest/setup.sh     # redo it
#
# A marker file keyed by the pom, the Java source and the Iceberg version: a match is skipped.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

command -v "$MVN" >/dev/null 2>&1 || die "maven ($MVN) not found"
command -v "$JAVAC" >/dev/null 2>&1 || die "javac (a JDK 17) not found"

POM="$CLUSTER_DIR/poms/iceberg-rest/pom.xml"
SRC="$ICEBERG_REST_SRC/LoopbackRESTCatalogServer.java"
key="iceberg=$ICEBERG_REST_VERSION pom=$(md5sum < "$POM" | cut -c1-12) src=$(md5sum < "$SRC" | cut -c1-12)"
marker="$ICEBERG_REST_DIST_DIR/.ok"
if [ "${FORCE:-0}" != 1 ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$key" ]; then
  echo "== iceberg-rest: up to date ($key)"
  exit 0
fi
t0=$(date +%s)
echo "== iceberg-rest: building ($key)"
rm -rf "$marker" "$ICEBERG_REST_DIST_DIR/lib" "$ICEBERG_REST_DIST_DIR/classes"
mkdir -p "$ICEBERG_REST_DIST_DIR/classes"
echo ">> mvn -f poms/iceberg-rest/pom.xml dependency:copy-dependencies"
# shellcheck disable=SC2086
"$MVN" -B -q $MVN_ARGS -f "$POM" "-Drest.dist=$ICEBERG_REST_DIST_DIR" "-Diceberg.version=$ICEBERG_REST_VERSION" \
  dependency:copy-dependencies 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
[ -f "$ICEBERG_REST_DIST_DIR/lib/iceberg-open-api-$ICEBERG_REST_VERSION-test-fixtures.jar" ] \
  || die "mvn did not produce lib/iceberg-open-api-$ICEBERG_REST_VERSION-test-fixtures.jar"
echo ">> javac LoopbackRESTCatalogServer.java"
"$JAVAC" -nowarn -J-XX:TieredStopAtLevel=1 -d "$ICEBERG_REST_DIST_DIR/classes" \
  -cp "$(jar_cp "$ICEBERG_REST_DIST_DIR/lib")" "$SRC"
echo "$key" > "$marker"
echo "iceberg-rest setup done in $(( $(date +%s) - t0 ))s: $ICEBERG_REST_DIST_DIR ($(ls "$ICEBERG_REST_DIST_DIR/lib" | wc -l) jars)"
