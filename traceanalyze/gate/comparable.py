"""Whether a baseline compares like with like (`gate --baseline`). Some differences between the two
sides make every baseline row meaningless, whatever the code did; the rows are then shown, not
judged (status `info`, never a failure), and the reason is said once:

* **another device** (`devices` by name, both known): another GPU runs the same code at another
  speed and its roofline has other peaks, so the step time, each regime's time per step (and the
  compute/bandwidth split) and the idle fraction (a faster GPU idles more under the same host) all
  move for no code change. Said in the warning (`device_mismatch`), once;
* **another `--skip-steps`**: the per-step statistics (and the whole window) cover different steps,
  warm-up on one side only. Said instead of the note on the step counts;
* **another `--window`** (`steps` against `activity`), when the comparison falls back to the
  whole window: the window's idle fraction and shares differ in definition. The per-step rows do not
  depend on it (a step is a step), so with steps on both sides they are still judged.

The absolute budgets (`--max-idle-fraction`, …) judge the trace alone and are never affected.
"""

from __future__ import annotations

from traceanalyze.gate.metrics import Measured, device_mismatch

SHOWN = "the baseline rows are shown, not judged"


def device_reason(base: Measured, new: Measured) -> str | None:
    """The warning for another device, saying the rows are not judged; None on the same device."""
    mismatch = device_mismatch(base, new)
    return None if mismatch is None else f"{mismatch}; cannot compare: {SHOWN}"


def skip_steps_reason(base: Measured, new: Measured) -> str | None:
    """The note for another `--skip-steps` (instead of `skipped_steps_notes`' line), or None."""
    if base.skipped_steps == new.skipped_steps:
        return None
    return (f"cannot compare: the baseline was analysed with --skip-steps {base.skipped_steps}, the trace judged with "
            f"--skip-steps {new.skipped_steps}, so they cover different parts of the runs; {SHOWN}")


def window_reason(base: Measured, new: Measured, basis: str) -> str | None:
    """The note for another `--window`: rows not judged when compared over the whole window; a plain
    note with steps on both sides; None when the windows agree (or one is not known)."""
    if not base.window_option or not new.window_option or base.window_option == new.window_option:
        return None
    said = f"the baseline report used --window {base.window_option}, this one --window {new.window_option}"
    if basis == "window":
        return f"cannot compare the whole-window figures: {said} (another window definition); {SHOWN}"
    return f"{said}: whole-window numbers differ in definition (the per-step rows compared do not depend on it)"
