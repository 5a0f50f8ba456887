"""What capture writes when runs go wrong or carry secrets: a failed run never replaces the last
good trace, secret-looking argument values and environment variables never reach run.json, the
trace or the report, and a forked child of the script neither writes nor reports."""

from __future__ import annotations

import gzip

import pytest
from capture_helpers import SCRIPTS, read_json, read_trace, run_cli, step_names

from traceanalyze.capture.redact import redact_arguments, secret_name

pytest.importorskip("torch")


def test_secret_values_are_redacted_and_others_kept():
    argv = ["train.py", "--api-key", "k1", "--token=t1", "--db-password", "p1", "--client_secret", "c1",
            "HF_TOKEN=h1", "--lr", "3e-4", "--max-tokens", "128", "--keyboard", "us", "out=dir"]
    assert redact_arguments(argv) == [
        "train.py", "--api-key", "***", "--token=***", "--db-password", "***", "--client_secret", "***",
        "HF_TOKEN=***", "--lr", "3e-4", "--max-tokens", "128", "--keyboard", "us", "out=dir"]
    assert redact_arguments(["--api-key", "--", "x"]) == ["--api-key", "--", "x"]  # `--` is never a value
    assert [secret_name(n) for n in ("AWS_SECRET_ACCESS_KEY", "--auth", "--secret",
                                     "--steps")] == [True, True, True, False]


def test_no_secret_reaches_run_json_the_trace_or_the_report(tmp_path):
    out = tmp_path / "out"
    result = run_cli("capture", "-o", out, SCRIPTS / "echo_argv.py", "--", "--report", tmp_path / "seen.json",
                     "--api-key", "argsecret123", "--hf-token=tokensecret456", cwd=tmp_path,
                     env={"HF_TOKEN": "envsecret789", "OPENAI_API_KEY": "envsecret000"})
    assert result.returncode == 0, result.stderr
    run = read_json(out / "run.json")
    assert run["argv"] == [str(SCRIPTS / "echo_argv.py"), "--report", str(tmp_path / "seen.json"), "--api-key", "***",
                           "--hf-token=***"]
    assert run["command"].endswith("--api-key '***' '--hf-token=***'")
    written = (out / "run.json").read_bytes() + gzip.decompress((out / "trace.json.gz").read_bytes())
    shown = (result.stdout + result.stderr).encode()
    # the report was printed (it opens with the verdict since issue 14), and searched too
    assert result.stdout.startswith("VERDICT ") and "traceanalyze report — " in result.stdout
    for secret in (b"argsecret123", b"tokensecret456", b"envsecret789", b"envsecret000"):
        assert secret not in written and secret not in shown


def test_a_run_that_records_nothing_keeps_the_previous_trace(tmp_path):
    good = run_cli("capture", "--no-report", "-o", tmp_path, SCRIPTS / "echo_argv.py", "--report",
                   tmp_path / "seen.json",
                   cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    before_trace, before_run = (tmp_path / "trace.json.gz").read_bytes(), (tmp_path / "run.json").read_bytes()
    failed = run_cli("capture", "--no-report", "-o", tmp_path, SCRIPTS / "exits_at_argparse.py", "--bogus",
                     cwd=tmp_path)
    assert failed.returncode == 2
    assert "nothing was recorded: no torch operation ran while the profiler was on; no trace written" in failed.stderr
    assert (tmp_path / "trace.json.gz").read_bytes() == before_trace  # the last good trace, byte for byte
    assert (tmp_path / "run.json").read_bytes() == before_run
    record = read_json(tmp_path / "run.failed.json")
    assert record["traces"] == [] and record["exit_status"]["code"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.failed.json", "run.json", "seen.json", "trace.json.gz"]


def test_a_forked_child_neither_writes_nor_reports(tmp_path):
    result = run_cli("capture", "-o", tmp_path, SCRIPTS / "forks_a_child.py", cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "std::system_error" not in result.stderr and "terminate called" not in result.stderr
    assert result.stderr.count("trace of 3 steps written") == 1
    assert result.stdout.count("traceanalyze report — ") == 1
    assert step_names(read_trace(tmp_path / "trace.json.gz")) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json", "trace.json.gz"]
