"""Synthetic sweeps with exact ground truth (tests/scaling/sweep_traces.py): the fit recovers the
fixed cost and the throughput the traces were built with, on CPU-only and on GPU traces."""

from __future__ import annotations

import json

import pytest
from sweep_traces import FLOPS_PER_SIZE, cpu_run, gpu_run

from traceanalyze.errors import ConfigError
from traceanalyze.scaling.formats import RENDERERS
from traceanalyze.scaling.model import OVERHEAD_BOUND
from traceanalyze.scaling.render_json import SCALING_SCHEMA_VERSION
from traceanalyze.scaling.runs import scaling_of_paths

SIZES = (8, 16, 32)


def test_cpu_runs_give_back_the_fixed_cost_and_the_throughput(tmp_path):
    scaling = scaling_of_paths([cpu_run(tmp_path, s) for s in SIZES], cache=False)
    assert scaling.work_unit == "FLOP"
    assert [p.flops for p in scaling.points] == [FLOPS_PER_SIZE * s for s in SIZES]
    assert [p.cpu_step_ns for p in scaling.points] == [(100 + s) * 1000 for s in SIZES]
    assert scaling.fit.fixed == pytest.approx(100_000, abs=1e-6)  # ns
    assert scaling.fit.throughput * 1e9 == pytest.approx(FLOPS_PER_SIZE * 1e6)  # FLOP/s: FLOPS_PER_SIZE per µs
    assert scaling.fit.fits is True
    assert scaling.fixed_fraction == pytest.approx(100 / 108)
    assert scaling.work_ratio == pytest.approx(4.0) and scaling.time_ratio == pytest.approx(132 / 108)
    # compute = the mm's time (size/2 µs), bandwidth = the relu's (0.5 µs), overhead = the rest
    first = scaling.points[0].regime_ns
    assert first == {"overhead": 108_000 - 4_000 - 500, "bandwidth": 500, "compute": 4_000, "other": 0}
    assert scaling.regime_growth["compute"] == pytest.approx(4.0)
    assert [r.regime for r in scaling.runs] == ["overhead"] * 3
    assert scaling.headline == ("4.0× the work took 1.2× the time: 93% of the small run is fixed overhead "
                                "(overhead-bound); the large run is overhead-bound")


def test_a_large_size_leaves_the_overhead_regime(tmp_path):
    scaling = scaling_of_paths([cpu_run(tmp_path, s, fixed_us=10) for s in (4, 400)], cache=False)
    assert scaling.fit.fixed == pytest.approx(10_000, abs=1e-6)
    assert scaling.runs[0].fixed_fraction == pytest.approx(10 / 14) and 10 / 14 >= OVERHEAD_BOUND
    assert scaling.runs[1].fixed_fraction == pytest.approx(10 / 410)
    assert [r.regime for r in scaling.runs] == ["overhead", "compute"]
    assert scaling.headline.endswith("71% of the small run is fixed overhead (overhead-bound); "
                                     "the large run is compute-bound")


def test_gpu_runs_fit_the_gpu_window_per_step(tmp_path):
    scaling = scaling_of_paths([gpu_run(tmp_path, s) for s in SIZES], cache=False)
    assert scaling.time_name == "GPU window per step"
    assert [p.gpu_window_ns for p in scaling.points] == [(50 + s + 1) * 1000 for s in SIZES]
    assert [p.gpu_busy_ns for p in scaling.points] == [(s + 1) * 1000 + 1 for s in SIZES]
    assert [p.flops for p in scaling.points] == [FLOPS_PER_SIZE * s for s in SIZES]
    assert scaling.fit.fixed == pytest.approx(51_000, abs=1e-6)
    assert scaling.fit.throughput * 1e9 == pytest.approx(FLOPS_PER_SIZE * 1e6)
    assert scaling.points[0].peak_flops_per_s == 19.5e12  # A100 FP32 (the builder's device)
    assert scaling.notes == ()


def test_the_order_of_the_traces_does_not_matter(tmp_path):
    paths = [cpu_run(tmp_path, s) for s in SIZES]
    forward, backward = scaling_of_paths(paths, cache=False), scaling_of_paths(paths[::-1], cache=False)
    assert [r.label for r in backward.runs] == [r.label for r in forward.runs] == [p.name for p in paths]
    assert backward.fit == forward.fit


def test_sizes_replace_the_work_axis(tmp_path):
    scaling = scaling_of_paths([cpu_run(tmp_path, s) for s in SIZES], sizes=[1, 2, 4], cache=False)
    assert scaling.work_unit == "size"
    assert scaling.fit.fixed == pytest.approx(100_000) and scaling.fit.slope == pytest.approx(8_000)


def test_another_program_is_refused_naming_the_first_difference(tmp_path):
    paths = [cpu_run(tmp_path, 8), cpu_run(tmp_path, 16, extra_op="aten::dropout")]
    with pytest.raises(ConfigError, match=r"not one program: a step of .*cpu_8.json has 2 ops.*aten::dropout"):
        scaling_of_paths(paths, cache=False)


def test_the_same_size_twice_is_not_a_sweep(tmp_path):
    paths = [cpu_run(tmp_path, 8), cpu_run(tmp_path, 8, name="again.json")]
    with pytest.raises(ConfigError, match="same modelled work per step"):
        scaling_of_paths(paths, cache=False)


def test_cpu_and_gpu_traces_are_not_one_program(tmp_path):
    with pytest.raises(ConfigError, match="has GPU kernels"):
        scaling_of_paths([cpu_run(tmp_path, 8), gpu_run(tmp_path, 16)], cache=False)


def test_every_format_carries_the_verdict_and_the_json_its_numbers(tmp_path):
    scaling = scaling_of_paths([cpu_run(tmp_path, s) for s in SIZES], cache=False)
    for name, render in RENDERERS.items():
        assert "93% of the small run is fixed overhead" in render(scaling), name
    document = json.loads(RENDERERS["json"](scaling))
    assert document["schema_version"] == SCALING_SCHEMA_VERSION and document["kind"] == "traceanalyze.scaling"
    assert document["fixed_ns"] == pytest.approx(100_000)
    assert document["fit"]["throughput_per_s"] == pytest.approx(FLOPS_PER_SIZE * 1e6)
    assert document["fixed_fraction_largest"] == pytest.approx(100 / 132)
    assert [run["time_ns"] for run in document["runs"]] == [(100 + s) * 1000 for s in SIZES]
    html = RENDERERS["html"](scaling)
    assert html.count('class="run"') == 3 and 'class="fit"' in html and 'class="proportional"' in html


def test_the_terminal_report_fits_the_width(tmp_path):
    scaling = scaling_of_paths([cpu_run(tmp_path, s) for s in SIZES], cache=False)
    text = RENDERERS["terminal"](scaling, width=60)
    assert max(len(line) for line in text.splitlines()) <= 60


def test_the_gpu_marginal_throughput_is_set_against_the_roof(tmp_path):
    scaling = scaling_of_paths([gpu_run(tmp_path, s) for s in SIZES], cache=False)
    assert scaling.marginal_flops_per_s == pytest.approx(FLOPS_PER_SIZE * 1e6)
    text = RENDERERS["terminal"](scaling, width=200)
    assert f"{FLOPS_PER_SIZE * 1e6 / 19.5e12 * 100:.2g}% of the 19.5 TFLOP/s roof" in text  # 0.042%


def test_the_footnote_names_the_matmul_whose_intensity_grows(tmp_path):
    """[size, 64] × [64, 64]: 8192·size FLOPs over 4·(128·size + 4096) bytes."""
    scaling = scaling_of_paths([cpu_run(tmp_path, s) for s in SIZES], cache=False)
    shifts = {shift.op: shift.intensities for shift in scaling.intensity_shifts}
    assert list(shifts) == ["aten::mm"]
    assert shifts["aten::mm"] == pytest.approx([8192 * s / (4 * (128 * s + 4096)) for s in SIZES])
    assert "INTENSITY CHANGES WITH SIZE" in RENDERERS["terminal"](scaling, width=120)


def test_traces_without_steps_are_one_step_each_and_say_so(tmp_path):
    scaling = scaling_of_paths([cpu_run(tmp_path, s, profiler_steps=False) for s in (8, 32)], cache=False)
    # the whole window: 3 periods and the 2 pauses of 10 µs between them
    assert [p.steps for p in scaling.points] == [0, 0]
    assert [p.cpu_step_ns for p in scaling.points] == [(3 * (100 + s) + 20) * 1000 for s in (8, 32)]
    assert [p.flops for p in scaling.points] == [3 * FLOPS_PER_SIZE * s for s in (8, 32)]
    assert sum("no ProfilerStep spans" in note for note in scaling.notes) == 2


def test_traces_without_shapes_need_the_sizes(tmp_path):
    paths = [cpu_run(tmp_path, s, shapes=False) for s in SIZES]
    with pytest.raises(ConfigError, match="give the sizes with --sizes"):
        scaling_of_paths(paths, cache=False)
    scaling = scaling_of_paths(paths, sizes=list(SIZES), cache=False)
    assert scaling.fit.fixed == pytest.approx(100_000) and scaling.fit.slope == pytest.approx(1_000)


def test_the_chart_goes_log_log_when_the_work_spans_decades(tmp_path):
    import re
    import xml.dom.minidom

    linear = scaling_of_paths([cpu_run(tmp_path, s) for s in SIZES], cache=False)
    wide = scaling_of_paths([cpu_run(tmp_path, s, fixed_us=10) for s in (4, 64, 400)], cache=False)
    for scaling, axes in ((linear, "linear axes"), (wide, "log-log axes")):
        svg = re.search(r"<svg.*?</svg>", RENDERERS["html"](scaling), re.DOTALL).group(0)
        xml.dom.minidom.parseString(svg)  # well-formed
        assert axes in svg and svg.count('class="run"') == len(scaling.runs)
    wide_svg = RENDERERS["html"](wide)
    assert '<polyline class="fit"' in wide_svg and 'class="fixed"' in wide_svg
