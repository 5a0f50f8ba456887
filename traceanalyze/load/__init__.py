"""Load a Kineto trace file, or a folder of per-rank trace files, into a `Trace`.

One file is streamed: read and gunzipped ahead in a thread, cut into chunks of events, each chunk
decoded into columnar frames (`tables.decode_chunk`), so memory holds the tables and a few chunks,
never the whole document. A folder is loaded one process per rank (`load_rank`, a pure function
from a file to its `Trace`, is what each process runs), on every core.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from traceanalyze.errors import EmptyTraceError, TraceFormatError
from traceanalyze.load.chrome import (
    BLOCK_SIZE,
    WHOLE_DOCUMENT_LIMIT,
    EventChunks,
    NotStreamable,
    decode_document,
    open_trace_file,
    os_problem,
    read_bytes,
)
from traceanalyze.load.limits import LoadLimits, exceeded
from traceanalyze.load.tables import TraceTables, as_int, decode_chunk, general_tables
from traceanalyze.memory import return_freed_memory
from traceanalyze.model import Trace, concat_traces

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE)
PARALLEL_MIN_BYTES = 64 << 20  # folders smaller than this (uncompressed, about) load in this process
PARALLEL_FILE_MIN_BYTES = 160 << 20  # files smaller than this (uncompressed, about) decode in this process
THREADED_FILE_MIN_BYTES = 2 * BLOCK_SIZE  # with the compiled scanner: any file of several chunks uses threads
# Large files decode in larger chunks: half the chunks, half the fixed cost per chunk, and fewer,
# larger allocations that the allocator reuses (measured on 1 GB: 10% faster, 100 MB less at peak)
LARGE_FILE_BYTES = 512 << 20
LARGE_BLOCK_SIZE = 32 << 20
PROGRESS_MIN_BYTES = 64 << 20  # inputs smaller than this load too fast for a progress bar
LARGE_TRACE_EVENTS = 1_000_000  # above this, freed memory is handed back to the system after loading

Progress = Callable[[int, int], None]  # (bytes of the file read so far, its size on disk)


def trace_files(folder: Path) -> list[Path]:
    """The trace files directly inside a folder, in name order."""
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(TRACE_SUFFIXES)
    )


def load_trace(path: str | Path, *, include_python: bool = False, include_flows: bool = False,
               workers: int | None = None, progress: bool | None = None,
               limits: LoadLimits = LoadLimits()) -> Trace:
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
                           progress=progress, limits=limits)
    if not os.path.lexists(path):
        raise TraceFormatError(f"{path}: no such file or folder")
    if _show_progress(progress, [path]):
        from traceanalyze.load.progress import load_with_progress

        return load_with_progress([path], include_python=include_python, include_flows=include_flows, workers=1,
                                  limits=limits)[0]
    return load_file(path, include_python=include_python, include_flows=include_flows, limits=limits)


def load_rank(path: str | Path, include_python: bool = False, include_flows: bool = False,
              limits: LoadLimits = LoadLimits()) -> Trace:
    """One rank's file → its `Trace`: a pure function of the file, what each worker process of a
    folder runs (and what a Ray or Dask task would run: `Trace` pickles, its tables as Arrow)."""
    return load_file(Path(path), include_python=include_python, include_flows=include_flows, workers=1, limits=limits)


def load_file(path: Path, *, include_python: bool = False, include_flows: bool = False, rank: int | None = None,
              rank_source: str | None = None, progress: Progress | None = None,
              workers: int | None = None, block_size: int | None = None,
              limits: LoadLimits = LoadLimits()) -> Trace:
    """One trace file → a single-rank `Trace`. The rank comes from `distributedInfo.rank`, else
    from the file name (`rank3.json`), unless given. A large file is decoded by `workers` processes (default: one per core), in
    chunks of about `block_size` bytes (default: `BLOCK_SIZE`, `LARGE_BLOCK_SIZE` for a large file).

    Whatever the file holds, the result is a `Trace` or a one-line `TraceFormatError`: JSON nested
    deeper than the decoder goes and invalid UTF-8 are refused too (`limits` bounds the rest)."""
    try:
        return _load_file(path, include_python=include_python, include_flows=include_flows, rank=rank,
                          rank_source=rank_source, progress=progress, workers=workers, block_size=block_size,
                          limits=limits)
    except RecursionError:
        raise TraceFormatError(f"{path}: JSON nested too deeply for the decoder (arrays or objects "
                               f"inside each other about {sys.getrecursionlimit()} deep or more)") from None
    except UnicodeDecodeError as error:
        bad = error.object[error.start:error.start + 4] if isinstance(error.object, (bytes, bytearray)) else b""
        raise TraceFormatError(f"{path}: invalid UTF-8 in a string ({error.reason}: bytes {bad.hex(' ')}); "
                               "a trace is UTF-8 JSON") from None


def _load_file(path: Path, *, include_python: bool, include_flows: bool, rank: int | None,
               rank_source: str | None, progress: Progress | None, workers: int | None, block_size: int | None,
               limits: LoadLimits) -> Trace:
    open_trace_file(path).close()  # a regular file we may read, or one line saying what it is
    if block_size is None:
        block_size = LARGE_BLOCK_SIZE if _uncompressed_estimate(path) >= LARGE_FILE_BYTES else BLOCK_SIZE
    try:
        tables, document = _stream(path, include_python=include_python, include_flows=include_flows,
                                   progress=progress, workers=workers,
                                   block_size=block_size, limits=limits)
    except NotStreamable:
        # not laid out as the streaming reader expects: decode it whole, as it always was
        document, malformed = decode_document(read_bytes(path, limit=WHOLE_DOCUMENT_LIMIT), path)
        _check_events(path, len(document.traceEvents or ()), limits)
        tables = TraceTables(include_python=include_python, include_flows=include_flows)
        tables.add(general_tables(document.traceEvents or [], include_python=include_python, malformed=malformed))
        document.traceEvents = None
    if not tables.events:
        raise EmptyTraceError(f"{path}: the trace holds no events")
    if rank is None:
        info = document.distributedInfo if isinstance(document.distributedInfo, dict) else {}
        declared, named = _declared_rank(path, info.get("rank")), declared_rank(path)
        if declared is not None:
            rank, rank_source = declared, "distributedInfo"
        else:
            rank, rank_source = (named, "file name") if named is not None else (0, "default")
    large = tables.events > LARGE_TRACE_EVENTS
    if large:
        return_freed_memory()  # what decoding the chunks freed, before the tables are finished
    trace = tables.finish(document, path=path, rank=rank, rank_source=rank_source or "given")
    if large:
        return_freed_memory()
    if not any(frame.height for frame in (trace.gpu, trace.runtime, trace.cpu_ops, trace.sync, trace.python)
               if frame is not None):
        skipped = int(trace.skipped["count"].sum())
        raise EmptyTraceError(f"{path}: none of its {tables.events} events is usable "
                              f"({skipped} malformed and skipped, the others of kinds no analysis reads)")
    return trace


def _check_events(path: Path, events: int, limits: LoadLimits) -> None:
    if events > limits.events:
        raise exceeded(path, f"more than {limits.events} events", "events", str(4 * limits.events))


def _declared_rank(path: Path, value: object) -> int | None:
    """`distributedInfo.rank` as a rank: None when absent or negative (no rank); a value beyond
    int32 is refused (it is no rank, and no table column holds it)."""
    rank = as_int(value)
    if rank is None or rank < 0:
        return None
    if rank >= 1 << 31:
        raise TraceFormatError(f"{path}: distributedInfo.rank {str(value)[:40]} is not a rank (at most 2^31 - 1)")
    return rank


def _stream(path: Path, *, include_python: bool, include_flows: bool, progress: Progress | None, workers: int | None,
            block_size: int = BLOCK_SIZE, limits: LoadLimits = LoadLimits()):
    size = path.stat().st_size
    count = _chunk_workers(path, workers)
    if count > 1:
        import msgspec

        try:
            return _stream_parallel(path, include_python=include_python, include_flows=include_flows,
                                    progress=progress, workers=count,
                                    block_size=block_size, limits=limits)
        except msgspec.DecodeError:
            pass  # a chunk cut at a wrong place, or invalid JSON: the sequential reader sorts it out
    chunks = EventChunks(path, block_size=block_size, limits=limits)
    tables = TraceTables(include_python=include_python, include_flows=include_flows)
    for chunk in chunks.decode_each(lambda text: decode_chunk(text, include_python=include_python)):
        tables.add(chunk)
        _check_events(path, tables.events, limits)
        if progress is not None:
            progress(chunks.position, size)
    assert chunks.document is not None
    return tables, chunks.document


def _stream_parallel(path: Path, *, include_python: bool, include_flows: bool, progress: Progress | None, workers: int,
                     block_size: int = BLOCK_SIZE, limits: LoadLimits = LoadLimits()):
    from traceanalyze.load import columnar
    from traceanalyze.load.parallel import ChunkPool, decode_in_threads

    size = path.stat().st_size
    chunks = EventChunks(path, block_size=block_size, limits=limits)
    tables = TraceTables(include_python=include_python, include_flows=include_flows)
    with contextlib.ExitStack() as stack:
        if columnar.available():  # the work releases the GIL: threads
            decoded = decode_in_threads(chunks.pieces(), workers, include_python=include_python)
        else:
            pool = stack.enter_context(ChunkPool(workers, include_python=include_python, slot_size=2 * block_size + 2))
            decoded = pool.map(chunks.pieces())
        for chunk in decoded:
            tables.add(chunk)
            _check_events(path, tables.events, limits)
            if progress is not None:
                progress(chunks.position, size)
    assert chunks.document is not None
    return tables, chunks.document


def _uncompressed_estimate(path: Path) -> int:
    """About how large a trace is once gunzipped (Kineto JSON compresses about tenfold)."""
    try:
        size = path.stat().st_size
    except OSError:
        return 0  # reading it will say what is wrong
    return size * (10 if path.name.lower().endswith(".gz") else 1)


def _chunk_workers(path: Path, workers: int | None) -> int:
    """How many threads (or, without the compiled scanner, processes) decode one file: several
    only for a file of several chunks (a large one, for processes) on several cores."""
    from traceanalyze.load import columnar

    if workers is not None:
        return max(1, workers)
    smallest = THREADED_FILE_MIN_BYTES if columnar.available() else PARALLEL_FILE_MIN_BYTES
    if _uncompressed_estimate(path) < smallest:
        return 1
    return os.cpu_count() or 1


def declared_rank(path: Path) -> int | None:
    """The rank a file's name gives (`rank3.json.gz`, `trace_rank_3.json`), if any."""
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


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
    return sum(_uncompressed_estimate(f) for f in files)


def _worker_count(files: list[Path], workers: int | None) -> int:
    if workers is not None:
        return max(1, min(workers, len(files)))
    if len(files) < 2 or _approximate_size(files) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(len(files), os.cpu_count() or 1))


def _load_ranks(files: list[Path], *, include_python: bool, include_flows: bool = False, workers: int | None = None,
                progress: bool | None = None, limits: LoadLimits = LoadLimits()) -> Trace:
    """Ranks from `distributedInfo.rank`, else from file names, else from file order; the first
    source that gives every file a distinct rank wins."""
    count = _worker_count(files, workers)
    if _show_progress(progress, files):
        from traceanalyze.load.progress import load_with_progress

        traces = load_with_progress(files, include_python=include_python, include_flows=include_flows, workers=count,
                                    limits=limits)
    elif count > 1:
        from traceanalyze.load.parallel import load_parallel

        traces = load_parallel(files, include_python=include_python, include_flows=include_flows, workers=count,
                               limits=limits)
    else:
        traces = [load_file(f, include_python=include_python, include_flows=include_flows, workers=workers,
                            limits=limits) for f in files]
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
