"""The chunks of one large file decoded on every core. The main process reads, gunzips and cuts
the event array into chunks; threads decode them (`decode_in_threads`: the compiled scanner and
polars release the GIL). Without the compiled scanner (msgspec holds the GIL) worker processes
decode them instead (`ChunkPool`): a chunk reaches its worker through shared memory (a pipe would
copy a gigabyte of JSON three times); its tables come back pickled.

Workers are spawned, not forked: polars' thread pool does not survive a fork (`spawn_pool`).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any


def spawn_pool(workers: int, *, initializer: Callable[..., None] | None = None,
               initargs: tuple[Any, ...] = (), polars_threads: int | None = None) -> ProcessPoolExecutor:
    """A pool of `workers` spawned processes, all started now; with `polars_threads`, each
    worker's polars runs that many threads (`POLARS_MAX_THREADS`; default one per core).

    A spawned process runs the parent's main script again unless it sits under
    `if __name__ == "__main__":`; a user's script that calls `load_trace` at top level does not, so
    the workers are started while `__main__` does not name its file: they import only our modules.
    """
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=initializer, initargs=initargs)
    with main_script_hidden(), _environment(POLARS_MAX_THREADS=polars_threads):
        started = [pool.submit(_warm) for _ in range(workers)]
    for future in started:
        future.result()
    return pool


@contextmanager
def _environment(**values: int | None) -> Iterator[None]:
    """While inside, the environment holds `values` (those not None), which processes spawned now
    inherit; this process's own is put back after."""
    saved = {name: os.environ.get(name) for name, value in values.items() if value is not None}
    os.environ.update({name: str(value) for name, value in values.items() if value is not None})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def main_script_hidden() -> Iterator[None]:
    """While inside, `__main__` does not name the user's script: processes spawned now (decoding
    workers, a local Dask cluster) import only modules, never run the script again."""
    main = sys.modules.get("__main__")
    saved = getattr(main, "__file__", None) if main is not None else None
    if saved is not None and getattr(main, "__spec__", None) is None:
        del main.__file__  # type: ignore[union-attr]
        try:
            yield
        finally:
            main.__file__ = saved  # type: ignore[union-attr]
    else:
        yield


def _warm() -> None:
    import traceanalyze.load.decode  # noqa: F401  (polars, msgspec: the slow imports)



def decode_in_threads(pieces: Iterable[tuple[bytes | memoryview, ...]], workers: int, *,
                      include_python: bool) -> Iterator[Any]:
    """Each piece (the parts of a chunk's events text, without brackets) → tables, in order,
    decoded by `workers` threads of this process. The compiled scanner and polars release the
    GIL, so threads use every core without a process's start-up, pickling or second copy of
    the chunk; a few chunks are in flight at a time.

    A thread scans a piece and, when it holds `decode.FINISH_ROWS` rows or more, finishes it; the
    scanned pieces of fewer rows are finished together in order, by the next free thread, once
    they hold that many (`decode.finish_pieces`): one `ChunkTables` for several pieces.

    Long: the threads' hand-offs (scan, finish, order) share one queue and its bookkeeping;
    written in one place so the order of results can be read from top to bottom."""
    from concurrent.futures import ThreadPoolExecutor

    from traceanalyze.load import decode as decoding
    from traceanalyze.load.chunk import ChunkTables
    from traceanalyze.load.columnar import prepare_for_threads
    from traceanalyze.native import compiled

    native = compiled()
    # b"".join, without the GIL where the scanner is built: a chunk's copy then no longer stops the
    # other decoding threads (3 ms per chunk, beside its 40 ms of decoding, held the GIL)
    join = native.concat if native is not None else b"".join

    def scan(held: list[tuple[bytes | memoryview, ...]]) -> Any:
        parts = held.pop()
        if len(parts) == 1:  # one piece of text: scanned where it lies
            scanned = decoding.scan_items(parts[0], include_python=include_python)
        else:
            text = join((b"[", *parts, b"]"))
            del parts  # the parts (views of whole blocks) are freed here
            scanned = decoding.scan_chunk(text, include_python=include_python)
        parts = text = None  # the text is freed before the tables are made
        if isinstance(scanned, ChunkTables) or scanned.rows < decoding.FINISH_ROWS:
            return scanned
        return decoding.finish_pieces([scanned])

    scanning: deque[Future] = deque()  # one per piece, in order
    finishing: deque[Future] = deque()  # the tables, in order
    batch: list[Any] = []  # scanned pieces of few rows, waiting to be finished together

    def flush() -> None:
        if batch:
            finishing.append(pool.submit(decoding.finish_pieces, batch.copy()))
            batch.clear()

    def settle(result: Any) -> None:
        """A piece's scan result, in order: tables follow the batch before them; a scanned piece
        joins the batch, which is finished once it holds enough rows."""
        if isinstance(result, ChunkTables):
            flush()
            finishing.append(_done(result))
            return
        batch.append(result)
        if sum(piece.rows for piece in batch) >= decoding.FINISH_ROWS or len(batch) >= decoding.FINISH_PIECES:
            flush()

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="traceanalyze-decode") as pool:
        # numpy's import, in a decoding thread while the first pieces are read and scanned (a scan
        # waits for it only once its compiled part is done); its error, if any, is the scans' too
        pool.submit(prepare_for_threads)
        try:
            for parts in pieces:
                while len(scanning) >= workers:
                    settle(scanning.popleft().result())
                    while finishing and (finishing[0].done() or len(finishing) > workers):
                        yield finishing.popleft().result()
                scanning.append(pool.submit(scan, [parts]))  # a list the thread empties: no one else holds them
                del parts
            while scanning:
                settle(scanning.popleft().result())
            flush()
            while finishing:
                yield finishing.popleft().result()
        finally:
            for future in (*scanning, *finishing):
                future.cancel()


def _done(result: Any) -> Future:
    future: Future = Future()
    future.set_result(result)
    return future


class ChunkPool:
    """Worker processes that decode chunks of events (`decode.decode_chunk`), fed through slots
    of shared memory. Use as a context manager; `map(pieces)` yields the chunks' tables in order."""

    def __init__(self, workers: int, *, include_python: bool, slot_size: int):
        from multiprocessing.shared_memory import SharedMemory

        self.include_python = include_python
        self.workers = workers
        self.slot_size = slot_size
        self._slots: list[Any] = []
        self._pool = spawn_pool(workers)
        try:
            for _ in range(2 * workers):
                self._slots.append(SharedMemory(create=True, size=slot_size))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> ChunkPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def map(self, pieces: Iterable[tuple[bytes | memoryview, ...]]) -> Iterator[Any]:
        """Each piece (the parts of a chunk's events text, without brackets) → its tables."""
        free = list(range(len(self._slots)))
        in_flight: deque[tuple[Future, int | None]] = deque()
        for parts in pieces:
            if not free or len(in_flight) >= len(self._slots):
                future, slot = in_flight.popleft()
                yield future.result()
                if slot is not None:
                    free.append(slot)
            length = sum(len(part) for part in parts) + 2
            if length <= self.slot_size:
                slot = free.pop()
                buffer = self._slots[slot].buf
                buffer[0:1] = b"["
                position = 1
                for part in parts:
                    buffer[position:position + len(part)] = part
                    position += len(part)
                buffer[position:position + 1] = b"]"
                future = self._pool.submit(_decode_slot, self._slots[slot].name, length, self.include_python)
                in_flight.append((future, slot))
            else:  # larger than a slot (rare): through the pipe
                future = self._pool.submit(_decode_bytes, b"".join((b"[", *parts, b"]")), self.include_python)
                in_flight.append((future, None))
        while in_flight:
            future, _ = in_flight.popleft()
            yield future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        for slot in self._slots:
            slot.close()
            slot.unlink()
        self._slots = []


_attached: dict[str, Any] = {}


def _decode_slot(name: str, length: int, include_python: bool) -> Any:
    from traceanalyze.load.decode import decode_chunk

    slot = _attached.get(name)
    if slot is None:
        from multiprocessing.shared_memory import SharedMemory

        # registers it again with the parent's resource tracker (a set: no harm); the parent unlinks it
        slot = _attached[name] = SharedMemory(name=name)
    view = slot.buf[:length]
    try:
        return decode_chunk(view, include_python=include_python)
    finally:
        try:
            view.release()
        except BufferError:
            pass


def _decode_bytes(text: bytes, include_python: bool) -> Any:
    from traceanalyze.load.decode import decode_chunk

    return decode_chunk(text, include_python=include_python)

