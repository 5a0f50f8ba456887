"""Charts for the HTML report, as SVG strings written by hand: stacked bars (regime attribution,
idle by cause), the roofline, the GPU timeline, a log-x histogram and per-step bars.

Every builder takes plain values (ns, FLOP/s, bytes/s), draws nothing it is not given and
returns one `<svg>` element: inline CSS-free, no script, no external font, hover tooltips as
`<title>`. Each data mark carries `class="mark"` (tests count them) and every name is escaped.
One palette for the regimes and one for idle-gap causes keep the colours the same in every chart
(Paul Tol's colour-blind-safe "vibrant" and "muted" schemes).

One module per chart family: `bars` (stacked bars), `roofline`, `timeline`, `histogram`, `steps`
(per-step bars), and their `palette`; this package names them all (`plots.stacked_bars`, ...).
"""

from __future__ import annotations

from traceanalyze.renderers.svg import MUTED, WIDTH, empty_chart  # what the charts' callers draw with
from traceanalyze.renderers.plots.bars import BarRow, stacked_bars
from traceanalyze.renderers.plots.histogram import LogBins, Series, log_bins, log_histogram
from traceanalyze.renderers.plots.palette import (
    BUSY_COLOUR, CAUSE_COLOURS, EXACT_TIMELINE_MARKS, MAX_MARKS, REGIME_COLOURS,
)
from traceanalyze.renderers.plots.roofline import Roof, RooflinePoint, roofline_chart
from traceanalyze.renderers.plots.steps import StepBar, step_bars
from traceanalyze.renderers.plots.timeline import (
    TIMELINE_LABEL_WIDTH, TIMELINE_RIGHT_PAD, Marker, TimelineRow, timeline_chart,
)

__all__ = [
    "BUSY_COLOUR", "BarRow", "CAUSE_COLOURS", "EXACT_TIMELINE_MARKS", "LogBins", "MAX_MARKS",
    "MUTED", "Marker", "REGIME_COLOURS", "Roof", "RooflinePoint", "Series", "StepBar",
    "TIMELINE_LABEL_WIDTH", "TIMELINE_RIGHT_PAD", "TimelineRow", "WIDTH", "empty_chart", "log_bins", "log_histogram",
    "roofline_chart", "stacked_bars", "step_bars", "timeline_chart",
]
