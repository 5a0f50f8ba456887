"""`traceanalyze gate`: judge a trace or a saved report against budgets (the `gate` package), for
CI: the verdict in a format of `gate.formats.RENDERERS`, JUnit XML, GitHub annotations and step
summary, and the exit code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from traceanalyze.cli import options as o
from traceanalyze.cli.common import analyze, fail, refuse_overwriting_inputs, render, shown
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.gate import formats as gate_formats
from traceanalyze.renderers.base import RenderOptions

GateFormat = o.format_choices("GateFormat", gate_formats.RENDERERS)
FRACTION = "FRACTION"


def _budget(help_text: str, metavar: str = FRACTION):
    return typer.Option(metavar=metavar, help=help_text, show_default=False)


def gate(
    trace: Annotated[str, typer.Argument(metavar="TRACE", help=(
        "A .json/.json.gz trace, a folder of per-rank traces (or its URL), or a saved JSON report."))],
    max_idle_fraction: Annotated[Optional[str], _budget(
        "Budget: GPU idle fraction per step at most this (0.15 or 15%).")] = None,
    max_overhead: Annotated[Optional[str], _budget(
        "Budget: overhead share of the regime attribution at most this.")] = None,
    min_compute: Annotated[Optional[str], _budget(
        "Budget: compute share of the regime attribution at least this.")] = None,
    max_step_time_ms: Annotated[Optional[str], _budget(
        "Budget: step time (CPU duration of a ProfilerStep) at most this.", "MS")] = None,
    max_launch_p99_us: Annotated[Optional[str], _budget(
        "Budget: p99 of launch → start over all launches at most this.", "US")] = None,
    max_wait_fraction: Annotated[Optional[str], _budget(
        "Budget (several ranks): share of a step spent waiting in collectives for other ranks, at most this.")] = None,
    max_exposed_comm: Annotated[Optional[str], _budget(
        "Budget (several ranks): share of a step in collectives with no other GPU work running, at most this.")] = None,
    max_fixed_fraction: Annotated[Optional[str], _budget(
        "Budget on a scaling JSON (capture --sweep): fixed-overhead share of its largest run, at most this.")] = None,
    ranks: Annotated[Optional[str], _budget(
        "Several ranks: judge every rank and name the worst (default), or judge them pooled.", "worst|pooled")] = None,
    skip_steps: Annotated[Optional[int], typer.Option(
        "--skip-steps", metavar="N", min=0, show_default=False,
        help="Leave each rank's first N ProfilerSteps out of the traces judged (the baseline's too; a saved "
             "report must have been saved with the same N).")] = None,
    baseline: Annotated[Optional[str], _budget(
        "A saved JSON report or a trace (or a folder's URL) to compare with (needs --max-regression).", "BASE")] = None,
    max_regression: Annotated[Optional[str], _budget(
        "How much worse than the baseline is allowed: 5% or 0.05.", "PCT")] = None,
    statistic: Annotated[Optional[str], _budget(
        "Per-step statistic judged (default: median).", "median|p90|mean|max")] = None,
    min_steps: Annotated[Optional[int], _budget("Fewest steps to judge on (default: 3).", "N")] = None,
    allow_unreliable: Annotated[bool, typer.Option("--allow-unreliable", help=(
        "Judge even with too few steps or unreliable health findings "
        "(whole-window numbers when there are no steps)."))] = False,
    config: Annotated[Optional[Path], _budget(
        "TOML file with the budgets (default: the tool.traceanalyze.gate table of the nearest pyproject.toml).",
        "FILE")] = None,
    junit: Annotated[Optional[Path], _budget("Also write the verdict as JUnit XML.", "FILE")] = None,
    format: Annotated[GateFormat, typer.Option(  # type: ignore[valid-type]
        "--format", "-f", help="Output format of the verdict.")] = GateFormat("terminal"),
    output: Annotated[Optional[Path], typer.Option(
        "--output", "-o", help="Write the verdict to this file instead of stdout.", show_default=False)] = None,
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
    """Fail a CI build when a trace breaks a budget (GPU idle fraction, regime shares, step time,
    launch latency) or regresses against a baseline. Exit 0: every budget holds; 1: a budget is
    broken; 2: bad input or config, or numbers that cannot be trusted. See docs/gate.md."""
    import os

    if max_fixed_fraction is not None:  # a sweep's scaling JSON, judged alone (traceanalyze/gate/scaling_budget.py)
        from traceanalyze.gate.scaling_budget import gate_scaling

        raise typer.Exit(gate_scaling(trace, max_fixed_fraction, echo=typer.echo))

    from traceanalyze.gate import evaluate, measure, resolve_options
    from traceanalyze.gate.ci import annotation_lines, bounded_summary, render_junit
    from traceanalyze.gate.config import load_gate_config
    from traceanalyze.gate.inputs import load_report
    from traceanalyze.gate.render_text import render_verdict_markdown
    from traceanalyze.output import append_output, write_output
    from traceanalyze.sources import local_path, shown_source, source_argument

    def build(path: Path | str):
        return analyze(path, skip_steps=options.skip_steps, peak_flops=peak_flops, peak_bandwidth=peak_bandwidth,
                       device_file=device_file, force_device_file=force_device_file,
                       limits=o.limits(max_event_mb, max_events, max_inflation, max_op_depth), cache=not no_cache,
                       html=False)

    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    source = source_argument(trace)
    refuse_overwriting_inputs({"--output": output, "--junit": junit, "GITHUB_STEP_SUMMARY": step_summary or None},
                              local_path(source), local_path(source_argument(baseline)) if baseline else None,
                              config, device_file)
    flags = {"max_idle_fraction": max_idle_fraction, "max_overhead": max_overhead, "min_compute": min_compute,
             "max_step_time_ms": max_step_time_ms, "max_launch_p99_us": max_launch_p99_us,
             "max_wait_fraction": max_wait_fraction, "max_exposed_comm": max_exposed_comm, "ranks": ranks,
             "skip_steps": skip_steps, "baseline": baseline, "max_regression": max_regression,
             "statistic": statistic, "min_steps": min_steps, "allow_unreliable": allow_unreliable or None}
    try:
        options = resolve_options(load_gate_config(config, cwd=Path.cwd()).values, flags)
        measured = measure(load_report(source, build, skip_steps=options.skip_steps), source=shown_source(source))
        base_path = source_argument(str(options.baseline)) if options.baseline is not None else None
        base = (measure(load_report(base_path, build, skip_steps=options.skip_steps), source=shown_source(base_path))
                if base_path is not None else None)
        verdict = evaluate(measured, options, baseline=base)
    except TraceAnalyzeError as error:
        fail(error)
    text = render(gate_formats.RENDERERS, format.value, verdict, RenderOptions(width=width))
    try:
        if junit is not None:
            write_output(junit, render_junit(verdict))
        if step_summary:
            append_output(step_summary, bounded_summary(shown(render_verdict_markdown(verdict))))
        if output is not None:
            write_output(output, text)
    except TraceAnalyzeError as error:
        fail(error)
    annotations = annotation_lines(verdict) if os.environ.get("GITHUB_ACTIONS") == "true" else []
    if output is None:
        typer.echo(text, nl=False)
    for line in annotations:  # workflow commands are read from stdout; keep a JSON verdict on stdout clean
        typer.echo(line, err=output is None and format.value in gate_formats.PARSED_BY_PROGRAMS)
    if output is not None:
        typer.echo(f"wrote {output}", err=True)
    raise typer.Exit(verdict.exit_code)
