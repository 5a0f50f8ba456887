"""The Markdown and HTML reports: they parse, hold the model's numbers, escape names, draw one mark
per datum in their charts (capped on big traces), and render every real trace."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import polars as pl
import pytest
from typer.testing import CliRunner

from builder import TraceBuilder
from shared_traces import SHARED_TRACES_DIR, real_trace_params, shared_trace

import traceanalyze
from traceanalyze.cli import app
from traceanalyze.renderers import plots
from traceanalyze.renderers.html import render_html
from traceanalyze.renderers.markdown import render_markdown
from traceanalyze.renderers.md import md_code, md_escape
from traceanalyze.pipeline.rank import build_report
from traceanalyze.units import format_duration_ns, format_percent

BF16 = "c10::BFloat16"
ODD_NAME = "k<T>&"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >"
VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source"}


# ---------------------------------------------------------------------------------------------
# helpers


class Tree(HTMLParser):
    """Checks that tags balance and collects the charts: for each `<svg>`, its `data-chart`, its
    marks and the tooltips of its marks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.charts: list[dict] = []
        self._title: list[str] | None = None
        self._mark_depth: int | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "svg":
            self.charts.append({"kind": attributes.get("data-chart"), "marks": 0, "rects": 0, "tips": []})
        if self.charts and "svg" in self.stack + [tag]:
            chart = self.charts[-1]
            chart["rects"] += tag == "rect"
            if attributes.get("class") == "mark":
                chart["marks"] += 1
                self._mark_depth = len(self.stack)
        if tag == "title" and self._mark_depth is not None:
            self._title = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        if self.charts and "svg" in self.stack:
            chart = self.charts[-1]
            chart["rects"] += tag == "rect"
            chart["marks"] += dict(attrs).get("class") == "mark"

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        if tag == "title" and self._title is not None:
            self.charts[-1]["tips"].append("".join(self._title))
            self._title = None
        if self._mark_depth is not None and len(self.stack) == self._mark_depth:
            self._mark_depth = None

    def handle_data(self, data):
        if self._title is not None:
            self._title.append(data)


def parse(html: str) -> Tree:
    tree = Tree()
    tree.feed(html)
    tree.close()
    assert not tree.errors, tree.errors[:5]
    assert tree.stack == [], tree.stack
    return tree


def charts(tree: Tree, kind: str) -> list[dict]:
    return [c for c in tree.charts if c["kind"] == kind]


def assert_self_contained(html: str) -> None:
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "@import" not in html and "url(http" not in html and "@font-face" not in html
    # the only URL: the SVG namespace
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) <= {"http://www.w3.org/2000/svg"}


def mm_op(b: TraceBuilder, start: float, m: int, k: int, n: int, *, dur: float) -> None:
    op = b.cpu_op("aten::mm", start, 10, input_dims=[[m, k], [k, n]], input_types=[BF16, BF16],
                  input_strides=[[k, 1], [n, 1]], concrete_inputs=["", ""])
    b.launch_kernel(launch_us=start + 2, launch_dur_us=4, start_us=start + 20, dur_us=dur, external_id=op,
                    name="ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn")


def elementwise(b: TraceBuilder, name: str, start: float, numel: int, *, dur: float) -> None:
    op = b.cpu_op(name, start, 10, input_dims=[[numel], [numel], []], input_types=[BF16, BF16, "Scalar"],
                  input_strides=[[1], [1], []], concrete_inputs=["", "", "1"])
    b.launch_kernel(launch_us=start + 2, launch_dur_us=4, start_us=start + 20, dur_us=dur, external_id=op,
                    name=ELEMENTWISE)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Two steps on an A100: a bf16 matmul (compute-bound), elementwise adds (bandwidth-bound) and
    a kernel named `k<T>&` launched outside any op (unmodeled). Six GPU ops, host-caused gaps."""
    b = TraceBuilder(device_name="NVIDIA A100-SXM4-80GB", num_sms=108, total_memory=85899345920)
    b.step(1, 0, 400)
    mm_op(b, 0, 4096, 4096, 4096, dur=100)               # [20, 120)
    elementwise(b, "aten::add", 150, 1 << 24, dur=40)    # [170, 210)
    elementwise(b, "aten::mul", 220, 1 << 24, dur=40)    # [240, 280)
    b.step(2, 400, 400)
    mm_op(b, 400, 4096, 4096, 4096, dur=100)             # [420, 520)
    b.launch_kernel(launch_us=550, launch_dur_us=4, start_us=570, dur_us=10, name=ODD_NAME)  # [570, 580)
    elementwise(b, "aten::add", 600, 1 << 24, dur=40)    # [620, 660)
    path = b.write(tmp_path_factory.mktemp("synthetic") / "t.json.gz")
    return build_report(traceanalyze.load_trace(path))


# ---------------------------------------------------------------------------------------------
# synthetic: exact


def test_html_parses_and_is_self_contained(synthetic):
    html = render_html(synthetic)
    assert_self_contained(html)
    tree = parse(html)
    kinds = [c["kind"] for c in tree.charts]
    assert kinds == ["timeline", "causes", "latency", "steps", "regimes", "roofline"]


def test_html_numbers_are_the_model_numbers(synthetic):
    rank = synthetic.ranks[0]
    html = render_html(synthetic)
    idle = rank.idle.row(0, named=True)
    assert f"GPU idle <strong>{format_percent(idle['idle_fraction'])}</strong>" in html
    assert f"of a {format_duration_ns(idle['window_ns'])} window" in html
    for row in rank.steps.iter_rows(named=True):
        assert f'<td class="num">{format_percent(row["idle_fraction"])}</td>' in html
    p50 = rank.latency_stats.filter(pl.col("metric") == "launch_to_start_ns")["p50"][0]
    assert f"p50 {format_duration_ns(p50)}" in html  # the histogram's marker


def test_markdown_numbers_are_the_model_numbers(synthetic):
    rank = synthetic.ranks[0]
    text = render_markdown(synthetic)
    idle = rank.idle.row(0, named=True)
    idle_text = format_percent(idle["idle_fraction"])
    assert f"GPU idle **{idle_text}** of a {format_duration_ns(idle['window_ns'])} window" in text
    for key in ("overhead", "bandwidth", "compute"):
        share = rank.attribution[key][0]
        assert re.search(rf"^\| {key} +\| `[█·]+` +\| {re.escape(format_percent(share))} ", text, re.M), key
    assert "<svg" not in text
    # GitHub tables: a header, a delimiter row, then rows, every line fenced by pipes
    table = [line for line in text.splitlines() if line.startswith("| step ")]
    assert table


def test_names_are_escaped(synthetic):
    assert synthetic.ranks[0].kernels.filter(pl.col("name") == ODD_NAME).height == 1
    html = render_html(synthetic)
    assert ODD_NAME not in html
    assert "k&lt;T&gt;&amp;" in html
    tree = parse(html)
    (timeline,) = charts(tree, "timeline")
    assert any(tip.startswith(ODD_NAME) for tip in timeline["tips"])  # the tooltip text, unescaped by the parser
    text = render_markdown(synthetic)
    assert f"`{ODD_NAME}`" in text  # verbatim inside a code span
    assert f" {ODD_NAME} " not in text


def test_chart_marks_count_the_data(synthetic):
    rank = synthetic.ranks[0]
    tree = parse(render_html(synthetic))
    (timeline,) = charts(tree, "timeline")
    assert rank.roofline.height == 6
    assert timeline["marks"] == rank.roofline.height + rank.gaps.height  # exact: one rect per GPU op and per gap
    (roofline,) = charts(tree, "roofline")
    assert roofline["marks"] == 2  # the matmul and the elementwise kernel; `k<T>&` has no model
    (steps,) = charts(tree, "steps")
    assert steps["marks"] == 2 * rank.steps.height  # busy and idle per step
    (regimes,) = charts(tree, "regimes")
    rows = pl.concat([rank.attribution.select(*plots.REGIME_COLOURS),
                      rank.step_attribution.select(*plots.REGIME_COLOURS)])
    assert regimes["marks"] == sum(1 for row in rows.iter_rows() for v in row if v > 0)
    (causes,) = charts(tree, "causes")
    assert causes["marks"] == rank.gaps["cause"].n_unique()
    (latency,) = charts(tree, "latency")
    counted = sum(int(re.search(r": (\d+) in ", tip).group(1)) for tip in latency["tips"])
    assert counted == rank.latency.filter(~pl.col("skewed")).height


def test_cpu_only_trace(tmp_path):
    b = TraceBuilder()
    b.step(1, 0, 100)
    b.cpu_op("aten::relu", 5, 20)
    report = build_report(traceanalyze.load_trace(b.write(tmp_path / "cpu.json.gz")))
    html = render_html(report)
    tree = parse(html)
    assert tree.charts == []
    assert "no GPU events in this trace" in html and "aten::relu" in html
    text = render_markdown(report)
    assert "> note: no GPU events in this trace" in text and "`aten::relu`" in text


def test_markdown_code_spans_survive_tables():
    assert md_code("a|b", in_table=True) == "`a\\|b`"
    assert md_code("x`y") == "``x`y``"
    assert md_escape("<T> *a* | _b_") == "\\<T\\> \\*a\\* \\| \\_b\\_"


# ---------------------------------------------------------------------------------------------
# plots in isolation


def test_timeline_is_binned_and_capped():
    n = 20_000
    frame = pl.DataFrame({"start_ns": [i * 100 for i in range(n)], "end_ns": [i * 100 + 60 for i in range(n)],
                          "category": ["compute" if i % 2 else "bandwidth" for i in range(n)],
                          "label": ["k"] * n})
    from traceanalyze.report.chart_inputs import binned_rows

    rows = [plots.TimelineRow(f"stream {s}", frame, plots.REGIME_COLOURS) for s in range(8)]
    svg = plots.timeline_chart(binned_rows(rows, (0, n * 100), max_marks=1000), (0, n * 100), title="t")
    marks = svg.count('class="mark"')
    assert 8 <= marks <= 1000
    exact = plots.timeline_chart(binned_rows([plots.TimelineRow("s", frame.head(10), plots.REGIME_COLOURS)], (0, 1000)),
                                 (0, 1000), title="t")
    assert exact.count('class="mark"') == 10


def test_roofline_escapes_and_skips_unplottable_points():
    points = [plots.RooflinePoint("a<b>", 10.0, 1e12, 5.0, "bandwidth"),
              plots.RooflinePoint("zero", 0.0, 0.0, 5.0, "bandwidth")]
    svg = plots.roofline_chart(points, [plots.Roof(312e12, "312 TFLOP/s", "bf16 tensor")],
                               [plots.Roof(2e12, "memory 2 TB/s")])
    assert svg.count('class="mark"') == 1
    assert "a&lt;b&gt;" in svg and "a<b>" not in svg


# ---------------------------------------------------------------------------------------------
# real traces


def test_timeline_capped_on_large_trace():
    report = build_report(traceanalyze.load_trace(shared_trace("hta_a100_large_training.json.gz")))
    rank = report.ranks[0]
    assert rank.roofline.height + rank.gaps.height > plots.EXACT_TIMELINE_MARKS  # so the timeline bins
    tree = parse(render_html(report))
    (timeline,) = charts(tree, "timeline")
    assert 0 < timeline["marks"] <= plots.MAX_MARKS
    assert timeline["rects"] <= plots.MAX_MARKS + 32  # + lane backgrounds and legend swatches
    assert all(c["marks"] <= plots.MAX_MARKS for c in tree.charts)


@pytest.mark.parametrize("path", real_trace_params())
def test_every_real_trace_renders(path):
    report = build_report(traceanalyze.load_trace(path))
    html = render_html(report)
    assert_self_contained(html)
    tree = parse(html)
    gpu = any(r.has_gpu for r in report.ranks)
    assert bool(charts(tree, "timeline")) == gpu
    for chart in tree.charts:
        assert chart["marks"] <= plots.MAX_MARKS
    text = render_markdown(report)
    assert text.startswith("# traceanalyze report")
    for rank in report.ranks:
        for row in rank.idle.iter_rows(named=True):
            assert format_percent(row["idle_fraction"]) in html
            assert format_percent(row["idle_fraction"]) in text
        for note in rank.notes:
            assert note.split(":")[0] in text


# ---------------------------------------------------------------------------------------------
# command line

runner = CliRunner()


def test_cli_html_and_markdown(tmp_path):
    trace = shared_trace("tutorial_h100_transformer.json.gz")
    out = tmp_path / "out.html"
    result = runner.invoke(app, ["report", str(trace), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert_self_contained(html)
    assert len(charts(parse(html), "roofline")) == 1
    result = runner.invoke(app, ["report", str(trace), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# traceanalyze report")
    assert "## Where the time goes" in result.stdout


def test_cli_multi_rank_folder(tmp_path):
    folder = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"
    if not folder.is_dir():
        pytest.skip(f"real traces not found: {folder}")
    out = tmp_path / "ranks.html"
    result = runner.invoke(app, ["report", str(folder), "-f", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    tree = parse(out.read_text(encoding="utf-8"))
    (ranks,) = charts(tree, "ranks")
    assert len(charts(tree, "timeline")) == 4 and len(charts(tree, "roofline")) == 4
    result = runner.invoke(app, ["report", str(folder), "-f", "markdown"])
    assert result.exit_code == 0, result.output
    # one open <details> per rank, all inside the closed Details block under the verdict (issue 14)
    assert result.stdout.count("<details open>") == 4 and result.stdout.count("</details>") == 5
    assert result.stdout.count("<details>\n<summary>Details</summary>") == 1


def test_a_trace_of_many_steps_lists_its_slowest_steps(tmp_path):
    """30 steps of 100 µs, step 7 of 400 µs and step 21 of 300 µs: the per-step table of the
    Markdown and HTML reports lists 20 rows, slowest first; the HTML's step bars draw them all."""
    b, start = TraceBuilder(), 0
    for n in range(30):
        length = 400 if n == 7 else 300 if n == 21 else 100
        b.step(n, start, length)
        b.launch_kernel(launch_us=start + 2, launch_dur_us=4, start_us=start + 10, dur_us=20)
        start += length
    path = b.write(tmp_path / "t.json")
    report = build_report(traceanalyze.load_trace(path))
    markdown = render_markdown(report)
    section = markdown.split("### Slowest steps (20 of 30, by CPU step time)")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if re.match(r"\| \d", line)]
    assert len(rows) == 20
    assert [int(line.split("|")[1]) for line in rows[:3]] == [7, 21, 0]
    tree = parse(render_html(report))
    assert charts(tree, "steps")[0]["marks"] > 2 * 20  # busy and idle bars of more than the 20 listed steps
