"""`traceanalyze capture`: run a script under torch.profiler (the `capture` package), then print
its report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from traceanalyze.cli import options as o
from traceanalyze.cli.common import analyze, fail, shown
from traceanalyze.errors import ConfigError, TraceAnalyzeError

SECONDS = "SECONDS"


def capture(
    script: Annotated[Path, typer.Argument(
        metavar="SCRIPT", help="The Python script to run, as `python SCRIPT ARGS…` would.", show_default=False)],
    script_args: Annotated[Optional[list[str]], typer.Argument(
        metavar="ARGS", help="The script's own arguments: everything after SCRIPT.", show_default=False)] = None,
    out_dir: Annotated[Path, typer.Option(
        "--out-dir", "-o", help="Folder for trace.json.gz and run.json.")] = Path("traceanalyze-out"),
    wait: Annotated[int, typer.Option(help="Steps skipped before warming up.", min=0)] = 1,
    warmup: Annotated[int, typer.Option(help="Steps profiled and discarded before recording.", min=0)] = 1,
    active: Annotated[int, typer.Option(help="Steps recorded.", min=1)] = 3,
    repeat: Annotated[int, typer.Option(help="Recording windows (0: until the script ends).", min=0)] = 1,
    steps_from: Annotated[Optional[str], typer.Option(
        "--steps-from", metavar="NAME",
        help="A step ends when a record_function region NAME ends (default: at each optimizer step).")] = None,
    duration: Annotated[Optional[float], typer.Option(
        metavar=SECONDS, help="Record for this long instead of by steps (for scripts with no optimizer).")] = None,
    delay: Annotated[float, typer.Option(
        metavar=SECONDS, help="With --duration: start recording this long after the script starts.")] = 0.0,
    stop_after_capture: Annotated[bool, typer.Option(
        "--stop-after-capture", help="End the script once the recording is written.")] = False,
    with_stack: Annotated[bool, typer.Option(
        "--with-stack", help="Record Python call stacks (larger traces).")] = False,
    profile_memory: Annotated[bool, typer.Option("--profile-memory", help="Record tensor allocations.")] = False,
    show_report: Annotated[bool, typer.Option(
        "--report/--no-report", help="Print the report after capturing.")] = True,
    sweep: Annotated[Optional[str], typer.Option(
        metavar='"--FLAG=V1,V2,…"', show_default=False,
        help="Capture once per value of the script's flag, then print the scaling report (docs/scaling.md).")] = None,
) -> None:
    """Run SCRIPT under torch.profiler without editing it: write OUT_DIR/trace.json.gz and run.json, then
    print the report. Options go before SCRIPT, or after it when the script's own arguments follow a
    `--` (`capture train.py --active 5 -- --lr 3e-4`); without `--`, everything after SCRIPT is the
    script's."""
    from traceanalyze.capture import CaptureOptions, Schedule, run_capture

    given = dict(out_dir=out_dir, wait=wait, warmup=warmup, active=active, repeat=repeat, steps_from=steps_from,
                 duration=duration, delay=delay, stop_after_capture=stop_after_capture, with_stack=with_stack,
                 profile_memory=profile_memory, show_report=show_report, sweep=sweep)
    args = list(script_args or [])
    if "--" in args:
        cut = args.index("--")
        ours, args = args[:cut], args[cut + 1:]
        if ours:  # our options written between SCRIPT and `--`: parse them like the ones before SCRIPT
            given.update(options_between_script_and_dashes(ours, script))
    if given["sweep"] is not None:  # one capture per value, then the scaling report (scaling/sweep_command.py)
        from traceanalyze.scaling.sweep_command import sweep_capture

        schedule = {name: given[name] for name in ("wait", "warmup", "active", "repeat", "steps_from", "duration",
                                                    "delay", "stop_after_capture", "with_stack", "profile_memory")}
        sweep_capture(given["sweep"], script, args, given["out_dir"], schedule, show_report=given["show_report"])
    try:
        result = run_capture(
            CaptureOptions(
                script=script,
                args=tuple(args),
                out_dir=given["out_dir"],
                schedule=Schedule(wait=given["wait"], warmup=given["warmup"], active=given["active"],
                                  repeat=given["repeat"]),
                steps_from=given["steps_from"],
                duration_s=given["duration"],
                delay_s=given["delay"],
                stop_after_capture=given["stop_after_capture"],
                with_stack=given["with_stack"],
                profile_memory=given["profile_memory"],
                command=("traceanalyze", *sys.argv[1:]),
            )
        )
    except TraceAnalyzeError as error:
        fail(error)
    if result.script_stderr:
        typer.echo(result.script_stderr.rstrip("\n"), err=True)
    prefix = "traceanalyze: " if result.rank is None else f"traceanalyze: rank {result.rank}: "
    for message in result.messages:
        typer.echo(shown(prefix + message), err=True)
    if given["show_report"] and result.exit_code == 0 and result.trace is not None and result.primary_rank:
        capture_report(result.trace)
    raise typer.Exit(result.exit_code)


def options_between_script_and_dashes(options: list[str], script: Path) -> dict:
    """The capture options a user wrote after SCRIPT (before `--`), parsed by the same command (the
    click command typer makes of `capture` alone)."""
    alone = typer.Typer()
    alone.command(context_settings={"allow_interspersed_args": False})(capture)
    command = typer.main.get_command(alone)
    try:
        context = command.make_context("capture", [*options, str(script)])
    except Exception as error:  # the click usage error typer raises for a bad option
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        fail(ConfigError(f"capture: {message}"))
    given = {name for name in context.params
             if getattr(context.get_parameter_source(name), "name", "") == "COMMANDLINE"}
    return {name: context.params[name] for name in given - {"script", "script_args"}}


def capture_report(trace: Path) -> None:
    """The terminal report of a freshly captured trace."""
    from traceanalyze.renderers.terminal import render_terminal

    try:
        typer.echo(shown(render_terminal(analyze(trace, limits=o.DEFAULT_LIMITS))), nl=False)
    except TraceAnalyzeError as error:
        fail(error)
