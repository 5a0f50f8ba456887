"""The CPU op tree (`cpu_ops`' `parent_id`, from the loader's nesting) as arrays of row positions,
for walks up the tree that visit every op once per walk instead of joining frames per level."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from traceanalyze.native import int64_array


def id_positions(op_ids: pl.Series, ids: pl.Series) -> pl.Series:
    """The row position in `op_ids` (a `cpu_ops` column) of each of `ids`, null where it is not
    there. A rank's ops have consecutive ids in order: then a subtraction, else a join."""
    first = op_ids.min() if op_ids.len() else 0
    if op_ids.null_count() == 0 and bool((op_ids.diff().drop_nulls() == 1).all()):
        inside = (ids >= first) & (ids - first < op_ids.len())
        return pl.select(pl.when(inside).then(ids - first)).to_series().cast(pl.Int64)
    position = op_ids.to_frame("op_id").with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_position"))
    return ids.to_frame("op_id").join(position, on="op_id", how="left", maintain_order="left")["_position"]


@dataclass(frozen=True)
class OpTree:
    """`ids[p]` is the op id at position `p`; `parent[p]` its parent's position (-1 at a root or
    when the parent is not among the ops). numpy arrays."""

    ids: Any
    parent: Any

    @classmethod
    def of(cls, cpu_ops: pl.DataFrame) -> "OpTree":
        return cls(int64_array(cpu_ops["op_id"]), int64_array(id_positions(cpu_ops["op_id"], cpu_ops["parent_id"]).fill_null(-1)))

    def positions(self, ids: pl.Series) -> Any:
        """The positions of the ops `ids` that are in the tree (nulls and unknown ids left out)."""
        found = id_positions(pl.Series(self.ids), ids.drop_nulls())
        return int64_array(found.drop_nulls())

    def ancestors(self, start: Any) -> Any:
        """Every op above `start` (positions; the ops themselves only when above another one),
        sorted: a level at a time, each op visited once."""
        import numpy as np

        seen = np.zeros(len(self.ids), dtype=bool)
        frontier = self._parents_of(start)
        while frontier.size:  # never longer than `start`: one parent each (repeats are not removed)
            frontier = frontier[~seen[frontier]]
            seen[frontier] = True
            frontier = self._parents_of(frontier)
        return np.flatnonzero(seen)

    def nearest(self, start: Any, accepted: Any) -> Any:
        """For each position of `start` (-1: none), the first op from it up the tree (itself
        included) where `accepted` (a bool array over positions) holds; -1 where none does."""
        import numpy as np

        found = np.full(len(start), -1, dtype=np.int64)
        at = np.asarray(start, dtype=np.int64).copy()
        walking = np.flatnonzero(at >= 0)
        for _ in range(len(self.ids) + 1):  # a chain is never longer than the tree (no cycle can loop)
            if not walking.size:
                break
            here = at[walking]
            hit = accepted[here]
            found[walking[hit]] = here[hit]
            walking = walking[~hit]
            at[walking] = self.parent[at[walking]]
            walking = walking[at[walking] >= 0]
        return found

    def _parents_of(self, positions: Any) -> Any:
        parents = self.parent[positions]
        return parents[parents >= 0]
