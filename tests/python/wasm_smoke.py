#!/usr/bin/env python3
"""Smoke test of a lake-format plugin *as a WebAssembly component*, without the Rust host:
wasmtime-py instantiates the component, Python implements the host imports (storage over a
local directory, logging, clock, maintenance status, a files-only table catalog, and the data
plane with pyarrow encoding: smoke_data_plane.py), and the script drives the plugin through the
WIT exports like the host does (validate, create table, one bucket through `writer`, one through
`batch-writer`, commit, empty commit, recovery query).
It then reads the table back with the format's own reader: pypaimon for the paimon plugin,
pyiceberg for the iceberg plugin.

  wasm_smoke.py <plugin.wasm> <warehouse-dir>

Exits non-zero on the first failed check. Slow on purpose-built large data (bytes cross the
boundary one by one in wasmtime-py): keep batches small.
"""

import datetime
import decimal
import os
import sys
import tempfile
import time

import pyarrow as pa
from wasmtime import Config, Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Record, ResourceHost, ResourceType, Variant

from smoke_data_plane import DataPlane, get, lake_error, rec

PKG = "fluss:lake"


def contract_version():
    """The contract version the WIT declares (`package fluss:lake@X;`)."""
    wit = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "wit", "fluss-lake.wit")
    with open(wit) as f:
        for line in f:
            if line.startswith(f"package {PKG}@"):
                return line.strip().rstrip(";").split("@", 1)[1]
    raise RuntimeError(f"no package line in {wit}")


VER = contract_version()
# The host resource type id of `storage.upload` handles.
UPLOAD_TYPE = 1


class DirStorage:
    """The WIT storage interface over one directory (the table location)."""

    def __init__(self, root):
        self.root = root
        # Uploads in progress: handle rep -> (destination, temporary file, open file).
        self.uploads = {}
        self.next_upload = 1

    def _path(self, p):
        parts = p.split("/")
        if not p or p.startswith("/") or any(s in ("", ".", "..") for s in parts):
            raise ValueError(p)
        return os.path.join(self.root, *parts)

    def _guard(self, f):
        try:
            return f()
        except ValueError as e:
            return lake_error("invalid-input", f"invalid path {e}")
        except OSError as e:
            return lake_error("io", str(e))

    def get(self, store, path):
        def run():
            full = self._path(path)
            if not os.path.isfile(full):
                return lake_error("not-found", path)
            with open(full, "rb") as f:
                return f.read()
        return self._guard(run)

    def _write(self, path, data, exclusive):
        full = self._path(path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(full), prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(bytes(data))
        if exclusive:
            try:
                os.link(tmp, full)
            except FileExistsError:
                return lake_error("already-exists", path)
            finally:
                os.unlink(tmp)
        else:
            os.replace(tmp, full)
        return None

    def put(self, store, path, data):
        return self._guard(lambda: self._write(path, data, False))

    def put_if_absent(self, store, path, data):
        return self._guard(lambda: self._write(path, data, True))

    def _meta(self, rel, full):
        st = os.stat(full)
        return rec(path=rel, size=st.st_size, last_modified=int(st.st_mtime * 1000))

    def get_range(self, store, path, offset, length):
        def run():
            full = self._path(path)
            if not os.path.isfile(full):
                return lake_error("not-found", path)
            with open(full, "rb") as f:
                f.seek(offset)
                return f.read(length)
        return self._guard(run)

    def list_objects(self, store, prefix, start_after, max_entries):
        """One page, in path order (a page of at most 100 here, whatever is asked)."""
        def run():
            p = prefix.strip("/")
            base = self._path(p) if p else self.root
            out = []
            for dirpath, _, files in os.walk(base):
                for name in files:
                    if name.startswith(".tmp-"):
                        continue
                    full = os.path.join(dirpath, name)
                    rel = os.path.relpath(full, self.root).replace(os.sep, "/")
                    if start_after is None or rel > start_after:
                        out.append((rel, full))
            out.sort()
            page = out[:min(max_entries, 100)]
            nxt = page[-1][0] if len(out) > len(page) else None
            return rec(objects=[self._meta(rel, full) for rel, full in page], next=nxt)
        # Both cases are records: the result is given tagged.
        r = self._guard(run)
        return Variant("err", r) if hasattr(r, "kind") else Variant("ok", r)

    def upload_start(self, store, path):
        def run():
            full = self._path(path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(full), prefix=".tmp-")
            rep = self.next_upload
            self.next_upload += 1
            self.uploads[rep] = (full, tmp, os.fdopen(fd, "wb"))
            return ResourceHost.own(rep, UPLOAD_TYPE)
        return self._guard(run)

    @staticmethod
    def _rep(store, handle):
        # Once per call: wasmtime-py's `to_host` uses the borrowed handle up.
        return handle.to_host(store).rep

    def upload_write(self, store, handle, data):
        def run():
            self.uploads[self._rep(store, handle)][2].write(bytes(data))
            return None
        return self._guard(run)

    def upload_complete(self, store, handle):
        def run():
            full, tmp, f = self.uploads.pop(self._rep(store, handle))
            size = f.tell()
            f.close()
            os.replace(tmp, full)
            return size
        return self._guard(run)

    def upload_abort(self, store, handle):
        return self._guard(lambda: self._drop(self.uploads.pop(self._rep(store, handle), None)))

    def upload_dtor(self, store, rep):
        self._drop(self.uploads.pop(rep, None))

    @staticmethod
    def _drop(upload):
        if upload is not None:
            upload[2].close()
            if os.path.exists(upload[1]):
                os.unlink(upload[1])
        return None

    def delete_object(self, store, path):
        def run():
            full = self._path(path)
            if os.path.isfile(full):
                os.unlink(full)
            return None
        return self._guard(run)

    def head(self, store, path):
        def run():
            full = self._path(path)
            return Variant("ok", self._meta(path, full) if os.path.isfile(full) else None)
        r = self._guard(run)
        return r if isinstance(r, Variant) else Variant("err", r)


class Plugin:
    def __init__(self, wasm, storage):
        self.data_plane = DataPlane(storage)
        cfg = Config()
        self.engine = Engine(cfg)
        self.store = Store(self.engine)
        self.store.set_wasi(WasiConfig())
        linker = Linker(self.engine)
        linker.add_wasip2()
        with linker.root() as root:
            with root.add_instance(f"{PKG}/types@{VER}"):
                pass
            with root.add_instance(f"{PKG}/storage@{VER}") as s:
                for name in ["get", "get-range", "put", "put-if-absent", "list-objects", "delete-object", "head"]:
                    s.add_func(name, getattr(storage, name.replace("-", "_")))
                s.add_resource("upload", ResourceType.host(UPLOAD_TYPE), storage.upload_dtor)
                s.add_func("[static]upload.start", storage.upload_start)
                for method in ["write", "complete", "abort"]:
                    s.add_func(f"[method]upload.{method}", getattr(storage, f"upload_{method}"))
            with root.add_instance(f"{PKG}/logging@{VER}") as lg:
                lg.add_func("log", lambda store, level, msg: print(f"  [plugin {level}] {msg}"))
            with root.add_instance(f"{PKG}/clock@{VER}") as c:
                c.add_func("now-millis", lambda store: int(time.time() * 1000))
            # Reported by maintenance calls only, which this script does not make.
            with root.add_instance(f"{PKG}/maintenance-status@{VER}") as ms:
                ms.add_func("over-budget", lambda store, parts: None)
            # The tables here are kept by their files alone, as a Hadoop or filesystem catalog
            # keeps them: no catalog to call (every SDK plugin imports it, through its commit kit).
            with root.add_instance(f"{PKG}/table-catalog@{VER}") as tc:
                tc.add_func("kind", lambda store: "files")
                files_only = lambda *_: Variant("err", lake_error("unsupported", "kept by its files alone"))
                for name in ["load-table", "create-table", "commit-table", "swap-metadata-file"]:
                    tc.add_func(name, files_only)
            # ... and no catalog keeps their versions (0.3.6).
            with root.add_instance(f"{PKG}/version-catalog@{VER}") as vc:
                vc.add_func("keeps-versions", lambda store: False)
                for name in ["latest-version", "commit-version"]:
                    vc.add_func(name, files_only)
            with root.add_instance(f"{PKG}/data-plane@{VER}") as dp:
                self.data_plane.link(dp)
        self.instance = linker.instantiate(self.store, Component.from_file(self.engine, wasm))

    def call(self, iface, func, *args):
        i = self.instance.get_export_index(self.store, f"{PKG}/{iface}@{VER}")
        f = self.instance.get_func(self.store, self.instance.get_export_index(self.store, func, i))
        result = f(self.store, *args)
        f.post_return(self.store)
        return result

    def ok(self, iface, func, *args):
        r = self.call(iface, func, *args)
        if isinstance(r, Record) and hasattr(r, "kind") and hasattr(r, "message"):
            raise AssertionError(f"{func} failed: {r.kind}: {r.message}")
        if isinstance(r, Variant):
            if r.tag == "err":
                raise AssertionError(f"{func} failed: {r.payload.kind}: {r.payload.message}")
            return r.payload
        return r


COLUMNS = [("id", "INT", False), ("name", "STRING", True), ("ts", "TIMESTAMP_LTZ(3)", True),
           ("amount", "DECIMAL(10, 2)", True)]


def table_info(name, fmt, primary_keys=(), buckets=2, table_id=7):
    return rec(
        table_id=table_id, path=rec(database="fluss", table=name), schema_id=0,
        columns=[rec(name=n, data_type=t, nullable=nl, comment=None) for n, t, nl in COLUMNS],
        primary_keys=list(primary_keys), bucket_keys=list(primary_keys), num_buckets=buckets, partition_keys=[],
        properties=[("table.datalake.enabled", "true"), ("table.datalake.format", fmt)],
        custom_properties=[])


def batch_ipc(ids, names=None):
    schema = pa.schema([pa.field("id", pa.int32(), False), pa.field("name", pa.string()),
                        pa.field("ts", pa.timestamp("ms", tz="UTC")), pa.field("amount", pa.decimal128(10, 2))])
    t = pa.table({
        "id": pa.array(ids, pa.int32()),
        "name": names or [f"name-{i}" for i in ids],
        "ts": pa.array([1_700_000_000_000 + i for i in ids], pa.timestamp("ms", tz="UTC")),
        "amount": [decimal.Decimal(i) / 4 for i in ids],
    }, schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def main(wasm, warehouse):
    table = "smoke"
    storage = DirStorage(warehouse)
    p = Plugin(wasm, storage)
    info = p.call("plugin", "info")
    fmt = info.format
    assert fmt in ("paimon", "iceberg", "lance") and get(info, "contract-version") == VER, vars(info)
    config = [("warehouse", warehouse)]
    t = table_info(table, fmt)
    # The plugin declares its layout; the host (here, this script) composes the location.
    layout = get(info, "layout")
    suffixes = (get(layout, "database-suffix"), get(layout, "table-suffix"))
    assert suffixes == {"paimon": (".db", ""), "iceberg": ("", ""), "lance": ("", ".lance")}[fmt], suffixes
    location = f"fluss{suffixes[0]}/{table}{suffixes[1]}"
    storage.root = os.path.join(warehouse, location)
    err = p.call("plugin", "validate-table", t, config)
    assert err is not None and err.kind == "not-found", err
    assert p.ok("catalog", "create-table-if-missing", t, config) is True
    assert p.ok("catalog", "create-table-if-missing", t, config) is False
    assert p.ok("plugin", "validate-table", t, config) is None

    payloads = []
    offsets = {0: 0, 1: 0}
    for bucket, ids in [(0, [1, 2, 3]), (1, [4, 5])]:
        ctx = rec(table=t, bucket=bucket, partition_id=None, partition_name=None, split_index=bucket,
                  round_timestamp=0, config=[])
        n = len(ids)
        rb = rec(ipc=batch_ipc(ids), change_types=b"", log_offsets=list(range(offsets[bucket], offsets[bucket] + n)),
                 timestamps=[1_750_000_000_000] * n)
        offsets[bucket] += n
        if bucket == 0:
            # The rows cross into the plugin, which encodes them itself.
            w = p.ok("writer", "[static]lake-writer.open", ctx)
            p.ok("writer", "[method]lake-writer.write", w, rb)
            result = p.ok("writer", "[method]lake-writer.complete", w)
        else:
            # The rows stay here as a handle; the plugin lays out the file and this script's
            # data plane encodes it (Paimon and Iceberg log tables) or the plugin fetches them.
            w = p.ok("batch-writer", "[static]lake-batch-writer.open", ctx)
            handle, rep = p.data_plane.batch(rb)
            p.ok("batch-writer", "[method]lake-batch-writer.write", w, handle)
            p.data_plane.drop_batch(rep)
            result = p.ok("batch-writer", "[method]lake-batch-writer.complete", w)
        assert get(result, "record-count") == n
        payloads.append(result.payload)
        w.drop(p.store)

    # Paimon and Iceberg log tables have the data plane encode; Lance fetches the rows.
    encoded_here = len(p.data_plane.finished)
    assert encoded_here == (0 if fmt == "lance" else 1), p.data_plane.finished
    cctx = rec(table=t, config=config, tiering_config=[])
    c = p.ok("committer", "[static]lake-committer.open", cctx)
    committable = p.ok("committer", "[method]lake-committer.to-committable", c, payloads)
    res = p.ok("committer", "[method]lake-committer.commit", c, committable, [("fluss-offsets", "/o/1.offsets")], None)
    first = get(res, "snapshot-id")
    assert get(res.stats, "record-count") == 5, vars(res.stats)
    empty = p.ok("committer", "[method]lake-committer.to-committable", c, [])
    res = p.ok("committer", "[method]lake-committer.commit", c, empty, [("fluss-offsets", "/o/2.offsets")], first)
    second = get(res, "snapshot-id")
    if fmt in ("paimon", "lance"):
        assert (first, second) == {"paimon": (1, 2), "lance": (2, 3)}[fmt], (first, second)
    missing = p.ok("committer", "[method]lake-committer.get-missing-lake-snapshot", c, first)
    assert get(missing, "snapshot-id") == second and ("fluss-offsets", "/o/2.offsets") in missing.properties, vars(missing)
    assert p.ok("committer", "[method]lake-committer.get-missing-lake-snapshot", c, second) is None
    c.drop(p.store)

    want = sorted([(i, f"name-{i}", decimal.Decimal(i) / 4, b, o)
                   for b, ids in [(0, [1, 2, 3]), (1, [4, 5])] for o, i in enumerate(ids)])
    if fmt == "paimon":
        from pypaimon import CatalogFactory
        tbl = CatalogFactory.create({"warehouse": warehouse}).get_table(f"fluss.{table}")
        rb = tbl.new_read_builder()
        rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
        snap = tbl.snapshot_manager().get_latest_snapshot()
        assert snap.id == 2 and snap.commit_user == "__fluss_lake_tiering"
        assert snap.properties == {"fluss-offsets": "/o/2.offsets"} and snap.total_record_count == 5
    elif fmt == "lance":
        import lance

        ds = lance.dataset(storage.root)
        rows = ds.to_table().to_pylist()
        tx = ds.read_transaction(second)
        assert tx.transaction_properties == {"commit-user": "__fluss_lake_tiering",
                                             "fluss-offsets": "/o/2.offsets"}, tx
        # Lance datasets hold the Fluss columns only: no __bucket / __offset
        want = sorted((i, n, a) for i, n, a, _, _ in want)
        got = sorted((r["id"], r["name"], r["amount"]) for r in rows)
        assert got == want, (got, want)
    else:
        from pyiceberg.table import StaticTable
        tbl = StaticTable.from_metadata(storage.root)
        rows = tbl.scan().to_arrow().to_pylist()
        snap = tbl.current_snapshot()
        assert snap.snapshot_id == second, (snap.snapshot_id, second)
        summary = snap.summary.model_dump()
        assert summary["commit-user"] == "__fluss_lake_tiering", summary
        assert summary["fluss-offsets"] == "/o/2.offsets" and summary["total-records"] == "5", summary
    if fmt != "lance":
        got = sorted((r["id"], r["name"], r["amount"], r["__bucket"], r["__offset"]) for r in rows)
        assert got == want, (got, want)
    ts = {r["id"]: r["ts"] for r in rows}
    assert ts[1] == datetime.datetime.fromtimestamp(1_700_000_000.001, datetime.timezone.utc).replace(
        tzinfo=ts[1].tzinfo), ts[1]
    if fmt == "paimon":
        primary_key_table(p, storage, warehouse)
    print(f"wasm smoke test passed: {wasm} wrote a {fmt} table its reader reads ({len(rows)} rows, 2 snapshots)")


def primary_key_table(p, storage, warehouse):
    """A Paimon primary-key bucket through `writer`, the plugin encoding its files itself (as
    with `--plugin-data-plane guest`); pypaimon reads the merged table.

    Not through `batch-writer`: wasmtime-py 50's C API traps ("deferred host scope has no call
    context") lifting the `list<borrow<kept-batch>>` of `parquet-file.append-picked`, before this
    script's function is called. The host (wasmtime 48) lifts it, and the end-to-end tests run
    every Paimon primary-key table through `append-picked` (e2e tiering::paimon_primary_key,
    merge_engines, nested_types, and the evil plugin's refusals in component::evil_guests)."""
    table = "smoke_pk"
    t = table_info(table, "paimon", primary_keys=["id"], buckets=1, table_id=8)
    config = [("warehouse", warehouse)]
    storage.root = os.path.join(warehouse, f"fluss.db/{table}")
    assert p.ok("catalog", "create-table-if-missing", t, config) is True
    ids = [1, 2, 3, 2, 2, 3]
    names = ["one", "two", "three", "two", "two again", "three"]
    # +I +I +I -U +U -D
    kinds = bytes([1, 1, 1, 2, 3, 4])
    rb = rec(ipc=batch_ipc(ids, names), change_types=kinds, log_offsets=list(range(len(ids))),
             timestamps=[1_750_000_000_000] * len(ids))
    ctx = rec(table=t, bucket=0, partition_id=None, partition_name=None, split_index=0,
              round_timestamp=0, config=[])
    before = len(p.data_plane.finished)
    w = p.ok("writer", "[static]lake-writer.open", ctx)
    p.ok("writer", "[method]lake-writer.write", w, rb)
    result = p.ok("writer", "[method]lake-writer.complete", w)
    w.drop(p.store)
    assert get(result, "record-count") == len(ids)
    assert len(p.data_plane.finished) == before, "the plugin encodes a writer's files itself"
    c = p.ok("committer", "[static]lake-committer.open", rec(table=t, config=config, tiering_config=[]))
    committable = p.ok("committer", "[method]lake-committer.to-committable", c, [result.payload])
    p.ok("committer", "[method]lake-committer.commit", c, committable, [("fluss-offsets", "/o/pk.offsets")], None)
    c.drop(p.store)
    from pypaimon import CatalogFactory
    tbl = CatalogFactory.create({"warehouse": warehouse}).get_table(f"fluss.{table}")
    rb = tbl.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    got = sorted((r["id"], r["name"]) for r in rows)
    assert got == [(1, "one"), (2, "two again")], got


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
