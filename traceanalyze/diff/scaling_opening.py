"""The diff's opening when its two traces are one program at different work (the scaling check,
docs/scaling.md#in-diff): the essay's verdict, which `Diff.scaling` carries and every format of the
diff shows first."""

from __future__ import annotations

from pathlib import Path



def scaling_opening(base: Path, new: Path, *, skip_steps: int = 0, cache: bool = True) -> str | None:
    """The scaling verdict of base → new, or None when they are not one program at different work
    (or either is a saved report, not a trace)."""
    from traceanalyze.scaling.runs import same_program_scaling

    scaling = same_program_scaling([base, new], skip_steps=skip_steps, cache=cache)
    if scaling is None:
        return None
    fixed = f"fixed cost {scaling.fixed_ns / 1e6:.3g} ms per step (traceanalyze scaling {base} {new})"
    return f"{scaling.headline}; {fixed}"
