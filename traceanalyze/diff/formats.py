"""`traceanalyze diff --format NAME`: the diff's output formats, by name (the CLI's choices). Each
renderer takes the diff and `RenderOptions` (`top`: how many kernels to list side by side); its
module is imported when it is first called (renderers/formats.py says why)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from traceanalyze.renderers.base import DEFAULT_OPTIONS, Renderer, RenderOptions

if TYPE_CHECKING:
    from traceanalyze.diff.compare import Diff


def render_diff_terminal(diff: Diff, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    """`diff.render_text.render_diff_terminal` (`options.width`: the terminal's columns)."""
    from traceanalyze.diff.render_text import render_diff_terminal as render

    return render(diff, top=options.top, width=options.width)


def render_diff_json(diff: Diff, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    from traceanalyze.diff.render_json import render_diff_json as render

    return render(diff, top=options.top)


def render_diff_markdown(diff: Diff, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    from traceanalyze.diff.render_text import render_diff_markdown as render

    return render(diff, top=options.top)


def render_diff_html(diff: Diff, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    from traceanalyze.diff.render_html import render_diff_html as render

    return render(diff, top=options.top)


RENDERERS: Mapping[str, Renderer[Diff]] = {
    "terminal": render_diff_terminal,
    "json": render_diff_json,
    "markdown": render_diff_markdown,
    "html": render_diff_html,
}
