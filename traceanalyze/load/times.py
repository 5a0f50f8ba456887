"""Trace times, microseconds as written → int64 nanoseconds, exactly.

Kineto writes `ts` and `dur` in microseconds, as integers or with a nanosecond fraction
(`1712345678901234.567`). A float64 holds every integer up to 2^53 exactly, so below
`EXACT_FLOAT_US` (2^53 ns in µs) the nanoseconds are recovered from the float itself: the k
whose k / 1000 parses back to the same float. Above it the float has lost them (a 1.7e15 µs
timestamp is 252 ns off at worst): they are read from the decimal text instead, integer and
fraction digits apart, rounded half to even beyond three decimals. Which rule applies depends
only on the value, so every decode path (the compiled scanner, msgspec, the general path) gives
the same nanoseconds for the same text. docs/metrics.md ("Times") says so for users.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

import msgspec

EXACT_FLOAT_US = 9_007_199_254_740.0  # below this, k ± 1 (k = µs × 1000) are exact float64s
LARGEST_US = 9e15  # beyond this (in µs) a time is no time: its ns would not fit int64 with room


class DecimalFloat(float):
    """A JSON float that keeps its text: what the general decode path gives (`decode_hook`), so
    that `to_ns` can be exact where the float is not."""

    __slots__ = ("text",)
    text: str


def decode_hook(text: str) -> DecimalFloat:
    """`float_hook` of the msgspec decoders whose fields are untyped (`Any`)."""
    number = DecimalFloat(text)
    number.text = text
    return number


def encode_hook(value: Any) -> Any:
    """`enc_hook` for encoding what `decode_hook` made: its own text, as written (a Decimal would
    be encoded in other digits: `1.2210779145025802e16` as `12210779145025802`, and a shape
    argument re-encoded by the tolerant path would then read differently from the typed one)."""
    if isinstance(value, DecimalFloat):
        return msgspec.Raw(value.text.encode())
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


def decimal_ns(text: str) -> int | None:
    """A decimal µs text → ns, exact (half to even beyond three decimals); None if not a number."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    return int((value * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))


def float_ns(value_us: float) -> int | None:
    """A float number of µs → ns: exact for anything written with at most three decimals below
    `EXACT_FLOAT_US`; above it, from the text when `value_us` kept it (`DecimalFloat`), else the
    nearest. None for NaN and beyond `LARGEST_US`."""
    if not (value_us == value_us and abs(value_us) < LARGEST_US):
        return None
    if abs(value_us) >= EXACT_FLOAT_US and isinstance(value_us, DecimalFloat):
        return decimal_ns(value_us.text)
    # the integer k whose k/1000 parses back to the same float (the trace wrote at most three
    # decimals): `round(µs × 1000)` alone is off by one for about a quarter of timestamps between
    # 2^42 and 2^43 µs, where the float product rounds to a half
    nearest = round(value_us * 1000)
    if nearest / 1000 == value_us:
        return nearest
    for candidate in (nearest - 1, nearest + 1):
        if candidate / 1000 == value_us:
            return candidate
    return nearest
