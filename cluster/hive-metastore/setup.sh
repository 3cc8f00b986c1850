#!/usr/bin/env bash
# Materializes Apache Hive's standalone metastore from Maven Central (idempotent): the jars of
# cluster/poms/hive-metastore/pom.xml, the server's into $HIVE_METASTORE_DIST_DIR/lib, what an
# Iceberg client of it needs beside Iceberg (iceberg-hive-metastore, HiveConf) into .../lib-client,
# what Paimon's HiveCatalog needs beside paimon-bundle and HiveConf (hive-serde, Hadoop's JobConf
# and HdfsConfiguration) into .../lib-paimon, and the Derby schema scripts schematool runs (from
# the release tarball) into .../scripts.
#
#   cluster/hive-metastore/setup.sh
#   FORCE=1 cluster/hive-metastore/setup.sh     # redo it
#
# A marker file keyed by the pom, this script and the versions: a match is skipped.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

command -v "$MVN" >/dev/null 2>&1 || die "maven ($MVN) not found"

POM="$CLUSTER_DIR/poms/hive-metastore/pom.xml"
key="hive=$HIVE_METASTORE_VERSION iceberg=$HIVE_METASTORE_ICEBERG_VERSION pom=$(md5sum < "$POM" | cut -c1-12) setup=$(md5sum < "$0" | cut -c1-12)"
marker="$HIVE_METASTORE_DIST_DIR/.ok"
if [ "${FORCE:-0}" != 1 ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$key" ]; then
  echo "== hive-metastore: up to date ($key)"
  exit 0
fi
t0=$(date +%s)
echo "== hive-metastore: building ($key)"
rm -rf "$marker" "$HIVE_METASTORE_DIST_DIR/lib" "$HIVE_METASTORE_DIST_DIR/lib-client" "$HIVE_METASTORE_DIST_DIR/lib-paimon" \
  "$HIVE_METASTORE_DIST_DIR/scripts" "$HIVE_METASTORE_DIST_DIR/.unpack-markers"
mkdir -p "$HIVE_METASTORE_DIST_DIR"
echo ">> mvn -f poms/hive-metastore/pom.xml dependency:copy-dependencies dependency:copy@client dependency:copy@paimon dependency:unpack@schema"
# shellcheck disable=SC2086
"$MVN" -B -q $MVN_ARGS -f "$POM" "-Dhms.dist=$HIVE_METASTORE_DIST_DIR" \
  "-Dhive.version=$HIVE_METASTORE_VERSION" "-Diceberg.version=$HIVE_METASTORE_ICEBERG_VERSION" \
  dependency:copy-dependencies dependency:copy@client dependency:copy@paimon dependency:unpack@schema 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
for f in "lib/hive-standalone-metastore-server-$HIVE_METASTORE_VERSION.jar" \
         "lib-client/iceberg-hive-metastore-$HIVE_METASTORE_ICEBERG_VERSION.jar" \
         lib-paimon/hive-serde-2.3.10.jar \
         "scripts/metastore/upgrade/derby/hive-schema-4.0.0.derby.sql"; do
  [ -f "$HIVE_METASTORE_DIST_DIR/$f" ] || die "mvn did not produce $f"
done
# TABLE_PARAMS.PARAM_VALUE as the metastore's own DataNucleus model declares it (package.jdo:
# VARCHAR(32672)), not as the release's Derby script does (CLOB): Derby cannot compare CLOBs, and
# an alter_table with expected_parameter_key/value (Iceberg's lock-free commit, the host's) runs
# "update TABLE_PARAMS set PARAM_VALUE=? where ... and PARAM_VALUE=?", which fails on a CLOB
# with ERROR 42818. PostgreSQL's and MySQL's scripts make it a comparable text column.
schema="$HIVE_METASTORE_DIST_DIR/scripts/metastore/upgrade/derby/hive-schema-4.0.0.derby.sql"
sed -i 's/^\(CREATE TABLE "APP"."TABLE_PARAMS" (.*"PARAM_VALUE"\) CLOB);$/\1 VARCHAR(32672));/' "$schema"
grep -q '^CREATE TABLE "APP"."TABLE_PARAMS" (.*"PARAM_VALUE" VARCHAR(32672));$' "$schema" \
  || die "$schema: TABLE_PARAMS is not as expected, cannot make PARAM_VALUE a VARCHAR"
echo "$key" > "$marker"
echo "hive-metastore setup done in $(( $(date +%s) - t0 ))s: $HIVE_METASTORE_DIST_DIR" \
  "($(ls "$HIVE_METASTORE_DIST_DIR/lib" | wc -l) server jars, $(ls "$HIVE_METASTORE_DIST_DIR/lib-client" | wc -l) Iceberg client jars," \
  "$(ls "$HIVE_METASTORE_DIST_DIR/lib-paimon" | wc -l) Paimon client jars)"
