"""GitHub's legacy (v1) workflow commands, `##[error]`, `##[add-mask]`, `##[group]`, are found by the
runner anywhere in a line, not only at its start: no trace string may carry one into any output
(terminal, Markdown, HTML, `info`, `diff`, the gate's step summary and its annotation lines), and an
annotation line carries no raw control character (an OSC 52 clipboard write in a device name)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from hostile.cases import renamed_fixture

from tests.hostile.test_injection import FIXTURE, run
from traceanalyze.renderers import escape

LEGACY = re.compile(r"##(vso)?\[", re.IGNORECASE)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
KERNEL = "gemm ##[error]kernel ##[add-mask]secret ##vso[task.setvariable]x"
ANNOTATION = "step ##[group]annotation"
DEVICE = "A100 ##[error]device\x1b]52;c;aGVsbG8=\x07\x1b[2J"


def test_output_text_and_workflow_data_break_legacy_commands_anywhere():
    assert escape.output_text("kernel ##[error]x and ##[add-mask]y ##VSO[z]") == (
        "kernel # #[error]x and # #[add-mask]y # #VSO[z]")
    assert escape.workflow_data("a ##[group]b\x1b]52;c;x\x07\n") == "a # #[group]b\\x1b]52;c;x\\x07%0A"
    assert escape.workflow_property("t ##[error]\x07") == "t # #[error]\\x07"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("legacy")
    (folder / "t ##[error]file.json.gz").write_bytes(
        renamed_fixture(FIXTURE, device=DEVICE, kernel=KERNEL, annotation=ANNOTATION))
    (folder / "base.json.gz").write_bytes(FIXTURE.read_bytes())
    return folder


@pytest.mark.parametrize("command", [["report"], ["report", "-f", "markdown"], ["report", "-f", "html"], ["info"],
                                     ["diff"], ["diff", "-f", "markdown"]])
def test_no_legacy_command_reaches_an_output(folder, command):
    name = "t ##[error]file.json.gz"
    args = [command[0], *(["base.json.gz"] if command[0] == "diff" else []), name, *command[1:]]
    result = run(*args, cwd=folder)
    assert result.returncode == 0, result.stderr
    assert not LEGACY.search(result.stdout) and not LEGACY.search(result.stderr)
    if command == ["report"]:
        assert "# #[error]kernel # #[add-mask]secret" in result.stdout  # the name is still there, readable


def test_gate_annotations_and_step_summary_carry_no_command_and_no_control(folder, tmp_path):
    summary = tmp_path / "summary.md"
    result = run("gate", "t ##[error]file.json.gz", "--baseline", "base.json.gz", "--max-regression", "1%",
                 "--allow-unreliable", "--max-idle-fraction", "0.01", cwd=folder,
                 env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 1, result.stderr
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert any("different devices" in line for line in annotations)
    for line in annotations:
        assert not LEGACY.search(line) and not RAW.search(line), line
    assert "A100 # #[error]device\\x1b]52;c;aGVsbG8=\\x07\\x1b[2J" in "\n".join(annotations)
    assert not LEGACY.search(summary.read_text()) and not RAW.search(summary.read_text())


def test_a_newline_in_a_name_stays_on_its_markdown_line(tmp_path):
    # the escape's backslash is escaped too: it renders as the two characters \n
    assert escape.markdown("A100\n# heading\r| cell") == "A100\\\\n\\# heading\\\\r\\| cell"
    assert escape.markdown_plain("A100\n- item") == "A100\\\\n- item"
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    trace["deviceProperties"][0]["name"] = "A100\n# injected heading\n| a | b |"
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(json.dumps(trace).encode()))
    result = run("report", "t.json.gz", "-f", "markdown", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not [line for line in result.stdout.splitlines() if line.startswith(("# injected", "| a | b"))]
