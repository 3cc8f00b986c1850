#!/usr/bin/env python3
"""Reads a Delta table with deltalake (delta-rs, independent of our Rust writer) and prints it in
the canonical JSON form of arrow_canonical.py, so tests can compare what our plugin wrote with
what Delta readers see.

  delta_read.py rows        <table> [--version V] [--reader pyarrow|datafusion] [--filter SQL]
                            [--drop-system]
  delta_read.py count       <table> [--version V]
  delta_read.py history     <table>
  delta_read.py files       <table> [--version V]
  delta_read.py info        <table> [--version V]
  delta_read.py append-copy <table> <rows>
  delta_read.py batch       (reads commands from stdin, one JSON array of arguments per line)

`rows` prints one JSON object per row (sorted keys), rows sorted, of the latest version or
--version V (time travel); the Fluss system columns __bucket, __offset, __timestamp are kept
unless --drop-system. The pyarrow reader (default) is DeltaTable.to_pyarrow_table(): pyarrow's
Parquet reader over the files delta-rs lists, partition values filled in from the log. The
datafusion reader is delta-rs's own scan (`SELECT * FROM t [WHERE <SQL>]` through QueryBuilder);
--filter implies it, and its scan prunes files by partition values and statistics.
`count` prints {"count": n, "stats_count": m}: n rows scanned, m = DeltaTable.count(), the sum
of the files' numRecords statistics. `history` prints one JSON object per version, oldest
first: the commitInfo as DeltaTable.history() returns it (custom entries such as commit-user
and fluss-offsets included), with "version". `files` prints one object per data file of the
version: {"path", "size", "num_records", "partition": {col: value}, "min": {...}, "max":
{...}, "null_count": {...}} with statistics as delta-rs parsed them (canonical values).
`info` prints {"version", "protocol": {min_reader_version, min_writer_version, reader_features,
writer_features}, "partition_columns", "schema": [{"name", "type", "nullable"}],
"configuration"}. `append-copy` appends the first <rows> rows of the latest version again with
delta-rs's own writer (mode="append") and prints the new {"version": v}: proves our tables
accept other writers between our rounds.
`batch` runs many commands in one process (the readers are slow to import): for each input line
it prints one line `{"out": [<output lines parsed as JSON>]}` or `{"error": "<message>"}`.

Only deltalake's public API is used.
"""

import argparse
import json
import os
import sys

from arrow_canonical import SYSTEM_COLUMNS, canonical_rows, print_rows, run_batch


def open_table(path, version=None):
    from deltalake import DeltaTable

    return DeltaTable(path, version=version)


def cmd_rows(args):
    import pyarrow as pa

    dt = open_table(args.table, args.version)
    if args.reader == "datafusion" or args.filter:
        from deltalake import QueryBuilder

        where = f" WHERE {args.filter}" if args.filter else ""
        reader = QueryBuilder().register("t", dt).execute(f"SELECT * FROM t{where}")
        table = pa.table(reader.read_all())
    else:
        table = dt.to_pyarrow_table()
    print_rows(canonical_rows(table, drop_system=args.drop_system))


def cmd_count(args):
    dt = open_table(args.table, args.version)
    print(json.dumps({"count": dt.to_pyarrow_table().num_rows, "stats_count": dt.count()}))


def cmd_history(args):
    for entry in sorted(open_table(args.table).history(), key=lambda e: e["version"]):
        print(json.dumps(entry, sort_keys=True, default=str))


def cmd_files(args):
    import pyarrow as pa

    actions = pa.table(open_table(args.table, args.version).get_add_actions(flatten=True))
    groups = {"partition.": "partition", "min.": "min", "max.": "max", "null_count.": "null_count"}
    for row in canonical_rows(actions):
        out = {"path": row["path"], "size": row["size_bytes"], "num_records": row["num_records"],
               "partition": {}, "min": {}, "max": {}, "null_count": {}}
        for key, value in row.items():
            for prefix, group in groups.items():
                if key.startswith(prefix) and value is not None:
                    out[group][key[len(prefix):]] = value
        print(json.dumps(out, sort_keys=True))


def cmd_info(args):
    dt = open_table(args.table, args.version)
    p = dt.protocol()
    m = dt.metadata()
    print(json.dumps({
        "version": dt.version(),
        "protocol": {"min_reader_version": p.min_reader_version,
                     "min_writer_version": p.min_writer_version,
                     "reader_features": p.reader_features, "writer_features": p.writer_features},
        "partition_columns": list(m.partition_columns),
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable}
                   for f in dt.schema().fields],
        "configuration": dict(m.configuration),
    }, sort_keys=True))


def cmd_append_copy(args):
    from deltalake import write_deltalake

    dt = open_table(args.table)
    head = dt.to_pyarrow_table().slice(0, args.rows)
    write_deltalake(args.table, head, mode="append")
    print(json.dumps({"version": open_table(args.table).version()}))


def main(argv, allow_batch=True):
    if allow_batch and argv[:1] == ["batch"]:
        run_batch(main)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rows = sub.add_parser("rows")
    rows.add_argument("table")
    rows.add_argument("--version", type=int)
    rows.add_argument("--reader", choices=["pyarrow", "datafusion"], default="pyarrow")
    rows.add_argument("--filter")
    rows.add_argument("--drop-system", action="store_true", help="drop " + ", ".join(SYSTEM_COLUMNS))
    for name in ("count", "files", "info"):
        p = sub.add_parser(name)
        p.add_argument("table")
        p.add_argument("--version", type=int)
    history = sub.add_parser("history")
    history.add_argument("table")
    append = sub.add_parser("append-copy")
    append.add_argument("table")
    append.add_argument("rows", type=int)
    args = parser.parse_args(argv)
    commands = {"rows": cmd_rows, "count": cmd_count, "history": cmd_history, "files": cmd_files,
                "info": cmd_info, "append-copy": cmd_append_copy}
    commands[args.command](args)


if __name__ == "__main__":
    main(sys.argv[1:])
    # deltalake's pyarrow filesystem can abort the interpreter's teardown ("terminate called
    # without an active exception", delta-io/delta-rs#2184) after everything was printed:
    # leave without running destructors.
    sys.stdout.flush()
    os._exit(0)
