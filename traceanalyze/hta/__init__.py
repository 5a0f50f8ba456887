"""HolisticTraceAnalysis's API on traceanalyze's engine: `from traceanalyze.hta import TraceAnalysis`
(docs/hta.md, "Migrating from HTA")."""

from traceanalyze.hta.analysis import TraceAnalysis
from traceanalyze.hta.diff import LabeledTrace, TraceDiff

__all__ = ["LabeledTrace", "TraceAnalysis", "TraceDiff"]
