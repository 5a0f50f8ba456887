"""The `traceanalyze` command line. It parses options, calls the library, and turns our own
errors (`TraceAnalyzeError`) into a one-line message and an exit code; nothing else lives here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from traceanalyze.errors import TraceAnalyzeError

app = typer.Typer(
    name="traceanalyze",
    help="Why is my GPU not going brrrr? Overhead, bandwidth or compute, read from a PyTorch trace.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Why is my GPU not going brrrr? Overhead, bandwidth or compute, read from a PyTorch trace."""


def fail(error: TraceAnalyzeError) -> None:
    typer.echo(f"traceanalyze: error: {error}", err=True)
    raise typer.Exit(error.exit_code)


@app.command()
def info(
    trace: Annotated[Path, typer.Argument(help="A .json/.json.gz trace or a folder of per-rank traces.")],
) -> None:
    """One screen about a trace: devices, ranks, time span, event counts, steps, streams, health."""
    from traceanalyze.load import load_trace
    from traceanalyze.report.info import render_info

    try:
        loaded = load_trace(trace)
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(render_info(loaded))


def main() -> None:
    try:
        app()
    except TraceAnalyzeError as error:  # errors raised outside a command's own handling
        typer.echo(f"traceanalyze: error: {error}", err=True)
        sys.exit(error.exit_code)
