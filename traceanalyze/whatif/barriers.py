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
    arrived last at (0 elsewhere)."""
    out = np.zeros(len(rows.rank), np.int64)
    for collective in np.unique(rows.collective):
        members = np.flatnonzero(rows.collective == collective)
        if len(members) < 2:
            continue
        order = members[np.argsort(rows.arrival[members], kind="stable")]
        latest, next_latest = order[-1], order[-2]
        if rows.rank[latest] == rank:
            out[latest] = rows.arrival[latest] - rows.arrival[next_latest]
    return out


def _topological(rows: _Rows) -> list[int]:
    """Rows in an order where each comes after what its arrival reads: its rank's previous row, and
    every row of that row's collective (its end follows the collective's last arrival). Fewer rows
    than there are when the ranks met their collectives in orders that contradict each other."""
    size = len(rows.rank)
    previous = np.full(size, -1)
    same = np.flatnonzero(rows.rank[1:] == rows.rank[:-1]) + 1
    previous[same] = same - 1
    members: dict[int, list[int]] = {}
    for row, collective in enumerate(rows.collective.tolist()):
        members.setdefault(collective, []).append(row)
    waiting = np.zeros(size, np.int64)  # rows of the previous row's collective not yet placed (+1: the row)
    readers: dict[int, list[int]] = {}  # collective → rows whose previous row belongs to it
    for row in range(size):
        before = previous[row]
        if before >= 0:
            collective = int(rows.collective[before])
            waiting[row] = len(members[collective])
            readers.setdefault(collective, []).append(row)
    ready = [row for row in range(size) if waiting[row] == 0]
    placed: list[int] = []
    while ready:
        row = ready.pop()
        placed.append(row)
        for reader in readers.get(int(rows.collective[row]), ()):
            waiting[reader] -= 1
            if waiting[reader] == 0:
                ready.append(reader)
    return placed


def replayed_ends(matched: pl.DataFrame,
                  lateness: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per matched row (in `_rows` order): its rank, its recorded end and its replayed end, with
    `lateness` (per row) taken out of the work before each arrival; None when the ranks met their
    collectives in contradicting orders (no replay order exists)."""
    rows = _rows(matched)
    size = len(rows.rank)
    order = _topological(rows)
    if len(order) < size:
        return None
    late = np.zeros(size, np.int64) if lateness is None else lateness
    arrival = np.zeros(size, np.int64)
    last = rows.last_arrival.copy()  # the replayed last arrival per collective, once all its rows are placed
    latest = np.full(len(last), np.iinfo(np.int64).min)
    left = np.bincount(rows.collective, minlength=len(last))
    for row in order:
        before = row - 1 if row and rows.rank[row - 1] == rows.rank[row] else -1
        if before < 0:
            arrival[row] = rows.arrival[row] - late[row]
        else:
            recorded_gap = int(rows.arrival[row] - rows.end[before])
            if recorded_gap >= 0:  # the previous collective had ended: this one followed its end
                shift = rows.last_arrival[rows.collective[before]] - last[rows.collective[before]]
                arrival[row] = rows.end[before] - shift + max(recorded_gap - late[row], 0)
            else:  # issued while the previous one ran (another stream or group): it followed that arrival
                arrival[row] = arrival[before] + max(int(rows.arrival[row] - rows.arrival[before]) - late[row], 0)
        collective = rows.collective[row]
        latest[collective] = max(latest[collective], arrival[row])
        left[collective] -= 1
        if left[collective] == 0:
            last[collective] = latest[collective]
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
