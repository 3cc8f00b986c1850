# Settings of the Hive metastore (sourced by setup.sh, start.sh and stop.sh). Every value can
# be overridden from the environment.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/env.sh"   # JAVA, MVN, REPO, die, jar_cp

: "${HIVE_METASTORE_VERSION:=4.0.1}"          # Apache Hive's standalone metastore (Thrift API of Hive 4)
: "${HIVE_METASTORE_ICEBERG_VERSION:=1.10.1}" # iceberg-hive-metastore for clients: Fluss 0.9.1's Iceberg plugin bundles 1.10.1
# Jars: lib/ (the server), lib-client/ (Iceberg's HiveCatalog and its HiveConf, for clients),
# lib-paimon/ (what Paimon's HiveCatalog needs beside paimon-bundle, lib-client's HiveConf and lib/).
: "${HIVE_METASTORE_DIST_DIR:=$REPO/target/hive-metastore-dist}"
# conf/, the Derby database (db/), the warehouse, server.log, server.pid, server.env.
: "${HIVE_METASTORE_DIR:=$REPO/target/hive-metastore}"
: "${HIVE_METASTORE_HOST:=127.0.0.1}"
: "${HIVE_METASTORE_PORT:=9883}"              # not the metastore's default 9083: a developer's own may run
HIVE_METASTORE_URI="thrift://$HIVE_METASTORE_HOST:$HIVE_METASTORE_PORT"
# Local files: the tests keep their tables on local disk.
: "${HIVE_METASTORE_WAREHOUSE:=$HIVE_METASTORE_DIR/warehouse}"
: "${HIVE_METASTORE_HEAP:=256m}"
: "${HIVE_METASTORE_START_TIMEOUT:=90}"
HIVE_METASTORE_MAIN=org.apache.hadoop.hive.metastore.HiveMetaStore
