# Settings of the local Prometheus (sourced by setup.sh, start.sh and stop.sh).
: "${REPO:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# Where start.sh keeps a server's config, data, log and pid file when no --dir is given.
: "${PROM_DIR:=$REPO/target/prometheus}"
# Debian's prometheus package, extracted (not installed) by setup.sh.
: "${PROM_DIST:=$REPO/target/prometheus-dist}"
: "${PROM_BIN:=$PROM_DIST/usr/bin/prometheus}"
: "${PROMTOOL:=$PROM_DIST/usr/bin/promtool}"
# The port start.sh listens on (loopback only) when no --port is given.
: "${PROM_PORT:=9990}"
