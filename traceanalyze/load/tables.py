"""Typed events → the `Trace`'s polars tables.

A trace is decoded in chunks (`chrome.EventChunks`); `decode_chunk` turns one chunk into a
`ChunkTables` (one frame per table, without the `rank` column), and `TraceTables` concatenates them
and finishes the tables (ranks, op ids, nesting, steps, metadata). Two paths build a chunk:

- the fast path decodes with narrow types (`chrome.FastEvent`, one `*Args` struct per table,
  decoded only for the events that table keeps), routes events to tables with one list
  comprehension, and builds every column with one comprehension plus vectorised polars
  expressions: no per-event branching in Python. `python_function` events and every `args` no
  table reads are dropped before any conversion.
- the general path (`chrome.Event`, per-event Python) takes any chunk the fast path cannot
  vouch for: a value of an unusual type (a string correlation id, a bool, a huge integer, an
  `args` that is not an object), integer and float times mixed in one table, …

Both paths give the same tables for the same events (tests/load/test_streaming.py checks it on
every real trace and on mutated ones).

Times: `ts`/`dur` are microseconds, integers (older traces) or floats with a nanosecond fraction
(PyTorch ≥ 2.3). They become int64 nanoseconds exactly (see `to_ns` and docs/metrics.md).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from traceanalyze.load import classify, times
from traceanalyze.load.chrome import (
    AnyObject,
    CpuOpArgs,
    Event,
    FastEvent,
    GpuArgs,
    NotStreamable,
    RuntimeArgs,
    SyncArgs,
    TraceDocument,
    events_tolerant,
)
from traceanalyze.model import (
    CPU_OPS_SCHEMA,
    DEVICES_SCHEMA,
    FLOWS_SCHEMA,
    GPU_SCHEMA,
    PYTHON_SCHEMA,
    RUNTIME_SCHEMA,
    SKIPPED_SCHEMA,
    STEPS_SCHEMA,
    SYNC_SCHEMA,
    RankMeta,
    Trace,
)
from traceanalyze.native import compiled, int64_array

_DIGITS = re.compile(r"-?\d+")
_STREAM_IN_NAME = re.compile(r"(\d+)")


def as_int(value: Any) -> int | None:
    """An integer from an int, a whole float, a decimal string or a hex string; else None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value == value and abs(value) < 9.2e18 else None
    if isinstance(value, str):
        text = value.strip()
        if _DIGITS.fullmatch(text):
            return int(text)
        if text.lower().startswith("0x"):
            try:
                return int(text, 16)
            except ValueError:
                return None
    return None


def thread_id(value: Any) -> int | None:
    """pid/tid as an integer; a non-numeric name (e.g. "stream 7", "Spans") gets a stable
    negative id so it never collides with a real one."""
    number = as_int(value)
    if number is not None or value is None:
        return number
    return -1 - zlib.crc32(str(value).encode())


def as_float(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def to_ns(value_us: Any) -> int | None:
    """µs → int ns, exactly (`times.float_ns` for a float: from its decimal text where the float
    has lost the nanoseconds)."""
    if isinstance(value_us, int) and not isinstance(value_us, bool):
        # beyond int64 ns (less a day, so that start + duration fits too) it is not a time
        return value_us * 1000 if abs(value_us) < _INT64_US_LIMIT - classify.MAX_DURATION_US else None
    if isinstance(value_us, float):
        return times.float_ns(value_us)
    return None


def int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    return None


SHAPES = pl.List(pl.List(pl.Int64))
STRINGS = pl.List(pl.String)
TENSOR_LISTS = pl.List(pl.List(pl.List(pl.Int64)))


def raw_text(raw: Any) -> str | None:
    """A `msgspec.Raw` argument as JSON text; None when absent."""
    if raw is None or not len(raw):
        return None
    return bytes(raw).decode("utf-8", "replace")


def _nested_shapes(text: str) -> tuple[list[list[int]] | None, list[list[list[int]]] | None]:
    """Slow path for an `Input Dims`/`Input Strides` value holding TensorList inputs (a list of
    shapes in one input's place): returns (per-input shape with `[]` for a TensorList, and
    per-input list of shapes with `[]` for a plain tensor)."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None, None
    if not isinstance(value, list):
        return None, None
    shapes: list[list[int]] = []
    lists: list[list[list[int]]] = []
    for item in value:
        if isinstance(item, list) and item and all(isinstance(v, list) for v in item):
            shapes.append([])
            lists.append([int_list(v) or [] for v in item])
        else:
            shapes.append(int_list(item) or [])
            lists.append([])
    return shapes, lists


def _strings_from_json(text: str | None) -> list[str] | None:
    if text is None:
        return None
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    if not isinstance(value, list):
        return None
    return [v if isinstance(v, str) else ("" if v is None else msgspec.json.encode(v).decode()) for v in value]


def _strings_slowly(series: pl.Series) -> pl.Series:
    return pl.Series([_strings_from_json(t) for t in series.to_list()], dtype=STRINGS, strict=False)


def _shapes_slowly(plain: pl.Series) -> pl.Series:
    return pl.Series([_nested_shapes(t)[0] if t else None for t in plain.to_list()], dtype=SHAPES, strict=False)


def _without_nested(series: pl.Series) -> tuple[pl.Series, list[int]]:
    """The values without the ones holding a TensorList (`[[[`), and where those are."""
    is_nested = series.str.contains("[[[", literal=True).fill_null(False)
    nested = is_nested.arg_true().to_list()
    plain = pl.select(pl.when(is_nested).then(None).otherwise(series)).to_series() if nested else series
    return plain, nested


def _with_nested(series: pl.Series, shapes: pl.Series, nested: list[int]) -> tuple[pl.Series, pl.Series]:
    lists = pl.Series([None] * len(series), dtype=TENSOR_LISTS)
    if nested:
        slow_shapes: list[Any] = [None] * len(series)
        slow_lists: list[Any] = [None] * len(series)
        for i, text in zip(nested, series.gather(nested).to_list()):
            slow_shapes[i], slow_lists[i] = _nested_shapes(text)
        shapes = pl.select(
            pl.when(pl.Series(slow_shapes, dtype=SHAPES).is_not_null())
            .then(pl.Series(slow_shapes, dtype=SHAPES))
            .otherwise(shapes)
        ).to_series()
        lists = pl.Series(slow_lists, dtype=TENSOR_LISTS)
    return shapes, lists


# JSON texts on which the fast (polars) and slow (msgspec, per value) decodes cannot differ: a list
# of lists of JSON integers that fit in int64; a list of plain strings (no escapes)
_WS = r"[ \t\r\n]*"  # JSON's whitespace, no other
_INT = r"-?(?:0|[1-9][0-9]{0,17})"
_INTS = rf"\[{_WS}(?:{_INT}{_WS}(?:,{_WS}{_INT}{_WS})*)?\]"
_PURE_SHAPES = rf"^{_WS}\[{_WS}(?:{_INTS}{_WS}(?:,{_WS}{_INTS}{_WS})*)?\]{_WS}$"
_STRING = r'"[^"\\\x00-\x1f]*"'
_PURE_STRINGS = rf"^{_WS}\[{_WS}(?:{_STRING}{_WS}(?:,{_WS}{_STRING}{_WS})*)?\]{_WS}$"
_ARGUMENTS = (("input_dims", SHAPES, _PURE_SHAPES), ("input_strides", SHAPES, _PURE_SHAPES),
              ("input_types", STRINGS, _PURE_STRINGS), ("concrete_inputs", STRINGS, _PURE_STRINGS))


@dataclass
class ArgumentTexts:
    """How one chunk's shape arguments were decoded. The general path decodes a whole table's
    column at once, slowly (per value) when any value defeats the fast decode; chunks decode their
    own column, so each keeps, per column, whether its fast decode failed, and the texts on which
    the two decodes could differ, for `_cpu_ops_frame` to redo the slow decode if another chunk
    failed."""

    failed: dict[str, bool]
    texts: dict[str, pl.Series | None]
    height: int = 0


def _decode_chunk_arguments(frame: pl.DataFrame) -> tuple[pl.DataFrame, ArgumentTexts]:
    """A cpu_ops chunk with its shape arguments as JSON text → decoded: `Input Dims` and `Input
    Strides` to one shape per input (List(List(Int64)), `[]` for non-tensors) plus the shapes of
    TensorList inputs (`input_tensor_lists`), `Input type` and `Concrete Inputs` to List(String).

    A training step repeats its ops, so each distinct combination of the four texts is decoded
    once (`_decoded_arguments`) and joined back to its rows."""
    keys = list(_TEXT_COLUMNS)
    distinct = frame.select(keys).unique()
    decoded, failed, impure = _decoded_arguments(distinct)
    names = {column: f"_decoded_{column}" for column in (*keys, "input_tensor_lists")}
    lookup = distinct.with_columns(decoded[column].alias(names[column]) for column in names)
    joined = frame.drop("input_tensor_lists", strict=False).join(
        lookup, on=keys, how="left", nulls_equal=True, maintain_order="left"
    )
    kept = {column: frame[column] if impure[column] and not failed[column] else None for column in keys}
    result = joined.drop(keys).rename({name: column for column, name in names.items()})
    return result.select(CHUNK_SCHEMAS["cpu_ops"].names()), ArgumentTexts(failed=failed, texts=kept, height=frame.height)


def _decoded_arguments(frame: pl.DataFrame) -> tuple[dict[str, pl.Series], dict[str, bool], dict[str, bool]]:
    """The four shape texts of `frame` decoded → (column → decoded series, whether the column's fast
    decode failed, whether a value of it could decode differently slowly). Plain values are
    decoded in Rust, the four decodes side by side in one select; values holding a TensorList
    (`[[[`) always, and a whole column when any of its values defeats the Rust decode, take the
    slow path (msgspec, per value)."""
    plain: dict[str, pl.Series] = {}
    nested: dict[str, list[int]] = {}
    for column, dtype, _ in _ARGUMENTS:
        if dtype == SHAPES:
            plain[column], nested[column] = _without_nested(frame[column])
        else:
            plain[column] = frame[column]
    texts = pl.DataFrame(plain)
    failed = {column: False for column, _, _ in _ARGUMENTS}
    try:
        fast = texts.select(pl.col(column).str.json_decode(dtype) for column, dtype, _ in _ARGUMENTS)
        decoded = {column: fast[column] for column in fast.columns}
    except pl.exceptions.PolarsError:  # one of them needs the slow path: each on its own
        decoded = {}
        for column, dtype, _ in _ARGUMENTS:
            try:
                decoded[column] = plain[column].str.json_decode(dtype)
            except pl.exceptions.PolarsError:
                failed[column] = True
                decoded[column] = _slowly(plain[column], dtype)
    impure = texts.select(
        (pl.col(column).is_not_null() & ~pl.col(column).str.contains(pattern)).any()
        for column, _, pattern in _ARGUMENTS
    ).row(0)
    input_dims, input_tensor_lists = _with_nested(frame["input_dims"], decoded["input_dims"], nested["input_dims"])
    input_strides, _ = _with_nested(frame["input_strides"], decoded["input_strides"], nested["input_strides"])
    result = {
        "input_dims": input_dims, "input_tensor_lists": input_tensor_lists, "input_types": decoded["input_types"],
        "input_strides": input_strides, "concrete_inputs": decoded["concrete_inputs"],
    }
    return result, failed, {column: bool(flag) for (column, _, _), flag in zip(_ARGUMENTS, impure)}


def _slowly(texts: pl.Series, dtype: pl.DataType) -> pl.Series:
    return _shapes_slowly(texts) if dtype == SHAPES else _strings_slowly(texts)


def _arguments_slowly(frame: pl.DataFrame, chunks: list[ArgumentTexts]) -> pl.DataFrame:
    """The cpu_ops table with each shape column that failed the fast decode in some chunk decoded
    slowly everywhere, as the general path does for the whole column (only the chunks whose texts
    could decode differently are decoded again)."""
    for column, dtype, _ in _ARGUMENTS:
        if not any(chunk.failed[column] for chunk in chunks):
            continue
        pieces = []
        offset = 0
        for chunk in chunks:
            height = chunk.height
            piece = frame[column].slice(offset, height)
            offset += height
            texts = chunk.texts[column]
            if texts is not None:
                if dtype == SHAPES:
                    plain, nested = _without_nested(texts)
                    piece, _ = _with_nested(texts, _shapes_slowly(plain), nested)
                else:
                    piece = _strings_slowly(texts)
            pieces.append(piece)
        frame = frame.with_columns(pl.concat(pieces).alias(column))
    return frame


# ----------------------------------------------------------------------------------------------
# What a chunk of events becomes

def _without_rank(schema: pl.Schema) -> pl.Schema:
    return pl.Schema({k: v for k, v in schema.items() if k != "rank"})


_TEXT_COLUMNS = ("input_dims", "input_types", "input_strides", "concrete_inputs")
# cpu_ops as the general path builds it: the shape arguments as JSON text, decoded per chunk
_CPU_TEXT_SCHEMA = pl.Schema(
    {
        **{k: v for k, v in CPU_OPS_SCHEMA.items()
           if k not in ("rank", "op_id", "depth", "parent_id", "input_tensor_lists")},
        **{k: pl.String for k in _TEXT_COLUMNS},
    }
)
CHUNK_SCHEMAS: dict[str, pl.Schema] = {
    "gpu": _without_rank(GPU_SCHEMA),
    "runtime": _without_rank(RUNTIME_SCHEMA),
    "cpu_ops": pl.Schema({k: v for k, v in CPU_OPS_SCHEMA.items() if k not in ("rank", "op_id", "depth", "parent_id")}),
    "flows": _without_rank(FLOWS_SCHEMA),
    "sync": _without_rank(SYNC_SCHEMA),
    "python": _without_rank(PYTHON_SCHEMA),
}

SKIP_NO_TS_OR_NAME = "event without a valid ts or name"
SKIP_NO_DUR = "event without a valid dur"
SKIP_BAD_DUR = "negative or absurd duration (< 0 or > 1 day)"
SKIP_MALFORMED = "malformed event (fields of the wrong type)"
SKIP_NO_PHASE = "event without a phase (ph) of a category the tables read"


@dataclass
class ChunkTables:
    """One chunk's events as frames, one per table, with the schemas of `CHUNK_SCHEMAS`, and what
    was skipped: reason → (count, index in the chunk of the first such event)."""

    frames: dict[str, pl.DataFrame]
    events: int
    skipped: dict[str, tuple[int, int]] = field(default_factory=dict)
    malformed: int = 0
    arguments: ArgumentTexts | None = None  # how the cpu_ops shape arguments were decoded


def decode_chunk(text: bytes, *, include_python: bool = False) -> ChunkTables:
    """The JSON text of a list of events → its tables. Raises `msgspec.DecodeError` if the text is
    not valid JSON (the caller may have cut it at a wrong place).

    The compiled columnar scanner (`columnar`) takes every chunk of at least
    `COLUMNAR_MIN_BYTES` it can vouch for; the msgspec fast path takes the rest, and the general
    path what that cannot convert exactly."""
    if len(text) >= COLUMNAR_MIN_BYTES:
        from traceanalyze.load import columnar  # imports this module, and numpy

        scanned = columnar.chunk_tables(text, include_python)
        if scanned is not None:
            return scanned
    return msgspec_chunk(text, include_python=include_python)


# Below this, a chunk decodes with msgspec: the scanner saves less than importing numpy costs,
# and a small trace's report stays instant.
COLUMNAR_MIN_BYTES = 8 << 20


def msgspec_chunk(text: bytes, *, include_python: bool = False) -> ChunkTables:
    """`decode_chunk` without the compiled scanner: the msgspec fast path, else the general path."""
    try:
        events = _fast_decoder.decode(text)
    except msgspec.ValidationError:
        return _general_chunk(text, include_python)
    try:
        return _fast_chunk(events, include_python)
    except _Fallback:
        return _general_chunk(text, include_python)


def _general_chunk(text: bytes, include_python: bool) -> ChunkTables:
    try:
        events = _event_list_decoder.decode(text)
        malformed = 0
    except msgspec.ValidationError:
        try:
            raw_events = _untyped_decoder.decode(text)
        except msgspec.ValidationError as error:  # a number out of range (1e400)
            raise NotStreamable(str(error)) from None
        events, malformed = events_tolerant(raw_events)
    return general_tables(events, include_python=include_python, malformed=malformed)


_fast_decoder = msgspec.json.Decoder(list[FastEvent])
# the general path's decoders keep each float's text (`times.decode_hook`): exact times beyond 2^53 ns
_event_list_decoder = msgspec.json.Decoder(list[Event], float_hook=times.decode_hook)
_untyped_decoder = msgspec.json.Decoder(float_hook=times.decode_hook)


@dataclass
class TraceTables:
    """Collects the chunks of one trace file, in order, and finishes them into a `Trace`."""

    include_python: bool = False
    include_flows: bool = False  # flow events are counted always, kept only when asked (no analysis reads them)
    frames: dict[str, list[pl.DataFrame]] = field(default_factory=lambda: {name: [] for name in CHUNK_SCHEMAS})
    skipped: dict[str, tuple[int, int]] = field(default_factory=dict)  # reason → (count, first event)
    events: int = 0
    malformed: int = 0
    arguments: list[ArgumentTexts] = field(default_factory=list)  # one per cpu_ops frame
    flow_events: int = 0

    def add(self, chunk: ChunkTables) -> None:
        for name, frame in chunk.frames.items():
            if name == "flows":
                self.flow_events += frame.height
                if not self.include_flows:
                    continue
            if frame.height:
                self.frames[name].append(frame)
                if name == "cpu_ops":
                    assert chunk.arguments is not None
                    chunk.arguments.height = frame.height
                    self.arguments.append(chunk.arguments)
        for reason, (count, first) in chunk.skipped.items():
            if count:
                before, earliest = self.skipped.get(reason, (0, first + self.events))
                self.skipped[reason] = (before + count, min(earliest, first + self.events))
        self.events += chunk.events
        self.malformed += chunk.malformed

    def _table(self, name: str) -> pl.DataFrame:
        """The chunks of a table as one contiguous frame, made a column at a time, so that copying
        it never holds a second copy of the whole table."""
        frames, self.frames[name] = self.frames[name], []
        if not frames:
            return pl.DataFrame(schema=CHUNK_SCHEMAS[name])
        if len(frames) == 1:
            return frames[0]
        combined = pl.concat(frames, how="vertical", rechunk=False)
        del frames
        return _column_by_column(combined, lambda column: column.rechunk())

    def finish(self, document: TraceDocument, *, path: Path, rank: int, rank_source: str) -> Trace:
        def ranked(frame: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
            return frame.with_columns(pl.lit(rank, dtype=pl.Int32).alias("rank")).select(schema.names())

        skipped: Counter[str] = Counter()
        if self.malformed:
            skipped[SKIP_MALFORMED] += self.malformed
        for reason, (count, _) in sorted(self.skipped.items(), key=lambda item: item[1][1]):
            skipped[reason] += count
        # one table at a time, each chunk list released once its table is made
        gpu_frame = _sorted(ranked(self._table("gpu"), GPU_SCHEMA), "start_ns", "device", "stream")
        runtime_frame = _sorted(ranked(self._table("runtime"), RUNTIME_SCHEMA), "start_ns")
        cpu_frame = _with_nesting(_cpu_ops_frame(self._table("cpu_ops"), self.arguments, rank))
        steps_frame = _steps(cpu_frame)
        flows_frame = ranked(self._table("flows"), FLOWS_SCHEMA)
        sync_frame = ranked(self._table("sync"), SYNC_SCHEMA).sort("start_ns")
        python_frame = ranked(self._table("python"), PYTHON_SCHEMA).sort("start_ns") if self.include_python else None
        devices_frame, has_props = _devices(document.deviceProperties, rank)
        family = classify.device_family(
            has_device_work=gpu_frame.height > 0, runtime_names=runtime_frame["name"].unique().to_list(),
            device_names=devices_frame["name"].drop_nulls().to_list(), hip_runtime_version=document.hip_runtime_version,
            cuda_runtime_version=document.cuda_runtime_version, cupti_version=document.cupti_version)
        meta = _meta(document, path=path, rank=rank, rank_source=rank_source, has_props=has_props,
                     event_count=self.events, flow_events=self.flow_events, device_family=family)
        skipped_frame = pl.DataFrame(
            {"rank": [rank] * len(skipped), "reason": list(skipped), "count": list(skipped.values())},
            schema=SKIPPED_SCHEMA,
        )
        return Trace(
            gpu=gpu_frame,
            runtime=runtime_frame,
            cpu_ops=cpu_frame,
            steps=steps_frame,
            flows=flows_frame,
            sync=sync_frame,
            devices=devices_frame,
            skipped=skipped_frame,
            meta=(meta,),
            python=python_frame,
        )


def _column_by_column(frame: pl.DataFrame, transform) -> pl.DataFrame:
    """`transform` applied to each column in turn, each old column dropped as soon as its new one
    is made: the memory a column frees is reused by the next, and a table is never held twice."""
    columns = []
    for name in frame.columns:
        columns.append(transform(frame.get_column(name)))
        frame = frame.drop(name)
    return pl.DataFrame(columns)


def _sorted(frame: pl.DataFrame, *by: str) -> pl.DataFrame:
    """`frame.sort(*by)` (stable), made a column at a time."""
    order = frame.select(pl.arg_sort_by(*by, maintain_order=True)).to_series()
    return _column_by_column(frame, lambda column: column.gather(order))


def build_trace(document: TraceDocument, *, path: Path, rank: int, rank_source: str,
                malformed: int, include_python: bool, include_flows: bool = False) -> Trace:
    """A whole decoded document (`chrome.decode_document`) → its `Trace`."""
    tables = TraceTables(include_python=include_python, include_flows=include_flows)
    tables.add(general_tables(document.traceEvents or [], include_python=include_python, malformed=malformed))
    return tables.finish(document, path=path, rank=rank, rank_source=rank_source)


def _cpu_ops_frame(frame: pl.DataFrame, arguments: list[ArgumentTexts], rank: int) -> pl.DataFrame:
    """The cpu_ops table: op ids in event order (nesting comes next)."""
    return _arguments_slowly(frame, arguments).with_columns(
        pl.lit(rank, dtype=pl.Int32).alias("rank"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("op_id"),
        pl.lit(None, dtype=pl.Int32).alias("depth"),
        pl.lit(None, dtype=pl.Int64).alias("parent_id"),
    ).select(CPU_OPS_SCHEMA.names())


# ----------------------------------------------------------------------------------------------
# The general path: one event at a time

class _Memo(dict):
    """`rule(key)`, computed once per distinct key (a category, in the per-event loop)."""

    def __init__(self, rule):
        super().__init__()
        self.rule = rule

    def __missing__(self, key):
        value = self[key] = self.rule(key)
        return value


class _Columns:
    """Column-wise buffers for one table."""

    def __init__(self, schema: pl.Schema):
        self.schema = schema
        self.columns: dict[str, list[Any]] = {name: [] for name in schema}

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.columns, schema=self.schema, strict=False)


def general_tables(events: list[Event], *, include_python: bool, malformed: int = 0) -> ChunkTables:
    """Events → chunk frames, one event at a time (handles any value of any type)."""
    skipped: dict[str, tuple[int, int]] = {}

    def skip(reason: str, index: int) -> None:
        count, first = skipped.get(reason, (0, index))
        skipped[reason] = (count + 1, first)

    tables = {name: _Columns(_CPU_TEXT_SCHEMA if name == "cpu_ops" else schema) for name, schema in CHUNK_SCHEMAS.items()}
    gpu, runtime, ops, flows, sync, python = (tables[name] for name in ("gpu", "runtime", "cpu_ops", "flows", "sync", "python"))

    gpu_categories = _Memo(classify.gpu_category_kind)
    routes = _Memo(lambda category: _route(category, include_python))
    runtime_categories = _Memo(classify.is_runtime_category)
    cpu_categories = classify.CPU_OP_CATEGORIES
    flow_categories = classify.FLOW_CATEGORIES
    max_dur = classify.MAX_DURATION_US

    for index, event in enumerate(events):
        category = event.cat
        if not isinstance(category, str):
            continue
        category = category.lower()
        phase = event.ph
        if phase is None:
            if routes[category] != DROP:
                skip(SKIP_NO_PHASE, index)
            continue
        if phase in ("s", "f", "t"):
            if category in flow_categories:
                _add_flow(flows, event, category)
            continue
        if phase != "X":
            continue
        if category == "python_function" and not include_python:
            continue
        wanted = (
            gpu_categories[category] is not None
            or runtime_categories[category]
            or category in cpu_categories
            or category in classify.SYNC_CATEGORIES
            or category in classify.PYTHON_CATEGORIES
        )
        if not wanted:
            continue
        start = to_ns(event.ts)
        duration = to_ns(event.dur)
        name = event.name if isinstance(event.name, str) else None
        if start is None or name is None:
            skip(SKIP_NO_TS_OR_NAME, index)
            continue
        if duration is None:
            skip(SKIP_NO_DUR, index)
            continue
        if duration < 0 or event.dur > max_dur:
            skip(SKIP_BAD_DUR, index)
            continue
        args = event.args
        if gpu_categories[category] is not None:
            _add_gpu(gpu, event, args, name, classify.gpu_kind(gpu_categories[category], name), start, duration)
        elif runtime_categories[category]:
            _add_runtime(runtime, event, args, name, start, duration)
        elif category in cpu_categories:
            _add_cpu_op(ops, event, args, name, cpu_categories[category], start, duration)
        elif category in classify.SYNC_CATEGORIES:
            _add_sync(sync, event, args, name, start, duration)
        else:
            cols = python.columns
            cols["pid"].append(thread_id(event.pid))
            cols["tid"].append(thread_id(event.tid))
            cols["name"].append(name)
            cols["start_ns"].append(start)
            cols["end_ns"].append(start + duration)
            cols["duration_ns"].append(duration)

    frames = {name: columns.frame() for name, columns in tables.items()}
    frames["cpu_ops"], arguments = _decode_chunk_arguments(frames["cpu_ops"])
    return ChunkTables(frames=frames, skipped=skipped, events=len(events), malformed=malformed, arguments=arguments)


def _external_id(args: Any) -> int | None:
    if args is None:
        return None
    value = args.external_id if args.external_id is not None else args.external_id_old
    return as_int(value)


def _add_gpu(table: _Columns, event: Event, args: Any, name: str, kind: str, start: int, duration: int) -> None:
    cols = table.columns
    # a value its column cannot hold counts as absent (the next source, as the fast path's coalesce)
    device = _fitting(args.device, pl.Int32) if args is not None else None
    if device is None:
        device = _fitting(event.pid, pl.Int32)
    stream = _fitting(args.stream, pl.Int64) if args is not None else None
    if stream is None:
        stream = _fitting(_stream_from_tid(event.tid), pl.Int64)
    cols["device"].append(device if device is not None else 0)
    cols["stream"].append(stream if stream is not None else 0)
    cols["kind"].append(kind)
    cols["name"].append(name)
    cols["start_ns"].append(start)
    cols["end_ns"].append(start + duration)
    cols["duration_ns"].append(duration)
    if args is None:
        for column in ("correlation", "external_id", "grid", "block", "registers_per_thread",
                       "shared_memory_bytes", "blocks_per_sm", "warps_per_sm", "occupancy_pct",
                       "bytes", "graph_id", "graph_node_id", "collective"):
            cols[column].append(None)
        return
    cols["correlation"].append(as_int(args.correlation))
    cols["external_id"].append(_external_id(args))
    cols["grid"].append(int_list(args.grid))
    cols["block"].append(int_list(args.block))
    cols["registers_per_thread"].append(as_int(args.registers_per_thread))
    cols["shared_memory_bytes"].append(as_int(args.shared_memory))
    cols["blocks_per_sm"].append(as_float(args.blocks_per_sm))
    cols["warps_per_sm"].append(as_float(args.warps_per_sm))
    cols["occupancy_pct"].append(as_float(args.occupancy_pct))
    cols["bytes"].append(as_int(args.bytes))
    cols["graph_id"].append(as_int(args.graph_id))
    cols["graph_node_id"].append(as_int(args.graph_node_id))
    cols["collective"].append(args.collective_name)


def _stream_from_tid(tid: Any) -> int | None:
    number = as_int(tid)
    if number is not None:
        return number
    if isinstance(tid, str):
        match = _STREAM_IN_NAME.search(tid)
        if match:
            return int(match.group(1))
    return None


def _add_runtime(table: _Columns, event: Event, args: Any, name: str, start: int, duration: int) -> None:
    cols = table.columns
    kind = classify.runtime_kind(name)
    cols["pid"].append(thread_id(event.pid))
    cols["tid"].append(thread_id(event.tid))
    cols["name"].append(name)
    cols["kind"].append(kind)
    cols["start_ns"].append(start)
    cols["end_ns"].append(start + duration)
    cols["duration_ns"].append(duration)
    cols["correlation"].append(as_int(args.correlation) if args is not None else None)
    cols["external_id"].append(_external_id(args))
    cols["blocking"].append(classify.runtime_blocks_host(name, kind))


def _add_cpu_op(table: _Columns, event: Event, args: Any, name: str, category: str, start: int, duration: int) -> None:
    cols = table.columns
    cols["pid"].append(thread_id(event.pid))
    cols["tid"].append(thread_id(event.tid))
    cols["category"].append(category)
    cols["name"].append(name)
    cols["start_ns"].append(start)
    cols["end_ns"].append(start + duration)
    cols["duration_ns"].append(duration)
    cols["external_id"].append(_external_id(args))
    if args is None:
        for column in ("sequence_number", "fwd_thread_id", "input_dims", "input_types",
                       "input_strides", "concrete_inputs", "flops"):
            cols[column].append(None)
        return
    cols["sequence_number"].append(as_int(args.sequence_number))
    cols["fwd_thread_id"].append(as_int(args.fwd_thread_id))
    cols["input_dims"].append(raw_text(args.input_dims))
    cols["input_types"].append(raw_text(args.input_type))
    cols["input_strides"].append(raw_text(args.input_strides))
    cols["concrete_inputs"].append(raw_text(args.concrete_inputs))
    cols["flops"].append(as_float(args.flops))


def _add_sync(table: _Columns, event: Event, args: Any, name: str, start: int, duration: int) -> None:
    cols = table.columns
    device = _fitting(args.device, pl.Int32) if args is not None else None
    stream = _fitting(args.stream, pl.Int64) if args is not None else None
    cols["device"].append(device if device is not None else _fitting(event.pid, pl.Int32))
    cols["stream"].append(stream if stream is not None else _fitting(_stream_from_tid(event.tid), pl.Int64))
    cols["name"].append(name)
    cols["start_ns"].append(start)
    cols["end_ns"].append(start + duration)
    cols["duration_ns"].append(duration)
    cols["correlation"].append(as_int(args.correlation) if args is not None else None)


def _add_flow(table: _Columns, event: Event, category: str) -> None:
    ts = to_ns(event.ts)
    flow_id = as_int(event.id)
    if ts is None or flow_id is None:
        return
    cols = table.columns
    cols["id"].append(flow_id)
    cols["phase"].append(event.ph)
    cols["category"].append(category)
    cols["pid"].append(thread_id(event.pid))
    cols["tid"].append(thread_id(event.tid))
    cols["ts_ns"].append(ts)


# ----------------------------------------------------------------------------------------------
# The fast path: the columns as decoded (one comprehension and one Series each), then one
# vectorised conversion per table (`_finish_raw`): a few polars queries per table and chunk.

class _Fallback(Exception):
    """The chunk holds something the fast path does not convert exactly like the general path."""


DROP, GPU, RUNTIME, CPU_OP, SYNC, PYTHON, FLOW = range(7)
_TABLE_OF_CODE = {GPU: "gpu", RUNTIME: "runtime", CPU_OP: "cpu_ops", SYNC: "sync", PYTHON: "python", FLOW: "flows"}


def _route(category: Any, include_python: bool) -> int:
    """The table a category's events go to, if their phase is right (`X`, or `s`/`f`/`t` for
    flows; see `_PHASES`): the general path's rules."""
    if not isinstance(category, str):
        return DROP
    lowered = category.lower()
    if lowered in classify.FLOW_CATEGORIES:
        return FLOW
    if classify.gpu_category_kind(lowered) is not None:
        return GPU
    if classify.is_runtime_category(lowered):
        return RUNTIME
    if lowered in classify.CPU_OP_CATEGORIES:
        return CPU_OP
    if lowered in classify.SYNC_CATEGORIES:
        return SYNC
    if lowered in classify.PYTHON_CATEGORIES and include_python:
        return PYTHON
    return DROP


_PHASES = {FLOW: frozenset({"s", "f", "t"})}  # every other table: "X"
_X = frozenset({"X"})
_NONE = type(None)
_INT64_US_LIMIT = (1 << 63) // 1000  # integer µs whose ns still fit in int64
_EXACT_FLOAT_US = times.EXACT_FLOAT_US  # from here on, a float's ns come from its text
_END_LIMIT_US = 9.2e15  # a start and a duration whose sum (in ns) may not fit in int64


def _fast_chunk(events: list[FastEvent], include_python: bool) -> ChunkTables:
    categories = [e.cat for e in events]
    distinct = list(set(categories))
    number = {category: i for i, category in enumerate(distinct)}
    category_ids = pl.Series(list(map(number.__getitem__, categories)), dtype=pl.UInt32)
    codes = pl.Series([_route(c, include_python) for c in distinct], dtype=pl.UInt8).gather(category_ids)
    lowered = pl.Series([c.lower() if isinstance(c, str) else None for c in distinct], dtype=pl.String)
    # group the events by table, in event order: one stable sort of the codes
    order = codes.to_frame("code").with_row_index("index").sort("code", maintain_order=True)["index"]
    counts = codes.value_counts(sort=False).sort("")
    grouped = list(itemgetter(*order.to_list())(events)) if len(events) > 1 else events
    frames: dict[str, pl.DataFrame] = {}
    texts: tuple[pl.Series, ...] = ()
    unread: list[Any] = []  # args no table reads: the general path counts an event whose args are not an object
    no_phase: list[int] = []  # events of a category a table reads, without `ph`
    offset = 0
    for code, count in counts.iter_rows():
        subset = grouped[offset:offset + count]
        index = order.slice(offset, count)
        offset += count
        if code != DROP:
            phases = [e.ph for e in subset]
            wanted = _PHASES.get(code, _X)
            if not set(phases) <= wanted:  # e.g. an instant event ("i") of a table's category
                if None in phases:
                    no_phase.extend(index.filter(pl.Series([p is None for p in phases], dtype=pl.Boolean)).to_list())
                right = pl.Series([p in wanted for p in phases], dtype=pl.Boolean)
                unread.extend(a for a in [e.args for e in _take(subset, (~right).arg_true().to_list())] if a)
                index = index.filter(right)
                subset = _take(subset, right.arg_true().to_list())
        if not subset:
            continue
        if code in (DROP, FLOW, PYTHON):
            unread.extend(a for a in [e.args for e in subset] if a)
        if code == DROP:
            continue
        category = lowered.gather(category_ids.gather(index))
        if code == FLOW:
            frames["flows"] = _raw_flows(subset, category)
        elif code == CPU_OP:
            frames["cpu_ops"], texts = _raw_cpu_ops(subset, index, category)
        else:
            frames[_TABLE_OF_CODE[code]] = _RAW_BUILDERS[code](subset, index, category)
    if unread:
        _decode_args(unread, _objects_decoder)
    finished: dict[str, pl.DataFrame] = {}
    skipped: dict[str, tuple[int, int]] = {}
    arguments = None
    for name, frame in frames.items():
        finished[name], dropped = _finish_raw(name, [frame], [texts] if name == "cpu_ops" else [])
        if name == "cpu_ops":
            finished[name], arguments = _decode_chunk_arguments(finished[name])
        for reason, count, first in dropped:
            before, earliest = skipped.get(reason, (0, first))
            skipped[reason] = (before + count, min(earliest, first))
    if no_phase:
        skipped[SKIP_NO_PHASE] = (len(no_phase), min(no_phase))
    return ChunkTables(frames=finished, events=len(events), skipped=skipped, arguments=arguments)


def _take(events: list[FastEvent], index: list[int]) -> list[FastEvent]:
    """The events at `index` (increasing positions)."""
    if len(index) == len(events):
        return events
    if len(index) == 1:
        return [events[index[0]]]
    if not index:
        return []
    return list(itemgetter(*index)(events))


_objects_decoder = msgspec.json.Decoder(list[AnyObject | None])
_gpu_args_decoder = msgspec.json.Decoder(list[GpuArgs])
_runtime_args_decoder = msgspec.json.Decoder(list[RuntimeArgs])
_sync_args_decoder = msgspec.json.Decoder(list[SyncArgs])
_cpu_args_decoder = msgspec.json.Decoder(list[CpuOpArgs])


def _decode_args(raws: list[Any], decoder: msgspec.json.Decoder) -> list[Any]:
    """A batch of raw `args` objects → structs, in one decode call."""
    try:
        return decoder.decode(b"".join((b"[", b",".join(raws), b"]")))
    except (msgspec.ValidationError, msgspec.DecodeError):
        raise _Fallback from None


def _event_args(events: list[FastEvent], decoder: msgspec.json.Decoder) -> list[Any]:
    """The `args` of each event decoded with the table's struct (`{}` when absent; `null`, or
    anything but an object, is for the general path)."""
    return _decode_args([e.args or b"{}" for e in events], decoder)


def _ints(values: list[Any]) -> pl.Series:
    """Python ints (or None) → Int64; anything else is for the general path."""
    try:
        return pl.Series(values, dtype=pl.Int64)
    except (TypeError, OverflowError, ValueError, pl.exceptions.PolarsError):
        raise _Fallback from None


def _mapped_ints(values: list[Any], convert) -> pl.Series:
    """Ints, or values converted one distinct value at a time (pids/tids such as "stream 7")."""
    try:
        return pl.Series(values, dtype=pl.Int64)
    except (TypeError, OverflowError, ValueError, pl.exceptions.PolarsError):
        pass
    mapping = {value: convert(value) for value in set(values)}
    return _ints([mapping[value] for value in values])


def _floats(values: list[Any]) -> pl.Series:
    """Python floats (or None; the fast path's structs decode numbers as floats) → Float64."""
    return pl.Series(values, dtype=pl.Float64)


def _strings(values: list[Any]) -> pl.Series:
    return pl.Series(values, dtype=pl.String)


def _nulls(n: int, dtype: pl.DataType) -> pl.Series:
    if not n:
        return pl.Series([], dtype=dtype)
    return pl.Series([None], dtype=dtype).new_from_index(0, n)


def _raw_times(values: list[Any], prefix: str) -> tuple[dict[str, pl.Series], float]:
    """µs values as written → `<prefix>_i` (ints), `<prefix>_f` (floats) and `<prefix>_x` (ns of
    the floats too large for the vectorised `to_ns`, computed by `to_ns` itself), and the largest
    magnitude (µs). Finished by `_ns`."""
    n = len(values)
    kinds = set(map(type, values))
    if kinds <= {int, _NONE}:
        ints, floats = _ints(values), _nulls(n, pl.Float64)
    elif kinds <= {float, _NONE}:
        ints, floats = _nulls(n, pl.Int64), pl.Series(values, dtype=pl.Float64)
    else:  # integers and floats in one table (per event, as written)
        ints = _ints([v if type(v) is int else None for v in values])
        floats = pl.Series([v if type(v) is float else None for v in values], dtype=pl.Float64)
    int_max = max(abs(ints.min() or 0), abs(ints.max() or 0))
    if int_max >= _INT64_US_LIMIT:
        raise _Fallback
    float_max = max(abs(floats.min() or 0.0), abs(floats.max() or 0.0))
    if float_max >= _EXACT_FLOAT_US:
        raise _Fallback  # the float has lost nanoseconds that the general path reads from the text
    return {f"{prefix}_i": ints, f"{prefix}_f": floats, f"{prefix}_x": _nulls(n, pl.Int64)}, max(float(int_max), float_max)


def _raw_timed(events: list[FastEvent], index: pl.Series) -> dict[str, pl.Series]:
    """The columns every `X`-event table has: event number, name, ts and dur as written."""
    ts, ts_max = _raw_times([e.ts for e in events], "ts")
    dur, dur_max = _raw_times([e.dur for e in events], "dur")
    if ts_max + dur_max >= _END_LIMIT_US:
        raise _Fallback  # start + duration might not fit in int64 ns
    return {"seq": index.cast(pl.Int64), "name": _strings([e.name for e in events]), **ts, **dur}


def _raw_ids(args: list[Any]) -> dict[str, pl.Series]:
    return {"external_id": _ints([a.external_id for a in args]), "external_id_old": _ints([a.external_id_old for a in args])}


def _raw_gpu(events: list[FastEvent], index: pl.Series, category: pl.Series) -> pl.DataFrame:
    args = _event_args(events, _gpu_args_decoder)
    return pl.DataFrame(
        {
            **_raw_timed(events, index),
            "category": category,
            "device_arg": _ints([a.device for a in args]),
            "pid_int": _mapped_ints([e.pid for e in events], as_int),
            "stream_arg": _ints([a.stream for a in args]),
            "stream_tid": _mapped_ints([e.tid for e in events], _stream_from_tid),
            "correlation": _ints([a.correlation for a in args]),
            **_raw_ids(args),
            "grid": _int_lists([a.grid for a in args]),
            "block": _int_lists([a.block for a in args]),
            "registers_per_thread": _ints([a.registers_per_thread for a in args]),
            "shared_memory_bytes": _ints([a.shared_memory for a in args]),
            "blocks_per_sm": _floats([a.blocks_per_sm for a in args]),
            "warps_per_sm": _floats([a.warps_per_sm for a in args]),
            "occupancy_pct": _floats([a.occupancy_pct for a in args]),
            "bytes": _ints([a.bytes for a in args]),
            "graph_id": _ints([a.graph_id for a in args]),
            "graph_node_id": _ints([a.graph_node_id for a in args]),
            "collective": _strings([a.collective_name for a in args]),
        }
    )


def _int_lists(values: list[Any]) -> pl.Series:
    """Lists of ints (or None) → List(Int64). Kernel grids and blocks are 3 long: built from one
    flat list (polars builds a list column from Python lists one list at a time, slowly)."""
    present = [v for v in values if v is not None]
    if present and set(map(len, present)) == {3}:
        flat = list(chain.from_iterable(v if v is not None else _ZEROS for v in values))
        try:
            rows = _ints(flat).reshape((-1, 3)).cast(pl.List(pl.Int64))
        except pl.exceptions.PolarsError:
            raise _Fallback from None
        if len(present) == len(values):
            return rows
        missing = pl.Series([v is None for v in values], dtype=pl.Boolean)
        return pl.select(pl.when(missing).then(None).otherwise(rows)).to_series()
    try:
        return pl.Series(values, dtype=pl.List(pl.Int64))
    except (TypeError, OverflowError, ValueError, pl.exceptions.PolarsError):
        raise _Fallback from None


_ZEROS = (0, 0, 0)


def _raw_runtime(events: list[FastEvent], index: pl.Series, category: pl.Series) -> pl.DataFrame:
    args = _event_args(events, _runtime_args_decoder)
    return pl.DataFrame(
        {
            **_raw_timed(events, index),
            "pid": _mapped_ints([e.pid for e in events], thread_id),
            "tid": _mapped_ints([e.tid for e in events], thread_id),
            "correlation": _ints([a.correlation for a in args]),
            **_raw_ids(args),
        }
    )


def _raw_cpu_ops(events: list[FastEvent], index: pl.Series, category: pl.Series) -> tuple[pl.DataFrame, tuple[pl.Series, ...]]:
    args = _event_args(events, _cpu_args_decoder)
    frame = pl.DataFrame(
        {
            **_raw_timed(events, index),
            "category": category,
            "pid": _mapped_ints([e.pid for e in events], thread_id),
            "tid": _mapped_ints([e.tid for e in events], thread_id),
            **_raw_ids(args),
            "sequence_number": _ints([a.sequence_number for a in args]),
            "fwd_thread_id": _ints([a.fwd_thread_id for a in args]),
            "flops": _floats([a.flops for a in args]),
        }
    )
    texts = (
        _joined_text([a.input_dims for a in args]),
        _joined_text([a.input_type for a in args]),
        _joined_text([a.input_strides for a in args]),
        _joined_text([a.concrete_inputs for a in args]),
    )
    return frame, texts


def _joined_text(raws: list[Any]) -> pl.Series:
    """Raw JSON values (empty: absent) joined with NUL, which valid JSON cannot hold: one string,
    split back into one value per row (null when absent) by `_finish_raw`."""
    return pl.Series([b"\x00".join(raws).decode("utf-8", "replace")], dtype=pl.String)


def _raw_sync(events: list[FastEvent], index: pl.Series, category: pl.Series) -> pl.DataFrame:
    args = _event_args(events, _sync_args_decoder)
    return pl.DataFrame(
        {
            **_raw_timed(events, index),
            "device_arg": _ints([a.device for a in args]),
            "pid_int": _mapped_ints([e.pid for e in events], as_int),
            "stream_arg": _ints([a.stream for a in args]),
            "stream_tid": _mapped_ints([e.tid for e in events], _stream_from_tid),
            "correlation": _ints([a.correlation for a in args]),
        }
    )


def _raw_python(events: list[FastEvent], index: pl.Series, category: pl.Series) -> pl.DataFrame:
    return pl.DataFrame(
        {
            **_raw_timed(events, index),
            "pid": _mapped_ints([e.pid for e in events], thread_id),
            "tid": _mapped_ints([e.tid for e in events], thread_id),
        }
    )


_RAW_BUILDERS = {GPU: _raw_gpu, RUNTIME: _raw_runtime, SYNC: _raw_sync, PYTHON: _raw_python}


def _raw_flows(events: list[FastEvent], category: pl.Series) -> pl.DataFrame:
    ts, _ = _raw_times([e.ts for e in events], "ts")
    return pl.DataFrame(
        {
            "id": _mapped_ints([e.id for e in events], as_int),
            "phase": _strings([e.ph for e in events]),
            "category": category,
            "pid": _mapped_ints([e.pid for e in events], thread_id),
            "tid": _mapped_ints([e.tid for e in events], thread_id),
            **ts,
        }
    )


def _ns(prefix: str) -> pl.Expr:
    """`to_ns` of the times `_raw_times` kept, vectorised: integers × 1000; for a float, the k
    among round(µs × 1000) and its neighbours for which k / 1000 == µs (exactly `to_ns`'s order
    and rounding). The divisor is a column: polars divides by a scalar as a product with its
    reciprocal, which is not the correctly rounded quotient that Python's k / 1000 is."""
    ints, floats, exact = pl.col(f"{prefix}_i"), pl.col(f"{prefix}_f"), pl.col(f"{prefix}_x")
    nearest = (floats * 1000).round(0, mode="half_to_even").cast(pl.Int64, strict=False)
    thousand = floats * 0 + 1000.0

    def same(k: pl.Expr) -> pl.Expr:
        return k.cast(pl.Float64) / thousand == floats

    from_float = (
        pl.when(floats.abs() >= _EXACT_FLOAT_US).then(None)
        .when(same(nearest)).then(nearest)
        .when(same(nearest - 1)).then(nearest - 1)
        .when(same(nearest + 1)).then(nearest + 1)
        .otherwise(nearest)
    )
    return pl.coalesce(exact, ints * 1000, from_float)


_SKIP_REASONS = {1: SKIP_NO_TS_OR_NAME, 2: SKIP_NO_DUR, 3: SKIP_BAD_DUR}


def _finish_raw(name: str, frames: list[pl.DataFrame], texts: list[tuple[pl.Series, ...]]) -> tuple[pl.DataFrame, list[tuple[str, int, int]]]:
    """A table's raw columns (of one or more chunks) → its frame in the chunk schema, and what
    was skipped: (reason, count, first event)."""
    raw = pl.concat(frames, how="vertical", rechunk=True) if len(frames) > 1 else frames[0]
    schema = CHUNK_SCHEMAS[name]
    if name == "flows":
        flows = raw.with_columns(_ns("ts").alias("ts_ns"))
        return flows.filter(pl.col("ts_ns").is_not_null() & pl.col("id").is_not_null()).select(schema.names()), []
    start, duration = pl.col("start_ns"), pl.col("duration_ns")
    written = (pl.col("dur_i") > classify.MAX_DURATION_US).fill_null(False) | (
        pl.col("dur_f") > classify.MAX_DURATION_US
    ).fill_null(False)
    frame = raw.with_columns(_ns("ts").alias("start_ns"), _ns("dur").alias("duration_ns"))
    frame = frame.with_columns(
        pl.when(start.is_null() | pl.col("name").is_null()).then(1)
        .when(duration.is_null()).then(2)
        .when((duration < 0) | written).then(3)
        .otherwise(0)
        .cast(pl.UInt8)
        .alias("_skip")
    )
    skipped: list[tuple[str, int, int]] = []
    if (frame["_skip"] > 0).any():
        counts = frame.filter(pl.col("_skip") > 0).group_by("_skip").agg(pl.len(), pl.col("seq").min())
        skipped = [(_SKIP_REASONS[code], count, first) for code, count, first in counts.iter_rows()]
    if name == "cpu_ops":
        frame = frame.with_columns(
            _split_texts([t[k] for t in texts]).alias(column) for k, column in enumerate(_TEXT_COLUMNS)
        )
    if skipped:
        frame = frame.filter(pl.col("_skip") == 0)
    if name == "cpu_ops":
        schema = _CPU_TEXT_SCHEMA
    return frame.select(_final_columns(name, frame)).select(schema.names()), skipped


def _split_texts(joined: list[pl.Series]) -> pl.Series:
    texts = pl.concat(joined).str.split("\x00").explode()
    return pl.select(pl.when(texts.str.len_bytes() > 0).then(texts)).to_series()


def _final_columns(name: str, frame: pl.DataFrame) -> list[pl.Expr]:
    """The chunk-schema columns of a table, from its raw columns (and `start_ns`/`duration_ns`)."""
    times = [pl.col("start_ns"), (pl.col("start_ns") + pl.col("duration_ns")).alias("end_ns"), pl.col("duration_ns")]
    external_id = pl.coalesce("external_id", "external_id_old").alias("external_id")
    if name == "gpu":
        communication = _names_where(frame["name"], lambda n: classify.gpu_kind("kernel", n) == "communication")
        kinds = {c: classify.gpu_category_kind(c) for c in frame["category"].unique().drop_nulls().to_list()}
        return [
            pl.coalesce(_int32("device_arg"), _int32("pid_int"), 0).alias("device"),
            pl.coalesce("stream_arg", "stream_tid", 0).alias("stream"),
            pl.when((pl.col("category").replace_strict(kinds) == "kernel") & pl.col("name").is_in(communication))
            .then(pl.lit("communication"))
            .otherwise(pl.col("category").replace_strict(kinds))
            .cast(GPU_SCHEMA["kind"])
            .alias("kind"),
            "name", *times, "correlation", external_id, "grid", "block",
            pl.col("registers_per_thread").cast(pl.Int32, strict=False),
            "shared_memory_bytes", "blocks_per_sm", "warps_per_sm", "occupancy_pct", "bytes", "graph_id",
            "graph_node_id", "collective",
        ]
    if name == "runtime":
        return [
            "pid", "tid", "name",
            _by_name(frame["name"], classify.runtime_kind, pl.String).cast(RUNTIME_SCHEMA["kind"]).alias("kind"),
            *times, "correlation", external_id,
            _by_name(frame["name"], lambda n: classify.runtime_blocks_host(n, classify.runtime_kind(n)), pl.Boolean).alias("blocking"),
        ]
    if name == "cpu_ops":
        return [
            "pid", "tid",
            pl.col("category").replace_strict(classify.CPU_OP_CATEGORIES).cast(CPU_OPS_SCHEMA["category"]).alias("category"),
            "name", *times, external_id, "sequence_number", "fwd_thread_id", *_TEXT_COLUMNS, "flops",
        ]
    if name == "sync":
        return [
            pl.coalesce(_int32("device_arg"), _int32("pid_int")).alias("device"),
            pl.coalesce("stream_arg", "stream_tid").alias("stream"),
            "name", *times, "correlation",
        ]
    return ["pid", "tid", "name", *times]  # python


def _int32(column: str) -> pl.Expr:
    """An Int64 column as Int32, null where it does not fit (then the next source is used)."""
    return pl.col(column).cast(pl.Int32, strict=False)


def _names_where(names: pl.Series, rule) -> list[str]:
    return [name for name in names.unique().drop_nulls().to_list() if rule(name)]


def _by_name(names: pl.Series, rule, dtype: pl.DataType) -> pl.Expr:
    """A value computed from each distinct name with the general path's rule."""
    mapping = {name: rule(name) for name in names.unique().drop_nulls().to_list()}
    return pl.col("name").replace_strict(mapping, default=None, return_dtype=dtype)


# ----------------------------------------------------------------------------------------------
# Finishing

def _with_nesting(ops: pl.DataFrame) -> pl.DataFrame:
    """Depth and parent of each op on its thread: the innermost earlier op that encloses it.
    Partially overlapping (non-nested) events are not taken as parents.

    In (pid, tid, start, −end) order, the parent of op i is the nearest earlier op j of its
    thread with end_j ≥ max(end_i, start_i + 1), and its depth is its parent's plus one: what a
    stack of open ops gives (pop the ops that ended or only partly overlap, push op i), computed
    without a Python loop: a binary search over a sparse table of running maxima of `end` finds
    j, and pointer jumping up the parent chains counts the depth.
    """
    if ops.is_empty():
        return ops
    ordered = ops.select("op_id", "pid", "tid", "start_ns", "end_ns").sort(
        ["pid", "tid", "start_ns", "end_ns"], descending=[False, False, False, True]
    )
    _native = compiled()
    if _native is None or ordered.height < NATIVE_NESTING_MIN_OPS:
        parent_position, depth = _nesting_vectorised(ordered)
    else:
        parent_position, depth = _nesting_native(_native, ordered)
    nesting = pl.DataFrame(
        {
            "op_id": ordered["op_id"],
            "depth": depth.cast(pl.Int32),
            "parent_id": ordered["op_id"].gather(parent_position),
        }
    ).sort("op_id")
    return ops.with_columns(nesting["depth"], nesting["parent_id"])


NATIVE_NESTING_MIN_OPS = 100_000  # fewer ops nest as fast in polars, without importing numpy


def _thread_starts(ordered: pl.DataFrame) -> pl.DataFrame:
    return ordered.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("position"),
        pl.max_horizontal("end_ns", pl.col("start_ns") + 1).alias("threshold"),
        (pl.col("pid").ne_missing(pl.col("pid").shift(1)) | pl.col("tid").ne_missing(pl.col("tid").shift(1)))
        .fill_null(True)
        .alias("new_thread"),
    ).with_columns(
        pl.when("new_thread").then("position").forward_fill().alias("thread_start"),
    )


def _nesting_native(native, ordered: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
    """The stack walk itself, in C (`_native.nest`): one pass."""
    import numpy as np

    thread_start = _thread_starts(ordered)["thread_start"]
    parents, depths = native.nest(*map(int64_array, (thread_start, ordered["start_ns"], ordered["end_ns"])))
    parent = pl.Series(np.frombuffer(parents, dtype=np.int64))
    return pl.select(pl.when(parent >= 0).then(parent)).to_series(), pl.Series(np.frombuffer(depths, dtype=np.int32))


def _nesting_vectorised(ordered: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
    """The stack walk without the compiled helper: a binary search over a sparse table of running
    maxima of `end` finds each op's parent, and pointer jumping counts the depth."""
    n = ordered.height
    prepared = _thread_starts(ordered)
    position = prepared["position"]
    threshold = prepared["threshold"]
    thread_start = prepared["thread_start"]
    longest = int((position - thread_start).max()) + 1
    # maxima[k][i] = max(end[i − 2^k + 1 … i])
    maxima = [ordered["end_ns"]]
    while (1 << len(maxima)) <= longest:
        step = 1 << (len(maxima) - 1)
        previous = maxima[-1]
        maxima.append(pl.select(pl.max_horizontal(previous, previous.shift(step))).to_series())
    # the smallest p such that every op in [p, i) of the thread ends before i's threshold
    bound = position
    for k in range(len(maxima) - 1, -1, -1):
        candidate = bound - (1 << k)
        block_max = maxima[k].gather((bound - 1).clip(lower_bound=0))
        jump = (candidate >= thread_start) & (block_max < threshold)
        bound = pl.select(pl.when(jump).then(candidate).otherwise(bound)).to_series()
    parent_position = pl.select(pl.when(bound - 1 >= thread_start).then(bound - 1)).to_series()
    # depth: pointer jumping (each round doubles how far up the chain `up` points)
    up = parent_position
    depth = up.is_not_null().cast(pl.Int64)
    while up.null_count() < n:
        depth = depth + depth.gather(up).fill_null(0)
        up = up.gather(up)
    return parent_position, depth


def _steps(cpu_ops: pl.DataFrame) -> pl.DataFrame:
    steps = (
        cpu_ops.filter(pl.col("name").str.contains(classify.STEP_NAME.pattern))
        .with_columns(step=pl.col("name").str.extract(classify.STEP_NAME.pattern, 1).cast(pl.Int64, strict=False))
        .filter(pl.col("step").is_not_null())  # ProfilerStep#99999999999999999999999 is no step
        .select(STEPS_SCHEMA.names())
        .sort("start_ns")
    )
    return steps.cast(STEPS_SCHEMA)  # type: ignore[arg-type]


def _fitting(value: Any, dtype: pl.DataType) -> int | None:
    """`as_int(value)` when the column's integer type holds it, else None (a hand-made 1e30)."""
    number = as_int(value)
    bits = 32 if dtype == pl.Int32 else 64
    return number if number is not None and -(1 << (bits - 1)) <= number < 1 << (bits - 1) else None


_DEVICE_KEYS = {"total_memory_bytes": "totalGlobalMem", "num_sms": "numSms", "compute_major": "computeMajor",
                "compute_minor": "computeMinor", "max_threads_per_block": "maxThreadsPerBlock",
                "max_shared_memory_per_block": "sharedMemPerBlock", "regs_per_block": "regsPerBlock",
                "warp_size": "warpSize"}


def _devices(properties: Any, rank: int) -> tuple[pl.DataFrame, bool]:
    rows = []
    if isinstance(properties, list):
        for index, entry in enumerate(properties):
            if not isinstance(entry, dict):
                continue
            device = _fitting(entry.get("id"), pl.Int32)
            rows.append(
                {
                    "rank": rank,
                    "device": device if device is not None else index,
                    "name": entry.get("name") if isinstance(entry.get("name"), str) else None,
                    **{column: _fitting(entry.get(key), DEVICES_SCHEMA[column]) for column, key in _DEVICE_KEYS.items()},
                }
            )
    frame = pl.DataFrame(rows, schema=DEVICES_SCHEMA) if rows else pl.DataFrame(schema=DEVICES_SCHEMA)
    return frame, bool(rows)


def _meta(document: TraceDocument, *, path: Path, rank: int, rank_source: str, has_props: bool,
          event_count: int, flow_events: int, device_family: str) -> RankMeta:
    info = document.distributedInfo if isinstance(document.distributedInfo, dict) else {}
    world_size = _fitting(info.get("world_size"), pl.Int32)
    backend = info.get("backend") if isinstance(info.get("backend"), str) else None
    return RankMeta(
        rank=rank,
        source=path,
        rank_source=rank_source,
        world_size=world_size,
        backend=backend,
        schema_version=document.schemaVersion,
        cuda_runtime_version=document.cuda_runtime_version,
        cuda_driver_version=document.cuda_driver_version,
        hip_runtime_version=document.hip_runtime_version,
        cupti_version=document.cupti_version,
        trace_name=document.traceName if isinstance(document.traceName, str) else None,
        record_shapes=document.record_shapes,
        with_stack=document.with_stack,
        profile_memory=document.profile_memory,
        has_device_properties=has_props,
        event_count=event_count,
        flow_events=flow_events,
        device_family=device_family,
        distributed_info={k: v for k, v in info.items() if k in ("rank", "world_size", "backend", "pg_count", "nccl_version")},
    )
