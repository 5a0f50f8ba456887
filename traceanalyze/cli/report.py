"""`traceanalyze report`: analyse a trace or a folder of ranks and print the report in a format of
`renderers.formats.RENDERERS`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from traceanalyze.cli import options as o
from traceanalyze.cli.common import analyze, fail, refuse_overwriting_inputs, render, write_or_echo
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.renderers import formats as report_formats
from traceanalyze.renderers.base import RenderOptions
from traceanalyze.report.model import DEFAULT_MAX_GAPS

OutputFormat = o.format_choices("OutputFormat", report_formats.RENDERERS)


def report(
    trace: Annotated[str, typer.Argument(metavar="TRACE", help=(
        "A .json/.json.gz trace or a folder of per-rank traces "
        "(also a folder's URL: s3://bucket/job/, read with fsspec)."))],
    format: Annotated[OutputFormat, typer.Option(  # type: ignore[valid-type]
        "--format", "-f", help="Output format.")] = OutputFormat("terminal"),
    output: o.Output = None,
    window: o.Window = "activity",
    skip_steps: o.SkipSteps = 0,
    max_gaps: Annotated[int, typer.Option(help="How many idle gaps to list.", min=0)] = DEFAULT_MAX_GAPS,
    peak_flops: o.PeakFlops = None,
    peak_bandwidth: o.PeakBandwidth = None,
    device_file: o.DeviceFile = None,
    force_device_file: o.ForceDeviceFile = False,
    width: o.Width = None,
    max_event_mb: o.MaxEventMb = o.DEFAULT_EVENT_MB,
    max_events: o.MaxEvents = o.DEFAULT_LIMITS.events,
    max_inflation: o.MaxInflation = o.DEFAULT_LIMITS.inflation,
    max_op_depth: o.MaxOpDepth = o.DEFAULT_LIMITS.op_depth,
    max_download_mb: o.MaxDownloadMb = o.DEFAULT_DOWNLOAD_MB,
    no_cache: o.NoCache = False,
    details: Annotated[bool, typer.Option("--details", help=(
        "Terminal format: every table, and every rank of a folder (default: the verdict, the findings and the "
        "key sections; a folder: the job screen and the slowest rank)."))] = False,
    executor: o.Executor = "local",
    workers: o.Workers = None,
    executor_address: o.ExecutorAddress = None,
    skip_bad_ranks: o.SkipBadRanks = False,
    force_job: o.ForceJob = False,
) -> None:
    """Why the GPU is not going brrrr: overhead (idle gaps and their causes, launch latency, small
    kernels), then bandwidth vs compute (roofline, regime attribution, fusion opportunities); for a
    folder of ranks, first which rank holds the job back."""
    from traceanalyze.pipeline.executors import is_url

    source: Path | str = trace if is_url(trace) else Path(trace)  # a URL stays a string: Path would fold its //
    refuse_overwriting_inputs({"--output": output}, source if isinstance(source, Path) else None, device_file)
    try:
        built = analyze(source, window=window, skip_steps=skip_steps, max_gaps=max_gaps, peak_flops=peak_flops,
                        peak_bandwidth=peak_bandwidth, device_file=device_file, force_device_file=force_device_file,
                        limits=o.limits(max_event_mb, max_events, max_inflation, max_op_depth, max_download_mb),
                        executor=executor, workers=workers, executor_address=executor_address, cache=not no_cache,
                        force_job=force_job, skip_bad_ranks=skip_bad_ranks, html=format.value == "html")
    except TraceAnalyzeError as error:
        fail(error)
    if details:
        built = dataclasses.replace(built, options=dataclasses.replace(built.options, details=True))
    write_or_echo(render(report_formats.RENDERERS, format.value, built, RenderOptions(width=width)), output)
