# Settings of the test S3 server (sourced by start.sh and stop.sh).
: "${REPO:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${LEGACY:=0}"
if [[ "$LEGACY" == 1 ]]; then
  : "${S3_PORT:=9901}"
  : "${S3_DIR:=$REPO/target/s3-legacy}"
  S3_REQUIREMENTS="$REPO/cluster/s3/requirements-legacy.txt"
  : "${S3_VENV:=$REPO/target/s3-legacy-venv}"
else
  : "${S3_PORT:=9900}"
  : "${S3_DIR:=$REPO/target/s3}"
  S3_REQUIREMENTS="$REPO/cluster/s3/requirements.txt"
  : "${S3_VENV:=$REPO/target/s3-venv}"
fi
: "${S3_BUCKET:=fluss}"
S3_ENDPOINT="http://127.0.0.1:$S3_PORT"
