"""HolisticTraceAnalysis's API on traceanalyze's engine: `from traceanalyze.hta import TraceAnalysis`
(docs/hta.md, "Migrating from HTA")."""

from traceanalyze.hta.analysis import TraceAnalysis

__all__ = ["TraceAnalysis"]
