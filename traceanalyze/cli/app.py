"""The typer application: one command per module of this package (`COMMANDS`, in the order of
`--help`), registered here; `--version` on the root."""

from __future__ import annotations

from typing import Annotated

import typer

from traceanalyze.cli.annotate import annotate
from traceanalyze.cli.calibrate import calibrate
from traceanalyze.cli.capture import capture
from traceanalyze.cli.diff import diff
from traceanalyze.cli.gate import gate
from traceanalyze.cli.info import info
from traceanalyze.cli.report import report
from traceanalyze.scaling.command import scaling_command

app = typer.Typer(
    name="traceanalyze",
    help="Why is my GPU not going brrrr? Overhead, bandwidth or compute, read from a PyTorch trace.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# (command, the context settings it needs): `capture` leaves everything after SCRIPT to the script
COMMANDS = ((info, {}), (report, {}), (annotate, {}), (capture, {"allow_interspersed_args": False}),
            (calibrate, {}), (gate, {}), (diff, {}))
for command, settings in COMMANDS:
    app.command(context_settings=settings or None)(command)
app.command("scaling")(scaling_command)  # its options and body: traceanalyze/scaling/command.py


def _print_version(value: bool) -> None:
    if value:
        from traceanalyze.version import __version__

        typer.echo(f"traceanalyze {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Why is my GPU not going brrrr? Overhead, bandwidth or compute, read from a PyTorch trace."""
