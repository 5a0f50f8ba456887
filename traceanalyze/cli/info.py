"""`traceanalyze info`: one screen about a trace (the `info` module renders it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from traceanalyze.cli import options as o
from traceanalyze.cli.common import fail, shown
from traceanalyze.errors import TraceAnalyzeError


def info(
    trace: Annotated[str, typer.Argument(
        metavar="TRACE", help="A .json/.json.gz trace or a folder of per-rank traces (or its URL).")],
    max_event_mb: o.MaxEventMb = o.DEFAULT_EVENT_MB,
    max_events: o.MaxEvents = o.DEFAULT_LIMITS.events,
    max_inflation: o.MaxInflation = o.DEFAULT_LIMITS.inflation,
    max_op_depth: o.MaxOpDepth = o.DEFAULT_LIMITS.op_depth,
    no_cache: o.NoCache = False,
    width: o.Width = None,
) -> None:
    """One screen about a trace: devices, ranks, time span, event counts, steps, streams, health."""
    from traceanalyze.info import render_info
    from traceanalyze.load import load_trace
    from traceanalyze.pipeline.url_trace import load_url_trace
    from traceanalyze.sources import source_argument

    try:
        limits = o.limits(max_event_mb, max_events, max_inflation, max_op_depth)
        source = source_argument(trace)
        loaded = (load_trace(source, limits=limits, cache=not no_cache) if isinstance(source, Path)
                  else load_url_trace(source, limits))
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(shown(render_info(loaded, width=width)))
