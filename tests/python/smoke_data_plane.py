"""The `data-plane` import (contract 0.3.9) for the wasm smoke test, written apart from the Rust
host: pyarrow encodes the Parquet files a plugin lays out, so the smoke test proves that the
contract alone (the WIT and its doc comments) is enough for a second host to serve a plugin's
`batch-writer`, and that the files the plugin describes this way are read by the format's own
reader.

A `batch` is a Python object holding one `row-batch` (the Arrow IPC stream and the per-row
columns `writer.write` receives); a `parquet-file` assembles each appended batch into the
file's columns (`file-columns.sources`) and writes it with pyarrow, then reports the size, the
row count and per-column statistics (flattened: each column, then its struct fields'). A
`kept-batch` is a `batch` kept past its call; `append-picked` gathers the picked rows of kept
batches with `take`, and the plugin's `own` columns.
"""

import os
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from wasmtime.component import Record, ResourceHost, ResourceType, Variant

# Host resource type ids (the storage `upload` is 1).
BATCH_TYPE = 2
PARQUET_FILE_TYPE = 3
KEPT_BATCH_TYPE = 4

# The arrow type of each `computed-column` case.
COMPUTED_TYPES = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
             "utf8": pa.string(), "binary": pa.binary()}


def rec(**fields):
    """A WIT record with these fields (`_` spelled `-`)."""
    r = Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


def get(r, name):
    """A record's field by its WIT name."""
    return getattr(r, name)


def lake_error(kind, message):
    return rec(kind=kind, message=message)


def _unit(arrow_unit):
    return {"s": "second", "ms": "millisecond", "us": "microsecond", "ns": "nanosecond"}[arrow_unit]


def _bounds(values, key=None):
    return (min(values, key=key), max(values, key=key)) if values else (None, None)


def _min_max(array):
    """The contract's `datum` min and max of an array's non-null values (None for unordered types)."""
    t = array.type
    valid = array.drop_null()
    if pa.types.is_boolean(t):
        lo, hi = _bounds(valid.to_pylist())
        tag = "boolean"
    elif pa.types.is_integer(t):
        lo, hi = _bounds(valid.to_pylist())
        tag = f"int{t.bit_width}"
    elif pa.types.is_floating(t):
        # Java's ordering: NaN above every number.
        lo, hi = _bounds(valid.to_pylist(), key=lambda v: (v != v, v if v == v else 0.0))
        tag = f"float{t.bit_width}"
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        # Code point order is UTF-8 byte order.
        lo, hi = _bounds(valid.to_pylist(), key=lambda s: s.encode())
        tag = "utf8"
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        lo, hi = _bounds(valid.to_pylist())
        tag = "binary"
    elif pa.types.is_decimal(t):
        unscaled = [int(d.scaleb(t.scale)) for d in valid.to_pylist()]
        lo, hi = _bounds(unscaled)
        if lo is None:
            return None, None
        split = lambda v: Variant("decimal", (v >> 64, v & 0xFFFF_FFFF_FFFF_FFFF))
        return split(lo), split(hi)
    elif pa.types.is_date32(t):
        lo, hi = _bounds(valid.cast(pa.int32()).to_pylist())
        tag = "date32"
    elif pa.types.is_time(t) or pa.types.is_timestamp(t):
        width = pa.int32() if pa.types.is_time32(t) else pa.int64()
        lo, hi = _bounds(valid.cast(width).to_pylist())
        if lo is None:
            return None, None
        tag = "time" if pa.types.is_time(t) else "timestamp"
        return Variant(tag, (lo, _unit(t.unit))), Variant(tag, (hi, _unit(t.unit)))
    else:
        return None, None
    if lo is None:
        return None, None
    return Variant(tag, lo), Variant(tag, hi)


def _stats(array, struct_fields, out):
    """Appends the statistics of `array`, then (for a struct, when asked) those of its fields."""
    lo, hi = _min_max(array)
    children = []
    if struct_fields and pa.types.is_struct(array.type):
        # `flatten` gives each field counted null where its struct is.
        children = array.flatten()
    out.append(rec(null_count=array.null_count, min=lo, max=hi, fields=len(children)))
    for child in children:
        _stats(child, struct_fields, out)


def _compression(c):
    """pyarrow's compression name and level for the contract's `compression` variant."""
    return {
        "uncompressed": ("none", None),
        "snappy": ("snappy", None),
        "lz4": ("lz4", None),
        "lz4-raw": ("lz4", None),
        "zstd": ("zstd", c.payload),
        "gzip": ("gzip", c.payload),
    }[c.tag]


class HostBatch:
    """One `batch` handle: a split's rows as `writer.write` would receive them."""

    def __init__(self, row_batch):
        self.row_batch = row_batch
        self.table = pa.ipc.open_stream(row_batch.ipc).read_all()


class ParquetFile:
    """One `parquet-file`: a Parquet file of the plugin's columns, written with pyarrow."""

    def __init__(self, storage, path, columns, settings):
        self.schema = pa.ipc.open_stream(bytes(columns.schema)).schema
        self.sources = columns.sources
        if len(self.sources) != len(self.schema):
            raise ValueError(f"{len(self.schema)} file columns but {len(self.sources)} sources")
        self.max_rows = get(settings, "max-row-group-rows")
        self.struct_fields = get(settings, "struct-field-stats")
        codec, level = _compression(settings.compression)
        self.full = storage._path(path)
        os.makedirs(os.path.dirname(self.full), exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(dir=os.path.dirname(self.full), prefix=".tmp-")
        self.sink = os.fdopen(fd, "wb")
        self.writer = pq.ParquetWriter(self.sink, self.schema, compression=codec, compression_level=level,
                                       store_schema=get(settings, "embed-arrow-schema"))
        self.tables = []
        self.rows = 0

    def _column(self, field, source, batch):
        rows = batch.row_batch
        n = batch.table.num_rows
        tag = source.tag
        if tag == "fluss":
            return batch.table.column(source.payload).combine_chunks().cast(field.type)
        if tag == "null":
            return pa.nulls(n, field.type)
        if tag == "bucket":
            return pa.array([source.payload] * n, pa.int32())
        if tag == "log-offset":
            return pa.array(get(rows, "log-offsets"), pa.int64())
        # commit-timestamp: epoch millis as the column's timestamp type.
        millis = pa.array(rows.timestamps, pa.int64()).cast(pa.timestamp("ms", field.type.tz))
        return millis.cast(field.type)

    def append(self, batch):
        if any(s.tag == "computed" for s in self.sources):
            raise ValueError("a file with computed columns takes append-picked")
        self._write([self._column(f, s, batch) for f, s in zip(self.schema, self.sources)])
        return self.sink.tell()

    def append_picked(self, batches, picks, own):
        """The picked rows of `batches` (kept `HostBatch`es) in order, with the `own` columns."""
        if len(picks) > 65536:
            raise ValueError(f"{len(picks)} picks, over 65536")
        for b, r in picks:
            if b >= len(batches) or r >= batches[b].table.num_rows:
                raise ValueError(f"pick ({b}, {r}) out of range")
        own = [pa.array(list(c.payload), COMPUTED_TYPES[c.tag]) for c in own]
        if any(len(c) != len(picks) for c in own):
            raise ValueError("own columns need one value per pick")
        starts = [0]
        for batch in batches:
            starts.append(starts[-1] + batch.table.num_rows)
        take = pa.array([starts[b] + r for b, r in picks], pa.int64())

        def gathered(values):
            return pa.concat_arrays(values).take(take) if values else pa.array([], pa.int64())

        columns = []
        for field, source in zip(self.schema, self.sources):
            tag = source.tag
            if tag == "fluss":
                columns.append(gathered(
                    [b.table.column(source.payload).combine_chunks() for b in batches]).cast(field.type))
            elif tag == "null":
                columns.append(pa.nulls(len(picks), field.type))
            elif tag == "bucket":
                columns.append(pa.array([source.payload] * len(picks), pa.int32()))
            elif tag == "log-offset":
                columns.append(gathered([pa.array(get(b.row_batch, "log-offsets"), pa.int64()) for b in batches]))
            elif tag == "commit-timestamp":
                millis = gathered([pa.array(b.row_batch.timestamps, pa.int64()) for b in batches])
                columns.append(millis.cast(pa.timestamp("ms", field.type.tz)).cast(field.type))
            else:
                columns.append(own[source.payload].cast(field.type))
        self._write(columns)
        return self.sink.tell()

    def _write(self, columns):
        table = pa.Table.from_arrays(columns, schema=self.schema)
        self.writer.write_table(table, row_group_size=self.max_rows)
        self.tables.append(table)
        self.rows += table.num_rows

    def finish(self):
        self.writer.close()
        self.sink.close()
        size = os.path.getsize(self.tmp)
        os.replace(self.tmp, self.full)
        whole = pa.concat_tables(self.tables) if self.tables else self.schema.empty_table()
        stats = []
        for column in whole.columns:
            _stats(column.combine_chunks(), self.struct_fields, stats)
        return rec(size=size, row_count=self.rows, column_stats=stats)

    def abort(self):
        if not self.sink.closed:
            self.sink.close()
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)


class DataPlane:
    """Handles of batches and files, and the functions the linker binds. wasmtime-py takes a
    `result` as its value or its error record, and as a tagged `Variant` only where both cases
    are records."""

    def __init__(self, storage):
        self.storage = storage
        self.batches = {}
        self.kept = {}
        self.files = {}
        self.next_rep = 1
        # The paths of the files this data plane encoded.
        self.finished = []

    def _rep(self):
        rep = self.next_rep
        self.next_rep += 1
        return rep

    def batch(self, row_batch):
        """A borrowed `batch` handle of `row_batch`, to pass to `batch-writer.write`, and its rep
        (give it back with `drop_batch` once the call returned)."""
        rep = self._rep()
        self.batches[rep] = HostBatch(row_batch)
        return ResourceHost.borrow(rep, BATCH_TYPE), rep

    def drop_batch(self, rep):
        self.batches.pop(rep, None)

    def link(self, instance):
        instance.add_resource("batch", ResourceType.host(BATCH_TYPE), lambda store, rep: None)
        instance.add_func("[method]batch.row-count", lambda store, h: self._batch(store, h).table.num_rows)
        instance.add_func("[method]batch.change-types",
                          lambda store, h: bytes(get(self._batch(store, h).row_batch, "change-types")))
        instance.add_func("[method]batch.offset-range", self._offset_range)
        instance.add_func("[method]batch.rows", lambda store, h: Variant("ok", self._batch(store, h).row_batch))
        instance.add_func("[method]batch.columns", self._columns)
        instance.add_func("[method]batch.keep", self._keep)
        instance.add_resource("kept-batch", ResourceType.host(KEPT_BATCH_TYPE),
                              lambda store, rep: self.kept.pop(rep, None))
        instance.add_func("[method]kept-batch.row-count", lambda store, h: self._kept(store, h).table.num_rows)
        instance.add_func("[method]kept-batch.memory-bytes", lambda store, h: self._kept(store, h).table.nbytes)
        instance.add_resource("parquet-file", ResourceType.host(PARQUET_FILE_TYPE), self._file_dtor)
        instance.add_func("[static]parquet-file.start", self._start)
        instance.add_func("[static]parquet-file.start-picked", self._start)
        instance.add_func("[method]parquet-file.append", self._append)
        instance.add_func("[method]parquet-file.append-picked", self._append_picked)
        instance.add_func("[method]parquet-file.row-count", lambda store, h: self._file(store, h).rows)
        instance.add_func("[method]parquet-file.finish", self._finish)
        instance.add_func("[method]parquet-file.abort", self._abort)

    def _batch(self, store, handle):
        return self.batches[handle.to_host(store).rep]

    def _file(self, store, handle):
        return self.files[handle.to_host(store).rep]

    def _kept(self, store, handle):
        return self.kept[handle.to_host(store).rep]

    def _columns(self, store, handle, positions):
        batch = self._batch(store, handle)
        width = batch.table.num_columns
        if not positions or len(set(positions)) != len(positions) or max(positions) >= width:
            return Variant("err", lake_error("invalid-input", f"batch.columns: {list(positions)} of {width} columns"))
        projected = batch.table.select(list(positions))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, projected.schema) as w:
            w.write_table(projected)
        rows = batch.row_batch
        return Variant("ok", rec(ipc=sink.getvalue().to_pybytes(), change_types=bytes(get(rows, "change-types")),
                                 log_offsets=get(rows, "log-offsets"), timestamps=rows.timestamps))

    def _keep(self, store, handle):
        rep = self._rep()
        self.kept[rep] = self._batch(store, handle)
        return ResourceHost.own(rep, KEPT_BATCH_TYPE)

    def _offset_range(self, store, handle):
        offsets = get(self._batch(store, handle).row_batch, "log-offsets")
        return (min(offsets), max(offsets)) if offsets else None

    def _start(self, store, path, columns, settings):
        try:
            f = ParquetFile(self.storage, path, columns, settings)
        except (ValueError, OSError, pa.ArrowException) as e:
            return lake_error("invalid-input", f"parquet-file.start: {e}")
        rep = self._rep()
        self.files[rep] = f
        return ResourceHost.own(rep, PARQUET_FILE_TYPE)

    def _append(self, store, handle, rows):
        f, batch = self._file(store, handle), self._batch(store, rows)
        try:
            return f.append(batch)
        except (ValueError, OSError, pa.ArrowException) as e:
            return lake_error("invalid-input", f"parquet-file.append: {e}")

    def _append_picked(self, store, handle, batches, picks, own):
        f = self._file(store, handle)
        try:
            return f.append_picked([self._kept(store, b) for b in batches], picks, own)
        except (ValueError, OSError, pa.ArrowException) as e:
            return lake_error("invalid-input", f"parquet-file.append-picked: {e}")

    def _finish(self, store, handle):
        try:
            f = self._file(store, handle)
            encoded = f.finish()
            self.finished.append(f.full)
            return Variant("ok", encoded)
        except (OSError, pa.ArrowException) as e:
            return Variant("err", lake_error("io", f"parquet-file.finish: {e}"))

    def _abort(self, store, handle):
        self._file(store, handle).abort()
        return None

    def _file_dtor(self, store, rep):
        f = self.files.pop(rep, None)
        if f is not None and os.path.exists(f.tmp):
            f.abort()
