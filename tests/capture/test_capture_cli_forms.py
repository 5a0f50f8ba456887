"""`capture SCRIPT [OPTIONS] -- ARGS…`: our options may also follow SCRIPT when a `--` separates
the script's own arguments; then the printed report is the full terminal report."""

from __future__ import annotations

import json

from capture_helpers import EXAMPLES, SCRIPTS, read_trace, run_cli, step_names


def test_options_after_script_before_dashes(tmp_path):
    result = run_cli("capture", EXAMPLES / "mlp_train.py", "--active", "2", "-o", tmp_path / "out",
                     "--stop-after-capture", "--", "--steps", "8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    trace = read_trace(tmp_path / "out" / "trace.json.gz")
    assert len(step_names(trace)) == 2
    assert "traceanalyze report" in result.stdout and "CPU" in result.stdout


def test_script_arguments_after_dashes_reach_the_script(tmp_path):
    report = tmp_path / "argv.json"
    result = run_cli("capture", SCRIPTS / "echo_argv.py", "--no-report", "-o", tmp_path / "out",
                     "--", "--report", report, "--steps", "5", "extra", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    argv = json.loads(report.read_text())["argv"]
    assert argv[1:] == ["--report", str(report), "--steps", "5", "extra"]


def test_unknown_option_before_dashes_is_a_clean_error(tmp_path):
    result = run_cli("capture", SCRIPTS / "tiny_training.py", "--bogus", "--", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "--bogus" in result.stderr
