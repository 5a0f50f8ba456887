"""Config and device files are input too: a gate TOML (`--config`, or the nearest pyproject.toml,
which a pull request can change) or a `--device-file` nested 100,000 deep, grown to 50 MB, or
replaced by a FIFO is refused with one line naming the file, exit 2, never a RecursionError."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from traceanalyze import config_files
from traceanalyze.analysis.devices import load_device_file
from traceanalyze.errors import ConfigError
from traceanalyze.gate.config import find_pyproject_config, load_config_file

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"
DEEP_TOML = "[tool.traceanalyze.gate]\nmax_idle_fraction = " + "[" * 100_000 + "]" * 100_000 + "\n"
DEEP_JSON = '{"format": "traceanalyze-device", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"


def test_nesting_depth_skips_strings_and_comments():
    assert config_files.nesting_depth('a = "[[[" # [[[[\nb = [[1], {x = \'{{\'}]\nc = """\n[[[\n"""',
                                      comments=True) == 2
    assert config_files.nesting_depth('{"a": ["[\\"[", {"b": []}]}', comments=False) == 4


def test_a_deeply_nested_config_is_one_line(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text(DEEP_TOML)
    with pytest.raises(ConfigError, match=r"gate.toml: a TOML file nested 100000 deep \(at most 64"):
        load_config_file(path)
    (tmp_path / "pyproject.toml").write_text(DEEP_TOML)
    (tmp_path / "sub").mkdir()
    with pytest.raises(ConfigError, match="pyproject.toml: a TOML file nested"):
        find_pyproject_config(tmp_path / "sub")


def test_a_deeply_nested_device_file_is_one_line(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(DEEP_JSON)
    with pytest.raises(ConfigError, match=r"dev.json: a device file nested 100001 deep"):
        load_device_file(path)


def test_a_huge_config_or_a_fifo_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text("# padding\n" * 200_000)
    with pytest.raises(ConfigError, match=r"gate.toml: a TOML file of more than 1,048,576 bytes"):
        load_config_file(path)
    os.mkfifo(tmp_path / "fifo.json")
    raised: list[BaseException] = []

    def read() -> None:
        try:
            load_device_file(tmp_path / "fifo.json")
        except ConfigError as error:
            raised.append(error)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "a FIFO as device file blocked"
    assert "fifo.json: not a regular file" in str(raised[0])


@pytest.mark.parametrize("where", ["pyproject", "config", "device"])
def test_the_cli_says_one_line_and_exits_2(tmp_path, where):
    (tmp_path / ("pyproject.toml" if where == "pyproject" else "gate.toml")).write_text(DEEP_TOML)
    (tmp_path / "dev.json").write_text(DEEP_JSON)
    extra = {"pyproject": [], "config": ["--config", "gate.toml"], "device": ["--device-file", "dev.json"]}[where]
    result = subprocess.run([sys.executable, "-m", "traceanalyze", "gate", str(FIXTURE), "--max-idle-fraction", "1",
                             *extra], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and re.search(r"nested 10000[01] deep \(at most 64",
                                                              result.stderr), result.stderr
