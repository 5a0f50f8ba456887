"""The options several commands share, each declared once (typer `Annotated` types) with the helper
that turns a group of them into what the library takes: the loader's limits against hostile files
(`limits`), the peaks (`--peak-flops`, `--peak-bandwidth`, `--device-file`), the cache, the width of
text output, the executors of a folder of ranks, `--skip-steps` and `--window`."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from traceanalyze.load.limits import MIB, LoadLimits

DEFAULT_LIMITS = LoadLimits()

# the loader's limits against hostile files (load/limits.py), on every command that reads a trace
MaxEventMb = Annotated[int, typer.Option(
    "--max-event-mb", metavar="MB", min=1, show_default=True,
    help="Loader limit: uncompressed MB held without finding the end of an event.")]
MaxEvents = Annotated[int, typer.Option(
    "--max-events", metavar="N", min=1, show_default=True, help="Loader limit: events per trace file.")]
MaxInflation = Annotated[float, typer.Option(
    "--max-inflation", metavar="RATIO", min=1.0, show_default=True,
    help="Loader limit: uncompressed bytes per byte of a .json.gz (gzip bombs).")]
MaxOpDepth = Annotated[int, typer.Option(
    "--max-op-depth", metavar="N", min=1, show_default=True,
    help="Loader limit: how deep CPU ops may nest on one thread (analyses walk up the op tree).")]
MaxDownloadMb = Annotated[int, typer.Option(
    "--max-download-mb", metavar="MB", min=1, show_default=True,
    help="Loader limit: MB copied from each rank file of a folder's URL.")]
DEFAULT_EVENT_MB = DEFAULT_LIMITS.event_bytes // MIB
DEFAULT_DOWNLOAD_MB = DEFAULT_LIMITS.download_bytes // MIB


def limits(max_event_mb: int, max_events: int, max_inflation: float, max_op_depth: int,
           max_download_mb: int = DEFAULT_DOWNLOAD_MB) -> LoadLimits:
    """The loader's limits from the limit options."""
    return LoadLimits(event_bytes=max_event_mb * MIB, events=max_events, inflation=max_inflation,
                      op_depth=max_op_depth, download_bytes=max_download_mb * MIB)


# what a folder that is not one clean job gets (report only)
SkipBadRanks = Annotated[bool, typer.Option("--skip-bad-ranks", help=(
    "A folder: report the rank files that can be read; those that cannot are named, with their error."))]
ForceJob = Annotated[bool, typer.Option("--force-job", help=(
    "Report a folder's files as one job even when they are not (other world sizes, devices, or times); "
    "a note says why."))]


NoCache = Annotated[bool, typer.Option("--no-cache", help=(
    "Parse the trace even when the cache of loaded traces holds its tables, and cache nothing (docs/cache.md)."))]
Width = Annotated[Optional[int], typer.Option(
    "--width", metavar="COLUMNS", min=40, show_default=False,
    help="Text output: fit every line to this many columns (default: COLUMNS, else the terminal's width, else 80).")]
SkipSteps = Annotated[int, typer.Option("--skip-steps", metavar="N", min=0, help=(
    "Leave each rank's first N ProfilerSteps (warm-up, autotuning) out of every number; "
    "a trace without steps is an error when N > 0."))]
Window = Annotated[str, typer.Option(
    help="Analysis window: 'activity' (first to last GPU op) or 'steps' (ProfilerStep span).")]
Output = Annotated[Optional[Path], typer.Option(
    "--output", "-o", help="Write to this file instead of stdout.", show_default=False)]

# the peaks the roofline reads instead of the datasheet table (a saved report keeps its own)
PeakFlops = Annotated[Optional[float], typer.Option(
    help="Peak FLOP/s to use instead of the datasheet table (e.g. 312e12; traces only, not saved reports).",
    show_default=False)]
PeakBandwidth = Annotated[Optional[float], typer.Option(
    help="Peak memory bandwidth in bytes/s (e.g. 2.0e12).", show_default=False)]
DeviceFile = Annotated[Optional[Path], typer.Option(
    help="A device file (JSON, e.g. from `traceanalyze calibrate`) with measured peaks.", show_default=False)]
ForceDeviceFile = Annotated[bool, typer.Option(
    "--force-device-file", help="Use --device-file even when it describes another device than the trace's.")]

# who analyses the rank files of a folder
Executor = Annotated[str, typer.Option(
    "--executor", metavar="local|ray|dask",
    help="Who analyses the rank files of a folder: local processes, Ray tasks or Dask futures "
         "(pip install 'traceanalyze[ray]' / '[dask]').")]
Workers = Annotated[Optional[int], typer.Option(
    "--workers", min=1, show_default=False,
    help="Processes (local), CPUs of a local Ray, or workers of a local Dask cluster "
         "(default: one per core for large folders).")]
ExecutorAddress = Annotated[Optional[str], typer.Option(
    "--executor-address", metavar="ADDRESS", show_default=False,
    help="The cluster: ray://head:10001 (Ray) or tcp://scheduler:8786 (Dask); none starts one here.")]


def format_choices(name: str, names) -> type[Enum]:
    """A `--format` choice type whose values are the keys of a command's `RENDERERS`."""
    return Enum(name, {key: key for key in names}, type=str)  # type: ignore[return-value]
