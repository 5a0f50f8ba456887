"""The `Trace`: typed polars tables of one or more ranks, all times int64 nanoseconds.

Every table carries a `rank` column so that a folder of per-rank traces is one `Trace`; analyses
work on one rank at a time (`Trace.split_by_rank`). Column schemas live here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from traceanalyze.fields import arg_columns
from traceanalyze.scalar_columns import first_of_keys, join_keys, varying_keys

GPU_KINDS = ("kernel", "memcpy", "memset", "communication")
RUNTIME_KINDS = ("launch", "graph_launch", "memcpy", "memset", "sync", "other")
CPU_OP_CATEGORIES = ("cpu_op", "user_annotation")

GpuKind = pl.Enum(GPU_KINDS)
RuntimeKind = pl.Enum(RUNTIME_KINDS)
CpuOpCategory = pl.Enum(CPU_OP_CATEGORIES)

GPU_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "device": pl.Int32,
        "stream": pl.Int64,
        "kind": GpuKind,
        "name": pl.Categorical(),
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "duration_ns": pl.Int64,
        # correlation, external_id, grid, block, registers_per_thread, …: one per kernel argument
        **arg_columns("gpu", besides=("device", "stream")),
    }
)

RUNTIME_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "pid": pl.Int64,
        "tid": pl.Int64,
        "name": pl.Categorical(),
        "kind": RuntimeKind,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "duration_ns": pl.Int64,
        "correlation": pl.Int64,
        "external_id": pl.Int64,
        "blocking": pl.Boolean,
    }
)

CPU_OPS_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "op_id": pl.Int64,
        "pid": pl.Int64,
        "tid": pl.Int64,
        "category": CpuOpCategory,
        "name": pl.Categorical(),
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "duration_ns": pl.Int64,
        "external_id": pl.Int64,
        "sequence_number": pl.Int64,
        "fwd_thread_id": pl.Int64,
        "depth": pl.Int32,
        "parent_id": pl.Int64,
        "input_dims": pl.List(pl.List(pl.Int64)),  # one shape per input; [] for non-tensors
        "input_tensor_lists": pl.List(pl.List(pl.List(pl.Int64))),  # shapes of TensorList inputs
        "input_types": pl.List(pl.Categorical()),  # a few distinct texts ("float", "Scalar"): 4 bytes an item, not 16
        "input_strides": pl.List(pl.List(pl.Int64)),
        "concrete_inputs": pl.List(pl.Categorical()),
        "flops": pl.Float64,
    }
)

STEPS_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "step": pl.Int64,
        "name": pl.String,
        "pid": pl.Int64,
        "tid": pl.Int64,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "duration_ns": pl.Int64,
    }
)

FLOWS_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "id": pl.Int64,
        "phase": pl.String,
        "category": pl.String,
        "pid": pl.Int64,
        "tid": pl.Int64,
        "ts_ns": pl.Int64,
    }
)

SYNC_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "device": pl.Int32,
        "stream": pl.Int64,
        "name": pl.Categorical(),
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "duration_ns": pl.Int64,
        "correlation": pl.Int64,
        # an event synchronisation or stream wait: the correlation of the cudaEventRecord it waits on,
        # and the stream that event was recorded on (null where Kineto does not say: -1 kept as it is)
        "wait_on_record": pl.Int64,
        "wait_on_stream": pl.Int64,
    }
)

PYTHON_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "pid": pl.Int64,
        "tid": pl.Int64,
        "name": pl.Categorical(),
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "duration_ns": pl.Int64,
    }
)

DEVICES_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "device": pl.Int32,
        "name": pl.String,
        "total_memory_bytes": pl.Int64,
        "num_sms": pl.Int32,
        "compute_major": pl.Int32,
        "compute_minor": pl.Int32,
        "max_threads_per_block": pl.Int32,
        "max_shared_memory_per_block": pl.Int64,
        "regs_per_block": pl.Int64,
        "warp_size": pl.Int32,
    }
)

SKIPPED_SCHEMA = pl.Schema({"rank": pl.Int32, "reason": pl.String, "count": pl.Int64})

HEALTH_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "finding": pl.String,
        "count": pl.Int64,
        "affects": pl.String,
        "detail": pl.String,
    }
)


# the device families a rank's trace can be about (`load.classify.device_family`), as reports name them
DEVICE_FAMILIES = {"CUDA": "CUDA", "ROCm": "ROCm", "MTIA": "MTIA", "accelerator": "an accelerator of another kind",
                   "none": "none (no device work or launches: a CPU-only run)"}


@dataclass(frozen=True)
class RankMeta:
    """What a trace file says about itself, besides its events."""

    rank: int
    source: Path
    rank_source: str  # "distributedInfo", "file name", "file order", or "default" (rank 0: none recorded)
    world_size: int | None = None
    backend: str | None = None
    schema_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    hip_runtime_version: Any = None
    cupti_version: Any = None
    trace_name: str | None = None
    record_shapes: Any = None
    with_stack: Any = None
    profile_memory: Any = None
    has_device_properties: bool = False
    event_count: int = 0
    flow_events: int = 0  # `ac2g`/`async` flow events in the file; the `flows` table keeps them only when asked
    device_family: str = "none"  # CUDA, ROCm, MTIA, accelerator or none (`load.classify.device_family`)
    distributed_info: dict[str, Any] = field(default_factory=dict)


def empty(schema: pl.Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


@dataclass(frozen=True)
class Trace:
    """A loaded trace. Tables are polars DataFrames with the schemas above; times in int64 ns.

    Examples
    --------
    >>> import traceanalyze
    >>> trace = traceanalyze.load_trace("fixtures/synthetic_training.json.gz")  # doctest: +SKIP
    >>> trace.gpu.select("name", "duration_ns").head()  # doctest: +SKIP
    """

    gpu: pl.DataFrame
    runtime: pl.DataFrame
    cpu_ops: pl.DataFrame
    steps: pl.DataFrame
    flows: pl.DataFrame
    sync: pl.DataFrame
    devices: pl.DataFrame
    skipped: pl.DataFrame
    meta: tuple[RankMeta, ...]
    python: pl.DataFrame | None = None

    @property
    def ranks(self) -> list[int]:
        return [m.rank for m in self.meta]

    @property
    def source(self) -> Path:
        """The file (one rank) or the common folder (several ranks) this trace came from."""
        if len(self.meta) == 1:
            return self.meta[0].source
        return self.meta[0].source.parent

    def for_rank(self, rank: int) -> Trace:
        """The same trace restricted to one rank (itself when that is its only rank: no copy of
        its tables)."""
        if self.ranks == [rank]:
            return self
        keep = pl.col("rank") == rank
        return replace(
            self,
            gpu=self.gpu.filter(keep),
            runtime=self.runtime.filter(keep),
            cpu_ops=self.cpu_ops.filter(keep),
            steps=self.steps.filter(keep),
            flows=self.flows.filter(keep),
            sync=self.sync.filter(keep),
            devices=self.devices.filter(keep),
            skipped=self.skipped.filter(keep),
            meta=tuple(m for m in self.meta if m.rank == rank),
            python=None if self.python is None else self.python.filter(keep),
        )

    def split_by_rank(self) -> list[Trace]:
        return [self.for_rank(r) for r in self.ranks]

    @cached_property
    def launch_rows(self) -> pl.Series:
        """Per GPU op, the runtime row of its launch call (see `launch_rows`); computed once per
        trace, on first use."""
        return launch_rows(self)


LAUNCH_KINDS = ("launch", "graph_launch", "memcpy", "memset")


def launch_rows(trace: Trace) -> pl.Series:
    """For each GPU op (in `trace.gpu`'s order), the row of `trace.runtime` of the call that
    launched it: the first launch, graph launch, copy or set call of its rank with its
    correlation id; null for orphans. `Trace.launch_rows` keeps it, so the join runs once."""
    launches = (
        trace.runtime.lazy().select("rank", "correlation", "kind")
        .with_row_index("runtime_row")
        .filter(pl.col("kind").is_in(LAUNCH_KINDS) & pl.col("correlation").is_not_null())
        .drop("kind")
    )
    ops = trace.gpu.lazy().select("rank", "correlation")
    if len(trace.meta) == 1:  # one rank: on correlation alone, in one query
        keys = ["correlation"]
    else:
        known_launches, known_ops = launches.collect(engine="in-memory"), ops.collect(engine="in-memory")
        keys = join_keys(known_ops, known_launches, ("rank", "correlation"))
        launches, ops = known_launches.lazy(), known_ops.lazy()
    first = launches.filter(first_of_keys(keys))
    return (ops.join(first.select(*keys, "runtime_row"), on=keys, how="left", maintain_order="left")
            .collect(engine="in-memory")["runtime_row"])


LAUNCH_COLUMNS = ("launch_name", "launch_kind", "launch_start_ns", "launch_end_ns", "launch_pid", "launch_tid",
                  "launch_external_id")


def linked_gpu(trace: Trace, columns: tuple[str, ...] | None = None,
               launch: tuple[str, ...] = LAUNCH_COLUMNS) -> pl.DataFrame:
    """GPU ops with the runtime call that launched them (`Trace.launch_rows`: by rank and
    correlation). Columns of `gpu` (only `columns` of them, and `rank` and `correlation`, when
    given) plus the `launch` columns (by default all of `LAUNCH_COLUMNS`: `launch_name`,
    `launch_kind`, `launch_start_ns`, `launch_end_ns`, `launch_pid`, `launch_tid`,
    `launch_external_id`); launch columns are null for orphans. Only the launch columns asked
    for are gathered."""
    source = {"launch_name": "name", "launch_kind": "kind", "launch_start_ns": "start_ns", "launch_end_ns": "end_ns",
              "launch_pid": "pid", "launch_tid": "tid", "launch_external_id": "external_id"}
    launch_frame = trace.runtime.select(pl.col(source[c]).alias(c) for c in launch)
    rows = trace.launch_rows
    launch_frame = launch_frame.gather(rows) if launch_frame.height else launch_frame.clear(len(rows))
    gpu = trace.gpu if columns is None else trace.gpu.select(list(dict.fromkeys(("rank", "correlation", *columns))))
    return gpu.hstack(launch_frame)


THREAD = ("rank", "pid", "tid")
PER_THREAD_MAX = 16  # `left` rows on at most this many threads: one as-of join per thread


def latest_on_thread(left: pl.DataFrame, right: pl.DataFrame, *, left_on: str, right_on: str) -> pl.DataFrame:
    """`left` (with the `THREAD` columns) with the other columns of the row of `right` on the same
    thread whose `right_on` is the latest at or before the row's `left_on` (nulls if none), rows in
    no set order: an as-of join backward by thread.

    The rows of `left` come from a few threads (launching threads, the ops of an autograd pass):
    each thread's rows of `right` are then joined on their own, on time alone. A join `by` thread
    builds a table of every right row's thread first (150 MB for 1.6 M ops); it remains for rows on
    many threads, or of a thread with a null id."""
    threads = left.select(THREAD).unique(subset=varying_keys(left, THREAD))  # hashed on what varies: the tid
    if threads.is_empty() or threads.height > PER_THREAD_MAX or threads.null_count().sum_horizontal().item():
        joined = left.sort(left_on).join_asof(right.sort(right_on), left_on=left_on, right_on=right_on, by=list(THREAD),
                                              strategy="backward", check_sortedness=False)
    else:
        parts = []
        for rank, pid, tid in threads.iter_rows():
            same = (pl.col("rank") == rank) & (pl.col("pid") == pid) & (pl.col("tid") == tid)
            # only the columns joined are filtered, and sorted unless in order already (a thread's
            # ops, most of `cpu_ops`, usually are)
            chosen = right.lazy().filter(same).select(pl.exclude(THREAD)).collect(engine="in-memory")
            on_thread = _in_order(chosen, right_on)
            parts.append(_in_order(left.filter(same), left_on).join_asof(
                on_thread, left_on=left_on, right_on=right_on, strategy="backward", check_sortedness=False))
        joined = pl.concat(parts)
    return joined.drop(right_on) if right_on != left_on and right_on in joined.columns else joined


def _in_order(frame: pl.DataFrame, by: str) -> pl.DataFrame:
    """`frame` sorted by `by`, not copied when it is already (what `sort` gives then: the same
    rows in the same order, ties included)."""
    return frame if frame[by].is_sorted() else frame.sort(by)


def concat_traces(traces: list[Trace]) -> Trace:
    """One `Trace` from several single-rank traces (ranks must differ)."""

    def cat(frames: list[pl.DataFrame]) -> pl.DataFrame:
        return pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]

    pythons = [t.python for t in traces if t.python is not None]
    cpu_ops: list[pl.DataFrame] = []
    offset = 0
    for t in traces:  # op ids stay unique across ranks
        cpu_ops.append(t.cpu_ops.with_columns(pl.col("op_id") + offset, pl.col("parent_id") + offset))
        offset += t.cpu_ops.height
    return Trace(
        gpu=cat([t.gpu for t in traces]),
        runtime=cat([t.runtime for t in traces]),
        cpu_ops=cat(cpu_ops),
        steps=cat([t.steps for t in traces]),
        flows=cat([t.flows for t in traces]),
        sync=cat([t.sync for t in traces]),
        devices=cat([t.devices for t in traces]),
        skipped=cat([t.skipped for t in traces]),
        meta=tuple(m for t in traces for m in t.meta),
        python=cat(pythons) if pythons else None,
    )
