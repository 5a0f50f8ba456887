"""A saved JSON report (a gate baseline, a diff side) is checked for values no analysis can give
before any figure of it is compared: a negative or absurd time (a step of −20 ms made the gate pass
with a −20,120% change) or a fraction outside [0, 1]. One line names the file, the field (as a JSON
path: `$.ranks[0].steps[2].duration_us`) and the value.

Checked by name, wherever they stand: the durations of `DURATIONS` (finite, 0 to `MAX_US`, about
11.6 days: no trace spans that long), the fractions of `FRACTIONS` and every value of an
`attribution` table (0 to 1, with a rounding allowance). Times that may be negative (clock offsets,
timestamps, arrivals relative to another rank) are not checked.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from traceanalyze.errors import TraceFormatError

MAX_US = 1e12
SLACK = 1e-6
DURATIONS = frozenset({
    "busy_us", "comm_us", "communication_busy_us", "communication_us", "compute_us", "cpu_duration_us",
    "duration_us", "exposed_us", "gpu_busy_us", "gpu_idle_us", "gpu_time_us", "idle_us", "launch_cpu_us",
    "launch_overhead_us", "launch_to_start_us", "max_wait_us", "modelable_busy_us", "modelled_busy_us",
    "queue_wait_us", "span_us", "step_us", "total_us", "transfer_us", "wait_us", "window_us", "work_us",
})
FRACTIONS = frozenset({"idle_fraction", "share_of_window", "share_of_kernel_time", "overlap_fraction"})
_MAX_DEPTH = 64


def check_ranges(document: Any, path: Path) -> None:
    """A `TraceFormatError` at the first value of `document` (a decoded saved report) out of its
    range; nothing otherwise."""
    stack: list[tuple[Any, str, str | None, int]] = [(document, "$", None, 0)]
    while stack:
        value, where, key, depth = stack.pop()
        if isinstance(value, dict) and depth < _MAX_DEPTH:
            for name, item in value.items():
                inner = "attribution" if key == "attribution" else None
                stack.append((item, f"{where}.{name}", inner or str(name), depth + 1))
        elif isinstance(value, list) and depth < _MAX_DEPTH:
            stack.extend((item, f"{where}[{index}]", key, depth + 1) for index, item in enumerate(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and key is not None:
            _check(value, where, key, path)


def _check(value: float, where: str, key: str, path: Path) -> None:
    if key in DURATIONS and not (math.isfinite(value) and 0 <= value <= MAX_US):
        reason = "a time cannot be negative" if value < 0 else f"not a time a trace holds (at most {MAX_US:.0e} µs)"
        raise TraceFormatError(f"{path}: {where} is {value!r}: {reason} (a damaged or edited report?)")
    if (key in FRACTIONS or key == "attribution") and not (math.isfinite(value) and -SLACK <= value <= 1 + SLACK):
        raise TraceFormatError(f"{path}: {where} is {value!r}: a fraction lies between 0 and 1 "
                               "(a damaged or edited report?)")
