# Settings of the test GCS emulator, fake-gcs-server (sourced by setup.sh, start.sh, stop.sh).
: "${REPO:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${FAKE_GCS_VERSION:=v1.56.1}"                     # github.com/fsouza/fake-gcs-server, from the Go module proxy
: "${FAKE_GCS_GOBIN:=$REPO/target/fake-gcs-dist/bin}" # go install puts the binary here
: "${FAKE_GCS_DIR:=$REPO/target/fake-gcs}"            # pid, log, credentials.env (the data: in memory)
: "${FAKE_GCS_PORT:=4453}"                            # not fake-gcs's default 4443: a developer's own may run
: "${FAKE_GCS_BUCKET:=fluss}"
FAKE_GCS_ENDPOINT="http://127.0.0.1:$FAKE_GCS_PORT"
