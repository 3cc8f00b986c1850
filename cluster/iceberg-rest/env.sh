# Settings of the Iceberg REST catalog server (sourced by setup.sh, start.sh, stop.sh and
# cluster/set-lake-format.sh). Every value can be overridden from the environment.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/env.sh"   # JAVA, MVN, REPO, die, s3_settings

ICEBERG_REST_SRC="$CLUSTER_DIR/iceberg-rest"
: "${ICEBERG_REST_VERSION:=1.10.1}"   # Iceberg of the server; Fluss 0.9.1's Iceberg plugin bundles 1.10.1
# Jars (lib/) and the compiled server class (classes/), shared by every instance.
: "${ICEBERG_REST_DIST_DIR:=$REPO/target/iceberg-rest-dist}"
# Instance i (0-9) keeps its state in target/iceberg-rest-<i> (instance 0: target/iceberg-rest)
# and listens on 8181 + i.
: "${ICEBERG_REST_INDEX:=0}"
[[ "$ICEBERG_REST_INDEX" =~ ^[0-9]$ ]] || die "ICEBERG_REST_INDEX must be 0-9 (got '$ICEBERG_REST_INDEX')"
if [ "$ICEBERG_REST_INDEX" = 0 ]; then _REST_SUFFIX=""; else _REST_SUFFIX="-$ICEBERG_REST_INDEX"; fi
: "${ICEBERG_REST_DIR:=$REPO/target/iceberg-rest$_REST_SUFFIX}"   # catalog.db, server.log, server.pid, server.env
: "${ICEBERG_REST_PORT:=$((8181 + ICEBERG_REST_INDEX))}"
: "${ICEBERG_REST_HOST:=127.0.0.1}"
ICEBERG_REST_URI="http://$ICEBERG_REST_HOST:$ICEBERG_REST_PORT"
# local: the warehouse is $ICEBERG_REST_DIR/warehouse; s3: s3://<bucket>/iceberg-rest[-i] on the
# test S3 server (cluster/s3/start.sh), written through Iceberg's S3FileIO.
: "${ICEBERG_REST_STORAGE:=local}"
: "${ICEBERG_REST_WAREHOUSE:=}"       # empty: the storage's default above
: "${ICEBERG_REST_HEAP:=192m}"
: "${ICEBERG_REST_START_TIMEOUT:=60}"
ICEBERG_REST_MAIN=org.apache.iceberg.rest.LoopbackRESTCatalogServer
