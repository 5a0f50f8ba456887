"""traceanalyze: why is my GPU not going brrrr? Overhead, bandwidth or compute, from a PyTorch
(Kineto) trace. The public API returns polars DataFrames.

Importing the package changes nothing in the process (no allocator setting: the command line sets
its own, `traceanalyze.allocator`); `load_trace` and `Trace` are imported when first used."""

from traceanalyze.errors import TraceAnalyzeError, TraceFormatError

__version__ = "0.1.0"

__all__ = ["analyze", "load_trace", "Trace", "TraceAnalyzeError", "TraceFormatError"]


def analyze(*args, **kwargs):
    """See `traceanalyze.api.analyze` (imported lazily: `import traceanalyze` stays light)."""
    from traceanalyze.api import analyze as _analyze

    return _analyze(*args, **kwargs)


def __getattr__(name: str):
    if name == "load_trace":
        from traceanalyze.load import load_trace

        return load_trace
    if name == "Trace":
        from traceanalyze.model import Trace

        return Trace
    raise AttributeError(f"module 'traceanalyze' has no attribute {name!r}")
