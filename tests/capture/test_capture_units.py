"""Pure pieces of capture, in-process and without torch: script resolution, exit codes,
traceback trimming, option checks, and that importing the CLI never imports torch."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from capture_helpers import REPO

from traceanalyze.capture import CaptureOptions, Schedule
from traceanalyze.capture.script import as_main, resolve_script, run_as_main, script_traceback, system_exit_code
from traceanalyze.errors import CaptureError, ConfigError


def test_resolve_accepts_what_python_runs(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    assert resolve_script(script) == str(script)
    shebang = tmp_path / "train"
    shebang.write_text("#!/usr/bin/env python\nimport sys\n")
    assert resolve_script(shebang) == str(shebang)
    package = tmp_path / "app"
    package.mkdir()
    (package / "__main__.py").write_text("")
    assert resolve_script(package) == str(package)
    archive = tmp_path / "app.pyz"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("__main__.py", "")
    assert resolve_script(archive) == str(archive)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.py", None, "no such file"),
        ("run.sh", "#!/bin/sh\nset -e\necho $HOME\n", "is not a Python script"),
        ("weights.pt", b"PK\x03\x04\x00\x00", "is a binary file"),
        ("empty_dir", "dir", "is a folder without __main__.py"),
    ],
)
def test_resolve_rejects_with_one_line(tmp_path, name, content, message):
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(CaptureError) as caught:
        resolve_script(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(("code", "expected"), [(None, (0, None)), (0, (0, None)), (3, (3, None)), ("bye", (1, "bye"))])
def test_system_exit_codes_as_the_interpreter_maps_them(code, expected):
    assert system_exit_code(SystemExit(code)) == expected


def test_traceback_starts_at_the_script(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("def explode():\n    raise RuntimeError('boom')\n\nexplode()\n")
    with as_main(str(script), str(script), ()):
        try:
            run_as_main(str(script))
        except RuntimeError as error:
            text = script_traceback(error)
    frames = [line for line in text.splitlines() if line.startswith('  File "')]
    assert frames[0].startswith(f'  File "{script}", line 4, in <module>')
    assert frames[1].startswith(f'  File "{script}", line 2, in explode')
    assert text.rstrip().endswith("RuntimeError: boom")


def test_as_main_sets_and_restores_argv_and_path(tmp_path):
    script = tmp_path / "s.py"
    argv, path = list(sys.argv), list(sys.path)
    with as_main(str(script), "s.py", ("--a", "1")):
        assert sys.argv == ["s.py", "--a", "1"]
        assert sys.path[0] == str(tmp_path)
    assert sys.argv == argv and sys.path == path


def test_option_checks():
    Schedule().check()
    with pytest.raises(ConfigError):
        Schedule(active=0).check()
    with pytest.raises(ConfigError):
        Schedule(wait=-1).check()
    with pytest.raises(ConfigError):
        CaptureOptions(script=Path("x.py"), duration_s=0).check()
    with pytest.raises(ConfigError):
        CaptureOptions(script=Path("x.py"), delay_s=1).check()
    CaptureOptions(script=Path("x.py"), duration_s=1, delay_s=1, stop_after_capture=True).check()
    assert Schedule().first_recorded_step == 2


def test_importing_the_cli_capture_and_calibrate_does_not_import_torch():
    code = (
        "import sys\n"
        "import traceanalyze.cli, traceanalyze.capture, traceanalyze.calibrate\n"
        "import traceanalyze.capture.session, traceanalyze.capture.steps, traceanalyze.calibrate.bench\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'torch')\n"
        "assert not bad, bad[:5]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_capture_help_does_not_import_torch():
    code = (
        "import sys\n"
        "sys.argv = ['traceanalyze', 'capture', '--help']\n"
        "from traceanalyze.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'torch' not in sys.modules\n"
    )
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "--stop-after-capture" in result.stdout


class _Calls:
    """Records what the fakes below were asked to do, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []


def _recorder_at_the_last_recorded_step(calls: _Calls, tmp_path: Path) -> Any:
    """A capture recorder (no torch: fakes of `torch.cuda` and of the profiler) at the end of the
    window's last step, the one whose `profile.step()` saves the trace."""
    from types import SimpleNamespace

    from traceanalyze.capture.session import _Recorder

    class Span:
        def __exit__(self, *exc: object) -> None:
            calls.calls.append("step span closed")

    class Profiler:
        current_action = "record and save"
        step_num = 4

        def __init__(self) -> None:
            self.step_rec_fn: Any = Span()

        def step(self) -> None:  # torch's step() closes the span only when it is still set
            if self.step_rec_fn is not None:
                self.step_rec_fn.__exit__(None, None, None)
            calls.calls.append("profiler step (the trace is saved)")

    torch = SimpleNamespace(cuda=SimpleNamespace(is_initialized=lambda: True,
                                                 synchronize=lambda: calls.calls.append("synchronize")))
    recorder = _Recorder(torch, CaptureOptions(script=tmp_path / "train.py"), tmp_path, "trace", gpu=True)
    recorder.prof, recorder.started, recorder.whole_run = Profiler(), True, False
    recorder._recording, recorder._saving = ("record", "record and save"), "record and save"
    return recorder


def test_capture_waits_for_the_last_kernels_after_the_step_not_inside_it(tmp_path):
    """The synchronize that brings the window's last kernels into the trace comes after the last
    `ProfilerStep#N` span closed (recorded on an H100 inside it, it made a 279 ms step and a
    `sync-in-step` finding of capture's own), and the span is closed once."""
    calls = _Calls()
    recorder = _recorder_at_the_last_recorded_step(calls, tmp_path)
    recorder.on_step()
    assert calls.calls == ["step span closed", "synchronize", "profiler step (the trace is saved)"]
    assert recorder.captured_steps == [4] and not recorder.errors
