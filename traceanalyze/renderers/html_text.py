"""HTML text every HTML writer of the package uses (the HTML report, the HTML diff, the SVG charts,
the `<details>` summary of the Markdown report, Jupyter's verdict): escaping, inline parts and the
text blocks (headings, paragraphs, bullet lists) as HTML."""

from __future__ import annotations

from traceanalyze.renderers import escape
from traceanalyze.renderers.blocks import Block, BulletList, Code, Heading, Inline, Paragraph, Strong


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


def text_block_html(block: Block) -> str | None:
    """A heading, paragraph or bullet list as HTML (a level-1 heading as nothing: the page header
    holds the title); None for the other blocks (tables, figures, charts, groups: `report.html`)."""
    if isinstance(block, Heading):
        if block.level == 1:
            return ""
        return f'<h{block.level} id="{esc(block.anchor)}">{esc(block.text)}</h{block.level}>'
    if isinstance(block, Paragraph):
        return f'<p class="note">{inline_html(block.parts)}</p>' if block.note else f"<p>{inline_html(block.parts)}</p>"
    if isinstance(block, BulletList):
        return "<ul>" + "".join(f"<li>{inline_html(item)}</li>" for item in block.items) + "</ul>"
    return None
