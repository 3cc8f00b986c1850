#!/usr/bin/env python3
"""Reads a Lance dataset with pylance (Lance's own reader, independent of our Rust writer) and
prints it in the canonical JSON form of arrow_canonical.py, so tests can compare what our
plugin wrote with what Lance reads.

  lance_read.py rows        <dataset> [--version V] [--filter SQL]
  lance_read.py count       <dataset> [--version V]
  lance_read.py versions    <dataset>
  lance_read.py transaction <dataset> <version>
  lance_read.py info        <dataset> [--version V]
  lance_read.py append-copy <dataset> <rows>
  lance_read.py batch       (reads commands from stdin, one JSON array of arguments per line)

`rows` prints one JSON object per row (sorted keys), rows sorted; --filter is a Lance SQL
predicate pushed into the scan (e.g. "id >= 10"). `count` prints {"count": n} from
count_rows(). `versions` prints one {"version": v} per version, oldest first. `transaction`
prints {"read_version", "uuid", "operation", "properties"} of the version's transaction.
`info` prints {"version", "data_storage_version", "fragments": [{"id", "physical_rows",
"files"}], "schema": [{"name", "type", "nullable"}]}. `append-copy` appends (with pylance's own
writer, mode="append") the first <rows> rows of the current version again and prints the new
{"version": v}: proves our datasets accept Lance's writer, which keeps their storage version.
"""

import argparse
import json
import sys

import s3_env
from arrow_canonical import canonical_rows, print_rows, run_batch


def open_dataset(path, version=None):
    import lance

    return lance.dataset(path, version=version, storage_options=s3_env.lance_options(path))


def cmd_rows(args):
    ds = open_dataset(args.dataset, args.version)
    table = ds.to_table(filter=args.filter) if args.filter else ds.to_table()
    print_rows(canonical_rows(table))


def cmd_count(args):
    print(json.dumps({"count": open_dataset(args.dataset, args.version).count_rows()}))


def cmd_versions(args):
    for v in sorted(open_dataset(args.dataset).versions(), key=lambda v: v["version"]):
        print(json.dumps({"version": v["version"]}))


def cmd_transaction(args):
    tx = open_dataset(args.dataset).read_transaction(args.version)
    if tx is None:
        print(json.dumps(None))
        return
    print(json.dumps({
        "read_version": tx.read_version,
        "uuid": tx.uuid,
        "operation": type(tx.operation).__name__,
        "properties": dict(tx.transaction_properties or {}),
    }, sort_keys=True))


def cmd_info(args):
    ds = open_dataset(args.dataset, args.version)
    fragments = []
    for f in ds.get_fragments():
        meta = f.metadata
        fragments.append({"id": f.fragment_id, "physical_rows": meta.physical_rows,
                          "files": [d.path for d in meta.files]})
    print(json.dumps({
        "version": ds.version,
        "data_storage_version": ds.data_storage_version,
        "fragments": fragments,
        "schema": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in ds.schema],
    }, sort_keys=True))


def cmd_append_copy(args):
    import lance

    ds = open_dataset(args.dataset)
    head = ds.to_table().slice(0, args.rows)
    out = lance.write_dataset(head, args.dataset, mode="append",
                              storage_options=s3_env.lance_options(args.dataset))
    print(json.dumps({"version": out.version}))


def main(argv, allow_batch=True):
    if allow_batch and argv[:1] == ["batch"]:
        run_batch(main)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rows = sub.add_parser("rows")
    rows.add_argument("dataset")
    rows.add_argument("--version", type=int)
    rows.add_argument("--filter")
    count = sub.add_parser("count")
    count.add_argument("dataset")
    count.add_argument("--version", type=int)
    versions = sub.add_parser("versions")
    versions.add_argument("dataset")
    tx = sub.add_parser("transaction")
    tx.add_argument("dataset")
    tx.add_argument("version", type=int)
    info = sub.add_parser("info")
    info.add_argument("dataset")
    info.add_argument("--version", type=int)
    append = sub.add_parser("append-copy")
    append.add_argument("dataset")
    append.add_argument("rows", type=int)
    args = parser.parse_args(argv)
    commands = {"rows": cmd_rows, "count": cmd_count, "versions": cmd_versions,
                "transaction": cmd_transaction, "info": cmd_info, "append-copy": cmd_append_copy}
    commands[args.command](args)


if __name__ == "__main__":
    main(sys.argv[1:])
