"""Typed events → the `Trace`'s polars tables, one pass over the events.

Times: `ts`/`dur` are microseconds, integers (older traces) or floats with a nanosecond fraction
(PyTorch ≥ 2.3). They become int64 nanoseconds exactly (see `to_ns` and docs/metrics.md).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from traceanalyze.load import classify
from traceanalyze.load.chrome import Event, TraceDocument
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


def decode_strings(texts: list[str | None]) -> pl.Series:
    """JSON string lists (`Input type`, `Concrete Inputs`) → List(String), decoded in Rust."""
    series = pl.Series(texts, dtype=pl.String)
    try:
        return series.str.json_decode(STRINGS)
    except pl.exceptions.PolarsError:
        return pl.Series([_strings_from_json(t) for t in texts], dtype=STRINGS, strict=False)


def decode_shapes(texts: list[str | None]) -> tuple[pl.Series, pl.Series]:
    """JSON shape lists (`Input Dims`, `Input Strides`) → (List(List(Int64)) per input, and
    List(List(List(Int64))) with the shapes of TensorList inputs, null for ops without one).
    Plain values are decoded in Rust; only values holding a TensorList take the slow path."""
    nested = [i for i, t in enumerate(texts) if t is not None and "[[[" in t]
    plain = list(texts)
    for i in nested:
        plain[i] = None
    try:
        shapes = pl.Series(plain, dtype=pl.String).str.json_decode(SHAPES)
    except pl.exceptions.PolarsError:
        shapes = pl.Series([_nested_shapes(t)[0] if t else None for t in plain], dtype=SHAPES, strict=False)
    lists = pl.Series([None] * len(texts), dtype=TENSOR_LISTS)
    if nested:
        slow_shapes: list[Any] = [None] * len(texts)
        slow_lists: list[Any] = [None] * len(texts)
        for i in nested:
            slow_shapes[i], slow_lists[i] = _nested_shapes(texts[i])
        shapes = pl.select(
            pl.when(pl.Series(slow_shapes, dtype=SHAPES).is_not_null())
            .then(pl.Series(slow_shapes, dtype=SHAPES))
            .otherwise(shapes)
        ).to_series()
        lists = pl.Series(slow_lists, dtype=TENSOR_LISTS)
    return shapes, lists


class _Columns:
    """Column-wise buffers for one table."""

    def __init__(self, schema: pl.Schema):
        self.schema = schema
        self.columns: dict[str, list[Any]] = {name: [] for name in schema}

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.columns, schema=self.schema, strict=False)


def _cpu_ops_frame(columns: _Columns) -> pl.DataFrame:
    """The cpu_ops table: shape arguments are buffered as JSON text and decoded column-wise."""
    raw = {name: columns.columns.pop(name) for name in ("input_dims", "input_types", "input_strides", "concrete_inputs", "input_tensor_lists")}
    schema = {k: t for k, t in columns.schema.items() if k in columns.columns}
    frame = pl.DataFrame(columns.columns, schema=schema, strict=False)
    dims, dim_lists = decode_shapes(raw["input_dims"])
    strides, _ = decode_shapes(raw["input_strides"])
    return frame.with_columns(
        dims.alias("input_dims"),
        dim_lists.alias("input_tensor_lists"),
        decode_strings(raw["input_types"]).alias("input_types"),
        strides.alias("input_strides"),
        decode_strings(raw["concrete_inputs"]).alias("concrete_inputs"),
    ).select(CPU_OPS_SCHEMA.names())


def build_trace(document: TraceDocument, *, path: Path, rank: int, rank_source: str,
                malformed: int, include_python: bool) -> Trace:
    events: list[Event] = document.traceEvents or []
    skipped: Counter[str] = Counter()
    if malformed:
        skipped["malformed event (fields of the wrong type)"] += malformed

    gpu = _Columns(GPU_SCHEMA)
    runtime = _Columns(RUNTIME_SCHEMA)
    ops = _Columns(CPU_OPS_SCHEMA)
    flows = _Columns(FLOWS_SCHEMA)
    sync = _Columns(SYNC_SCHEMA)
    python = _Columns(PYTHON_SCHEMA)

    gpu_categories = classify.GPU_CATEGORIES
    runtime_categories = classify.RUNTIME_CATEGORIES
    cpu_categories = classify.CPU_OP_CATEGORIES
    flow_categories = classify.FLOW_CATEGORIES
    max_dur = classify.MAX_DURATION_US

    for event in events:
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
            skipped["event without a valid ts or name"] += 1
            continue
        if duration is None:
            skipped["event without a valid dur"] += 1
            continue
        if duration < 0 or event.dur > max_dur:
            skipped["negative or absurd duration (< 0 or > 1 day)"] += 1
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

    def finish(columns: _Columns, build=_Columns.frame) -> pl.DataFrame:
        n = max(len(values) for values in columns.columns.values())
        for values in columns.columns.values():
            if not values:
                values.extend([None] * n)  # columns filled later (nesting, tensor lists)
        columns.columns["rank"] = [rank] * n
        return build(columns)

    gpu_frame = finish(gpu).sort("start_ns", "device", "stream")
    runtime_frame = finish(runtime).sort("start_ns")
    cpu_frame = _with_nesting(finish(ops, _cpu_ops_frame))
    steps_frame = _steps(cpu_frame)
    devices_frame, has_props = _devices(document.deviceProperties, rank)
    meta = _meta(document, path=path, rank=rank, rank_source=rank_source, has_props=has_props,
                 event_count=len(events))
    skipped_frame = pl.DataFrame(
        {"rank": [rank] * len(skipped), "reason": list(skipped), "count": list(skipped.values())},
        schema=SKIPPED_SCHEMA,
    )
    return Trace(
        gpu=gpu_frame,
        runtime=runtime_frame,
        cpu_ops=cpu_frame,
        steps=steps_frame,
        flows=finish(flows),
        sync=finish(sync).sort("start_ns"),
        devices=devices_frame,
        skipped=skipped_frame,
        meta=(meta,),
        python=finish(python).sort("start_ns") if include_python else None,
    )


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
    cols["op_id"].append(len(cols["name"]))
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


def _with_nesting(ops: pl.DataFrame) -> pl.DataFrame:
    """Depth and parent of each op on its thread: the innermost earlier op that encloses it.
    Partially overlapping (non-nested) events are not taken as parents."""
    if ops.is_empty():
        return ops
    ordered = ops.select("op_id", "pid", "tid", "start_ns", "end_ns").sort(
        ["pid", "tid", "start_ns", "end_ns"], descending=[False, False, False, True]
    )
    depth: list[int] = []
    parent: list[int | None] = []
    stack: list[tuple[int, int]] = []  # (op_id, end_ns)
    current_thread = None
    for op_id, pid, tid, start, end in ordered.iter_rows():
        if (pid, tid) != current_thread:
            current_thread = (pid, tid)
            stack = []
        while stack and stack[-1][1] <= start:
            stack.pop()
        level = len(stack)
        while level and stack[level - 1][1] < end:
            level -= 1
        if level < len(stack):
            # a partial overlap: this op is not inside the ops above `level`
            del stack[level:]
        parent.append(stack[-1][0] if stack else None)
        depth.append(len(stack))
        stack.append((op_id, end))
    nesting = pl.DataFrame(
        {"op_id": ordered["op_id"], "depth": depth, "parent_id": parent},
        schema={"op_id": pl.Int64, "depth": pl.Int32, "parent_id": pl.Int64},
    )
    return (
        ops.drop("depth", "parent_id")
        .join(nesting, on="op_id", how="left")
        .select(CPU_OPS_SCHEMA.names())
        .sort("op_id")
    )


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
