"""`diff` reads at a glance (issue 35): a one-line summary first, kernels only on one side of a cut
list said as new or gone (never a bare "? unlisted"), times scaled (621.7 ms, not 621,729.0 µs)."""

from __future__ import annotations

from test_gate_diff import kernel_list, pair, report  # noqa: F401 - the fixture and builders of that file
from typer.testing import CliRunner

from traceanalyze.cli import app
from traceanalyze.diff import diff_reports
from traceanalyze.diff.compare import KERNEL_LIMIT
from traceanalyze.diff.render_text import render_diff_markdown, render_diff_terminal, scaled_time


def test_times_are_scaled():
    assert [scaled_time(v) for v in (5.0, 621_729.0, 3_600_000.0)] == ["5.0 µs", "621.7 ms", "3.60 s"]


def test_the_diff_opens_with_a_summary(pair):  # noqa: F811
    base, new = pair
    result = CliRunner().invoke(app, ["diff", str(base), str(new), "--width", "200"])
    assert result.exit_code == 0, result.output
    second = result.stdout.splitlines()[1]
    assert second.startswith("  summary: step time (median) +0.0% (1.0 ms → 1.0 ms)")
    assert "kernels: 1 added, 1 removed, 1 slower" in second


def test_kernels_beyond_a_cut_list_say_their_side():
    full = [f"k{i}" for i in range(KERNEL_LIMIT)]
    compared = diff_reports(report(kernel_list(full)), report(kernel_list(full[1:] + ["fresh"])))
    text = render_diff_terminal(compared, top=KERNEL_LIMIT + 1, width=200) + render_diff_markdown(compared, top=60)
    assert "? unlisted" not in text
    assert "+ new (base list cut)" in text and "− gone (new list cut)" in text
