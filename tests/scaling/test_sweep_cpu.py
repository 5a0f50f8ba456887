"""Real data: `capture --sweep` runs the example MLP and convnet at three batch sizes on the CPU,
and the scaling report's numbers are checked against a recomputation from the trace files
themselves (the ProfilerStep durations, the matmuls' recorded shapes) and from the model's
architecture. Eager PyTorch on a CPU is dominated by per-op overhead at a tiny batch and by the
matmuls at a large one: both verdicts occur."""

from __future__ import annotations

import gzip
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from traceanalyze.scaling.model import OVERHEAD_BOUND
from traceanalyze.scaling.runs import scaling_of_paths

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "scripts" / "examples"
MLP_SIZES = (2, 64, 2048)
MATMULS = ("aten::linear", "aten::mm", "aten::addmm")


def run_cli(*args, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "traceanalyze", *map(str, args)], check=False, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def mlp_sweep(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("mlp")
    result = run_cli("capture", EXAMPLES / "mlp_train.py", "--sweep", "--batch-size=" + ",".join(map(str, MLP_SIZES)),
                     "--wait", 2, "--warmup", 2, "--active", 5, "--", "--steps", 10, cwd=cwd)
    return cwd / "traceanalyze-out", result


def raw_steps(trace: Path) -> list[dict]:
    with gzip.open(trace, "rt") as handle:
        events = [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    return events, steps


def raw_matmul_flops_per_step(trace: Path) -> float:
    """2·M·K·N of every aten::mm and aten::addmm inside a ProfilerStep, from the JSON's Input Dims."""
    events, steps = raw_steps(trace)
    total = 0.0
    for e in events:
        if e.get("cat") != "cpu_op" or e["name"] not in ("aten::mm", "aten::addmm"):
            continue
        if not any(s["ts"] <= e["ts"] < s["ts"] + s["dur"] for s in steps):
            continue
        dims = e["args"]["Input Dims"]
        (m, k), (_, n) = dims[-2:] if e["name"] == "aten::mm" else dims[1:3]
        total += 2 * m * k * n
    return total / len(steps)


def test_sweep_keeps_each_trace_and_prints_the_report(mlp_sweep):
    out, result = mlp_sweep
    assert result.returncode == 0, result.stderr
    for size in MLP_SIZES:
        assert (out / f"batch-size={size}" / "trace.json.gz").is_file()
        assert (out / f"batch-size={size}" / "run.json").is_file()
        run = json.loads((out / f"batch-size={size}" / "run.json").read_text())
        assert run["argv"][-1] == f"--batch-size={size}" and run["steps_captured"] == 5
    assert "VERDICT" in result.stdout and (out / "scaling.json").is_file()
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


def test_the_numbers_agree_with_the_trace_files_and_the_model(mlp_sweep):
    out, _ = mlp_sweep
    document = json.loads((out / "scaling.json").read_text())
    traces = [out / f"batch-size={size}" / "trace.json.gz" for size in MLP_SIZES]
    # time per step: the median ProfilerStep duration, read from the JSON directly
    times = [statistics.median(round(s["dur"] * 1000) for s in raw_steps(t)[1]) for t in traces]
    assert [run["time_ns"] for run in document["runs"]] == pytest.approx(times, abs=2)
    # the matmuls' FLOPs: from the recorded shapes, and from the MLP's layers (784 → 512 → 512 → 10;
    # the first layer needs no gradient of its input)
    scaling = scaling_of_paths(traces)
    for size, trace, point in zip(MLP_SIZES, traces, scaling.points):
        layers = 4 * size * 784 * 512 + 6 * size * (512 * 512 + 512 * 10)
        assert raw_matmul_flops_per_step(trace) == layers
        assert sum(op.flops for op in point.ops if op.name in MATMULS) == pytest.approx(layers)
    # the fit, recomputed: relative least squares of those times against the work
    work = [run["work"] for run in document["runs"]]
    slope, intercept = np.polyfit(work, times, 1, w=[1 / t for t in times])
    assert document["fit"]["fixed_ns"] == pytest.approx(intercept, rel=1e-6)
    assert document["fit"]["slope_ns_per_unit"] == pytest.approx(slope, rel=1e-6)
    assert document["fixed_fraction"] == pytest.approx(min(max(intercept, 0) / times[0], 1.0), rel=1e-6)
    assert document["work_ratio"] == pytest.approx(work[-1] / work[0])


def test_a_tiny_batch_is_overhead_bound_and_a_large_one_compute_bound(mlp_sweep):
    """The essay's experiment on the smallest and the largest run (a line through two points: no
    middle run whose noise on a shared CPU could tilt it), then the three runs' ordering."""
    out, _ = mlp_sweep
    traces = [out / f"batch-size={size}" / "trace.json.gz" for size in (MLP_SIZES[0], MLP_SIZES[-1])]
    ends = scaling_of_paths(traces)
    assert [run.regime for run in ends.runs] == ["overhead", "compute"]
    assert ends.runs[0].fixed_fraction >= OVERHEAD_BOUND > ends.runs[1].fixed_fraction
    assert ends.headline.endswith("(overhead-bound); the large run is compute-bound")
    document = json.loads((out / "scaling.json").read_text())
    shares = [run["fixed_fraction"] for run in document["runs"]]
    assert shares[0] > shares[-1] and document["runs"][-1]["regime"] == "compute"
    # the essay's footnote: [B, 512] × [512, 512] reads barely more bytes as B grows
    shifted = {shift["op"]: shift["intensities"] for shift in document["intensity_shifts"]}
    assert shifted["aten::mm"][0] < shifted["aten::mm"][-1]


def test_convnet_sweep_is_one_program_and_a_failing_size_is_reported(tmp_path):
    """The convnet at three batch sizes, one of which fails (a batch of -1 raises in the script):
    the two others are kept and reported, the process exits non-zero."""
    result = run_cli("capture", EXAMPLES / "convnet_train.py", "--sweep", "--batch-size 2,-1,16", "--", "--steps", 6,
                     cwd=tmp_path)
    assert result.returncode != 0
    assert "batch-size=-1: FAILED (exit code 1)" in result.stderr
    out = tmp_path / "traceanalyze-out"
    document = json.loads((out / "scaling.json").read_text())
    assert [run["label"] for run in document["runs"]] == ["batch-size=2", "batch-size=16"]
    assert document["work_ratio"] == pytest.approx(8.0, rel=0.05)  # the work is about proportional to the batch
    assert "VERDICT" in result.stdout
