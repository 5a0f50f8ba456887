"""`--format` names of `traceanalyze scaling` → renderers (`render(scaling) -> str`)."""

from __future__ import annotations

from traceanalyze.scaling.render_html import render_scaling_html
from traceanalyze.scaling.render_json import render_scaling_json
from traceanalyze.scaling.render_text import (
    render_scaling_markdown,
    render_scaling_terminal,
)

RENDERERS = {
    "terminal": render_scaling_terminal,
    "json": render_scaling_json,
    "markdown": render_scaling_markdown,
    "html": render_scaling_html,
}


def render(scaling, name: str, *, width: int | None = None) -> str:
    """The scaling report in format `name` (the terminal's fitted to `width`)."""
    return render_scaling_terminal(scaling, width=width) if name == "terminal" else RENDERERS[name](scaling)
