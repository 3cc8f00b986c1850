#!/usr/bin/env bash
# Switches the running cluster's lake format without a restart (AlterClusterConfigs), with the
# same per-format options start.sh writes to server.yaml. Tables created afterwards get the new
# format; existing tables keep theirs. The cluster must have been started with
# DATALAKE_FORMAT=none (the coordinator refuses datalake.* options of two formats at once) and
# the format's Java plugin installed (WITH_<FORMAT>=1 cluster/setup.sh).
#
#   cluster/set-lake-format.sh paimon|iceberg|lance|iceberg-rest|paimon-rest
#
# iceberg-rest: format iceberg with `type=rest`: `uri` and `warehouse` of an Iceberg REST catalog
# server (cluster/iceberg-rest/), started here if it is not up (after cluster/iceberg-rest/setup.sh):
# instance 0 with a local warehouse for a cluster with local storage, instance 9 with its
# warehouse on the test S3 server for the S3 cluster (STORAGE=s3); ICEBERG_REST_INDEX and
# ICEBERG_REST_STORAGE choose others. Fluss's Iceberg plugin holds Iceberg's REST client
# (RESTCatalog, httpclient5): no other jar. The server creates the tables in its warehouse.
#
# paimon-rest: format paimon with `metastore=rest`: `uri`, `warehouse` (the catalog's warehouse
# name) and the bearer token of Paimon's REST catalog test server (cluster/paimon-rest/), started
# here if it is not up (after cluster/paimon-rest/setup.sh). paimon-bundle holds Paimon's REST
# client. The server keeps the tables' files on local disk.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

ARG="${1:-}"
FORMAT="${ARG%-rest}"
STORAGE="$(cat "$CLUSTER_WORK_DIR/storage" 2>/dev/null || echo local)"
if [ "$ARG" = iceberg-rest ]; then
  if [ "$STORAGE" = s3 ]; then : "${ICEBERG_REST_INDEX:=9}"; else : "${ICEBERG_REST_INDEX:=0}"; fi
  : "${ICEBERG_REST_STORAGE:=$STORAGE}"
  export ICEBERG_REST_INDEX ICEBERG_REST_STORAGE
  # Up with these settings (start.sh leaves such a server as it is); one starter at a time, as
  # the tests' (tests/src/iceberg.rs) lock.
  REST_DIR="$(source "$CLUSTER_DIR/iceberg-rest/env.sh" && echo "$ICEBERG_REST_DIR")"
  mkdir -p "$(dirname "$REST_DIR")"
  flock -o "$REST_DIR.lock" "$CLUSTER_DIR/iceberg-rest/start.sh" >/dev/null
  # shellcheck disable=SC1091
  source "$REST_DIR/server.env"
  OPTS=(type=rest "uri=$ICEBERG_REST_URI" "warehouse=$ICEBERG_REST_WAREHOUSE")
elif [ "$ARG" = paimon-rest ]; then
  REST_DIR="$(source "$CLUSTER_DIR/paimon-rest/env.sh" && echo "$PAIMON_REST_DIR")"
  mkdir -p "$(dirname "$REST_DIR")"
  flock -o "$REST_DIR.lock" "$CLUSTER_DIR/paimon-rest/start.sh" >/dev/null
  # shellcheck disable=SC1091
  source "$REST_DIR/server.env"
  OPTS=(metastore=rest "uri=$PAIMON_REST_URI" "warehouse=$PAIMON_REST_WAREHOUSE"
        token.provider=bear "token=$PAIMON_REST_TOKEN")
elif [ "$STORAGE" = s3 ]; then
  # The coordinator's lake catalogs on the test S3 server, as a production cluster keeps them.
  s3_settings
  PAIMON_WAREHOUSE="$S3_ROOT/paimon"
  case "$ARG" in
    paimon) OPTS=(metastore=filesystem "warehouse=$PAIMON_WAREHOUSE" "s3.endpoint=$S3_ENDPOINT"
                  "s3.access-key=$S3_ACCESS_KEY" "s3.secret-key=$S3_SECRET_KEY" s3.path.style.access=true) ;;
    # A Hadoop catalog on s3a://, as Hadoop users configure it: the Iceberg plugin hands
    # `iceberg.hadoop.*` to Hadoop's configuration (S3A from setup.sh WITH_S3=1).
    iceberg) OPTS=(type=hadoop "warehouse=s3a://${S3_ROOT#s3://}/iceberg"
                   "iceberg.hadoop.fs.s3a.endpoint=$S3_ENDPOINT" "iceberg.hadoop.fs.s3a.endpoint.region=$S3_REGION"
                   "iceberg.hadoop.fs.s3a.access.key=$S3_ACCESS_KEY" "iceberg.hadoop.fs.s3a.secret.key=$S3_SECRET_KEY"
                   iceberg.hadoop.fs.s3a.path.style.access=true iceberg.hadoop.fs.s3a.connection.ssl.enabled=false) ;;
    # Lance hands every option to its object store as a storage option (object_store names).
    lance) OPTS=("warehouse=$S3_ROOT/lance" "endpoint=$S3_ENDPOINT" "region=$S3_REGION"
                 "access_key_id=$S3_ACCESS_KEY" "secret_access_key=$S3_SECRET_KEY" allow_http=true) ;;
    *) die "usage: $0 paimon|iceberg|lance|iceberg-rest|paimon-rest" ;;
  esac
else
  case "$ARG" in
    paimon)  OPTS=(metastore=filesystem "warehouse=$PAIMON_WAREHOUSE") ;;
    iceberg) OPTS=(type=hadoop "warehouse=$ICEBERG_WAREHOUSE") ;;
    lance)   OPTS=("warehouse=$LANCE_WAREHOUSE") ;;
    *) die "usage: $0 paimon|iceberg|lance|iceberg-rest|paimon-rest" ;;
  esac
  for o in "${OPTS[@]}"; do [[ "$o" == warehouse=* ]] && mkdir -p "${o#warehouse=}"; done
fi
[ -f "$FLUSS_DIST_DIR/.$FORMAT.ok" ] || die "plugins/$FORMAT missing; run: WITH_${FORMAT^^}=1 cluster/setup.sh"
[ -f "$FLUSS_DIST_DIR/.client.ok" ] || die "Java client tools missing; run WITH_CLIENT=1 cluster/setup.sh"
if grep -q '^datalake\.' "$CONF_DIR/server.yaml" 2>/dev/null; then
  die "server.yaml sets datalake.* options; start the cluster with DATALAKE_FORMAT=none to switch formats at run time"
fi
"$JAVA" -Xmx256m $FLUSS_JVM_OPTS -Dlog4j2.level=ERROR \
  -cp "$(jar_cp "$FLUSS_DIST_DIR/lib-client"):$FLUSS_DIST_DIR/tools-classes" \
  SetLakeFormat "$BOOTSTRAP" "$FORMAT" "${OPTS[@]}"
echo "$ARG" > "$CLUSTER_WORK_DIR/lake-format"
