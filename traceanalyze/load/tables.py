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

from traceanalyze.load import classify
from traceanalyze.load.chrome import (
    Event,
    FastArgs,
    FastEvent,
    NotStreamable,
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
    """µs → int ns. For a float, the integer k whose k/1000 parses back to the same float (the
    trace wrote at most three decimals): `round(µs × 1000)` alone is off by one for about a
    quarter of timestamps between 2^42 and 2^43 µs, where the float product rounds to a half."""
    if isinstance(value_us, int) and not isinstance(value_us, bool):
        return value_us * 1000
    if isinstance(value_us, float) and value_us == value_us and abs(value_us) < 9e15:
        nearest = round(value_us * 1000)
        if nearest / 1000 == value_us:
            return nearest
        for candidate in (nearest - 1, nearest + 1):
            if candidate / 1000 == value_us:
                return candidate
        return nearest
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


def _text_series(texts: pl.Series | list[str | None]) -> pl.Series:
    return texts if isinstance(texts, pl.Series) else pl.Series(texts, dtype=pl.String)


def decode_strings(texts: pl.Series | list[str | None]) -> pl.Series:
    """JSON string lists (`Input type`, `Concrete Inputs`) → List(String), decoded in Rust."""
    series = _text_series(texts)
    try:
        return series.str.json_decode(STRINGS)
    except pl.exceptions.PolarsError:
        return pl.Series([_strings_from_json(t) for t in series.to_list()], dtype=STRINGS, strict=False)


def decode_shapes(texts: pl.Series | list[str | None]) -> tuple[pl.Series, pl.Series]:
    """JSON shape lists (`Input Dims`, `Input Strides`) → (List(List(Int64)) per input, and
    List(List(List(Int64))) with the shapes of TensorList inputs, null for ops without one).
    Plain values are decoded in Rust; only values holding a TensorList take the slow path."""
    series = _text_series(texts)
    is_nested = series.str.contains("[[[", literal=True).fill_null(False)
    nested = is_nested.arg_true().to_list()
    plain = pl.select(pl.when(is_nested).then(None).otherwise(series)).to_series() if nested else series
    try:
        shapes = plain.str.json_decode(SHAPES)
    except pl.exceptions.PolarsError:
        shapes = pl.Series([_nested_shapes(t)[0] if t else None for t in plain.to_list()], dtype=SHAPES, strict=False)
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


# ----------------------------------------------------------------------------------------------
# What a chunk of events becomes

def _without_rank(schema: pl.Schema) -> pl.Schema:
    return pl.Schema({k: v for k, v in schema.items() if k != "rank"})


_TEXT_COLUMNS = ("input_dims", "input_types", "input_strides", "concrete_inputs")
# cpu_ops before op ids, nesting and decoded shapes: the shape arguments stay JSON text
_CPU_CHUNK_SCHEMA = pl.Schema(
    {
        **{k: v for k, v in CPU_OPS_SCHEMA.items()
           if k not in ("rank", "op_id", "depth", "parent_id", "input_tensor_lists")},
        **{k: pl.String for k in _TEXT_COLUMNS},
    }
)
CHUNK_SCHEMAS: dict[str, pl.Schema] = {
    "gpu": _without_rank(GPU_SCHEMA),
    "runtime": _without_rank(RUNTIME_SCHEMA),
    "cpu_ops": _CPU_CHUNK_SCHEMA,
    "flows": _without_rank(FLOWS_SCHEMA),
    "sync": _without_rank(SYNC_SCHEMA),
    "python": _without_rank(PYTHON_SCHEMA),
}

SKIP_NO_TS_OR_NAME = "event without a valid ts or name"
SKIP_NO_DUR = "event without a valid dur"
SKIP_BAD_DUR = "negative or absurd duration (< 0 or > 1 day)"
SKIP_MALFORMED = "malformed event (fields of the wrong type)"


@dataclass
class ChunkTables:
    """One chunk's events as table frames (schemas `CHUNK_SCHEMAS`), plus what was skipped:
    reason → (count, index of the first such event in the chunk)."""

    frames: dict[str, pl.DataFrame]
    skipped: dict[str, tuple[int, int]]
    events: int
    malformed: int = 0


def decode_chunk(text: bytes, *, include_python: bool = False) -> ChunkTables:
    """The JSON text of a list of events → its tables. Raises `msgspec.DecodeError` if the text is
    not valid JSON (the caller may have cut it at a wrong place)."""
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
            raw_events = msgspec.json.decode(text)
        except msgspec.ValidationError as error:  # a number out of range (1e400)
            raise NotStreamable(str(error)) from None
        events, malformed = events_tolerant(raw_events)
    return general_tables(events, include_python=include_python, malformed=malformed)


_fast_decoder = msgspec.json.Decoder(list[FastEvent])
_event_list_decoder = msgspec.json.Decoder(list[Event])


@dataclass
class TraceTables:
    """Collects the chunks of one trace file, in order, and finishes them into a `Trace`."""

    include_python: bool = False
    frames: dict[str, list[pl.DataFrame]] = field(default_factory=lambda: {name: [] for name in CHUNK_SCHEMAS})
    skipped: dict[str, int] = field(default_factory=dict)  # in order of first occurrence
    events: int = 0
    malformed: int = 0

    def add(self, chunk: ChunkTables) -> None:
        for name, frame in chunk.frames.items():
            if frame.height:
                self.frames[name].append(frame)
        for reason, (count, _) in sorted(chunk.skipped.items(), key=lambda item: item[1][1]):
            self.skipped[reason] = self.skipped.get(reason, 0) + count
        self.events += chunk.events
        self.malformed += chunk.malformed

    def finish(self, document: TraceDocument, *, path: Path, rank: int, rank_source: str) -> Trace:
        def table(name: str) -> pl.DataFrame:
            frames = self.frames[name]
            self.frames[name] = []
            if not frames:
                return pl.DataFrame(schema=CHUNK_SCHEMAS[name])
            return pl.concat(frames, how="vertical", rechunk=True) if len(frames) > 1 else frames[0]

        def ranked(frame: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
            return frame.with_columns(pl.lit(rank, dtype=pl.Int32).alias("rank")).select(schema.names())

        skipped: Counter[str] = Counter()
        if self.malformed:
            skipped[SKIP_MALFORMED] += self.malformed
        for reason, count in self.skipped.items():
            skipped[reason] += count
        gpu_frame = ranked(table("gpu"), GPU_SCHEMA).sort("start_ns", "device", "stream")
        runtime_frame = ranked(table("runtime"), RUNTIME_SCHEMA).sort("start_ns")
        cpu_frame = _with_nesting(_cpu_ops_frame(table("cpu_ops"), rank))
        steps_frame = _steps(cpu_frame)
        devices_frame, has_props = _devices(document.deviceProperties, rank)
        meta = _meta(document, path=path, rank=rank, rank_source=rank_source, has_props=has_props,
                     event_count=self.events)
        skipped_frame = pl.DataFrame(
            {"rank": [rank] * len(skipped), "reason": list(skipped), "count": list(skipped.values())},
            schema=SKIPPED_SCHEMA,
        )
        return Trace(
            gpu=gpu_frame,
            runtime=runtime_frame,
            cpu_ops=cpu_frame,
            steps=steps_frame,
            flows=ranked(table("flows"), FLOWS_SCHEMA),
            sync=ranked(table("sync"), SYNC_SCHEMA).sort("start_ns"),
            devices=devices_frame,
            skipped=skipped_frame,
            meta=(meta,),
            python=ranked(table("python"), PYTHON_SCHEMA).sort("start_ns") if self.include_python else None,
        )


def build_trace(document: TraceDocument, *, path: Path, rank: int, rank_source: str,
                malformed: int, include_python: bool) -> Trace:
    """A whole decoded document (`chrome.decode_document`) → its `Trace`."""
    tables = TraceTables(include_python=include_python)
    tables.add(general_tables(document.traceEvents or [], include_python=include_python, malformed=malformed))
    return tables.finish(document, path=path, rank=rank, rank_source=rank_source)


def _cpu_ops_frame(frame: pl.DataFrame, rank: int) -> pl.DataFrame:
    """The cpu_ops table: op ids in event order, and the shape arguments decoded column-wise."""
    dims, dim_lists = decode_shapes(frame["input_dims"])
    strides, _ = decode_shapes(frame["input_strides"])
    return frame.with_columns(
        pl.lit(rank, dtype=pl.Int32).alias("rank"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("op_id"),
        pl.lit(None, dtype=pl.Int32).alias("depth"),
        pl.lit(None, dtype=pl.Int64).alias("parent_id"),
        dims.alias("input_dims"),
        dim_lists.alias("input_tensor_lists"),
        decode_strings(frame["input_types"]).alias("input_types"),
        strides.alias("input_strides"),
        decode_strings(frame["concrete_inputs"]).alias("concrete_inputs"),
    ).select(CPU_OPS_SCHEMA.names())


# ----------------------------------------------------------------------------------------------
# The general path: one event at a time

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

    tables = {name: _Columns(schema) for name, schema in CHUNK_SCHEMAS.items()}
    gpu, runtime, ops, flows, sync, python = (tables[name] for name in ("gpu", "runtime", "cpu_ops", "flows", "sync", "python"))

    gpu_categories = classify.GPU_CATEGORIES
    runtime_categories = classify.RUNTIME_CATEGORIES
    cpu_categories = classify.CPU_OP_CATEGORIES
    flow_categories = classify.FLOW_CATEGORIES
    max_dur = classify.MAX_DURATION_US

    for index, event in enumerate(events):
        category = event.cat
        if not isinstance(category, str):
            continue
        category = category.lower()
        phase = event.ph
        if phase in ("s", "f", "t"):
            if category in flow_categories:
                _add_flow(flows, event, category)
            continue
        if phase != "X":
            continue
        if category == "python_function" and not include_python:
            continue
        wanted = (
            category in gpu_categories
            or category in runtime_categories
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
        if category in gpu_categories:
            _add_gpu(gpu, event, args, name, classify.gpu_kind(gpu_categories[category], name), start, duration)
        elif category in runtime_categories:
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
    return ChunkTables(frames=frames, skipped=skipped, events=len(events), malformed=malformed)


def _external_id(args: Any) -> int | None:
    if args is None:
        return None
    value = args.external_id if args.external_id is not None else args.external_id_old
    return as_int(value)


def _add_gpu(table: _Columns, event: Event, args: Any, name: str, kind: str, start: int, duration: int) -> None:
    cols = table.columns
    device = as_int(args.device) if args is not None else None
    if device is None:
        device = as_int(event.pid)
    stream = as_int(args.stream) if args is not None else None
    if stream is None:
        stream = _stream_from_tid(event.tid)
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
    device = as_int(args.device) if args is not None else None
    stream = as_int(args.stream) if args is not None else None
    cols["device"].append(device if device is not None else as_int(event.pid))
    cols["stream"].append(stream if stream is not None else _stream_from_tid(event.tid))
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
# The fast path: columns at a time

class _Fallback(Exception):
    """The chunk holds something the fast path does not convert exactly like the general path."""


DROP, GPU, RUNTIME, CPU_OP, SYNC, PYTHON, FLOW = range(7)
_TABLE_OF_CODE = {GPU: "gpu", RUNTIME: "runtime", CPU_OP: "cpu_ops", SYNC: "sync", PYTHON: "python", FLOW: "flows"}


class _Routes(dict):
    """category → the table its events go to, if their phase is right (`X`, or `s`/`f`/`t` for
    flows; see `_PHASES`), computed once per category with the general path's rules."""

    def __init__(self, include_python: bool):
        super().__init__()
        self.include_python = include_python

    def __missing__(self, category: Any) -> int:
        code = DROP
        if isinstance(category, str):
            lowered = category.lower()
            if lowered in classify.FLOW_CATEGORIES:
                code = FLOW
            elif lowered in classify.GPU_CATEGORIES:
                code = GPU
            elif lowered in classify.RUNTIME_CATEGORIES:
                code = RUNTIME
            elif lowered in classify.CPU_OP_CATEGORIES:
                code = CPU_OP
            elif lowered in classify.SYNC_CATEGORIES:
                code = SYNC
            elif lowered in classify.PYTHON_CATEGORIES and self.include_python:
                code = PYTHON
        self[category] = code
        return code


_ROUTES = {False: _Routes(False), True: _Routes(True)}
_PHASES = {FLOW: frozenset({"s", "f", "t"})}  # every other table: "X"
_X = frozenset({"X"})
_NONE = type(None)
_INT64_US_LIMIT = (1 << 63) // 1000  # integer µs whose ns still fit in int64
_EXACT_FLOAT_US = 9_007_199_254_740.0  # below this, k ± 1 (k = µs × 1000) are exact float64s
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _fast_chunk(events: list[FastEvent], include_python: bool) -> ChunkTables:
    routes = _ROUTES[include_python]
    codes = [routes[e.cat] for e in events]
    code_series = pl.Series(codes, dtype=pl.UInt8)
    groups: dict[int, tuple[list[FastEvent], pl.Series]] = {}
    distinct = sorted(set(codes))
    for code in distinct:
        if len(distinct) == 1:
            index, subset = pl.int_range(len(events), dtype=pl.UInt32, eager=True), events
        else:
            index = code_series.eq(code).arg_true()
            subset = _take(events, index.to_list())
        if code == DROP:
            continue
        phases = [e.ph for e in subset]
        wanted = _PHASES.get(code, _X)
        if not set(phases) <= wanted:  # e.g. an instant event ("i") of a table's category
            right = pl.Series([p in wanted for p in phases], dtype=pl.Boolean)
            index = index.filter(right)
            subset = _take(subset, right.arg_true().to_list())
            if not subset:
                continue
        groups[code] = (subset, index)
    frames: dict[str, pl.DataFrame] = {}
    skipped: dict[str, tuple[int, int]] = {}
    for code, (subset, index) in groups.items():
        if code == FLOW:
            frames["flows"] = _flows(subset)
        else:
            frames[_TABLE_OF_CODE[code]] = _timed_table(code, subset, index, skipped)
    for name, schema in CHUNK_SCHEMAS.items():
        if name not in frames:
            frames[name] = pl.DataFrame(schema=schema)
    return ChunkTables(frames=frames, skipped=skipped, events=len(events))


def _take(events: list[FastEvent], index: list[int]) -> list[FastEvent]:
    if len(index) == len(events):
        return events
    if len(index) == 1:
        return [events[index[0]]]
    if not index:
        return []
    return list(itemgetter(*index)(events))


_EMPTY_ARGS = FastArgs()


def _event_args(events: list[FastEvent]) -> list[FastArgs]:
    """Each event's `args` (all defaults when absent)."""
    return [e.args or _EMPTY_ARGS for e in events]


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
    converted = [mapping[value] for value in values]
    return _ints(converted)


def _floats(values: list[Any]) -> pl.Series:
    """Python floats (or None; the fast path's structs decode numbers as floats) → Float64."""
    return pl.Series(values, dtype=pl.Float64)


def _times(values: list[Any]) -> tuple[pl.Series, pl.Series]:
    """µs values → (int64 ns exactly as `to_ns`, the values as written)."""
    kinds = set(map(type, values))
    if kinds <= {int, _NONE}:
        raw = _ints(values)
        low, high = raw.min(), raw.max()
        if low is not None and (low <= -_INT64_US_LIMIT or high >= _INT64_US_LIMIT):
            raise _Fallback
        return raw * 1000, raw
    if not kinds <= {float, _NONE}:
        raise _Fallback  # ints and floats mixed in one table: per event
    raw = pl.Series(values, dtype=pl.Float64)
    largest = raw.abs().max()
    if largest is None:
        return pl.Series([None] * len(values), dtype=pl.Int64), raw
    if largest >= _EXACT_FLOAT_US:
        return _ints([to_ns(v) for v in values]), raw
    # to_ns, vectorised: k = round(µs × 1000), else k − 1 or k + 1, whichever k / 1000 == µs.
    # The divisor is a column: polars divides by a scalar as a product with its reciprocal, which
    # is not the correctly rounded quotient that Python's k / 1000 is.
    us = pl.col("us")
    nearest = (us * 1000).round(0, mode="half_to_even").cast(pl.Int64)

    def same(k: pl.Expr) -> pl.Expr:
        return k.cast(pl.Float64) / pl.col("thousand") == us

    ns = pl.DataFrame({"us": raw, "thousand": pl.Series([1000.0]).extend_constant(1000.0, len(raw) - 1)}).select(
        pl.when(same(nearest)).then(nearest)
        .when(same(nearest - 1)).then(nearest - 1)
        .when(same(nearest + 1)).then(nearest + 1)
        .otherwise(nearest)
    ).to_series()
    return ns, raw


def _strings(values: list[Any]) -> pl.Series:
    return pl.Series(values, dtype=pl.String)


def _raw_texts(raws: list[Any]) -> pl.Series:
    """Raw JSON values (empty: absent) → their text, null when absent: joined with NUL, which
    valid JSON cannot hold, and split in Rust."""
    if not raws:
        return pl.Series([], dtype=pl.String)
    joined = b"\x00".join(raws).decode("utf-8", "replace")
    texts = pl.Series([joined], dtype=pl.String).str.split("\x00").explode()
    return pl.select(pl.when(texts.str.len_bytes() > 0).then(texts)).to_series()


def _lower_map(categories: list[str], table: dict[str, str]) -> pl.Series:
    mapping = {c: table[c.lower()] for c in set(categories)}
    return pl.Series(categories, dtype=pl.String).replace_strict(mapping, return_dtype=pl.String)


def _by_name(names: pl.Series, rule, dtype: pl.DataType) -> pl.Series:
    """A value computed from each distinct name with the general path's rule."""
    distinct = names.unique().drop_nulls().to_list()
    mapping = {name: rule(name) for name in distinct}
    return names.replace_strict(mapping, default=None, return_dtype=dtype)


def _stream_ids(tids: list[Any]) -> pl.Series:
    return _mapped_ints(tids, _stream_from_tid)


def _thread_ids(values: list[Any]) -> pl.Series:
    return _mapped_ints(values, thread_id)


def _timed_table(code: int, events: list[FastEvent], index: pl.Series, skipped: dict[str, tuple[int, int]]) -> pl.DataFrame:
    """An `X`-event table: the general path's skip rules, then the table's own columns."""
    names = _strings([e.name for e in events])
    start, _ = _times([e.ts for e in events])
    duration, written = _times([e.dur for e in events])
    no_start = start.is_null() | names.is_null()
    no_duration = ~no_start & duration.is_null()
    bad_duration = (~no_start & ~no_duration & ((duration < 0) | (written > classify.MAX_DURATION_US))).fill_null(False)
    keep = None
    if no_start.any() or no_duration.any() or bad_duration.any():
        for reason, mask in ((SKIP_NO_TS_OR_NAME, no_start), (SKIP_NO_DUR, no_duration), (SKIP_BAD_DUR, bad_duration)):
            hits = index.filter(mask)
            if hits.len():
                count, first = skipped.get(reason, (0, hits[0]))
                skipped[reason] = (count + hits.len(), min(first, hits[0]))
        keep = ~(no_start | no_duration | bad_duration)
    low, high = start.min(), start.max()
    if high is not None and (high + (duration.max() or 0) > _INT64[1] or low + (duration.min() or 0) < _INT64[0]):
        raise _Fallback
    times = {"start_ns": start, "end_ns": start + duration, "duration_ns": duration}
    if code == GPU:
        frame = _gpu_columns(events, names, times)
    elif code == RUNTIME:
        frame = _runtime_columns(events, names, times)
    elif code == CPU_OP:
        frame = _cpu_op_columns(events, names, times)
    elif code == SYNC:
        frame = _sync_columns(events, names, times)
    else:
        frame = pl.DataFrame({"pid": _thread_ids([e.pid for e in events]), "tid": _thread_ids([e.tid for e in events]),
                              "name": names, **times})
    frame = frame.select(CHUNK_SCHEMAS[_TABLE_OF_CODE[code]].names())
    return frame if keep is None else frame.filter(keep)


def _external_ids(args: list[Any]) -> pl.Series:
    return _ints([a.external_id for a in args]).fill_null(_ints([a.external_id_old for a in args]))


def _gpu_columns(events: list[FastEvent], names: pl.Series, times: dict[str, pl.Series]) -> pl.DataFrame:
    args = _event_args(events)
    category_kind = _lower_map([e.cat for e in events], classify.GPU_CATEGORIES)
    communication = _by_name(names, lambda n: classify.gpu_kind("kernel", n) == "communication", pl.Boolean)
    kind = pl.select(
        pl.when((category_kind == "kernel") & communication.fill_null(False))
        .then(pl.lit("communication"))
        .otherwise(category_kind)
    ).to_series()
    pids = [e.pid for e in events]
    device = _ints([a.device for a in args]).fill_null(_mapped_ints(pids, as_int)).fill_null(0)
    stream = _ints([a.stream for a in args]).fill_null(_stream_ids([e.tid for e in events])).fill_null(0)
    return pl.DataFrame(
        {
            "device": device.cast(pl.Int32, strict=False),
            "stream": stream,
            "kind": kind.cast(GPU_SCHEMA["kind"]),
            "name": names,
            **times,
            "correlation": _ints([a.correlation for a in args]),
            "external_id": _external_ids(args),
            "grid": _int_lists([a.grid for a in args]),
            "block": _int_lists([a.block for a in args]),
            "registers_per_thread": _ints([a.registers_per_thread for a in args]).cast(pl.Int32, strict=False),
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


def _runtime_columns(events: list[FastEvent], names: pl.Series, times: dict[str, pl.Series]) -> pl.DataFrame:
    args = _event_args(events)
    kind = _by_name(names, classify.runtime_kind, pl.String)
    blocking = _by_name(names, lambda n: classify.runtime_blocks_host(n, classify.runtime_kind(n)), pl.Boolean)
    return pl.DataFrame(
        {
            "pid": _thread_ids([e.pid for e in events]),
            "tid": _thread_ids([e.tid for e in events]),
            "name": names,
            "kind": kind.cast(RUNTIME_SCHEMA["kind"]),
            **times,
            "correlation": _ints([a.correlation for a in args]),
            "external_id": _external_ids(args),
            "blocking": blocking,
        }
    )


def _cpu_op_columns(events: list[FastEvent], names: pl.Series, times: dict[str, pl.Series]) -> pl.DataFrame:
    args = _event_args(events)
    return pl.DataFrame(
        {
            "pid": _thread_ids([e.pid for e in events]),
            "tid": _thread_ids([e.tid for e in events]),
            "category": _lower_map([e.cat for e in events], classify.CPU_OP_CATEGORIES).cast(CPU_OPS_SCHEMA["category"]),
            "name": names,
            **times,
            "external_id": _external_ids(args),
            "sequence_number": _ints([a.sequence_number for a in args]),
            "fwd_thread_id": _ints([a.fwd_thread_id for a in args]),
            "input_dims": _raw_texts([a.input_dims for a in args]),
            "input_types": _raw_texts([a.input_type for a in args]),
            "input_strides": _raw_texts([a.input_strides for a in args]),
            "concrete_inputs": _raw_texts([a.concrete_inputs for a in args]),
            "flops": _floats([a.flops for a in args]),
        }
    )


def _sync_columns(events: list[FastEvent], names: pl.Series, times: dict[str, pl.Series]) -> pl.DataFrame:
    args = _event_args(events)
    device = _ints([a.device for a in args]).fill_null(_mapped_ints([e.pid for e in events], as_int))
    return pl.DataFrame(
        {
            "device": device.cast(pl.Int32, strict=False),
            "stream": _ints([a.stream for a in args]).fill_null(_stream_ids([e.tid for e in events])),
            "name": names,
            **times,
            "correlation": _ints([a.correlation for a in args]),
        }
    )


def _flows(events: list[FastEvent]) -> pl.DataFrame:
    ts, _ = _times([e.ts for e in events])
    ids = _mapped_ints([e.id for e in events], as_int)
    frame = pl.DataFrame(
        {
            "id": ids,
            "phase": _strings([e.ph for e in events]),
            "category": _lower_map([e.cat for e in events], {c: c for c in classify.FLOW_CATEGORIES}),
            "pid": _thread_ids([e.pid for e in events]),
            "tid": _thread_ids([e.tid for e in events]),
            "ts_ns": ts,
        }
    )
    if ts.null_count() or ids.null_count():
        frame = frame.filter(ts.is_not_null() & ids.is_not_null())
    return frame


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
    n = ordered.height
    prepared = ordered.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("position"),
        pl.max_horizontal("end_ns", pl.col("start_ns") + 1).alias("threshold"),
        (pl.col("pid").ne_missing(pl.col("pid").shift(1)) | pl.col("tid").ne_missing(pl.col("tid").shift(1)))
        .fill_null(True)
        .alias("new_thread"),
    ).with_columns(
        pl.when("new_thread").then("position").forward_fill().alias("thread_start"),
    )
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
    nesting = pl.DataFrame(
        {
            "op_id": ordered["op_id"],
            "depth": depth.cast(pl.Int32),
            "parent_id": ordered["op_id"].gather(parent_position),
        }
    ).sort("op_id")
    return ops.with_columns(nesting["depth"], nesting["parent_id"])


def _steps(cpu_ops: pl.DataFrame) -> pl.DataFrame:
    steps = (
        cpu_ops.filter(pl.col("name").str.contains(classify.STEP_NAME.pattern))
        .with_columns(step=pl.col("name").str.extract(classify.STEP_NAME.pattern, 1).cast(pl.Int64))
        .select(STEPS_SCHEMA.names())
        .sort("start_ns")
    )
    return steps.cast(STEPS_SCHEMA)  # type: ignore[arg-type]


def _devices(properties: Any, rank: int) -> tuple[pl.DataFrame, bool]:
    rows = []
    if isinstance(properties, list):
        for index, entry in enumerate(properties):
            if not isinstance(entry, dict):
                continue
            device = as_int(entry.get("id"))
            rows.append(
                {
                    "rank": rank,
                    "device": device if device is not None else index,
                    "name": entry.get("name") if isinstance(entry.get("name"), str) else None,
                    "total_memory_bytes": as_int(entry.get("totalGlobalMem")),
                    "num_sms": as_int(entry.get("numSms")),
                    "compute_major": as_int(entry.get("computeMajor")),
                    "compute_minor": as_int(entry.get("computeMinor")),
                    "max_threads_per_block": as_int(entry.get("maxThreadsPerBlock")),
                    "max_shared_memory_per_block": as_int(entry.get("sharedMemPerBlock")),
                    "regs_per_block": as_int(entry.get("regsPerBlock")),
                    "warp_size": as_int(entry.get("warpSize")),
                }
            )
    frame = pl.DataFrame(rows, schema=DEVICES_SCHEMA) if rows else pl.DataFrame(schema=DEVICES_SCHEMA)
    return frame, bool(rows)


def _meta(document: TraceDocument, *, path: Path, rank: int, rank_source: str, has_props: bool,
          event_count: int) -> RankMeta:
    info = document.distributedInfo if isinstance(document.distributedInfo, dict) else {}
    world_size = as_int(info.get("world_size"))
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
        distributed_info={k: v for k, v in info.items() if k in ("rank", "world_size", "backend", "pg_count", "nccl_version")},
    )
