"""`traceanalyze report --format NAME`: every output format of the report, by name. The CLI's
`--format` choices are these keys. To add a format: write `render_<name>(report: Report) -> str` in
its own module under renderers/ (it only formats the model: `report.summary`, `report.ranks[...]`)
and add it here, as a `renderers.base.Renderer` (the model and `RenderOptions`).

Each renderer's module is imported when it is first called: a run imports only the one it writes
(the HTML renderer with its plots, and the text tables' tabulate, took 30 ms of the start-up of a
JSON report)."""

from __future__ import annotations

from collections.abc import Mapping

from traceanalyze.renderers.base import DEFAULT_OPTIONS, Renderer, RenderOptions
from traceanalyze.report.model import Report


def render_terminal(report: Report, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    """`renderers.terminal.render_terminal` (`options.width`: the terminal's columns)."""
    from traceanalyze.renderers.terminal import render_terminal as render

    return render(report, width=options.width)


def render_json(report: Report, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    from traceanalyze.renderers.jsonout import render_json as render

    return render(report)


def render_markdown(report: Report, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    from traceanalyze.renderers.markdown import render_markdown as render

    return render(report)


def render_html(report: Report, options: RenderOptions = DEFAULT_OPTIONS, /) -> str:
    from traceanalyze.renderers.html import render_html as render

    return render(report)


RENDERERS: Mapping[str, Renderer[Report]] = {
    "terminal": render_terminal,
    "json": render_json,
    "markdown": render_markdown,
    "html": render_html,
}
