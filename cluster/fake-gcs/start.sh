#!/usr/bin/env bash
# Starts fake-gcs-server on loopback (in memory, plain http, no authentication) with one bucket,
# for the GCS warehouse tests (tests/src/object_stores.rs). Builds it first if needed (setup.sh).
#
#   cluster/fake-gcs/start.sh    # http://127.0.0.1:$FAKE_GCS_PORT, settings in $FAKE_GCS_DIR/credentials.env
#
# Idempotent: a server already up is left as it is. Stop with cluster/fake-gcs/stop.sh.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"
"$HERE/setup.sh"

mkdir -p "$FAKE_GCS_DIR"
up() { [[ -f "$FAKE_GCS_DIR/server.pid" ]] && kill -0 "$(cat "$FAKE_GCS_DIR/server.pid")" 2>/dev/null; }
if up && [[ -f "$FAKE_GCS_DIR/ready" ]]; then
  echo "fake-gcs-server already up: $FAKE_GCS_ENDPOINT (pid $(cat "$FAKE_GCS_DIR/server.pid"))"
  exit 0
fi
"$HERE/stop.sh" >/dev/null 2>&1 || true
rm -f "$FAKE_GCS_DIR/ready" "$FAKE_GCS_DIR/credentials.env"
(exec 3<>"/dev/tcp/127.0.0.1/$FAKE_GCS_PORT") 2>/dev/null && { echo "ERROR: port 127.0.0.1:$FAKE_GCS_PORT is in use" >&2; exit 1; }

t0=$(date +%s%N)
# -public-host: requests to this address are GCS's own (path-style XML API); -external-url: the
# address resumable upload sessions are handed out at.
nohup "$FAKE_GCS_GOBIN/fake-gcs-server" -backend memory -scheme http -host 127.0.0.1 -port "$FAKE_GCS_PORT" \
  -public-host "127.0.0.1:$FAKE_GCS_PORT" -external-url "$FAKE_GCS_ENDPOINT" -log-level info \
  >"$FAKE_GCS_DIR/server.log" 2>&1 </dev/null &
echo $! > "$FAKE_GCS_DIR/server.pid"
failed() {
  echo "ERROR: $1; the end of $FAKE_GCS_DIR/server.log:" >&2
  tail -n 40 "$FAKE_GCS_DIR/server.log" >&2
  exit 1
}
deadline=$(( $(date +%s) + 60 ))
until curl -sf -o /dev/null "$FAKE_GCS_ENDPOINT/storage/v1/b"; do
  if ! up || (( $(date +%s) > deadline )); then failed "fake-gcs-server did not start"; fi
  sleep 0.1
done
status="$(curl -s -o "$FAKE_GCS_DIR/bucket.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  -d "{\"name\": \"$FAKE_GCS_BUCKET\"}" "$FAKE_GCS_ENDPOINT/storage/v1/b")"
[[ "$status" == 200 ]] || failed "creating the bucket answered HTTP $status: $(cat "$FAKE_GCS_DIR/bucket.json")"
printf 'FAKE_GCS_ENDPOINT=%s\nFAKE_GCS_BUCKET=%s\n' "$FAKE_GCS_ENDPOINT" "$FAKE_GCS_BUCKET" > "$FAKE_GCS_DIR/credentials.env"
touch "$FAKE_GCS_DIR/ready"
echo "fake-gcs-server up in $(( ($(date +%s%N) - t0) / 1000000 )) ms: $FAKE_GCS_ENDPOINT (pid $(cat "$FAKE_GCS_DIR/server.pid")), bucket $FAKE_GCS_BUCKET"
