"""What one chunk of events becomes (`ChunkTables`: one frame per table, without the `rank`
column), the table each event goes to (`route`), and why an event is skipped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from traceanalyze.load import classify
from traceanalyze.load.shapes import TEXT_COLUMNS, ArgumentTexts
from traceanalyze.model import (
    CPU_OPS_SCHEMA,
    FLOWS_SCHEMA,
    GPU_SCHEMA,
    PYTHON_SCHEMA,
    RUNTIME_SCHEMA,
    SYNC_SCHEMA,
)

def _without_rank(schema: pl.Schema) -> pl.Schema:
    return pl.Schema({k: v for k, v in schema.items() if k != "rank"})


# cpu_ops as the general path builds it: the shape arguments as JSON text, decoded per chunk
CPU_TEXT_SCHEMA = pl.Schema(
    {
        **{k: v for k, v in CPU_OPS_SCHEMA.items()
           if k not in ("rank", "op_id", "depth", "parent_id", "input_tensor_lists")},
        **{k: pl.String for k in TEXT_COLUMNS},
    }
)
CHUNK_SCHEMAS: dict[str, pl.Schema] = {
    "gpu": _without_rank(GPU_SCHEMA),
    "runtime": _without_rank(RUNTIME_SCHEMA),
    "cpu_ops": pl.Schema({k: v for k, v in CPU_OPS_SCHEMA.items() if k not in ("rank", "op_id", "depth", "parent_id")}),
    "flows": _without_rank(FLOWS_SCHEMA),
    "sync": _without_rank(SYNC_SCHEMA),
    "python": _without_rank(PYTHON_SCHEMA),
}

SKIP_NO_TS_OR_NAME = "event without a valid ts or name"
SKIP_NO_DUR = "event without a valid dur"
SKIP_BAD_DUR = "negative or absurd duration (< 0 or > 1 day)"
SKIP_MALFORMED = "malformed event (fields of the wrong type)"
SKIP_NO_PHASE = "event without a phase (ph) of a category the tables read"


@dataclass
class ChunkTables:
    """One chunk's events as frames, one per table, with the schemas of `CHUNK_SCHEMAS`, and what
    was skipped: reason → (count, index in the chunk of the first such event)."""

    frames: dict[str, pl.DataFrame]
    events: int
    skipped: dict[str, tuple[int, int]] = field(default_factory=dict)
    malformed: int = 0
    arguments: ArgumentTexts | None = None  # how the cpu_ops shape arguments were decoded


def merge_skipped(skipped: dict[str, tuple[int, int]], reason: str, count: int, first: int) -> None:
    """Add `count` events skipped for `reason` (the first at event `first`) to `skipped`."""
    if count:
        before, earliest = skipped.get(reason, (0, first))
        skipped[reason] = (before + count, min(earliest, first))


DROP, GPU, RUNTIME, CPU_OP, SYNC, PYTHON, FLOW = range(7)
TABLE_OF_CODE = {GPU: "gpu", RUNTIME: "runtime", CPU_OP: "cpu_ops", SYNC: "sync", PYTHON: "python", FLOW: "flows"}


def route(category: Any, include_python: bool) -> int:
    """The table a category's events go to, if their phase is right (`X`, or `s`/`f`/`t` for
    flows; see `PHASES`): the general path's rules."""
    if not isinstance(category, str):
        return DROP
    lowered = category.lower()
    if lowered in classify.FLOW_CATEGORIES:
        return FLOW
    if classify.gpu_category_kind(lowered) is not None:
        return GPU
    if classify.is_runtime_category(lowered):
        return RUNTIME
    if lowered in classify.CPU_OP_CATEGORIES:
        return CPU_OP
    if lowered in classify.SYNC_CATEGORIES:
        return SYNC
    if lowered in classify.PYTHON_CATEGORIES and include_python:
        return PYTHON
    return DROP


PHASES = {FLOW: frozenset({"s", "f", "t"})}  # every other table: "X"
X = frozenset({"X"})
