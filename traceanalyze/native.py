"""The compiled helpers (`traceanalyze/_native.c`, `_native_ops.c`), when the install could build them.

Each caller keeps a polars/msgspec version of what it asks the C code for, used without it (and as
the reference its tests hold the C version to)."""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any

_BRIDGE_LOCK, _BRIDGE_READY = threading.Lock(), threading.Event()  # see `numpy_for_threads`


def compiled() -> ModuleType | None:
    """`traceanalyze._native`, or None where no C compiler was found at install, or where the
    environment says `TRACEANALYZE_NO_NATIVE=1` (to run, and test, the fallbacks)."""
    if os.environ.get("TRACEANALYZE_NO_NATIVE", "") not in ("", "0"):
        return None
    try:
        from traceanalyze import _native
    except ImportError:  # pragma: no cover - built by setup.py wherever a C compiler is
        return None
    return _native


def int64_array(values: Any) -> Any:
    """A polars Series or numpy array as a contiguous int64 numpy array (no copy when it is one
    already): what the C helpers read. numpy is imported here, not by the callers' modules, so
    that small traces never load it."""
    np = numpy_for_threads()
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    return np.ascontiguousarray(values, dtype=np.int64)


def numpy_for_threads() -> ModuleType:
    """numpy, with polars' bridge to it imported once, in whichever thread asks first, while the
    others wait: polars imports its numpy support lazily on first use, and two threads doing that
    first use at once fail ("'module' object does not support item assignment", seen on a 1 GB
    trace). The decoding threads ask as they scan; the analysis threads (the compiled walks) ask
    too, for a trace read back from the cache, which no decoding thread prepared."""
    import numpy

    if not _BRIDGE_READY.is_set():
        with _BRIDGE_LOCK:
            if not _BRIDGE_READY.is_set():
                import polars as pl

                pl.Series(numpy.empty(0, dtype=numpy.uint8))
                _BRIDGE_READY.set()
    return numpy
