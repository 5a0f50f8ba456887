"""The cache folder is writable by whoever can write the user's home: an entry path that holds a
FIFO, a device or a link is no entry (opened without blocking, checked with fstat), and what a
cached entry holds is judged against this run's limits as the file itself would be."""

from __future__ import annotations

import json
import os
import threading

import pytest

from hostile.cases import nested_ops
from traceanalyze import cache_files
from traceanalyze.api import analyze
from traceanalyze.pipeline.options import RunOptions
from traceanalyze.load import load_trace
from traceanalyze.load.limits import LimitError, LoadLimits


def test_open_regular_refuses_a_fifo_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "entry.tables")
    opened: list[object] = []
    worker = threading.Thread(target=lambda: opened.append(cache_files.open_regular(tmp_path / "entry.tables")),
                              daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "opening a FIFO blocked"
    assert opened == [None]
    (tmp_path / "real").write_bytes(b"x")
    os.symlink(tmp_path / "real", tmp_path / "link.tables")
    assert cache_files.open_regular(tmp_path / "link.tables") is None  # an entry is never a link
    with cache_files.open_regular(tmp_path / "real") as handle:  # type: ignore[union-attr]
        assert handle.read() == b"x"


def test_a_fifo_at_every_entry_path_does_not_block_a_report_or_a_load(tmp_path, cache_everything):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": nested_ops(3)}))
    cache = tmp_path / "cache"
    analyze(trace, run=RunOptions(cache=cache))  # writes the entries of both levels
    entries = [p for p in cache.iterdir() if p.suffix in (".tables", ".results")]
    assert len(entries) == 2
    for entry in entries:
        entry.unlink()
        os.mkfifo(entry)
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.extend([analyze(trace, run=RunOptions(cache=cache)),
                                                          load_trace(trace, cache=cache)]),
                              daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "a FIFO in the cache blocked the report"
    assert len(done) == 2


def test_the_analysed_rank_cache_keeps_the_op_depth_limit(tmp_path, cache_everything, analyses):
    trace = tmp_path / "deep.json"
    trace.write_text(json.dumps({"traceEvents": nested_ops(100)}))
    cache = tmp_path / "cache"
    analyze(trace, run=RunOptions(cache=cache, limits=LoadLimits(op_depth=100)))  # analysed and cached
    analyze(trace, run=RunOptions(cache=cache, limits=LoadLimits(op_depth=100)))  # from the cache of analysed ranks
    assert len(analyses) == 1
    with pytest.raises(LimitError, match=r"CPU ops nested 100 deep.*--max-op-depth 100 "):
        analyze(trace, run=RunOptions(cache=cache, limits=LoadLimits(op_depth=99)))
