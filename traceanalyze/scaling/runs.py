"""Trace files → `Scaling`: load each, analyse its first rank, measure it, fit (what
`traceanalyze scaling` and the diff's opening verdict call)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import polars as pl

from traceanalyze.analysis.devices import load_device_file
from traceanalyze.analysis.roofline import PeakOverrides
from traceanalyze.analysis.skip_steps import skip_steps as without_first_steps
from traceanalyze.cache_files import CacheSetting
from traceanalyze.errors import ConfigError, TraceAnalyzeError
from traceanalyze.load import load_trace
from traceanalyze.load.limits import LoadLimits
from traceanalyze.model import Trace
from traceanalyze.pipeline.rank import build_report
from traceanalyze.report.model import ReportOptions
from traceanalyze.scaling.measure import RunPoint, measure_run, step_sequence
from traceanalyze.scaling.model import Scaling, build_scaling
from traceanalyze.scaling.program import same_sequence

DEFAULT_LIMITS = LoadLimits()


def parse_sizes(text: str | None) -> list[float] | None:
    """`--sizes 8,16,32` → [8.0, 16.0, 32.0]; `ConfigError` for anything else.

    >>> parse_sizes("8, 16,32")
    [8.0, 16.0, 32.0]
    """
    if text is None:
        return None
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"--sizes must be numbers separated by commas (8,16,32), got {text!r}") from None
    return values


def default_labels(paths: Sequence[Path]) -> list[str]:
    """A label per trace: its file name, or its folder's name when the file names are all alike
    (`capture --sweep` writes `batch-size=8/trace.json.gz`, …)."""
    names = [path.name for path in paths]
    if len(set(names)) == len(names):
        return names
    parents = [path.parent.name or str(path.parent) for path in paths]
    return parents if len(set(parents)) == len(parents) else [str(path) for path in paths]


def load_run(path: Path, *, skip_steps: int = 0, limits: LoadLimits = DEFAULT_LIMITS,
             cache: CacheSetting = True) -> Trace:
    """The trace at `path`, its first `skip_steps` ProfilerSteps left out."""
    if path.is_dir():
        raise ConfigError(f"{path}: a folder; scaling reads one trace file per size")
    trace = load_trace(path, limits=limits, cache=cache)
    if skip_steps:
        if not trace.steps.height:
            raise ConfigError(f"{path}: --skip-steps needs ProfilerStep spans, and the trace has none")
        if trace.steps.height <= skip_steps:
            raise ConfigError(f"{path}: --skip-steps {skip_steps} leaves none of its {trace.steps.height} steps")
        trace = without_first_steps(trace, skip_steps)
    return trace


def measure_trace(trace: Trace, label: str, peaks: PeakOverrides | None = None) -> RunPoint:
    """The `RunPoint` of the first rank of `trace` (every analysis of the report run on it). `peaks`:
    the user's roofs, for the roofline of a GPU trace and as the roofs of a CPU-only one."""
    rank = build_report(trace, ReportOptions(peaks=peaks or PeakOverrides())).ranks[0]
    point = measure_run(trace, rank, label=label)
    return point if point.has_gpu or peaks is None else replace(point, **dict(zip(
        ("peak_flops_per_s", "peak_bytes_per_s"), cpu_roofs(peaks))))


def cpu_roofs(peaks: PeakOverrides) -> tuple[float | None, float | None]:
    """(FLOP/s, bytes/s) of a CPU from the user's figures: `--peak-flops`/`--peak-bandwidth` first,
    else a device file's FP32 (non-matrix) roof and its bandwidth (`traceanalyze calibrate --device cpu`)."""
    file = peaks.device_file
    flops = peaks.peak_flops if peaks.peak_flops is not None else (
        file.peak_flops("fp32", tensor_core=False) if file is not None else None)
    bandwidth = peaks.peak_bandwidth if peaks.peak_bandwidth is not None else (
        file.memory_bandwidth_bytes_per_s if file is not None else None)
    return flops, bandwidth


def peak_overrides(peak_flops: float | None, peak_bandwidth: float | None,
                   device_file: Path | None) -> PeakOverrides | None:
    """The user's roofs as the roofline takes them; None when none is given."""
    if peak_flops is None and peak_bandwidth is None and device_file is None:
        return None
    for value, flag in ((peak_flops, "--peak-flops"), (peak_bandwidth, "--peak-bandwidth")):
        if value is not None and not value > 0:
            raise ConfigError(f"{flag} must be a positive number, got {value}")
    return PeakOverrides(device_file=load_device_file(device_file) if device_file is not None else None,
                         device_file_name=str(device_file) if device_file is not None else None,
                         peak_flops=peak_flops, peak_bandwidth=peak_bandwidth)


def measure_path(path: Path, label: str, *, skip_steps: int = 0, limits: LoadLimits = DEFAULT_LIMITS,
                 cache: CacheSetting = True, peaks: PeakOverrides | None = None) -> RunPoint:
    """The `RunPoint` of the first rank of the trace at `path`."""
    return measure_trace(load_run(path, skip_steps=skip_steps, limits=limits, cache=cache), label, peaks)


def last_step(trace: Trace) -> tuple[tuple[str, ...], list] | None:
    """(the op sequence, the names and shapes of every CPU op) of the first rank's last step, or
    None without steps: what tells cheaply whether two runs are one program at different sizes."""
    rank = trace.ranks[0]
    steps = trace.steps.filter(pl.col("rank") == rank)
    if not steps.height:
        return None
    bounds = steps.select("step", "start_ns", "end_ns", "tid")
    last = bounds.sort("start_ns").row(-1, named=True)
    cpu_ops = trace.cpu_ops.filter(pl.col("rank") == rank)
    inside = cpu_ops.filter((pl.col("start_ns") >= last["start_ns"]) & (pl.col("start_ns") < last["end_ns"])
                            & (pl.col("category") == "cpu_op")).sort("start_ns")
    shapes = inside.select(pl.col("name").cast(pl.String), "input_dims").rows()
    return step_sequence(cpu_ops, bounds), shapes


def scaling_of_paths(paths: Sequence[Path], *, sizes: Sequence[float] | None = None,
                     labels: Sequence[str] | None = None, skip_steps: int = 0,
                     limits: LoadLimits = DEFAULT_LIMITS, cache: CacheSetting = True,
                     peaks: PeakOverrides | None = None) -> Scaling:
    """Measure every trace and fit (`build_scaling`). Raises `TraceAnalyzeError` (exit 2) for a
    trace that cannot be read and for runs that are not one program at different sizes. `peaks`:
    the user's roofs (`peak_overrides`).

    Examples
    --------
    >>> scaling = scaling_of_paths([Path("b8.json.gz"), Path("b64.json.gz")])  # doctest: +SKIP
    >>> scaling.headline  # doctest: +SKIP
    '8.0× the work took 1.3× the time: 88% of the small run is fixed overhead (overhead-bound); ...'
    """
    labels = list(labels) if labels is not None else default_labels(paths)
    points = [measure_path(path, label, skip_steps=skip_steps, limits=limits, cache=cache, peaks=peaks)
              for path, label in zip(paths, labels)]
    return build_scaling(points, sizes=sizes)


def same_program_scaling(paths: Sequence[Path], *, skip_steps: int = 0, cache: CacheSetting = True) -> Scaling | None:
    """The `Scaling` of two traces when they are one program at different work, else None (what
    the diff opens with; any error reading or comparing them means None). Cheap when the answer is
    no: two programs, or one program at one size (the same shapes in the last step), are told from
    the loaded tables before any analysis runs."""
    try:
        traces = [load_run(path, skip_steps=skip_steps, cache=cache) for path in paths]
        steps = [last_step(trace) for trace in traces]
        if all(step is not None for step in steps):
            (sequence_a, shapes_a), (sequence_b, shapes_b) = steps  # type: ignore[misc]
            if not same_sequence(sequence_a, sequence_b) or shapes_a == shapes_b:
                return None
        points = [measure_trace(trace, label) for trace, label in zip(traces, ("base", "new"))]
        return build_scaling(points)
    except TraceAnalyzeError:
        return None
