# Settings of Paimon's REST catalog test server (sourced by setup.sh, start.sh and stop.sh).
# Every value can be overridden from the environment.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/env.sh"   # JAVA, MVN, REPO, PAIMON_VERSION, die, jar_cp

PAIMON_REST_SRC="$CLUSTER_DIR/paimon-rest"
: "${PAIMON_REST_VERSION:=$PAIMON_VERSION}"   # Paimon of the server: the one of Fluss's Paimon plugin
# Jars (lib/) and the compiled server class (classes/).
: "${PAIMON_REST_DIST_DIR:=$REPO/target/paimon-rest-dist}"
# The tables' files (warehouse/), server.log, server.pid, server.env.
: "${PAIMON_REST_DIR:=$REPO/target/paimon-rest}"
: "${PAIMON_REST_HOST:=127.0.0.1}"
: "${PAIMON_REST_PORT:=8281}"                 # clear of the Iceberg REST servers' 8181-8190
PAIMON_REST_URI="http://$PAIMON_REST_HOST:$PAIMON_REST_PORT"
# The catalog's warehouse NAME: what a client sends as `warehouse` (GET /v1/config?warehouse=),
# not a path; the server refuses a config request for any other.
: "${PAIMON_REST_WAREHOUSE:=fluss}"
# Where the tables' files are (local disk: the tests keep their tables there).
: "${PAIMON_REST_DATA:=$PAIMON_REST_DIR/warehouse}"
# The bearer token every request must carry (token.provider=bear); a fixed test value.
: "${PAIMON_REST_TOKEN:=fluss-paimon-rest-token}"
: "${PAIMON_REST_HEAP:=256m}"
: "${PAIMON_REST_START_TIMEOUT:=60}"
PAIMON_REST_MAIN=org.apache.paimon.rest.LoopbackPaimonRESTServer
