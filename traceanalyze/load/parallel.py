"""A folder of rank traces loaded on every core: one process per rank file (`load_parallel`).
Each runs `files.load_file` on one file, a pure function from a file to its `Trace` (no shared
state, nothing read but the file), and sends the `Trace` back pickled (its tables travel as Arrow
IPC). Another executor (Ray, Dask) can map the same function over files on many machines.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, wait
from pathlib import Path
from typing import Any

from traceanalyze.load.chunk_workers import spawn_pool
from traceanalyze.load.files import load_file
from traceanalyze.load.limits import LoadLimits
from traceanalyze.model import Trace

OnProgress = Callable[[int, int, int], None]  # (file index, bytes read, file size)

_progress_queue: Any = None


def _initialise(progress_queue: Any) -> None:
    global _progress_queue
    _progress_queue = progress_queue


def _load(index: int, path: str, include_python: bool, include_flows: bool, limits: LoadLimits) -> Trace:
    report = None
    if _progress_queue is not None:
        def report(done: int, total: int) -> None:
            _progress_queue.put((index, done, total))
    return load_file(Path(path), include_python=include_python, include_flows=include_flows, progress=report, workers=1,
                     limits=limits)


def load_parallel(files: list[Path], *, include_python: bool, workers: int, include_flows: bool = False,
                  on_progress: OnProgress | None = None, limits: LoadLimits = LoadLimits()) -> list[Trace]:
    """Every file's `Trace`, in the order of `files`, loaded by `workers` processes. The first
    error (in file order) is raised once every worker has stopped."""
    context = multiprocessing.get_context("spawn")
    progress_queue = context.Queue() if on_progress is not None else None
    with spawn_pool(workers, initializer=_initialise, initargs=(progress_queue,)) as pool:
        futures = [pool.submit(_load, i, str(f), include_python, include_flows, limits) for i, f in enumerate(files)]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
            if progress_queue is not None:
                _drain(progress_queue, on_progress)
            if any(f.exception() is not None for f in done):
                for future in pending:
                    future.cancel()
                break
        for future in futures:  # raises the first error in file order
            if future.done() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]
        return [future.result() for future in futures]


def _drain(progress_queue: Any, on_progress: OnProgress | None) -> None:
    while True:
        try:
            index, done, total = progress_queue.get_nowait()
        except queue.Empty:
            return
        if on_progress is not None:
            on_progress(index, done, total)


