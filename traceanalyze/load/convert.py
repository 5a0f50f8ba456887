"""The conversions every decode path shares: a JSON value as written → the integer, float or
nanosecond time a table column holds, exactly as the general path reads it (the fast paths are
checked against these, tests/load/test_streaming.py)."""

from __future__ import annotations

import re
import zlib
from typing import Any

import polars as pl

from traceanalyze.load import classify, times

_DIGITS = re.compile(r"-?\d+")
_STREAM_IN_NAME = re.compile(r"(\d+)")


def as_int(value: Any) -> int | None:
    """An integer from an int, a whole float, a decimal string or a hex string; else None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value == value and abs(value) < 9.2e18 else None
    if isinstance(value, str):
        text = value.strip()
        if _DIGITS.fullmatch(text):
            return int(text)
        if text.lower().startswith("0x"):
            try:
                return int(text, 16)
            except ValueError:
                return None
    return None


def thread_id(value: Any) -> int | None:
    """pid/tid as an integer; a non-numeric name (e.g. "stream 7", "Spans") gets a stable
    negative id so it never collides with a real one."""
    number = as_int(value)
    if number is not None or value is None:
        return number
    return -1 - zlib.crc32(str(value).encode())


def as_float(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def to_ns(value_us: Any) -> int | None:
    """µs → int ns, exactly (`times.float_ns` for a float: from its decimal text where the float
    has lost the nanoseconds)."""
    if isinstance(value_us, int) and not isinstance(value_us, bool):
        # beyond int64 ns (less a day, so that start + duration fits too) it is not a time
        return value_us * 1000 if abs(value_us) < INT64_US_LIMIT - classify.MAX_DURATION_US else None
    if isinstance(value_us, float):
        return times.float_ns(value_us)
    return None


def int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    return None


def stream_from_tid(tid: Any) -> int | None:
    number = as_int(tid)
    if number is not None:
        return number
    if isinstance(tid, str):
        match = _STREAM_IN_NAME.search(tid)
        if match:
            return int(match.group(1))
    return None


def fitting(value: Any, dtype: pl.DataType) -> int | None:
    """`as_int(value)` when the column's integer type holds it, else None (a hand-made 1e30)."""
    number = as_int(value)
    bits = 32 if dtype == pl.Int32 else 64
    return number if number is not None and -(1 << (bits - 1)) <= number < 1 << (bits - 1) else None



INT64_US_LIMIT = (1 << 63) // 1000  # integer µs whose ns still fit in int64
EXACT_FLOAT_US = times.EXACT_FLOAT_US  # from here on, a float's ns come from its text
END_LIMIT_US = 9.2e15  # a start and a duration whose sum (in ns) may not fit in int64
