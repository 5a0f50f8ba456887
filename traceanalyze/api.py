"""The notebook API: one call from a path (or a loaded `Trace`) to every table of the report. The
CLI's `report`, `gate` and `diff` call it too: one set of defaults."""

from __future__ import annotations

from pathlib import Path

from traceanalyze.analysis.idle import Window
from traceanalyze.analysis.roofline import PeakOverrides
from traceanalyze.errors import ConfigError
from traceanalyze.cache_files import CacheSetting
from traceanalyze.load.limits import LoadLimits
from traceanalyze.model import Trace
from traceanalyze.report.model import DEFAULT_MAX_GAPS, Report, ReportOptions, build_report, combine_ranks
from traceanalyze.report.results_cache import analysed_rank

WINDOWS = ("activity", "steps")


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
    limits: LoadLimits = LoadLimits(),
    executor: str = "local",
    workers: int | None = None,
    executor_address: str | None = None,
    cache: CacheSetting = True,
    rank_frames: str = "full",
    force_job: bool = False,
    skip_bad_ranks: bool = False,
) -> Report:
    """Load (if given a path) and analyse a trace; every table is a polars DataFrame on the
    returned report, per rank: `report.ranks[0].idle`, `.gaps`, `.latency`, `.roofline`,
    `.attribution`, `.kernels`, `.fusion`, … (times in ns), and the summary figures in
    `report.summary` and `report.ranks[0].summary`. `skip_steps` leaves each rank's first N
    ProfilerSteps out of every analysis (`--skip-steps`, docs/metrics.md#skipped-steps; a
    `ConfigError` when a rank has no steps or N would leave none). `max_gaps` is how many idle gaps the rendered
    report lists (the frames hold every gap); `limits` bounds what loading a path may read and hold
    (`load.limits.LoadLimits`). Raises `ConfigError` for a bad option, and for a device file that
    describes another device than the trace's (unless `force_device_file`). `cache` is the cache of
    loaded traces (`load_trace`'s: True the default folder, a path that folder, False none;
    docs/cache.md): a file loaded before has its tables read back instead of parsed, and one analysed
    before with the same options its analyses (each rank file of a folder too).

    A folder of rank traces (a local path, or a folder's fsspec URL: `s3://bucket/job/`) is a
    map over its files (each rank file → its analyses, on `executor`:
    "local" processes, "ray" tasks or "dask" futures; `workers` of them; the cluster at
    `executor_address`) and a reduce here (`traceanalyze.jobs`): memory holds one rank's raw tables
    per worker, never every rank's. `report.job` holds the cross-rank analyses. `rank_frames`:
    "full" keeps every rank's per-op frames (`.roofline`, every gap, every launch); "bounded"
    keeps only what the reports show, the HTML charts' inputs included (`report.model.bounded`),
    so that the memory of the reduce does not grow with the ranks' sizes (what `traceanalyze
    report` does for every format).

    Examples
    --------
    >>> import traceanalyze
    >>> report = traceanalyze.analyze("fixtures/synthetic_training.json.gz")  # doctest: +SKIP
    >>> report.ranks[0].gaps.head()  # doctest: +SKIP
    """
    from traceanalyze.analysis.devices import load_device_file
    from traceanalyze.load import load_trace

    if window not in WINDOWS:
        raise ConfigError(f"--window must be 'activity' or 'steps', not {window!r}")
    if isinstance(skip_steps, bool) or not isinstance(skip_steps, int) or skip_steps < 0:
        raise ConfigError(f"--skip-steps must be a whole number ≥ 0, got {skip_steps!r}")
    if rank_frames not in ("full", "bounded"):
        raise ConfigError(f"rank_frames must be 'full' or 'bounded', not {rank_frames!r}")
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
                            rank_frames=rank_frames)  # type: ignore[arg-type]
    from traceanalyze.jobs.executors import is_url

    if not isinstance(trace, Trace) and (is_url(str(trace)) or Path(trace).is_dir()):
        from traceanalyze.jobs import analyse_folder

        return analyse_folder(trace, options, executor=executor, workers=workers, address=executor_address,
                              limits=limits, cache=cache, force_job=force_job,
                              skip_bad_ranks=skip_bad_ranks)
    if executor != "local" or executor_address is not None:
        raise ConfigError("--executor and --executor-address apply to a folder of rank traces")
    if isinstance(trace, Trace):
        return build_report(trace, options)
    path = Path(trace)
    rank = analysed_rank(path, options, lambda: load_trace(path, limits=limits, cache=cache), cache=cache,
                         max_events=limits.events, max_op_depth=limits.op_depth)
    return combine_ranks([rank], options, rank.source)
