"""One trace file → a single-rank `Trace` (`load_file`): streamed, read and gunzipped ahead in a
thread, cut into chunks of events, each chunk decoded into columnar frames (`decode.decode_chunk`),
by several threads (or processes, without the compiled scanner) for a large file; memory holds
the tables and a few chunks, never the whole document."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from traceanalyze.allocator import return_freed_memory
from traceanalyze.errors import EmptyTraceError, TraceFormatError
from traceanalyze.load.assemble import TraceTables
from traceanalyze.load.chrome import WHOLE_DOCUMENT_LIMIT, EventChunks, NotStreamable, decode_document
from traceanalyze.load.convert import as_int
from traceanalyze.load.decode import decode_chunk
from traceanalyze.load.general import general_tables
from traceanalyze.load.limits import LoadLimits, check_op_depth, exceeded
from traceanalyze.load.reading import BLOCK_SIZE, open_trace_file, read_bytes
from traceanalyze.model import Trace

_RANK_IN_NAME = re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE)
PARALLEL_FILE_MIN_BYTES = 160 << 20  # files smaller than this (uncompressed, about) decode in this process
THREADED_FILE_MIN_BYTES = 2 * BLOCK_SIZE  # with the compiled scanner: any file of several chunks uses threads
LARGE_TRACE_EVENTS = 1_000_000  # above this, freed memory is handed back to the system after loading
# At most this many chunks of one file decode at once. Each holds 60-100 MB while it decodes (its
# text, the scanner's columns, the frames being built), and more threads stop paying before that:
# one thread gunzips, and every chunk's Python glue holds the GIL. On 2 cores, 1 GB a100-cudagraph
# loaded in 3.59 / 3.17 / 3.35 / 3.88 s with 2 / 4 / 8 / 16 threads, peaking at 825 / 886 / 1163 /
# 1424 MB: one thread per core on a 100-core node would hold gigabytes for nothing.
MAX_DECODE_WORKERS = 4
# the room before each block for the rest of the last one (an event's head: far less), so that a
# chunk decoded by the threads is one piece of text where it was read (`EventChunks.pieces`)
PIECE_FRONT = 64 << 10

Progress = Callable[[int, int], None]  # (bytes of the file read so far, its size on disk)


def load_file(path: Path, *, include_python: bool = False, include_flows: bool = False, rank: int | None = None,
              rank_source: str | None = None, progress: Progress | None = None,
              workers: int | None = None, block_size: int | None = None,
              limits: LoadLimits = LoadLimits()) -> Trace:
    """One trace file → a single-rank `Trace`. The rank comes from `distributedInfo.rank`, else
    from the file name (`rank3.json`), unless given. A large file is decoded by `workers` processes
    (default: one per core), in chunks of about `block_size` bytes (default: `BLOCK_SIZE`).

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
        # 16 MB for every file: 32 MB chunks for large files cost as much CPU and 70-110 MB more at
        # peak on 1 GB traces (two chunks and their decoding in flight, the blocks read ahead)
        block_size = BLOCK_SIZE
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
        total = tables.events + tables.malformed  # a malformed item (not an object, say) is no decoded event
        raise EmptyTraceError(f"{path}: none of its {total} events is usable "
                              f"({skipped} malformed and skipped, the others of kinds no analysis reads)")
    check_op_depth(path, trace.cpu_ops, limits)
    return trace


def _check_events(path: Path, events: int, limits: LoadLimits, *, read: int = 0, size: int = 0) -> None:
    """Refuse more than `limits.events` events. The flag suggested is the file's count: exact for a
    document decoded whole, else estimated from the events met in the `read` bytes of `size`."""
    if events > limits.events:
        whole = events if not read or read >= size else -(-events * size // read)
        raise exceeded(path, f"more than {limits.events} events", "events", str(whole))


def _declared_rank(path: Path, value: object) -> int | None:
    """`distributedInfo.rank` as a rank: None when absent or negative (no rank); a value beyond
    int32 is refused (it is no rank, and no table column holds it)."""
    rank = as_int(value)
    huge_float = isinstance(value, float) and value >= 1 << 31  # 1e30: no int of it, yet no rank either
    if not huge_float and (rank is None or rank < 0):
        return None
    if huge_float or rank >= 1 << 31:
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
        _check_events(path, tables.events, limits, read=chunks.position, size=size)
        if progress is not None:
            progress(chunks.position, size)
    assert chunks.document is not None
    return tables, chunks.document


def _stream_parallel(path: Path, *, include_python: bool, include_flows: bool, progress: Progress | None, workers: int,
                     block_size: int = BLOCK_SIZE, limits: LoadLimits = LoadLimits()):
    from traceanalyze.load import columnar
    from traceanalyze.load.chunk_workers import ChunkPool, decode_in_threads

    size = path.stat().st_size
    chunks = EventChunks(path, block_size=block_size, limits=limits)
    tables = TraceTables(include_python=include_python, include_flows=include_flows)
    with contextlib.ExitStack() as stack:
        if columnar.available():  # the work releases the GIL: threads
            decoded = decode_in_threads(chunks.pieces(front=PIECE_FRONT), workers, include_python=include_python)
        else:
            pool = stack.enter_context(ChunkPool(workers, include_python=include_python, slot_size=2 * block_size + 2))
            decoded = pool.map(chunks.pieces())
        for chunk in decoded:
            tables.add(chunk)
            _check_events(path, tables.events, limits, read=chunks.position, size=size)
            if progress is not None:
                progress(chunks.position, size)
    assert chunks.document is not None
    return tables, chunks.document


def uncompressed_estimate(path: Path) -> int:
    """About how large a trace is once gunzipped (Kineto JSON compresses about tenfold)."""
    try:
        size = path.stat().st_size
    except OSError:
        return 0  # reading it will say what is wrong
    return size * (10 if path.name.lower().endswith(".gz") else 1)


def _chunk_workers(path: Path, workers: int | None) -> int:
    """How many threads (or, without the compiled scanner, processes) decode one file: several
    only for a file of several chunks (a large one, for processes) on several cores, one per core
    up to `MAX_DECODE_WORKERS`."""
    from traceanalyze.load import columnar

    if workers is not None:
        return max(1, workers)
    smallest = THREADED_FILE_MIN_BYTES if columnar.available() else PARALLEL_FILE_MIN_BYTES
    if uncompressed_estimate(path) < smallest:
        return 1
    return max(1, min(os.cpu_count() or 1, MAX_DECODE_WORKERS))


def declared_rank(path: Path) -> int | None:
    """The rank a file's name gives (`rank3.json.gz`, `trace_rank_3.json`), if any."""
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


