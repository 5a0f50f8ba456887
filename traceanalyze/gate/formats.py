"""`traceanalyze gate --format NAME`: the verdict's output formats, by name (the CLI's choices).
JUnit XML and GitHub annotations (`gate.ci`) are written beside the chosen format, not instead."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from traceanalyze.gate.render_json import render_verdict_json
from traceanalyze.gate.render_text import render_verdict_markdown, render_verdict_terminal
from traceanalyze.gate.verdict import Verdict

RENDERERS: Mapping[str, Callable[[Verdict], str]] = {
    "terminal": render_verdict_terminal,
    "json": render_verdict_json,
    "markdown": render_verdict_markdown,
}
PARSED_BY_PROGRAMS = frozenset({"json"})  # formats whose stdout a program reads: annotations go to stderr
