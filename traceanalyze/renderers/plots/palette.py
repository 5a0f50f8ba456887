"""The charts' palettes and limits: one palette for the regimes and one for idle-gap causes, the
same colours in every chart (Paul Tol's colour-blind-safe "vibrant" and "muted" schemes)."""

from __future__ import annotations

REGIME_COLOURS: dict[str, str] = {
    "overhead": "#CC3311",  # GPU idle, waiting on the CPU
    "bandwidth": "#EE7733",
    "latency": "#EE3377",
    "compute": "#0077BB",
    "communication": "#009988",
    "memcpy": "#AA3377",
    "unmodeled": "#BBBBBB",
}
CAUSE_COLOURS: dict[str, str] = {
    "host": "#CC3311",  # the bulk of overhead: same red as the regime
    "sync": "#882255",
    "collective": "#009988",  # the communication regime's teal
    "stream_wait": "#33BBEE",
    "launch": "#EE99AA",
    "other": "#DDCC77",
}
BUSY_COLOUR = "#9DB9D8"  # GPU busy (or queued behind busy work) where the regime does not matter
MAX_MARKS = 5000  # most data marks one chart may hold
EXACT_TIMELINE_MARKS = 2000  # up to this many intervals the timeline draws each one
