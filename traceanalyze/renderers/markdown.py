"""The report in GitHub-flavoured Markdown, for a PR, an issue or `$GITHUB_STEP_SUMMARY`: the
blocks of `renderers.document` written as Markdown (tables by `tabulate(tablefmt="github")`, the regime
shares as text bars, no images).

Examples
--------
>>> text = render_markdown(build_report(load_trace("trace.json.gz")))  # doctest: +SKIP
"""

from __future__ import annotations

from traceanalyze.renderers.blocks import (
    Block, BulletList, Cell, Code, Figures, Group, Heading, Inline, Paragraph, Strong, Table,
)
from traceanalyze.renderers.document import document, opening
from traceanalyze.renderers.html_text import inline_html
from traceanalyze.renderers.md import md_code, md_escape, md_table
from traceanalyze.report.model import Report
from traceanalyze.units import bar
from traceanalyze.renderers.verdict_document import verdict_blocks


def _md_inline(parts: tuple[Inline, ...]) -> str:
    out = []
    for part in parts:
        if isinstance(part, Code):
            out.append(md_code(part.text))
        elif isinstance(part, Strong):
            out.append(f"**{md_escape(part.text)}**")
        else:
            out.append(md_escape(part))
    return "".join(out)


def _md_cell(cell: Cell) -> str:
    if cell.share is not None:
        return md_code(bar(cell.share, 20), in_table=True)
    text = " ".join(cell.text.split())  # a line break would end the table row
    if cell.code and text not in ("", "–"):
        return md_code(text, in_table=True)
    return md_escape(text)


def _md_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"{'#' * block.level} {md_escape(block.text)}"
    if isinstance(block, Paragraph):
        text = _md_inline(block.parts)
        return f"> {text}" if block.note else text
    if isinstance(block, BulletList):
        return "\n".join(f"- {_md_inline(item)}" for item in block.items)
    if isinstance(block, Table):
        rows = [[_md_cell(c) for c in row] for row in block.rows]
        headers = [md_escape(h.strip()) for h in block.headers]
        return md_table(headers, rows)
    if isinstance(block, Figures):
        return "\n".join(f"- {md_escape(label)}: **{md_escape(value)}** — {md_escape(detail)}"
                         for label, value, detail in block.items)
    if isinstance(block, Group):
        inner = "\n\n".join(text for text in (_md_block(b) for b in block.blocks) if text)
        # GitHub renders Markdown inside <details> when blank lines surround it
        return f"<details open>\n<summary>{inline_html(block.summary)}</summary>\n\n{inner}\n\n</details>"
    return ""  # charts have no Markdown form; the tables beside them hold the numbers


def render_markdown(report: Report) -> str:
    """GitHub-flavoured Markdown: the whole report, tables included, no images.

    Examples
    --------
    >>> Path("summary.md").write_text(render_markdown(report))  # doctest: +SKIP
    """
    blocks, head = document(report), len(opening(report))  # the opening, then the verdict
    verdict = [text for text in (_md_block(b) for b in [*blocks[:head], *verdict_blocks(report.verdict())]) if text]
    details = [text for text in (_md_block(b) for b in blocks[head:]) if text]
    # the verdict alone fits a PR comment; the details stay closed (GitHub renders Markdown inside
    # <details> when blank lines surround it)
    body = "\n\n".join(details)
    return "\n\n".join(verdict) + f"\n\n<details>\n<summary>Details</summary>\n\n{body}\n\n</details>\n"
