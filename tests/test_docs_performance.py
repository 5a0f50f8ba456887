"""docs/performance.md is the current page (targets, the latest run, the decisions and why), not a
diary: no dated section; the dated notes are in docs/archive/, which no code comment cites, and a
comment that cites the page cites it without a date."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "performance.md"


def test_the_page_has_no_dated_section_and_keeps_its_parts():
    headings = [line for line in PAGE.read_text().splitlines() if line.startswith("## ")]
    assert [h for h in headings if re.search(r"\(20\d\d-\d\d-\d\d", h)] == []
    assert {"## Targets", "## The latest run", "## Decisions, and why"} <= set(headings)
    assert (REPO / "docs" / "archive" / "performance-diary.md").is_file()


def test_no_code_cites_the_diary_or_a_dated_note():
    cited = []
    for path in [*(REPO / "traceanalyze").rglob("*.py"), *(REPO / "traceanalyze").rglob("*.c")]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "archive/" in line or re.search(r"performance\.md[^)\n]*20\d\d-\d\d-\d\d", line):
                cited.append(f"{path.relative_to(REPO)}:{number}")
    assert cited == []


def test_anchors_the_code_cites_exist():
    anchors = {re.sub(r"[^\w\- ]", "", h[3:].strip().lower()).replace(" ", "-")
               for h in PAGE.read_text().splitlines() if h.startswith("## ")}
    cited = {m for path in (REPO / "traceanalyze").rglob("*.py")
             for m in re.findall(r"docs/performance\.md#([\w-]+)", path.read_text())}
    assert cited and cited <= anchors
