"""`traceanalyze calibrate`: measure this machine's roofs (the `calibrate` package)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from traceanalyze.cli.common import fail, refuse_overwriting_inputs
from traceanalyze.errors import TraceAnalyzeError


def calibrate(
    output: Annotated[Path, typer.Option("--output", "-o", help="Device file to write (JSON).")] = Path("device.json"),
    plot: Annotated[Optional[Path], typer.Option(
        help="Chart to write (SVG); default: --output with .svg.", show_default=False)] = None,
    size: Annotated[Optional[int], typer.Option(
        help="Elements of the swept tensor (default: 2^28 on a GPU, 2^24 on a CPU).", show_default=False)] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Small and fast (seconds), for CI.")] = False,
    device: Annotated[Optional[str], typer.Option(
        help="'cuda' or 'cpu' (default: the GPU when there is one).", show_default=False)] = None,
) -> None:
    """Measure this machine's roofs (the essay's x*2 sweep, a copy, a matmul per dtype), print them, and write
    a device file the report can use instead of the datasheet table, plus a chart."""
    from traceanalyze import calibrate as calibration

    chart = plot if plot is not None else output.with_suffix(".svg")
    refuse_overwriting_inputs({"--output": output, "--plot": chart})
    try:
        measured = calibration.measure(device=device, size=size, quick=quick,
                                       progress=lambda line: typer.echo(line, err=True))
        calibration.write_outputs(measured, output, chart)
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(calibration.render_table(measured), nl=False)
    typer.echo(f"wrote {output} and {chart}", err=True)
