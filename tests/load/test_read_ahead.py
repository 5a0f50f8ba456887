"""The streaming reader's plumbing: its background reader keeps one block ahead of the consumer
(`reading._prefetched`), stops when the consumer does, and hands the reader's errors over; the
decoding threads join a chunk's parts with `_native.concat`, held to `b"".join`; a table already
in order is kept as it is (`assemble._sorted`)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from traceanalyze.errors import TraceFormatError
from traceanalyze.load.assemble import _sorted
from traceanalyze.load.reading import _prefetched
from traceanalyze.native import compiled

_native = compiled()


class CountingReader:
    """A `read` for `_prefetched`: block k is b"<k>" until `blocks`, then the empty end block;
    it counts its calls."""

    def __init__(self, blocks: int, fail_at: int | None = None):
        self.blocks, self.fail_at, self.calls = blocks, fail_at, 0
        self.lock = threading.Lock()

    def __call__(self) -> tuple[bytes, int]:
        with self.lock:
            self.calls += 1
            k = self.calls
        if k == self.fail_at:
            raise OSError(5, "Input/output error")
        return (str(k).encode() if k <= self.blocks else b""), k


def _settled(reader: CountingReader, expected: int) -> int:
    """The reader's calls once it has made `expected` (waited for, however slow the machine) and
    then had time to make more if it ran further ahead."""
    deadline = time.monotonic() + 10
    while reader.calls < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # time enough for a reader thread that would run ahead to do so
    return reader.calls


def test_the_reader_keeps_one_block_ahead_of_the_consumer():
    reader = CountingReader(blocks=10)
    blocks = _prefetched(reader, Path("trace.json"), compressed=False)
    assert next(blocks) == (b"1", 1)
    assert _settled(reader, 2) == 2  # the block taken and the one read ahead: not a third
    assert next(blocks) == (b"2", 2)
    assert _settled(reader, 3) == 3
    assert [block for block, _ in blocks] == [str(k).encode() for k in range(3, 11)]
    assert reader.calls == 11  # and the empty block that ends the file


def test_a_consumer_that_stops_stops_the_reader_promptly():
    reader = CountingReader(blocks=1000)
    blocks = _prefetched(reader, Path("trace.json"), compressed=False)
    next(blocks)
    _settled(reader, 2)
    started = time.perf_counter()
    blocks.close()  # joins the reader thread
    assert time.perf_counter() - started < 1.0
    read = reader.calls
    assert _settled(reader, read) == read == 2
    assert not any(t.name == "traceanalyze-read" and t.is_alive() for t in threading.enumerate())


def test_a_read_error_reaches_the_consumer_as_one_line():
    blocks = _prefetched(CountingReader(blocks=10, fail_at=3), Path("trace.json"), compressed=False)
    assert [next(blocks)[0], next(blocks)[0]] == [b"1", b"2"]
    with pytest.raises(TraceFormatError, match=r"trace.json: cannot read \(Input/output error\)"):
        next(blocks)


@pytest.mark.skipif(_native is None,
                    reason="the compiled extension is not built (TRACEANALYZE_NO_NATIVE or no C compiler)")
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=64), st.sampled_from(["bytes", "memoryview", "bytearray"]),
                          st.integers(0, 8)), max_size=8))
def test_concat_is_bytes_join(parts):
    made = []
    for data, kind, start in parts:
        if kind == "bytes":
            made.append(data)
        elif kind == "memoryview":
            made.append(memoryview(data)[min(start, len(data)):])  # a view into a larger buffer
        else:
            made.append(bytearray(data))
    joined = _native.concat(tuple(made))
    assert type(joined) is bytes
    assert joined == b"".join(made)


@pytest.mark.skipif(_native is None,
                    reason="the compiled extension is not built (TRACEANALYZE_NO_NATIVE or no C compiler)")
def test_concat_refuses_what_is_no_buffer():
    with pytest.raises(TypeError):
        _native.concat((b"[", 3, b"]"))
    with pytest.raises(TypeError):
        _native.concat([b"a list"])


@pytest.mark.parametrize("starts", [[1, 2, 2, 3, 5], [5, 1, 3, 2, 2], [2, 2, 2, 2, 2]])
def test_a_table_is_sorted_stably_and_one_in_order_is_kept_as_it_is(starts):
    frame = pl.DataFrame({"start_ns": starts, "device": [0, 1, 0, 1, 0], "stream": [7, 7, 3, 3, 7],
                          "row": list(range(5))})
    expected = frame.sort("start_ns", "device", "stream", maintain_order=True)
    result = _sorted([frame], "start_ns", "device", "stream")
    assert_frame_equal(result, expected)
    in_order = expected.equals(frame)
    assert (result is frame) == in_order  # no copy of a table that is already in order
