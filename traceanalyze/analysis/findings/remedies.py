"""Remedies built from roofline rows (the contract with the replay, `finding.Remedy`), and the
claims that keep one kernel's recoverable time in one kernel finding (`kernel_claims`)."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.findings.finding import Remedy

OP_KEY = ("device", "stream", "start_ns")  # a GPU op, as Remedy.gpu_ops names it


def op_keys(rows: pl.DataFrame) -> tuple[tuple[int, int, int], ...]:
    """`(device, stream, start_ns)` of each row, in the order of `rows`."""
    if rows.is_empty():
        return ()
    return tuple((int(d), int(s), int(t)) for d, s, t in rows.select(*OP_KEY).iter_rows())


def retime(rows: pl.DataFrame, durations: pl.Expr, assumption: str) -> Remedy:
    """Each op of `rows` takes `durations` (an expression over `rows`, ns; never longer than now)."""
    new = rows.select(pl.min_horizontal(durations, pl.col("duration_ns")).clip(lower_bound=0)).to_series()
    return Remedy(kind="retime", gpu_ops=op_keys(rows), durations_ns=tuple(float(v) for v in new.to_list()),
                  assumption=assumption)


def merge(rows: pl.DataFrame, duration_ns: float, assumption: str) -> Remedy:
    """The ops of `rows` (one chain) become one op of `duration_ns` where the first one ran."""
    ordered = rows.sort("start_ns")
    return Remedy(kind="merge", gpu_ops=op_keys(ordered), durations_ns=(float(duration_ns),), assumption=assumption)


def claimed_ops(remedies: tuple[Remedy, ...]) -> set[tuple[int, int, int]]:
    """The GPU ops the remedies change."""
    return {op for remedy in remedies for op in remedy.gpu_ops}
