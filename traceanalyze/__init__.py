"""traceanalyze: why is my GPU not going brrrr? Overhead, bandwidth or compute, from a PyTorch
(Kineto) trace. The tables are polars DataFrames (`.to_pandas()` with the `pandas` extra).

What to call
------------
analyze(path, *, window=, skip_steps=, max_gaps=, peak_flops=, peak_bandwidth=, device_file=, run=)
    A trace file, a folder of per-rank traces, or a loaded `Trace` → a `Report`.
render(report, format="terminal")
    The report as text: "terminal", "json", "markdown" or "html".
load_trace(path)
    A trace file or folder → a `Trace` (frozen polars tables, int64 ns).
RunOptions(executor=, workers=, executor_address=, cache=, limits=, rank_frames=)
    How `analyze` runs, apart from what it computes.

What comes back
---------------
Report
    `ranks` (one `RankReport` each), `summary`, `job` (cross-rank analyses), `all_findings()`,
    `verdict()`.
RankReport
    One rank's tables (`gaps`, `latency`, `roofline`, `attribution`, `findings`, ...), also grouped:
    `overhead`, `launch`, `roofline_tables`, `host`, `diagnosis`, `job_inputs`.

Errors
------
TraceAnalyzeError (each carries its `exit_code`) → TraceFormatError → EmptyTraceError;
ConfigError; CaptureError.

Examples
--------
>>> import traceanalyze
>>> report = traceanalyze.analyze("fixtures/synthetic_training.json.gz")  # doctest: +SKIP
>>> print(traceanalyze.render(report))  # doctest: +SKIP

Importing the package changes nothing in the process (no allocator setting: the command line sets
its own, `traceanalyze.allocator`) and imports no polars: the names above are imported when first
used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceanalyze.errors import CaptureError, ConfigError, EmptyTraceError, TraceAnalyzeError, TraceFormatError
from traceanalyze.version import __version__

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and editors
    from traceanalyze.api import analyze
    from traceanalyze.load import load_trace
    from traceanalyze.model import Trace
    from traceanalyze.pipeline.options import RunOptions
    from traceanalyze.report.model import RankReport, Report

__all__ = ["analyze", "render", "load_trace", "RunOptions", "Trace", "Report", "RankReport",
           "TraceAnalyzeError", "TraceFormatError", "EmptyTraceError", "ConfigError", "CaptureError",
           "__version__"]


def render(report: Report, format: str = "terminal") -> str:
    """The report in any output format of `traceanalyze report --format` (terminal, json,
    markdown, html), as a string.

    Examples
    --------
    >>> text = traceanalyze.render(traceanalyze.analyze("trace.json.gz"), format="markdown")  # doctest: +SKIP
    """
    from traceanalyze.renderers.formats import RENDERERS

    if format not in RENDERERS:
        raise ConfigError(f"unknown format {format!r}: use one of {', '.join(RENDERERS)}")
    return RENDERERS[format](report)


def __getattr__(name: str):
    """The public names that import polars, imported when first used: `traceanalyze.analyze` is
    `api.analyze` itself (its signature and docstring in `help`)."""
    if name == "analyze":
        from traceanalyze.api import analyze

        return analyze
    if name == "load_trace":
        from traceanalyze.load import load_trace

        return load_trace
    if name == "Trace":
        from traceanalyze.model import Trace

        return Trace
    if name == "RunOptions":
        from traceanalyze.pipeline.options import RunOptions

        return RunOptions
    if name in ("Report", "RankReport"):
        from traceanalyze.report import model

        return getattr(model, name)
    raise AttributeError(f"module 'traceanalyze' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
