#!/usr/bin/env bash
# Starts Apache Iceberg's REST catalog server (iceberg-open-api's RESTCatalogServer fixture: a
# JDBC catalog on SQLite behind Iceberg's REST adapter; LoopbackRESTCatalogServer.java) as a
# background JVM on 127.0.0.1, after cluster/iceberg-rest/setup.sh.
#
#   cluster/iceberg-rest/start.sh [--clean]                 # http://127.0.0.1:8181, warehouse under target/iceberg-rest/
#   ICEBERG_REST_INDEX=1 cluster/iceberg-rest/start.sh      # a second server: port 8182, target/iceberg-rest-1/
#   ICEBERG_REST_STORAGE=s3 cluster/iceberg-rest/start.sh   # warehouse s3://<bucket>/iceberg-rest on the test S3 server
#
# --clean wipes the catalog (catalog.db) and the warehouse first (on S3: the objects under it).
# Idempotent: a server already up with the same settings (storage, warehouse, the S3 server's
# keys) is left as it is; otherwise (and with --clean) it is stopped and started anew.
# Waits (ICEBERG_REST_START_TIMEOUT, 60 s) until GET /v1/config answers; on failure prints the
# end of its log, stops it and exits 1. Settings: env.sh (ICEBERG_REST_PORT, _WAREHOUSE, _HEAP);
# any CATALOG_<NAME> variable in the environment is passed on as a catalog property (see the
# Java source). On success the last lines are machine-readable, and $ICEBERG_REST_DIR/server.env
# holds them for cluster/set-lake-format.sh and the tests:
#   ICEBERG_REST_URI=http://127.0.0.1:8181  ICEBERG_REST_WAREHOUSE=...  ICEBERG_REST_STORAGE=local|s3
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"

CLEAN=0
for a in "$@"; do
  case "$a" in
    --clean) CLEAN=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) die "unknown argument: $a" ;;
  esac
done

[ -f "$ICEBERG_REST_DIST_DIR/.ok" ] || die "no REST catalog server in $ICEBERG_REST_DIST_DIR; run cluster/iceberg-rest/setup.sh first"
PF="$ICEBERG_REST_DIR/server.pid"
LOG="$ICEBERG_REST_DIR/server.log"
running() { [ -f "$PF" ] && tr '\0' ' ' 2>/dev/null < "/proc/$(cat "$PF")/cmdline" | grep -qF " $ICEBERG_REST_MAIN"; }
answers() { curl -fsS --max-time 2 -o /dev/null "$ICEBERG_REST_URI/v1/config" 2>/dev/null; }

# ---- where the warehouse is ---------------------------------------------------------------
ENV=(CATALOG_URI="jdbc:sqlite:$ICEBERG_REST_DIR/catalog.db" CATALOG_REST_PORT="$ICEBERG_REST_PORT"
     CATALOG_REST_HOST="$ICEBERG_REST_HOST" CATALOG_JDBC_STRICT__MODE=true)
case "$ICEBERG_REST_STORAGE" in
  local)
    : "${ICEBERG_REST_WAREHOUSE:=$ICEBERG_REST_DIR/warehouse}" ;;
  s3)
    s3_settings   # S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY of cluster/s3/start.sh
    : "${ICEBERG_REST_WAREHOUSE:=s3://$S3_BUCKET/iceberg-rest$_REST_SUFFIX}"
    [[ "$ICEBERG_REST_WAREHOUSE" == s3://* ]] || die "ICEBERG_REST_STORAGE=s3 needs an s3:// warehouse (got '$ICEBERG_REST_WAREHOUSE')"
    # Iceberg's S3FileIO (iceberg-aws) with the test S3 server's keys; loaded tables hand the
    # keys to clients (include-credentials), which bring their own endpoint settings.
    ENV+=(CATALOG_IO__IMPL=org.apache.iceberg.aws.s3.S3FileIO CATALOG_S3_ENDPOINT="$S3_ENDPOINT"
          CATALOG_S3_PATH__STYLE__ACCESS=true CATALOG_CLIENT_REGION="$S3_REGION"
          CATALOG_S3_ACCESS__KEY__ID="$S3_ACCESS_KEY" CATALOG_S3_SECRET__ACCESS__KEY="$S3_SECRET_KEY"
          CATALOG_INCLUDE__CREDENTIALS=true) ;;
  *) die "ICEBERG_REST_STORAGE must be local or s3 (got '$ICEBERG_REST_STORAGE')" ;;
esac
ENV+=(CATALOG_WAREHOUSE="$ICEBERG_REST_WAREHOUSE")
# What a running server must have been started with to be left running.
SETTINGS="storage=$ICEBERG_REST_STORAGE warehouse=$ICEBERG_REST_WAREHOUSE s3-key=${S3_ACCESS_KEY:-} heap=$ICEBERG_REST_HEAP"

if running; then
  if [ "$CLEAN" = 0 ] && answers && [ -f "$ICEBERG_REST_DIR/server.env" ] \
      && [ "$(cat "$ICEBERG_REST_DIR/settings" 2>/dev/null)" = "$SETTINGS" ]; then
    echo "Iceberg REST catalog already up: $ICEBERG_REST_URI (pid $(cat "$PF"))"
    cat "$ICEBERG_REST_DIR/server.env"
    exit 0
  fi
  "$HERE/stop.sh" >/dev/null
fi
rm -f "$PF" "$ICEBERG_REST_DIR/server.env"
(exec 3<>"/dev/tcp/$ICEBERG_REST_HOST/$ICEBERG_REST_PORT") 2>/dev/null \
  && die "port $ICEBERG_REST_HOST:$ICEBERG_REST_PORT is already in use"

if [ "$CLEAN" = 1 ]; then
  case "$ICEBERG_REST_DIR" in ""|"/"|"$HOME"|"$REPO") die "refusing to wipe '$ICEBERG_REST_DIR'" ;; esac
  rm -rf "$ICEBERG_REST_DIR"
  if [ "$ICEBERG_REST_STORAGE" = s3 ]; then
    # The objects under the warehouse, with the S3 server's own client (its venv has boto3).
    "$REPO/target/s3-venv/bin/python" - "$S3_ENDPOINT" "$S3_REGION" "$S3_ACCESS_KEY" "$S3_SECRET_KEY" \
        "$ICEBERG_REST_WAREHOUSE" <<'PY' || die "cannot empty $ICEBERG_REST_WAREHOUSE"
import sys, boto3
endpoint, region, key, secret, url = sys.argv[1:]
bucket, _, prefix = url[len("s3://"):].partition("/")
s3 = boto3.resource("s3", endpoint_url=endpoint, region_name=region, aws_access_key_id=key,
                    aws_secret_access_key=secret)
s3.Bucket(bucket).objects.filter(Prefix=prefix.rstrip("/") + "/").delete()
PY
  fi
fi
mkdir -p "$ICEBERG_REST_DIR/tmp"
[ "$ICEBERG_REST_STORAGE" = s3 ] || mkdir -p "$ICEBERG_REST_WAREHOUSE"
[ ! -f "$LOG" ] || mv -f "$LOG" "$LOG.prev"

# ---- the server ----------------------------------------------------------------------------
# A small heap, the serial collector and C1 alone: it serves small JSON requests and shares
# two cores with the clusters and the tests.
T0=$(now_ms)
(cd "$ICEBERG_REST_DIR" && exec nohup env "${ENV[@]}" "$JAVA" -Xms32m "-Xmx$ICEBERG_REST_HEAP" \
    -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError \
    -Djava.io.tmpdir="$ICEBERG_REST_DIR/tmp" \
    -cp "$ICEBERG_REST_DIST_DIR/classes:$(jar_cp "$ICEBERG_REST_DIST_DIR/lib")" \
    "$ICEBERG_REST_MAIN" >"$LOG" 2>&1 </dev/null) &
echo $! > "$PF"
fail() {
  echo "ERROR: the Iceberg REST catalog server $*; the end of $LOG:" >&2
  tail -n 40 "$LOG" >&2 || true
  "$HERE/stop.sh" >&2 || true
  exit 1
}
deadline=$(( T0 + ICEBERG_REST_START_TIMEOUT * 1000 ))
until answers; do
  kill -0 "$(cat "$PF")" 2>/dev/null || fail "exited"
  (( $(now_ms) < deadline )) || fail "did not answer GET $ICEBERG_REST_URI/v1/config within ${ICEBERG_REST_START_TIMEOUT}s"
  sleep 0.1
done
echo "$SETTINGS" > "$ICEBERG_REST_DIR/settings"
cat > "$ICEBERG_REST_DIR/server.env" <<EOF
ICEBERG_REST_URI=$ICEBERG_REST_URI
ICEBERG_REST_WAREHOUSE=$ICEBERG_REST_WAREHOUSE
ICEBERG_REST_STORAGE=$ICEBERG_REST_STORAGE
EOF
echo "Iceberg REST catalog up in $(( $(now_ms) - T0 )) ms: $ICEBERG_REST_URI (pid $(cat "$PF")), log $LOG"
cat "$ICEBERG_REST_DIR/server.env"
