#!/usr/bin/env bash
# Starts a Prometheus (from cluster/prometheus/setup.sh) on loopback that scrapes the given
# targets every second as job `fluss-lake-host`. Its config, data, log and pid file live in
# DIR; several can run at once, each with its own DIR and port (the e2e tests start one per
# test: tests/src/prometheus.rs).
#
#   cluster/prometheus/start.sh [--port P] [--dir D] [--target HOST:PORT]... [--rules FILE]...
#
#   --port    listen on 127.0.0.1:P (default $PROM_PORT, 9990)
#   --dir     config, data, log and pid file (default $PROM_DIR, target/prometheus)
#   --target  a scrape target (host's --metrics.address); repeatable; none: scrape nothing
#   --rules   a rule file to load (e.g. docs/prometheus/alerts.yml); repeatable
#
# Writes D/prometheus.yml, starts with its data in D/data (emptied first), logs to
# D/prometheus.log, writes D/prometheus.pid, and waits (60 s) for GET /-/ready. A server
# already up in D with the same port and config is left as it is; one with another is
# restarted. A busy port is refused. Stop with cluster/prometheus/stop.sh --dir D.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"

port="$PROM_PORT"
dir="$PROM_DIR"
targets=()
rules=()
while (( $# )); do
  case "$1" in
    --port) port="${2:?--port needs a value}"; shift 2 ;;
    --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
    --target) targets+=("${2:?--target needs HOST:PORT}"); shift 2 ;;
    --rules) rules+=("${2:?--rules needs a file}"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ERROR: unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
[[ "$port" =~ ^[0-9]+$ ]] || { echo "ERROR: --port $port is not a port number" >&2; exit 2; }
if [[ ! -x "$PROM_BIN" ]]; then
  echo "ERROR: no Prometheus at $PROM_BIN: run cluster/prometheus/setup.sh first" >&2
  exit 1
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd -P)"

# ---- the config ------------------------------------------------------------------------
{
  echo "# Written by cluster/prometheus/start.sh."
  echo "global:"
  echo "  scrape_interval: 1s"
  echo "  scrape_timeout: 1s"
  echo "  evaluation_interval: 1s"
  if (( ${#rules[@]} )); then
    echo "rule_files:"
    for r in "${rules[@]}"; do
      [[ -f "$r" ]] || { echo "ERROR: no rule file $r" >&2; exit 1; }
      echo "  - '$(cd "$(dirname "$r")" && pwd -P)/$(basename "$r")'"
    done
  fi
  echo "scrape_configs:"
  echo "  - job_name: fluss-lake-host"
  if (( ${#targets[@]} )); then
    echo "    static_configs:"
    echo "      - targets:"
    for t in "${targets[@]}"; do echo "          - '$t'"; done
  else
    echo "    static_configs: []"
  fi
} > "$dir/prometheus.yml.new"

up() {
  [[ -f "$dir/prometheus.pid" ]] || return 1
  local pid
  pid="$(cat "$dir/prometheus.pid")"
  kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "prometheus .*--config.file=$dir/prometheus.yml"
}
if up && cmp -s "$dir/prometheus.yml.new" "$dir/prometheus.yml" \
  && [[ "$(cat "$dir/address" 2>/dev/null)" == "127.0.0.1:$port" ]]; then
  rm -f "$dir/prometheus.yml.new"
  echo "Prometheus already up: http://127.0.0.1:$port (pid $(cat "$dir/prometheus.pid"))"
  exit 0
fi
"$HERE/stop.sh" --dir "$dir" >/dev/null 2>&1 || true
mv "$dir/prometheus.yml.new" "$dir/prometheus.yml"
if ! "$PROMTOOL" check config "$dir/prometheus.yml" >"$dir/promtool.log" 2>&1; then
  echo "ERROR: promtool rejects $dir/prometheus.yml:" >&2
  cat "$dir/promtool.log" >&2
  exit 1
fi
rm -f "$dir/promtool.log"
(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && { echo "ERROR: port 127.0.0.1:$port is in use" >&2; exit 1; }
rm -rf "$dir/data" "$dir/address"

nohup "$PROM_BIN" \
  --config.file="$dir/prometheus.yml" \
  --storage.tsdb.path="$dir/data" \
  --web.listen-address="127.0.0.1:$port" \
  --web.enable-lifecycle \
  --log.level=warn \
  >"$dir/prometheus.log" 2>&1 </dev/null &
pid=$!
echo "$pid" > "$dir/prometheus.pid"
deadline=$(( $(date +%s) + 60 ))
until curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready"; do
  if ! kill -0 "$pid" 2>/dev/null || (( $(date +%s) > deadline )); then
    echo "ERROR: Prometheus did not become ready on 127.0.0.1:$port; the end of $dir/prometheus.log:" >&2
    tail -n 40 "$dir/prometheus.log" >&2
    "$HERE/stop.sh" --dir "$dir" >/dev/null 2>&1 || true
    exit 1
  fi
  sleep 0.2
done
echo "127.0.0.1:$port" > "$dir/address"
echo "Prometheus up: http://127.0.0.1:$port (pid $pid), scraping ${targets[*]:-nothing}; config, data and log in $dir"
