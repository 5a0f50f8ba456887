"""The notebook API: one call from a path (or a loaded `Trace`) to every table of the report."""

from __future__ import annotations

from pathlib import Path

from traceanalyze.analysis.idle import Window
from traceanalyze.analysis.roofline import PeakOverrides
from traceanalyze.model import Trace
from traceanalyze.report.model import Report, ReportOptions, build_report


def analyze(
    trace: str | Path | Trace,
    *,
    window: Window = "activity",
    peak_flops: float | None = None,
    peak_bandwidth: float | None = None,
    device_file: str | Path | None = None,
) -> Report:
    """Load (if given a path) and analyse a trace; every table is a polars DataFrame on the
    returned report, per rank: `report.ranks[0].idle`, `.gaps`, `.latency`, `.roofline`,
    `.attribution`, `.kernels`, `.fusion`, … (times in ns).

    Examples
    --------
    >>> import traceanalyze
    >>> report = traceanalyze.analyze("fixtures/synthetic_training.json.gz")  # doctest: +SKIP
    >>> report.ranks[0].gaps.head()  # doctest: +SKIP
    """
    from traceanalyze.analysis.devices import load_device_file
    from traceanalyze.load import load_trace

    loaded = trace if isinstance(trace, Trace) else load_trace(trace)
    overrides = PeakOverrides(
        device_file=load_device_file(device_file) if device_file is not None else None,
        device_file_name=str(device_file) if device_file is not None else None,
        peak_flops=peak_flops,
        peak_bandwidth=peak_bandwidth,
    )
    return build_report(loaded, ReportOptions(window=window, peaks=overrides))
