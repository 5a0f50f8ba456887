"""`traceanalyze report --format NAME`: every output format of the report, by name. The CLI's
`--format` choices are these keys. To add a format: write `render_<name>(report: Report) -> str` in
its own module under report/ (it only formats the model: `report.summary`, `report.ranks[...]`) and
add it here."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from traceanalyze.report.html import render_html
from traceanalyze.report.jsonout import render_json
from traceanalyze.report.markdown import render_markdown
from traceanalyze.report.model import Report
from traceanalyze.report.terminal import render_terminal

RENDERERS: Mapping[str, Callable[[Report], str]] = {
    "terminal": render_terminal,
    "json": render_json,
    "markdown": render_markdown,
    "html": render_html,
}
