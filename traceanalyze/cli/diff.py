"""`traceanalyze diff`: two runs side by side (the `diff` package), in a format of
`diff.formats.RENDERERS`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from traceanalyze.cli import options as o
from traceanalyze.cli.common import analyze, fail, refuse_overwriting_inputs, render, write_or_echo
from traceanalyze.diff import formats as diff_formats
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.renderers.base import RenderOptions

DiffFormat = o.format_choices("DiffFormat", diff_formats.RENDERERS)
RUN = "a trace, a folder of per-rank traces (or its URL), or a saved JSON report."


def diff(
    base: Annotated[str, typer.Argument(metavar="BASE", help=f"The baseline: {RUN}")],
    new: Annotated[str, typer.Argument(metavar="NEW", help=f"The new run: {RUN}")],
    format: Annotated[DiffFormat, typer.Option(  # type: ignore[valid-type]
        "--format", "-f", help="Output format.")] = DiffFormat("terminal"),
    output: o.Output = None,
    statistic: Annotated[str, typer.Option(
        metavar="median|p90|mean|max", help="Per-step statistic for step time and idle.")] = "median",
    min_change: Annotated[str, typer.Option(
        metavar="PCT", help="A kernel is faster/slower when its time per call changed by at least this.")] = "5%",
    top: Annotated[int, typer.Option(help="How many kernels to list side by side.", min=0)] = 10,
    skip_steps: Annotated[int, typer.Option(
        "--skip-steps", metavar="N", min=0,
        help="Leave each rank's first N ProfilerSteps out of both runs (a saved report must have been saved "
             "with the same N).")] = 0,
    peak_flops: o.PeakFlops = None,
    peak_bandwidth: o.PeakBandwidth = None,
    device_file: o.DeviceFile = None,
    force_device_file: o.ForceDeviceFile = False,
    max_event_mb: o.MaxEventMb = o.DEFAULT_EVENT_MB,
    max_events: o.MaxEvents = o.DEFAULT_LIMITS.events,
    max_inflation: o.MaxInflation = o.DEFAULT_LIMITS.inflation,
    max_op_depth: o.MaxOpDepth = o.DEFAULT_LIMITS.op_depth,
    no_cache: o.NoCache = False,
    width: o.Width = None,
) -> None:
    """Two runs side by side: step time, idle fraction, attribution, launch latency, and kernels
    added, removed, faster and slower (matched by name)."""
    from traceanalyze.diff import diff_reports
    from traceanalyze.gate.budgets import parse_regression, parse_statistic
    from traceanalyze.gate.inputs import load_report

    def build(path: Path | str):
        return analyze(path, skip_steps=skip_steps, peak_flops=peak_flops, peak_bandwidth=peak_bandwidth,
                       device_file=device_file, force_device_file=force_device_file,
                       limits=o.limits(max_event_mb, max_events, max_inflation, max_op_depth), cache=not no_cache,
                       html=False)  # a diff draws no rank's charts

    from traceanalyze.sources import local_path, shown_source, source_argument

    base_source, new_source = source_argument(base), source_argument(new)
    refuse_overwriting_inputs({"--output": output}, local_path(base_source), local_path(new_source), device_file)
    try:
        chosen = parse_statistic(statistic, "--statistic")
        threshold = parse_regression(min_change, "--min-change")
        compared = diff_reports(load_report(base_source, build, skip_steps=skip_steps),
                                load_report(new_source, build, skip_steps=skip_steps), statistic=chosen,
                                min_change=threshold, sources=(shown_source(base_source), shown_source(new_source)))
    except TraceAnalyzeError as error:
        fail(error)
    if isinstance(base_source, Path) and isinstance(new_source, Path):  # one program at two sizes: the verdict first
        from traceanalyze.diff.scaling_opening import scaling_opening

        opening = scaling_opening(base_source, new_source, skip_steps=skip_steps, cache=not no_cache)
        compared = dataclasses.replace(compared, scaling=opening)
    write_or_echo(render(diff_formats.RENDERERS, format.value, compared, RenderOptions(width=width, top=top)), output)
