"""traceanalyze: why is my GPU not going brrrr? Overhead, bandwidth or compute, from a PyTorch
(Kineto) trace. The public API returns polars DataFrames."""

from traceanalyze.memory import configure_before_polars

configure_before_polars()

from traceanalyze.errors import TraceAnalyzeError, TraceFormatError  # noqa: E402
from traceanalyze.load import load_trace  # noqa: E402
from traceanalyze.model import Trace  # noqa: E402

__version__ = "0.1.0"

__all__ = ["analyze", "load_trace", "Trace", "TraceAnalyzeError", "TraceFormatError"]


def analyze(*args, **kwargs):
    """See `traceanalyze.api.analyze` (imported lazily: `import traceanalyze` stays light)."""
    from traceanalyze.api import analyze as _analyze

    return _analyze(*args, **kwargs)
