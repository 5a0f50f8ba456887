"""The one plain-text table writer of the terminal outputs (report, gate verdict, diff)."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate


def text_table(rows: Sequence[Sequence[object]], headers: Sequence[str], *, align: Sequence[str] | None = None,
               indent: str = "  ") -> str:
    """Columns lined up under `headers` (tabulate's "simple" style: no numbers re-parsed), every
    line indented by `indent`; `align` gives each column's "left"/"right"/"center"."""
    text = tabulate([list(row) for row in rows], headers=list(headers), tablefmt="simple", colalign=align,
                    disable_numparse=True)
    return "\n".join(indent + line for line in text.splitlines())
