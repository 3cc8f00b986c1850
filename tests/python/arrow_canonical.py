"""Shared by the reader scripts: the canonical JSON form of Arrow values the Rust tests compare
with (iceberg_read.py, lance_read.py, delta_read.py), and the `batch` driver every reader
script runs many commands with in one Python process (the readers are slow to import).

Canonical values: integers as ints, FLOAT/DOUBLE as floats, strings, booleans, DECIMAL as a
string with exactly `scale` digits after the point, DATE as days since epoch, TIME as millis
of day, TIMESTAMP (with or without zone) as epoch microseconds, bytes as lowercase hex, null.
"""

import decimal
import json
import sys

SYSTEM_COLUMNS = ("__bucket", "__offset", "__timestamp")


def canonical_scalar(value):
    """Canonical JSON value of a Python value (used inside nested values)."""
    import datetime

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            delta = value - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        else:
            delta = value - datetime.datetime(1970, 1, 1)
        return delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
    if isinstance(value, datetime.date):
        return (value - datetime.date(1970, 1, 1)).days
    if isinstance(value, datetime.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dict):
        return {k: canonical_scalar(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_scalar(v) for v in value]
    return value


_UNIT_TO_MICROS = {"s": (1_000_000, 1), "ms": (1000, 1), "us": (1, 1), "ns": (1, 1000)}
_UNIT_TO_MILLIS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


def canonical_column(column):
    """Canonical JSON values of one pyarrow (chunked) array, decided by its Arrow type (the
    same for both readers)."""
    import pyarrow as pa

    t = column.type
    if pa.types.is_timestamp(t):
        mul, div = _UNIT_TO_MICROS[t.unit]
        return [None if v is None else v * mul // div for v in column.cast(pa.int64()).to_pylist()]
    if pa.types.is_date32(t):
        return column.cast(pa.int32()).to_pylist()
    if pa.types.is_date64(t):
        return [None if v is None else v // 86_400_000 for v in column.cast(pa.int64()).to_pylist()]
    if pa.types.is_time(t):
        mul, div = _UNIT_TO_MILLIS[t.unit]
        raw = column.cast(pa.int32() if pa.types.is_time32(t) else pa.int64())
        return [None if v is None else v * mul // div for v in raw.to_pylist()]
    if pa.types.is_decimal(t):
        q = decimal.Decimal(1).scaleb(-t.scale)
        return [None if v is None else str(decimal.Decimal(v).quantize(q)) for v in column.to_pylist()]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return [None if v is None else bytes(v).hex() for v in column.to_pylist()]
    if pa.types.is_floating(t):
        return [None if v is None else float(v) for v in column.to_pylist()]
    return [canonical_scalar(v) for v in column.to_pylist()]


def canonical_rows(arrow_table, drop_system=False):
    names = [n for n in arrow_table.column_names if not (drop_system and n in SYSTEM_COLUMNS)]
    columns = [canonical_column(arrow_table.column(n)) for n in names]
    return [dict(zip(names, values)) for values in zip(*columns)] if names else []


def print_rows(rows):
    for line in sorted(json.dumps(r, sort_keys=True) for r in rows):
        print(line)


def run_batch(main):
    """For each stdin line (a JSON array of arguments) prints one line `{"out": [<output
    lines parsed as JSON>]}` or `{"error": "<message>"}`, with the command's wall time under
    "seconds", and flushes it before reading the next line: the test harness keeps one such
    process per reader as a worker for the whole run (tests/python/src/lib.rs), writing a command
    and waiting for its answer. A command that raises is answered with its traceback and the
    process carries on.

    The answers go to a private copy of the original stdout; file descriptor 1 is pointed at
    stderr, so whatever a native library prints there cannot be taken for an answer."""
    import contextlib
    import io
    import os
    import time
    import traceback

    sys.stdout.flush()
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # Python 3 text-mode stdin yields each line as soon as it arrives (no read to EOF).
    for line in sys.stdin:
        if not line.strip():
            continue
        buf = io.StringIO()
        started = time.monotonic()
        try:
            with contextlib.redirect_stdout(buf):
                main(json.loads(line), allow_batch=False)
            out = [json.loads(x) for x in buf.getvalue().splitlines() if x.strip()]
            result = {"out": out}
        except SystemExit as e:  # argparse errors
            result = {"error": f"bad arguments {line.strip()}: exit {e.code}"}
        except Exception:  # noqa: BLE001 - reported to the caller
            result = {"error": traceback.format_exc()}
        result["seconds"] = time.monotonic() - started
        answers.write(json.dumps(result, sort_keys=True) + "\n")
        answers.flush()
