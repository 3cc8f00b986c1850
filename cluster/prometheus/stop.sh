#!/usr/bin/env bash
# Stops a Prometheus started by cluster/prometheus/start.sh: only the process whose pid is in
# D/prometheus.pid, and only if it is that Prometheus (its command line names D's config).
#
#   cluster/prometheus/stop.sh [--dir D]     # default $PROM_DIR (target/prometheus)
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

dir="$PROM_DIR"
while (( $# )); do
  case "$1" in
    --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
    *) echo "ERROR: unknown argument $1" >&2; exit 2 ;;
  esac
done
pf="$dir/prometheus.pid"
[[ -f "$pf" ]] || exit 0
dir="$(cd "$dir" && pwd -P)"
pid="$(cat "$pf")"
if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null \
  && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "prometheus .*--config.file=$dir/prometheus.yml"; then
  kill "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
fi
rm -f "$pf" "$dir/address"
echo "Prometheus stopped ($dir)"
