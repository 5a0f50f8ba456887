"""A job replayed at its collectives: what the other ranks would save if a straggler were not late
(docs/whatif.md, "A straggler's saving").

A folder's ranks are analysed one at a time (the map of a job), so the reduce has no rank's graph:
it has every rank's arrival at every matched collective and the collective's end on that rank, on
the aligned clock (`analysis.collectives.MATCHED_SCHEMA`). Those rows are the job's graph at the
collectives: on each rank, a collective's arrival follows the end of the rank's previous
collective by the recorded interval (the rank's work in between), or, where it was issued while
the previous one still ran (another stream or process group), that one's arrival; a collective
ends on each rank a fixed time (its recorded transfer) after its last arrival. The unmodified
replay gives back every recorded time. The straggler's remedy (`Remedy` kind `rank_delay`): at
each collective it arrived last at, it arrives when the next-latest rank did (its lateness there,
`last − second last arrival`, is taken out of the work before it, no further than to the
constraint before it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

READ = ("process_group", "seq", "rank", "arrival_ns", "end_ns", "last_arrival_ns")


@dataclass(frozen=True)
class _Rows:
    """The matched rows in each rank's arrival order, with their collective (`collective`, 0..n)."""

    rank: np.ndarray
    collective: np.ndarray
    arrival: np.ndarray
    end: np.ndarray
    last_arrival: np.ndarray  # per collective


def _rows(matched: pl.DataFrame) -> _Rows:
    ordered = (
        matched.select(READ)
        .with_columns(pl.struct("process_group", "seq").rank("dense").cast(pl.Int64).sub(1).alias("collective"))
        .sort("rank", "arrival_ns", "collective")
    )
    count = int(ordered["collective"].max()) + 1
    last = np.zeros(count, np.int64)
    last[ordered["collective"].to_numpy()] = ordered["last_arrival_ns"].to_numpy()
    return _Rows(ordered["rank"].to_numpy(), ordered["collective"].to_numpy(), ordered["arrival_ns"].to_numpy(),
                 ordered["end_ns"].to_numpy(), last)


def _lateness(rows: _Rows, rank: int) -> np.ndarray:
    """Per row: how much later than the next-latest rank `rank` arrived, at the collectives it
    arrived last at (0 elsewhere). Ties in arrival: the later row (higher rank) counts as later."""
    out = np.zeros(len(rows.rank), np.int64)
    if len(out) < 2:
        return out
    order = np.lexsort((rows.arrival, rows.collective))  # by collective, then arrival (stable)
    collective = rows.collective[order]
    last = np.flatnonzero(np.append(collective[1:] != collective[:-1], True))  # each collective's latest
    first = np.append(0, last[:-1] + 1)
    shared = last > first  # collectives of two rows or more
    latest, next_latest = order[last[shared]], order[last[shared] - 1]
    mine = rows.rank[latest] == rank
    out[latest[mine]] = rows.arrival[latest[mine]] - rows.arrival[next_latest[mine]]
    return out


def _previous(rows: _Rows) -> np.ndarray:
    """Per row: the row before it on its rank (-1 for a rank's first)."""
    previous = np.full(len(rows.rank), -1)
    same = np.flatnonzero(rows.rank[1:] == rows.rank[:-1]) + 1
    previous[same] = same - 1
    return previous


def _collective_order(rows: _Rows, previous: np.ndarray) -> list[int] | None:
    """The collectives in an order where each comes after those its rows follow on their ranks
    (the rows of a collective are replayed together, after every row they read); None when the
    ranks met their collectives in orders that contradict each other (no such order)."""
    count = len(rows.last_arrival)
    follows = previous >= 0
    pairs = np.unique(rows.collective[previous[follows]] * count + rows.collective[follows])
    source, target = pairs // count, pairs % count
    waiting = np.bincount(target, minlength=count)
    starts = np.searchsorted(source, np.arange(count + 1))  # `pairs` is sorted by source
    ready = np.flatnonzero(waiting == 0).tolist()
    order: list[int] = []
    while ready:
        collective = ready.pop()
        order.append(collective)
        for after in target[starts[collective]:starts[collective + 1]].tolist():
            waiting[after] -= 1
            if waiting[after] == 0:
                ready.append(after)
    return order if len(order) == count else None


def replayed_ends(matched: pl.DataFrame,
                  lateness: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per matched row (in `_rows` order): its rank, its recorded end and its replayed end, with
    `lateness` (per row) taken out of the work before each arrival; None when the ranks met their
    collectives in contradicting orders (no replay order exists). One collective at a time, its
    rows together."""
    rows = _rows(matched)
    previous = _previous(rows)
    order = _collective_order(rows, previous)
    if order is None:
        return None
    late = np.zeros(len(rows.rank), np.int64) if lateness is None else lateness
    arrival = np.zeros(len(rows.rank), np.int64)
    last = rows.last_arrival.copy()  # the replayed last arrival per collective
    by_collective = np.argsort(rows.collective, kind="stable")
    bounds = np.searchsorted(rows.collective[by_collective], np.arange(len(last) + 1))
    for collective in order:
        members = by_collective[bounds[collective]:bounds[collective + 1]]
        before = previous[members]
        times = rows.arrival[members] - late[members]  # a rank's first collective: its own time, less its lead
        follows = before >= 0
        row, prior = members[follows], before[follows]
        gap = rows.arrival[row] - rows.end[prior]
        # the previous collective had ended: this one followed its (replayed) end by the work between
        prior_end = rows.end[prior] - (rows.last_arrival[rows.collective[prior]] - last[rows.collective[prior]])
        after_end = prior_end + np.maximum(gap - late[row], 0)
        # issued while the previous one ran (another stream or group): it followed that arrival
        after_arrival = arrival[prior] + np.maximum(rows.arrival[row] - rows.arrival[prior] - late[row], 0)
        times[follows] = np.where(gap >= 0, after_end, after_arrival)
        arrival[members] = times
        last[collective] = times.max()
    replayed = rows.end - (rows.last_arrival[rows.collective] - last[rows.collective])
    return rows.rank, rows.end, replayed


def straggler_saving(matched: pl.DataFrame, rank: int) -> int | None:
    """How much earlier each other rank's last collective would end if `rank` arrived at each
    collective it arrived last at when the next-latest rank did, summed over those ranks (ns: the
    time the others save, as its gain is the wait they had; its own run is its own findings'); None
    without collectives it arrived last at."""
    if matched.is_empty():
        return None
    rows = _rows(matched)
    lateness = _lateness(rows, rank)
    if not lateness.any():
        return None
    ends = replayed_ends(matched, lateness)
    if ends is None:
        return None
    ranks, recorded, replayed = ends
    others = pl.DataFrame({"rank": ranks, "recorded": recorded, "replayed": replayed}).filter(pl.col("rank") != rank)
    per_rank = others.group_by("rank").max()
    return int((per_rank["recorded"] - per_rank["replayed"]).sum())


def with_straggler_saving(found: pl.DataFrame, matched: pl.DataFrame) -> pl.DataFrame:
    """The job's findings (FINDINGS_SCHEMA) with the `straggler` finding's predicted saving
    (`straggler_saving` of the rank it names; its bound the larger of that and its gain) and the
    assumption in its evidence; the others as they are."""
    if found.is_empty() or "straggler" not in found["id"].to_list():
        return found
    rows = []
    for row in found.iter_rows(named=True):
        saving = straggler_saving(matched, row["rank"]) if row["id"] == "straggler" else None
        if saving is not None:
            row = {**row, "saving_ns": float(saving), "bound_ns": max(float(saving), row["gain_ns"] or 0.0),
                   "evidence": f"{row['evidence']}; predicted saving: how much earlier the other ranks' last "
                               f"collectives end, summed, if rank {row['rank']} arrives at each of those "
                               "collectives with the next-latest rank (the job replayed at its collectives)"}
        rows.append(row)
    return pl.DataFrame(rows, schema=found.schema)
