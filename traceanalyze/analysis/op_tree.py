"""The CPU op tree (`cpu_ops`' `parent_id`, from the loader's nesting) as series of row positions,
for walks up the tree that visit every op once per walk instead of joining frames per level.
Gathers and scatters on polars Series (no numpy import for a small trace); many walks at once in C."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from traceanalyze.native import compiled, int64_array, numpy_for_threads

NATIVE_MIN_STARTS = 20_000  # fewer starts walk as fast in polars, without importing numpy


def positions_in(op_ids: pl.Series) -> Callable[[pl.Series], pl.Series]:
    """`locate(ids)`: the row position in `op_ids` (a `cpu_ops` column of unique ids) of each of
    `ids`, in their order, null where it is not there. A rank's ops have consecutive ids in order:
    then a subtraction, else a join (which of the two is decided once, here)."""
    first = op_ids.min() if op_ids.len() else 0
    if op_ids.null_count() == 0 and bool((op_ids.diff().drop_nulls() == 1).all()):
        def by_offset(ids: pl.Series) -> pl.Series:
            inside = (ids >= first) & (ids - first < op_ids.len())
            return pl.select(pl.when(inside).then(ids - first)).to_series().cast(pl.Int64)
        return by_offset
    position = op_ids.to_frame("op_id").with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_position"))

    def by_join(ids: pl.Series) -> pl.Series:
        return ids.to_frame("op_id").join(position, on="op_id", how="left", maintain_order="left")["_position"]
    return by_join


@dataclass(frozen=True)
class OpTree:
    """`ids[p]` is the op id at position `p`; `parent[p]` its parent's position (-1 at a root or
    when the parent is not among the ops). Int64 series; `locate` is `positions_in(ids)`."""

    ids: pl.Series
    parent: pl.Series
    locate: Callable[[pl.Series], pl.Series]

    @classmethod
    def of(cls, cpu_ops: pl.DataFrame) -> "OpTree":
        ids = cpu_ops["op_id"].cast(pl.Int64)
        locate = positions_in(ids)
        return cls(ids, locate(cpu_ops["parent_id"].cast(pl.Int64)).fill_null(-1), locate)

    def positions(self, ids: pl.Series) -> pl.Series:
        """The positions of the ops `ids` that are in the tree (nulls and unknown ids left out)."""
        return self.locate(ids.cast(pl.Int64).drop_nulls()).drop_nulls()

    def mask(self, positions: pl.Series) -> pl.Series:
        """A boolean series over the tree's positions, true at `positions`."""
        return pl.repeat(False, self.ids.len(), eager=True).scatter(positions, True)

    def ancestors(self, start: pl.Series) -> pl.Series:
        """Every op above `start` (positions; the ops themselves only when above another one),
        sorted: a level at a time, each op visited once."""
        seen = self.mask(pl.Series([], dtype=pl.Int64))
        frontier = self._parents_of(start)
        while frontier.len():  # never longer than `start`: one parent each (repeats are not removed)
            frontier = frontier.filter(~seen.gather(frontier))
            seen = seen.scatter(frontier, True)
            frontier = self._parents_of(frontier)
        return seen.arg_true().cast(pl.Int64)

    def nearest(self, start: pl.Series, accepted: pl.Series) -> pl.Series:
        """For each position of `start` (-1: none), the first op from it up the tree (itself
        included) where `accepted` (a boolean series over positions) holds; -1 where none does
        (and where `accepted` is null on the way). Many starts walk in C, each up its own chain
        (`_native.enclose` with every op ending after every point)."""
        native = compiled()
        if native is not None and start.len() >= NATIVE_MIN_STARTS:
            return self._nearest_native(native, start, accepted)
        found = pl.repeat(-1, start.len(), dtype=pl.Int64, eager=True)
        at = start.cast(pl.Int64).clone()
        walking = (at >= 0).arg_true().cast(pl.Int64)
        for _ in range(self.ids.len() + 1):  # a chain is never longer than the tree (no cycle can loop)
            if not walking.len():
                break
            here = at.gather(walking)
            hit = accepted.gather(here)
            found = found.scatter(walking.filter(hit), here.filter(hit))
            walking = walking.filter(~hit)
            at = at.scatter(walking, self.parent.gather(at.gather(walking)))
            walking = walking.filter(at.gather(walking) >= 0)
        return found

    def _nearest_native(self, native, start: pl.Series, accepted: pl.Series) -> pl.Series:
        np = numpy_for_threads()

        # accepted: 1, not: 0, unknown (null): 2, which ends the walk as the loop above does
        ok = accepted.cast(pl.UInt8).fill_null(2).to_numpy()
        starts = int64_array(start.fill_null(-1))
        points = np.full(starts.size, np.iinfo(np.int64).min, dtype=np.int64)  # before every op's end
        found = native.enclose(starts, points, np.zeros(self.ids.len(), dtype=np.int64), int64_array(self.parent),
                               np.ascontiguousarray(ok, dtype=np.uint8))
        return pl.Series(np.frombuffer(found, dtype=np.int64))

    def _parents_of(self, positions: pl.Series) -> pl.Series:
        parents = self.parent.gather(positions)
        return parents.filter(parents >= 0)
