"""Markdown pieces every Markdown writer of the package uses (the report, the gate verdict, the
diff): escaping plain text, code spans, and the one table writer."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from traceanalyze.renderers import escape


def md_escape(text: str) -> str:
    """Plain text for Markdown: control characters shown as escapes, punctuation that could start
    markup backslash-escaped (`escape.markdown`)."""
    return escape.markdown(text)


def md_code(text: str, *, in_table: bool = False) -> str:
    """A code span holding `text` verbatim (fences longer than any backtick run inside), on one
    line: control characters, newlines included, shown as escapes (`escape.visible`)."""
    text = escape.visible(text)
    if in_table:
        text = text.replace("|", "\\|")
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table, columns padded to line up. Headers and cells are written
    as given: already Markdown, on one line, with `|` escaped (`md_escape`, `md_code(in_table=True)`)."""
    return tabulate([list(row) for row in rows], headers=list(headers), tablefmt="github", disable_numparse=True)
