"""Helpers the kernel rules share: rates and kernel names for sentences, the time of work at a roof,
and the gain of bringing rows to a time."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.findings.inputs import short_kernel_name


def rate(value: float) -> str:
    """FLOP/s in TFLOP/s: 19.5, 156, 1979 (no exponent above 999)."""
    tera = value / 1e12
    return f"{tera:.3g} TFLOP/s" if tera < 999.5 else f"{tera:.0f} TFLOP/s"


def top_kernel(rows: pl.DataFrame) -> str:
    """The kernel name with the most time in `rows`, for a sentence."""
    names = (rows.group_by("name").agg(pl.col("duration_ns").sum())
             .sort(["duration_ns", "name"], descending=[True, False]))
    return short_kernel_name(names["name"][0])


def time_at(peak_flops: pl.Expr | float) -> pl.Expr:
    """Per row: the time the work would take at `peak_flops` and the memory roof (the larger), ns."""
    flops_time = pl.col("flops") / peak_flops * 1e9
    bytes_time = pl.col("bytes") / pl.col("peak_bytes_per_s") * 1e9
    return pl.max_horizontal(flops_time, bytes_time.fill_null(0))


def gain_to(rows: pl.DataFrame, ideal: pl.Expr) -> float:
    """Σ max(0, duration − ideal) over `rows`."""
    return float(rows.select((pl.col("duration_ns") - ideal).clip(lower_bound=0).sum()).item())


def weighted_fraction(rows: pl.DataFrame, column: str = "pct_of_roof") -> float:
    """`column` averaged over `rows` weighted by duration."""
    total = float(rows["duration_ns"].sum())
    return float((rows[column].fill_null(0) * rows["duration_ns"]).sum()) / total if total else 0.0
