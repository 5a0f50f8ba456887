"""Each loader limit fires just past its value and stays silent at it (load/limits.py)."""

from __future__ import annotations

import json

import pytest

from hostile.cases import EVENT, gap_between_events, nested_ops, whitespace_bomb

from traceanalyze.load import load_trace
from traceanalyze.load.limits import MIB, LimitError, LoadLimits


def test_events_per_file(tmp_path):
    path = tmp_path / "events.json"
    path.write_text(json.dumps({"traceEvents": [{**EVENT, "ts": float(i)} for i in range(1000)]}))
    assert load_trace(path, limits=LoadLimits(events=1000)).gpu.height == 1000
    with pytest.raises(LimitError, match=r"more than 999 events.*--max-events 1000 "):  # the file's count, not 4x
        load_trace(path, limits=LoadLimits(events=999))


def test_bytes_without_the_end_of_an_event(tmp_path):
    path = gap_between_events(tmp_path, megabytes=40)
    relaxed = LoadLimits(event_bytes=64 * MIB, inflation=1e6)
    assert load_trace(path, limits=relaxed).gpu.height == 2
    with pytest.raises(LimitError, match=r"no end of an event in \d+ MB.*--max-event-mb 64"):
        load_trace(path, limits=LoadLimits(event_bytes=16 * MIB, inflation=1e6))


def test_inflation(tmp_path):
    path = whitespace_bomb(tmp_path)  # 128 MB of whitespace from about 130 KB
    with pytest.raises(LimitError, match=r"inflates more than 100 times.*--max-inflation 1000"):
        load_trace(path)
    assert load_trace(path, limits=LoadLimits(inflation=1e4)).gpu.height == 2


def test_op_nesting_depth(tmp_path):
    """Walks up the op tree cost points × depth: a trace of ops nested 20,000 deep took 39 s (and
    grows with the square of its size); the limit keeps it linear."""
    path = tmp_path / "deep.json"
    path.write_text(json.dumps({"traceEvents": nested_ops(100)}))
    assert load_trace(path, limits=LoadLimits(op_depth=100), cache=False).cpu_ops["depth"].max() == 99
    with pytest.raises(LimitError, match=r"CPU ops nested 100 deep \(more than 99\).*--max-op-depth 100 "):
        load_trace(path, limits=LoadLimits(op_depth=99), cache=False)


def test_op_nesting_depth_of_a_cached_trace(tmp_path, cache_everything, parses):
    path = tmp_path / "deep.json"
    path.write_text(json.dumps({"traceEvents": nested_ops(100)}))
    cache = tmp_path / "cache"
    load_trace(path, limits=LoadLimits(op_depth=100), cache=cache)  # parsed and cached
    with pytest.raises(LimitError, match="--max-op-depth 100 "):
        load_trace(path, limits=LoadLimits(op_depth=99), cache=cache)
    assert parses == [path]  # the second load read the cache, and refused it all the same
