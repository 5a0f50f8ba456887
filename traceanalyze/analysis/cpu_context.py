"""What the CPU was doing at given instants: the deepest CPU op or annotation enclosing a time on a
thread, found with an as-of join and a walk up the parent chain (vectorised per nesting level)."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.names import contains, starts_with
from traceanalyze.analysis.op_tree import OpTree, positions_in
from traceanalyze.model import Trace, latest_on_thread
from traceanalyze.native import compiled, int64_array, numpy_for_threads


def enclosing_op(
    points: pl.DataFrame,
    cpu_ops: pl.DataFrame,
    *,
    category: str | None = None,
    exclude_name_pattern: str | None = None,
) -> pl.DataFrame:
    """For each row of `points` (`point_id, rank, pid, tid, time_ns`), the deepest op of `cpu_ops`
    on the same rank and thread with `start_ns <= time_ns < end_ns` (and of `category`, and whose
    name does not match `exclude_name_pattern`, when given) → `point_id, op_id` (null if none).
    """
    return enclosing_ops(points, cpu_ops, [(category, exclude_name_pattern)])[0]


def enclosing_ops(
    points: pl.DataFrame, cpu_ops: pl.DataFrame, selections: list[tuple[str | None, ...]], tree: OpTree | None = None
) -> list[pl.DataFrame]:
    """`enclosing_op` for several selections of the same ops at the same points: the as-of join
    that finds each point's innermost op runs once. A selection is `(category,
    exclude_name_pattern)` or `(category, exclude_name_pattern, name_prefix)`: the deepest op of
    that category, whose name does not match the pattern and starts with the prefix (None: any).

    Ops nest (the loader's `parent_id`), so every op enclosing a point is an ancestor of the op
    that started last before it on its thread: the walk from that op up its parents meets the
    deepest accepted op enclosing the point first, whatever the selection.

    Each frame is `point_id, op_id` in the order of `points` (row for row). `tree`: `cpu_ops`' op
    tree (`OpTree.of(cpu_ops)`) when the caller has it."""
    ops = cpu_ops.select("rank", "op_id", "pid", "tid", "start_ns", "end_ns", "parent_id", "category", "name")
    # the walk runs on row positions of `points` (as `point_id`): its hits scatter back in place
    located = latest_on_thread(
        points.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("point_id"), "rank", "pid", "tid", "time_ns")
        .drop_nulls(["pid", "tid", "time_ns"]),
        ops.select("rank", "pid", "tid", "start_ns", "op_id"), left_on="time_ns", right_on="start_ns",
    ).select("point_id", "time_ns", pl.col("op_id").alias("candidate"))
    _native = compiled()
    walk = (_native_walk(_native, located, ops, tree or OpTree.of(cpu_ops))
            if _native is not None and located.height >= NATIVE_MIN_POINTS
            else lambda matches: _walk_vectorised(located, matches))
    found = []
    for category, exclude_name_pattern, *prefix in selections:
        matches = ops.select(
            "op_id", "end_ns", "parent_id", _accepts(ops, category, exclude_name_pattern, *prefix).alias("ok")
        )
        hits = walk(matches)
        found.append(
            points.select("point_id").with_columns(in_place(points.height, hits["point_id"], hits["op_id"], "op_id"))
        )
    return found


def in_place(length: int, rows: pl.Series, values: pl.Series, name: str) -> pl.Series:
    """A column of `length` nulls with `values` at positions `rows`."""
    column = pl.repeat(None, length, dtype=values.dtype, eager=True).alias(name)
    return column.scatter(rows, values) if rows.len() else column


NATIVE_MIN_POINTS = 20_000  # fewer points walk as fast in polars, without importing numpy


def _walk_vectorised(located: pl.DataFrame, matches: pl.DataFrame) -> pl.DataFrame:
    """Each point's candidate, then its parents, one nesting level per round for all points at
    once, until an accepted op that ends after the point → `point_id, op_id`."""
    resolved: list[pl.DataFrame] = []
    pending = located.drop_nulls("candidate")
    lookup = by_op_id(matches.rename({"op_id": "candidate"}), "candidate")
    while pending.height:
        checked = lookup(pending)
        found = checked.filter(pl.col("ok") & (pl.col("end_ns") > pl.col("time_ns")))
        resolved.append(found.select("point_id", pl.col("candidate").alias("op_id")))
        pending = (
            checked.filter(~(pl.col("ok") & (pl.col("end_ns") > pl.col("time_ns"))))
            .select("point_id", "time_ns", pl.col("parent_id").alias("candidate"))
            .drop_nulls("candidate")
        )
    return pl.concat(resolved) if resolved else pl.DataFrame(schema={"point_id": pl.Int64, "op_id": pl.Int64})


def _native_walk(native, located: pl.DataFrame, ops: pl.DataFrame, tree: OpTree):
    """The same walk, each point up its own chain in one pass of C (`_native.enclose`), over op
    positions instead of ids (`tree`: the op tree of `ops`) → `walk(matches)`: the positions of
    the candidates are computed once for every selection of the same ops."""
    np = numpy_for_threads()

    op_ids = ops["op_id"]
    parents = int64_array(tree.parent)
    candidates = int64_array(tree.locate(located["candidate"]).fill_null(-1))
    times = int64_array(located["time_ns"])
    ends = int64_array(ops["end_ns"].fill_null(0))
    end_unknown = ops["end_ns"].is_null().cast(pl.UInt8) * 4

    def walk(matches: pl.DataFrame) -> pl.DataFrame:
        # accepted: 1, not: 0, unknown: 2; plus 4 where the end is unknown (see `_native.enclose`)
        ok = (matches["ok"].cast(pl.UInt8).fill_null(2) + end_unknown).cast(pl.UInt8)
        found = pl.Series(np.frombuffer(native.enclose(
            candidates, times, ends, parents, np.ascontiguousarray(ok.to_numpy(), dtype=np.uint8),
        ), dtype=np.int64))
        hits = found >= 0
        return pl.DataFrame({"point_id": located["point_id"].filter(hits), "op_id": op_ids.gather(found.filter(hits))})

    return walk


def by_op_id(table: pl.DataFrame, key: str, tree: OpTree | None = None):
    """`lookup(frame)`: `frame` with the other columns of `table` (unique op ids in `key`) for its
    own `key`, in `frame`'s order (null where the id is not in `table`): a gather by position
    (`op_tree.positions_in`, or `tree`'s when `table` has the rows of the ops of `tree`), by offset
    when the ids are consecutive (a rank's `cpu_ops`). The walks up the op tree look up many times."""
    locate = tree.locate if tree is not None else positions_in(table[key])
    others = [c for c in table.columns if c != key]

    def lookup(frame: pl.DataFrame) -> pl.DataFrame:
        index = locate(frame[key])
        return frame.with_columns(table[c].gather(index) for c in others)

    return lookup


def _accepts(ops: pl.DataFrame, category: str | None, exclude_name_pattern: str | None,
             name_prefix: str | None = None) -> pl.Expr:
    condition = pl.lit(True)
    if name_prefix is not None:
        condition = condition & pl.lit(starts_with(ops["name"], name_prefix))
    if category is not None:
        condition = condition & (pl.col("category") == category)
    if exclude_name_pattern is not None:
        condition = condition & ~pl.lit(contains(ops["name"], exclude_name_pattern))
    return condition


def step_at(points: pl.DataFrame, trace: Trace) -> pl.DataFrame:
    """The ProfilerStep number whose CPU span holds each point's time (any thread) →
    `point_id, step`, in the order of `points`."""
    steps = trace.steps.select("rank", "step", "start_ns", "end_ns").sort("start_ns")
    found = (
        points.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"), "rank", "time_ns")
        .drop_nulls("time_ns")
        .sort("time_ns")
        .join_asof(
            steps, left_on="time_ns", right_on="start_ns", by="rank", strategy="backward", check_sortedness=False
        )
        .filter(pl.col("end_ns") > pl.col("time_ns"))
    )
    return points.select("point_id").with_columns(in_place(points.height, found["_row"], found["step"], "step"))


def cpu_context(points: pl.DataFrame, trace: Trace, tree: OpTree | None = None) -> pl.DataFrame:
    """For each point (`point_id, rank, pid, tid, time_ns`): the deepest `cpu_op` running on that
    thread, the innermost user annotation other than a ProfilerStep, and the step →
    `point_id, cpu_op, cpu_op_id, annotation, step`. `tree`: the op tree of `trace.cpu_ops` when
    the caller has it."""
    tree = tree or OpTree.of(trace.cpu_ops)
    with_name = by_op_id(trace.cpu_ops.select("op_id", "name"), "op_id", tree)
    op, annotation = (
        with_name(found)
        for found in enclosing_ops(points, trace.cpu_ops, [("cpu_op", None), ("user_annotation", r"^ProfilerStep#")],
                                   tree)
    )
    return pl.DataFrame({  # every part is in the order of `points`
        "point_id": points["point_id"], "cpu_op": op["name"], "cpu_op_id": op["op_id"],
        "annotation": annotation["name"], "step": step_at(points, trace)["step"],
    })
