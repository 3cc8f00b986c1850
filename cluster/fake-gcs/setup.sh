#!/usr/bin/env bash
# Builds fake-gcs-server (the GCS emulator) from the Go module proxy into target/fake-gcs-dist
# (go install <module>@<pinned version>). Idempotent, and safe to run concurrently (one build at
# a time): start.sh runs it too.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/env.sh"
GO="$(command -v go || true)"
[[ -n "$GO" ]] || { [[ -x /usr/local/go/bin/go ]] && GO=/usr/local/go/bin/go; }
[[ -n "$GO" ]] || { echo "ERROR: fake-gcs-server is built with Go (go not found on PATH)" >&2; exit 1; }
mkdir -p "$FAKE_GCS_GOBIN"
exec 9>"$FAKE_GCS_GOBIN.lock"
flock 9
if [[ -x "$FAKE_GCS_GOBIN/fake-gcs-server" && "$(cat "$FAKE_GCS_GOBIN/.version" 2>/dev/null)" == "$FAKE_GCS_VERSION" ]]; then
  exit 0
fi
echo "building fake-gcs-server $FAKE_GCS_VERSION into $FAKE_GCS_GOBIN (go install)"
# GOTOOLCHAIN=local: the Go on the machine builds it, no toolchain is downloaded.
GOBIN="$FAKE_GCS_GOBIN" GOTOOLCHAIN=local GOFLAGS=-mod=mod \
  "$GO" install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION"
echo "$FAKE_GCS_VERSION" > "$FAKE_GCS_GOBIN/.version"
