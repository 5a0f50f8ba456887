"""`traceanalyze calibrate`: the roofs read off synthetic measurements (exact), and a real
`--quick` run on this CPU (coarse facts only: a shared CI runner is noisy)."""

from __future__ import annotations

import json
import math
import statistics
import time
import xml.etree.ElementTree as ElementTree
from datetime import datetime

import pytest
from capture_helpers import REPO, run_cli

from traceanalyze.analysis.devices import load_device_file, peaks_from_dict
from traceanalyze.calibrate import Calibration, SweepPoint, device_file, fit_roofs, render_svg, render_table

SVG = "{http://www.w3.org/2000/svg}"


def roofline_calibration() -> Calibration:
    """A device with 1e12 B/s and a 1e12 FLOP/s pointwise roof on 1e6 fp32 elements: runtime is
    8 µs (bandwidth) until r = 8, then r µs (compute)."""
    size = 1_000_000
    points = tuple(SweepPoint(r, max(8e-6, r * size / 1e12), size) for r in (1, 2, 4, 8, 16, 32, 64))
    return Calibration(
        device_kind="cuda",
        device_name="Synthetic GPU",
        torch_version="2.13.0",
        sweep_method="synthetic",
        sweep=points,
        copy_bytes_per_s={"fp32": 0.9e12},
        matmul_size=8192,
        matmul_flops_per_s={"fp32:simt": 20e12, "bf16:tensor": 300e12},
        date="2026-01-01T00:00:00+00:00",
        base_key="h100-sxm",
    )


def test_roofs_of_a_textbook_roofline():
    roofs = fit_roofs(roofline_calibration())
    assert roofs.sweep_bandwidth_bytes_per_s == pytest.approx(1e12)
    assert roofs.bandwidth_bytes_per_s == pytest.approx(1e12)  # beats the copy's 0.9e12
    assert roofs.compute_flops_per_s == pytest.approx(1e12)
    assert roofs.ridge_flop_per_byte == pytest.approx(1.0)
    assert roofs.ridge_repeat == pytest.approx(8.0)
    assert roofs.flat_until_repeat == 8


def test_compute_roof_is_never_below_a_measured_point():
    """As measured on a CPU: the point at the bend (r = 64: 2 × 7.5 ms of work in 9.1 ms) beats the
    median slope of the rising tail, which is slowed by cache effects."""
    size = 1 << 25
    runtimes = {1: 7.5e-3, 2: 7.5e-3, 4: 7.6e-3, 8: 7.5e-3, 16: 7.5e-3, 32: 7.8e-3, 64: 9.1e-3, 128: 20.3e-3,
                256: 48.7e-3}
    sweep = tuple(SweepPoint(r, t, size) for r, t in runtimes.items())
    calibration = Calibration("cpu", "cpu", "2.13.0", "synthetic", sweep, {"fp32": 40e9}, 1024, {}, "2026-01-01")
    roofs = fit_roofs(calibration)
    best = max(p.flops_per_s for p in sweep)
    assert best > size / statistics.median(p.runtime_s / p.repeat for p in sweep if p.repeat >= 128)
    assert roofs.compute_flops_per_s == pytest.approx(best)
    assert roofs.ridge_flop_per_byte == pytest.approx(best / roofs.bandwidth_bytes_per_s)


def test_device_file_fields():
    device = device_file(roofline_calibration())
    assert device["format"] == "traceanalyze-device" and device["version"] == 1
    assert device["name"] == "Synthetic GPU"
    assert device["memory_bandwidth_bytes_per_s"] == pytest.approx(1e12)
    assert device["peak_flops_per_s"] == {"fp32": {"simt": 20e12}, "bf16": {"tensor": 300e12}}
    assert device["base"] == "h100-sxm"
    notes = device["notes"]
    assert notes["measured"] is True and isinstance(notes["method"], str) and notes["date"].startswith("2026-01-01")
    assert notes["ridge_flop_per_byte"]["bf16:tensor"] == pytest.approx(300.0)
    assert notes["pointwise"]["flat_until_repeat"] == 8
    assert [p["repeat"] for p in notes["pointwise"]["points"]] == [1, 2, 4, 8, 16, 32, 64]
    json.dumps(device, allow_nan=False)


def test_device_file_loads_as_the_reports_device_peaks():
    peaks = peaks_from_dict(json.loads(json.dumps(device_file(roofline_calibration()))))
    assert peaks.memory_bandwidth_bytes_per_s == pytest.approx(1e12)
    assert peaks.peak_flops("bf16", tensor_core=True) == pytest.approx(300e12)  # measured, not the datasheet's
    assert peaks.peak_flops("fp32", tensor_core=False) == pytest.approx(20e12)
    assert peaks.peak_flops("fp8", tensor_core=True) == pytest.approx(1979e12)  # not measured: from the base entry
    assert peaks.display_name == "Synthetic GPU"


def test_fp32_peak_falls_back_to_the_sweep_without_a_matmul():
    calibration = roofline_calibration()
    calibration = Calibration(**{**calibration.__dict__, "matmul_flops_per_s": {}, "base_key": None})
    assert device_file(calibration)["peak_flops_per_s"] == {"fp32": {"simt": pytest.approx(1e12)}}


def test_chart_is_an_svg_with_three_panels_and_roofs():
    root = ElementTree.fromstring(render_svg(roofline_calibration()))
    assert root.tag == f"{SVG}svg"
    assert len(root.findall(f"{SVG}g")) == 3
    assert len(root.iter(f"{SVG}polyline").__next__().get("points").split()) == 7
    texts = " ".join(text.text or "" for text in root.iter(f"{SVG}text"))
    assert "bandwidth roof 1 TB/s" in texts and "compute roof 1 TFLOP/s" in texts and "ridge r≈8" in texts


def test_table_lists_every_repeat_and_the_ridge():
    table = render_table(roofline_calibration())
    assert "ridge point: compute roof / bandwidth roof = 1 FLOP/byte (r ≈ 8)" in table
    assert "bandwidth roof: 1 TB/s" in table and "pointwise compute roof: 1 TFLOP/s" in table
    assert "runtime flat (bandwidth-bound) for r <= 8, then growing with r" in table
    assert "peak bf16 tensor cores: 300 TFLOP/s" in table
    for r in (1, 2, 4, 8, 16, 32, 64):
        assert f"\n{r:>5}  " in table


def with_runtimes(calibration: Calibration, runtimes: dict[int, float]) -> Calibration:
    sweep = tuple(SweepPoint(p.repeat, runtimes.get(p.repeat, p.runtime_s), p.size) for p in calibration.sweep)
    return Calibration(**{**calibration.__dict__, "sweep": sweep})


def test_one_noisy_point_moves_neither_the_roofs_nor_the_flat_part():
    clean = fit_roofs(roofline_calibration())
    for noisy in ({2: 16e-6}, {4: 4e-6}, {32: 64e-6}, {1: 30e-6}):  # one point 2× slow, 2× fast, …
        roofs = fit_roofs(with_runtimes(roofline_calibration(), noisy))
        assert roofs.flat_until_repeat == 8, noisy
        assert roofs.compute_flops_per_s == pytest.approx(clean.compute_flops_per_s), noisy
        assert roofs.ridge_flop_per_byte == pytest.approx(roofs.compute_flops_per_s / roofs.bandwidth_bytes_per_s)


def test_a_sweep_that_never_flattens_says_so():
    rising = with_runtimes(roofline_calibration(), {r: r * 1e-6 for r in (1, 2, 4, 8, 16, 32, 64)})
    roofs = fit_roofs(rising)
    assert roofs.flat_until_repeat is None and roofs.compute_flops_per_s == pytest.approx(1e12)
    table = render_table(rising)
    assert "compute-bound at every r measured" in table and "nowhere" not in table


def test_a_cpu_has_no_tensor_cores():
    calibration = Calibration(**{**roofline_calibration().__dict__, "device_kind": "cpu", "base_key": None,
                                 "matmul_flops_per_s": {"fp32:simt": 1e11, "bf16:simt": 4e11}})
    assert device_file(calibration)["peak_flops_per_s"] == {"fp32": {"simt": 1e11}, "bf16": {"simt": 4e11}}
    table = render_table(calibration)
    assert "bf16 (CPU cores) 400 GFLOP/s" in table and "tensor" not in table


def test_quick_calibration_on_this_cpu(tmp_path):
    pytest.importorskip("torch")
    began = time.monotonic()
    result = run_cli("calibrate", "--quick", "--device", "cpu", "--output", tmp_path / "device.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - began < 300  # a hang guard; speed is measured by scripts/bench.py, not here

    device = json.loads((tmp_path / "device.json").read_text())
    notes = device["notes"]
    assert notes["measured"] is True and notes["kind"] == "cpu" and device["name"] and "base" not in device
    assert device["memory_bandwidth_bytes_per_s"] > 1e8
    assert device["peak_flops_per_s"]["fp32"]["simt"] > 1e8
    assert all(math.isfinite(value) and value > 0 for value in notes["peak_flops_per_s"].values())
    datetime.fromisoformat(notes["date"])
    assert load_device_file(tmp_path / "device.json").peak_flops("fp32", tensor_core=False) > 1e8

    assert all(unit == "simt" for units in device["peak_flops_per_s"].values() for unit in units)  # no tensor cores

    points = {p["repeat"]: p for p in notes["pointwise"]["points"]}
    assert sorted(points) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    runtime = [points[r]["runtime_s"] for r in sorted(points)]
    # Point to point, runtimes on a shared runner scatter with the load of other processes (a
    # timing, not a property of the code); over the whole sweep (256x the arithmetic) they rise.
    assert all(seconds > 0 for seconds in runtime)
    assert runtime[-1] > 4 * runtime[0]  # compute-bound by r = 256
    pointwise = notes["pointwise"]
    assert pointwise["ridge_flop_per_byte"] == pytest.approx(
        pointwise["compute_roof_flops_per_s"] / pointwise["bandwidth_roof_bytes_per_s"])
    assert pointwise["bandwidth_roof_bytes_per_s"] == device["memory_bandwidth_bytes_per_s"]
    assert points[256]["flops_per_s"] > points[1]["flops_per_s"]
    assert points[1]["bytes_per_s"] > points[256]["bytes_per_s"]

    # a CPU calibration does not describe the fixture's A100: refused (issue 12), unless forced
    refused = run_cli("report", REPO / "fixtures" / "synthetic_training.json.gz", "--device-file",
                      tmp_path / "device.json",
                      "--format", "json", cwd=tmp_path)
    assert refused.returncode == 2
    assert ("describes another device: rank 0 device 0 is 'NVIDIA A100-SXM4-80GB' (a100-sxm4-80gb), "
            "but the file was measured on a CPU") in refused.stderr
    report = run_cli("report", REPO / "fixtures" / "synthetic_training.json.gz", "--device-file",
                     tmp_path / "device.json",
                     "--force-device-file", "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    used = json.loads(report.stdout)["device"]
    assert used["memory_bandwidth_bytes_per_s"] == pytest.approx(device["memory_bandwidth_bytes_per_s"])

    chart = ElementTree.parse(tmp_path / "device.svg").getroot()
    assert chart.tag == f"{SVG}svg"
    assert "bandwidth roof:" in result.stdout and "ridge point: compute roof / bandwidth roof =" in result.stdout
    assert "nowhere" not in result.stdout
