"""A name of 10 MB (kernel, annotation, device) is kept to its first MAX_NAME_CHARS characters
and the count of those dropped, in every output: it made 514 MB of JSON, 399 MB of HTML and 10.5 MB
of step summary (GitHub drops summaries over 1 MiB)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from traceanalyze.load.long_names import MAX_NAME_CHARS

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"
LONG = 10_000_000
DROPPED = f"…[+{LONG - MAX_NAME_CHARS:,} characters]"


@pytest.fixture(scope="module")
def long_names(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("long")
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    trace["deviceProperties"][0]["name"] = "D" * LONG
    kernel = next(e for e in trace["traceEvents"] if e.get("cat") == "kernel")
    kernel["name"] = "K" * LONG
    annotation = next(e for e in trace["traceEvents"] if e.get("cat") == "user_annotation")
    annotation["name"] = "A" * LONG
    (folder / "long.json").write_text(json.dumps(trace))  # plain: 30 MB of one letter inflates past the gzip limit
    return folder


def run(*args, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    environment.update({"PYTHONPATH": str(REPO), **(env or {})})
    return subprocess.run([sys.executable, "-m", "traceanalyze", *map(str, args)], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("form", ["json", "html", "markdown", "terminal"])
def test_every_report_format_stays_small(long_names, form):
    result = run("report", "long.json", "-f", form, "--no-cache", cwd=long_names)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(result.stdout) < 3_000_000, len(result.stdout)
    assert "K" * (MAX_NAME_CHARS + 1) not in result.stdout and "D" * (MAX_NAME_CHARS + 1) not in result.stdout
    if form == "json":  # the whole bounded name, and how much of it was dropped (others shorten it further)
        assert "K" * MAX_NAME_CHARS + DROPPED in result.stdout


def test_the_step_summary_stays_under_one_mib(long_names, tmp_path):
    summary = tmp_path / "summary.md"
    result = run("gate", long_names / "long.json", "--baseline", FIXTURE, "--max-regression", "1%",
                 "--allow-unreliable",
                 "--max-idle-fraction", "0.01", "--no-cache", cwd=tmp_path,
                 env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 1, result.stderr[-2000:]
    assert summary.stat().st_size < 1 << 20
    assert len(result.stdout) < 1 << 20


def test_the_step_summary_is_cut_under_one_mib_whatever_the_verdict_holds():
    from traceanalyze.gate.ci import STEP_SUMMARY_BYTES, bounded_summary

    huge = "".join(f"- note {i}: {'é' * 200}\n" for i in range(10_000))  # 4 MB of two-byte characters
    cut = bounded_summary(huge)
    assert len(cut.encode()) < STEP_SUMMARY_BYTES - 1024
    assert cut.endswith("the whole verdict is in the job log)*\n")
    assert huge.startswith(cut[: cut.rfind("\n- note") + 1])  # whole lines, as they were


@pytest.mark.parametrize("rows", [3, 5000])  # measured in one query over the rows, or per column's distinct names
def test_a_frame_of_long_names_is_cut_short_or_long(rows):
    import polars as pl

    from traceanalyze.load import long_names

    names = ["k" * 20, "K" * (MAX_NAME_CHARS + 5), None] * (rows // 3 + 1)
    frame = pl.DataFrame({"kernel": pl.Series(names[:rows], dtype=pl.Categorical),
                          "op": pl.Series(["aten::mm"] * rows), "annotation": pl.Series(names[:rows])})
    bounded = long_names.bounded_frame(frame)
    cut = "K" * MAX_NAME_CHARS + "…[+5 characters]"
    assert bounded["kernel"].cast(pl.String).to_list()[:3] == ["k" * 20, cut, None]
    assert bounded["annotation"].to_list()[:3] == ["k" * 20, cut, None]
    assert bounded["op"].to_list() == frame["op"].to_list() and bounded.schema == frame.schema
    short = frame.select("op")
    assert long_names.bounded_frame(short) is short  # nothing to cut: the same frame
