#!/usr/bin/env bash
# Creates the Python virtualenv the integration tests use to read lake tables with the formats'
# own readers (pypaimon, pyiceberg, DuckDB + its iceberg extension, ...). Idempotent: does
# nothing when the venv already satisfies tests/python/requirements.txt.
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
# Everything imports, and DuckDB loads the iceberg extension offline from the PyPI-packaged
# extension directory (<site-packages>/duckdb_ext/extensions; duckdb_ext is a namespace package).
CHECK='
import importlib.util, os
import pypaimon, pyarrow, wasmtime, pyiceberg, duckdb, lance
from pyiceberg.table import StaticTable
spec = importlib.util.find_spec("duckdb_ext")
assert spec is not None, "duckdb_ext (duckdb-ext-iceberg) not installed"
ext_dir = os.path.join(list(spec.submodule_search_locations)[0], "extensions")
con = duckdb.connect(config={"extension_directory": ext_dir, "allow_unsigned_extensions": "true",
                             "autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
con.execute("LOAD iceberg")
print("pyarrow", pyarrow.__version__, "pyiceberg", pyiceberg.__version__, "duckdb", duckdb.__version__,
      "iceberg ext", con.execute("SELECT extension_version FROM duckdb_extensions() WHERE extension_name = \x27iceberg\x27").fetchone()[0])
'
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] \
    && "$VENV/bin/python" -c "$CHECK" >/dev/null 2>&1; then
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
# --no-compile: pip would byte-compile every module of every package (~30 CPU-s); Python
# compiles, and caches, only the modules the readers import, on first import.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile -r "$REQS"
"$VENV/bin/python" -c "$CHECK"
echo "$want" > "$STAMP"
echo "python venv ready: $VENV"
