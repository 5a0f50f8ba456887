"""The README's first screen holds exactly the two commands, and CI runs the second one."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def first_code_block() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_two_commands_and_ci_runs_the_test_command():
    install_and_run, install_and_test = first_code_block()
    assert "fixtures/" in install_and_run and "report" in install_and_run
    assert "[dev]" in install_and_test and "pytest" in install_and_test
    assert install_and_test in (REPO / ".ci" / "run").read_text()
    bundled = re.search(r"(fixtures/\S+)", install_and_run).group(1)
    assert (REPO / bundled).is_file()
