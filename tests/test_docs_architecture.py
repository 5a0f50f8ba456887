"""docs/architecture.md cannot go stale: every path it names in backticks exists (package-relative
ones like `load/files.py` under traceanalyze/; `<family>` and `*` are wildcards), every docs/*.md it
mentions exists, and every dotted name of the package it names in backticks (`renderers.formats.RENDERERS`,
`model.Trace`) imports and resolves."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
PACKAGE = "traceanalyze"
# top-level names of the package a dotted name may start with (`model.Trace` = traceanalyze.model.Trace)
OURS = {PACKAGE} | {p.stem for p in (REPO / PACKAGE).iterdir()
                    if (p.suffix == ".py" or (p / "__init__.py").exists()) and not p.name.startswith("__")}
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
FILE_SUFFIXES = (".py", ".md", ".c", ".h", ".json", ".gz", ".toml")


def spans(text: str) -> list[str]:
    """Inline code spans outside fenced blocks."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.findall(r"`([^`\n]+)`", prose)


def is_path(span: str) -> bool:
    return " " not in span and ("/" in span or span.endswith(FILE_SUFFIXES))


def path_exists(span: str) -> bool:
    pattern = re.sub(r"<[^>]*>", "*", span).rstrip("/")
    return any(any(base.glob(pattern)) for base in (REPO, REPO / PACKAGE))


def resolves(name: str) -> bool:
    """`name` (or `traceanalyze.<name>`) is a module, or an attribute chain from the longest module
    prefix of it."""
    full = name if name.split(".")[0] == PACKAGE else f"{PACKAGE}.{name}"
    parts = full.split(".")
    for end in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        try:
            for attribute in parts[end:]:
                target = getattr(target, attribute)
        except AttributeError:
            return False
        return True
    return False


def problems(text: str) -> list[str]:
    found = []
    for span in spans(text):
        if is_path(span):
            if not path_exists(span):
                found.append(f"no file {span}")
        elif DOTTED.fullmatch(span) and span.split(".")[0] in OURS and not resolves(span):
            found.append(f"no name {span}")
    for doc in set(re.findall(r"\bdocs/[\w\-]+\.md\b", text)):
        if not (REPO / doc).is_file():
            found.append(f"no file {doc}")
    return found


def test_every_path_and_name_in_the_architecture_doc_exists():
    text = DOC.read_text()
    assert len(spans(text)) > 100  # the doc is parsed, not skipped
    assert problems(text) == []


@pytest.mark.parametrize("text, problem", [
    ("see `traceanalyze/load/nowhere.py`", "no file traceanalyze/load/nowhere.py"),
    ("see `load/nowhere.py`", "no file load/nowhere.py"),
    ("see `tests/nowhere/`", "no file tests/nowhere/"),
    ("see docs/nowhere.md", "no file docs/nowhere.md"),
    ("one line in `renderers.formats.RENDERER`", "no name renderers.formats.RENDERER"),
    ("`traceanalyze.load.limits.LoadLimit`", "no name traceanalyze.load.limits.LoadLimit"),
    ("`analysis.costs.nowhere.OPS`", "no name analysis.costs.nowhere.OPS"),
])
def test_a_stale_name_or_path_is_reported(text, problem):
    assert problems(text) == [problem]


def test_names_that_exist_and_names_not_ours_pass():
    assert problems("`renderers.formats.RENDERERS`, `model.Trace.launch_rows`, "
                    "`traceanalyze/analysis/costs/<family>.py`, "
                    "`traceanalyze/analysis/findings/rules_*.py`, `torch.profiler`, `_native.c`, docs/limits.md") == []
