"""`traceanalyze diff`: kernels matched by name — added, removed, faster, slower — and the summary
numbers side by side, from traces or saved reports."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gate_traces import GEMM, stepped, write

from traceanalyze.api import analyze
from traceanalyze.cli import app
from traceanalyze.diff import compare, diff_reports
from traceanalyze.diff.render_text import kernel_label
from traceanalyze.renderers import jsonout
from traceanalyze.renderers.jsonout import report_v1
from traceanalyze.report.schema import KERNEL_LIMIT, report_from_builtins

runner = CliRunner()


@pytest.fixture
def pair(tmp_path):
    """base: slow_kernel 10 µs, gone_kernel 5 µs, same_kernel 20 µs per step;
    new: slow_kernel 15 µs (+50 %), new_kernel 5 µs, same_kernel 20 µs; four steps each."""
    base = stepped([100] * 4, extra=[("slow_kernel", 10), ("gone_kernel", 5), ("same_kernel", 20)])
    new = stepped([100] * 4, extra=[("slow_kernel", 15), ("new_kernel", 5), ("same_kernel", 20)])
    return write(base, tmp_path, "base.json"), write(new, tmp_path, "new.json")


def test_exactly_the_changed_kernels(pair):
    base, new = (report_v1(analyze(p)) for p in pair)
    result = diff_reports(base, new)
    changed = [(k.name, k.status) for k in result.changed_kernels]
    assert changed == [("new_kernel", "added"), ("gone_kernel", "removed"), ("slow_kernel", "slower")]
    rows = {k.name: k for k in result.kernels}
    slow = rows["slow_kernel"]
    assert (slow.base_count, slow.new_count, slow.base_mean_us, slow.new_mean_us) == (4, 4, 10.0, 15.0)
    assert slow.change == pytest.approx(0.5) and (slow.base_total_us, slow.new_total_us) == (40.0, 60.0)
    assert rows["same_kernel"].status == "unchanged" and rows["same_kernel"].change == 0.0
    assert rows[GEMM].status == "unchanged"
    assert rows["other_kernel"].status == "unchanged"  # 565 → 560 µs: under the 5 % threshold
    metrics = {m.name: m for m in result.metrics}
    assert metrics["step_time_ms"].base == metrics["step_time_ms"].new == 1.0
    assert metrics["step_idle_fraction"].change == pytest.approx(0.0)
    assert metrics["attribution.compute"].base == pytest.approx(0.3)


def test_min_change(pair):
    base, new = (report_v1(analyze(p)) for p in pair)
    assert "slow_kernel" not in [k.name for k in diff_reports(base, new, min_change=0.6).changed_kernels]


def test_cli_formats(pair, tmp_path):
    base, new = pair
    terminal = runner.invoke(app, ["diff", str(base), str(new)])
    assert terminal.exit_code == 0, terminal.output
    assert all(part in terminal.stdout for part in ("kernels that changed", "▲ slower", "+ added"))
    markdown = runner.invoke(app, ["diff", str(base), str(new), "--format", "markdown"])
    assert markdown.exit_code == 0 and markdown.stdout.startswith("### traceanalyze diff")
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in markdown.stdout.splitlines()
            if line.startswith("|")]
    assert ["`slow_kernel`", "4 → 4", "10.0 µs", "15.0 µs", "+50.0%"] in [row[:5] for row in rows]  # padded columns
    document = json.loads(runner.invoke(app, ["diff", str(base), str(new), "--format", "json"]).stdout)
    assert document["kind"] == "diff" and document["changed_kernels"] == ["new_kernel", "gone_kernel", "slow_kernel"]
    assert document["base"] == {"source": str(base), "steps": 4}


def test_saved_reports_diff_like_traces(pair, tmp_path):
    base, new = pair
    saved = []
    for path in pair:
        out = tmp_path / (path.stem + "-report.json")
        assert runner.invoke(app, ["report", str(path), "--format", "json", "-o", str(out)]).exit_code == 0
        saved.append(out)
    from_traces = json.loads(runner.invoke(app, ["diff", str(base), str(new), "--format", "json"]).stdout)
    from_reports = json.loads(runner.invoke(app, ["diff", str(saved[0]), str(saved[1]), "--format", "json"]).stdout)
    for document in (from_traces, from_reports):
        document.pop("base"), document.pop("new")
    assert from_traces == from_reports


def test_bad_diff_input(pair, tmp_path):
    result = runner.invoke(app, ["diff", str(pair[0]), str(tmp_path / "missing.json")])
    assert result.exit_code == 2 and "missing.json" in result.output and len(result.output.strip().splitlines()) == 1
    result = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--min-change", "5"])
    assert result.exit_code == 2 and "ambiguous" in result.output


def kernel_list(names):
    return [{"name": n, "count": 1, "total_us": 100.0 - i, "bound": "bandwidth"} for i, n in enumerate(names)]


def report(kernels, steps=()):
    return report_from_builtins({"schema_version": "1.0", "source": "x",
                                 "summary": {"idle_fraction": 0.1, "attribution": {}},
                                 "kernels": kernels, "ranks": [{"rank": 0, "steps": list(steps), "health": [],
                                                                "kernels": kernels}]})


def test_missing_from_a_full_list_is_unlisted_not_removed():
    full = [f"k{i}" for i in range(KERNEL_LIMIT)]
    result = diff_reports(report(kernel_list(full)), report(kernel_list(full[1:] + ["fresh"])))
    statuses = {k.name: k.status for k in result.kernels}
    assert statuses["k0"] == "unlisted"  # the new list is full: k0 may just be below its cut
    assert statuses["fresh"] == "unlisted"  # and the base list is full too
    assert any("lists only the 50 longest" in note for note in result.notes)
    shorter = diff_reports(report(kernel_list(full)), report(kernel_list(full[1:])))
    assert {k.name: k.status for k in shorter.kernels}["k0"] == "removed"  # a list of 49 is complete
    assert compare.KERNEL_LIMIT is jsonout.KERNEL_LIMIT  # one constant: what the report lists is what diff knows


def test_kernel_labels_keep_template_arguments():
    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
            "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
            "at::detail::Array<char*, 3>)")
    assert kernel_label(name, 200) == ("vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
                                       "at::detail::Array<char*, 3> >")
    assert kernel_label(name, 40).endswith("…") and len(kernel_label(name, 40)) == 40


def test_diff_as_html(pair, tmp_path):
    from html.parser import HTMLParser

    out = tmp_path / "diff.html"
    result = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()

    class Rows(HTMLParser):
        def __init__(self):
            super().__init__()
            self.codes: list[str] = []
            self._in_code = False
            self.svgs = 0

        def handle_starttag(self, tag, attrs):
            self._in_code = tag == "code"
            self.svgs += tag == "svg"

        def handle_endtag(self, tag):
            self._in_code = False

        def handle_data(self, data):
            if self._in_code:
                self.codes.append(data)

    parser = Rows()
    parser.feed(page)
    assert parser.svgs == 1  # the base / new regime bars
    for name in ("new_kernel", "gone_kernel", "slow_kernel"):
        assert name in parser.codes
    assert "+50" in page  # slow_kernel's change per call
