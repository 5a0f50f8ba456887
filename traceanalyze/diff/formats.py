"""`traceanalyze diff --format NAME`: the diff's output formats, by name (the CLI's choices). Each
renderer takes the diff and `top`, how many kernels to list side by side; its module is imported
when it is first called (renderers/formats.py says why)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from traceanalyze.diff.compare import Diff


class DiffRenderer(Protocol):
    def __call__(self, diff: Diff, *, top: int) -> str: ...


def render_diff_terminal(diff: Diff, *, top: int = 10, width: int | None = None) -> str:
    """`diff.render_text.render_diff_terminal` (`width`: the terminal's columns, default this one's)."""
    from traceanalyze.diff.render_text import render_diff_terminal as render

    return render(diff, top=top, width=width)


def render_diff_json(diff: Diff, *, top: int = 10) -> str:
    from traceanalyze.diff.render_json import render_diff_json as render

    return render(diff, top=top)


def render_diff_markdown(diff: Diff, *, top: int = 10) -> str:
    from traceanalyze.diff.render_text import render_diff_markdown as render

    return render(diff, top=top)


def render_diff_html(diff: Diff, *, top: int = 10) -> str:
    from traceanalyze.diff.render_html import render_diff_html as render

    return render(diff, top=top)


RENDERERS: Mapping[str, DiffRenderer] = {
    "terminal": render_diff_terminal,
    "json": render_diff_json,
    "markdown": render_diff_markdown,
    "html": render_diff_html,
}
