"""The `traceanalyze` command line: one module per command (`cli/report.py`, `cli/gate.py`, ...),
the options they share declared once (`cli/options.py`), what every command does the same way
(`cli/common.py`: errors to exit codes, escaping, rendering through a format table), the typer
application (`cli/app.py`). It parses options, calls the library, and turns our own errors
(`TraceAnalyzeError`) into a one-line message and an exit code; nothing else lives here."""

import os
import threading

from traceanalyze.allocator import configure_before_polars

configure_before_polars()  # before anything imports polars: the command line's process is ours to set

import sys  # noqa: E402

import typer  # noqa: E402

from traceanalyze.cli.app import app  # noqa: E402
from traceanalyze.cli.common import error_line  # noqa: E402
from traceanalyze.errors import TraceAnalyzeError  # noqa: E402

__all__ = ["app", "main", "run"]


def main() -> None:
    try:
        app()
    except TraceAnalyzeError as error:  # errors raised outside a command's own handling
        typer.echo(error_line(error), err=True)
        sys.exit(error.exit_code)


def run() -> None:
    """The program (`traceanalyze`, `python -m traceanalyze`): `main`, then out without tearing
    the interpreter down. Freeing every module and object at exit took 50 ms of the 0.43 s that a
    1 MB report takes, and 70 ms after a 1 GB one; the command has written and closed its outputs
    by then, and what is left to flush is flushed here. Where a cluster client (Ray, Dask) may
    have registered its shutdown for exit, or a thread of the program still runs, the exit is
    the ordinary one."""
    try:
        main()
    except SystemExit as done:
        code = done.code
    else:
        code = 0
    if not isinstance(code, (int, type(None))) or not _nothing_left_at_exit():
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, a closed stream: nothing more to write there
            pass
    os._exit(code or 0)


def _nothing_left_at_exit() -> bool:
    """No cluster client that shuts down at exit was imported, and no other thread of ours runs."""
    if any(name in sys.modules for name in ("ray", "dask.distributed", "distributed")):
        return False
    return not any(thread.is_alive() and not thread.daemon for thread in threading.enumerate()
                   if thread is not threading.main_thread())
