"""`traceanalyze diff --format NAME`: the diff's output formats, by name (the CLI's choices). Each
renderer takes the diff and `top`, how many kernels to list side by side."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from traceanalyze.diff.compare import Diff
from traceanalyze.diff.render_html import render_diff_html
from traceanalyze.diff.render_json import render_diff_json
from traceanalyze.diff.render_text import render_diff_markdown, render_diff_terminal


class DiffRenderer(Protocol):
    def __call__(self, diff: Diff, *, top: int) -> str: ...


RENDERERS: Mapping[str, DiffRenderer] = {
    "terminal": render_diff_terminal,
    "json": render_diff_json,
    "markdown": render_diff_markdown,
    "html": render_diff_html,
}
