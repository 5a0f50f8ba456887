"""What every command does the same way: turn our errors into one line and an exit code (`fail`),
escape text from a trace before printing it (`shown`), print or write the output (`write_or_echo`),
refuse an output that names an input, render a model with its command's format table (`render`),
and analyse a trace with the command's options (`analyze`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import typer

from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.load.limits import LoadLimits
from traceanalyze.renderers.base import SELF_ESCAPED, Renderer, RenderOptions


def fail(error: TraceAnalyzeError) -> None:
    typer.echo(error_line(error), err=True)
    raise typer.Exit(error.exit_code)


def error_line(error: TraceAnalyzeError) -> str:
    """The one line an error prints: a newline or control character in a file name (or any name
    the message quotes) is shown as an escape (`renderers.escape.visible`), so it stays one line."""
    from traceanalyze.renderers.escape import visible

    return visible(f"traceanalyze: error: {error}")


def shown(text: str) -> str:
    """Text as it may be printed or written: no control sequence or workflow command taken from a
    trace survives (`renderers.escape.output_text`). JSON is exempt: its renderers escape their
    strings (`escape.json_text`)."""
    from traceanalyze.renderers.escape import output_text

    return output_text(text)


def render(renderers: Mapping[str, Renderer], name: str, model, options: RenderOptions) -> str:
    """`model` in the format `name` of a command's table (`renderers.base.Renderer`), as it may be
    printed: escaped unless the format escapes its own strings (JSON)."""
    text = renderers[name](model, options)
    return text if name in SELF_ESCAPED else shown(text)


def write_or_echo(text: str, output: Path | None) -> None:
    """`text` on stdout, or into `output` whole or not at all (then "wrote OUTPUT" on stderr)."""
    from traceanalyze.output import write_output

    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        write_output(output, text)
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(f"wrote {output}", err=True)


def refuse_overwriting_inputs(outputs: dict[str, Path | str | None], *inputs: Path | None) -> None:
    """Exit 2 before any work when an output names an input (a folder's trace files included) or
    another output (`output.refuse_inputs_as_outputs`)."""
    from traceanalyze.load import trace_files
    from traceanalyze.output import refuse_inputs_as_outputs

    files: list[Path] = []
    for path in inputs:
        if path is None:
            continue
        files.append(path)
        try:
            files.extend(trace_files(path) if path.is_dir() else ())
        except OSError:  # an unreadable folder: the loader says so
            pass
    try:
        refuse_inputs_as_outputs(outputs, files)
    except TraceAnalyzeError as error:
        fail(error)


def analyze(trace: Path | str, *, limits: LoadLimits, window: str = "activity", skip_steps: int = 0,
            max_gaps: int | None = None, peak_flops: float | None = None, peak_bandwidth: float | None = None,
            device_file: Path | None = None, force_device_file: bool = False, executor: str = "local",
            workers: int | None = None, executor_address: str | None = None, cache: bool = True,
            force_job: bool = False, skip_bad_ranks: bool = False, html: bool = True):
    """`api.analyze` with the command's options (its defaults where an option is not given). A
    folder's ranks keep only what the reports show (`RunOptions.rank_frames="bounded"`; "text",
    without what the HTML charts draw, unless the report is to be `html`)."""
    from traceanalyze.api import analyze as analyze_trace
    from traceanalyze.pipeline.options import RunOptions

    extra = {} if max_gaps is None else {"max_gaps": max_gaps}
    run = RunOptions(executor=executor, workers=workers, executor_address=executor_address, cache=cache,
                     limits=limits, rank_frames="bounded" if html else "text", force_job=force_job,
                     skip_bad_ranks=skip_bad_ranks)
    return analyze_trace(trace, window=window, skip_steps=skip_steps, peak_flops=peak_flops,  # type: ignore[arg-type]
                         peak_bandwidth=peak_bandwidth, device_file=device_file,
                         force_device_file=force_device_file, run=run, **extra)
