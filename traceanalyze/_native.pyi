"""Types of the compiled helpers (`traceanalyze/_native.c`, `_native_ops.c`; see `traceanalyze.native`).
tests/test_public_api.py holds this stub to the C method table: the same names."""

from typing import Any

import numpy as np

# what this build of the scanner does (1: yes); the loader checks them before relying on them
EXACT_FLOAT_NS: int
PASSES_CATEGORIES: int
DROPS_PASSED: int
SCANS_BARE: int

def scan(text: bytes, arg_keys: tuple[str, ...], *rest: Any) -> dict[str, Any] | None:
    """Columnar scan of a JSON array of trace events (None: use msgspec)."""

def join_spans(text: bytes, offsets: np.ndarray, lengths: np.ndarray) -> bytes:
    """Raw texts at (offset, length) joined with NUL."""

def concat(buffers: tuple[bytes | bytearray | memoryview, ...]) -> bytes:
    """The buffers of a tuple joined into one bytes (b''.join, copied without the GIL)."""

def uninitialized(size: int) -> bytearray:
    """A bytearray of n bytes whose values are not set."""

def intern_spans(text: bytes, offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numbers of the distinct raw texts at (offset, length), and each one's first span."""

def enclose(*arrays: np.ndarray) -> np.ndarray:
    """The first op up each point's chain that is ok and ends after it."""

def merge(group_start: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of intervals sorted by group and start."""

def nest(thread_start: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent positions and depths of ops sorted by thread, start and end descending."""
