"""The general decode path: one event at a time, any value of any type (`events.Event`). It
takes every chunk the fast paths cannot vouch for, and defines what they must give."""

from __future__ import annotations

from typing import Any

import msgspec
import polars as pl

from traceanalyze.fields import FLOAT, INT, INTS3, STRING, ArgField, plain_fields, text_fields
from traceanalyze.load import classify, times
from traceanalyze.load.chrome import NotStreamable, events_tolerant
from traceanalyze.load.events import Event
from traceanalyze.load.chunk import (
    CHUNK_SCHEMAS,
    CPU_TEXT_SCHEMA,
    DROP,
    SKIP_BAD_DUR,
    SKIP_NO_DUR,
    SKIP_NO_PHASE,
    SKIP_NO_TS_OR_NAME,
    ChunkTables,
    route,
)
from traceanalyze.load.convert import as_float, as_int, fitting, int_list, stream_from_tid, thread_id, to_ns
from traceanalyze.load.shapes import decode_chunk_arguments, raw_text


def general_chunk(text: bytes, include_python: bool) -> ChunkTables:
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



# the general path's decoders keep each float's text (`times.decode_hook`): exact times beyond 2^53 ns
_event_list_decoder = msgspec.json.Decoder(list[Event], float_hook=times.decode_hook)
_untyped_decoder = msgspec.json.Decoder(float_hook=times.decode_hook)


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
    """Events → chunk frames, one event at a time (handles any value of any type).

    Long: one branch per event kind (CPU op, GPU op, runtime call, memory, counters), each
    appending to its own columns; the fallback decoder is kept as one readable loop."""
    skipped: dict[str, tuple[int, int]] = {}

    def skip(reason: str, index: int) -> None:
        count, first = skipped.get(reason, (0, index))
        skipped[reason] = (count + 1, first)

    tables = {
        name: _Columns(CPU_TEXT_SCHEMA if name == "cpu_ops" else schema) for name, schema in CHUNK_SCHEMAS.items()
    }
    gpu, runtime, ops, flows, sync, python = (
        tables[name] for name in ("gpu", "runtime", "cpu_ops", "flows", "sync", "python")
    )

    gpu_categories = _Memo(classify.gpu_category_kind)
    routes = _Memo(lambda category: route(category, include_python))
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
    frames["cpu_ops"], arguments = decode_chunk_arguments(frames["cpu_ops"])
    return ChunkTables(frames=frames, skipped=skipped, events=len(events), malformed=malformed, arguments=arguments)


def _external_id(args: Any) -> int | None:
    if args is None:
        return None
    value = args.external_id if args.external_id is not None else args.external_id_old
    return as_int(value)


def _add_gpu(table: _Columns, event: Event, args: Any, name: str, kind: str, start: int, duration: int) -> None:
    cols = table.columns
    # a value its column cannot hold counts as absent (the next source, as the fast path's coalesce)
    device = fitting(args.device, pl.Int32) if args is not None else None
    if device is None:
        device = fitting(event.pid, pl.Int32)
    stream = fitting(args.stream, pl.Int64) if args is not None else None
    if stream is None:
        stream = fitting(stream_from_tid(event.tid), pl.Int64)
    cols["device"].append(device if device is not None else 0)
    cols["stream"].append(stream if stream is not None else 0)
    cols["kind"].append(kind)
    cols["name"].append(name)
    cols["start_ns"].append(start)
    cols["end_ns"].append(start + duration)
    cols["duration_ns"].append(duration)
    cols["external_id"].append(_external_id(args))
    _add_args(cols, _PLAIN["gpu"], args)


def _add_args(cols: dict[str, list[Any]], fields: tuple[ArgField, ...], args: Any) -> None:
    """The columns a table takes from its `args` fields as they are, each by its kind's rule."""
    for f in fields:
        cols[f.column].append(None if args is None else _CONVERT[f.kind](getattr(args, f.attribute)))


_PLAIN = {table: plain_fields(table) for table in ("gpu", "runtime", "cpu_ops", "sync")}
_CONVERT = {INT: as_int, FLOAT: as_float, STRING: lambda value: value, INTS3: int_list}



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
    cols["external_id"].append(_external_id(args))
    _add_args(cols, _PLAIN["runtime"], args)
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
    _add_args(cols, _PLAIN["cpu_ops"], args)
    for f in _TEXTS:  # shape arguments: their JSON text, decoded column-wise (`shapes`)
        cols[f.column].append(None if args is None else raw_text(getattr(args, f.attribute)))


_TEXTS = text_fields()


def _add_sync(table: _Columns, event: Event, args: Any, name: str, start: int, duration: int) -> None:
    cols = table.columns
    device = fitting(args.device, pl.Int32) if args is not None else None
    stream = fitting(args.stream, pl.Int64) if args is not None else None
    cols["device"].append(device if device is not None else fitting(event.pid, pl.Int32))
    cols["stream"].append(stream if stream is not None else fitting(stream_from_tid(event.tid), pl.Int64))
    cols["name"].append(name)
    cols["start_ns"].append(start)
    cols["end_ns"].append(start + duration)
    cols["duration_ns"].append(duration)
    _add_args(cols, _PLAIN["sync"], args)


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


