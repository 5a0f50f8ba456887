"""Shared test helpers: the real traces in ``../shared/traces``.

Test modules can import the plain helpers (``from shared_traces import real_trace_paths,
real_trace_params, shared_trace``) and the synthetic builder (``from builder import TraceBuilder``):
pytest puts this folder on ``sys.path`` because it holds this conftest.
"""

from __future__ import annotations

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
