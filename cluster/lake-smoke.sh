#!/usr/bin/env bash
# Prove the running cluster works end to end with the Java client (needs WITH_CLIENT=1 setup.sh):
# creates the lake-enabled table fluss.<TABLE> (3 buckets, freshness 10s), writes ROWS rows, reads
# them back, and (for DATALAKE_FORMAT=paimon) checks that the coordinator created the Paimon table
# <warehouse>/fluss.db/<TABLE>/schema/schema-0.
#
#   cluster/lake-smoke.sh [TABLE] [ROWS]        defaults: smoke_<epoch> 10
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

TABLE="${1:-smoke_$(date +%s)}"; ROWS="${2:-10}"
[ -f "$FLUSS_DIST_DIR/.client.ok" ] || die "Java client tools missing; run WITH_CLIENT=1 cluster/setup.sh"
"$JAVA" -Xmx256m $FLUSS_JVM_OPTS -Dlog4j2.level=ERROR \
  -cp "$(jar_cp "$FLUSS_DIST_DIR/lib-client"):$FLUSS_DIST_DIR/tools-classes" \
  LakeSmoke "$BOOTSTRAP" "$TABLE" "$ROWS"

if [ "$DATALAKE_FORMAT" = paimon ]; then
  schema="$PAIMON_WAREHOUSE/fluss.db/$TABLE/schema/schema-0"
  [ -f "$schema" ] || die "Paimon table not created: $schema missing"
  echo "PAIMON_TABLE=$PAIMON_WAREHOUSE/fluss.db/$TABLE"
fi
