"""`_native.intern_spans` numbers the distinct shape-argument texts of a chunk (the scanner path
decodes each distinct text once, `load.columnar._raw_texts`): held to a dict that numbers byte
strings in order of first appearance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceanalyze.native import compiled

_native = compiled()
pytestmark = pytest.mark.skipif(_native is None,
                                reason="the compiled extension is not built (TRACEANALYZE_NO_NATIVE or no C compiler)")


def numbered(text: bytes, offsets: list[int], lengths: list[int]) -> tuple[list[int], list[int]]:
    """The reference: each span's number among the distinct texts (-1: no text), and each number's first span."""
    numbers: dict[bytes, int] = {}
    firsts: list[int] = []
    ids = []
    for index, (offset, length) in enumerate(zip(offsets, lengths)):
        if length <= 0:
            ids.append(-1)
            continue
        piece = text[offset:offset + length]
        if piece not in numbers:
            numbers[piece] = len(numbers)
            firsts.append(index)
        ids.append(numbers[piece])
    return ids, firsts


def interned(text: bytes, offsets: list[int], lengths: list[int]) -> tuple[list[int], list[int]]:
    ids, firsts = _native.intern_spans(text, np.array(offsets, dtype=np.int64), np.array(lengths, dtype=np.int64))
    return np.frombuffer(ids, dtype=np.int64).tolist(), np.frombuffer(firsts, dtype=np.int64).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=6), st.data())
def test_numbers_equal_texts_alike_and_others_apart(pieces, data):
    # texts from a few pieces, many repeated, some sharing a prefix, a length or a hash block
    text = b"".join(pieces) * 3 + bytes(17)
    spans = data.draw(st.lists(st.tuples(st.integers(0, len(text) - 1), st.integers(-1, 48)), max_size=60))
    offsets = [o for o, _ in spans]
    lengths = [min(k, len(text) - o) for o, k in spans]
    assert interned(text, offsets, lengths) == numbered(text, offsets, lengths)


def test_long_texts_that_differ_in_one_byte_are_two():
    base = bytes(range(256)) * 8
    text = base + base[:-1] + b"x" + base
    size = len(base)
    assert interned(text, [0, size, 2 * size], [size] * 3) == ([0, 1, 0], [0, 1])


def test_no_spans_and_spans_outside_the_text():
    assert interned(b"[1]", [], []) == ([], [])
    with pytest.raises(ValueError, match="outside"):
        interned(b"[1]", [2], [5])
    with pytest.raises(ValueError, match="outside"):
        interned(b"[1]", [-1], [2])
    with pytest.raises(ValueError, match="differ"):
        _native.intern_spans(b"[1]", np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int64))
