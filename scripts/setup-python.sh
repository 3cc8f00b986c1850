#!/usr/bin/env bash
# Creates the Python virtualenv the integration tests use to read lake tables with the formats'
# own readers (pypaimon, ...). Idempotent: does nothing when the venv already satisfies
# tests/python/requirements.txt.
#
#   scripts/setup-python.sh            # venv at target/venv
#   VENV=/elsewhere scripts/setup-python.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/target/venv}"
REQS="$ROOT/tests/python/requirements.txt"
PYTHON="${PYTHON:-python3.11}"
STAMP="$VENV/.requirements.sha256"

want="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] \
    && "$VENV/bin/python" -c 'import pypaimon, pyarrow, wasmtime' 2>/dev/null; then
    echo "python venv up to date: $VENV"
    exit 0
fi

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "error: $PYTHON not found (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "creating venv $VENV with $PYTHON"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS"
"$VENV/bin/python" -c 'import pypaimon, pyarrow; print("pyarrow", pyarrow.__version__)'
echo "$want" > "$STAMP"
echo "python venv ready: $VENV"
