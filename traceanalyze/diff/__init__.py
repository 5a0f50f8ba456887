"""`traceanalyze diff BASE NEW`: two reports side by side (`compare`), and its renderers
(`render_text`: terminal and Markdown, `render_json`, `render_html`), chosen through `RENDERERS`."""

from importlib import import_module

# imported on first use, so that the command line can read the format names in `diff.formats`
# without importing the comparison (start-up, docs/performance.md)
__all__ = ["ChangeKind", "Diff", "KernelRow", "KernelStatus", "MetricRow", "diff_reports"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.compare"), name)
