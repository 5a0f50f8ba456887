"""The verdict every report opens with: exact for a synthetic trace (the expected text below is
derived by hand from the builder's times and the A100 datasheet, not copied from our output), and
within 15 lines of 100 columns on every shared trace."""

from __future__ import annotations

import json

import pytest

from verdict_trace import verdict_trace
from shared_traces import real_trace_params

import traceanalyze
from traceanalyze.renderers.jsonout import render_json
from traceanalyze.renderers.markdown import render_markdown
from traceanalyze.pipeline.rank import build_report
from traceanalyze.renderers.terminal import render_terminal
from traceanalyze.renderers.verdict_text import VERDICT_MAX_LINES, verdict_lines

def golden_report(tmp_path):
    """The report of tests/verdict_trace.py (its docstring derives the numbers below)."""
    return build_report(traceanalyze.load_trace(verdict_trace(tmp_path)))


# the sync's gain: the 95 µs gap it names (46% of the 205 µs window). Its bound: what its remedy takes out
# of the run (docs/whatif.md, Bounds): the `cudaStreamSynchronize` [12, 200] µs no longer blocks (its whole
# 188 µs span), the CPU time from the gap's start (120) to the fill kernel's launch (200) is moved off the
# step (inside that span): 188 µs; the saving (95 µs) lies within both
EVIDENCE = ("1 sync gap, 95 µs; 1× `cudaStreamSynchronize` in `aten::_local_scalar_dense` = "
            "`.item()` / `float(t)` / `bool(t)` / `if t:`, 95 µs")
ACTION = ("remove the sync from the step: keep the value on the device, or read it every N steps / after the step; "
          "find every sync with `torch.cuda.set_sync_debug_mode(\"warn\")`")
BIGGER_EVIDENCE = ("1 compute-bound BF16 kernel, 100 µs = 91% of GPU busy (top "
                   "`ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn`) at 55% of the BF16 roof "
                   "312 TFLOP/s; NVIDIA B200 (HGX B200): 2250 TFLOP/s (7.21×)")  # 100 of 110 µs busy; 2250 / 312
BIGGER_ACTION = ("a GPU with a higher BF16 roof (the highest in our table: NVIDIA B200 (HGX B200)), "
                 "or less work per step (a smaller model, fewer or smaller matmuls)")
# The replay (docs/whatif.md) predicts each finding's saving: removing the sync, the `.item()` no longer
# waits for the GEMM, so the fill kernel (launched at 12 + its 15 µs latency) follows the GEMM at once:
# window [20, 130], 95 µs saved (80 until a removed sync kept its wait before the gap as CPU work); the
# faster roof saves 86.1 µs (tests/whatif): the sync ranks first, and the verdict (compute) and finding 1
# differ: the line saying why comes first.
SYNC_SAVING = "95 µs"
BIGGER_SAVING = "86.1 µs"
GOLDEN_TERMINAL = [
    "VERDICT  compute-bound: compute 49% of the GPU window",
    "[OOOOOOOOOOOOOOCCCCCCCCCCCCCCCU] C compute 49% · O overhead 46% · U unmodeled 5%",
    ("the largest saving lies in overhead, not compute: 46% of the window from finding 1, more than any change "
     "found for the compute time (49% of the window)")[:99] + "…",
    ("1. The CPU waits for the GPU inside the step (sync) — gain ≤ 95 µs (46% of the window), "
     f"predicted saving {SYNC_SAVING} [high]")[:99] + "…",
    ("   " + EVIDENCE)[:99] + "…",  # cut to 100 columns; the FINDINGS section below has it whole
    ("   → " + ACTION)[:99] + "…",
    # the GEMM at 55% of the A100's bf16 roof, which has no FP8: the highest NVIDIA bf16 roof of the
    # table (B200, 2250 TFLOP/s) would take max(17.18 GFLOP / 2250 TFLOP/s = 7.64 µs, 25.2 MB / 7.7
    # TB/s = 3.3 µs): gain 100 − 7.64 = 92.4 µs = 45% of the 205 µs window
    ("2. BF16 matmuls near this GPU's roof, with no faster format on it — gain ≤ 92.4 µs (45% of the window), "
     f"predicted saving {BIGGER_SAVING} [low]")[:99] + "…",
    ("   " + BIGGER_EVIDENCE)[:99] + "…",
    ("   → " + BIGGER_ACTION)[:99] + "…",
    # both together: the GEMM [20, 33.9] at the faster roof, the fill kernel right after it: 23.9 µs
    "predicted: 205 µs → 23.9 µs window (−88%) with bigger-gpu-bf16, sync-in-step (docs/whatif.md)",
]


def test_terminal_verdict_golden(tmp_path):
    report = golden_report(tmp_path)
    assert verdict_lines(report.verdict(), 100) == GOLDEN_TERMINAL[:-1]
    assert report.ranks[0].findings["saving_ns"].to_list() == [95_000, pytest.approx(86_133, abs=1)]
    assert render_terminal(report, width=100).splitlines()[:len(GOLDEN_TERMINAL)] == GOLDEN_TERMINAL


def test_markdown_verdict_golden_and_details_closed(tmp_path):
    text = render_markdown(golden_report(tmp_path))
    verdict, details = text.split("<details>\n<summary>Details</summary>", 1)
    assert verdict.split("\n\n")[2:] == [
        "## Verdict: compute-bound: compute 49% of the GPU window",  # md_escape leaves - ( ) . = alone
        "`OOOOOOOOOOOOOOCCCCCCCCCCCCCCCU` C compute 49% · O overhead 46% · U unmodeled 5%",
        "> The largest saving lies in overhead, not compute: 46% of the window from finding 1, more than any change "
        "found for the compute time (49% of the window).",
        "- **The CPU waits for the GPU inside the step (sync)** — gain ≤ 95 µs (46% of the window), "
        f"predicted saving {SYNC_SAVING}, confidence high. Evidence: " + EVIDENCE + ". Fix: " + ACTION
        + "\n- **BF16 matmuls near this GPU's roof, with no faster format on it** — gain ≤ 92.4 µs "
        f"(45% of the window), predicted saving {BIGGER_SAVING}, confidence low. Evidence: " + BIGGER_EVIDENCE
        + ". Fix: " + BIGGER_ACTION,
        "",
    ]
    assert details.rstrip().endswith("</details>")


def test_json_findings_array(tmp_path):
    doc = json.loads(render_json(golden_report(tmp_path)))
    assert doc["schema_version"] == "1.2"
    assert [(f["id"], round(f["gain_us"], 1), round(f["bound_us"], 1), f["confidence"], f["regime"])
            for f in doc["findings"]] == [
        # by predicted saving: removing the sync saves 95 µs of the window, the faster roof 86.1 µs; the
        # sync's bound is the 188 µs its remedy takes out, the roof's its gain
        ("sync-in-step", 95.0, 188.0, "high", "overhead"), ("bigger-gpu-bf16", 92.4, 92.4, "low", "compute")]
    # the gains name disjoint time: they add up to at most the 205 µs window (the bounds need not)
    assert sum(f["gain_us"] for f in doc["findings"]) <= 205 < sum(f["bound_us"] for f in doc["findings"])


@pytest.mark.parametrize("path", real_trace_params())
def test_verdict_fits_15_lines_of_100_columns(path):
    report = build_report(traceanalyze.load_trace(path))
    lines = verdict_lines(report.verdict(), 100)
    assert 1 <= len(lines) <= VERDICT_MAX_LINES
    assert max(len(line) for line in lines) <= 100
    assert render_terminal(report, width=100).splitlines()[: len(lines)] == lines


def test_render_version_and_reprs(tmp_path):
    from typer.testing import CliRunner

    from traceanalyze.cli import app

    report = golden_report(tmp_path)
    assert traceanalyze.render(report, format="terminal") == render_terminal(report)
    assert traceanalyze.render(report, format="json") == render_json(report)
    assert report._repr_html_().startswith('<h2 id="verdict">Verdict: compute-bound')
    # one rank alone in Jupyter: its own verdict (this raised a TypeError before the verdict moved below the model)
    assert report.ranks[0]._repr_html_() == report._repr_html_()
    assert repr(report.ranks[0]).endswith("findings=2, top finding sync-in-step)")
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"traceanalyze {traceanalyze.__version__}\n"
    with pytest.raises(traceanalyze.TraceAnalyzeError):
        traceanalyze.render(report, format="pdf")


def test_headline_latency_is_launch_overhead(tmp_path):
    """The golden trace's GEMM is launched at 2 µs and starts at 20 on an idle stream: launch → start
    18 µs, all launch overhead; the fill kernel: launched at 205, starts at 215 (10 µs)."""
    text = render_markdown(golden_report(tmp_path))
    assert "- launch overhead p50: **" in text and "launch → start p50" not in text


def test_the_elsewhere_line_is_figures_in_the_model_and_a_sentence_in_the_renderer():
    """report.verdict holds why the first finding is not in the dominant regime as figures; the
    renderers word them (renderers.verdict_text.elsewhere_text)."""
    from traceanalyze.renderers.verdict_text import elsewhere_text
    from traceanalyze.report.verdict import Elsewhere

    why = Elsewhere(regime="overhead", dominant="compute", saving_share=0.4, dominant_share=0.55)
    assert elsewhere_text(why) == ("the largest saving lies in overhead, not compute: 40% of the window from "
                                   "finding 1, more than any change found for the compute time (55% of the window)")


def test_a_saving_beyond_its_gain_says_why_and_within_what():
    """A finding whose replay saves more than its gain (its remedy frees CPU time that shortens gaps
    other findings name) says so, with its bound; one within its gain says nothing more."""
    from traceanalyze.renderers.verdict_text import gain_text
    from traceanalyze.report.verdict import VerdictFinding

    beyond = VerdictFinding(rank=0, id="sync-in-step", title="", evidence="", action="", gain_ns=30_900.0,
                            gain_share=0.015, confidence="high", saving_ns=254_000.0, bound_ns=292_000.0)
    assert gain_text(beyond) == ("gain ≤ 30.9 µs (2% of the window), predicted saving 254 µs, beyond its gain: the "
                                 "time its remedy frees shortens gaps other findings name (at most 292 µs)")
    within = VerdictFinding(rank=0, id="x", title="", evidence="", action="", gain_ns=300_000.0, gain_share=0.5,
                            confidence="high", saving_ns=254_000.0, bound_ns=300_000.0)
    assert gain_text(within) == "gain ≤ 300 µs (50% of the window), predicted saving 254 µs"
