"""The diff's opening when its two traces are one program at different work (the scaling check,
docs/scaling.md#in-diff): the essay's verdict first, then the diff as ever. Terminal and Markdown
open with it; JSON and HTML are unchanged."""

from __future__ import annotations

from pathlib import Path

from traceanalyze.renderers.md import md_escape
from traceanalyze.renderers.text_table import fit_lines, terminal_width


def scaling_opening(base: Path, new: Path, *, skip_steps: int = 0, cache: bool = True) -> str | None:
    """The scaling verdict of base → new, or None when they are not one program at different work
    (or either is a saved report, not a trace)."""
    from traceanalyze.scaling.runs import same_program_scaling

    scaling = same_program_scaling([base, new], skip_steps=skip_steps, cache=cache)
    if scaling is None:
        return None
    fixed = f"fixed cost {scaling.fixed_ns / 1e6:.3g} ms per step (traceanalyze scaling {base} {new})"
    return f"{scaling.headline}; {fixed}"


def with_scaling_opening(text: str, format_name: str, base: Path, new: Path, *, skip_steps: int = 0,
                         cache: bool = True, width: int | None = None) -> str:
    """`text` (the rendered diff) opened with the scaling verdict in the terminal and Markdown formats."""
    if format_name not in ("terminal", "markdown"):
        return text
    opening = scaling_opening(base, new, skip_steps=skip_steps, cache=cache)
    if opening is None:
        return text
    if format_name == "markdown":
        return f"**Scaling:** {md_escape(opening)}\n\n{text}"
    lines = fit_lines(["SCALING (one program at different sizes)", f"  {opening}", ""], width or terminal_width())
    return "\n".join(lines) + "\n" + text
