"""The msgspec fast path: events decoded with narrow types (`events.FastEvent`, one `*Args`
struct per table, decoded only for the events that table keeps), routed to tables with one list
comprehension, each raw column built with one comprehension, then finished by `raw.finish_chunk`
(vectorised polars): no per-event branching in Python. `python_function` events and every `args`
no table reads are dropped before any conversion. A chunk it cannot convert exactly like the
general path (`Fallback`) goes to the general path."""

from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import Any

import msgspec
import polars as pl

from traceanalyze.fields import FLOAT, INT, INTS3, STRING, raw_fields, text_fields
from traceanalyze.load.events import AnyObject, CpuOpArgs, FastEvent, GpuArgs, RuntimeArgs, SyncArgs
from traceanalyze.load.chunk import (
    CPU_OP,
    DROP,
    FLOW,
    GPU,
    PHASES,
    PYTHON,
    RUNTIME,
    SYNC,
    TABLE_OF_CODE,
    X,
    ChunkTables,
    route,
)
from traceanalyze.load.convert import END_LIMIT_US, EXACT_FLOAT_US, INT64_US_LIMIT, as_int, stream_from_tid, thread_id
from traceanalyze.load.general import general_chunk
from traceanalyze.load.raw import finish_chunk

class Fallback(Exception):
    """The chunk holds something the fast path does not convert exactly like the general path."""



def msgspec_chunk(text: bytes, *, include_python: bool = False) -> ChunkTables:
    """`decode_chunk` without the compiled scanner: the msgspec fast path, else the general path."""
    try:
        events = _fast_decoder.decode(text)
    except msgspec.ValidationError:
        return general_chunk(text, include_python)
    try:
        return fast_chunk(events, include_python)
    except Fallback:
        return general_chunk(text, include_python)



_fast_decoder = msgspec.json.Decoder(list[FastEvent])


_NONE = type(None)


def fast_chunk(events: list[FastEvent], include_python: bool) -> ChunkTables:
    categories = [e.cat for e in events]
    distinct = list(set(categories))
    number = {category: i for i, category in enumerate(distinct)}
    category_ids = pl.Series(list(map(number.__getitem__, categories)), dtype=pl.UInt32)
    codes = pl.Series([route(c, include_python) for c in distinct], dtype=pl.UInt8).gather(category_ids)
    lowered_names = [c.lower() if isinstance(c, str) else None for c in distinct]
    lowered = pl.Series(lowered_names, dtype=pl.String)
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
            wanted = PHASES.get(code, X)
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
        if len(subset) <= CATEGORIES_IN_PYTHON_MAX_EVENTS:  # a small chunk's few: no query
            category = pl.Series([lowered_names[number[e.cat]] for e in subset], dtype=pl.String)
        else:
            category = lowered.gather(category_ids.gather(index))
        if code == FLOW:
            frames["flows"] = _raw_flows(subset, category)
        elif code == CPU_OP:
            frames["cpu_ops"], texts = _raw_cpu_ops(subset, index, category)
        else:
            frames[TABLE_OF_CODE[code]] = _RAW_BUILDERS[code](subset, index, category)
    if unread:
        _decode_args(unread, _objects_decoder)
    return finish_chunk(frames, texts, len(events), (len(no_phase), min(no_phase)) if no_phase else None)


CATEGORIES_IN_PYTHON_MAX_EVENTS = 4096


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
        raise Fallback from None


def _event_args(events: list[FastEvent], decoder: msgspec.json.Decoder) -> list[Any]:
    """The `args` of each event decoded with the table's struct (`{}` when absent; `null`, or
    anything but an object, is for the general path)."""
    return _decode_args([e.args or b"{}" for e in events], decoder)


def _ints(values: list[Any]) -> pl.Series:
    """Python ints (or None) → Int64; anything else is for the general path."""
    try:
        return pl.Series(values, dtype=pl.Int64)
    except (TypeError, OverflowError, ValueError, pl.exceptions.PolarsError):
        raise Fallback from None


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


def raw_times(values: list[Any], prefix: str) -> tuple[dict[str, pl.Series], float]:
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
    if int_max >= INT64_US_LIMIT:
        raise Fallback
    float_max = max(abs(floats.min() or 0.0), abs(floats.max() or 0.0))
    if float_max >= EXACT_FLOAT_US:
        raise Fallback  # the float has lost nanoseconds that the general path reads from the text
    return {f"{prefix}_i": ints, f"{prefix}_f": floats, f"{prefix}_x": _nulls(n, pl.Int64)}, max(
        float(int_max), float_max
    )


def _raw_timed(events: list[FastEvent], index: pl.Series) -> dict[str, pl.Series]:
    """The columns every `X`-event table has: event number, name, ts and dur as written."""
    ts, ts_max = raw_times([e.ts for e in events], "ts")
    dur, dur_max = raw_times([e.dur for e in events], "dur")
    if ts_max + dur_max >= END_LIMIT_US:
        raise Fallback  # start + duration might not fit in int64 ns
    return {"seq": index.cast(pl.Int64), "name": _strings([e.name for e in events]), **ts, **dur}


def _raw_args(table: str, args: list[Any]) -> dict[str, pl.Series]:
    """The raw columns of a table's `args` fields (`fields.raw_fields`), one comprehension each."""
    return {f.raw_column: _BY_KIND[f.kind]([getattr(a, f.attribute) for a in args]) for f in raw_fields(table)}


def _raw_gpu(events: list[FastEvent], index: pl.Series, category: pl.Series) -> pl.DataFrame:
    return pl.DataFrame(
        {
            **_raw_timed(events, index),
            "category": category,
            "pid_int": _mapped_ints([e.pid for e in events], as_int),
            "stream_tid": _mapped_ints([e.tid for e in events], stream_from_tid),
            **_raw_args("gpu", _event_args(events, _gpu_args_decoder)),
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
            raise Fallback from None
        if len(present) == len(values):
            return rows
        missing = pl.Series([v is None for v in values], dtype=pl.Boolean)
        return pl.select(pl.when(missing).then(None).otherwise(rows)).to_series()
    try:
        return pl.Series(values, dtype=pl.List(pl.Int64))
    except (TypeError, OverflowError, ValueError, pl.exceptions.PolarsError):
        raise Fallback from None


_ZEROS = (0, 0, 0)


def _raw_runtime(events: list[FastEvent], index: pl.Series, category: pl.Series) -> pl.DataFrame:
    return pl.DataFrame(
        {
            **_raw_timed(events, index),
            "pid": _mapped_ints([e.pid for e in events], thread_id),
            "tid": _mapped_ints([e.tid for e in events], thread_id),
            **_raw_args("runtime", _event_args(events, _runtime_args_decoder)),
        }
    )


def _raw_cpu_ops(
    events: list[FastEvent], index: pl.Series, category: pl.Series
) -> tuple[pl.DataFrame, tuple[pl.Series, ...]]:
    args = _event_args(events, _cpu_args_decoder)
    frame = pl.DataFrame(
        {
            **_raw_timed(events, index),
            "category": category,
            "pid": _mapped_ints([e.pid for e in events], thread_id),
            "tid": _mapped_ints([e.tid for e in events], thread_id),
            **_raw_args("cpu_ops", args),
        }
    )
    texts = tuple(_joined_text([getattr(a, f.attribute) for a in args]) for f in text_fields())
    return frame, texts


def _joined_text(raws: list[Any]) -> pl.Series:
    """Raw JSON values (empty: absent) joined with NUL, which valid JSON cannot hold: one string,
    split back into one value per row (null when absent) by `finish_raw`."""
    return pl.Series([b"\x00".join(raws).decode("utf-8", "replace")], dtype=pl.String)


def _raw_sync(events: list[FastEvent], index: pl.Series, category: pl.Series) -> pl.DataFrame:
    return pl.DataFrame(
        {
            **_raw_timed(events, index),
            "pid_int": _mapped_ints([e.pid for e in events], as_int),
            "stream_tid": _mapped_ints([e.tid for e in events], stream_from_tid),
            **_raw_args("sync", _event_args(events, _sync_args_decoder)),
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


_BY_KIND = {INT: _ints, FLOAT: _floats, STRING: _strings, INTS3: _int_lists}
_RAW_BUILDERS = {GPU: _raw_gpu, RUNTIME: _raw_runtime, SYNC: _raw_sync, PYTHON: _raw_python}


def _raw_flows(events: list[FastEvent], category: pl.Series) -> pl.DataFrame:
    ts, _ = raw_times([e.ts for e in events], "ts")
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


