"""An executor that fails is one line naming it, exit 2, never a traceback (jobs/failures.py): a
killed local worker, a Dask scheduler that does not answer or an address of an unknown scheme,
`ray://` without Ray's client. Credentials in an address are never printed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from traceanalyze.errors import TraceFormatError
from traceanalyze.pipeline import executors
from traceanalyze.pipeline.failures import ExecutorError, guarded, without_credentials
from traceanalyze.report.model import ReportOptions

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"


def _die(*_args, **_kwargs):
    os._exit(9)  # a worker killed mid-rank (OOM killer, kill -9)


@pytest.fixture
def folder(tmp_path) -> Path:
    for rank in range(2):
        shutil.copyfile(FIXTURE, tmp_path / f"rank{rank}.json.gz")
    return tmp_path


def test_a_killed_local_worker_is_one_error(folder, monkeypatch):
    monkeypatch.setattr(executors, "analyse_file", _die)
    with pytest.raises(ExecutorError, match=r"^--executor local: a worker process died .*BrokenProcessPool"):
        executors.analyse_folder(folder, ReportOptions(), workers=2)


def test_our_own_errors_pass_and_others_name_the_executor():
    def bad_input():
        raise TraceFormatError("x.json: not JSON")

    with pytest.raises(TraceFormatError, match="x.json: not JSON"):
        guarded("local", None, bad_input)

    def unreachable():
        raise OSError("Timed out trying to connect to tcp://u:secret@10.0.0.9:8786 after 10 s")

    with pytest.raises(ExecutorError) as raised:
        guarded("dask", "tcp://u:secret@10.0.0.9:8786", unreachable)
    assert str(raised.value) == ("--executor dask: cannot reach tcp://10.0.0.9:8786 (OSError: Timed out trying to "
                                 "connect to tcp://10.0.0.9:8786 after 10 s)")

    def broken():
        raise BrokenProcessPool("A process in the process pool was terminated abruptly")

    with pytest.raises(ExecutorError, match="^--executor local: a worker process died"):
        guarded("local", None, broken)


def test_without_credentials_keeps_the_url_intact():
    assert without_credentials("see http://a:b@h:1/x/y.json.gz?q=1#f") == "see http://h:1/x/y.json.gz?q=1#f"
    assert without_credentials("s3://key@bucket/p and ray://head:10001") == "s3://bucket/p and ray://head:10001"


@pytest.mark.parametrize(("address", "said"), [
    ("foo://x", "--executor dask: cannot use the address foo://x (ValueError: unknown address scheme 'foo'"),
    ("tcp://127.0.0.1:1", "--executor dask: cannot reach tcp://127.0.0.1:1 (OSError: Timed out"),
    ("tcp://user:pw@127.0.0.1:1", ("--executor dask: cannot use the address tcp://127.0.0.1:1 (ValueError: invalid "
                                   "address '127.0.0.1:1'")),
])
def test_a_bad_dask_address_is_one_line(folder, address, said):
    result = subprocess.run([sys.executable, "-m", "traceanalyze", "report", str(folder), "--executor", "dask",
                             "--executor-address", address], capture_output=True, text=True, timeout=120,
                            check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 2
    assert result.stderr.startswith(f"traceanalyze: error: {said}"), result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "pw" not in result.stderr
