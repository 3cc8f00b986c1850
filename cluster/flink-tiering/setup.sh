#!/usr/bin/env bash
# Installs the baseline of the benchmark: the classpath of the real FlussLakeTiering job
# (fluss-flink-tiering 0.9.1-incubating on Flink 1.20.3, cluster/flink-tiering/pom.xml) from Maven Central
# into target/flink-tiering/lib-tiering, and the Java lake plugins it loads (fluss-lake-paimon,
# fluss-lake-iceberg, through cluster/setup.sh). Idempotent: a marker keyed by the pom skips it.
#
#   cluster/flink-tiering/setup.sh
set -euo pipefail
FLINK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$FLINK_DIR/../env.sh"

OUT="$REPO/target/flink-tiering"
MARKER="$OUT/.lib-tiering.ok"
KEY="pom=$(md5sum < "$FLINK_DIR/pom.xml" | cut -c1-12)"
WITH_ICEBERG=1 "$CLUSTER_DIR/setup.sh" >/dev/null
if [ "${FORCE:-0}" != 1 ] && [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$KEY" ]; then
  echo "flink tiering classpath: up to date ($KEY)"
  exit 0
fi
rm -rf "$OUT/lib-tiering" "$MARKER"
mkdir -p "$OUT"
# shellcheck disable=SC2086
"$MVN" -B -q $MVN_ARGS -f "$FLINK_DIR/pom.xml" "-Dfluss.home=$OUT" dependency:copy-dependencies 2>&1 \
  | sed -u 's/\x1b\[[0-9;]*m//g'
n=$(find "$OUT/lib-tiering" -name '*.jar' | wc -l)
[ "$n" -gt 40 ] || die "dependency:copy-dependencies left $n jars in $OUT/lib-tiering"
echo "$KEY" > "$MARKER"
echo "flink tiering classpath: $n jars in $OUT/lib-tiering ($(du -sh "$OUT/lib-tiering" | cut -f1))"
