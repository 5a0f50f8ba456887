"""`traceanalyze` (and `python -m traceanalyze`) leaves through `cli.run`: the command's exit code,
everything it wrote flushed, without the interpreter's teardown, except where something still
needs that teardown (a cluster client's shutdown, a thread still running)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from traceanalyze import cli

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"


@pytest.fixture(autouse=True)
def no_cluster_client(monkeypatch):
    """Each test starts as a fresh `traceanalyze` process does: no cluster client imported (other
    tests of this session import Ray or Dask; `cli.run` then rightly leaves through the teardown)."""
    for name in ("ray", "dask.distributed", "distributed"):
        monkeypatch.delitem(sys.modules, name, raising=False)


def _traceanalyze(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "traceanalyze", *argv], capture_output=True, text=True, timeout=300)


def test_a_report_written_to_a_pipe_arrives_whole():
    done = _traceanalyze("report", "--format", "json", "--no-cache", str(FIXTURE))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # the whole document: nothing left in a buffer at exit
    assert report["ranks"][0]["source"].endswith(FIXTURE.name)


def test_bad_input_keeps_its_exit_code_and_one_line(tmp_path):
    done = _traceanalyze("report", "--no-cache", str(tmp_path / "missing.json"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no such file" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_leaves_at_once_only_when_nothing_waits_for_the_exit(monkeypatch):
    assert cli._nothing_left_at_exit()
    monkeypatch.setitem(sys.modules, "ray", object())  # a Ray client shuts its cluster down at exit
    assert not cli._nothing_left_at_exit()
    monkeypatch.delitem(sys.modules, "ray")
    release = threading.Event()
    worker = threading.Thread(target=release.wait)  # a thread of the program still running
    worker.start()
    try:
        assert not cli._nothing_left_at_exit()
    finally:
        release.set()
        worker.join()
    assert cli._nothing_left_at_exit()


@pytest.mark.parametrize("code", [0, 2, None, "a message"])
def test_run_exits_as_main_did(monkeypatch, code):
    """An int or None leaves through os._exit with that code; anything else through sys.exit."""
    def main():
        raise SystemExit(code)

    exits = []
    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr(cli.os, "_exit", lambda status: exits.append(status))
    if isinstance(code, str):
        with pytest.raises(SystemExit) as raised:
            cli.run()
        assert raised.value.code == code and not exits
    else:
        cli.run()
        assert exits == [code or 0]
