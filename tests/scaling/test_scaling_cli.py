"""`traceanalyze scaling` through typer's CliRunner: formats, output files, one-line errors (exit 2)."""

from __future__ import annotations

import json

import pytest
from sweep_traces import cpu_run
from typer.testing import CliRunner

from traceanalyze.cli import app
from traceanalyze.scaling.command import FORMATS
from traceanalyze.scaling.formats import RENDERERS

SIZES = (8, 16, 32)


def invoke(*args):
    return CliRunner().invoke(app, ["scaling", *map(str, args)])


def test_the_command_formats_are_the_renderers():
    assert tuple(RENDERERS) == FORMATS


def test_terminal_report_opens_with_the_verdict(tmp_path):
    result = invoke(*[cpu_run(tmp_path, s) for s in SIZES], "--width", 80, "--no-cache")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[2] == "VERDICT" and "93% of the small run is fixed overhead" in result.output
    assert max(len(line) for line in lines) <= 80


@pytest.mark.parametrize("name", ["json", "markdown", "html"])
def test_output_file_in_every_format(tmp_path, name):
    out = tmp_path / f"scaling.{name}"
    result = invoke(*[cpu_run(tmp_path, s) for s in SIZES], "--format", name, "-o", out, "--no-cache")
    assert result.exit_code == 0, result.output
    text = out.read_text()
    if name == "json":
        assert json.loads(text)["fixed_ns"] == pytest.approx(100_000)
    assert "fixed overhead" in text


def test_sizes_option(tmp_path):
    result = invoke(*[cpu_run(tmp_path, s) for s in SIZES], "--sizes", "1,2,4", "-f", "json", "--no-cache")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["work_unit"] == "size"


@pytest.mark.parametrize("case, message", [
    ("one", "two or more traces"),
    ("missing", "no such file"),
    ("other_program", "not one program"),
    ("bad_sizes", "--sizes must be numbers"),
    ("sizes_count", "--sizes gives 2 sizes for 3 traces"),
    ("output_is_input", "--output"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, case, message):
    paths = [cpu_run(tmp_path, s) for s in SIZES]
    args = {
        "one": [paths[0]],
        "missing": [paths[0], tmp_path / "nope.json"],
        "other_program": [paths[0], cpu_run(tmp_path, 64, extra_op="aten::dropout")],
        "bad_sizes": [*paths, "--sizes", "8,x"],
        "sizes_count": [*paths, "--sizes", "8,16"],
        "output_is_input": [*paths, "-o", paths[0]],
    }[case]
    result = invoke(*args, "--no-cache")
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and message in result.output
    assert "Traceback" not in result.output


def test_roofs_given_for_a_cpu_sweep(tmp_path):
    """8256 FLOP/µs at the margin against a 10 GFLOP/s roof: 82.6%."""
    paths = [cpu_run(tmp_path, s) for s in SIZES]
    result = invoke(*paths, "--peak-flops", "1e10", "--peak-bandwidth", "2e10", "--width", "200", "--no-cache")
    assert result.exit_code == 0, result.output
    assert "82.6% of the 10 GFLOP/s roof" in result.output
    document = json.loads(invoke(*paths, "--peak-flops", "1e10", "--peak-bandwidth", "2e10", "-f", "json").output)
    assert document["peak_flops_per_s"] == 1e10 and document["peak_bytes_per_s"] == 2e10
    device = tmp_path / "cpu.json"  # what `traceanalyze calibrate --device cpu` writes (docs/devices.md)
    device.write_text(json.dumps({"format": "traceanalyze-device", "version": 1, "name": "a CPU",
                                  "memory_bandwidth_bytes_per_s": 4e10, "peak_flops_per_s": {"fp32": {"simt": 2e10}},
                                  "notes": {"kind": "cpu"}}))
    from_file = json.loads(invoke(*paths, "--device-file", device, "-f", "json").output)
    assert (from_file["peak_flops_per_s"], from_file["peak_bytes_per_s"]) == (2e10, 4e10)
    bad = invoke(*paths, "--peak-flops", "-1")
    assert bad.exit_code == 2 and "--peak-flops must be a positive number" in bad.output
