"""Shared test helpers: the real traces in ``../shared/traces``, and a cache folder of the session's own.

Test modules can import the plain helpers (``from shared_traces import real_trace_paths,
real_trace_params, shared_trace``) and the synthetic builder (``from builder import TraceBuilder``):
pytest puts this folder on ``sys.path`` because it holds this conftest.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared_traces import MISSING_REASON, real_trace_paths

__all__ = ["real_trace_paths"]


@pytest.fixture(scope="session")
def shared_traces() -> list[Path]:
    """Every real trace under ``../shared/traces``; skips the test when there are none."""
    paths = real_trace_paths()
    if not paths:
        pytest.skip(MISSING_REASON)
    return paths


@pytest.fixture(scope="session", autouse=True)
def trace_cache_directory(tmp_path_factory) -> Iterator[Path]:
    """The cache of loaded traces (docs/cache.md) of every test, and of every command a test runs
    (the variable is inherited): a folder of this session's, never the user's own cache."""
    folder = tmp_path_factory.mktemp("trace-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRACEANALYZE_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture
def cache_everything(monkeypatch) -> None:
    """Small traces cached too (by default only those of `load.cache.MIN_TRACE_BYTES` or more are)."""
    from traceanalyze.load import cache

    monkeypatch.setattr(cache, "MIN_TRACE_BYTES", 0)


@pytest.fixture
def parses(monkeypatch) -> list[Path]:
    """The trace files the loader parses (rather than reads from the cache of loaded traces), in order."""
    from traceanalyze import load

    calls: list[Path] = []
    real = load.load_file

    def counting(path, **options):
        calls.append(Path(path))
        return real(path, **options)

    monkeypatch.setattr(load, "load_file", counting)
    return calls


@pytest.fixture(autouse=True)
def wide_text_output(monkeypatch):
    """Text outputs fit the terminal's width (`COLUMNS`, else 80 off a terminal); tests that read
    their sentences get a wide one, so that a sentence is on one line. Tests of the fitting itself
    pass `--width` / `width=` (tests/report/test_width.py)."""
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.fixture
def analyses(monkeypatch) -> list[Path]:
    """The rank files `rank_report` analyses, or `rank_reports` several together (a folder's small
    ranks: `mapreduce.analyse_files`), rather than the cache of analysed ranks serving them, in
    order."""
    from traceanalyze.pipeline import mapreduce, results_cache

    results_cache.frame_schemas()  # the schemas' own probe is not counted
    calls: list[Path] = []
    one, several = results_cache.rank_report, mapreduce.rank_reports

    def counting_one(trace, options):
        calls.append(trace.source)
        return one(trace, options)

    def counting_several(traces, options):
        calls.extend(trace.source for trace in traces)
        return several(traces, options)

    monkeypatch.setattr(results_cache, "rank_report", counting_one)
    monkeypatch.setattr(mapreduce, "rank_reports", counting_several)
    return calls
