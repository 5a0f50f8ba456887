"""`capture --sweep`: the spec, the flags passed on, and bad sweeps refused before anything runs."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from traceanalyze.cli import app
from traceanalyze.errors import ConfigError
from traceanalyze.scaling.sweep import SweepSpec, capture_flags, parse_sweep


def test_joined_and_spaced_forms():
    joined = parse_sweep("--batch-size=8,16,32")
    assert joined == SweepSpec("--batch-size", ("8", "16", "32"), True)
    assert joined.arguments("8") == ["--batch-size=8"] and joined.folder("8") == "batch-size=8"
    spaced = parse_sweep(" --seq-len 128, 256 ")
    assert spaced.arguments("256") == ["--seq-len", "256"] and spaced.values == ("128", "256")
    assert parse_sweep("-b=1,2").folder("2") == "b=2"
    assert parse_sweep("--dtype=a/b,c").folder("a/b") == "dtype=a_b"  # no path separator in a folder name


@pytest.mark.parametrize("text, message", [
    ("8,16,32", "the script's flag and its values"),
    ("--batch-size=8", "two or more different values"),
    ("--batch-size=8,8", "two or more different values"),
    ("--batch-size=8,,16", "two or more different values"),
    ("--x=a/b,a_b", "name the same folder"),
])
def test_bad_sweeps(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_sweep(text)


def test_capture_options_are_passed_on_and_defaults_left_out():
    flags = capture_flags({"wait": 2, "warmup": 1, "active": 5, "repeat": 1, "steps_from": None, "duration": None,
                           "delay": 0.0, "stop_after_capture": False, "with_stack": True, "profile_memory": False})
    assert flags == ["--wait", "2", "--warmup", "1", "--active", "5", "--repeat", "1", "--delay", "0.0", "--with-stack"]


@pytest.mark.parametrize("args, message", [
    (["--sweep", "batch=8"], "the script's flag and its values"),
    (["--sweep", "--batch-size=8,16", "--", "--batch-size", "4"], "leave it out of the script's own arguments"),
])
def test_the_command_refuses_a_bad_sweep_in_one_line(tmp_path, args, message):
    script = tmp_path / "train.py"
    script.write_text("raise SystemExit('must not run')\n")
    options, rest = (args, []) if "--" not in args else (args[:args.index("--")], args[args.index("--"):])
    result = CliRunner().invoke(app, ["capture", "-o", str(tmp_path / "out"), *options, str(script), *rest])
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
