"""The scaling report as terminal text and as Markdown (the rows: `scaling.tables`)."""

from __future__ import annotations

from traceanalyze.renderers.md import md_escape, md_table
from traceanalyze.renderers.text_table import fit_lines as fit_to_width
from traceanalyze.renderers.text_table import terminal_width, text_table
from traceanalyze.scaling import tables
from traceanalyze.scaling.model import Scaling


def render_scaling_terminal(scaling: Scaling, *, width: int | None = None) -> str:
    """One screen: the verdict, the runs, the fit, times, regimes, the footnote's ops, notes."""
    width = width or terminal_width()
    lines = [tables.title(scaling), "", "VERDICT", f"  {scaling.headline}", ""]
    lines += [text_table(rows, headers, width=width) for headers, rows in [tables.run_table(scaling)]]
    lines += ["", "FIT", *[f"  {line}" for line in tables.fit_lines(scaling)], ""]
    headers, rows = tables.regime_table(scaling)
    lines += ["TIME PER STEP BY REGIME", text_table(rows, headers, width=width), ""]
    headers, rows = tables.time_table(scaling)
    lines += ["TIMES PER STEP (medians over the steps)", text_table(rows, headers, width=width), ""]
    shifted = tables.intensity_table(scaling)
    if shifted is not None:
        lines += ["INTENSITY CHANGES WITH SIZE", f"  {tables.INTENSITY_LINE}",
                  text_table(shifted[1], shifted[0], width=width), ""]
    if scaling.notes:
        lines += ["NOTES", *[f"  - {note}" for note in scaling.notes], ""]
    return "\n".join(fit_to_width(lines, width)) + "\n"


def render_scaling_markdown(scaling: Scaling) -> str:
    parts = [f"# {md_escape(tables.title(scaling))}", "", f"**{md_escape(scaling.headline)}**", ""]
    headers, rows = tables.run_table(scaling)
    parts += [md_table(headers, [[md_escape(c) for c in r] for r in rows]), "", "## Fit", ""]
    parts += [f"- {md_escape(line)}" for line in tables.fit_lines(scaling)]
    for heading, (headers, rows) in (("Time per step by regime", tables.regime_table(scaling)),
                                     ("Times per step (medians over the steps)", tables.time_table(scaling))):
        parts += ["", f"## {heading}", "", md_table([md_escape(h) for h in headers],
                                                    [[md_escape(c) for c in r] for r in rows])]
    shifted = tables.intensity_table(scaling)
    if shifted is not None:
        parts += ["", "## Intensity changes with size", "", md_escape(tables.INTENSITY_LINE), "",
                  md_table([md_escape(h) for h in shifted[0]], [[md_escape(c) for c in r] for r in shifted[1]])]
    if scaling.notes:
        parts += ["", "## Notes", "", *[f"- {md_escape(note)}" for note in scaling.notes]]
    return "\n".join(parts) + "\n"
