"""What capture writes stays private and consistent (issue 35): a secret hidden from argv never
comes back through the script's error line, `-k`, `--passphrase`, `--bearer`, `Authorization:
Bearer …` and URL credentials are hidden too, run.json and the trace are 0600, and a run that dies
before its run.json never leaves the previous run's run.json beside its new trace."""

from __future__ import annotations

import gzip
import json
import stat

import pytest
from capture_helpers import SCRIPTS, read_json, run_cli

from traceanalyze.capture.redact import redact_arguments, redact_text, secret_values

pytest.importorskip("torch")


def test_every_secret_form_is_hidden():
    argv = ["-k", "shortkey1", "--passphrase", "pass-phrase", "--bearer", "tok-abcdef", "-H",
            "Authorization: Bearer abc.def", "--url", "https://bob:pw1234@h.example/x", "--lr", "3e-4"]
    assert redact_arguments(argv) == ["-k", "***", "--passphrase", "***", "--bearer", "***", "-H",
                                      "Authorization: Bearer ***", "--url", "https://***@h.example/x", "--lr", "3e-4"]
    secrets = secret_values(argv, {"HF_TOKEN": "hf_envsecret", "PATH": "/usr/bin"})
    assert set(secrets) == {"shortkey1", "pass-phrase", "tok-abcdef", "hf_envsecret"}
    assert redact_text("failed: shortkey1 / hf_envsecret / 3e-4", secrets) == "failed: *** / *** / 3e-4"


def test_the_script_error_hides_what_argv_hid_and_files_are_private(tmp_path):
    out = tmp_path / "out"
    result = run_cli("capture", "--no-report", "-o", out, SCRIPTS / "raises_with_a_secret.py", "--api-key",
                     "argsecret123", cwd=tmp_path, env={"HF_TOKEN": "envsecret789"})
    assert result.returncode == 1, result.stderr
    run = read_json(out / "run.json")
    error = run["exit_status"]["script_error"]
    assert error == ("ValueError: rejected key *** for https://***@example.org/x (Authorization: Bearer ***)")
    written = (out / "run.json").read_bytes() + gzip.decompress((out / "trace.json.gz").read_bytes())
    for secret in (b"argsecret123", b"hunter2pw", b"abc.def.ghi", b"envsecret789"):
        assert secret not in written
    for path in (out / "run.json", out / "trace.json.gz"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_run_killed_before_its_run_json_leaves_no_mismatched_pair(tmp_path):
    good = run_cli("capture", "--no-report", "-o", tmp_path, SCRIPTS / "echo_argv.py", "--report",
                   tmp_path / "seen.json", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    before = (tmp_path / "trace.json.gz").read_bytes()
    assert json.loads((tmp_path / "run.json").read_text())["traces"] == ["trace.json.gz"]
    run_cli("capture", "--no-report", "-o", tmp_path, SCRIPTS / "exits_hard.py", cwd=tmp_path)
    assert (tmp_path / "trace.json.gz").read_bytes() != before  # the new run's trace landed …
    assert not (tmp_path / "run.json").exists()  # … and the old run's record is not beside it
