"""A saved baseline with negative or absurd times, or fractions outside [0, 1], is refused with
one line naming the file and the field (gate/saved_ranges.py): it made the gate pass with a
−20,120% change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"


def run(*args, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "traceanalyze", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("saved")
    assert run("report", FIXTURE, "-f", "json", "-o", folder / "base.json", cwd=folder).returncode == 0
    return json.loads((folder / "base.json").read_text())


@pytest.mark.parametrize(("change", "said"), [
    (lambda d: d["ranks"][0]["cpu_steps"][1].update(duration_us=-20_120.0),
     r"\$\.ranks\[0\]\.cpu_steps\[1\]\.duration_us is -20120.0: a time cannot be negative"),
    (lambda d: d["ranks"][0]["steps"][0].update(window_us=1e300),
     r"\$\.ranks\[0\]\.steps\[0\]\.window_us is 1e\+300: not a time a trace holds"),
    (lambda d: d["summary"].update(idle_fraction=3.5), r"\$\.summary\.idle_fraction is 3.5: a fraction lies"),
])
def test_a_damaged_baseline_is_refused(saved, tmp_path, change, said):
    import copy
    import re

    document = copy.deepcopy(saved)
    change(document)
    (tmp_path / "base.json").write_text(json.dumps(document))
    for args in (["gate", FIXTURE, "--baseline", "base.json", "--max-regression", "5%", "--allow-unreliable"],
                 ["diff", "base.json", FIXTURE]):
        result = run(*args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stdout[-500:], result.stderr)
        assert len(result.stderr.splitlines()) == 1 and re.search(f"base.json: {said}", result.stderr), result.stderr


def test_an_intact_baseline_is_read(saved, tmp_path):
    (tmp_path / "base.json").write_text(json.dumps(saved))
    result = run("gate", FIXTURE, "--baseline", "base.json", "--max-regression", "5%", "--allow-unreliable",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
