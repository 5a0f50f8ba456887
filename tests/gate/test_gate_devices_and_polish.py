"""A baseline from another GPU is warned about in every format of `gate` and `diff` (never compared
silently), and the tables read cleanly: singular steps, a header on every column, one precision
per unit."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree

import pytest
from typer.testing import CliRunner

from gate_traces import stepped, write

from traceanalyze.cli import app

runner = CliRunner()
NO_CI = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}
A100, H100 = "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"
WARNING = f"different devices: the baseline ran on {A100}, this run on {H100}"


@pytest.fixture(autouse=True)
def isolated_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def other_gpu(tmp_path):
    base = write(stepped([100, 100, 100], device_name=A100), tmp_path, "base.json")
    new = write(stepped([100, 100, 100], device_name=H100), tmp_path, "new.json")
    return base, new


def gate(*args, env=None):
    return runner.invoke(app, ["gate", *map(str, args)], env=env or NO_CI)


def test_gate_warns_about_a_baseline_from_another_gpu_in_every_format(other_gpu, tmp_path):
    base, new = other_gpu
    flags = ("--max-idle-fraction", "0.15", "--baseline", base, "--max-regression", "5%")
    terminal = gate(new, *flags)
    assert terminal.exit_code == 0, terminal.output  # a warning, not a verdict
    assert f"WARNING: {WARNING}" in terminal.stdout
    markdown = gate(new, *flags, "--format", "markdown")
    assert f"> ⚠️ **Warning:** {WARNING}" in markdown.stdout
    verdict = json.loads(gate(new, *flags, "--format", "json").stdout)
    assert len(verdict["warnings"]) == 1 and verdict["warnings"][0].startswith(WARNING)
    gate(new, *flags, "--junit", tmp_path / "gate.xml")
    properties = ElementTree.parse(tmp_path / "gate.xml").getroot().iter("property")
    assert any(p.get("name") == "warning" and p.get("value").startswith(WARNING) for p in properties)
    summary = tmp_path / "summary.md"
    annotated = gate(new, *flags, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert any(line.startswith("::warning title=traceanalyze gate::different devices")
               for line in annotated.stdout.splitlines())
    assert WARNING in summary.read_text()


def test_same_gpu_no_warning(tmp_path):
    base = write(stepped([100, 100, 100]), tmp_path, "base.json")
    new = write(stepped([100, 100, 100]), tmp_path, "new.json")
    verdict = json.loads(gate(new, "--baseline", base, "--max-regression", "5%", "--format", "json").stdout)
    assert verdict["warnings"] == []
    assert "WARNING" not in runner.invoke(app, ["diff", str(base), str(new)]).stdout


def test_diff_warns_about_another_gpu_in_every_format(other_gpu):
    base, new = other_gpu
    outputs = {fmt: runner.invoke(app, ["diff", str(base), str(new), "--format", fmt])
               for fmt in ("terminal", "markdown", "html", "json")}
    assert all(result.exit_code == 0 for result in outputs.values())
    assert f"WARNING: {WARNING}" in outputs["terminal"].stdout
    assert f"> ⚠️ **Warning:** {WARNING}" in outputs["markdown"].stdout
    assert f"<strong>Warning:</strong> {WARNING}" in outputs["html"].stdout
    assert json.loads(outputs["json"].stdout)["warnings"][0].startswith(WARNING)


def test_one_step_is_singular_and_every_column_has_a_header(tmp_path):
    base = write(stepped([100], extra=[("gone_kernel", 5)]), tmp_path, "base.json")
    new = write(stepped([100], extra=[("new_kernel", 5)]), tmp_path, "new.json")
    text = runner.invoke(app, ["diff", str(base), str(new)]).stdout
    assert "(1 step)" in text and "(1 steps)" not in text
    assert "top 4 kernels by total time" in text  # the GEMM, other_kernel, gone_kernel, new_kernel
    assert "top 1 kernel by total time" in runner.invoke(app, ["diff", str(base), str(new), "--top", "1"]).stdout
    for header in (line for line in text.splitlines() if line.strip().startswith(("metric", "kernel"))):
        rule = text.splitlines()[text.splitlines().index(header) + 1]
        columns = [m.span() for m in re.finditer(r"-+", rule)]
        assert all(header[start:end].strip() for start, end in columns), header  # e.g. the status column
    verdict = gate(new, "--max-idle-fraction", "0.5", "--baseline", base, "--max-regression", "5%",
                   "--allow-unreliable")
    assert "(1 step)" in verdict.stdout and "(1 steps)" not in verdict.stdout


def test_baseline_table_has_one_precision_per_unit(tmp_path):
    base = write(stepped([100, 120, 140]), tmp_path, "base.json")
    new = write(stepped([150, 160, 170], cpu_us=1100), tmp_path, "new.json")
    lines = gate(new, "--baseline", base, "--max-regression", "5%").stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("compared")) + 2
    text = "\n".join(lines[start:lines.index("", start)])  # the baseline table's rows
    ms = re.findall(r"\b\d[\d,]*(?:\.(\d+))? ms\b", text)
    percents = re.findall(r"\b\d+(?:\.(\d+))?%", text)
    assert ms and {len(decimals) for decimals in ms} == {3}  # 1.000 ms, 0.120 ms, 0.176 ms
    assert percents and {len(decimals) for decimals in percents} == {2}
    assert "1.000 ms" in text and "1.100 ms" in text
