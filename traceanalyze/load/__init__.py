"""Load a Kineto trace file, or a folder of per-rank trace files, into a `Trace`.

One file is streamed and decoded in chunks (`files.load_file`). A folder is loaded one process per
rank (`load_rank`, a pure function from a file to its `Trace`, is what each process runs), on
every core (`parallel`).
"""

from __future__ import annotations

import os
from pathlib import Path

from traceanalyze.errors import TraceFormatError
from traceanalyze.cache_files import CacheSetting, cache_directory
from traceanalyze.load.cache import load_cached, lookup, store
from traceanalyze.load.reading import os_problem
from traceanalyze.load.files import declared_rank, load_file, uncompressed_estimate
from traceanalyze.load.limits import LoadLimits, check_op_depth
from traceanalyze.model import Trace, concat_traces

__all__ = ["load_trace", "load_rank", "load_file", "trace_files", "declared_rank"]

TRACE_SUFFIXES = (".json", ".json.gz")
PARALLEL_MIN_BYTES = 64 << 20  # folders smaller than this (uncompressed, about) load in this process
PROGRESS_MIN_BYTES = 64 << 20  # inputs smaller than this load too fast for a progress bar


def trace_files(folder: Path) -> list[Path]:
    """The trace files directly inside a folder, in name order; a symbolic link among them that
    leads nowhere (dangling, or a loop) too: the loader names it and says why, never skips it unsaid."""
    return sorted(
        p for p in folder.iterdir() if (p.is_file() or p.is_symlink()) and p.name.lower().endswith(TRACE_SUFFIXES)
    )


def load_trace(path: str | Path, *, include_python: bool = False, include_flows: bool = False,
               workers: int | None = None, progress: bool | None = None,
               limits: LoadLimits = LoadLimits(), cache: CacheSetting = True) -> Trace:
    """Load a `.json`/`.json.gz` Kineto trace, or a folder of per-rank traces, into a `Trace`.

    Parameters
    ----------
    path
        A trace file, or a folder whose `.json`/`.json.gz` files are one rank each.
    include_python
        Keep `python_function` events (dropped by default: they are often half of a trace and no
        analysis needs them).
    include_flows
        Keep the flow events (`ac2g`, …: the arrows a trace viewer draws from a launch to its
        kernel) in `Trace.flows`. Dropped by default: launches and kernels are linked by their
        correlation ids, and on large traces flows are the longest table; `RankMeta.flow_events`
        counts them either way.
    workers
        Processes for a folder of ranks (one rank each). Default: one per core, when the folder
        is large enough for it to pay (`PARALLEL_MIN_BYTES`); 1 loads every rank here.
    progress
        Show a progress bar per file on stderr. Default: only when stderr is a terminal and the
        input is large (`PROGRESS_MIN_BYTES`).
    limits
        How much a file may make the loader read, inflate and hold (`limits.LoadLimits`); a file
        beyond them is refused with a `LimitError`.
    cache
        Read a file's tables from the cache of loaded traces when it holds them, and put them
        there after parsing (docs/cache.md): True uses the default folder
        (`$TRACEANALYZE_CACHE_DIR`, else the platform's cache folder), a path that folder, False
        no cache. The tables are the same either way.

    Examples
    --------
    >>> trace = load_trace("fixtures/synthetic_training.json.gz")  # doctest: +SKIP
    >>> trace.gpu.height  # doctest: +SKIP
    """
    path = Path(path)
    try:
        is_folder = path.is_dir()
        files = trace_files(path) if is_folder else []
    except OSError as error:  # a symlink loop, a folder we may not list
        raise TraceFormatError(f"{path}: {os_problem(error)}") from None
    if is_folder:
        if not files:
            raise TraceFormatError(f"{path}: folder holds no .json or .json.gz trace files")
        return _load_ranks(files, include_python=include_python, include_flows=include_flows, workers=workers,
                           progress=progress, limits=limits, cache=cache)
    if not os.path.lexists(path):
        raise TraceFormatError(f"{path}: no such file or folder")

    def parse() -> Trace:
        if _show_progress(progress, [path]):
            from traceanalyze.load.progress import load_with_progress

            return load_with_progress([path], include_python=include_python, include_flows=include_flows, workers=1,
                                      limits=limits)[0]
        return load_file(path, include_python=include_python, include_flows=include_flows, limits=limits)

    trace = load_cached(path, cache_directory(cache), parse, include_python=include_python,
                        include_flows=include_flows, max_events=limits.events)
    check_op_depth(path, trace.cpu_ops, limits)  # a cached trace too
    return trace


def load_rank(path: str | Path, include_python: bool = False, include_flows: bool = False,
              limits: LoadLimits = LoadLimits(), cache: CacheSetting = False) -> Trace:
    """One rank's file → its `Trace`: a pure function of the file, what each worker process of a
    folder runs (and what a Ray or Dask task would run: `Trace` pickles, its tables as Arrow).
    `cache` as for `load_trace`: the cache folder is the one where this runs."""
    path = Path(path)
    trace = load_cached(path, cache_directory(cache),
                        lambda: load_file(path, include_python=include_python, include_flows=include_flows, workers=1,
                                          limits=limits),
                        include_python=include_python, include_flows=include_flows, max_events=limits.events)
    check_op_depth(path, trace.cpu_ops, limits)  # a cached trace too
    return trace



def _show_progress(progress: bool | None, files: list[Path]) -> bool:
    if progress is not None:
        return progress
    import sys

    try:
        interactive = sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
    return interactive and _approximate_size(files) >= PROGRESS_MIN_BYTES


def _approximate_size(files: list[Path]) -> int:
    """Uncompressed bytes, about (Kineto JSON gzips about 10:1)."""
    return sum(uncompressed_estimate(f) for f in files)


def _worker_count(files: list[Path], workers: int | None) -> int:
    if workers is not None:
        return max(1, min(workers, len(files)))
    if len(files) < 2 or _approximate_size(files) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(len(files), os.cpu_count() or 1))


def _load_ranks(files: list[Path], *, include_python: bool, include_flows: bool = False, workers: int | None = None,
                progress: bool | None = None, limits: LoadLimits = LoadLimits(), cache: CacheSetting = False) -> Trace:
    """Ranks from `distributedInfo.rank`, else from file names, else from file order; the first
    source that gives every file a distinct rank wins. Files the cache holds are read from it;
    the others are parsed (in parallel when it pays) and cached."""
    directory = cache_directory(cache)
    looked_up = {f: lookup(f, directory, include_python=include_python, include_flows=include_flows,
                           max_events=limits.events) for f in files}
    loaded = {f: trace for f, (trace, _) in looked_up.items() if trace is not None}
    missing = [f for f in files if f not in loaded]
    if missing:
        for f, trace in zip(missing, _parse_ranks(missing, include_python=include_python, include_flows=include_flows,
                                                  workers=workers, progress=progress, limits=limits)):
            store(f, directory, looked_up[f][1], trace)
            loaded[f] = trace
    traces = [loaded[f] for f in files]
    from_info = [t.meta[0].rank if t.meta[0].rank_source == "distributedInfo" else None for t in traces]
    from_names = [declared_rank(f) for f in files]
    for ranks, source in ((from_info, "distributedInfo"), (from_names, "file name")):
        if None not in ranks and len(set(ranks)) == len(ranks):
            break
    else:
        ranks, source = list(range(len(files))), "file order"
    if any(t.meta[0].rank != r or t.meta[0].rank_source != source for t, r in zip(traces, ranks)):
        traces = [_relabel(t, r, source) for t, r in zip(traces, ranks)]
    order = sorted(range(len(traces)), key=lambda i: ranks[i])
    return concat_traces([traces[i] for i in order])


def _parse_ranks(files: list[Path], *, include_python: bool, include_flows: bool, workers: int | None,
                 progress: bool | None, limits: LoadLimits) -> list[Trace]:
    """Every file's `Trace`, parsed: with progress bars, by several processes, or one by one here."""
    count = _worker_count(files, workers)
    if _show_progress(progress, files):
        from traceanalyze.load.progress import load_with_progress

        return load_with_progress(files, include_python=include_python, include_flows=include_flows, workers=count,
                                  limits=limits)
    if count > 1:
        from traceanalyze.load.parallel import load_parallel

        return load_parallel(files, include_python=include_python, include_flows=include_flows, workers=count,
                             limits=limits)
    return [load_file(f, include_python=include_python, include_flows=include_flows, workers=workers, limits=limits)
            for f in files]


def _relabel(trace: Trace, rank: int, source: str) -> Trace:
    from dataclasses import replace

    import polars as pl

    def set_rank(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(pl.lit(rank, dtype=pl.Int32).alias("rank"))

    return replace(
        trace,
        gpu=set_rank(trace.gpu),
        runtime=set_rank(trace.runtime),
        cpu_ops=set_rank(trace.cpu_ops),
        steps=set_rank(trace.steps),
        flows=set_rank(trace.flows),
        sync=set_rank(trace.sync),
        devices=set_rank(trace.devices),
        skipped=set_rank(trace.skipped),
        meta=(replace(trace.meta[0], rank=rank, rank_source=source),),
        python=None if trace.python is None else set_rank(trace.python),
    )

