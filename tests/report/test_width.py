"""Text outputs fit the width (docs/report-formats.md#width): the table fitter's steps on small
tables whose layout is derived by hand, the default width, and on every shared trace (each analysed
once) no line of `report` (default and --details), `info`, `gate` or `diff` wider than 80, 100 or
160 columns, and the verdict within 15 lines at 100."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from shared_traces import MISSING_REASON, SHARED_TRACES_DIR, real_trace_paths, trace_id
from stepped_trace import stepped_trace

import traceanalyze
from traceanalyze.cli import app
from traceanalyze.diff.compare import diff_reports
from traceanalyze.diff.render_text import render_diff_terminal
from traceanalyze.gate import GateOptions, evaluate, measure
from traceanalyze.gate.render_text import render_verdict_terminal
from traceanalyze.info import render_info
from traceanalyze.renderers.jsonout import report_v1
from traceanalyze.renderers.terminal import render_terminal
from traceanalyze.renderers.text_table import NOT_A_TERMINAL_WIDTH, Shrinkable, fit_lines, text_table
from traceanalyze.renderers.verdict_text import VERDICT_MAX_LINES, verdict_lines

WIDTHS = (80, 100, 160)
KERNEL = "at::native::vectorized_elementwise_kernel"  # 41 characters


def cut(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def test_a_table_that_fits_is_left_alone():
    rows = [[1, KERNEL, "1.2 ms"], [2, "gemm", "30 µs"]]
    assert text_table(rows, ["#", "kernel", "total time"], width=62) == text_table(rows, ["#", "kernel", "total time"])


def test_headers_wrap_then_names_are_cut():
    """Natural widths: `#` 3 (header + 2), kernel 41, `total time` 12: 2 + 3 + 2 + 41 + 2 + 12 = 62.
    At 40: `total time` wraps to `total`/`time` (column 7: 57 wide), then the kernel column is cut by
    the 17 still too many, to 24."""
    rows = [[1, KERNEL, "1.2 ms"], [2, "gemm", "30 µs"]]
    shrink = {1: Shrinkable(lambda width: [cut(KERNEL, width), "gemm"])}
    assert text_table(rows, ["#", "kernel", "total time"], width=40, shrink=shrink).splitlines() == [
        "  #    kernel                    total",
        "                                 time",
        "  ---  ------------------------  -------",
        "  1    at::native::vectorized_…  1.2 ms",
        "  2    gemm                      30 µs",
    ]


def test_columns_split_into_blocks_that_repeat_the_key():
    """rank 6 wide, four columns of 10: 2 + 6 + 4 × 12 = 56 > 40, nothing to wrap or cut: two
    blocks of 2 + 6 + 2 × 12 = 32 (three would be narrower, but two is the fewest that fit)."""
    rows = [["1", "a" * 10, "b" * 10, "c" * 10, "d" * 10]]
    assert text_table(rows, ["rank", "alpha", "beta", "gamma", "delta"], width=40).splitlines() == [
        "  rank    alpha       beta",
        "  ------  ----------  ----------",
        "  1       aaaaaaaaaa  bbbbbbbbbb",
        "",
        "  rank    gamma       delta",
        "  ------  ----------  ----------",
        "  1       cccccccccc  dddddddddd",
    ]


def test_lines_wrap_with_a_hanging_indent():
    assert fit_lines(["  note: the first ProfilerStep of each rank left out", "short"], 30) == [
        "  note: the first ProfilerStep", "    of each rank left out", "short"]
    assert fit_lines(["1. A finding title — gain ≤ 5 ms, overhead"], 24) == [
        "1. A finding title —", "   gain ≤ 5 ms, overhead"]
    assert fit_lines(["a\x1b[2J"], None) == ["a\\x1b[2J"]  # escaped before it is measured


def test_default_width_columns_else_whole_lines(tmp_path, monkeypatch):
    trace = stepped_trace(tmp_path)
    widest = lambda text: max(len(line) for line in text.splitlines())  # noqa: E731
    monkeypatch.setenv("COLUMNS", "90")
    assert 80 < widest(CliRunner().invoke(app, ["report", str(trace)]).stdout) <= 90
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr(os, "get_terminal_size", lambda *args: (_ for _ in ()).throw(OSError("not a terminal")))
    # not a terminal (a file, a pipe, a CI log) and no COLUMNS: lines kept whole, never cut with "…"
    whole = CliRunner().invoke(app, ["report", str(trace)]).stdout
    verdict = whole[:whole.index("\n\n")].splitlines()  # the verdict block, before the first blank line
    assert NOT_A_TERMINAL_WIDTH >= 1000 and not [line for line in verdict if line.endswith("…")], verdict
    assert widest("\n".join(verdict)) > 80  # its findings, at 80 columns cut as "gain ≤ 1.08 ms (51% of…"
    assert widest(CliRunner().invoke(app, ["report", str(trace), "--width", "60"]).stdout) <= 60
    for command in (["info", str(trace)], ["diff", str(trace), str(trace)],
                    ["gate", str(trace), "--max-idle-fraction", "0.9", "--min-steps", "1"]):
        result = CliRunner().invoke(app, [*command, "--width", "50"])
        assert result.exit_code in (0, 1) and widest(result.stdout) <= 50, result.output


def shared_inputs() -> list:
    paths = real_trace_paths()
    if not paths:
        return [pytest.param(None, id="no-shared-traces", marks=pytest.mark.skip(reason=MISSING_REASON))]
    folders = sorted({path.parent for path in paths if path.parent != SHARED_TRACES_DIR})
    return [pytest.param(path, id=trace_id(path)) for path in [*paths, *folders]]


@pytest.fixture(scope="module", params=shared_inputs())
def analysed(request):
    """One shared trace (or folder of ranks), loaded and analysed once for every test below."""
    trace = traceanalyze.load_trace(request.param)
    return trace, traceanalyze.analyze(trace)


def too_wide(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


def test_report_fits(analysed):
    _, report = analysed
    for width in WIDTHS:
        for details in (False, True):
            assert too_wide(render_terminal(report, width=width, details=details), width) == [], (width, details)
    verdict = verdict_lines(report.verdict(), 100)
    assert 1 <= len(verdict) <= VERDICT_MAX_LINES
    lines = render_terminal(report, width=100).splitlines()
    notes = [f"note: {note}" for note in report.notes]  # the job's notes (a folder's), before any claim
    opening = [*notes, ""] if notes else []
    assert lines[: len(opening) + len(verdict)] == [*opening, *verdict]


def test_info_gate_and_diff_fit(analysed):
    trace, report = analysed
    saved = report_v1(report)
    measured = measure(saved)
    options = GateOptions(thresholds={"max_idle_fraction": 0.05, "min_compute": 0.9, "max_launch_p99_us": 1.0},
                          max_regression=0.01, baseline=str(report.source), allow_unreliable=True, min_steps=1)
    verdict = evaluate(measured, options, baseline=measured)
    compared = diff_reports(saved, saved, sources=(str(report.source), str(report.source)))
    for width in WIDTHS:
        assert too_wide(render_info(trace, width=width), width) == [], width
        assert too_wide(render_verdict_terminal(verdict, width=width), width) == [], width
        assert too_wide(render_diff_terminal(compared, width=width), width) == [], width
