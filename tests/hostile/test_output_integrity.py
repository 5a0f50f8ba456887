"""Outputs are written whole or not at all, and never over an input (traceanalyze/output.py)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from traceanalyze.errors import ConfigError
from traceanalyze.output import append_output, atomic_path, refuse_inputs_as_outputs, write_atomically

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"


def run(*args, cwd: Path, env: dict[str, str] | None = None,
        file_limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if file_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    environment = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    environment.update({"PYTHONPATH": str(REPO), **(env or {})})
    return subprocess.run([sys.executable, "-m", "traceanalyze", *map(str, args)], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=120, preexec_fn=limit)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.json.gz"
    shutil.copyfile(FIXTURE, path)
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".tmp-"))


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", [
    ["report", "{t}", "--format", "html", "-o", "{t}"],
    ["report", "{t}", "-o", "{link}"],
    ["report", "{t}", "-o", "{hard}"],
    ["report", "{folder}", "-o", "{folder}/rank0.json.gz"],
    ["gate", "{t}", "--max-idle-fraction", "1", "--allow-unreliable", "--junit", "{t}"],
    ["gate", "{t}", "--max-idle-fraction", "1", "--allow-unreliable", "-o", "{link}"],
    ["gate", "{t}", "--baseline", "{t2}", "--max-regression", "5%", "--allow-unreliable", "--junit", "{t2}"],
    ["diff", "{t}", "{t2}", "-o", "{t}"],
    ["diff", "{t}", "{t2}", "-o", "{t2}"],
])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path, trace, command):
    shutil.copyfile(FIXTURE, tmp_path / "t2.json.gz")
    (tmp_path / "link.json.gz").symlink_to(trace)
    os.link(trace, tmp_path / "hard.json.gz")
    (tmp_path / "ranks").mkdir()
    shutil.copyfile(FIXTURE, tmp_path / "ranks" / "rank0.json.gz")
    names = {"t": trace, "t2": tmp_path / "t2.json.gz", "link": tmp_path / "link.json.gz",
             "hard": tmp_path / "hard.json.gz", "folder": tmp_path / "ranks"}
    result = run(*[part.format(**names) for part in command], cwd=tmp_path)
    assert "would overwrite the input" in one_error_line(result)
    for path in (trace, tmp_path / "t2.json.gz", tmp_path / "ranks" / "rank0.json.gz"):
        assert path.read_bytes() == FIXTURE.read_bytes()


@pytest.mark.parametrize("summary", ["t.json.gz", "link.json.gz"])
def test_a_step_summary_that_is_the_input_is_refused(tmp_path, trace, summary):
    (tmp_path / "link.json.gz").symlink_to(trace)
    result = run("gate", trace, "--max-idle-fraction", "1", "--allow-unreliable", cwd=tmp_path,
                 env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / summary)})
    assert one_error_line(result) == (f"traceanalyze: error: {tmp_path / summary}: GITHUB_STEP_SUMMARY would overwrite "
                                      f"the input {trace}; choose another file")
    assert trace.read_bytes() == FIXTURE.read_bytes()


def test_two_outputs_naming_one_file_are_refused(tmp_path, trace):
    result = run("gate", trace, "--max-idle-fraction", "1", "--junit", tmp_path / "v.txt", "-o", tmp_path / "v.txt",
                 cwd=tmp_path)
    assert one_error_line(result) == (f"traceanalyze: error: {tmp_path / 'v.txt'}: given to both --output and --junit; "
                                      "choose another file")


def test_a_failed_write_keeps_the_previous_output_whole(tmp_path, trace):
    output = tmp_path / "r.html"
    output.write_text("previous report\n")
    result = run("report", trace, "--format", "html", "-o", output, cwd=tmp_path, file_limit=20_000)
    line = one_error_line(result)
    assert line.startswith(f"traceanalyze: error: {output}: cannot write: File too large")
    assert output.read_text() == "previous report\n" and leftovers(tmp_path) == []


def test_a_junit_write_that_fails_leaves_no_partial_file(tmp_path, trace):
    junit = tmp_path / "junit.xml"
    result = run("gate", trace, "--max-idle-fraction", "1", "--allow-unreliable", "--junit", junit, cwd=tmp_path,
                 file_limit=100)
    assert "cannot write: File too large" in one_error_line(result)
    assert not junit.exists() and leftovers(tmp_path) == []


def test_output_through_a_symlink_replaces_its_target_and_keeps_the_link(tmp_path, trace):
    real = tmp_path / "real.json"
    real.write_text("old")
    (tmp_path / "out.json").symlink_to(real)
    result = run("report", trace, "--format", "json", "-o", tmp_path / "out.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.json").is_symlink() and real.read_text().startswith("{")


def test_interrupted_write_keeps_the_previous_content(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("before")
    os.chmod(target, 0o640)
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as temporary:
            temporary.write_text("half a rep")
            raise KeyboardInterrupt
    assert target.read_text() == "before" and leftovers(tmp_path) == []
    write_atomically(target, "after")
    assert target.read_text() == "after" and (os.stat(target).st_mode & 0o777) == 0o640  # its mode is kept


def test_the_temporary_file_keeps_the_targets_suffix(tmp_path):
    with atomic_path(tmp_path / "trace.json.gz") as temporary:
        assert temporary.parent == tmp_path and temporary.name.startswith(".tmp-")
        assert temporary.name.endswith(".trace.json.gz")
        temporary.write_bytes(b"x")
    assert (tmp_path / "trace.json.gz").read_bytes() == b"x"


def test_step_summary_is_appended_whole(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    append_output(summary, "| gate | ok |\n")
    assert summary.read_text() == "# earlier step\n| gate | ok |\n"


def test_refusal_compares_files_not_names(tmp_path):
    source = tmp_path / "in.json"
    source.write_text("{}")
    refuse_inputs_as_outputs({"-o": tmp_path / "new.json", "--junit": None}, [source])  # no error
    with pytest.raises(ConfigError, match="would overwrite the input"):
        refuse_inputs_as_outputs({"-o": tmp_path / "." / "in.json"}, [source])


def test_calibrate_refuses_one_file_for_the_device_file_and_the_chart(tmp_path):
    result = run("calibrate", "--quick", "--output", tmp_path / "d.json", "--plot", tmp_path / "d.json", cwd=tmp_path)
    assert one_error_line(result) == (f"traceanalyze: error: {tmp_path / 'd.json'}: given to both --output and --plot; "
                                      "choose another file")
    assert list(tmp_path.iterdir()) == []
