"""The `traceanalyze` command line. It parses options, calls the library, and turns our own
errors (`TraceAnalyzeError`) into a one-line message and an exit code; nothing else lives here."""

import dataclasses
import os
import threading

from traceanalyze.allocator import configure_before_polars

configure_before_polars()  # before anything imports polars: the command line's process is ours to set

import sys  # noqa: E402
from enum import Enum  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Annotated, Optional  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402

import typer  # noqa: E402

from traceanalyze.diff import formats as diff_formats  # noqa: E402
from traceanalyze.errors import ConfigError, TraceAnalyzeError  # noqa: E402
from traceanalyze.gate import formats as gate_formats  # noqa: E402
from traceanalyze.sources import local_path, shown_source, source_argument  # noqa: E402
from traceanalyze.load.limits import MIB, LoadLimits  # noqa: E402
from traceanalyze.report import formats as report_formats  # noqa: E402
from traceanalyze.report.model import DEFAULT_MAX_GAPS  # noqa: E402

app = typer.Typer(
    name="traceanalyze",
    help="Why is my GPU not going brrrr? Overhead, bandwidth or compute, read from a PyTorch trace.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from traceanalyze.version import __version__

        typer.echo(f"traceanalyze {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Why is my GPU not going brrrr? Overhead, bandwidth or compute, read from a PyTorch trace."""


_DEFAULT_LIMITS = LoadLimits()
# the loader's limits against hostile files (load/limits.py), on every command that reads a trace
MaxEventMb = Annotated[int, typer.Option("--max-event-mb", metavar="MB", min=1, show_default=True, help=(
    "Loader limit: uncompressed MB held without finding the end of an event."))]
MaxEvents = Annotated[int, typer.Option("--max-events", metavar="N", min=1, show_default=True, help=(
    "Loader limit: events per trace file."))]
MaxInflation = Annotated[float, typer.Option("--max-inflation", metavar="RATIO", min=1.0, show_default=True, help=(
    "Loader limit: uncompressed bytes per byte of a .json.gz (gzip bombs)."))]

MaxOpDepth = Annotated[int, typer.Option("--max-op-depth", metavar="N", min=1, show_default=True, help=(
    "Loader limit: how deep CPU ops may nest on one thread (analyses walk up the op tree)."))]
MaxDownloadMb = Annotated[int, typer.Option("--max-download-mb", metavar="MB", min=1, show_default=True, help=(
    "Loader limit: MB copied from each rank file of a folder's URL."))]


NoCache = Annotated[bool, typer.Option("--no-cache", help=(
    "Parse the trace even when the cache of loaded traces holds its tables, and cache nothing (docs/cache.md)."))]
Width = Annotated[Optional[int], typer.Option("--width", metavar="COLUMNS", min=40, help=(
    "Text output: fit every line to this many columns (default: COLUMNS, else the terminal's width, else 80)."),
    show_default=False)]
SkipSteps = Annotated[int, typer.Option("--skip-steps", metavar="N", min=0, help=(
    "Leave each rank's first N ProfilerSteps (warm-up, autotuning) out of every number; "
    "a trace without steps is an error when N > 0."))]


def _limits(max_event_mb: int, max_events: int, max_inflation: float, max_op_depth: int,
            max_download_mb: int = _DEFAULT_LIMITS.download_bytes // MIB) -> LoadLimits:
    return LoadLimits(event_bytes=max_event_mb * MIB, events=max_events, inflation=max_inflation, op_depth=max_op_depth,
                      download_bytes=max_download_mb * MIB)



def fail(error: TraceAnalyzeError) -> None:
    typer.echo(error_line(error), err=True)
    raise typer.Exit(error.exit_code)


def error_line(error: TraceAnalyzeError) -> str:
    """The one line an error prints: a newline or control character in a file name (or any name
    the message quotes) is shown as an escape (`report.escape.visible`), so it stays one line."""
    from traceanalyze.report.escape import visible

    return visible(f"traceanalyze: error: {error}")


@app.command()
def info(
    trace: Annotated[str, typer.Argument(metavar="TRACE", help="A .json/.json.gz trace or a folder of per-rank traces (or its URL).")],
    max_event_mb: MaxEventMb = _DEFAULT_LIMITS.event_bytes // MIB,
    max_events: MaxEvents = _DEFAULT_LIMITS.events,
    max_inflation: MaxInflation = _DEFAULT_LIMITS.inflation,
    max_op_depth: MaxOpDepth = _DEFAULT_LIMITS.op_depth,
    no_cache: NoCache = False,
    width: Width = None,
) -> None:
    """One screen about a trace: devices, ranks, time span, event counts, steps, streams, health."""
    from traceanalyze.jobs.url_trace import load_url_trace
    from traceanalyze.load import load_trace
    from traceanalyze.report.info import render_info

    try:
        limits = _limits(max_event_mb, max_events, max_inflation, max_op_depth)
        source = source_argument(trace)
        loaded = (load_trace(source, limits=limits, cache=not no_cache) if isinstance(source, Path)
                  else load_url_trace(source, limits))
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(shown(render_info(loaded, width=width)))


def _format_enum(name: str, names) -> type[Enum]:
    """A `--format` choice type whose values are the keys of a command's `RENDERERS`."""
    return Enum(name, {key: key for key in names}, type=str)  # type: ignore[return-value]


OutputFormat = _format_enum("OutputFormat", report_formats.RENDERERS)
GateFormat = _format_enum("GateFormat", gate_formats.RENDERERS)
DiffFormat = _format_enum("DiffFormat", diff_formats.RENDERERS)


def shown(text: str) -> str:
    """Text as it may be printed or written: no control sequence or workflow command taken from a
    trace survives (`report.escape.output_text`). JSON is exempt: its renderers escape their strings (`escape.json_text`)."""
    from traceanalyze.report.escape import output_text

    return output_text(text)


def _write_or_echo(text: str, output: Path | None, *, json: bool = False) -> None:
    """`text` on stdout, or into `output` whole or not at all (then "wrote OUTPUT" on stderr)."""
    from traceanalyze.output import write_output

    text = text if json else shown(text)
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        write_output(output, text)
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(f"wrote {output}", err=True)


def _refuse_overwriting_inputs(outputs: dict[str, Path | str | None], *inputs: Path | None) -> None:
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


def _analyze(trace: Path | str, *, window: str = "activity", skip_steps: int = 0, max_gaps: int | None = None, peak_flops: float | None = None,
             peak_bandwidth: float | None = None, device_file: Path | None = None, force_device_file: bool = False,
             limits: LoadLimits = _DEFAULT_LIMITS, executor: str = "local", workers: int | None = None,
             executor_address: str | None = None, cache: bool = True, rank_frames: str = "bounded",
             force_job: bool = False, skip_bad_ranks: bool = False):
    """`api.analyze` with the command's options (its defaults where an option is not given). A
    folder's ranks keep only what the reports show (`rank_frames="bounded"`) unless asked."""
    from traceanalyze.api import analyze

    extra = {} if max_gaps is None else {"max_gaps": max_gaps}
    return analyze(trace, window=window, skip_steps=skip_steps, peak_flops=peak_flops, peak_bandwidth=peak_bandwidth,  # type: ignore[arg-type]
                   device_file=device_file, force_device_file=force_device_file, limits=limits,
                   executor=executor, workers=workers,
                   executor_address=executor_address, cache=cache, rank_frames=rank_frames, force_job=force_job,
                   skip_bad_ranks=skip_bad_ranks,
                   **extra)


ExecutorOption = Annotated[str, typer.Option(
    "--executor", metavar="local|ray|dask",
    help="Who analyses the rank files of a folder: local processes, Ray tasks or Dask futures (pip install 'traceanalyze[ray]' / '[dask]').")]
WorkersOption = Annotated[Optional[int], typer.Option(
    "--workers", min=1, help="Processes (local), CPUs of a local Ray, or workers of a local Dask cluster (default: one per core for large folders).", show_default=False)]
AddressOption = Annotated[Optional[str], typer.Option(
    "--executor-address", metavar="ADDRESS", help="The cluster: ray://head:10001 (Ray) or tcp://scheduler:8786 (Dask); none starts one here.", show_default=False)]


@app.command()
def report(
    trace: Annotated[str, typer.Argument(metavar="TRACE", help="A .json/.json.gz trace or a folder of per-rank traces (also a folder's URL: s3://bucket/job/, read with fsspec).")],
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat("terminal"),  # type: ignore[valid-type]
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    window: Annotated[str, typer.Option(help="Analysis window: 'activity' (first to last GPU op) or 'steps' (ProfilerStep span).")] = "activity",
    skip_steps: SkipSteps = 0,
    max_gaps: Annotated[int, typer.Option(help="How many idle gaps to list.", min=0)] = DEFAULT_MAX_GAPS,
    peak_flops: Annotated[Optional[float], typer.Option(help="Peak FLOP/s to use instead of the datasheet table (e.g. 312e12).")] = None,
    peak_bandwidth: Annotated[Optional[float], typer.Option(help="Peak memory bandwidth in bytes/s (e.g. 2.0e12).")] = None,
    device_file: Annotated[Optional[Path], typer.Option(help="A device file (JSON, e.g. from `traceanalyze calibrate`) with measured peaks.")] = None,
    force_device_file: Annotated[bool, typer.Option("--force-device-file", help="Use --device-file even when it describes another device than the trace's.")] = False,
    width: Width = None,
    max_event_mb: MaxEventMb = _DEFAULT_LIMITS.event_bytes // MIB,
    max_events: MaxEvents = _DEFAULT_LIMITS.events,
    max_inflation: MaxInflation = _DEFAULT_LIMITS.inflation,
    max_op_depth: MaxOpDepth = _DEFAULT_LIMITS.op_depth,
    max_download_mb: MaxDownloadMb = _DEFAULT_LIMITS.download_bytes // MIB,
    no_cache: NoCache = False,
    details: Annotated[bool, typer.Option("--details", help="Terminal format: every table, and every rank of a folder (default: the verdict, the findings and the key sections; a folder: the job screen and the slowest rank).")] = False,
    executor: ExecutorOption = "local",
    workers: WorkersOption = None,
    executor_address: AddressOption = None,
    skip_bad_ranks: Annotated[bool, typer.Option("--skip-bad-ranks", help="A folder: report the rank files that can be read; those that cannot are named, with their error.")] = False,
    force_job: Annotated[bool, typer.Option("--force-job", help="Report a folder's files as one job even when they are not (other world sizes, devices, or times); a note says why.")] = False,
) -> None:
    """Why the GPU is not going brrrr: overhead (idle gaps and their causes, launch latency, small
    kernels), then bandwidth vs compute (roofline, regime attribution, fusion opportunities); for a
    folder of ranks, first which rank holds the job back."""
    from traceanalyze.jobs.executors import is_url

    source: Path | str = trace if is_url(trace) else Path(trace)  # a URL stays a string: Path would fold its //
    _refuse_overwriting_inputs({"--output": output}, source if isinstance(source, Path) else None, device_file)
    try:
        built = _analyze(source, window=window, skip_steps=skip_steps, max_gaps=max_gaps, peak_flops=peak_flops,
                         peak_bandwidth=peak_bandwidth, device_file=device_file, force_device_file=force_device_file,
                         limits=_limits(max_event_mb, max_events, max_inflation, max_op_depth, max_download_mb),
                         executor=executor,
                         workers=workers, executor_address=executor_address, cache=not no_cache, force_job=force_job,
                         skip_bad_ranks=skip_bad_ranks)
    except TraceAnalyzeError as error:
        fail(error)
    if details:
        built = dataclasses.replace(built, options=dataclasses.replace(built.options, details=True))
    text = (report_formats.render_terminal(built, width=width) if format.value == "terminal"
            else report_formats.RENDERERS[format.value](built))
    _write_or_echo(text, output, json=format.value == "json")


@app.command()
def annotate(
    trace: Annotated[Path, typer.Argument(help="A .json/.json.gz trace file.", readable=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="The annotated trace (.json, or .json.gz to compress).")],
    window: Annotated[str, typer.Option(help="Analysis window: 'activity' (first to last GPU op) or 'steps' (ProfilerStep span).")] = "activity",
    skip_steps: SkipSteps = 0,
    peak_flops: Annotated[Optional[float], typer.Option(help="Peak FLOP/s to use instead of the datasheet table (e.g. 312e12).")] = None,
    peak_bandwidth: Annotated[Optional[float], typer.Option(help="Peak memory bandwidth in bytes/s (e.g. 2.0e12).")] = None,
    device_file: Annotated[Optional[Path], typer.Option(help="A device file (JSON, e.g. from `traceanalyze calibrate`) with measured peaks.")] = None,
    force_device_file: Annotated[bool, typer.Option("--force-device-file", help="Use --device-file even when it describes another device than the trace's.")] = False,
    max_event_mb: MaxEventMb = _DEFAULT_LIMITS.event_bytes // MIB,
    max_events: MaxEvents = _DEFAULT_LIMITS.events,
    max_inflation: MaxInflation = _DEFAULT_LIMITS.inflation,
    max_op_depth: MaxOpDepth = _DEFAULT_LIMITS.op_depth,
    no_cache: NoCache = False,
) -> None:
    """Write the trace with the diagnosis on its timeline (idle gaps by cause, each kernel's bound,
    each finding over its evidence), for Perfetto UI or chrome://tracing."""
    from traceanalyze.output import write_pieces_output
    from traceanalyze.report.annotate import annotated_pieces

    _refuse_overwriting_inputs({"--output": output}, trace, device_file)
    try:
        if trace.is_dir():
            raise ConfigError(f"{trace}: annotate reads one trace file, not a folder: annotate each rank's file")
        limits = _limits(max_event_mb, max_events, max_inflation, max_op_depth)
        built = _analyze(trace, window=window, skip_steps=skip_steps, peak_flops=peak_flops,
                         peak_bandwidth=peak_bandwidth, device_file=device_file, force_device_file=force_device_file,
                         limits=limits, cache=not no_cache)
        with _byte_progress(f"annotating {trace.name}", trace) as progress:
            write_pieces_output(output, annotated_pieces(trace, built, limits=limits, progress=progress),
                                compress=output.name.endswith(".gz"))
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(f"wrote {output}", err=True)


@contextmanager
def _byte_progress(description: str, path: Path) -> Iterator[Callable[[int, int], None] | None]:
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


@app.command(context_settings={"allow_interspersed_args": False})
def capture(
    script: Annotated[Path, typer.Argument(metavar="SCRIPT", help="The Python script to run, as `python SCRIPT ARGS…` would.", show_default=False)],
    script_args: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="ARGS", help="The script's own arguments: everything after SCRIPT.", show_default=False),
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out-dir", "-o", help="Folder for trace.json.gz and run.json.")] = Path("traceanalyze-out"),
    wait: Annotated[int, typer.Option(help="Steps skipped before warming up.", min=0)] = 1,
    warmup: Annotated[int, typer.Option(help="Steps profiled and discarded before recording.", min=0)] = 1,
    active: Annotated[int, typer.Option(help="Steps recorded.", min=1)] = 3,
    repeat: Annotated[int, typer.Option(help="Recording windows (0: until the script ends).", min=0)] = 1,
    steps_from: Annotated[
        Optional[str],
        typer.Option("--steps-from", metavar="NAME", help="A step ends when a record_function region NAME ends (default: at each optimizer step)."),
    ] = None,
    duration: Annotated[
        Optional[float], typer.Option(metavar="SECONDS", help="Record for this long instead of by steps (for scripts with no optimizer).")
    ] = None,
    delay: Annotated[float, typer.Option(metavar="SECONDS", help="With --duration: start recording this long after the script starts.")] = 0.0,
    stop_after_capture: Annotated[bool, typer.Option("--stop-after-capture", help="End the script once the recording is written.")] = False,
    with_stack: Annotated[bool, typer.Option("--with-stack", help="Record Python call stacks (larger traces).")] = False,
    profile_memory: Annotated[bool, typer.Option("--profile-memory", help="Record tensor allocations.")] = False,
    show_report: Annotated[bool, typer.Option("--report/--no-report", help="Print the report after capturing.")] = True,
) -> None:
    """Run SCRIPT under torch.profiler without editing it: write OUT_DIR/trace.json.gz and run.json, then
    print the report. Options go before SCRIPT, or after it when the script's own arguments follow a
    `--` (`capture train.py --active 5 -- --lr 3e-4`); without `--`, everything after SCRIPT is the
    script's."""
    from traceanalyze.capture import CaptureOptions, Schedule, run_capture

    args = list(script_args or [])
    if "--" in args:
        cut = args.index("--")
        ours, args = args[:cut], args[cut + 1:]
        if ours:  # our options written between SCRIPT and `--`: parse them like the ones before SCRIPT
            values = _options_between_script_and_dashes(ours, script)
            out_dir, wait, warmup, active = values.get("out_dir", out_dir), values.get("wait", wait), values.get("warmup", warmup), values.get("active", active)
            repeat, steps_from, duration = values.get("repeat", repeat), values.get("steps_from", steps_from), values.get("duration", duration)
            delay, stop_after_capture = values.get("delay", delay), values.get("stop_after_capture", stop_after_capture)
            with_stack, profile_memory = values.get("with_stack", with_stack), values.get("profile_memory", profile_memory)
            show_report = values.get("show_report", show_report)
    try:
        result = run_capture(
            CaptureOptions(
                script=script,
                args=tuple(args),
                out_dir=out_dir,
                schedule=Schedule(wait=wait, warmup=warmup, active=active, repeat=repeat),
                steps_from=steps_from,
                duration_s=duration,
                delay_s=delay,
                stop_after_capture=stop_after_capture,
                with_stack=with_stack,
                profile_memory=profile_memory,
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
    if show_report and result.exit_code == 0 and result.trace is not None and result.primary_rank:
        _capture_report(result.trace)
    raise typer.Exit(result.exit_code)


def _options_between_script_and_dashes(options: list[str], script: Path) -> dict:
    """The capture options a user wrote after SCRIPT (before `--`), parsed by the same command."""
    command = typer.main.get_command(app).commands["capture"]  # type: ignore[attr-defined]
    try:
        context = command.make_context("capture", [*options, str(script)])
    except Exception as error:  # the click usage error typer raises for a bad option
        message = error.format_message() if hasattr(error, "format_message") else str(error)
        fail(ConfigError(f"capture: {message}"))
    given = {name for name in context.params if getattr(context.get_parameter_source(name), "name", "") == "COMMANDLINE"}
    return {name: context.params[name] for name in given - {"script", "script_args"}}


def _capture_report(trace: Path) -> None:
    """The terminal report of a freshly captured trace."""
    from traceanalyze.report.terminal import render_terminal

    try:
        typer.echo(shown(render_terminal(_analyze(trace))), nl=False)
    except TraceAnalyzeError as error:
        fail(error)


@app.command()
def calibrate(
    output: Annotated[Path, typer.Option("--output", "-o", help="Device file to write (JSON).")] = Path("device.json"),
    plot: Annotated[Optional[Path], typer.Option(help="Chart to write (SVG); default: --output with .svg.", show_default=False)] = None,
    size: Annotated[Optional[int], typer.Option(help="Elements of the swept tensor (default: 2^28 on a GPU, 2^24 on a CPU).", show_default=False)] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Small and fast (seconds), for CI.")] = False,
    device: Annotated[Optional[str], typer.Option(help="'cuda' or 'cpu' (default: the GPU when there is one).", show_default=False)] = None,
) -> None:
    """Measure this machine's roofs (the essay's x*2 sweep, a copy, a matmul per dtype), print them, and write
    a device file the report can use instead of the datasheet table, plus a chart."""
    from traceanalyze import calibrate as calibration

    chart = plot if plot is not None else output.with_suffix(".svg")
    _refuse_overwriting_inputs({"--output": output, "--plot": chart})
    try:
        measured = calibration.measure(device=device, size=size, quick=quick, progress=lambda line: typer.echo(line, err=True))
        calibration.write_outputs(measured, output, chart)
    except TraceAnalyzeError as error:
        fail(error)
    typer.echo(calibration.render_table(measured), nl=False)
    typer.echo(f"wrote {output} and {chart}", err=True)


@app.command()
def gate(
    trace: Annotated[str, typer.Argument(metavar="TRACE", help="A .json/.json.gz trace, a folder of per-rank traces (or its URL), or a saved JSON report.")],
    max_idle_fraction: Annotated[Optional[str], typer.Option(metavar="FRACTION", help="Budget: GPU idle fraction per step at most this (0.15 or 15%).", show_default=False)] = None,
    max_overhead: Annotated[Optional[str], typer.Option(metavar="FRACTION", help="Budget: overhead share of the regime attribution at most this.", show_default=False)] = None,
    min_compute: Annotated[Optional[str], typer.Option(metavar="FRACTION", help="Budget: compute share of the regime attribution at least this.", show_default=False)] = None,
    max_step_time_ms: Annotated[Optional[str], typer.Option(metavar="MS", help="Budget: step time (CPU duration of a ProfilerStep) at most this.", show_default=False)] = None,
    max_launch_p99_us: Annotated[Optional[str], typer.Option(metavar="US", help="Budget: p99 of launch → start over all launches at most this.", show_default=False)] = None,
    max_wait_fraction: Annotated[Optional[str], typer.Option(metavar="FRACTION", help="Budget (several ranks): share of a step spent waiting in collectives for other ranks, at most this.", show_default=False)] = None,
    max_exposed_comm: Annotated[Optional[str], typer.Option(metavar="FRACTION", help="Budget (several ranks): share of a step in collectives with no other GPU work running, at most this.", show_default=False)] = None,
    ranks: Annotated[Optional[str], typer.Option(metavar="worst|pooled", help="Several ranks: judge every rank and name the worst (default), or judge them pooled.", show_default=False)] = None,
    skip_steps: Annotated[Optional[int], typer.Option("--skip-steps", metavar="N", min=0, help="Leave each rank's first N ProfilerSteps out of the traces judged (the baseline's too; a saved report must have been saved with the same N).", show_default=False)] = None,
    baseline: Annotated[Optional[str], typer.Option(metavar="BASE", help="A saved JSON report or a trace (or a folder's URL) to compare with (needs --max-regression).", show_default=False)] = None,
    max_regression: Annotated[Optional[str], typer.Option(metavar="PCT", help="How much worse than the baseline is allowed: 5% or 0.05.", show_default=False)] = None,
    statistic: Annotated[Optional[str], typer.Option(metavar="median|p90|mean|max", help="Per-step statistic judged (default: median).", show_default=False)] = None,
    min_steps: Annotated[Optional[int], typer.Option(metavar="N", help="Fewest steps to judge on (default: 3).", show_default=False)] = None,
    allow_unreliable: Annotated[bool, typer.Option("--allow-unreliable", help="Judge even with too few steps or unreliable health findings (whole-window numbers when there are no steps).")] = False,
    config: Annotated[Optional[Path], typer.Option(metavar="FILE", help="TOML file with the budgets (default: the tool.traceanalyze.gate table of the nearest pyproject.toml).", show_default=False)] = None,
    junit: Annotated[Optional[Path], typer.Option(metavar="FILE", help="Also write the verdict as JUnit XML.", show_default=False)] = None,
    format: Annotated[GateFormat, typer.Option("--format", "-f", help="Output format of the verdict.")] = GateFormat("terminal"),  # type: ignore[valid-type]
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the verdict to this file instead of stdout.", show_default=False)] = None,
    peak_flops: Annotated[Optional[float], typer.Option(help="Peak FLOP/s instead of the datasheet table (for traces, not saved reports).", show_default=False)] = None,
    peak_bandwidth: Annotated[Optional[float], typer.Option(help="Peak memory bandwidth in bytes/s.", show_default=False)] = None,
    device_file: Annotated[Optional[Path], typer.Option(help="A device file (JSON, from `traceanalyze calibrate`) with measured peaks.", show_default=False)] = None,
    force_device_file: Annotated[bool, typer.Option("--force-device-file", help="Use --device-file even when it describes another device than the trace's.")] = False,
    max_event_mb: MaxEventMb = _DEFAULT_LIMITS.event_bytes // MIB,
    max_events: MaxEvents = _DEFAULT_LIMITS.events,
    max_inflation: MaxInflation = _DEFAULT_LIMITS.inflation,
    max_op_depth: MaxOpDepth = _DEFAULT_LIMITS.op_depth,
    no_cache: NoCache = False,
    width: Width = None,
) -> None:
    """Fail a CI build when a trace breaks a budget (GPU idle fraction, regime shares, step time,
    launch latency) or regresses against a baseline. Exit 0: every budget holds; 1: a budget is
    broken; 2: bad input or config, or numbers that cannot be trusted. See docs/gate.md."""
    import os

    from traceanalyze.gate import evaluate, measure, resolve_options
    from traceanalyze.gate.ci import annotation_lines, bounded_summary, render_junit
    from traceanalyze.gate.config import load_gate_config
    from traceanalyze.gate.inputs import load_report
    from traceanalyze.gate.render_text import render_verdict_markdown, render_verdict_terminal
    from traceanalyze.output import append_output, write_output

    def build(path: Path | str):
        return _analyze(path, skip_steps=options.skip_steps, peak_flops=peak_flops, peak_bandwidth=peak_bandwidth,
                        device_file=device_file, force_device_file=force_device_file,
                        limits=_limits(max_event_mb, max_events, max_inflation, max_op_depth), cache=not no_cache)

    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    source = source_argument(trace)
    _refuse_overwriting_inputs({"--output": output, "--junit": junit, "GITHUB_STEP_SUMMARY": step_summary or None},
                               local_path(source), local_path(source_argument(baseline)) if baseline else None,
                               config, device_file)
    flags = {"max_idle_fraction": max_idle_fraction, "max_overhead": max_overhead, "min_compute": min_compute,
             "max_step_time_ms": max_step_time_ms, "max_launch_p99_us": max_launch_p99_us,
             "max_wait_fraction": max_wait_fraction, "max_exposed_comm": max_exposed_comm, "ranks": ranks,
             "skip_steps": skip_steps,
             "baseline": baseline,
             "max_regression": max_regression, "statistic": statistic, "min_steps": min_steps,
             "allow_unreliable": allow_unreliable or None}
    try:
        options = resolve_options(load_gate_config(config, cwd=Path.cwd()).values, flags)
        measured = measure(load_report(source, build, skip_steps=options.skip_steps), source=shown_source(source))
        base_path = source_argument(str(options.baseline)) if options.baseline is not None else None
        base = (measure(load_report(base_path, build, skip_steps=options.skip_steps), source=shown_source(base_path))
                if base_path is not None else None)
        verdict = evaluate(measured, options, baseline=base)
    except TraceAnalyzeError as error:
        fail(error)
    text = (render_verdict_terminal(verdict, width=width) if format.value == "terminal"
            else gate_formats.RENDERERS[format.value](verdict))
    text = text if format.value == "json" else shown(text)
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


@app.command()
def diff(
    base: Annotated[str, typer.Argument(metavar="BASE", help="The baseline: a trace, a folder of per-rank traces (or its URL), or a saved JSON report.")],
    new: Annotated[str, typer.Argument(metavar="NEW", help="The new run: a trace, a folder of per-rank traces (or its URL), or a saved JSON report.")],
    format: Annotated[DiffFormat, typer.Option("--format", "-f", help="Output format.")] = DiffFormat("terminal"),  # type: ignore[valid-type]
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.", show_default=False)] = None,
    statistic: Annotated[str, typer.Option(metavar="median|p90|mean|max", help="Per-step statistic for step time and idle.")] = "median",
    min_change: Annotated[str, typer.Option(metavar="PCT", help="A kernel is faster/slower when its time per call changed by at least this.")] = "5%",
    top: Annotated[int, typer.Option(help="How many kernels to list side by side.", min=0)] = 10,
    skip_steps: Annotated[int, typer.Option("--skip-steps", metavar="N", min=0, help="Leave each rank's first N ProfilerSteps out of both runs (a saved report must have been saved with the same N).")] = 0,
    peak_flops: Annotated[Optional[float], typer.Option(help="Peak FLOP/s instead of the datasheet table (for traces, not saved reports).", show_default=False)] = None,
    peak_bandwidth: Annotated[Optional[float], typer.Option(help="Peak memory bandwidth in bytes/s.", show_default=False)] = None,
    device_file: Annotated[Optional[Path], typer.Option(help="A device file (JSON, from `traceanalyze calibrate`) with measured peaks.", show_default=False)] = None,
    force_device_file: Annotated[bool, typer.Option("--force-device-file", help="Use --device-file even when it describes another device than the trace's.")] = False,
    max_event_mb: MaxEventMb = _DEFAULT_LIMITS.event_bytes // MIB,
    max_events: MaxEvents = _DEFAULT_LIMITS.events,
    max_inflation: MaxInflation = _DEFAULT_LIMITS.inflation,
    max_op_depth: MaxOpDepth = _DEFAULT_LIMITS.op_depth,
    no_cache: NoCache = False,
    width: Width = None,
) -> None:
    """Two runs side by side: step time, idle fraction, attribution, launch latency, and kernels
    added, removed, faster and slower (matched by name)."""
    from traceanalyze.diff import diff_reports
    from traceanalyze.gate.budgets import parse_regression, parse_statistic
    from traceanalyze.gate.inputs import load_report

    def build(path: Path | str):
        return _analyze(path, skip_steps=skip_steps, peak_flops=peak_flops, peak_bandwidth=peak_bandwidth,
                        device_file=device_file, force_device_file=force_device_file,
                        limits=_limits(max_event_mb, max_events, max_inflation, max_op_depth), cache=not no_cache)

    base_source, new_source = source_argument(base), source_argument(new)
    _refuse_overwriting_inputs({"--output": output}, local_path(base_source), local_path(new_source), device_file)
    try:
        chosen = parse_statistic(statistic, "--statistic")
        threshold = parse_regression(min_change, "--min-change")
        compared = diff_reports(load_report(base_source, build, skip_steps=skip_steps),
                                load_report(new_source, build, skip_steps=skip_steps), statistic=chosen,
                                min_change=threshold, sources=(shown_source(base_source), shown_source(new_source)))
    except TraceAnalyzeError as error:
        fail(error)
    text = (diff_formats.render_diff_terminal(compared, top=top, width=width) if format.value == "terminal"
            else diff_formats.RENDERERS[format.value](compared, top=top))
    _write_or_echo(text, output, json=format.value == "json")


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
