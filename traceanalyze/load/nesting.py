"""Depth and parent of each op on its thread (the cpu_ops table's `depth`, `parent_id`): in C
(`_native.nest`) for large tables, a Python loop for a few ops, else with polars."""

from __future__ import annotations

import polars as pl

from traceanalyze.native import compiled, int64_array
from traceanalyze.scalar_columns import varying_keys


def with_nesting(ops: pl.DataFrame) -> pl.DataFrame:
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
    threads = varying_keys(ops, ("pid", "tid"))  # most traces have one process: not keyed on
    ordered = ops.select("op_id", "pid", "tid", "start_ns", "end_ns").sort(
        [*threads, "start_ns", "end_ns"], descending=[*[False] * len(threads), False, True]
    )
    _native = compiled()
    if (ordered.height <= PYTHON_NESTING_MAX_OPS and not ordered["start_ns"].null_count()
            and not ordered["end_ns"].null_count()):
        return _nested_in_python(ops, ordered)
    if _native is None or ordered.height < NATIVE_NESTING_MIN_OPS:
        parent_position, depth = nesting_vectorised(ordered)
    else:
        parent_position, depth = nesting_native(_native, ordered)
    nesting = pl.DataFrame(
        {
            "op_id": ordered["op_id"],
            "depth": depth.cast(pl.Int32),
            "parent_id": ordered["op_id"].gather(parent_position),
        }
    ).sort("op_id")
    return ops.with_columns(nesting["depth"], nesting["parent_id"])


NATIVE_NESTING_MIN_OPS = 100_000  # fewer ops nest as fast in polars, without importing numpy
# at most this many ops nest faster in a Python loop than in the dozens of polars queries of the
# vectorised walk (a small rank's hundred ops: 0.1 ms against 2 ms)
PYTHON_NESTING_MAX_OPS = 2000


def _nested_in_python(ops: pl.DataFrame, ordered: pl.DataFrame) -> pl.DataFrame:
    """`ops` with the depth and parent of the `stack_walk` of its few ops in `ordered` (one query)."""
    parents, depths = stack_walk(ordered)
    op_ids = ordered["op_id"].to_list()
    place = {op_id: position for position, op_id in enumerate(op_ids)}
    rows = [place[op_id] for op_id in ops["op_id"].to_list()]
    return ops.with_columns(
        pl.Series("depth", [depths[row] for row in rows], dtype=pl.Int32),
        pl.Series("parent_id", [None if parents[row] is None else op_ids[parents[row]] for row in rows],
                  dtype=pl.Int64))


def stack_walk(ordered: pl.DataFrame) -> tuple[list[int | None], list[int]]:
    """The stack walk as a Python loop, for a few ops (no null start or end): pop the ops of the
    stack that end before the op's threshold, max(end, start + 1); the top is its parent."""
    pids, tids, starts, ends = (ordered[name].to_list() for name in ("pid", "tid", "start_ns", "end_ns"))
    parents: list[int | None] = []
    depths: list[int] = []
    stack: list[int] = []
    thread: tuple = ()
    for position, (pid, tid, start, end) in enumerate(zip(pids, tids, starts, ends)):
        if (pid, tid) != thread:
            thread, stack = (pid, tid), []
        threshold = max(end, start + 1)
        while stack and ends[stack[-1]] < threshold:
            stack.pop()
        parents.append(stack[-1] if stack else None)
        depths.append(depths[stack[-1]] + 1 if stack else 0)
        stack.append(position)
    return parents, depths


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


def nesting_native(native, ordered: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
    """The stack walk itself, in C (`_native.nest`): one pass."""
    import numpy as np

    thread_start = _thread_starts(ordered)["thread_start"]
    parents, depths = native.nest(*map(int64_array, (thread_start, ordered["start_ns"], ordered["end_ns"])))
    parent = pl.Series(np.frombuffer(parents, dtype=np.int64))
    return pl.select(pl.when(parent >= 0).then(parent)).to_series(), pl.Series(np.frombuffer(depths, dtype=np.int32))


def nesting_vectorised(ordered: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
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


