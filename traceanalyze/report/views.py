"""What the renderers read that is computed from the model's frames: joins, the rows of one rank,
orders and totals (issue #33: renderers compute nothing). Pure functions over polars frames; the
report model (`report.model`) exposes each as a property or method of `RankReport` or `Report`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from traceanalyze.units import json_us


def named_idle(idle: pl.DataFrame, devices: pl.DataFrame) -> pl.DataFrame:
    """The idle figures per device with the device's `name` (null when the trace names none)."""
    keys = list(zip(devices["rank"].to_list(), devices["device"].to_list()))
    if len(set(keys)) < len(keys) or idle.height > NAMED_IN_PYTHON_MAX:  # a key twice: rows the join repeats
        return idle.join(devices.select("rank", "device", "name"), on=["rank", "device"], how="left")
    # a rank's few devices looked up in Python: a join cost more (0.7 ms a rank of a job's JSON)
    names = dict(zip(keys, devices["name"].to_list()))
    looked_up = [None if None in key else names.get(key)
                 for key in zip(idle["rank"].to_list(), idle["device"].to_list())]
    return idle.with_columns(pl.Series("name", looked_up, dtype=devices.schema["name"]))


NAMED_IN_PYTHON_MAX = 256  # idle rows (devices of a rank, or of a job's ranks)


def deepest_queue(queue: pl.DataFrame) -> dict[str, Any] | None:
    """The stream whose launch queue grew deepest (ties: the first stream); None without a queue."""
    if not queue.height:
        return None
    rows = list(queue.iter_rows(named=True))  # a rank's few streams: no query
    if any(row["max_depth"] is None for row in rows):
        return queue.sort("max_depth", descending=True, maintain_order=True).row(0, named=True)
    return max(rows, key=lambda row: row["max_depth"])  # the first of the deepest


@dataclass(frozen=True)
class Straggler:
    """The job's slowest rank: the wait it caused (`caused_wait_ns`, in `collectives_last`
    collectives it arrived last at), its straggling steps (`steps`, rows of `JobAnalysis.stragglers`)
    and the other ranks that made ranks wait (`others`: rank, caused_wait_ns)."""

    rank: int
    caused_wait_ns: int
    collectives_last: int
    steps: pl.DataFrame
    others: pl.DataFrame


def straggler(slowest: int | None, waits_caused: pl.DataFrame, stragglers: pl.DataFrame) -> Straggler | None:
    """The `Straggler` of a job whose slowest rank is `slowest` (None: no rank waited for another)."""
    if slowest is None:
        return None
    caused = waits_caused.filter(pl.col("rank") == slowest).row(0, named=True)
    others = waits_caused.filter((pl.col("rank") != slowest) & (pl.col("caused_wait_ns") > 0))
    return Straggler(rank=slowest, caused_wait_ns=caused["caused_wait_ns"], collectives_last=caused["collectives_last"],
                     steps=stragglers.filter(pl.col("slowest_rank") == slowest),
                     others=others.select("rank", "caused_wait_ns"))


STEP_PARTS = ("step_ns", "compute_ns", "comm_ns", "idle_ns", "wait_ns")


def step_medians(steps: pl.DataFrame, rank: int) -> tuple[int, dict[str, Any]]:
    """How many steps of a job's per-step split (`JobAnalysis.steps`) are `rank`'s, and the median
    of each of its parts over them (empty without steps)."""
    mine = steps.filter(pl.col("rank") == rank)
    return mine.height, ({part: mine[part].median() for part in STEP_PARTS} if mine.height else {})


def spread(column: pl.Series) -> tuple[Any, Any, Any]:
    """(median, min, max) of a column."""
    return column.median(), column.min(), column.max()


def findings_listed(found: pl.DataFrame, job_findings: pl.DataFrame, ranks: tuple[int, ...] | None,
                    whole: tuple[tuple[int, str], ...]) -> tuple[pl.DataFrame, int]:
    """The findings of `found` not in `whole` (the `(rank, id)` shown uncut already), limited to the
    job's and those of `ranks` (None: every rank); and how many others were left out."""
    if whole and found.height:
        found = found.filter(~pl.struct("rank", "id").is_in(
            pl.DataFrame(whole, schema={"rank": found.schema["rank"], "id": pl.String}, orient="row")
            .to_struct().implode()))
    if not found.height:
        return found, 0
    job = job_findings.select("rank", "id") if job_findings.height else None
    listed = pl.col("rank").is_in(ranks) if ranks is not None else pl.lit(True)
    if job is not None:
        listed = listed | pl.struct("rank", "id").is_in(job.to_struct().implode())
    return found.filter(listed), found.filter(~listed).height


def longest_gaps(ranks: list[tuple[pl.DataFrame, pl.DataFrame]], limit: int) -> list[tuple[dict[str, Any], int]]:
    """The `limit` longest idle gaps over the ranks' `(idle, gaps)` (each rank's longest first), each
    with its device window's start: ordered by duration in whole JSON microseconds, longest first
    (ties: rank order, then the rank's own order)."""
    rows = []
    for idle, gaps in ranks:
        starts = {(r["rank"], r["device"]): r["window_start_ns"] for r in idle.iter_rows(named=True)}
        rows += [(row, starts[(row["rank"], row["device"])]) for row in gaps.head(limit).iter_rows(named=True)]
    rows.sort(key=lambda pair: -json_us(pair[0]["duration_ns"]))  # type: ignore[operator]
    return rows[:limit]


def by_rank(frame: pl.DataFrame) -> dict[int, pl.DataFrame]:
    """rank → the rows of `frame` about it (its `rank` column), in their order."""
    return {key[0]: rows for key, rows in frame.partition_by("rank", maintain_order=True, as_dict=True).items()}


def metric_row(stats: pl.DataFrame, metric: str) -> dict[str, Any] | None:
    """The row of a latency statistics frame for `metric`, when it counted something."""
    stats = stats.filter(pl.col("metric") == metric)
    return stats.row(0, named=True) if stats.height and stats["count"][0] else None


def ranks_and_steps(steps: pl.DataFrame) -> tuple[list[int], list[int]]:
    """The ranks and the step numbers of a job's per-step split, each ascending."""
    return sorted(steps["rank"].unique().to_list()), sorted(steps["step"].unique().to_list())


def collective_lanes(matched: pl.DataFrame) -> tuple[tuple[tuple[int, pl.DataFrame], ...], tuple[int, int]]:
    """Per rank (ascending), its matched collectives as timeline intervals (start_ns, end_ns,
    category, label): the wait (arrival → last arrival) then the transfer (→ end), empty ones
    dropped, by start; and the window from the first arrival to the last end."""
    lanes = []
    for rank in sorted(matched["rank"].unique().to_list()):
        mine = matched.filter(pl.col("rank") == rank)
        label = pl.format("{} #{}: ", pl.col("collective"), pl.col("seq"))
        waits = mine.filter(pl.col("wait_ns") > 0).select(
            pl.col("arrival_ns").alias("start_ns"), (pl.col("arrival_ns") + pl.col("wait_ns")).alias("end_ns"),
            pl.lit("wait").alias("category"),
            pl.concat_str(label, pl.lit("waited "), (pl.col("wait_ns") / 1000).round(1).cast(pl.String), pl.lit(" µs"))
            .alias("label"))
        transfers = mine.select(
            (pl.col("arrival_ns") + pl.col("wait_ns")).alias("start_ns"), pl.col("end_ns"),
            pl.lit("transfer").alias("category"),
            pl.concat_str(label, pl.lit("transfer "), (pl.col("transfer_ns") / 1000).round(1).cast(pl.String),
                          pl.lit(" µs"))
            .alias("label"))
        lanes.append((rank, pl.concat([waits, transfers]).filter(pl.col("end_ns") > pl.col("start_ns"))
                      .sort("start_ns")))
    window = (int(matched["arrival_ns"].min()), int(matched["end_ns"].max())) if matched.height else (0, 0)
    return tuple(lanes), window


@dataclass(frozen=True)
class Tf32Figures:
    """FP32 matmul-like kernels against the TF32 tensor-core roof: their time, the TF32 peak and
    the share of that roof they reach (docs/roofline.md)."""

    total_ns: int
    peak_flops_per_s: float
    share: float


@dataclass(frozen=True)
class RoofNotes:
    """What the footnotes of a kernel table say about its rows: a kernel or a copy above 100% of
    its roof, the TF32 figures, and each reason a row has no roof (sorted)."""

    kernel_above_roof: bool
    copy_above_roof: bool
    tf32: Tf32Figures | None
    no_roof_reasons: tuple[str, ...]


def tf32_figures(table: pl.DataFrame) -> Tf32Figures | None:
    """The `Tf32Figures` of the FP32 matmul-like rows of `table` (`tf32_peak_flops_per_s` set)."""
    if "tf32_peak_flops_per_s" not in table.columns:
        return None
    fp32 = pl.col("tf32_peak_flops_per_s").is_not_null() & (pl.col("total_ns") > 0)
    rows, at_tf32, total_ns, peak = table.select(  # one query
        fp32.sum(), (pl.col("flops") / pl.col("tf32_peak_flops_per_s")).filter(fp32).sum().alias("at"),
        pl.col("total_ns").filter(fp32).sum().alias("total"),
        pl.col("tf32_peak_flops_per_s").filter(fp32).max().alias("peak")).row(0)
    if not rows:
        return None
    return Tf32Figures(total_ns=total_ns, peak_flops_per_s=peak, share=at_tf32 * 1e9 / total_ns)


def roof_notes(table: pl.DataFrame) -> RoofNotes:
    """The `RoofNotes` of the kernel rows in `table`."""
    above = pl.col("pct_of_roof").fill_null(0) > 1
    copy = pl.col("bound").cast(pl.String) == "memcpy"
    kernel, copied, reasons = table.select(  # one query
        (above & ~copy).any().alias("kernel"), (above & copy).any().alias("copy"),
        pl.col("no_roof_reason").drop_nulls().unique().sort().implode().alias("reasons")).row(0)
    return RoofNotes(kernel_above_roof=bool(kernel), copy_above_roof=bool(copied), tf32=tf32_figures(table),
                     no_roof_reasons=tuple(reasons))
