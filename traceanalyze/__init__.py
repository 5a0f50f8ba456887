"""traceanalyze: why is my GPU not going brrrr? Overhead, bandwidth or compute, from a PyTorch
(Kineto) trace. The public API returns polars DataFrames.

Importing the package changes nothing in the process (no allocator setting: the command line sets
its own, `traceanalyze.allocator`); `load_trace` and `Trace` are imported when first used."""

from traceanalyze.errors import TraceAnalyzeError, TraceFormatError
from traceanalyze.version import __version__  # noqa: F401  (re-exported: traceanalyze.__version__)

__all__ = ["analyze", "load_trace", "render", "Trace", "TraceAnalyzeError", "TraceFormatError"]


def analyze(*args, **kwargs):
    """See `traceanalyze.api.analyze` (imported lazily: `import traceanalyze` stays light)."""
    from traceanalyze.api import analyze as _analyze

    return _analyze(*args, **kwargs)


def render(report, format: str = "terminal") -> str:
    """The report in any output format of `traceanalyze report --format` (terminal, json,
    markdown, html), as a string.

    Examples
    --------
    >>> text = traceanalyze.render(traceanalyze.analyze("trace.json.gz"), format="markdown")  # doctest: +SKIP
    """
    from traceanalyze.errors import ConfigError
    from traceanalyze.renderers.formats import RENDERERS

    if format not in RENDERERS:
        raise ConfigError(f"unknown format {format!r}: use one of {', '.join(RENDERERS)}")
    return RENDERERS[format](report)


def __getattr__(name: str):
    if name == "load_trace":
        from traceanalyze.load import load_trace

        return load_trace
    if name == "Trace":
        from traceanalyze.model import Trace

        return Trace
    raise AttributeError(f"module 'traceanalyze' has no attribute {name!r}")
