"""The README's CI gate section uses options that exist (capture's included), and its workflow
parses as a complete GitHub Actions job."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
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
        block = re.sub(r"#.*$", "", block, flags=re.M)  # comments name no command
        for match in re.finditer(r"traceanalyze (\w+)(.*?)(?=traceanalyze \w|\Z)", block, flags=re.S):
            name, rest = match.group(1), match.group(2)
            assert name in commands, name
            known = {opt for param in commands[name].params for opt in (*param.opts, *param.secondary_opts)}
            for option in re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", rest):
                assert option in known, f"traceanalyze {name} has no option {option}"
            seen.add(name)
    assert {"gate", "capture", "diff"} <= seen


def test_readme_workflow_is_a_complete_job_that_installs_before_it_captures():
    yaml = pytest.importorskip("yaml")
    text = README.read_text()
    section = text[text.index("\n## CI gate\n"):]
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, flags=re.S).group(1))
    assert workflow["name"] and workflow[True]  # `on:` (YAML 1.1 reads the bare key as True)
    (job,) = workflow["jobs"].values()
    assert job["runs-on"]
    runs = [step.get("run", step.get("uses", "")) for step in job["steps"]]
    uses = [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"] and "actions/upload-artifact" in uses

    def first(fragment: str) -> int:
        return next(i for i, run in enumerate(runs) if fragment in run)

    requirements = first("pip install -r requirements.txt")
    install = first("pip install \"traceanalyze[capture] @ git+")
    capture, gate = first("traceanalyze capture"), first("traceanalyze gate")
    assert requirements < install < capture < gate  # the team's torch first; the package is not on PyPI
    assert not any(re.search(r"pip install \"?traceanalyze(\[capture\])?\"?\s*$", run) for run in runs)
    assert "out/trace.json.gz" in runs[gate] and "-o out/" in runs[capture]
