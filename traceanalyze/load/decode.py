"""A chunk's JSON text `[event, …]` → its tables (`decode_chunk`), by the fastest path that
vouches for it: the compiled columnar scanner (`columnar`), else the msgspec fast path (`fast`),
else the general path (`general`). All three give the same tables for the same events
(tests/load/test_streaming.py and test_columnar.py check it on every real trace and on mutated
ones).

Times: `ts`/`dur` are microseconds, integers (older traces) or floats with a nanosecond fraction
(PyTorch ≥ 2.3). They become int64 nanoseconds exactly (see `convert.to_ns` and docs/metrics.md).
"""

from __future__ import annotations

from typing import Any

from traceanalyze.load.chunk import ChunkTables
from traceanalyze.load.fast import msgspec_chunk
from traceanalyze.scalar_columns import constants_as_scalars


def decode_chunk(text: bytes, *, include_python: bool = False) -> ChunkTables:
    """The JSON text of a list of events → its tables. Raises `msgspec.DecodeError` if the text is
    not valid JSON (the caller may have cut it at a wrong place).

    The compiled columnar scanner (`columnar`) takes every chunk of at least
    `COLUMNAR_MIN_BYTES` it can vouch for; the msgspec fast path takes the rest, and the general
    path what that cannot convert exactly."""
    return _finished(scan_chunk(text, include_python=include_python))


def decode_items(items: bytes | memoryview | bytearray, *, include_python: bool = False) -> ChunkTables:
    """`decode_chunk` of a chunk's events without the array's brackets (`event, …`): a large one
    is scanned where it lies, not copied between brackets first (a 16 MB copy per chunk)."""
    return _finished(scan_items(items, include_python=include_python))


def scan_chunk(text: bytes, *, include_python: bool = False) -> Any:
    """A chunk's text scanned, to be finished alone or with its neighbours (`finish_pieces`): a
    `columnar.ScannedPiece`, or the chunk's `ChunkTables` where the scanner does not take it (the
    msgspec paths decoded it)."""
    return _scanned(text, include_python, bare=False)


def scan_items(items: bytes | memoryview | bytearray, *, include_python: bool = False) -> Any:
    """`scan_chunk` of a chunk's events without the array's brackets (as `decode_items` takes them)."""
    return _scanned(items, include_python, bare=True)


def finish_pieces(pieces: list[Any]) -> ChunkTables:
    """Consecutive scanned pieces (`scan_chunk`, `scan_items`) → their tables, as one chunk."""
    from traceanalyze.load import columnar

    return _nulls_once(columnar.tables_of_pieces(pieces))


def _scanned(text: bytes | memoryview | bytearray, include_python: bool, *, bare: bool) -> Any:
    if len(text) >= COLUMNAR_MIN_BYTES:
        from traceanalyze.load import columnar  # the compiled module (and numpy, when it scans)

        piece = columnar.scan_piece(text, include_python, bare=bare)
        if piece is not None:
            return piece
    bracketed = b"".join((b"[", text, b"]")) if bare else text
    return _nulls_once(msgspec_chunk(bracketed, include_python=include_python))


def _finished(scanned: Any) -> ChunkTables:
    return scanned if isinstance(scanned, ChunkTables) else finish_pieces([scanned])


def _nulls_once(chunk: ChunkTables) -> ChunkTables:
    """The chunk with each column null in all of its rows (a shape argument, flops, sequence
    numbers the trace does not record) held once until its table is made: done here, by the
    thread or process that decoded the chunk, not by the one that collects the chunks."""
    chunk.frames = {name: constants_as_scalars(frame, nulls_only=True) for name, frame in chunk.frames.items()}
    return chunk


# Scanned pieces of fewer rows than this are finished together, up to this many rows (at most
# `FINISH_PIECES` of them): a piece's finishing costs 5 to 10 ms whatever its rows, and a trace
# that records Python functions (passed over by the scanner) may hold 12,000 rows in 16 MB, where
# another holds 70,000 (docs/performance.md#decisions-and-why)
FINISH_ROWS = 1 << 15
FINISH_PIECES = 16

# Below this, a chunk decodes with msgspec: the scanner saves less than importing numpy costs,
# and a small trace's report stays instant.
COLUMNAR_MIN_BYTES = 8 << 20

