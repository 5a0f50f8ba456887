"""`model.latest_on_thread`: for each point, the op of its thread that started last at or before
it; the per-thread joins (few threads) and the join by thread (many, or a null thread id) against
a brute force."""

from __future__ import annotations

import random

import polars as pl
import pytest

from traceanalyze.model import PER_THREAD_MAX, latest_on_thread


def brute_force(points: list[tuple], ops: list[tuple]) -> dict[int, int | None]:
    found = {}
    for point_id, rank, pid, tid, time_ns in points:
        started = [(start, op_id) for op_id, r, p, t, start in ops
                   if None not in (rank, pid, tid) and (r, p, t) == (rank, pid, tid) and start <= time_ns]
        found[point_id] = max(started)[1] if started else None
    return found


@pytest.mark.parametrize("in_start_order", [False, True])  # in order: each thread's ops joined as they are
@pytest.mark.parametrize("point_threads", [1, 3, PER_THREAD_MAX, PER_THREAD_MAX + 5])
def test_latest_started_matches_a_brute_force(point_threads, in_start_order):
    rng = random.Random(point_threads)
    threads = [(0, 100 + k % 3, 7 + k) for k in range(PER_THREAD_MAX + 8)]
    starts = rng.sample(range(0, 100_000, 10),
                        2_000)  # distinct: which of two ops started at once is the walk's concern
    if in_start_order:
        starts.sort()
    ops = [(op_id, *rng.choice(threads), start) for op_id, start in enumerate(starts)]
    points = [(k, *rng.choice(threads[:point_threads]), rng.randrange(-100, 100_100)) for k in range(500)]
    points.append((500, 0, 999, 999, 50_000))  # a thread with no op
    if point_threads == 3:
        points.append((501, 0, None, 7, 50_000))  # a null thread id: the join by thread, which matches nothing
    frame = lambda rows, names: pl.DataFrame(rows, schema=names, orient="row")  # noqa: E731
    got = latest_on_thread(frame(points, ["point_id", "rank", "pid", "tid", "time_ns"]),
                           frame(ops, ["op_id", "rank", "pid", "tid", "start_ns"]), left_on="time_ns",
                           right_on="start_ns")
    assert sorted(got.columns) == sorted(["point_id", "rank", "pid", "tid", "time_ns", "op_id"])
    assert dict(got.select("point_id", "op_id").iter_rows()) == brute_force(points, ops)
