"""`gate SCALING_JSON --max-fixed-fraction F`: pass, fail and bad input on a synthetic sweep's JSON."""

from __future__ import annotations

import json

import pytest
from sweep_traces import cpu_run
from typer.testing import CliRunner

from traceanalyze.cli import app


@pytest.fixture()
def scaling_json(tmp_path):
    """Fixed 100 µs, sizes 8, 16, 32: the largest run's fixed share is 100 / 132 = 75.8%."""
    out = tmp_path / "scaling.json"
    result = CliRunner().invoke(app, ["scaling", *[str(cpu_run(tmp_path, s)) for s in (8, 16, 32)], "-f", "json",
                                      "-o", str(out), "--no-cache"])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("limit, code, mark", [("0.8", 0, "PASS"), ("75%", 1, "FAIL"), ("0.758", 0, "PASS")])
def test_the_largest_runs_fixed_share_is_judged(scaling_json, limit, code, mark):
    result = CliRunner().invoke(app, ["gate", str(scaling_json), "--max-fixed-fraction", limit])
    assert result.exit_code == code
    assert result.output.startswith(mark) and "(cpu_32.json): 75.8%" in result.output


@pytest.mark.parametrize("case, message", [("report", "judges a scaling report"), ("version", "schema_version 99"),
                                           ("limit", "between 0 and 1"), ("garbage", "not a readable scaling JSON")])
def test_bad_input_is_one_line_and_exit_2(scaling_json, tmp_path, case, message):
    path, limit = scaling_json, "0.5"
    if case == "report":
        path = tmp_path / "r.json"
        path.write_text(json.dumps({"schema_version": 1, "ranks": []}))
    elif case == "version":
        document = json.loads(scaling_json.read_text())
        path = tmp_path / "v.json"
        path.write_text(json.dumps({**document, "schema_version": 99}))
    elif case == "limit":
        limit = "2"
    else:
        path = tmp_path / "g.json"
        path.write_text("{not json")
    result = CliRunner().invoke(app, ["gate", str(path), "--max-fixed-fraction", limit])
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1
