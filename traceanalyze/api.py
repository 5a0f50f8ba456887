"""The notebook API: one call from a path (or a loaded `Trace`) to every table of the report. The
CLI's `report`, `gate` and `diff` call it too: one set of defaults."""

from __future__ import annotations

from pathlib import Path

from traceanalyze.analysis.idle import Window
from traceanalyze.analysis.roofline import PeakOverrides
from traceanalyze.errors import ConfigError
from traceanalyze.model import Trace
from traceanalyze.pipeline.options import RunOptions
from traceanalyze.pipeline.rank import build_report, combine_ranks
from traceanalyze.pipeline.results_cache import analysed_rank
from traceanalyze.report.model import DEFAULT_MAX_GAPS, Report, ReportOptions

WINDOWS = ("activity", "steps")
DEFAULT_RUN = RunOptions()


def analyze(
    trace: str | Path | Trace,
    *,
    window: Window = "activity",
    skip_steps: int = 0,
    max_gaps: int = DEFAULT_MAX_GAPS,
    peak_flops: float | None = None,
    peak_bandwidth: float | None = None,
    device_file: str | Path | None = None,
    force_device_file: bool = False,
    run: RunOptions = DEFAULT_RUN,
) -> Report:
    """Load (if given a path) and analyse a trace: every table of the report, as polars DataFrames.

    Parameters
    ----------
    trace : path, URL or Trace
        A .json/.json.gz trace file, a folder of per-rank traces (a local path, or a folder's
        fsspec URL: `s3://bucket/job/`), or a `Trace` from `traceanalyze.load_trace`.
    window : "activity" or "steps"
        The analysis window: first to last GPU op, or the ProfilerStep span.
    skip_steps : int
        Leave each rank's first N ProfilerSteps out of every analysis (docs/metrics.md#skipped-steps;
        a `ConfigError` when a rank has no steps or N would leave none).
    max_gaps : int
        How many idle gaps the rendered report lists (the frames hold every gap).
    peak_flops, peak_bandwidth : float or None
        Peaks (FLOP/s, bytes/s) to use instead of the datasheet table.
    device_file : path or None
        A device file (from `traceanalyze calibrate`) with measured peaks; one that describes
        another device than the trace's is a `ConfigError` unless `force_device_file`.
    run : RunOptions
        How to run, apart from what is computed: the executor of a folder's rank files and its
        workers, the cache, the loader's limits, the frames a folder's ranks keep.

    Returns
    -------
    Report
        `report.ranks[i]` holds each rank's tables (`.idle`, `.gaps`, `.latency`, `.roofline`,
        `.attribution`, `.kernels`, `.fusion`, `.findings`, ..., times in ns; grouped views:
        `.overhead`, `.launch`, `.roofline_tables`, `.host`, `.diagnosis`, `.job_inputs`),
        `report.summary` the summary figures, `report.notes` what it says first, `report.replay`
        the replay's prediction, `report.job` the cross-rank analyses of a folder,
        `report.all_findings()` every diagnosis ranked by gain.

    Raises
    ------
    ConfigError
        A bad option. TraceFormatError (and EmptyTraceError): a file that is not a trace.

    Examples
    --------
    >>> import traceanalyze
    >>> report = traceanalyze.analyze("fixtures/synthetic_training.json.gz")  # doctest: +SKIP
    >>> report.ranks[0].gaps.head()  # doctest: +SKIP
    >>> traceanalyze.analyze("job/", run=traceanalyze.RunOptions(executor="ray"))  # doctest: +SKIP
    """
    from traceanalyze.analysis.devices import load_device_file
    from traceanalyze.load import load_trace

    if window not in WINDOWS:
        raise ConfigError(f"--window must be 'activity' or 'steps', not {window!r}")
    if isinstance(skip_steps, bool) or not isinstance(skip_steps, int) or skip_steps < 0:
        raise ConfigError(f"--skip-steps must be a whole number ≥ 0, got {skip_steps!r}")
    if not isinstance(run, RunOptions):
        raise ConfigError(f"run must be a traceanalyze.RunOptions, not {type(run).__name__}")
    if run.rank_frames not in ("full", "bounded", "text"):
        raise ConfigError(f"rank_frames must be 'full', 'bounded' or 'text', not {run.rank_frames!r}")
    for value, flag in ((peak_flops, "--peak-flops"), (peak_bandwidth, "--peak-bandwidth")):
        if value is not None and not value > 0:
            raise ConfigError(f"{flag} must be a positive number, got {value}")
    overrides = PeakOverrides(
        device_file=load_device_file(device_file) if device_file is not None else None,
        device_file_name=str(device_file) if device_file is not None else None,
        peak_flops=peak_flops,
        peak_bandwidth=peak_bandwidth,
        force_device_file=force_device_file,
    )
    options = ReportOptions(window=window, max_gaps=max_gaps, peaks=overrides, skip_steps=skip_steps,
                            rank_frames=run.rank_frames)
    from traceanalyze.pipeline.executors import is_url

    if not isinstance(trace, Trace) and (is_url(str(trace)) or Path(trace).is_dir()):
        from traceanalyze.pipeline import analyse_folder

        return analyse_folder(trace, options, executor=run.executor, workers=run.workers,
                              address=run.executor_address, limits=run.limits, cache=run.cache,
                              force_job=run.force_job, skip_bad_ranks=run.skip_bad_ranks)
    if run.executor != "local" or run.executor_address is not None:
        raise ConfigError("--executor and --executor-address apply to a folder of rank traces")
    if isinstance(trace, Trace):
        return build_report(trace, options)
    path = Path(trace)
    limits, cache = run.limits, run.cache
    rank = analysed_rank(path, options, lambda: load_trace(path, limits=limits, cache=cache), cache=cache,
                         max_events=limits.events, max_op_depth=limits.op_depth)
    return combine_ranks([rank], options, rank.source)
