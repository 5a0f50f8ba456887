"""`traceanalyze annotate`: the original events, unchanged but for args["traceanalyze"] on judged
GPU ops, plus one slice per idle gap and per finding span; our loader reads it back to the same tables."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

import traceanalyze
from traceanalyze.cli import app
from traceanalyze.report.annotate import CATEGORY
from traceanalyze.report.model import build_report

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"


def events_of(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as handle:
        return json.load(handle)["traceEvents"]


def test_annotated_trace_is_the_original_plus_gap_and_finding_slices(tmp_path):
    out = tmp_path / "annotated.json.gz"
    result = CliRunner().invoke(app, ["annotate", str(FIXTURE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    original, annotated = events_of(FIXTURE), events_of(out)
    added = [e for e in annotated if e.get("cat") == CATEGORY or (e.get("ph") == "M" and e.get("pid") == 1001)]
    judged = [json.loads(json.dumps(e)) for e in annotated if CATEGORY in e.get("args", {})]
    kept = [e for e in annotated if e not in added]
    for event in kept:
        event.get("args", {}).pop(CATEGORY, None)
    assert kept == original

    rank = build_report(traceanalyze.load_trace(FIXTURE)).ranks[0]
    slices = [e for e in added if e["ph"] == "X"]
    gap_slices = [e for e in slices if e["name"].startswith("idle: ")]
    assert sorted((round(e["ts"] * 1000), round(e["dur"] * 1000), e["name"]) for e in gap_slices) == sorted(
        (start, duration, f"idle: {cause}") for start, duration, cause in rank.gaps.select("start_ns", "duration_ns", "cause").iter_rows())
    spans = sum(len(s) for s in rank.findings["spans"].to_list())
    assert len(slices) - len(gap_slices) == spans and spans > 0
    assert len(judged) == rank.roofline.filter(pl.col("correlation").is_not_null()).height
    gemm = next(e for e in judged if e["name"].startswith("ampere_bf16"))
    row = rank.roofline.filter(pl.col("name") == gemm["name"]).sort("start_ns").row(0, named=True)
    assert gemm["args"][CATEGORY]["bound"] == str(row["regime"])

    back, before = traceanalyze.load_trace(out), traceanalyze.load_trace(FIXTURE)
    for table in ("gpu", "cpu_ops", "runtime", "steps"):
        assert_frame_equal(getattr(back, table), getattr(before, table))


def test_annotate_refuses_to_write_over_its_input(tmp_path):
    copy = tmp_path / "t.json.gz"
    copy.write_bytes(FIXTURE.read_bytes())
    result = CliRunner().invoke(app, ["annotate", str(copy), "-o", str(copy)])
    assert result.exit_code == 2
    assert copy.read_bytes() == FIXTURE.read_bytes()


def test_annotate_writes_plain_json_without_gz(tmp_path):
    out = tmp_path / "annotated.json"
    assert CliRunner().invoke(app, ["annotate", str(FIXTURE), "-o", str(out)]).exit_code == 0
    assert len(events_of(out)) > len(events_of(FIXTURE))
