"""`traceanalyze diff BASE NEW`: two reports side by side (`compare`), and its renderers
(`render_text`: terminal and Markdown, `render_json`, `render_html`), chosen through `RENDERERS`."""

from traceanalyze.diff.compare import ChangeKind, Diff, KernelRow, KernelStatus, MetricRow, diff_reports

__all__ = ["ChangeKind", "Diff", "KernelRow", "KernelStatus", "MetricRow", "diff_reports"]
