"""The body of `capture --sweep` (called by the capture command): run the sweep, report each size,
write OUT_DIR/scaling.json and print the scaling report; exit non-zero when any size failed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import typer

from traceanalyze.scaling.command import fail


def sweep_capture(sweep: str, script: Path, script_args: Sequence[str], out_dir: Path,
                  options: Mapping[str, object], *, show_report: bool = True, width: int | None = None) -> None:
    from traceanalyze.errors import ConfigError, TraceAnalyzeError
    from traceanalyze.output import write_output
    from traceanalyze.renderers.escape import output_text
    from traceanalyze.scaling.formats import render
    from traceanalyze.scaling.render_json import render_scaling_json
    from traceanalyze.scaling.runs import scaling_of_paths
    from traceanalyze.scaling.sweep import capture_flags, parse_sweep, run_sweep

    def say(line: str) -> None:
        typer.echo(output_text(f"traceanalyze: {line}"), err=True)

    try:
        spec = parse_sweep(sweep)
        if any(arg == spec.flag or arg.startswith(spec.flag + "=") for arg in script_args):
            raise ConfigError(f"--sweep sets {spec.flag}; leave it out of the script's own arguments")
        runs = run_sweep(spec, script, script_args, out_dir, capture_flags(options), say=say)
    except TraceAnalyzeError as error:
        fail(error)
    failed = [run for run in runs if run.trace is None]
    for run in runs:
        say(f"{spec.folder(run.value)}: " + (f"{run.trace}" if run.trace is not None else
                                             f"FAILED (exit code {run.exit_code}), left out of the report"))
    done = [run for run in runs if run.trace is not None]
    code = next((run.exit_code or 2 for run in failed), 0)
    if len(done) < 2:
        say(f"only {len(done)} of {len(runs)} sizes captured: no scaling report")
        raise typer.Exit(code or 2)
    try:
        scaling = scaling_of_paths([run.trace for run in done], labels=[spec.folder(r.value) for r in done])
        write_output(out_dir / "scaling.json", render_scaling_json(scaling))
    except TraceAnalyzeError as error:
        fail(error)
    say(f"wrote {out_dir / 'scaling.json'}")
    if show_report:
        typer.echo(output_text(render(scaling, "terminal", width=width)), nl=False)
    raise typer.Exit(code)
