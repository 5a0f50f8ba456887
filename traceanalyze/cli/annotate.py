"""`traceanalyze annotate`: the trace rewritten with its diagnosis on the timeline (the `annotate`
module), with a progress bar on a terminal for a large file."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from traceanalyze.cli import options as o
from traceanalyze.cli.common import analyze, fail, refuse_overwriting_inputs
from traceanalyze.errors import ConfigError, TraceAnalyzeError


def annotate(
    trace: Annotated[Path, typer.Argument(help="A .json/.json.gz trace file.", readable=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help=(
        "The annotated trace (.json, or .json.gz to compress)."))],
    window: o.Window = "activity",
    skip_steps: o.SkipSteps = 0,
    peak_flops: o.PeakFlops = None,
    peak_bandwidth: o.PeakBandwidth = None,
    device_file: o.DeviceFile = None,
    force_device_file: o.ForceDeviceFile = False,
    max_event_mb: o.MaxEventMb = o.DEFAULT_EVENT_MB,
    max_events: o.MaxEvents = o.DEFAULT_LIMITS.events,
    max_inflation: o.MaxInflation = o.DEFAULT_LIMITS.inflation,
    max_op_depth: o.MaxOpDepth = o.DEFAULT_LIMITS.op_depth,
    no_cache: o.NoCache = False,
) -> None:
    """Write the trace with the diagnosis on its timeline (idle gaps by cause, each kernel's bound,
    each finding over its evidence), for Perfetto UI or chrome://tracing."""
    from traceanalyze.annotate import annotated_pieces
    from traceanalyze.output import write_pieces_output

    refuse_overwriting_inputs({"--output": output}, trace, device_file)
    try:
        if trace.is_dir():
            raise ConfigError(f"{trace}: annotate reads one trace file, not a folder: annotate each rank's file")
        limits = o.limits(max_event_mb, max_events, max_inflation, max_op_depth)
        built = analyze(trace, window=window, skip_steps=skip_steps, peak_flops=peak_flops,
                        peak_bandwidth=peak_bandwidth, device_file=device_file, force_device_file=force_device_file,
                        limits=limits, cache=not no_cache)
        with byte_progress(f"annotating {trace.name}", trace) as progress:
            write_pieces_output(output, annotated_pieces(trace, built, limits=limits, progress=progress),
                                compress=output.name.endswith(".gz"))
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(f"wrote {output}", err=True)


@contextmanager
def byte_progress(description: str, path: Path) -> Iterator[Callable[[int, int], None] | None]:
    """A rich bar on stderr, filled by calls of (done, total) bytes, while the block runs: only on
    a terminal and for a file large enough to take a while (`load.PROGRESS_MIN_BYTES`); else None."""
    from traceanalyze.load import PROGRESS_MIN_BYTES
    from traceanalyze.load.files import uncompressed_estimate

    if not sys.stderr.isatty() or uncompressed_estimate(path) < PROGRESS_MIN_BYTES:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bars:
        task = bars.add_task(description, total=None)
        yield lambda done, total: bars.update(task, completed=done, total=total)
