"""Bytes on disk: a trace file opened (every way it can fail to be a readable regular file is a
one-line `TraceFormatError`), read whole (`read_bytes`) or in blocks that a background thread reads
and gunzips ahead (`read_blocks`), through ISA-L where it is installed.
"""

from __future__ import annotations

import errno
import gzip
import os
import queue
import stat
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from traceanalyze.errors import EmptyTraceError, TraceFormatError
from traceanalyze.load.limits import INFLATION_FLOOR, LoadLimits, exceeded
from traceanalyze.native import compiled

try:  # ISA-L inflates the same gzip format about 3x faster than zlib
    from isal import igzip as _gzip
    from isal import isal_zlib

    GZIP_ERRORS: tuple[type[BaseException], ...] = (EOFError, gzip.BadGzipFile, zlib.error, isal_zlib.error)
except ImportError:  # pragma: no cover - isal is a dependency; its wheels may be missing on a platform
    _gzip = gzip  # type: ignore[assignment]
    GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)

BLOCK_SIZE = 16 << 20  # uncompressed bytes per read, and so roughly per decoded chunk

def open_trace_file(path: Path) -> BinaryIO:
    """`path` opened for reading, when it is a regular file; every other case is a one-line
    `TraceFormatError` (no such file, a symlink loop, no permission, a folder, a device or FIFO:
    `/dev/zero` would be read for ever)."""
    try:
        status = os.stat(path)
        if stat.S_ISDIR(status.st_mode):
            raise TraceFormatError(f"{path}: is a folder, not a trace file")
        if not stat.S_ISREG(status.st_mode):
            raise TraceFormatError(f"{path}: not a regular file ({_file_type(status.st_mode)}): a trace is a "
                                   ".json or .json.gz file")
        return open(path, "rb")
    except OSError as error:
        raise TraceFormatError(f"{path}: {os_problem(error)}") from None


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def os_problem(error: OSError) -> str:
    if error.errno == errno.ENOENT:
        return "no such file"
    if error.errno == errno.ELOOP:
        return "symbolic link loop (too many levels of symbolic links)"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "cannot read: permission denied"
    if error.errno == errno.EISDIR:
        return "is a folder, not a trace file"
    return f"cannot read: {error.strerror or error}"


UTF8_BOM = b"\xef\xbb\xbf"


def read_bytes(path: Path, *, limit: int | None = None) -> bytes:
    """The uncompressed bytes of a `.json` or `.json.gz` file (gzip detected by magic number),
    without a UTF-8 byte-order mark. With `limit`, a file larger than that (uncompressed) is
    refused with a `TraceFormatError` once `limit + 1` bytes are read: never read whole first."""
    with open_trace_file(path) as handle:
        try:
            magic = handle.read(2)
            handle.seek(0)
            if magic == b"\x1f\x8b":
                try:
                    with _gzip.GzipFile(fileobj=handle) as source:
                        raw = source.read() if limit is None else source.read(limit + 1)
                except (*GZIP_ERRORS, OSError) as error:
                    raise TraceFormatError(f"{path}: truncated or corrupt gzip ({error})") from None
                if not raw.strip():
                    raise EmptyTraceError(f"{path}: {_blank(raw)} (after gunzip)")
            else:
                raw = handle.read() if limit is None else handle.read(limit + 1)
        except OSError as error:
            raise TraceFormatError(f"{path}: {os_problem(error)}") from None
    if not raw.strip():
        raise EmptyTraceError(f"{path}: {_blank(raw)}")
    if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM):]
    if limit is not None and len(raw) > limit:
        raise TraceFormatError(
            f"{path}: over {limit >> 20} MB and not laid out as a Kineto trace the streaming reader "
            "understands (a JSON object with a 'traceEvents' array, or an array of events)"
        )
    return raw


def _blank(raw: bytes) -> str:
    return "empty file" if not raw else f"holds only whitespace ({len(raw)} bytes), no JSON"


def read_blocks(path: Path, block_size: int = BLOCK_SIZE, *, limits: LoadLimits = LoadLimits(),
                front: int = 0) -> Iterator[tuple[bytes | bytearray, int]]:
    """The uncompressed bytes of a `.json`/`.json.gz` file, in blocks of `block_size`, each with
    how far into the file (on disk) reading got; read and gunzipped ahead by a background thread
    (inflating and file reads release the GIL, so this overlaps with decoding). A UTF-8 byte-order
    mark is dropped. Errors are the same one-line `TraceFormatError`s as `read_bytes`; a gzip that
    inflates more than `limits.inflation` times its size is refused (`LimitError`).

    `front`: each block is a `bytearray` whose first `front` bytes are free (for the caller to
    write what goes before the block) and the rest the block, read into it."""
    handle = open_trace_file(path)
    with handle:
        try:
            magic = handle.read(2)
            handle.seek(0)
        except OSError as error:
            raise TraceFormatError(f"{path}: {os_problem(error)}") from None
        if not magic:
            raise EmptyTraceError(f"{path}: empty file")
        compressed = magic == b"\x1f\x8b"
        source: BinaryIO = _gzip.GzipFile(fileobj=handle) if compressed else handle  # type: ignore[assignment]
        # a gzip file's `readinto` reads and copies (io.BufferedIOBase's); its buffer inflates in place
        reader = getattr(source, "_buffer", source) if compressed else source
        inflated = 0

        def read() -> tuple[bytes | bytearray, int]:
            nonlocal inflated
            block = source.read(block_size) if not front else _read_after(reader, front, block_size)
            position = handle.tell()
            if inflated == 0 and block[front:front + len(UTF8_BOM)] == UTF8_BOM:
                block = block[:front] + (block[front + len(UTF8_BOM):] or b" ")
            inflated += len(block) - front if block else 0
            if compressed and inflated > INFLATION_FLOOR and inflated > limits.inflation * max(position, 1):
                raise exceeded(path, f"inflates more than {limits.inflation:g} times its compressed size "
                               f"({inflated >> 20} MB from {max(position, 1) >> 10} KB so far: a gzip bomb?)",
                               "inflation", f"{10 * limits.inflation:g}")
            return block, position

        yield from _prefetched(read, path, compressed)


def _read_after(reader: Any, front: int, size: int) -> bytearray | bytes:
    """Up to `size` bytes read into a new bytearray after `front` free bytes; b"" at the end."""
    native = compiled()
    buffer = native.uninitialized(front + size) if native is not None else bytearray(front + size)
    buffer[:front] = bytes(front)  # no stale bytes before the block, where the caller may search
    count = reader.readinto(memoryview(buffer)[front:])
    if not count:
        return b""
    if count < size:
        del buffer[front + count:]
    return buffer


def _prefetched(read: Callable[[], tuple[bytes, int]], path: Path, compressed: bool) -> Iterator[tuple[bytes, int]]:
    # one block read ahead, read only once the consumer has taken the last (gunzipping takes a few
    # ms, decoding tens): a second one only held 16 MB more (docs/performance.md#decisions-and-why)
    blocks: queue.Queue[tuple[bytes, int] | BaseException] = queue.Queue(maxsize=1)
    taken = threading.Semaphore(1)
    stop = threading.Event()

    def work() -> None:
        try:
            while True:
                while not taken.acquire(timeout=0.1) and not stop.is_set():
                    pass
                if stop.is_set():
                    return
                item = read()
                blocks.put(item)  # never blocks: the queue is empty once the last block was taken
                if not item[0]:
                    return
        except BaseException as error:  # handed to the consuming thread
            blocks.put(error)

    worker = threading.Thread(target=work, name="traceanalyze-read", daemon=True)
    worker.start()
    try:
        while True:
            item = blocks.get()
            taken.release()
            if isinstance(item, BaseException):
                if compressed and isinstance(item, GZIP_ERRORS):
                    raise TraceFormatError(f"{path}: truncated or corrupt gzip ({item})") from None
                if isinstance(item, OSError):
                    what = "truncated or corrupt gzip" if compressed else "cannot read"
                    raise TraceFormatError(f"{path}: {what} ({item.strerror or item})") from None
                raise item
            if not item[0]:
                return
            yield item
    finally:
        stop.set()
        taken.release()  # a reader waiting for its turn wakes, sees the stop and ends
        worker.join()
