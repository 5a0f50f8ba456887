"""GPU activity, idle time and idle gaps with their causes (the overhead regime).

Definitions (docs/metrics.md): activity is the union of the intervals of kernels, memcpy and
memset on all streams of a device; the window is [first activity start, last activity end] on
that device (or the ProfilerStep span); idle = window − |activity ∩ window|.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from traceanalyze.figures import EMPTY_IS_ZERO, fraction_column, share_column
from traceanalyze.analysis.cpu_context import in_place, cpu_context, step_at
from traceanalyze.analysis.op_tree import OpTree
from traceanalyze.analysis.names import contains
from traceanalyze.analysis.intervals import clip_to_windows, complement_in_windows, covered_in_windows, union_intervals
from traceanalyze.errors import ConfigError
from traceanalyze.model import Trace, linked_gpu
from traceanalyze.scalar_columns import join_keys, varying_keys

Window = Literal["activity", "steps"]
GapCause = Literal["host", "sync", "collective", "stream_wait", "launch", "other"]
GAP_CAUSES: tuple[GapCause, ...] = ("host", "sync", "collective", "stream_wait", "launch", "other")
STREAM_WAIT = r"StreamWaitEvent"  # cudaStreamWaitEvent, hipStreamWaitEvent: a stream told to wait on an event
STREAM_WAIT_SYNC = "Stream Wait Event"
# enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__
DATALOADER_OP = r"(?i)dataloader"  # its cuda_sync record, which names the waiting stream
GapCauseType = pl.Enum(GAP_CAUSES)

DEVICE = ["rank", "device"]


def gpu_activity(trace: Trace) -> pl.DataFrame:
    """Merged busy intervals per device → `rank, device, start_ns, end_ns`."""
    return union_intervals(trace.gpu, DEVICE)


def windows(trace: Trace, *, window: Window = "activity") -> pl.DataFrame:
    """The analysis window per device → `rank, device, window_start_ns, window_end_ns`.

    `activity`: from the first GPU op's start to the last GPU op's end on that device.
    `steps`: from the first ProfilerStep's start to the last one's end on that rank (CPU time).
    """
    activity = trace.gpu.group_by(DEVICE).agg(
        pl.col("start_ns").min().alias("window_start_ns"), pl.col("end_ns").max().alias("window_end_ns")
    )
    if window == "activity":
        return activity.sort(DEVICE)
    if window == "steps":
        if trace.steps.is_empty():
            raise ConfigError(f"{trace.source}: the trace has no ProfilerStep#N spans; use the activity window")
        spans = trace.steps.group_by("rank").agg(
            pl.col("start_ns").min().alias("window_start_ns"), pl.col("end_ns").max().alias("window_end_ns")
        )
        return activity.select(DEVICE).join(spans, on="rank", how="inner").sort(DEVICE)
    raise ConfigError(f"unknown window {window!r}: use 'activity' or 'steps'")


def with_idle(frame: pl.DataFrame) -> pl.DataFrame:
    """`window_ns`, `idle_ns = window − busy` and `idle_fraction` from `window_start_ns`,
    `window_end_ns` and `busy_ns` (null busy: nothing ran)."""
    return (
        frame.with_columns(
            (pl.col("window_end_ns") - pl.col("window_start_ns")).alias("window_ns"), pl.col("busy_ns").fill_null(0)
        )
        .with_columns((pl.col("window_ns") - pl.col("busy_ns")).alias("idle_ns"))
        .with_columns(
            fraction_column(pl.col("idle_ns"), pl.col("window_ns"), empty=EMPTY_IS_ZERO).alias("idle_fraction")
        )
    )


def idle_summary(trace: Trace, *, window: Window = "activity", gaps: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per device → `rank, device, window_start_ns, window_end_ns, window_ns, gpu_busy_ns,
    gpu_idle_ns, idle_fraction, gpu_ops` (the names of the JSON report's `devices[]`). `gaps`:
    `idle_gaps(trace, window=window)` when the caller has them: the busy time is then the window
    less the gaps (they are its complement), not a second union of the GPU ops."""
    bounds = windows(trace, window=window)
    if gaps is not None:
        idle = gaps.group_by(DEVICE).agg(pl.col("duration_ns").sum().alias("gap_ns"))
        busy = bounds.join(idle, on=DEVICE, how="left").select(
            *DEVICE,
            (pl.col("window_end_ns") - pl.col("window_start_ns") - pl.col("gap_ns").fill_null(0)).alias("busy_ns"),
        )
    else:
        busy = (
            clip_to_windows(gpu_activity(trace), bounds, DEVICE)
            .group_by(DEVICE)
            .agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("busy_ns"))
        )
    ops = trace.gpu.group_by(DEVICE).agg(pl.len().cast(pl.Int64).alias("gpu_ops"))
    return (
        with_idle(bounds.join(busy, on=DEVICE, how="left").join(ops, on=DEVICE, how="left"))
        .select(*DEVICE, "window_start_ns", "window_end_ns", "window_ns", pl.col("busy_ns").alias("gpu_busy_ns"),
                pl.col("idle_ns").alias("gpu_idle_ns"), "idle_fraction", "gpu_ops")
        .sort(DEVICE)
    )


def stream_summary(trace: Trace, *, window: Window = "activity") -> pl.DataFrame:
    """Per stream, within its device's window → `rank, device, stream, gpu_ops, busy_ns,
    idle_ns, idle_fraction` (a stream is idle whenever it runs nothing, whatever other streams do)."""
    bounds = windows(trace, window=window)
    stream_key = [*DEVICE, "stream"]
    busy = (
        clip_to_windows(union_intervals(trace.gpu, stream_key), bounds, DEVICE)
        .group_by(stream_key)
        .agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("busy_ns"))
    )
    ops = trace.gpu.group_by(stream_key).agg(pl.len().cast(pl.Int64).alias("gpu_ops"))
    return (
        with_idle(ops.join(busy, on=stream_key, how="left").join(bounds, on=DEVICE, how="inner"))
        .select(*stream_key, "gpu_ops", "busy_ns", "idle_ns", "idle_fraction")
        .sort(stream_key)
    )


def idle_gaps(trace: Trace, *, window: Window = "activity", tree: OpTree | None = None) -> pl.DataFrame:
    """Every maximal idle interval of each device's window, longest first, with its cause.

    Columns: `rank, device, start_ns, end_ns, duration_ns, share_of_window, cause, cpu_op,
    annotation, step, previous_gpu_op, next_gpu_op, next_correlation, next_launch_start_ns,
    sync_call`. Causes, checked in this order:
    `sync` a blocking call (synchronize, blocking copy) on the rank began at or before the gap's
    start and was still running when the GPU fell idle (the call drained the queue: the GPU went
    idle while the CPU was blocked), and the next GPU work was launched after the gap began (work
    queued before it did not wait on that call: a synchronize behind a deep queue overlaps only the
    GPU's own gaps between kernels). A blocking call that began inside the gap found the GPU idle
    already: it did not make the gap (0.7 µs on an empty queue), the CPU was late (`host`);
    `host` the next GPU work's launch began after the gap began (the CPU was late);
    `collective` the next launch was issued before the gap began and the next GPU work is a
    collective (NCCL/RCCL): it waited on its peers;
    `stream_wait` the next launch was issued before the gap began and its stream had been told to
    wait on another stream's event since its previous launch (`after_stream_wait`): it waited on
    work elsewhere (another stream, another device);
    `launch` the next launch was issued before the gap began, its work started late, and neither
    of the above applies: launch latency;
    `other` no launch is known for the next GPU work (orphan), the next work started before its
    launch began (clock skew: the order of CPU and GPU times cannot be trusted), or there is no
    next work.
    `cpu_op` is the deepest CPU op running at the gap start on the launching thread (on the
    synchronising thread for `sync` gaps). For a `sync` gap, `sync_end_ns` is the blocking call's
    end, and `after_sync_op` / `after_sync_annotation` what the launching thread (else the
    synchronising one) was running just after it returned: the part of the gap after the call
    returned is that CPU work's, not the sync's (a DataLoader `__next__` after a 0.7 µs
    `cudaStreamSynchronize`). Null for the other causes. `cpu_tid`: the thread `cpu_op` was read on.
    """
    bounds = windows(trace, window=window)
    busy = clip_to_windows(gpu_activity(trace), bounds, DEVICE)
    gaps = complement_in_windows(busy, bounds, DEVICE)
    if gaps.is_empty():
        return _empty_gaps()
    gaps = gaps.with_columns(
        (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("gap_id"),
    ).join(bounds, on=DEVICE, how="left", maintain_order="left")

    gaps = _with_neighbouring_ops(gaps, trace)
    gaps = gaps.join(_blocking_calls_during(gaps, trace), on="gap_id", how="left", maintain_order="left")
    gaps = gaps.with_columns(_cause())
    points = gaps.select(
        pl.col("gap_id").alias("point_id"),
        "rank",
        pl.when(pl.col("cause") == "sync").then(pl.col("sync_pid")).otherwise(pl.col("launch_pid")).alias("pid"),
        pl.when(pl.col("cause") == "sync").then(pl.col("sync_tid")).otherwise(pl.col("launch_tid")).alias("tid"),
        pl.when(pl.col("cause") == "sync")
        .then(pl.max_horizontal("start_ns", "sync_start_ns"))
        .otherwise(pl.col("start_ns"))
        .alias("time_ns"),
    )
    gaps = gaps.with_columns(points["tid"].alias("cpu_tid"))  # the thread whose context is read
    is_sync = pl.col("cause") == "sync"
    after = gaps.select(
        pl.col("gap_id").alias("point_id"), "rank",
        pl.when(is_sync).then(pl.coalesce("launch_pid", "sync_pid")).alias("pid"),
        pl.when(is_sync).then(pl.coalesce("launch_tid", "sync_tid")).alias("tid"),
        pl.when(is_sync & (pl.col("sync_end_ns") < pl.col("end_ns"))).then(pl.col("sync_end_ns")).alias("time_ns"),
        "end_ns",
    )
    gaps = gaps.with_columns(pl.when(is_sync).then(pl.col("sync_end_ns")).alias("sync_end_ns"))
    # what the cause was read from goes before the CPU context is found (memory: 400 k gaps)
    gaps = gaps.select(*(name for name in _GAP_COLUMNS if name in gaps.columns), "window_start_ns", "window_end_ns")
    context = cpu_context(points, trace, tree).drop("point_id")  # in the order of `gaps`
    del points
    context = context.with_columns(_queued_work_step(gaps, trace, context["step"]))
    after_sync = _after_sync_context(after, trace, tree)
    del after
    gaps = (
        gaps.hstack(context).hstack(after_sync)
        .with_columns(
            share_column(pl.col("duration_ns"), pl.col("window_end_ns") - pl.col("window_start_ns"))
            .alias("share_of_window")
        )
        .select(_GAP_COLUMNS)
    )
    if gaps["start_ns"].is_sorted():  # in start order (as found): longest first is one stable sort on one key
        return gaps.sort("duration_ns", descending=True, maintain_order=True)
    return gaps.sort("duration_ns", "start_ns", descending=[True, False])


def _cause() -> pl.Expr:
    """Each gap's cause (the order of `idle_gaps`' docstring), from its neighbouring ops and the
    blocking call that overlapped it."""
    unknown_launch = pl.col("next_launch_start_ns").is_null() | (
        pl.col("next_start_ns") < pl.col("next_launch_start_ns")
    )
    launched_after = ~unknown_launch & (pl.col("next_launch_start_ns") > pl.col("start_ns"))  # after the gap began
    return (
        pl.when(pl.col("sync_call").is_not_null() & (pl.col("sync_start_ns") <= pl.col("start_ns")) & launched_after)
        .then(pl.lit("sync"))
        .when(unknown_launch)
        .then(pl.lit("other"))
        .when(launched_after)
        .then(pl.lit("host"))
        .when(pl.col("next_is_collective"))
        .then(pl.lit("collective"))
        .when(pl.col("next_after_stream_wait"))
        .then(pl.lit("stream_wait"))
        .otherwise(pl.lit("launch"))
        .cast(GapCauseType)
        .alias("cause")
    )


def _after_sync_context(points: pl.DataFrame, trace: Trace, tree: OpTree | None) -> pl.DataFrame:
    """`after_sync_op, after_sync_annotation` at each point (`point_id, rank, pid, tid, time_ns`:
    a sync call's return; null time: none), in the order of `points`: the CPU op and annotation
    running then on that thread, else those of the first op (not a ProfilerStep) that thread began
    after it (a loop's next `DataLoader.__next__` starts just after the last step's `.item()`)."""
    nulls = pl.Series([None] * points.height, dtype=pl.Categorical)
    known = points["time_ns"].is_not_null() & points["pid"].is_not_null() & points["tid"].is_not_null()
    found = points.filter(known)
    if found.is_empty():
        return pl.DataFrame({"after_sync_op": nulls, "after_sync_annotation": nulls})
    rows = pl.int_range(points.height, dtype=pl.Int64, eager=True).filter(known)
    at_return = cpu_context(found, trace, tree)
    ops = (trace.cpu_ops.filter(~pl.col("name").cast(pl.String).str.starts_with("ProfilerStep#"))
           .select("rank", "pid", "tid", pl.col("start_ns").alias("next_op_ns")).sort("next_op_ns"))
    following = (found.with_row_index("_order").sort("time_ns")
                 .join_asof(ops, left_on="time_ns", right_on="next_op_ns", by=["rank", "pid", "tid"],
                            strategy="forward", check_sortedness=False)
                 .sort("_order"))
    idle_cpu = at_return["cpu_op"].is_null() & at_return["annotation"].is_null() & following["next_op_ns"].is_not_null()
    later = cpu_context(found.with_columns(pl.when(pl.lit(idle_cpu)).then(following["next_op_ns"]).alias("time_ns"))
                        .filter(idle_cpu), trace, tree)
    op, annotation = at_return["cpu_op"], at_return["annotation"]
    if later.height:
        where = idle_cpu.arg_true()
        op, annotation = op.scatter(where, later["cpu_op"]), annotation.scatter(where, later["annotation"])
    loader = _loader_after(found, trace)
    annotation = (pl.select(pl.coalesce(loader.cast(pl.String), annotation.cast(pl.String))).to_series()
                  .cast(pl.Categorical))
    return pl.DataFrame([in_place(points.height, rows, op, "after_sync_op"),
                         in_place(points.height, rows, annotation, "after_sync_annotation")])


def _loader_after(points: pl.DataFrame, trace: Trace) -> pl.Series:
    """Per point (`rank, pid, tid, time_ns, end_ns`), the name of a DataLoader op or annotation
    (`enumerate(DataLoader)#…__next__`) the thread ran between the point and `end_ns` (the gap's
    end), else null: the batch the step waited for after its sync returned."""
    loaders = trace.cpu_ops.filter(contains(trace.cpu_ops["name"], DATALOADER_OP).fill_null(False)).select(
        "rank", "pid", "tid", pl.col("start_ns").alias("_s"), pl.col("end_ns").alias("_e"),
        pl.col("name").alias("_loader"))
    if loaders.is_empty():
        return pl.Series([None] * points.height, dtype=pl.String)
    hits = (points.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"), "rank", "pid", "tid", "time_ns",
                          "end_ns")
            .join(loaders, on=["rank", "pid", "tid"], how="inner")
            .filter((pl.col("_s") < pl.col("end_ns")) & (pl.col("_e") > pl.col("time_ns")))
            .sort("_row", "_s").unique("_row", keep="first"))
    return in_place(points.height, hits["_row"], hits["_loader"].cast(pl.String), "loader")


def _queued_work_step(gaps: pl.DataFrame, trace: Trace, at_start: pl.Series) -> pl.Series:
    """Each gap's step: for a gap before work queued before it began (`launch`, `collective`,
    `stream_wait`), the step whose CPU span holds that work's launch (the GPU runs the steps the
    CPU queued; by the time it idles between them the CPU may be steps ahead, or done); for the
    others, `at_start`, the step at the gap's start (what the CPU was doing when the GPU fell idle)."""
    queued = gaps["cause"].is_in(["launch", "collective", "stream_wait"])
    if not queued.any():
        return at_start
    launches = gaps.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("point_id"), "rank",
                           pl.when(pl.lit(queued)).then(pl.col("next_launch_start_ns")).alias("time_ns"))
    return pl.select(pl.when(pl.lit(queued)).then(step_at(launches, trace)["step"]).otherwise(at_start)).to_series()


def _with_neighbouring_ops(gaps: pl.DataFrame, trace: Trace) -> pl.DataFrame:
    """`gaps` with the GPU op that ends last before each gap and the one that starts first after
    it (with its launch), on the gap's device; sorted by start. Its frames of every GPU op are gone
    when it returns. The as-of joins match row numbers (the times and keys sorted, nothing else);
    the ops' columns are then gathered once, in the gaps' order."""
    linked = linked_gpu(trace, (*DEVICE, "stream", "kind", "start_ns", "end_ns", "name"),
                        launch=("launch_start_ns", "launch_pid", "launch_tid"))
    device = join_keys(gaps, linked, DEVICE)  # one device of one rank: by device alone
    gaps = gaps.sort("start_ns")
    keys = gaps.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_gap"), *device, "start_ns", "end_ns")
    ops = linked.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_op"), *device, "start_ns", "end_ns", "launch_start_ns"
    )
    # the first op to start at or after the gap's end (of equal starts, one with a launch first)
    by_start = ops.select("_op", *device, pl.col("start_ns").alias("_next_ns"),
                          pl.col("launch_start_ns").is_null().alias("_orphan"))
    following = (
        keys.select("_gap", *device, "end_ns")
        .sort("end_ns")
        .join_asof(
            by_start.sort("_next_ns", "_orphan").drop("_orphan"),
            left_on="end_ns",
            right_on="_next_ns",
            by=device,
            strategy="forward",
            check_sortedness=False,
        )
        .drop_nulls("_op")
    )
    # the last op to end at or before the gap's start
    preceding = (
        keys.select("_gap", *device, "start_ns")
        .join_asof(ops.select("_op", *device, pl.col("end_ns").alias("_previous_ns")).sort("_previous_ns"),
                   left_on="start_ns", right_on="_previous_ns", by=device, strategy="backward", check_sortedness=False)
        .drop_nulls("_op")
    )
    next_op, previous_op = (
        in_place(gaps.height, found["_gap"], found["_op"], "_op") for found in (following, preceding)
    )
    del keys, ops, by_start, following, preceding
    waited = after_stream_wait(linked, trace)
    return gaps.with_columns(
        linked["start_ns"].gather(next_op).alias("next_start_ns"),
        linked["name"].gather(next_op).alias("next_gpu_op"),
        linked["correlation"].gather(next_op).alias("next_correlation"),
        linked["launch_start_ns"].gather(next_op).alias("next_launch_start_ns"),
        linked["launch_pid"].gather(next_op).alias("launch_pid"),
        linked["launch_tid"].gather(next_op).alias("launch_tid"),
        (linked["kind"].gather(next_op) == "communication").alias("next_is_collective"),
        waited.gather(next_op).alias("next_after_stream_wait"),
        linked["end_ns"].gather(previous_op).alias("previous_end_ns"),
        linked["name"].gather(previous_op).alias("previous_gpu_op"),
    )


def after_stream_wait(linked: pl.DataFrame, trace: Trace) -> pl.Series:
    """For each row of `linked` (`linked_gpu` with `stream`), whether its stream was told to wait
    on an event (`cudaStreamWaitEvent`/`hipStreamWaitEvent`) after the previous launch that could
    have been queued before that wait and before its own launch began:

    * a wait whose `cuda_sync` record names the stream (`Stream Wait Event`) counts for the next
      GPU op launched on that stream: one launched after the previous op of the stream was;
    * a wait call with no such record (older traces) counts for the next op launched by the same
      host thread: one launched after that thread's previous launch.

    False for orphans (no launch)."""
    calls = (trace.runtime.filter(contains(trace.runtime["name"], STREAM_WAIT))
             .select("rank", "pid", "tid", "correlation", "start_ns"))
    records = trace.sync.filter(pl.col("name") == STREAM_WAIT_SYNC).select(
        "rank", "device", "stream", "correlation", pl.col("start_ns").alias("record_ns"))
    if calls.is_empty() and records.is_empty():
        return pl.Series(values=[False] * linked.height, dtype=pl.Boolean)
    # a record's time is its call's start when the call is there (the first call of its id, as for
    # launches: a repeated correlation id must not multiply rows)
    first_calls = calls.sort("start_ns").unique(["rank", "correlation"], keep="first")
    first_calls = first_calls.select("rank", "correlation", "start_ns")
    on_stream = (
        records.join(first_calls, on=["rank", "correlation"], how="left")
        .select("rank", "device", "stream", pl.coalesce("start_ns", "record_ns").alias("wait_ns"))
        .drop_nulls().sort("wait_ns")
    )
    on_thread = (
        calls.join(records.select("rank", "correlation"), on=["rank", "correlation"], how="anti")
        .select("rank", pl.col("pid").alias("launch_pid"), pl.col("tid").alias("launch_tid"),
                pl.col("start_ns").alias("thread_wait_ns"))
        .sort("thread_wait_ns")
    )
    rows = linked.select(*DEVICE, "stream", "start_ns", "launch_start_ns", "launch_pid", "launch_tid")
    rows = rows.with_row_index("row")
    launched = rows.filter(pl.col("launch_start_ns").is_not_null())
    # keyed by what varies (one rank, one device, one launching process: not keyed; the same in
    # the waits, or they are keyed in full)
    stream = join_keys(launched, on_stream, [*DEVICE, "stream"]) if on_stream.height else \
        varying_keys(launched, [*DEVICE, "stream"])
    thread = join_keys(launched, on_thread, ["rank", "launch_pid", "launch_tid"]) if on_thread.height else \
        varying_keys(launched, ["rank", "launch_pid", "launch_tid"])
    launched = launched.with_columns(
        pl.col("launch_start_ns").shift(1).over(stream, order_by=["launch_start_ns", "start_ns"])
        .alias("previous_on_stream_ns"),
        pl.col("launch_start_ns").shift(1).over(thread, order_by="launch_start_ns").alias("previous_on_thread_ns"),
    )
    launched = (
        launched.sort("launch_start_ns")
        .join_asof(on_stream.select(*stream, "wait_ns"), left_on="launch_start_ns", right_on="wait_ns", by=stream,
                   strategy="backward", check_sortedness=False)
        .join_asof(on_thread.select(*thread, "thread_wait_ns"), left_on="launch_start_ns",
                   right_on="thread_wait_ns", by=thread, strategy="backward", check_sortedness=False)
    )
    waited = (
        (pl.col("wait_ns").is_not_null()
         & (pl.col("previous_on_stream_ns").is_null() | (pl.col("wait_ns") >= pl.col("previous_on_stream_ns"))))
        | (pl.col("thread_wait_ns").is_not_null()
           & (pl.col("previous_on_thread_ns").is_null()
              | (pl.col("thread_wait_ns") >= pl.col("previous_on_thread_ns"))))
    )
    flags = launched.select("row", waited.alias("waited"))
    return in_place(rows.height, flags["row"], flags["waited"], "waited").fill_null(False)


_GAP_COLUMNS = [
    "rank", "device", "start_ns", "end_ns", "duration_ns", "share_of_window", "cause", "cpu_op",
    "annotation", "step", "previous_gpu_op", "next_gpu_op", "next_correlation", "next_launch_start_ns",
    "sync_call", "sync_end_ns", "after_sync_op", "after_sync_annotation", "cpu_tid",
]


def _empty_gaps() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "rank": pl.Int32, "device": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64,
            "duration_ns": pl.Int64, "share_of_window": pl.Float64, "cause": GapCauseType,
            "cpu_op": pl.Categorical, "annotation": pl.Categorical, "step": pl.Int64,  # names: as the tables'
            "previous_gpu_op": pl.Categorical, "next_gpu_op": pl.Categorical, "next_correlation": pl.Int64,
            "next_launch_start_ns": pl.Int64, "sync_call": pl.Categorical, "sync_end_ns": pl.Int64,
            "after_sync_op": pl.Categorical, "after_sync_annotation": pl.Categorical, "cpu_tid": pl.Int64,
        }
    )


def _blocking_calls_during(gaps: pl.DataFrame, trace: Trace) -> pl.DataFrame:
    """The first blocking runtime call (by start) on the gap's rank that overlaps the gap →
    `gap_id, sync_call, sync_pid, sync_tid, sync_start_ns, sync_end_ns`."""
    blocking = trace.runtime.filter(pl.col("blocking")).select(
        "rank",
        pl.col("name").alias("sync_call"),
        pl.col("pid").alias("sync_pid"),
        pl.col("tid").alias("sync_tid"),
        pl.col("start_ns").alias("sync_start_ns"),
        pl.col("end_ns").alias("sync_end_ns"),
    )
    schema = {"gap_id": pl.Int64, "sync_call": pl.Categorical, "sync_pid": pl.Int64, "sync_tid": pl.Int64,
              "sync_start_ns": pl.Int64, "sync_end_ns": pl.Int64}  # a call's name: as in the table, even with none
    if blocking.is_empty():
        return pl.DataFrame(schema=schema)
    # Calls in start order with the running maximum of their ends (per rank): the first call whose
    # running maximum passes the gap start is the earliest-starting call still running after it,
    # and every call before it ended by then. It overlaps the gap when it starts before the gap
    # ends. One as-of join on the (sorted) running maximum: linear, however the calls overlap.
    reach = (
        blocking.with_row_index("_order").sort("rank", "sync_start_ns", "_order")
        .with_columns(pl.col("sync_end_ns").cum_max().over("rank").alias("_reach_ns"))
    )
    return (
        gaps.select("gap_id", "rank", "start_ns", "end_ns", (pl.col("start_ns") + 1).alias("_after_start_ns"))
        .sort("_after_start_ns")
        .join_asof(reach, left_on="_after_start_ns", right_on="_reach_ns", by="rank", strategy="forward",
                   check_sortedness=False)
        .filter(pl.col("sync_start_ns") < pl.col("end_ns"))
        .select(list(schema))
    )


def step_breakdown(trace: Trace) -> pl.DataFrame:
    """Idle time per ProfilerStep and device.

    GPU work belongs to step N when its launch call began inside step N's CPU span. Step N's GPU
    window runs from the start of its first GPU op to the start of step N+1's first GPU op (the
    last step's window ends at its last GPU op's end), so the windows of consecutive steps tile
    the device timeline and their idle times add up. Busy time is all activity (launched or not)
    inside the window. → `rank, device, step, cpu_duration_ns, gpu_ops, window_start_ns,
    window_end_ns, window_ns, gpu_busy_ns, gpu_idle_ns, idle_fraction` (the names of the JSON
    report's `steps[]`).
    """
    schema = {
        "rank": pl.Int32, "device": pl.Int32, "step": pl.Int64, "cpu_duration_ns": pl.Int64,
        "gpu_ops": pl.Int64, "window_start_ns": pl.Int64, "window_end_ns": pl.Int64, "window_ns": pl.Int64,
        "gpu_busy_ns": pl.Int64, "gpu_idle_ns": pl.Int64, "idle_fraction": pl.Float64,
    }
    if trace.steps.is_empty() or trace.gpu.is_empty():
        return pl.DataFrame(schema=schema)
    steps = trace.steps.select("rank", "step", pl.col("start_ns").alias("step_start_ns"),
                               pl.col("end_ns").alias("step_end_ns"), pl.col("duration_ns").alias("cpu_duration_ns"))
    launched = (  # only the columns read (the correlation ids go before the sort)
        linked_gpu(trace, (*DEVICE, "start_ns", "end_ns"), launch=("launch_start_ns",))
        .select(*DEVICE, "start_ns", "end_ns", "launch_start_ns")
        .filter(pl.col("launch_start_ns").is_not_null())
        .sort("launch_start_ns")
        .join_asof(steps.select("rank", "step", "step_start_ns", "step_end_ns").sort("step_start_ns"),
                   left_on="launch_start_ns", right_on="step_start_ns", by="rank", strategy="backward",
                   check_sortedness=False)
        .filter(pl.col("launch_start_ns") < pl.col("step_end_ns"))
        .select(*DEVICE, "step", "start_ns", "end_ns")
    )
    per_step = (
        launched.group_by(*DEVICE, "step")
        .agg(
            pl.len().cast(pl.Int64).alias("gpu_ops"),
            pl.col("start_ns").min().alias("window_start_ns"),
            pl.col("end_ns").max().alias("last_end_ns"),
        )
        .sort(*DEVICE, "step")
        .with_columns(
            pl.col("window_start_ns").shift(-1).over(DEVICE).fill_null(pl.col("last_end_ns")).alias("window_end_ns")
        )
        .with_columns(pl.max_horizontal("window_end_ns", "window_start_ns").alias("window_end_ns"))
    )
    keyed = per_step.with_columns(covered_in_windows(trace.gpu, per_step, DEVICE).alias("busy_ns"))
    return (
        with_idle(
            keyed.join(steps.select("rank", "step", "cpu_duration_ns"), on=["rank", "step"], how="left")
        )
        .rename({"busy_ns": "gpu_busy_ns", "idle_ns": "gpu_idle_ns"})
        .select(list(schema))
        .cast(schema)  # type: ignore[arg-type]
        .sort(*DEVICE, "step")
    )
