"""Golden output: the whole terminal report (100 columns, default and `--details`) and the Markdown
report of one synthetic trace (tests/verdict_trace.py) against files in tests/report/golden/, so
that any change to what a user reads shows up in review.

The files are change detectors: their verdict is derived by hand in tests/report/test_verdict.py,
their tables are checked against exact ground truth in the other report tests; the rest was read
and found right when it was written. After an intended change to the output, regenerate them and
read the diff:

    TRACEANALYZE_UPDATE_GOLDEN=1 python -m pytest tests/report/test_golden_output.py

(the test then rewrites the files and passes). The trace's path and the version are replaced by
`<trace>` and `<version>`, so the files do not depend on where the test runs or on a release.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verdict_trace import verdict_trace

import traceanalyze
from traceanalyze.renderers.markdown import render_markdown
from traceanalyze.renderers.terminal import render_terminal

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("TRACEANALYZE_UPDATE_GOLDEN") == "1"
RENDERINGS = {
    "verdict_trace.terminal.txt": lambda report: render_terminal(report, width=100),
    "verdict_trace.details.txt": lambda report: render_terminal(report, width=100, details=True),
    "verdict_trace.md": render_markdown,
}


@pytest.mark.parametrize("name", sorted(RENDERINGS))
def test_output_matches_its_golden_file(tmp_path, name):
    path = verdict_trace(tmp_path)
    text = RENDERINGS[name](traceanalyze.analyze(path))
    text = text.replace(str(path), "<trace>").replace(f"traceanalyze {traceanalyze.__version__}",
                                                      "traceanalyze <version>")
    golden = GOLDEN / name
    if UPDATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"{golden} is missing: run with TRACEANALYZE_UPDATE_GOLDEN=1 to write it"
    assert text == golden.read_text(encoding="utf-8"), (
        f"the output differs from {golden.name}; if the change is intended, regenerate with "
        "TRACEANALYZE_UPDATE_GOLDEN=1 and review the diff")
