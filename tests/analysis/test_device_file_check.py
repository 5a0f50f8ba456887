"""A device file must describe the trace's device: refused (exit 2) otherwise, unless forced."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis.device_match import device_file_mismatches
from traceanalyze.analysis.devices import load_device_file
from traceanalyze.cli import app
from traceanalyze.errors import ConfigError


def device_file(tmp_path, **fields) -> str:
    document = {"format": "traceanalyze-device", "version": 1, "memory_bandwidth_bytes_per_s": 1e11,
                "default_flops_per_s": 1e12, **fields}
    path = tmp_path / "device.json"
    path.write_text(json.dumps(document))
    return str(path)


def a100_trace(tmp_path):
    b = TraceBuilder()  # NVIDIA A100-SXM4-80GB
    b.launch_kernel(launch_us=0, start_us=5, dur_us=3)
    return str(b.write(tmp_path / "t.json"))


CPU_FILE = dict(name="AMD EPYC 7763 64-Core Processor", notes={"kind": "cpu"})


@pytest.mark.parametrize("fields, problem", [
    (CPU_FILE, "rank 0 device 0 is 'NVIDIA A100-SXM4-80GB' (a100-sxm4-80gb), but the file was measured on a CPU "
               "('AMD EPYC 7763 64-Core Processor')"),
    (dict(base="h100-sxm"), "rank 0 device 0 is 'NVIDIA A100-SXM4-80GB' (a100-sxm4-80gb), but the file describes "
                            "h100-sxm ('NVIDIA H100 SXM5 80GB')"),
    # a name resolved like a trace's
    (dict(name="NVIDIA H100 80GB HBM3"), "rank 0 device 0 is 'NVIDIA A100-SXM4-80GB' (a100-sxm4-80gb), but the file "
                                         "describes h100-sxm ('NVIDIA H100 80GB HBM3')"),
    (dict(name="My Lab GPU"),
     "rank 0 device 0 is 'NVIDIA A100-SXM4-80GB' (a100-sxm4-80gb), but the file describes 'My Lab GPU'"),
])
def test_a_file_of_another_device_is_refused(tmp_path, fields, problem):
    trace = traceanalyze.load_trace(a100_trace(tmp_path))
    found = device_file_mismatches(trace, load_device_file(device_file(tmp_path, **fields)))
    assert found == [problem]


@pytest.mark.parametrize("fields", [
    dict(base="a100-sxm4-80gb"),
    dict(name="NVIDIA A100-SXM4-80GB", notes={"kind": "cuda"}),
    dict(name="NVIDIA A100 80GB"),  # the same model, named differently (resolves to the same entry)
    dict(),  # a hand-written file that names no device: nothing to compare
])
def test_a_file_of_the_same_device_or_of_no_named_device_is_used(tmp_path, fields):
    trace = traceanalyze.load_trace(a100_trace(tmp_path))
    assert device_file_mismatches(trace, load_device_file(device_file(tmp_path, **fields))) == []


def test_a_trace_without_device_properties_takes_any_file(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=5, dur_us=3)
    document = b.to_dict()
    document.pop("deviceProperties")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    trace = traceanalyze.load_trace(path)
    assert device_file_mismatches(trace, load_device_file(device_file(tmp_path, base="h100-sxm"))) == []


def test_cli_refuses_with_exit_2_unless_forced(tmp_path):
    trace, path = a100_trace(tmp_path), device_file(tmp_path, **CPU_FILE)
    refused = CliRunner().invoke(app, ["report", trace, "--device-file", path, "--format", "json"])
    assert refused.exit_code == 2
    assert "describes another device" in refused.output and "--force-device-file" in refused.output
    assert "Traceback" not in refused.output
    forced = CliRunner().invoke(app, ["report", trace, "--device-file", path, "--force-device-file", "--format",
                                      "json"])
    assert forced.exit_code == 0, forced.output
    assert json.loads(forced.output)["device"]["memory_bandwidth_bytes_per_s"] == 1e11
    with pytest.raises(ConfigError, match="describes another device"):
        traceanalyze.analyze(trace, device_file=path)
    assert traceanalyze.analyze(trace, device_file=path,
                                force_device_file=True).ranks[0].peaks[0].peaks.memory_bandwidth_bytes_per_s == 1e11
