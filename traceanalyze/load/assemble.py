"""The chunks of one trace file → its `Trace`: `TraceTables` concatenates each table's chunks
and finishes them (ranks, op ids, nesting, steps, devices, metadata)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from traceanalyze.load import classify
from traceanalyze.load.long_names import bounded_frame
from traceanalyze.load.events import TraceDocument
from traceanalyze.load.chunk import CHUNK_SCHEMAS, SKIP_MALFORMED, ChunkTables, merge_skipped
from traceanalyze.load.convert import fitting
from traceanalyze.load.general import general_tables
from traceanalyze.load.nesting import with_nesting
from traceanalyze.scalar_columns import constant_columns, constants_as_scalars
from traceanalyze.load.shapes import ArgumentTexts, arguments_slowly
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
            merge_skipped(self.skipped, reason, count, first + self.events)
        self.events += chunk.events
        self.malformed += chunk.malformed

    def _table(self, name: str) -> pl.DataFrame:
        """The chunks of a table as one contiguous frame, made a column at a time, so that copying
        it never holds a second copy of the whole table (a gather from the chunks, as `_sorted`
        takes them, is slower than a rechunk and then a gather)."""
        frames, self.frames[name] = self.frames[name], []
        if not frames:
            return pl.DataFrame(schema=CHUNK_SCHEMAS[name])
        if len(frames) == 1:
            return frames[0]
        combined = [pl.concat(frames, how="vertical", rechunk=False)]
        del frames
        return column_by_column(combined, lambda column: column.rechunk())

    def finish(self, document: TraceDocument, *, path: Path, rank: int, rank_source: str) -> Trace:
        def ranked(frame: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:  # one query: the rank, the order
            return frame.select(pl.lit(rank, dtype=pl.Int32).alias(name) if name == "rank" else pl.col(name)
                                for name in schema.names())

        skipped: Counter[str] = Counter()
        if self.malformed:
            skipped[SKIP_MALFORMED] += self.malformed
        for reason, (count, _) in sorted(self.skipped.items(), key=lambda item: item[1][1]):
            skipped[reason] += count
        # one table at a time, each chunk list released once its table is made
        gpu_frame = _sorted([ranked(self._table("gpu"), GPU_SCHEMA)], "start_ns", "device", "stream")
        runtime_frame = _sorted([ranked(self._table("runtime"), RUNTIME_SCHEMA)], "start_ns")
        cpu_frame = with_nesting(_cpu_ops_frame(self._table("cpu_ops"), self.arguments, rank))
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
        # names bounded (load/long_names.py) before the analyses, the cache or any output see them
        return Trace(
            gpu=constants_as_scalars(bounded_frame(gpu_frame)),
            runtime=constants_as_scalars(bounded_frame(runtime_frame)),
            cpu_ops=constants_as_scalars(bounded_frame(cpu_frame)),
            steps=bounded_frame(steps_frame),
            flows=constants_as_scalars(flows_frame),
            sync=constants_as_scalars(bounded_frame(sync_frame)),
            devices=bounded_frame(devices_frame),
            skipped=skipped_frame,
            meta=(meta,),
            python=None if python_frame is None else constants_as_scalars(bounded_frame(python_frame)),
        )


def column_by_column(held: list[pl.DataFrame], transform) -> pl.DataFrame:
    """`transform` (a copy that keeps every value: a rechunk, a gather) applied to each column of
    the frame in `held` in turn, each old column dropped as soon as its new one is made: the
    memory a column frees is reused by the next, and a table is never held twice. The caller
    hands the frame over in a one-item list, which this empties: a frame passed as an argument
    stays referenced by the caller until the call returns, and then no column could be freed.
    A column of one value in every row (`constant_columns`) is kept as that value once, not
    transformed."""
    frame = held.pop()
    order, height = frame.columns, frame.height
    constants = constant_columns(frame)
    columns = []
    for name in order:
        if name not in constants:
            columns.append(transform(frame.get_column(name)))
        frame = frame.drop(name)
    if not columns:  # every column constant: the frame needs one column to keep its height
        return pl.select(pl.repeat(0, height).alias("_rows"), *constants.values()).select(order)
    return pl.DataFrame(columns).with_columns(constants.values()).select(order)


def _sorted(held: list[pl.DataFrame], *by: str) -> pl.DataFrame:
    """The frame in `held` (handed over, as `column_by_column` takes it) sorted by `by` (stable),
    made a column at a time; a frame already in order (many traces list their GPU ops and
    runtime calls by start: 17 of 21 shared traces checked) as it is, not copied."""
    if held[0].height <= IN_ORDER_CHECKED_IN_PYTHON_MAX_ROWS:  # a small table's keys compared in Python
        keys = list(zip(*(held[0][name].to_list() for name in by)))
        if not any(None in key for key in keys) and all(a <= b for a, b in zip(keys, keys[1:])):
            return held.pop()
    order = held[0].select(pl.arg_sort_by(*by, maintain_order=True)).to_series()
    if order.is_sorted():  # a permutation in ascending order: the identity
        return held.pop()
    return column_by_column(held, lambda column: column.gather(order))


IN_ORDER_CHECKED_IN_PYTHON_MAX_ROWS = 4096


def build_trace(document: TraceDocument, *, path: Path, rank: int, rank_source: str,
                malformed: int, include_python: bool, include_flows: bool = False) -> Trace:
    """A whole decoded document (`chrome.decode_document`) → its `Trace`."""
    tables = TraceTables(include_python=include_python, include_flows=include_flows)
    tables.add(general_tables(document.traceEvents or [], include_python=include_python, malformed=malformed))
    return tables.finish(document, path=path, rank=rank, rank_source=rank_source)


def _cpu_ops_frame(frame: pl.DataFrame, arguments: list[ArgumentTexts], rank: int) -> pl.DataFrame:
    """The cpu_ops table: op ids in event order (nesting comes next)."""
    added = {"rank": pl.lit(rank, dtype=pl.Int32), "op_id": pl.int_range(pl.len(), dtype=pl.Int64),
             "depth": pl.lit(None, dtype=pl.Int32), "parent_id": pl.lit(None, dtype=pl.Int64)}
    return arguments_slowly(frame, arguments).select(  # one query
        added[name].alias(name) if name in added else pl.col(name) for name in CPU_OPS_SCHEMA.names())


def _steps(cpu_ops: pl.DataFrame) -> pl.DataFrame:
    steps = (  # one query
        cpu_ops.lazy().filter(pl.col("name").cast(pl.String).str.contains(classify.STEP_NAME.pattern))
        .with_columns(pl.col("name").cast(pl.String))  # one name per step: no need for a categorical
        .with_columns(step=pl.col("name").str.extract(classify.STEP_NAME.pattern, 1).cast(pl.Int64, strict=False))
        .filter(pl.col("step").is_not_null())  # ProfilerStep#99999999999999999999999 is no step
        .select(STEPS_SCHEMA.names())
        .sort("start_ns")
    )
    return steps.cast(STEPS_SCHEMA).collect(engine="in-memory")  # type: ignore[arg-type]


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
            device = fitting(entry.get("id"), pl.Int32)
            rows.append(
                {
                    "rank": rank,
                    "device": device if device is not None else index,
                    "name": entry.get("name") if isinstance(entry.get("name"), str) else None,
                    **{column: fitting(entry.get(key), DEVICES_SCHEMA[column]) for column, key in _DEVICE_KEYS.items()},
                }
            )
    frame = pl.DataFrame(rows, schema=DEVICES_SCHEMA) if rows else pl.DataFrame(schema=DEVICES_SCHEMA)
    return frame, bool(rows)


def _meta(document: TraceDocument, *, path: Path, rank: int, rank_source: str, has_props: bool,
          event_count: int, flow_events: int, device_family: str) -> RankMeta:
    info = document.distributedInfo if isinstance(document.distributedInfo, dict) else {}
    world_size = fitting(info.get("world_size"), pl.Int32)
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
        distributed_info=_distributed_info(info),
    )


def _distributed_info(info: dict[str, Any]) -> dict[str, Any]:
    """What `distributedInfo` says of the job, and of `pg_config` its default process group:
    `default_pg` ("cuda:nccl, 8 ranks"), which every rank of one job shares (pipeline/identity.py compares them)."""
    kept = {k: v for k, v in info.items() if k in ("rank", "world_size", "backend", "pg_count", "nccl_version")}
    groups = info.get("pg_config")
    if isinstance(groups, list):
        default = next((g for g in groups if isinstance(g, dict) and g.get("pg_desc") == "default_pg"), None)
        if default is None:
            default = next((g for g in groups if isinstance(g, dict) and str(g.get("pg_name")) == "0"), None)
        if default is not None:
            size = default.get("pg_size")
            kept["default_pg"] = (f"{str(default.get('backend_config', '?'))[:200]}, "
                                  f"{size if isinstance(size, int) else '?'} ranks")
    return kept
