"""The exceptions traceanalyze raises on purpose. Each carries the exit code the CLI uses."""

from __future__ import annotations


class TraceAnalyzeError(Exception):
    """Root of our own errors: a one-line message naming the file and the problem."""

    exit_code: int = 2


class TraceFormatError(TraceAnalyzeError):
    """The input is missing, unreadable, or not a Kineto/Chrome trace."""


class EmptyTraceError(TraceFormatError):
    """The input is a trace but holds nothing we can analyse."""


class ConfigError(TraceAnalyzeError):
    """A bad option, threshold or configuration file."""


class CaptureError(TraceAnalyzeError):
    """`traceanalyze capture` could not run the user's script."""
