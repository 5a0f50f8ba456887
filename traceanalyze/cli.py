"""The `traceanalyze` command line. It parses options, calls the library, and turns our own
errors (`TraceAnalyzeError`) into a one-line message and an exit code; nothing else lives here."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from traceanalyze.errors import ConfigError, TraceAnalyzeError

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


class OutputFormat(str, Enum):
    terminal = "terminal"
    json = "json"


@app.command()
def report(
    trace: Annotated[Path, typer.Argument(help="A .json/.json.gz trace or a folder of per-rank traces.")],
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.terminal,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    window: Annotated[str, typer.Option(help="Analysis window: 'activity' (first to last GPU op) or 'steps' (ProfilerStep span).")] = "activity",
    max_gaps: Annotated[int, typer.Option(help="How many idle gaps to list.", min=0)] = 10,
) -> None:
    """Why the GPU is not busy: idle time and its causes, launch latency, small kernels."""
    from traceanalyze.load import load_trace
    from traceanalyze.report.model import ReportOptions, build_report

    try:
        if window not in ("activity", "steps"):
            raise ConfigError(f"--window must be 'activity' or 'steps', not {window!r}")
        built = build_report(load_trace(trace), ReportOptions(window=window, max_gaps=max_gaps))  # type: ignore[arg-type]
    except TraceAnalyzeError as error:
        fail(error)
    if format is OutputFormat.json:
        from traceanalyze.report.jsonout import render_json

        text = render_json(built)
    else:
        from traceanalyze.report.terminal import render_terminal

        text = render_terminal(built)
    if output is None:
        typer.echo(text, nl=False)
    else:
        try:
            output.write_text(text)
        except OSError as error:
            fail(ConfigError(f"{output}: cannot write: {error.strerror or error}"))
        typer.echo(f"wrote {output}", err=True)


def main() -> None:
    try:
        app()
    except TraceAnalyzeError as error:  # errors raised outside a command's own handling
        typer.echo(f"traceanalyze: error: {error}", err=True)
        sys.exit(error.exit_code)
