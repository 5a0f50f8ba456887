"""Where the real traces recorded by others live, for tests that check against them.

The traces sit in ``../shared/traces`` next to the repository (see its ``SOURCES.md``) and are never
copied into it. Tests import from here (``from shared_traces import real_trace_paths``) or use the
``shared_traces`` fixture of ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES_DIR = REPO_ROOT.parent / "shared" / "traces"
MISSING_REASON = f"real traces not found: {SHARED_TRACES_DIR} (../shared/traces next to the repository)"


def real_trace_paths() -> list[Path]:
    """Every trace under ``../shared/traces`` (``*.json`` / ``*.json.gz``, sub-folders included),
    sorted; empty when the folder is absent."""
    if not SHARED_TRACES_DIR.is_dir():
        return []
    found = [*SHARED_TRACES_DIR.rglob("*.json.gz"), *SHARED_TRACES_DIR.rglob("*.json")]
    return sorted(found)


def trace_id(path: Path) -> str:
    """A short test id: the path under ``../shared/traces`` (``param_v100_dlrm_4ranks/rank0.json.gz``)."""
    return path.relative_to(SHARED_TRACES_DIR).as_posix()


def real_trace_params() -> list:
    """``pytest.param`` per real trace, for ``@pytest.mark.parametrize("path", real_trace_params())``;
    a single skipped param saying why when the folder is absent."""
    paths = real_trace_paths()
    if not paths:
        return [pytest.param(None, id="no-shared-traces", marks=pytest.mark.skip(reason=MISSING_REASON))]
    return [pytest.param(path, id=trace_id(path)) for path in paths]


RECORDED_DIR = REPO_ROOT / "fixtures" / "recorded"


def recorded_trace_paths() -> list[Path]:
    """The real traces kept in the repository (fixtures/recorded: recorded on an H100 and an H200 by
    this project, fixtures/recorded/README.md), present in every checkout."""
    return sorted(RECORDED_DIR.glob("*.json.gz"))


def decoder_trace_params() -> list:
    """``pytest.param`` per real trace a decoder comparison runs on: the recorded ones of fixtures/
    always (so the three decoders are compared on real data in a plain checkout), and every trace
    of ``../shared/traces`` where it is present."""
    recorded = [pytest.param(path, id=f"recorded/{path.name}") for path in recorded_trace_paths()]
    return [*recorded, *[pytest.param(path, id=trace_id(path)) for path in real_trace_paths()]]


def shared_trace(name: str) -> Path:
    """One named trace (``"hta_a100_alexnet.json.gz"``); skips the calling test if it is absent."""
    path = SHARED_TRACES_DIR / name
    if not path.is_file():
        pytest.skip(f"real trace not found: {path}")
    return path
