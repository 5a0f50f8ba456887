"""Potential stragglers: HTA's late-start rule (hta/analyzers/straggler.py) over the events
`rules.events` keeps, and ours (the job analysis: the rank whose late arrivals cost the others the
most wait).

HTA's rule: per step, the communication kernels (names starting `ncclKernel`) at least 1% of the
mean step long; the last of each (rank, stream, step, name); the (stream, name) whose duration
varies most across ranks; the ranks that start it latest are the stragglers. Names of current NCCL
(`ncclDevKernel_…`) do not start `ncclKernel`: HTA then finds no candidate and raises; ours works
on any collective."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl

STEP_NUMBER = re.compile(r"ProfilerStep\s*#\s*(\d+)")


def with_iteration(frame: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """HTA's `iteration` of each event: a CPU-side event's is the step whose [start, end) holds
    its start (the last such step; -1 for none), a GPU op's that of the CPU event of its
    correlation (-1 for none). `steps`: (`number`, `start_ns`, `end_ns`), HTA's times."""
    bounds = steps.select("number", "start_ns", "end_ns").rows()
    starts = frame["start_ns"].to_numpy()
    iteration = np.full(len(starts), -1, dtype=np.int64)
    for number, start, end in bounds:
        iteration[(starts >= start) & (starts < end)] = number
    frame = frame.with_columns(pl.Series("iteration", iteration))
    cpu = frame.filter(pl.col("stream") == -1).filter(pl.col("correlation").is_not_null()).group_by("correlation").agg(
        pl.col("iteration").last().alias("launch_iteration"))
    frame = frame.join(cpu, on="correlation", how="left", maintain_order="left")
    return frame.with_columns(
        pl.when(pl.col("stream") > 0).then(pl.col("launch_iteration").fill_null(-1))
        .when(pl.col("stream") < 0).then(pl.col("iteration")).otherwise(None).alias("iteration")
    ).drop("launch_iteration")


def hta_stragglers(frames: dict[int, pl.DataFrame], steps: list[int], num_candidates: int) -> list[int]:
    """HTA's `find_stragglers_with_late_start_comm_kernels` over every rank's events (with
    `iteration`), for the step numbers `steps`; the ranks found most often, at most
    `num_candidates`. Raises ValueError where HTA fails: no long communication kernel, one rank."""
    df = pl.concat([f.with_columns(pl.lit(r, pl.Int64).alias("rank")) for r, f in frames.items()])
    df = df.filter(pl.col("iteration").is_in(steps))
    if df.is_empty():
        raise ValueError("no event in the chosen profiler steps: HTA's straggler rule has nothing to rank")
    n_iters = df["iteration"].n_unique()
    t_min = df["start_ns"].min()
    mean_iter = (df["end_ns"].max() - t_min) / n_iters
    long_comm = df.filter((pl.col("stream") > 0) & (pl.col("iteration") > 0)
                          & ((pl.col("end_ns") - pl.col("start_ns")) >= mean_iter * 0.01)
                          & pl.col("name").str.starts_with("ncclKernel"))
    if long_comm.is_empty():
        raise ValueError("no communication kernel named ncclKernel* lasts 1% of a step: HTA's straggler "
                         "rule has nothing to rank (current NCCL names its kernels ncclDevKernel_*)")
    last = long_comm.group_by("rank", "stream", "iteration", "name", maintain_order=True).last().with_columns(
        ((pl.col("start_ns") - t_min) / mean_iter).alias("metric"),
        ((pl.col("end_ns") - pl.col("start_ns")) / mean_iter).alias("duration"))
    spread = last.group_by("stream", "iteration", "name").agg(pl.col("duration").std())
    spread = spread.group_by("stream", "name").agg(pl.col("duration").mean()).sort("stream", "name")
    if spread["duration"].drop_nulls().is_empty():  # one rank: no spread across ranks (HTA: idxmax of NaN)
        raise ValueError("one rank per kernel: HTA's straggler rule needs the spread across ranks")
    best = spread.filter(pl.col("duration") == pl.col("duration").max()).row(0, named=True)
    candidates = last.filter((pl.col("stream") == best["stream"]) & (pl.col("name") == best["name"]))
    k = max(num_candidates, 1)
    counts: dict[int, int] = {}
    for _, group in candidates.group_by("iteration", maintain_order=True):
        values = sorted(group["metric"].to_list(), reverse=True)
        threshold = values[min(k, len(values)) - 1]
        for rank, metric in group.select("rank", "metric").rows():
            counts[rank] = counts.get(rank, 0) + (1 if metric >= threshold else 0)
    order = sorted(counts, key=lambda rank: -counts[rank])  # stable: equal counts in rank order
    return order[:k]


def our_stragglers(stragglers: pl.DataFrame, num_candidates: int) -> list[int]:
    """Ours: the ranks the job analysis names slowest in the most steps (then by the wait they
    cost the others), at most `num_candidates`."""
    if stragglers.is_empty():
        return []
    ranked = stragglers.group_by(pl.col("slowest_rank").cast(pl.Int64).alias("rank")).agg(
        pl.len().alias("steps"), pl.col("others_wait_ns").sum()).sort(
        "steps", "others_wait_ns", "rank", descending=[True, True, False])
    return ranked["rank"].head(max(num_candidates, 1)).to_list()


class SymbolTable:
    """What HTA's `TraceSymbolTable` gives a straggler function: the names and categories the
    frame's `name` and `cat` columns hold as integer ids (`get_sym_table()[id]` is the text,
    `get_sym_id_map()[text]` the id)."""

    def __init__(self, symbols: list[str]) -> None:
        self.sym_table = list(symbols)
        self.sym_index = {symbol: number for number, symbol in enumerate(self.sym_table)}

    def get_sym_table(self) -> list[str]:
        return self.sym_table

    def get_sym_id_map(self) -> dict[str, int]:
        return self.sym_index


# HTA's `cat` of each event `rules.events` keeps (by `source`, and a GPU op's `kind`)
HTA_CATEGORIES = {"runtime": "cuda_runtime", "sync": "cuda_sync", "cpu_op": "cpu_op", "kernel": "kernel",
                  "communication": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}


def hta_frame(frames: dict[int, pl.DataFrame], steps: list[int], zero_ns: int) -> tuple[Any, SymbolTable]:
    """The frame HTA hands a `straggler_identification_impl`: every rank's events (with
    `iteration`) in the chosen steps, HTA's columns in HTA's order: `rank`, `idx`, `cat`, `name`
    (symbol ids), `pid`, `tid`, `ts`, `dur` (µs from `zero_ns`), `stream`, `correlation`,
    `iteration`, `end`;
    and the symbol table of its ids. The events are those `rules.events` keeps (GPU ops, launch
    calls, sync events), not every CPU op."""
    import pandas as pd

    parts = []
    for rank, frame in frames.items():
        category = pl.when(pl.col("source") == "gpu").then(pl.col("kind")).otherwise(pl.col("source"))
        parts.append(frame.with_row_index("idx").select(
            pl.lit(rank, pl.Int64).alias("rank"), pl.col("idx").cast(pl.Int64),
            category.replace_strict(HTA_CATEGORIES, default="cpu_op").alias("cat"), "name",
            pl.col("device").fill_null(-1).alias("pid"), pl.col("stream").alias("tid"),
            ((pl.col("start_ns") - zero_ns) / 1000).alias("ts"),
            ((pl.col("end_ns") - pl.col("start_ns")) / 1000).alias("dur"), "stream",
            pl.col("correlation").fill_null(-1), "iteration", ((pl.col("end_ns") - zero_ns) / 1000).alias("end")))
    table = pl.concat(parts).filter(pl.col("iteration").is_in(steps))
    symbols = SymbolTable(sorted(set(table["cat"].unique().to_list()) | set(table["name"].unique().to_list())))
    table = table.with_columns(pl.col("cat", "name").replace_strict(symbols.sym_index, return_dtype=pl.Int64))
    columns = {name: table[name].to_numpy() for name in table.columns}
    return pd.DataFrame(columns, columns=table.columns), symbols
