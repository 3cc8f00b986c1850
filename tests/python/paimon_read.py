#!/usr/bin/env python3
"""Reads a Paimon table with pypaimon (an independent, non-Rust Paimon implementation) and
prints it in a canonical JSON form, so tests can compare what our plugin wrote with what a
real Paimon reader sees.

  paimon_read.py rows     <warehouse> <db> <table> [--snapshot N]
  paimon_read.py snapshot <warehouse> <db> <table> [--snapshot N]
  paimon_read.py lookup   <warehouse> <db> <table> <column> <json-value> [--snapshot N]
  paimon_read.py plan     <warehouse> <db> <table> [--snapshot N] [--filter COLUMN OP JSON]
  paimon_read.py changelog <warehouse> <db> <table> --snapshot N
  paimon_read.py batch    (reads commands from stdin, one JSON array of arguments per line)

Every command but batch also takes --store JSON: the Azure (Azurite) or GCS (fake-gcs-server)
store of an abfs://, wasbs:// or gs:// warehouse, read through that store (azure_gcs_env.py);
s3:// warehouses are read with the S3_* settings of s3_env.py. --rest JSON
({"uri", "token"}) reads through Paimon's REST catalog at `uri` (metastore=rest,
token.provider=bear): <warehouse> is then the catalog's warehouse name.

Canonical values: integers as ints, FLOAT/DOUBLE as floats, strings, booleans, DECIMAL as a
string with exactly `scale` digits after the point, DATE as days since epoch, TIME as millis
of day, TIMESTAMP and TIMESTAMP_LTZ as epoch microseconds, bytes as lowercase hex, null as
null. `rows` and `lookup` print one JSON object per row (sorted keys), rows sorted. `lookup`
pushes the equality filter into pypaimon (partition, bucket and stats pruning) and then also
applies it row by row. `plan` prints {"splits": n, "files": n, "rows": n} of the scan plan.
`changelog` prints the changelog snapshot N committed (primary-key tables with a changelog
producer), read the way a streaming reader does (pypaimon's streaming scan positioned at N; N
must be within 10 snapshots of the latest, pypaimon's catch-up threshold): one JSON object per
record in read order, with its row kind (`+I`, `-U`, `+U`, `-D`) under "_row_kind"; nothing
when N has no changelog.
`batch` runs many commands in one process (pypaimon is slow to import; the tests keep such
processes as workers for the whole run, tests/python/src/lib.rs): for each input line it prints
one line `{"out": [<output lines parsed as JSON>]}` or `{"error": "<message>"}`, with the
command's wall time under "seconds". Every command opens its own catalog, so a command sees
what was committed before it started, whatever the process read earlier.

Only pypaimon's public API is used.
"""

import argparse
import datetime
import decimal
import json
import re
import sys

from pypaimon import CatalogFactory

import arrow_canonical
import azure_gcs_env
import s3_env

EPOCH_DATE = datetime.date(1970, 1, 1)
EPOCH_TS = datetime.datetime(1970, 1, 1)
EPOCH_TS_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def type_name(field):
    return str(field.type).upper()


def scale_of(field):
    m = re.search(r"DECIMAL\(\s*\d+\s*,\s*(\d+)\s*\)", type_name(field))
    return int(m.group(1)) if m else 0


def canonical(value, field):
    """Canonical JSON value of one cell."""
    if value is None:
        return None
    t = type_name(field)
    if isinstance(value, bool):
        return value
    if t.startswith("DECIMAL"):
        q = decimal.Decimal(1).scaleb(-scale_of(field))
        return str(decimal.Decimal(value).quantize(q))
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            delta = value - EPOCH_TS_UTC
        else:
            delta = value - EPOCH_TS
        return delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
    if isinstance(value, datetime.date):
        return (value - EPOCH_DATE).days
    if isinstance(value, datetime.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (list, tuple, dict)):
        # ARRAY, MAP (pairs) and ROW values: their elements by the shared rules.
        return arrow_canonical.canonical_scalar(value)
    return value


def python_literal(canonical_value, field):
    """The Python value pypaimon predicates expect for a canonical JSON value."""
    if canonical_value is None:
        return None
    t = type_name(field)
    if t.startswith("DECIMAL"):
        return decimal.Decimal(str(canonical_value))
    if t.startswith("DATE"):
        return EPOCH_DATE + datetime.timedelta(days=int(canonical_value))
    if t.startswith("TIMESTAMP"):
        ts = EPOCH_TS + datetime.timedelta(microseconds=int(canonical_value))
        if "LOCAL TIME ZONE" in t or "LTZ" in t:
            return ts.replace(tzinfo=datetime.timezone.utc)
        return ts
    if t.startswith("TIME"):
        ms = int(canonical_value)
        return (datetime.datetime.min + datetime.timedelta(milliseconds=ms)).time()
    if t.startswith(("BYTES", "BINARY", "VARBINARY")):
        return bytes.fromhex(canonical_value)
    if t.startswith(("FLOAT", "DOUBLE")):
        return float(canonical_value)
    return canonical_value


def open_catalog(warehouse, store=None, rest=None):
    """A new catalog per command, so nothing read before (by an earlier command of a
    long-lived `batch` process) is reused. pypaimon also keeps a process-wide cache of the
    PyArrow datasets it opened per data file, keyed by the FileIO's file system: entries of
    one command can never serve another (each catalog has its own file system), so it only
    keeps every finished command's file systems alive; size 0 turns it off. `store`: the
    Azure or GCS store of the warehouse (`--store`, azure_gcs_env.py). `rest`: Paimon's REST
    catalog to read through (`--rest`)."""
    if rest is not None:
        rest = json.loads(rest)
        return CatalogFactory.create({
            "metastore": "rest",
            "uri": rest["uri"],
            "warehouse": warehouse,
            "token.provider": "bear",
            "token": rest["token"],
            "file-format.metadata-cache.max-size": "0",
        })
    return CatalogFactory.create({
        "warehouse": warehouse,
        "file-format.metadata-cache.max-size": "0",
        **s3_env.paimon_options(warehouse),
        **azure_gcs_env.paimon_options(warehouse, azure_gcs_env.parse(store)),
    })


def open_table(args):
    catalog = open_catalog(args.warehouse, args.store, args.rest)
    table = catalog.get_table(f"{args.db}.{args.table}")
    if args.snapshot is not None:
        table = table.copy({"scan.snapshot-id": str(args.snapshot)})
    return table


def table_fields(table):
    return {f.name: f for f in table.fields}


def read_rows(table, predicate_fn=None):
    rb = table.new_read_builder()
    if predicate_fn is not None:
        rb = rb.with_filter(predicate_fn(rb.new_predicate_builder()))
    splits = rb.new_scan().plan().splits()
    arrow = rb.new_read().to_arrow(splits)
    fields = table_fields(table)
    rows = []
    if arrow is None:
        return rows, splits
    for record in arrow.to_pylist():
        rows.append({k: canonical(v, fields[k]) for k, v in record.items()})
    return rows, splits


def print_rows(rows):
    lines = sorted(json.dumps(r, sort_keys=True) for r in rows)
    for line in lines:
        print(line)


def cmd_rows(args):
    rows, _ = read_rows(open_table(args))
    print_rows(rows)


def cmd_lookup(args):
    table = open_table(args)
    field = table_fields(table)[args.column]
    wanted = json.loads(args.value)
    literal = python_literal(wanted, field)
    rows, _ = read_rows(table, lambda pb: pb.equal(args.column, literal))
    print_rows([r for r in rows if r.get(args.column) == wanted])


def cmd_plan(args):
    table = open_table(args)
    predicate_fn = None
    if args.filter:
        column, op, value = args.filter
        field = table_fields(table)[column]
        literal = python_literal(json.loads(value), field)
        methods = {"=": "equal", ">=": "greater_or_equal", ">": "greater_than",
                   "<=": "less_or_equal", "<": "less_than"}
        predicate_fn = lambda pb: getattr(pb, methods[op])(column, literal)  # noqa: E731
    rb = table.new_read_builder()
    if predicate_fn is not None:
        rb = rb.with_filter(predicate_fn(rb.new_predicate_builder()))
    splits = rb.new_scan().plan().splits()
    files = sum(len(s.files) for s in splits)
    rows = sum(f.row_count for s in splits for f in s.files)
    print(json.dumps({"splits": len(splits), "files": files, "rows": rows}, sort_keys=True))


def cmd_changelog(args):
    catalog = open_catalog(args.warehouse, args.store, args.rest)
    table = catalog.get_table(f"{args.db}.{args.table}")
    snap = table.snapshot_manager().get_snapshot_by_id(args.snapshot)
    if snap is None or not snap.changelog_manifest_list:
        return
    builder = table.new_stream_read_builder().with_include_row_kind(True)
    scan = builder.new_streaming_scan()
    scan.next_snapshot_id = args.snapshot
    plans = scan.stream_sync()
    try:
        plan = next(plans)
    finally:
        plans.close()
    if plan.snapshot_id != args.snapshot:
        raise RuntimeError(f"streaming scan planned snapshot {plan.snapshot_id}, not {args.snapshot}")
    arrow = builder.new_read().to_arrow(plan.splits())
    if arrow is None:
        return
    fields = table_fields(table)
    for record in arrow.to_pylist():
        row = {k: (v if k == "_row_kind" else canonical(v, fields[k])) for k, v in record.items()}
        print(json.dumps(row, sort_keys=True))


def cmd_snapshot(args):
    catalog = open_catalog(args.warehouse, args.store, args.rest)
    table = catalog.get_table(f"{args.db}.{args.table}")
    manager = table.snapshot_manager()
    if args.snapshot is None:
        snap = manager.get_latest_snapshot()
    else:
        snap = manager.get_snapshot_by_id(args.snapshot)
    if snap is None:
        print("null")
        return
    print(json.dumps({
        "id": snap.id,
        "commit_user": snap.commit_user,
        "commit_identifier": snap.commit_identifier,
        "commit_kind": snap.commit_kind,
        "properties": snap.properties or {},
        "total_record_count": snap.total_record_count,
        "delta_record_count": snap.delta_record_count,
    }, sort_keys=True))


def main(argv, allow_batch=True):
    if allow_batch and argv[:1] == ["batch"]:
        arrow_canonical.run_batch(main)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("warehouse")
        p.add_argument("db")
        p.add_argument("table")
        p.add_argument("--snapshot", type=int)
        p.add_argument("--store", metavar="JSON", help="the warehouse's Azure or GCS store (azure_gcs_env.py)")
        p.add_argument("--rest", metavar="JSON", help='Paimon\'s REST catalog to read through: {"uri", "token"}')

    common(sub.add_parser("rows"))
    common(sub.add_parser("snapshot"))
    lookup = sub.add_parser("lookup")
    common(lookup)
    lookup.add_argument("column")
    lookup.add_argument("value", help="the value in canonical JSON form")
    plan = sub.add_parser("plan")
    common(plan)
    plan.add_argument("--filter", nargs=3, metavar=("COLUMN", "OP", "JSON"))
    changelog = sub.add_parser("changelog")
    common(changelog)
    args = parser.parse_args(argv)
    if args.command == "changelog" and args.snapshot is None:
        parser.error("changelog needs --snapshot")
    commands = {"rows": cmd_rows, "snapshot": cmd_snapshot, "lookup": cmd_lookup, "plan": cmd_plan,
                "changelog": cmd_changelog}
    commands[args.command](args)


if __name__ == "__main__":
    main(sys.argv[1:])
