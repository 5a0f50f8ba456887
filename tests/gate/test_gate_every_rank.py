"""`gate` on a folder names every rank over a budget, not only the worst (issue 35: three other
ranks over the budget appeared nowhere): the terminal, the step summary, the JSON verdict, one
JUnit testcase per rank and budget, one annotation each. The synthetic job of tests/multirank.py:
ranks 0, 1 and 3 wait 5 ms of their 20 ms step 2 for the straggler (rank 2)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

import pytest
from typer.testing import CliRunner

import multirank as mr
from traceanalyze.cli import app

BUDGET = ["--max-wait-fraction", "0.2", "--statistic", "max"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return mr.write_job(tmp_path_factory.mktemp("job"))


def test_every_failing_rank_in_every_output(folder, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = CliRunner().invoke(app, ["gate", str(folder), *BUDGET, "--junit", str(tmp_path / "junit.xml"),
                                      "--width", "200"])
    assert result.exit_code == 1, result.output
    for rank in (0, 1, 3):
        assert f"✗ rank {rank}: collective wait fraction 25.00%" in result.output
        assert f"25.00% (rank {rank})" in result.output and f"25.00% (rank {rank})" in summary.read_text()
    assert "(rank 2)" not in result.output  # the straggler waits for no one: it passes
    errors = [line for line in result.output.splitlines() if line.startswith("::error")]
    assert [line.split("::")[2][:6] for line in errors] == ["rank 0", "rank 1", "rank 3"]
    cases = [case.get("name") for case in ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")]
    assert cases == ["max_wait_fraction.rank0", "max_wait_fraction.rank1", "max_wait_fraction.rank3"]

    verdict = json.loads(CliRunner().invoke(app, ["gate", str(folder), *BUDGET, "-f", "json"]).stdout)
    check = verdict["checks"][0]
    assert check["rank"] == 0 and "3 ranks break it" in check["message"]
    assert [other["rank"] for other in check["other_failures"]] == [1, 3]
    assert all(other["status"] == "fail" for other in check["other_failures"])
