#!/usr/bin/env bash
# Regenerates the Fluss 1.0 Java wire vectors in this folder (see WireVectors.java).
# The vectors are checked in so that CI needs no JVM; run this by hand after changing
# WireVectors.java, then update host/src/coordinator/java_frames.rs to match.
# Needs a JDK (17+) and Maven, which fetches fluss-client 1.0.0 from Maven Central.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version=1.0.0
mvn -B -q dependency:get -Dartifact="org.apache.fluss:fluss-client:$version" -Dtransitive=false
# The local repository Maven used (settings.xml may move it); colour codes stripped.
repo="$(mvn -B -q -Dstyle.color=never help:evaluate -Dexpression=settings.localRepository \
  -DforceStdout 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' || true)"
jar="${repo:-$HOME/.m2/repository}/org/apache/fluss/fluss-client/$version/fluss-client-$version.jar"
[ -f "$jar" ] || { echo "fluss-client jar not found at $jar" >&2; exit 1; }
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
javac -d "$build" -cp "$jar" "$here/WireVectors.java"
rm -f "$here"/*.hex "$here/constants.txt"
java -cp "$build:$jar" WireVectors "$here"
echo "wrote $(ls "$here"/*.hex | wc -l) vectors to $here"
