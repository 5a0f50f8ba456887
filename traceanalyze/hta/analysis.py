"""`TraceAnalysis`: HolisticTraceAnalysis 0.5.0's API on our loader and tables.

A notebook written for HTA runs after one changed import::

    from traceanalyze.hta import TraceAnalysis
    analyzer = TraceAnalysis(trace_dir="traces/")
    analyzer.get_temporal_breakdown(visualize=False)

Each method has HTA's name, arguments and return type (pandas frames with HTA's columns, dicts by
rank). By default the numbers are ours: ns exact, GPU ops only, every step kept (docs/hta.md says,
per method, how they differ from HTA's). `hta_rounding=True` applies HTA's rules (its µs
rounding, its last-step rule, its busy events; `rules.py`) so that the figures are HTA's own.
`.report()` gives our `Report` of the same traces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from traceanalyze.hta import (
    aten,
    breakdown,
    frames,
    launches,
    memory,
    rules,
    stragglers,
)
from traceanalyze.hta.missing import MISSING, missing
from traceanalyze.model import Trace

DEFAULT_TRACE_DIR = "/tmp/trace"  # HTA's default (hta/configs/default_values.py)


class TraceAnalysis:
    """HTA's `TraceAnalysis` on our engine.

    Parameters
    ----------
    trace_files : dict of rank → file (relative to `trace_dir` unless absolute), as HTA's.
    trace_dir : a folder of rank traces (or one trace file).
    include_last_profiler_step : HTA's switch; with `hta_rounding`, its effect (every CPU-side
        event kept, GPU work without a launch still dropped); ignored otherwise (we drop nothing).
    hta_rounding : reproduce HTA's figures exactly (its rules, docs/hta.md) instead of ours.
    cache : the cache of loaded traces (`traceanalyze.load_trace`'s).

    Examples
    --------
    >>> from traceanalyze.hta import TraceAnalysis
    >>> analyzer = TraceAnalysis(trace_dir="fixtures/synthetic_training.json.gz")  # doctest: +SKIP
    >>> analyzer.get_temporal_breakdown(visualize=False)  # doctest: +SKIP
    """

    def __init__(self, trace_files: dict[int, str] | None = None, trace_dir: str = DEFAULT_TRACE_DIR,
                 include_last_profiler_step: bool | None = False, *, hta_rounding: bool = False,
                 cache: bool = True) -> None:
        self.trace = _load(trace_files, trace_dir, cache)
        self.trace_dir = str(trace_dir)
        self.trace_files = trace_files
        self.hta_rounding = hta_rounding
        self.rules = rules.HtaRules(include_last_step=bool(include_last_profiler_step)) if hta_rounding else rules.OURS
        self._events: dict[int, pl.DataFrame] | None = None

    def __getattr__(self, name: str) -> Any:
        if name in MISSING:
            return missing(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- what the methods read ------------------------------------------------------------------

    @property
    def events(self) -> dict[int, pl.DataFrame]:
        """Per rank, the events the methods read (`rules.EVENTS_SCHEMA`, ns), under `self.rules`."""
        if self._events is None:
            self._events = rules.events(self.trace, self.rules)
        return self._events

    def _ranks(self, ranks: list[int] | None) -> list[int]:
        """HTA's `ranks` argument: None or [] is the first rank (HTA: rank 0, which a trace of rank
        3 alone lacks); a rank the traces lack raises ValueError, as HTA's."""
        chosen = list(ranks) if ranks else [self.trace.ranks[0]]
        unknown = [r for r in chosen if r not in self.events]
        if unknown:
            raise ValueError(f"rank(s) {unknown} not in the traces (ranks {sorted(self.events)})")
        return chosen

    # --- breakdowns -----------------------------------------------------------------------------

    def get_temporal_breakdown(self, visualize: bool = True) -> Any:
        """Per rank: idle, compute and non-compute time (µs) in the window of the rank's GPU work,
        and their shares (%, 2 decimals). Columns `rank`, `idle_time(us)`, `compute_time(us)`,
        `non_compute_time(us)`, `kernel_time(us)`, `idle_time_pctg`, `compute_time_pctg`,
        `non_compute_time_pctg`. A rank without GPU work has no row (HTA raises IndexError)."""
        table = breakdown.temporal_breakdown(self.events, by_kind=not self.hta_rounding)
        result = frames.to_pandas(table, whole_us=_us_columns(table) if self.hta_rounding else ())
        if visualize:
            frames.show(frames.bar, result, x="rank", title="Temporal breakdown across ranks",
                        y=["idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"])
        return result

    def get_gpu_kernel_breakdown(self, visualize: bool = True, duration_ratio: float = 0.8, num_kernels: int = 10,
                                 include_memory_kernels: bool = True, image_renderer: str = "") -> tuple[Any, Any]:
        """(time per kernel type and per overlap of types over all ranks: `kernel_type`, `sum`,
        `percentage`; per rank and type the top kernels: `name`, `sum (us)`, `max (us)`,
        `min (us)`, `stddev`, `mean (us)`, `kernel_type`, `rank`), as HTA's."""
        by_type, kernels = breakdown.kernel_breakdown(self.events, duration_ratio=duration_ratio,
                                                      num_kernels=num_kernels,
                                                      include_memory_kernels=include_memory_kernels,
                                                      by_kind=not self.hta_rounding)
        type_frame = frames.to_pandas(by_type, whole_us=("sum",) if self.hta_rounding else ())
        if visualize:
            frames.show(frames.pie, type_frame[type_frame["percentage"] > 0], values="percentage", names="kernel_type",
                        title="Kernel Type Percentage Across All Ranks")
        return type_frame, frames.to_pandas(kernels)

    def get_gpu_user_annotation_breakdown(self, use_gpu_annotation: bool = True, visualize: bool = True,
                                          duration_ratio: float = 0.8, num_kernels: int = 1000,
                                          allowlist_patterns: list[str] | None = None,
                                          image_renderer: str | None = None) -> Any:
        """Per rank, time per user annotation (on the GPU timeline, or on the CPU with
        `use_gpu_annotation=False`): `name`, `sum (us)`, `max (us)`, `min (us)`, `stddev`,
        `mean (us)`, `rank`; past `num_kernels` names or the `duration_ratio` share, `others`
        (names matching `allowlist_patterns` are kept). None when no rank has such annotations."""
        import re

        found = rules.annotations(self.trace, self.rules, on_gpu=use_gpu_annotation)
        if found is None:
            return None
        allowlist = None
        if allowlist_patterns is not None:
            pattern = re.compile("|".join(re.escape(p) for p in allowlist_patterns))
            names = set().union(*(set(frame["name"].to_list()) for frame in found.values()))
            allowlist = [name for name in names if pattern.search(name)]
        table = breakdown.annotation_breakdown(found, duration_ratio=duration_ratio, num_kernels=num_kernels,
                                               allowlist=allowlist)
        result = frames.to_pandas(table)
        if visualize:
            frames.show(frames.bar, result[result["name"] != "others"], x="rank", y="mean (us)", color="name",
                        title="Mean duration of each user annotation per rank")
        return result

    def get_comm_comp_overlap(self, visualize: bool = True) -> Any:
        """Per rank: `comp_comm_overlap_pctg`, the share of communication time that computation
        overlaps (%, 2 decimals)."""
        table = frames.to_pandas(breakdown.comm_comp_overlap(self.events, by_kind=not self.hta_rounding))
        if visualize:
            frames.show(frames.bar, table, x="rank", y="comp_comm_overlap_pctg",
                        title="Computation-Communication Overlap")
        return table

    def get_idle_time_breakdown(self, ranks: list[int] | None = None, streams: list[int] | None = None,
                                visualize: bool = True, visualize_pctg: bool = True,
                                show_idle_interval_stats: bool = False,
                                consecutive_kernel_delay: int = 30) -> tuple[Any, Any]:
        """Per rank and stream, idle time between consecutive GPU ops of the stream by cause:
        `host_wait`, `kernel_wait` (a gap under `consecutive_kernel_delay`, compared with µs as
        HTA's code does), `other`. Returns (frame `rank`, `stream`, `idle_category`, `idle_time`,
        `idle_time_ratio`; the per-category statistics of the gaps when
        `show_idle_interval_stats`, else None). Our device-level gaps and causes: `.report()`."""
        import pandas as pd

        tables, stats = [], []
        for rank in self._ranks(ranks):
            first = rules.first_event(self.trace.for_rank(rank), self.rules)
            intervals = launches.stream_idle(self.events[rank], consecutive_kernel_delay_us=consecutive_kernel_delay,
                                             streams=streams, orphan_launch_ns=first[0] if first else None)
            table = frames.to_pandas(launches.idle_breakdown(intervals, rank)).round(2)
            tables.append(table)
            if show_idle_interval_stats:
                stats.append(_interval_stats(intervals, rank))
            if visualize:
                frames.show(frames.bar, table.astype({"stream": str}), x="stream",
                            y="idle_time_ratio" if visualize_pctg else "idle_time", color="idle_category",
                            title=f"Idle time breakdown on rank {rank} per CUDA stream")
        return pd.concat(tables), (pd.concat(stats) if show_idle_interval_stats else None)

    # --- launches -------------------------------------------------------------------------------

    def get_cuda_kernel_launch_stats(self, ranks: list[int] | None = None, runtime_cutoff: int = 50,
                                     launch_delay_cutoff: int = 100, include_memory_events: bool = True,
                                     visualize: bool = True) -> dict[int, Any]:
        """Per rank, one row per launch: `correlation`, `cpu_duration`, `gpu_duration`,
        `launch_delay` (µs, delay clipped at 0). Ours: every launch call (driver API, HIP, graph
        launches to their first op; `analysis.launch.launch_latency`); with `hta_rounding`, HTA's
        four calls only, one row per CPU-side and GPU-side event of a correlation."""
        result = {}
        for rank in self._ranks(ranks):
            if self.hta_rounding:
                table = launches.launch_stats(self.events[rank], include_memory_events=include_memory_events)
            else:
                table = launches.our_launch_stats(self.trace.for_rank(rank),
                                                  include_memory_events=include_memory_events)
            result[rank] = frames.to_pandas(table, whole_us=tuple(table.columns[1:]) if self.hta_rounding else ())
            if visualize:
                frames.show(frames.scatter, result[rank], x="cpu_duration", y="launch_delay",
                            title=f"Rank {rank}: launch delay against runtime duration "
                                  f"(cutoffs {runtime_cutoff} µs, {launch_delay_cutoff} µs)")
        return result

    def get_aten_op_kernels_and_delay(self, ranks: list[int] | None = None,
                                      sort_by: list[str] | None = None) -> dict[int, Any]:
        """Per rank, per (ATen op, the kernels it launches): `aten_op_name`, `kernel_sequence`,
        `occurrence_count`, `avg_aten_op_launch_delay` (op start → first launch, µs),
        `avg_runtime_delay` (that launch → its kernel, µs), by `sort_by` (default
        `occurrence_count`) descending. With `hta_rounding`, HTA's rows: each rank's frame also
        holds the rows of the ranks before it (HTA never empties its list)."""
        sort_by = sort_by or ["occurrence_count"]
        result, earlier = {}, []
        for rank in self._ranks(ranks):
            one = self.trace.for_rank(rank)
            ops = rules.hta_times(one.cpu_ops.filter(pl.col("name").cast(pl.String).str.starts_with("aten::")).select(
                "tid", pl.col("name").cast(pl.String), "start_ns", "end_ns", "depth"),
                self.hta_rounding and rules.hta_rounds(one))
            found = aten.aten_launches(self.events[rank], ops)
            rows = pl.concat([*earlier, found]) if self.hta_rounding else found
            earlier.append(found)
            result[rank] = frames.to_pandas(aten.aten_summary(rows, sort_by))
        return result

    def get_queue_length_time_series(self, ranks: list[int] | None = None) -> dict[int, Any]:
        """Per rank, the outstanding operations of each stream at each change: `ts` (µs, ranks on
        one clock; HTA shifts all ranks so the first event is at 0), `stream`, `queue_length`."""
        result = {}
        for rank in self._ranks(ranks):
            first = rules.first_event(self.trace.for_rank(rank), self.rules)
            unlinked = first[1] if first and first[2] not in (None, -1) else None
            table = launches.queue_length(self.events[rank], unlinked=unlinked,
                                          zero_ns=rules.time_zero_ns(self.trace, self.rules),
                                          rows=rules.linked_rows(self.trace.for_rank(rank), self.rules))
            if not table.is_empty():  # HTA leaves out a rank without launches
                result[rank] = frames.to_pandas(table, whole_us=("ts",) if self.hta_rounding else (), index="index")
        return result

    def get_queue_length_summary(self, ranks: list[int] | None = None) -> Any:
        """pandas' `describe()` of each stream's queue length, indexed by (`rank`, `stream`), with
        HTA's two-level columns (`queue_length`, statistic)."""
        import pandas as pd

        series = self.get_queue_length_time_series(ranks)
        parts = []
        for rank, table in series.items():
            table = table.assign(rank=rank)[["rank", "stream", "queue_length"]]
            parts.append(table.groupby(["rank", "stream"]).describe())
        return pd.concat(parts) if parts else None

    def get_memory_bw_time_series(self, ranks: list[int] | None = None) -> dict[int, Any]:
        """Per rank, the bandwidth of copies and sets at each change, per memory type: `ts` (µs),
        `pid`, `name` (`Memcpy HtoD`, `Memset`, ...), `memory_bw_gbps`. A rank without copies has
        no entry."""
        result = {}
        for rank in self._ranks(ranks):
            table = memory.bandwidth_series(self.events[rank], zero_ns=rules.time_zero_ns(self.trace, self.rules),
                                            by_kind=not self.hta_rounding)
            if not table.is_empty():
                result[rank] = frames.to_pandas(table, whole_us=("ts",) if self.hta_rounding else ())
        return result

    def get_memory_bw_summary(self, ranks: list[int] | None = None) -> Any:
        """pandas' `describe()` of the non-zero bandwidth levels per (`rank`, `name`), HTA's
        two-level columns (`memory_bw_gbps`, statistic); None without copies."""
        import pandas as pd

        parts = []
        for rank, table in self.get_memory_bw_time_series(ranks).items():
            table = table.assign(rank=rank)
            table = table[table["memory_bw_gbps"] > 0][["rank", "name", "memory_bw_gbps"]]
            parts.append(table.groupby(["rank", "name"]).describe())
        return pd.concat(parts) if parts else None

    def get_profiler_steps(self) -> list[int]:
        """The ProfilerStep numbers (with `hta_rounding`, without the last one when HTA drops it)."""
        several = rules.step_names(self.trace) >= 2
        numbers: set[int] = set()
        for one in self.trace.split_by_rank():
            rounds = rules.hta_rounds(one) and self.rules.rounding
            cutoff = None
            if self.rules.last_step and several and not self.rules.include_last_step:
                cutoff = rules.cutoff_ns(one, rounds)
                cutoff = rules.EARLIEST if cutoff is None else cutoff
            numbers |= launches.profiler_steps(rules.hta_times(one.steps, rounds), cutoff)
        return sorted(numbers)

    def get_potential_stragglers(self, profiler_steps: list[int] | None = None, num_candidates: int = 2,
                                 visualize: bool = False, straggler_identification_impl: Any = None) -> list[int]:
        """The ranks most likely to hold the others back, at most `num_candidates`. Ours: the job
        analysis's slowest rank per step (the one whose late arrivals at collectives cost the
        others the most wait; any collective, `ncclDevKernel` included). With `hta_rounding`:
        HTA's late-start rule (`stragglers.hta_stragglers`), which raises ValueError where HTA's
        fails (no `ncclKernel*`). `straggler_identification_impl`: HTA's contract, a function of
        (frame, symbol table, `num_candidates`, `visualize`) returning a Series of counts by rank;
        it gets `stragglers.hta_frame`'s frame (our times: HTA's with `hta_rounding`), and the
        ranks it counts most come first, as in HTA."""
        available = self.get_profiler_steps()
        chosen = available if profiler_steps is None else [s for s in profiler_steps if s in available]
        if not chosen:
            raise ValueError(f"invalid value for argument: profiler_steps={profiler_steps}; "
                             f"available profiler steps={available}")
        if straggler_identification_impl is None and not self.hta_rounding:
            from traceanalyze.api import analyze

            job = analyze(self.trace, skip_steps=0).job
            found = stragglers.our_stragglers(job.stragglers if job is not None else pl.DataFrame(), num_candidates)
            return found
        frames_with_steps = {}
        for one in self.trace.split_by_rank():
            rank = one.ranks[0]
            steps = rules.hta_times(one.steps, self.hta_rounding and rules.hta_rounds(one)).with_columns(
                pl.col("name").str.extract(r"ProfilerStep\s*#\s*(\d+)").cast(pl.Int64).alias("number"))
            frames_with_steps[rank] = stragglers.with_iteration(self.events[rank], steps)
        if straggler_identification_impl is None:
            return stragglers.hta_stragglers(frames_with_steps, chosen, num_candidates)
        num_candidates = max(num_candidates, 1)
        frame, symbols = stragglers.hta_frame(frames_with_steps, chosen, rules.time_zero_ns(self.trace, self.rules))
        counts = straggler_identification_impl(frame, symbols, num_candidates, visualize)
        return counts.sort_values(ascending=False)[:num_candidates].index.tolist()

    # --- beyond HTA -----------------------------------------------------------------------------

    def report(self, *, window: str = "activity", skip_steps: int = 0) -> Any:
        """Our `Report` of the same traces (verdict, findings, the job view): `traceanalyze.analyze`
        on the loaded tables, with its `window` and `skip_steps`."""
        from traceanalyze.api import analyze

        return analyze(self.trace, window=window, skip_steps=skip_steps)  # type: ignore[arg-type]


def _us_columns(table: pl.DataFrame) -> tuple[str, ...]:
    return tuple(c for c in table.columns if c.endswith("(us)"))


def _interval_stats(intervals: pl.DataFrame, rank: int) -> Any:
    """HTA's `show_idle_interval_stats` frame of one rank: per stream and category, `describe()`
    of the gaps (µs), rounded to 2 decimals, indexed by `idle_category`."""
    import pandas as pd

    rows = []
    for (stream, category), group in intervals.group_by("stream", "idle_category", maintain_order=True):
        rows.append({"idle_category": launches.IDLE_CATEGORIES[category], "rank": rank, "stream": stream,
                     **launches.describe(group["idle_interval"].cast(pl.Float64).fill_null(float("nan")).to_numpy())})
    table = pd.DataFrame(rows)
    return table.set_index("idle_category").round(2) if rows else table


def _load(trace_files: dict[int, str] | None, trace_dir: str, cache: bool) -> Trace:
    """Our loader on HTA's arguments: `trace_files` (rank → file) or every trace in `trace_dir`."""
    from traceanalyze.load import load_trace
    from traceanalyze.model import concat_traces

    if not trace_files:
        return load_trace(Path(trace_dir), cache=cache)
    loaded = []
    for rank, name in sorted(trace_files.items()):
        path = Path(name) if Path(name).is_absolute() else Path(trace_dir) / name
        trace = load_trace(path, cache=cache)
        if trace.ranks != [rank]:
            raise ValueError(f"{path} holds rank {trace.ranks}, not rank {rank} as trace_files says")
        loaded.append(trace)
    return concat_traces(loaded)
