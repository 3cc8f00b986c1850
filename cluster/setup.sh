#!/usr/bin/env bash
# Materialize the Fluss server jars from Maven Central into $FLUSS_DIST_DIR (idempotent).
#
#   cluster/setup.sh                      # lib/ + plugins/paimon/ (+ lib-client/ + tools, WITH_CLIENT=1)
#   WITH_ICEBERG=1 WITH_LANCE=1 WITH_S3=1 WITH_GCS=1 cluster/setup.sh
#   FORCE=1 cluster/setup.sh              # redo everything
#
# Result:
#   lib/              fluss-server-<v>.jar (shaded; includes the ZooKeeper server) + log4j2 backend
#   plugins/paimon/   fluss-lake-paimon-<v>.jar, paimon-bundle, flink-shaded-hadoop-2-uber
#   plugins/iceberg/  fluss-lake-iceberg-<v>.jar, hadoop-apache          (WITH_ICEBERG=1)
#   plugins/lance/    fluss-lake-lance-<v>.jar                             (WITH_LANCE=1)
#   plugins/s3/       fluss-fs-s3-<v>.jar (remote.data.dir on S3), and paimon-s3 in plugins/paimon/ (WITH_S3=1)
#                     and S3A for the Iceberg catalog in plugins/iceberg/ (WITH_S3=1 WITH_ICEBERG=1)
#   plugins/gs/       fluss-fs-gs-<v>.jar (remote.data.dir on GCS)                    (WITH_GCS=1)
#   lib-client/       fluss-client-<v>.jar + log4j2; tools-classes/ = compiled tools/*.java (WITH_CLIENT=1)
# Each part has a marker file keyed by its versions and pom; a part whose marker matches is skipped.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

command -v "$MVN" >/dev/null 2>&1 || die "maven ($MVN) not found"
command -v "$JAVA" >/dev/null 2>&1 || die "java not found"

IFS=: read -r PH_G PH_A PH_V <<< "$PAIMON_HADOOP_GAV"
# shellcheck disable=SC2206
MVN_CMD=("$MVN" -B -q $MVN_ARGS
  "-Dfluss.dist=$FLUSS_DIST_DIR" "-Dfluss.version=$FLUSS_VERSION" "-Dlog4j.version=$LOG4J_VERSION"
  "-Dpaimon.version=$PAIMON_VERSION" "-Dpaimon.hadoop.groupId=$PH_G"
  "-Dpaimon.hadoop.artifactId=$PH_A" "-Dpaimon.hadoop.version=$PH_V"
  "-Diceberg.hadoop.version=$ICEBERG_HADOOP_VERSION")
nocolor() { sed -u 's/\x1b\[[0-9;]*m//g'; }   # mvn -B -q still emits bare ANSI resets
mvn_pom() {
  local pom="$1"; shift; echo ">> mvn -f poms/$pom/pom.xml $*"
  "${MVN_CMD[@]}" -f "$CLUSTER_DIR/poms/$pom/pom.xml" "$@" 2>&1 | nocolor
}

# The org.apache.fluss:fluss-lake-* jars cannot go through dependency:copy (nor 3.x dependency:get):
# their parent pom org.apache.fluss:fluss-lake:<v> is missing on Maven Central, so reading their
# artifact descriptor fails. maven-dependency-plugin 2.8's `get -Dtransitive=false` resolves just
# the jar (into ~/.m2 as usual) without reading the descriptor, and can copy it with -Ddest.
fetch_jar() { # groupId:artifactId:version destdir
  echo ">> mvn dependency:2.8:get $1 -> $2"
  mkdir -p "$2"
  (cd "$FLUSS_DIST_DIR" && "${MVN_CMD[@]}" org.apache.maven.plugins:maven-dependency-plugin:2.8:get \
     -Dtransitive=false "-Dartifact=$1" "-Ddest=$2/") 2>&1 | nocolor
  local a="${1#*:}"; a="${a%%:*}"
  [ -f "$2/$a-${1##*:}.jar" ] || die "dependency:get did not produce $2/$a-${1##*:}.jar"
}

pom_sum() { cat "$CLUSTER_DIR/poms/$1/pom.xml" | md5sum | cut -c1-12; }
# part NAME KEY CMD... : run CMD unless $FLUSS_DIST_DIR/.NAME.ok contains KEY
part() {
  local name="$1" key="$2"; shift 2
  local marker="$FLUSS_DIST_DIR/.$name.ok"
  if [ "${FORCE:-0}" != 1 ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$key" ]; then
    echo "== $name: up to date ($key)"; return 0
  fi
  echo "== $name: building ($key)"
  rm -f "$marker"
  "$@"
  echo "$key" > "$marker"
  BUILT=1
}

build_lib() {
  rm -rf "$FLUSS_DIST_DIR/lib"
  mvn_pom server dependency:copy@lib
}
build_paimon() {
  rm -rf "$FLUSS_PLUGINS_DIR/paimon"
  mvn_pom server dependency:copy@paimon-plugin
  fetch_jar "org.apache.fluss:fluss-lake-paimon:$FLUSS_VERSION" "$FLUSS_PLUGINS_DIR/paimon"
}
build_iceberg() {
  rm -rf "$FLUSS_PLUGINS_DIR/iceberg"
  mvn_pom server dependency:copy@iceberg-plugin
  fetch_jar "org.apache.fluss:fluss-lake-iceberg:$FLUSS_VERSION" "$FLUSS_PLUGINS_DIR/iceberg"
}
build_lance() {
  rm -rf "$FLUSS_PLUGINS_DIR/lance"
  fetch_jar "org.apache.fluss:fluss-lake-lance:$FLUSS_VERSION" "$FLUSS_PLUGINS_DIR/lance"
}
build_s3() {
  rm -rf "$FLUSS_PLUGINS_DIR/s3" "$FLUSS_PLUGINS_DIR/paimon"/paimon-s3-*.jar
  # Fluss's own S3 file system (shaded hadoop-aws): remote.data.dir on S3, session credentials
  # for clients. The plugin directory must be named after the scheme.
  fetch_jar "org.apache.fluss:fluss-fs-s3:$FLUSS_VERSION" "$FLUSS_PLUGINS_DIR/s3"
  # Paimon's S3 FileIO, loaded by the coordinator's Paimon catalog for s3:// warehouses.
  fetch_jar "org.apache.paimon:paimon-s3:$PAIMON_VERSION" "$FLUSS_PLUGINS_DIR/paimon"
  [ "$WITH_ICEBERG" = 1 ] && s3a_for_iceberg
  return 0
}
# The coordinator's Iceberg Hadoop catalog on s3a:// needs Hadoop's S3A file system, which
# hadoop-apache lacks (and its relocated slf4j/Guava cannot host: S3A fails with
# NoSuchMethodError). fluss-fs-s3 holds hadoop-common 3.3.4 with hadoop-aws and the AWS SDK,
# unrelocated: they are copied, without Fluss's own classes (so plugins/iceberg does not become
# a second Fluss S3 file-system plugin), into a jar named to sort before hadoop-apache (a
# plugin's jars are loaded in name order). hadoop-apache then only adds what it alone has
# (HDFS's HdfsConfiguration, which the Iceberg plugin loads).
s3a_for_iceberg() {
  local src="$FLUSS_PLUGINS_DIR/s3/fluss-fs-s3-$FLUSS_VERSION.jar"
  local out="$FLUSS_PLUGINS_DIR/iceberg/hadoop-0-s3a-from-fluss-fs-s3-$FLUSS_VERSION.jar"
  echo ">> $out (Hadoop with S3A, for the Iceberg catalog)"
  python3 - "$src" "$out" <<'PY'
import re, sys, zipfile
src, out = sys.argv[1:]
skip = re.compile(r"^(org/apache/fluss/|META-INF/services/org\.apache\.fluss\.|META-INF/.*\.(SF|RSA|DSA)$)")
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_DEFLATED) as zout:
    for info in zin.infolist():
        if not skip.match(info.filename) and not info.filename.endswith("/"):
            zout.writestr(info, zin.read(info.filename))
PY
  mv "$out.tmp" "$out"
  [ "$(cd "$FLUSS_PLUGINS_DIR/iceberg" && ls -- hadoop-*.jar | LC_ALL=C sort | head -1)" = "${out##*/}" ] \
    || die "${out##*/} must sort before hadoop-apache"
}
build_gs() {
  rm -rf "$FLUSS_PLUGINS_DIR/gs"
  # Fluss's own GCS file system (the shaded Hadoop GCS connector): remote.data.dir on GCS.
  fetch_jar "org.apache.fluss:fluss-fs-gs:$FLUSS_VERSION" "$FLUSS_PLUGINS_DIR/gs"
}
build_client() {
  rm -rf "$FLUSS_DIST_DIR/lib-client" "$FLUSS_DIST_DIR/tools-classes"
  mvn_pom client dependency:copy-dependencies
  mkdir -p "$FLUSS_DIST_DIR/tools-classes"
  echo ">> javac tools/*.java"
  "$JAVAC" -nowarn -d "$FLUSS_DIST_DIR/tools-classes" -cp "$(jar_cp "$FLUSS_DIST_DIR/lib-client")" \
    "$CLUSTER_DIR"/tools/*.java
}

t0=$(date +%s)
BUILT=0
mkdir -p "$FLUSS_DIST_DIR"
part lib "fluss=$FLUSS_VERSION log4j=$LOG4J_VERSION pom=$(pom_sum server)" build_lib
part paimon "fluss=$FLUSS_VERSION paimon=$PAIMON_VERSION hadoop=$PAIMON_HADOOP_GAV pom=$(pom_sum server)" build_paimon
if [ "$WITH_ICEBERG" = 1 ]; then
  part iceberg "fluss=$FLUSS_VERSION hadoop=$ICEBERG_HADOOP_VERSION pom=$(pom_sum server)" build_iceberg
fi
if [ "$WITH_LANCE" = 1 ]; then part lance "fluss=$FLUSS_VERSION" build_lance; fi
# After paimon: it adds a jar to plugins/paimon (and a rebuilt paimon part drops it: redo it then).
if [ "$WITH_S3" = 1 ]; then
  [ -n "$(ls "$FLUSS_PLUGINS_DIR/paimon"/paimon-s3-*.jar 2>/dev/null)" ] || rm -f "$FLUSS_DIST_DIR/.s3.ok"
  [ "$WITH_ICEBERG" != 1 ] || [ -n "$(ls "$FLUSS_PLUGINS_DIR/iceberg"/hadoop-0-s3a-from-*.jar 2>/dev/null)" ] \
    || rm -f "$FLUSS_DIST_DIR/.s3.ok"
  part s3 "fluss=$FLUSS_VERSION paimon=$PAIMON_VERSION iceberg=$WITH_ICEBERG" build_s3
fi
if [ "$WITH_GCS" = 1 ]; then part gs "fluss=$FLUSS_VERSION" build_gs; fi
if [ "$WITH_CLIENT" = 1 ]; then
  part client "fluss=$FLUSS_VERSION log4j=$LOG4J_VERSION pom=$(pom_sum client) tools=$(cat "$CLUSTER_DIR"/tools/*.java | md5sum | cut -c1-12)" build_client
fi

# sanity (after a build): the classes the start scripts rely on
check_class() { # dir class
  python3 - "$@" <<'PY' || die "class $2 not found in $1/*.jar"
import glob, sys, zipfile
sys.exit(0 if any(sys.argv[2] in zipfile.ZipFile(j).namelist()
                  for j in glob.glob(sys.argv[1] + "/*.jar")) else 1)
PY
}
if [ "$BUILT" = 1 ]; then
  check_class "$FLUSS_DIST_DIR/lib" "${COORDINATOR_MAIN//.//}.class"
  check_class "$FLUSS_DIST_DIR/lib" "${ZK_MAIN//.//}.class"
  check_class "$FLUSS_PLUGINS_DIR/paimon" org/apache/fluss/lake/paimon/PaimonLakeStoragePlugin.class
  check_class "$FLUSS_PLUGINS_DIR/paimon" org/apache/hadoop/conf/Configuration.class
fi

echo "setup done in $(( $(date +%s) - t0 ))s: $FLUSS_DIST_DIR"
(cd "$FLUSS_DIST_DIR" && for d in lib plugins/* lib-client; do
  [ -d "$d" ] && printf '  %-16s %s\n' "$d" "$(cd "$d" && ls -1 -- *.jar | tr '\n' ' ')"
done)
