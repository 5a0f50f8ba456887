"""`traceanalyze scaling`: the command's options and body, registered by `traceanalyze.cli` (kept
here, out of the command line's module; the heavy imports are inside the function)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

FORMATS = ("terminal", "json", "markdown", "html")  # scaling.formats.RENDERERS' keys (checked by a test)
ScalingFormat = Enum("ScalingFormat", {name: name for name in FORMATS}, type=str)  # type: ignore[misc]


def fail(error: Exception) -> None:
    """One line on stderr and the error's exit code (2 for bad input)."""
    from traceanalyze.renderers.escape import visible

    typer.echo(visible(f"traceanalyze: error: {error}"), err=True)
    raise typer.Exit(getattr(error, "exit_code", 2))


def scaling_command(
    traces: Annotated[list[Path], typer.Argument(metavar="TRACE TRACE [TRACE…]", readable=False, help=(
        "Traces of one program at different sizes (batch, sequence, width)."))],
    sizes: Annotated[str | None, typer.Option(metavar="8,16,32", show_default=False, help=(
        "The traces' sizes, in their order: the work axis instead of the FLOPs of the recorded shapes."))] = None,
    format: Annotated[ScalingFormat,  # type: ignore[valid-type]
                      typer.Option("--format", "-f", help="Output format.")] = "terminal",  # type: ignore[assignment]
    output: Annotated[Path | None, typer.Option("--output", "-o", show_default=False, help=(
        "Write to this file instead of stdout."))] = None,
    skip_steps: Annotated[int, typer.Option("--skip-steps", metavar="N", min=0, help=(
        "Leave each trace's first N ProfilerSteps out."))] = 0,
    peak_flops: Annotated[float | None, typer.Option(show_default=False, help=(
        "Peak FLOP/s: the roof of a CPU-only sweep, or instead of the GPU's datasheet figure."))] = None,
    peak_bandwidth: Annotated[float | None, typer.Option(show_default=False, help=(
        "Peak memory bandwidth in bytes/s (as --peak-flops)."))] = None,
    device_file: Annotated[Path | None, typer.Option(show_default=False, help=(
        "A device file (traceanalyze calibrate) with measured roofs."))] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Parse every trace, cache nothing.")] = False,
    width: Annotated[int | None, typer.Option("--width", metavar="COLUMNS", min=40, show_default=False, help=(
        "Text output: fit every line to this many columns."))] = None,
) -> None:
    """The essay's test for overhead: how the time per step grows with the work. Fits time = fixed +
    work / throughput over the traces and says how much of each step is fixed overhead (docs/scaling.md)."""
    from traceanalyze.errors import TraceAnalyzeError
    from traceanalyze.output import refuse_inputs_as_outputs, write_output
    from traceanalyze.renderers.escape import output_text
    from traceanalyze.scaling.formats import render
    from traceanalyze.scaling.runs import parse_sizes, peak_overrides, scaling_of_paths

    name = getattr(format, "value", format)
    try:
        refuse_inputs_as_outputs({"--output": output}, [*traces, *([device_file] if device_file else [])])
        result = scaling_of_paths(traces, sizes=parse_sizes(sizes), skip_steps=skip_steps, cache=not no_cache,
                                  peaks=peak_overrides(peak_flops, peak_bandwidth, device_file))
        text = render(result, name, width=width)
        text = text if name == "json" else output_text(text)
        if output is not None:
            write_output(output, text)
    except TraceAnalyzeError as error:
        fail(error)
    if output is None:
        typer.echo(text, nl=False)
    else:
        typer.echo(f"wrote {output}", err=True)
