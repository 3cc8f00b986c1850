#!/usr/bin/env bash
# Starts the test S3 server (cluster/s3/server.py: moto from PyPI) on loopback, with its data
# under target/, creates the bucket and an IAM user, and turns authentication on. The same
# server is the tests' AWS Glue Data Catalog (same endpoint and credentials).
#
#   cluster/s3/start.sh            # S3 at http://127.0.0.1:$S3_PORT, credentials in $S3_DIR/credentials.env
#   LEGACY=1 cluster/s3/start.sh   # a store without conditional puts (older moto), no auth, port + 1
#
# Idempotent: a server already up is left as it is, unless it was started from other versions
# of server.py or setup_account.py. Stop with cluster/s3/stop.sh.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"

mkdir -p "$S3_DIR"
# ---- the server's own virtualenv (kept apart from the readers' venv) ----------------------
want="$(sha256sum "$S3_REQUIREMENTS" | cut -d' ' -f1)"
if [[ ! -x "$S3_VENV/bin/python" || "$(cat "$S3_VENV/.requirements.sha256" 2>/dev/null)" != "$want" ]]; then
  echo "installing $(grep -v '^#' "$S3_REQUIREMENTS" | xargs) into $S3_VENV"
  python3.11 -m venv "$S3_VENV"
  "$S3_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile -r "$S3_REQUIREMENTS"
  echo "$want" > "$S3_VENV/.requirements.sha256"
fi

up() { [[ -f "$S3_DIR/server.pid" ]] && kill -0 "$(cat "$S3_DIR/server.pid")" 2>/dev/null; }
# A server started from other versions of the server's scripts is started again.
code="$(cat "$HERE/server.py" "$HERE/setup_account.py" | sha256sum | cut -d' ' -f1)"
if up && [[ -f "$S3_DIR/ready" ]] && [[ "$(cat "$S3_DIR/server.sha256" 2>/dev/null)" == "$code" ]]; then
  echo "S3 server already up: $S3_ENDPOINT (pid $(cat "$S3_DIR/server.pid"))"
  exit 0
fi
"$HERE/stop.sh" >/dev/null 2>&1 || true
rm -rf "$S3_DIR/data" "$S3_DIR/ready" "$S3_DIR/credentials.env" "$S3_DIR/server.sha256"
(exec 3<>"/dev/tcp/127.0.0.1/$S3_PORT") 2>/dev/null && { echo "ERROR: port 127.0.0.1:$S3_PORT is in use" >&2; exit 1; }

nohup "$S3_VENV/bin/python" "$HERE/server.py" --port "$S3_PORT" --data "$S3_DIR/data" \
  >"$S3_DIR/server.log" 2>&1 </dev/null &
echo $! > "$S3_DIR/server.pid"
deadline=$(( $(date +%s) + 60 ))
until grep -q '^READY' "$S3_DIR/server.log" 2>/dev/null; do
  if ! up || (( $(date +%s) > deadline )); then
    echo "ERROR: the S3 server did not start; the end of $S3_DIR/server.log:" >&2
    tail -n 40 "$S3_DIR/server.log" >&2
    exit 1
  fi
  sleep 0.2
done

if [[ "$LEGACY" == 1 ]]; then
  "$S3_VENV/bin/python" - "$S3_ENDPOINT" "$S3_BUCKET" <<'PY'
import sys, boto3
boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="x",
             aws_secret_access_key="x").create_bucket(Bucket=sys.argv[2])
PY
  printf 'S3_ENDPOINT=%s\nS3_REGION=us-east-1\nS3_BUCKET=%s\nS3_ACCESS_KEY=legacy\nS3_SECRET_KEY=legacy\n' \
    "$S3_ENDPOINT" "$S3_BUCKET" > "$S3_DIR/credentials.env"
else
  "$S3_VENV/bin/python" "$HERE/setup_account.py" "$S3_ENDPOINT" "$S3_BUCKET" "$S3_DIR/credentials.env" \
    || { echo "ERROR: setting up the S3 server failed; the end of $S3_DIR/server.log:" >&2; tail -n 40 "$S3_DIR/server.log" >&2; exit 1; }
fi
echo "$code" > "$S3_DIR/server.sha256"
touch "$S3_DIR/ready"
echo "S3 server up: $S3_ENDPOINT (pid $(cat "$S3_DIR/server.pid")), data in $S3_DIR/data"
cat "$S3_DIR/credentials.env" | grep -v SECRET
