"""`traceanalyze gate --format NAME`: the verdict's output formats, by name (the CLI's choices).
JUnit XML and GitHub annotations (`gate.ci`) are written beside the chosen format, not instead.
Each renderer's module is imported when it is first called (renderers/formats.py says why)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from traceanalyze.renderers.base import DEFAULT_OPTIONS, Renderer, RenderOptions

if TYPE_CHECKING:
    from traceanalyze.gate.verdict import Verdict


def render_verdict_terminal(verdict: Verdict, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    """`gate.render_text.render_verdict_terminal` (`options.width`: the terminal's columns)."""
    from traceanalyze.gate.render_text import render_verdict_terminal as render

    return render(verdict, width=options.width)


def render_verdict_json(verdict: Verdict, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    from traceanalyze.gate.render_json import render_verdict_json as render

    return render(verdict)


def render_verdict_markdown(verdict: Verdict, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    from traceanalyze.gate.render_text import render_verdict_markdown as render

    return render(verdict)


RENDERERS: Mapping[str, Renderer[Verdict]] = {
    "terminal": render_verdict_terminal,
    "json": render_verdict_json,
    "markdown": render_verdict_markdown,
}
PARSED_BY_PROGRAMS = frozenset({"json"})  # formats whose stdout a program reads: annotations go to stderr
