"""The cache from the command line (docs/cache.md): `report`, `gate`, `diff`, `annotate` and
`info` read the loaded tables, and all but `info` the analysed ranks; `--no-cache` neither reads
nor writes either level, and a report from the cache is byte for byte the report from a parse, on
every real trace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shared_traces import SHARED_TRACES_DIR, real_trace_params, shared_trace
from traceanalyze.cli import app
from traceanalyze import cache_files
from traceanalyze.load import cache, load_trace
from traceanalyze.pipeline import results_cache

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"
runner = CliRunner()


@pytest.fixture
def cache_folder(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache_files.ENVIRONMENT_VARIABLE, str(folder))
    return folder


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*" + cache.SUFFIX))


def invoke(arguments: list[str]) -> bytes:
    result = runner.invoke(app, arguments, env={"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None})
    assert result.exit_code in (0, 1), result.output  # gate: 1 is a broken budget
    return result.stdout_bytes


FOLDER_OF_RANKS = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


@pytest.mark.parametrize("path", [*real_trace_params(),
                                  pytest.param(FOLDER_OF_RANKS, id="param_v100_dlrm_4ranks (folder)",
                                               marks=pytest.mark.skipif(not FOLDER_OF_RANKS.is_dir(),
                                                                        reason="real traces not found"))])
def test_a_report_from_the_cache_is_the_report_from_a_parse(path, cache_folder, cache_everything, parses):
    parsed = invoke(["report", str(path), "--format", "json", "--no-cache"])
    assert parses and not entries(cache_folder)
    load_trace(path)  # the default folder: the variable's
    assert entries(cache_folder)
    parses.clear()
    cached = invoke(["report", str(path), "--format", "json"])
    assert parses == []
    assert cached == parsed


def _arguments(command: str, trace: Path, out: Path) -> list[str]:
    return {
        "report": ["report", str(trace), "--format", "json"],
        "gate": ["gate", str(trace), "--max-idle-fraction", "0.5", "--format", "json"],
        "diff": ["diff", str(trace), str(trace), "--format", "json"],
        "annotate": ["annotate", str(trace), "-o", str(out)],
        "info": ["info", str(trace)],
    }[command]


@pytest.mark.parametrize("command", ["report", "gate", "diff", "annotate", "info"])
def test_each_command_reads_the_cache_and_no_cache_skips_it(command, tmp_path, cache_folder, cache_everything,
                                                          parses):
    trace, out = tmp_path / FIXTURE.name, tmp_path / "annotated.json"
    shutil.copyfile(FIXTURE, trace)
    arguments = _arguments(command, trace, out)

    def output() -> bytes:
        return out.read_bytes() if command == "annotate" else printed

    printed = invoke([*arguments, "--no-cache"])
    expected = output()
    assert parses and not entries(cache_folder)  # --no-cache writes nothing …
    parses.clear()
    printed = invoke(arguments)
    assert parses == [trace] and len(entries(cache_folder)) == 1
    assert output() == expected
    parses.clear()
    printed = invoke(arguments)
    assert parses == [] and output() == expected  # … the second run reads the entry …
    printed = invoke([*arguments, "--no-cache"])
    assert parses and output() == expected  # … and --no-cache does not


@pytest.mark.parametrize("command", ["report", "gate", "diff", "annotate"])
def test_each_command_reads_the_analysed_ranks_and_no_cache_skips_them(command, tmp_path, cache_folder,
                                                                      cache_everything, analyses):
    trace, out = tmp_path / FIXTURE.name, tmp_path / "annotated.json"
    shutil.copyfile(FIXTURE, trace)
    arguments = _arguments(command, trace, out)

    def output() -> bytes:
        return out.read_bytes() if command == "annotate" else printed

    printed = invoke(arguments)
    expected = output()
    # diff: the 2nd side a hit
    assert analyses == [trace] and len(list(cache_folder.glob("*" + results_cache.SUFFIX))) == 1
    printed = invoke(arguments)
    assert analyses == [trace] and output() == expected  # neither parsed nor analysed
    printed = invoke([*arguments, "--no-cache"])
    assert analyses[1:] == [trace] * (2 if command == "diff" else 1) and output() == expected  # diff: both sides


def test_commands_use_the_platform_folder_or_the_variable(tmp_path):
    """In a fresh process: $TRACEANALYZE_CACHE_DIR, else $XDG_CACHE_HOME/traceanalyze, else
    ~/.cache/traceanalyze (Linux; docs/cache.md has the others)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the folders checked here are Linux's")
    trace = shared_trace("hta_a100_80gb_record_shapes_cudagraph.json.gz")  # large enough to be cached
    assert trace.stat().st_size * 10 >= cache.MIN_TRACE_BYTES
    environment = {k: v for k, v in os.environ.items() if k not in (cache_files.ENVIRONMENT_VARIABLE, "XDG_CACHE_HOME")}
    home, xdg, chosen = tmp_path / "home", tmp_path / "xdg", tmp_path / "chosen"
    for extra, folder in (({"HOME": str(home)}, home / ".cache" / "traceanalyze"),
                          ({"HOME": str(home), "XDG_CACHE_HOME": str(xdg)}, xdg / "traceanalyze"),
                          ({"HOME": str(home), "XDG_CACHE_HOME": str(xdg),
                            cache_files.ENVIRONMENT_VARIABLE: str(chosen)},
                           chosen)):
        subprocess.run([sys.executable, "-m", "traceanalyze", "info", str(trace)], env={**environment, **extra},
                       check=True, capture_output=True)
        assert len(entries(folder)) == 1, folder
    assert len(entries(home / ".cache" / "traceanalyze")) == 1  # the later runs wrote elsewhere
