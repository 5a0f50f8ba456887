"""The README's CI gate section uses options that exist (capture's included)."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from traceanalyze.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_ci_section_uses_real_options():
    text = README.read_text()
    section = text[text.index("\n## CI gate\n"):]
    commands = typer.main.get_command(app).commands
    blocks = re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.S)
    seen = set()
    for block in blocks:
        for match in re.finditer(r"traceanalyze (\w+)(.*?)(?=traceanalyze \w|\Z)", block, flags=re.S):
            name, rest = match.group(1), match.group(2)
            assert name in commands, name
            known = {opt for param in commands[name].params for opt in (*param.opts, *param.secondary_opts)}
            for option in re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", rest):
                assert option in known, f"traceanalyze {name} has no option {option}"
            seen.add(name)
    assert {"gate", "capture", "diff"} <= seen
