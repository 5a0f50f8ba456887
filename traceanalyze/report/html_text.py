"""HTML text every HTML writer of the package uses (the HTML report, the HTML diff, the SVG charts,
the `<details>` summary of the Markdown report): escaping, and inline parts as HTML."""

from __future__ import annotations

from traceanalyze.report import escape
from traceanalyze.report.blocks import Code, Inline, Strong


def esc(text: object) -> str:
    """`text` as HTML text or an attribute value: control characters shown as escapes, `& < > " '`
    escaped (`escape.html`)."""
    return escape.html(text)


def inline_html(parts: tuple[Inline, ...]) -> str:
    """Inline parts as HTML: code spans as `<code>`, strong text as `<strong>`, all escaped."""
    out = []
    for part in parts:
        if isinstance(part, Code):
            out.append(f"<code>{esc(part.text)}</code>")
        elif isinstance(part, Strong):
            out.append(f"<strong>{esc(part.text)}</strong>")
        else:
            out.append(esc(part))
    return "".join(out)
