"""`traceanalyze info`: one screen about a trace (the `info` module renders it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from traceanalyze.cli import options as o
from traceanalyze.cli.common import fail, shown
from traceanalyze.errors import TraceAnalyzeError


def info(
    trace: Annotated[Path, typer.Argument(help="A .json/.json.gz trace or a folder of per-rank traces.",
                                          readable=False)],
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

    try:
        loaded = load_trace(trace, limits=o.limits(max_event_mb, max_events, max_inflation, max_op_depth),
                            cache=not no_cache)
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(shown(render_info(loaded, width=width)))
