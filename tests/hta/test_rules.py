"""`traceanalyze.hta.rules.hta_times`: HTA's µs rounding of our ns, vectorised, equals Python's
correctly rounded `int / 1000` (what JSON parsing gives) event by event."""

from __future__ import annotations

import math
import random

import polars as pl

from traceanalyze.hta.rules import hta_times


def python_rounding(start: int, end: int) -> tuple[int, int]:
    return math.ceil(start / 1000) * 1000, math.floor(start / 1000 + (end - start) / 1000) * 1000


def test_vectorised_rounding_equals_pythons():
    generator = random.Random(7)
    starts = [generator.randrange(0, 2**53 - 2**40) for _ in range(20_000)]
    starts += [1_000 * generator.randrange(0, 2**40) + r for r in (0, 1, 499, 500, 999) for _ in range(200)]
    ends = [s + generator.choice([0, 1, 400, 600, 999, 1000, 1001, generator.randrange(0, 10**9)]) for s in starts]
    frame = pl.DataFrame({"start_ns": starts, "end_ns": ends})
    rounded = hta_times(frame, True)
    assert list(rounded.iter_rows()) == [python_rounding(s, e) for s, e in zip(starts, ends)]
    assert hta_times(frame, False).equals(frame)


def test_beyond_two_to_the_53_ns_python_rounds():
    starts = [1_694_128_201_435_377_123, 4_458_676_569_036_363_000]
    ends = [s + 1_500 for s in starts]
    rounded = hta_times(pl.DataFrame({"start_ns": starts, "end_ns": ends}), True)
    assert list(rounded.iter_rows()) == [python_rounding(s, e) for s, e in zip(starts, ends)]
