#!/usr/bin/env python3
"""Reads an Iceberg table with pyiceberg or DuckDB's iceberg extension (independent, non-Rust
Iceberg implementations) and prints it in a canonical JSON form, so tests can compare what our
plugin wrote with what real Iceberg readers see.

  iceberg_read.py rows     <table> [--snapshot ID] [--reader pyiceberg|duckdb] [--drop-system]
  iceberg_read.py snapshots <table>
  iceberg_read.py plan     <table> [--snapshot ID] [--filter COLUMN OP JSON]
  iceberg_read.py files    <table> [--snapshot ID]
  iceberg_read.py schema   <table>
  iceberg_read.py parquet-field-ids <parquet-file>
  iceberg_read.py batch    (reads commands from stdin, one JSON array of arguments per line)

rows, snapshots, plan, files and schema also take --rest URI: <table> is then `namespace.table`
in the Iceberg REST catalog at URI (cluster/iceberg-rest/), which the readers load it from:
pyiceberg's RestCatalog, and DuckDB's iceberg extension attaching the catalog
(ATTACH ... (TYPE iceberg, ENDPOINT URI, AUTHORIZATION_TYPE 'none'), `AT (VERSION => ID)` for
--snapshot). Tables on S3 are read with the S3_* settings of s3_env.py.

They also take --store JSON: the Azure (Azurite) or GCS (fake-gcs-server) store of a table
directory on abfs:// or gs://, which both readers read through that store (azure_gcs_env.py:
pyiceberg's FsspecFileIO with adlfs, or its PyArrowFileIO with pyarrow's GcsFileSystem; DuckDB
with adlfs as its abfs:// file system, or httpfs for gs://).

Otherwise <table> is the table directory (with metadata/version-hint.text and
metadata/vN.metadata.json; without a version hint the newest metadata/*.metadata.json is used,
e.g. pyiceberg SqlCatalog's 0000N-<uuid>.metadata.json) or the path (or file: URI) of a
.metadata.json file.

Canonical values: integers as ints, FLOAT/DOUBLE as floats, strings, booleans, DECIMAL as a
string with exactly `scale` digits after the point, DATE as days since epoch, TIME as millis
of day, TIMESTAMP and TIMESTAMPTZ as epoch microseconds, bytes as lowercase hex, null as null.
`rows` prints one JSON object per row (sorted keys), rows sorted. It reads the current snapshot
or --snapshot ID; the Fluss system columns __bucket, __offset, __timestamp are kept unless
--drop-system. --reader duckdb uses DuckDB's iceberg_scan (the only reader here that applies
equality deletes; pyiceberg 0.12 raises "PyIceberg does not yet support equality deletes").
`snapshots` prints one JSON object per snapshot in commit (metadata) order: snapshot-id,
parent-snapshot-id, sequence-number, timestamp-ms, operation, summary (the whole summary map),
manifest-list, schema-id.
`plan` prints {"files": n, "rows": n, "delete_files": n} of pyiceberg's scan plan (rows = sum of
the planned data files' record counts; delete_files = distinct delete files attached), with
--filter OP one of = != < <= > >= and JSON the canonical value (null with = / !=): proves
bound/partition pruning. pyiceberg 0.12 refuses to plan a snapshot that has equality deletes
(ValueError "PyIceberg does not yet support equality deletes"), so `plan` raises there too.
`files` prints {"files": n, "data_files": n, "delete_files": n, "manifests": n}: the live
files of the snapshot's manifests (entries not DELETED), counted without planning a scan, so
also for snapshots with equality deletes.
`schema` prints one JSON object: the current schema's fields [{id, name, type, required}],
identifier_field_ids, partition_spec [{source-id, field-id, transform, name}], sort_order,
location, format_version, properties.
`parquet-field-ids` prints {"fields": [{"name", "field_id", "type"}]} of a Parquet file's
schema as pyarrow sees it (nested fields as dotted paths; field_id null when missing).
`batch` runs many commands in one process (the readers are slow to import; the tests keep such
processes as workers for the whole run, tests/python/src/lib.rs): for each input line it prints
one line `{"out": [<output lines parsed as JSON>]}` or `{"error": "<message>"}`. Each command
reads the table afresh: no reader state (pyiceberg's manifest cache, a DuckDB database) is
kept from one command to the next.

Only the readers' public APIs are used.
"""

import argparse
import contextlib
import decimal
import importlib.util
import json
import os
import re
import sys

import azure_gcs_env
import s3_env
from arrow_canonical import SYSTEM_COLUMNS, canonical_rows, print_rows, run_batch



# ---- locating the table -------------------------------------------------------------------


def _strip_file_uri(path):
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def _metadata_version(name):
    """Sort key of a metadata file name: v12.metadata.json / 00012-<uuid>.metadata.json -> 12."""
    m = re.match(r"^v?(\d+)[-.]", name)
    return int(m.group(1)) if m else -1


# The Azure or GCS store of the command's table (`--store`, azure_gcs_env.py), set by main()
# for each command.
_STORE = None


class _Location:
    """A table location on the local disk, on S3 (s3:// or s3a://, through pyarrow's S3
    client with the reader's own settings, tests/python/s3_env.py), or on Azure or GCS (pyarrow's
    AzureFileSystem or GcsFileSystem on the `--store`, azure_gcs_env.py), as the readers need it:
    `url(rel)` is what they are pointed at."""

    def __init__(self, table):
        from pyarrow import fs

        self.scheme = None
        self._store_url = None
        if s3_env.is_s3(table):
            self.scheme, rest = table.split("://", 1)
            self.fs, self.root = s3_env.pyarrow_fs(), rest.rstrip("/")
        elif azure_gcs_env.is_azure(table) or azure_gcs_env.is_gcs(table):
            self.scheme, self._store_url = azure_gcs_env.scheme(table), table
            self.fs, self.root = azure_gcs_env.pyarrow_fs(table, _STORE), azure_gcs_env.fs_path(table)
        else:
            self.fs, self.root = fs.LocalFileSystem(), os.path.abspath(_strip_file_uri(table))

    def path(self, *parts):
        return "/".join((self.root,) + parts)

    def url(self, path):
        if self._store_url:
            return azure_gcs_env.url_of(self._store_url, path)
        return f"{self.scheme}://{path}" if self.scheme else "file://" + path

    def info(self, path):
        return self.fs.get_file_info(path)

    def is_file(self, path):
        from pyarrow import fs

        return self.info(path).type == fs.FileType.File

    def is_dir(self, path):
        from pyarrow import fs

        return self.info(path).type == fs.FileType.Directory

    def read_text(self, path):
        with self.fs.open_input_stream(path) as f:
            return f.read().decode()

    def files(self, directory):
        from pyarrow import fs

        return [i for i in self.fs.get_file_info(fs.FileSelector(directory)) if i.type == fs.FileType.File]


def resolve_metadata(table):
    """(metadata file URL, table dir URL or None). The table dir is returned only when it has a
    version hint, i.e. when readers can be pointed at the directory itself."""
    loc = _Location(table)
    if loc.root.endswith(".metadata.json"):
        if not loc.is_file(loc.root):
            raise FileNotFoundError(f"no metadata file {table}")
        return loc.url(loc.root), None
    meta_dir = loc.path("metadata")
    # An S3 "directory" exists once it has objects; an empty listing says the same.
    files = loc.files(meta_dir) if loc.scheme or loc.is_dir(meta_dir) else []
    if not files:
        raise FileNotFoundError(f"{table} is not an Iceberg table directory (no metadata/)")
    hint = meta_dir + "/version-hint.text"
    if loc.is_file(hint):
        value = loc.read_text(hint).strip()
        if value.isdigit():
            candidate = f"{meta_dir}/v{value}.metadata.json"
        else:
            candidate = f"{meta_dir}/" + (value if value.endswith(".metadata.json") else value + ".metadata.json")
        if loc.is_file(candidate):
            return loc.url(candidate), loc.url(loc.root)
    files = [f for f in files if f.base_name.endswith(".metadata.json")]
    if not files:
        raise FileNotFoundError(f"no *.metadata.json in {meta_dir}")
    files.sort(key=lambda f: (_metadata_version(f.base_name), f.mtime_ns or 0))
    return loc.url(files[-1].path), None


def rest_catalog(uri):
    """pyiceberg's RestCatalog for the REST catalog server at `uri`, with the test S3 server's
    settings when the environment has them (a loaded table's FileIO gets the catalog's
    properties; the server may add the S3 keys of its own)."""
    from pyiceberg.catalog import load_catalog

    s3 = s3_env.pyiceberg_options("s3://") if os.environ.get("S3_ENDPOINT") else {}
    return load_catalog("rest", **{"type": "rest", "uri": uri, **s3})


def open_table(table, rest=None):
    """The table: `namespace.table` loaded from the REST catalog at `rest`, or a table directory
    or metadata file read as a static table."""
    from pyiceberg.table import StaticTable

    if rest:
        return rest_catalog(rest).load_table(table)
    metadata_file, _ = resolve_metadata(table)
    return StaticTable.from_metadata(metadata_file, properties={
        **s3_env.pyiceberg_options(metadata_file),
        **azure_gcs_env.pyiceberg_options(metadata_file, _STORE),
    })


# ---- readers ------------------------------------------------------------------------------------


def duckdb_extension_dir():
    """<site-packages>/duckdb_ext/extensions of the duckdb-ext-* PyPI packages (namespace package)."""
    spec = importlib.util.find_spec("duckdb_ext")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("duckdb_ext not installed (pip install duckdb-ext-iceberg); run scripts/setup-python.sh")
    for location in spec.submodule_search_locations:
        candidate = os.path.join(location, "extensions")
        if os.path.isdir(candidate):
            return candidate
    raise RuntimeError(f"no extensions/ directory in {list(spec.submodule_search_locations)}")


@contextlib.contextmanager
def duckdb_connection(rest=None, location=None):
    """A new in-memory DuckDB for one command, closed after it: DuckDB keeps caches per
    database (its external file cache is on by default), and a `batch` process lives for the
    whole test run, across commits to the tables it reads. `location`: the table's, which on
    Azure or GCS the connection reads through the `--store`."""
    import duckdb

    con = duckdb.connect(config={
        "extension_directory": duckdb_extension_dir(),
        "allow_unsigned_extensions": "true",
        "autoinstall_known_extensions": "false",
    })
    try:
        con.execute("LOAD iceberg")
        if os.environ.get("S3_ENDPOINT"):
            con.execute("LOAD httpfs")
            con.execute(s3_env.duckdb_secret_sql())
        if location and (azure_gcs_env.is_azure(location) or azure_gcs_env.is_gcs(location)):
            azure_gcs_env.duckdb_setup(con, location, _STORE)
        if rest:
            # The REST catalog as catalog `rest` (the server ignores the warehouse name). No
            # vended credentials: the server hands out S3 keys without its endpoint, so DuckDB
            # would read from AWS; the secret above reads the test S3 server.
            con.execute(f"ATTACH 'warehouse' AS rest (TYPE iceberg, ENDPOINT {_sql_string(rest)}, "
                        "AUTHORIZATION_TYPE 'none', ACCESS_DELEGATION_MODE 'none')")
        yield con
    finally:
        con.close()


def _sql_string(s):
    return "'" + s.replace("'", "''") + "'"


def _sql_identifier(s):
    return '"' + s.replace('"', '""') + '"'


def read_duckdb(table, snapshot, rest=None):
    if rest:
        namespace, _, name = table.rpartition(".")
        at = f" AT (VERSION => {int(snapshot)})" if snapshot is not None else ""
        with duckdb_connection(rest) as con:
            return con.execute(f"SELECT * FROM rest.{_sql_identifier(namespace)}.{_sql_identifier(name)}{at}"
                               ).fetch_arrow_table()
    metadata_file, table_dir = resolve_metadata(table)
    target = table_dir if table_dir is not None else metadata_file
    args = _sql_string(_strip_file_uri(target))
    if snapshot is not None:
        args += f", snapshot_from_id={int(snapshot)}"
    with duckdb_connection(location=target) as con:
        return con.execute(f"SELECT * FROM iceberg_scan({args})").fetch_arrow_table()


def read_pyiceberg(table, snapshot, rest=None):
    st = open_table(table, rest)
    if snapshot is not None and st.metadata.snapshot_by_id(snapshot) is None:
        raise ValueError(f"no snapshot {snapshot} in {table}")
    return st.scan(snapshot_id=snapshot).to_arrow()


# ---- commands -------------------------------------------------------------------------------------


def cmd_rows(args):
    if args.reader == "duckdb":
        arrow = read_duckdb(args.table, args.snapshot, args.rest)
    else:
        arrow = read_pyiceberg(args.table, args.snapshot, args.rest)
    print_rows(canonical_rows(arrow, drop_system=args.drop_system))


def cmd_snapshots(args):
    st = open_table(args.table, args.rest)
    for snap in st.metadata.snapshots:
        summary = snap.summary.model_dump() if snap.summary is not None else {}
        print(json.dumps({
            "snapshot-id": snap.snapshot_id,
            "parent-snapshot-id": snap.parent_snapshot_id,
            "sequence-number": snap.sequence_number,
            "timestamp-ms": snap.timestamp_ms,
            "operation": summary.get("operation"),
            "manifest-list": snap.manifest_list,
            "schema-id": snap.schema_id,
            "summary": summary,
        }, sort_keys=True))


def _literal(value, iceberg_type):
    """pyiceberg literal for a canonical JSON value of a column of `iceberg_type`."""
    from pyiceberg.expressions import literals as L
    from pyiceberg import types as T

    if isinstance(iceberg_type, T.DecimalType):
        return L.DecimalLiteral(decimal.Decimal(str(value)))
    if isinstance(iceberg_type, T.DateType):
        return L.DateLiteral(int(value))
    if isinstance(iceberg_type, T.TimeType):
        return L.TimeLiteral(int(value) * 1000)
    if isinstance(iceberg_type, (T.TimestampType, T.TimestamptzType)):
        return L.TimestampLiteral(int(value))
    if isinstance(iceberg_type, (T.BinaryType, T.FixedType)):
        return L.BinaryLiteral(bytes.fromhex(value))
    if isinstance(iceberg_type, (T.FloatType, T.DoubleType)):
        return L.DoubleLiteral(float(value)).to(iceberg_type)
    if isinstance(iceberg_type, T.IntegerType):
        return L.LongLiteral(int(value)).to(iceberg_type)
    return L.literal(value).to(iceberg_type)


def build_filter(st, column, op, json_value):
    from pyiceberg import expressions as E

    field = st.schema().find_field(column)
    value = json.loads(json_value)
    if value is None:
        if op == "=":
            return E.IsNull(column)
        if op == "!=":
            return E.NotNull(column)
        raise ValueError(f"null only works with = and !=, not {op}")
    ops = {"=": E.EqualTo, "!=": E.NotEqualTo, "<": E.LessThan, "<=": E.LessThanOrEqual,
           ">": E.GreaterThan, ">=": E.GreaterThanOrEqual}
    if op not in ops:
        raise ValueError(f"unknown operator {op} (one of {' '.join(ops)})")
    return ops[op](column, _literal(value, field.field_type))


def cmd_plan(args):
    from pyiceberg.expressions import AlwaysTrue

    st = open_table(args.table, args.rest)
    row_filter = AlwaysTrue() if not args.filter else build_filter(st, *args.filter)
    tasks = list(st.scan(row_filter=row_filter, snapshot_id=args.snapshot).plan_files())
    delete_files = {d.file_path for t in tasks for d in (t.delete_files or ())}
    print(json.dumps({
        "files": len(tasks),
        "rows": sum(t.file.record_count for t in tasks),
        "delete_files": len(delete_files),
    }, sort_keys=True))


def cmd_files(args):
    from pyiceberg.manifest import DataFileContent

    st = open_table(args.table, args.rest)
    snapshot = st.snapshot_by_id(args.snapshot) if args.snapshot else st.current_snapshot()
    manifests = snapshot.manifests(st.io) if snapshot else []
    data = deletes = 0
    for manifest in manifests:
        for entry in manifest.fetch_manifest_entry(st.io, discard_deleted=True):
            if entry.data_file.content == DataFileContent.DATA:
                data += 1
            else:
                deletes += 1
    print(json.dumps({"files": data + deletes, "data_files": data, "delete_files": deletes,
                      "manifests": len(manifests)}, sort_keys=True))


def cmd_schema(args):
    st = open_table(args.table, args.rest)
    schema = st.schema()
    spec = st.spec()
    order = st.sort_order()
    print(json.dumps({
        "schema_id": schema.schema_id,
        "fields": [{"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required}
                   for f in schema.fields],
        "identifier_field_ids": sorted(schema.identifier_field_ids),
        "spec_id": spec.spec_id,
        "partition_spec": [{"source-id": f.source_id, "field-id": f.field_id, "transform": str(f.transform),
                            "name": f.name} for f in spec.fields],
        "sort_order": [{"source-id": f.source_id, "transform": str(f.transform), "direction": str(f.direction.value),
                        "null-order": str(f.null_order.value)} for f in order.fields],
        "location": st.metadata.location,
        "format_version": st.metadata.format_version,
        "properties": dict(st.properties),
    }, sort_keys=True))


def cmd_parquet_field_ids(args):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []

    def walk(field, prefix):
        name = prefix + field.name
        meta = field.metadata or {}
        fid = meta.get(b"PARQUET:field_id")
        out.append({"name": name, "field_id": int(fid) if fid is not None else None, "type": str(field.type)})
        t = field.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), name + ".")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field, name + ".")
        elif pa.types.is_map(t):
            walk(t.key_field, name + ".")
            walk(t.item_field, name + ".")

    for field in pq.ParquetFile(_strip_file_uri(args.file)).schema_arrow:
        walk(field, "")
    print(json.dumps({"fields": out}, sort_keys=True))


# ---- driver ------------------------------------------------------------------------------------------


def main(argv, allow_batch=True):
    if allow_batch and argv[:1] == ["batch"]:
        run_batch(main)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rows = sub.add_parser("rows")
    rows.add_argument("table")
    rows.add_argument("--rest", metavar="URI", help="read namespace.table from this REST catalog")
    rows.add_argument("--snapshot", type=int)
    rows.add_argument("--reader", choices=("pyiceberg", "duckdb"), default="pyiceberg")
    rows.add_argument("--drop-system", action="store_true", help="drop __bucket, __offset, __timestamp")
    snapshots = sub.add_parser("snapshots")
    snapshots.add_argument("table")
    snapshots.add_argument("--rest", metavar="URI")
    plan = sub.add_parser("plan")
    plan.add_argument("table")
    plan.add_argument("--rest", metavar="URI")
    plan.add_argument("--snapshot", type=int)
    plan.add_argument("--filter", nargs=3, metavar=("COLUMN", "OP", "JSON"))
    files = sub.add_parser("files")
    files.add_argument("table")
    files.add_argument("--rest", metavar="URI")
    files.add_argument("--snapshot", type=int)
    schema = sub.add_parser("schema")
    schema.add_argument("table")
    schema.add_argument("--rest", metavar="URI")
    for p in (rows, snapshots, plan, files, schema):
        p.add_argument("--store", metavar="JSON", help="the table's Azure or GCS store (azure_gcs_env.py)")
    pfi = sub.add_parser("parquet-field-ids")
    pfi.add_argument("file")
    args = parser.parse_args(argv)
    global _STORE
    _STORE = azure_gcs_env.parse(getattr(args, "store", None))
    if _STORE:
        azure_gcs_env.forget_clients()
    # pyiceberg keeps the manifests it read in a process-wide cache keyed by path alone; a
    # `batch` process lives for the whole test run, so each command starts without it.
    from pyiceberg.manifest import clear_manifest_cache

    clear_manifest_cache()
    commands = {"rows": cmd_rows, "snapshots": cmd_snapshots, "plan": cmd_plan, "files": cmd_files,
                "schema": cmd_schema,
                "parquet-field-ids": cmd_parquet_field_ids}
    commands[args.command](args)


if __name__ == "__main__":
    main(sys.argv[1:])
