"""Helpers for the capture tests: run the CLI in a subprocess, read what it wrote."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "scripts" / "examples"
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def run_cli(*args: str | os.PathLike[str], cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m traceanalyze ARGS…` in `cwd`, with one torch thread (CI runners are small)."""
    environment = {key: value for key, value in os.environ.items() if key not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    environment.update({"OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "traceanalyze", *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def capture_in_process(*args: str | os.PathLike[str], cwd: Path, env: dict[str, str] | None = None) -> Any:
    """`traceanalyze capture --no-report ARGS…` through typer's CliRunner, in `cwd`."""
    from typer.testing import CliRunner

    from traceanalyze.cli import app

    previous = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, ["capture", "--no-report", *map(str, args)], env=env)
    finally:
        os.chdir(previous)


def read_trace(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def complete_events(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [event for event in trace["traceEvents"] if event.get("ph") == "X"]


def step_names(trace: dict[str, Any]) -> list[str]:
    """Names of the `ProfilerStep#N` spans, in time order."""
    steps = [e for e in complete_events(trace) if e.get("name", "").startswith("ProfilerStep#")]
    return [e["name"] for e in sorted(steps, key=lambda e: e["ts"])]


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def stderr_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the profiler's own USDT/Kineto log lines."""
    return [line for line in result.stderr.splitlines() if line.strip()
            and not line.startswith(("USDT:", "STAGE:", "[W"))]
