#!/usr/bin/env bash
# Starts Azurite's Blob service on loopback (in memory, nothing on disk), with one account of a
# random key (AZURITE_ACCOUNTS) and its container, for the Azure warehouse tests
# (tests/src/object_stores.rs). Installs it first if needed (setup.sh).
#
#   cluster/azurite/start.sh    # http://127.0.0.1:$AZURITE_PORT/<account>, settings in $AZURITE_DIR/credentials.env
#
# Idempotent: a server already up is left as it is. Stop with cluster/azurite/stop.sh.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"
"$HERE/setup.sh"

mkdir -p "$AZURITE_DIR"
up() { [[ -f "$AZURITE_DIR/server.pid" ]] && kill -0 "$(cat "$AZURITE_DIR/server.pid")" 2>/dev/null; }
if up && [[ -f "$AZURITE_DIR/ready" ]]; then
  echo "Azurite already up: $AZURITE_ENDPOINT (pid $(cat "$AZURITE_DIR/server.pid"))"
  exit 0
fi
"$HERE/stop.sh" >/dev/null 2>&1 || true
rm -f "$AZURITE_DIR/ready" "$AZURITE_DIR/credentials.env"
(exec 3<>"/dev/tcp/127.0.0.1/$AZURITE_PORT") 2>/dev/null && { echo "ERROR: port 127.0.0.1:$AZURITE_PORT is in use" >&2; exit 1; }

t0=$(date +%s%N)
key="$(head -c 32 /dev/urandom | base64 -w0)"
# --disableTelemetry: nothing leaves the machine; --skipApiVersionCheck: object_store may send
# a newer x-ms-version than this Azurite knows.
AZURITE_ACCOUNTS="$AZURITE_ACCOUNT:$key" nohup node "$AZURITE_INSTALL/node_modules/azurite/dist/src/blob/main.js" \
  --blobHost 127.0.0.1 --blobPort "$AZURITE_PORT" --inMemoryPersistence --extentMemoryLimit 1024 \
  --disableTelemetry --skipApiVersionCheck >"$AZURITE_DIR/server.log" 2>&1 </dev/null &
echo $! > "$AZURITE_DIR/server.pid"
deadline=$(( $(date +%s) + 60 ))
until grep -q 'successfully listens' "$AZURITE_DIR/server.log" 2>/dev/null; do
  if ! up || (( $(date +%s) > deadline )); then
    echo "ERROR: Azurite did not start; the end of $AZURITE_DIR/server.log:" >&2
    tail -n 40 "$AZURITE_DIR/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
node "$HERE/create-container.js" "$AZURITE_ENDPOINT" "$AZURITE_ACCOUNT" "$key" "$AZURITE_CONTAINER" \
  || { echo "ERROR: creating the container failed; the end of $AZURITE_DIR/server.log:" >&2; tail -n 40 "$AZURITE_DIR/server.log" >&2; exit 1; }
printf 'AZURITE_ENDPOINT=%s\nAZURITE_ACCOUNT=%s\nAZURITE_KEY=%s\nAZURITE_CONTAINER=%s\n' \
  "$AZURITE_ENDPOINT" "$AZURITE_ACCOUNT" "$key" "$AZURITE_CONTAINER" > "$AZURITE_DIR/credentials.env"
touch "$AZURITE_DIR/ready"
echo "Azurite up in $(( ($(date +%s%N) - t0) / 1000000 )) ms: $AZURITE_ENDPOINT (pid $(cat "$AZURITE_DIR/server.pid")), container $AZURITE_CONTAINER"
