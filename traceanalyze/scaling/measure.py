"""One run of a sweep → a `RunPoint`: its time per step (GPU window, GPU busy, CPU step), its work
per step (FLOPs and bytes from the recorded shapes), its time per regime and the FLOPs and bytes of
its main ops. Medians over the steps. Definitions: docs/scaling.md."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.costs.autograd_pairs import recover_costs
from traceanalyze.analysis.costs.conv_geometry import recover_forward_costs
from traceanalyze.analysis.costs.table import OP_COST_INPUTS, op_costs
from traceanalyze.analysis.roofline import TENSOR_CORE_MODELS
from traceanalyze.model import Trace
from traceanalyze.report.model import RankReport

REGIME_KEYS = ("overhead", "bandwidth", "compute", "other")
# other regimes of the GPU attribution, folded into "other"
OTHER_GPU_REGIMES = ("latency", "communication", "memcpy", "unmodeled")


@dataclass(frozen=True)
class OpWork:
    """One op (by name) of a run: its FLOPs, bytes and time per step."""

    name: str
    flops: float
    bytes: float
    time_ns: float

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes > 0 else None


@dataclass(frozen=True)
class RunPoint:
    """One trace of a sweep, per step (medians over its steps). Times in ns, `None` where the trace
    has no such time (no GPU)."""

    label: str
    source: str
    steps: int  # ProfilerSteps measured; 0 = no steps, the whole trace is one "step"
    has_gpu: bool
    gpu_window_ns: float | None
    gpu_busy_ns: float | None
    cpu_step_ns: float
    flops: float  # modelled FLOPs per step
    bytes: float  # modelled bytes per step
    regime_ns: dict[str, float]  # REGIME_KEYS → time per step
    ops: tuple[OpWork, ...]  # every costed op name, most time first
    sequence: tuple[str, ...]  # names of the ops of one step, in order (the same-program check)
    kernels: tuple[str, ...]  # distinct GPU kernel names (sorted)
    peak_flops_per_s: float | None
    peak_bytes_per_s: float | None

    @property
    def time_ns(self) -> float:
        """The time per step the fit uses: the GPU window per step, else the CPU step time."""
        return self.gpu_window_ns if self.gpu_window_ns is not None else self.cpu_step_ns

    @property
    def time_name(self) -> str:
        return "GPU window per step" if self.gpu_window_ns is not None else "CPU step time"


def measure_run(trace: Trace, rank: RankReport, *, label: str) -> RunPoint:
    """The `RunPoint` of rank `rank.rank` of `trace` (its `RankReport` from `build_report`).

    Examples
    --------
    >>> from traceanalyze.api import analyze  # doctest: +SKIP
    >>> point = measure_run(trace, analyze(trace).ranks[0], label="b8")  # doctest: +SKIP
    """
    steps = trace.steps.filter(pl.col("rank") == rank.rank).sort("start_ns")
    cpu_ops = trace.cpu_ops.filter(pl.col("rank") == rank.rank)
    if steps.height:
        bounds = steps.select("step", "start_ns", "end_ns", "tid")
    else:
        whole = cpu_ops.select(pl.col("start_ns").min(), pl.col("end_ns").max())
        start, end = whole.row(0) if cpu_ops.height else (0, 0)
        if rank.roofline.height:
            start = min(start or rank.roofline["start_ns"].min(), rank.roofline["start_ns"].min())
            end = max(end or 0, rank.roofline["end_ns"].max())
        bounds = pl.DataFrame({"step": [0], "start_ns": [start], "end_ns": [end], "tid": [None]},
                              schema={"step": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64, "tid": pl.Int64})
    cpu_step = float(pl.Series(bounds["end_ns"] - bounds["start_ns"]).median() or 0.0)
    gpu = rank.has_gpu and rank.roofline.height > 0
    if gpu:
        work, ops, regimes, window, busy = _gpu_work(rank, bounds, steps.height > 0)
    else:
        work, ops, regimes = _cpu_work(cpu_ops, bounds, cpu_step)
        window = busy = None
    peaks = rank.roofline.select(pl.col("peak_flops_per_s").max(), pl.col("peak_bytes_per_s").max()).row(0) \
        if gpu else (None, None)
    names = rank.roofline.filter(pl.col("kind") == "kernel")["name"].cast(pl.String) if gpu else []
    kernels = tuple(sorted(set(names)))
    return RunPoint(label=label, source=str(rank.source), steps=steps.height, has_gpu=gpu, gpu_window_ns=window,
                    gpu_busy_ns=busy, cpu_step_ns=cpu_step, flops=work[0], bytes=work[1], regime_ns=regimes,
                    ops=ops, sequence=step_sequence(cpu_ops, bounds), kernels=kernels,
                    peak_flops_per_s=peaks[0], peak_bytes_per_s=peaks[1])


def _in_steps(frame: pl.DataFrame, bounds: pl.DataFrame, at: str) -> pl.DataFrame:
    """`frame` with the `step` whose [start, end) holds its `at` time (rows outside every step dropped)."""
    spans = bounds.select("step", pl.col("start_ns").alias("_start"), pl.col("end_ns").alias("_end")).sort("_start")
    joined = frame.sort(at).join_asof(spans, left_on=at, right_on="_start", strategy="backward")
    return joined.filter(pl.col("step").is_not_null() & (pl.col(at) < pl.col("_end"))).drop("_start", "_end")


def _per_step(frame: pl.DataFrame, steps: int, columns: list[str]) -> dict[str, float]:
    """Median over `steps` steps of each column's sum per step (a step without rows counts 0)."""
    sums = frame.group_by("step").agg(pl.col(c).fill_null(0).sum() for c in columns)
    out = {}
    for c in columns:
        values = sums[c].cast(pl.Float64).to_list() + [0.0] * (steps - sums.height)
        out[c] = float(pl.Series(values, dtype=pl.Float64).median() or 0.0) if values else 0.0
    return out


def _op_table(frame: pl.DataFrame, steps: int, key: str) -> tuple[OpWork, ...]:
    """Per op name: FLOPs, bytes and time per step (totals over the steps / steps), most time first."""
    grouped = (frame.group_by(key).agg(pl.col("flops").fill_null(0).sum(), pl.col("bytes").fill_null(0).sum(),
                                       pl.col("duration_ns").sum())
               .sort(["duration_ns", key], descending=[True, False]))
    n = max(steps, 1)
    return tuple(OpWork(str(r[key]), r["flops"] / n, r["bytes"] / n, r["duration_ns"] / n)
                 for r in grouped.iter_rows(named=True) if r[key] is not None)


def _gpu_work(rank: RankReport, bounds: pl.DataFrame, stepped: bool):
    kernels = rank.roofline.filter(pl.col("kind") == "kernel").select(
        pl.coalesce("launch_start_ns", "start_ns").alias("at"), "flops", "bytes", "duration_ns",
        pl.coalesce(pl.col("op_name").cast(pl.String), pl.col("name").cast(pl.String)).alias("op"))
    kernels = _in_steps(kernels, bounds, "at")
    n = bounds.height
    work = _per_step(kernels, n, ["flops", "bytes"])
    device = rank.steps["device"].min() if rank.steps.height else None
    if stepped and rank.step_attribution.height:
        attributed = rank.step_attribution.filter(pl.col("device") == device)
        steps_frame = rank.steps.filter(pl.col("device") == device)
        window = float(steps_frame["window_ns"].median() or 0.0)
        busy = float(steps_frame["gpu_busy_ns"].median() or 0.0)
    else:
        attributed = rank.attribution.head(1)
        window = float(attributed["window_ns"].sum()) if attributed.height else 0.0
        busy = float(attributed["busy_ns"].sum()) if attributed.height else 0.0
    regimes = {key: float(attributed[f"{key}_ns"].median() or 0.0) for key in ("overhead", "bandwidth", "compute")}
    regimes["other"] = float(sum(attributed[f"{key}_ns"].median() or 0.0 for key in OTHER_GPU_REGIMES))
    return (work["flops"], work["bytes"]), _op_table(kernels, n, "op"), regimes, window, busy


def _cpu_work(cpu_ops: pl.DataFrame, bounds: pl.DataFrame, cpu_step: float):
    """A CPU-only trace: the outermost ops with a cost (FLOPs or bytes > 0; an op none of whose
    ancestors has one), so that no FLOP counts twice (`aten::linear` holds `aten::addmm`); their time
    is compute (matmul, convolution and attention families) or bandwidth (every other family); the
    rest of the step is overhead."""
    ops = cpu_ops.filter(pl.col("category") == "cpu_op")
    inputs = ops.select([c for c in OP_COST_INPUTS if c in ops.columns])
    costs = recover_costs(recover_forward_costs(op_costs(inputs), cpu_ops), cpu_ops)
    costed = ops.select("op_id", "name", "start_ns", "duration_ns").join(
        costs.select("op_id", "flops", "bytes", "cost_model"), on="op_id", how="left")
    costed = costed.filter(pl.col("flops").is_not_null() & pl.col("bytes").is_not_null()
                           & ((pl.col("flops") > 0) | (pl.col("bytes") > 0)))
    parents = dict(zip(cpu_ops["op_id"].to_list(), cpu_ops["parent_id"].to_list()))
    ids = set(costed["op_id"].to_list())
    inner_ids = [op_id for op_id in ids if not _has_ancestor_in(op_id, parents, ids)]
    inner = costed.filter(pl.col("op_id").is_in(inner_ids)).with_columns(
        pl.col("name").cast(pl.String),
        pl.col("cost_model").cast(pl.String).is_in(list(TENSOR_CORE_MODELS)).alias("dense"))
    inner = _in_steps(inner, bounds, "start_ns")
    n = bounds.height
    inner = inner.with_columns(pl.when(pl.col("dense")).then(pl.col("duration_ns")).otherwise(0).alias("compute_ns"),
                               pl.when(pl.col("dense")).then(0).otherwise(pl.col("duration_ns")).alias("bandwidth_ns"))
    work = _per_step(inner, n, ["flops", "bytes", "compute_ns", "bandwidth_ns"])
    regimes = {"compute": work["compute_ns"], "bandwidth": work["bandwidth_ns"], "other": 0.0}
    regimes["overhead"] = max(cpu_step - regimes["compute"] - regimes["bandwidth"], 0.0)
    return (work["flops"], work["bytes"]), _op_table(inner, n, "name"), {k: regimes[k] for k in REGIME_KEYS}


def _has_ancestor_in(op_id: int, parents: dict, ids: set) -> bool:
    parent = parents.get(op_id)
    while parent is not None:
        if parent in ids:
            return True
        parent = parents.get(parent)
    return False


def step_sequence(cpu_ops: pl.DataFrame, bounds: pl.DataFrame) -> tuple[str, ...]:
    """The names of the ops directly inside the last step (on its thread), in time order; without
    steps, the top-level ops of the trace's first thread."""
    last = bounds.sort("start_ns").row(-1, named=True)
    if last["tid"] is not None:
        step_op = cpu_ops.filter((pl.col("tid") == last["tid"]) & (pl.col("start_ns") == last["start_ns"])
                                 & pl.col("name").cast(pl.String).str.starts_with("ProfilerStep#"))
        if step_op.height:
            children = cpu_ops.filter(pl.col("parent_id") == step_op["op_id"][0]).sort("start_ns")
            return tuple(children["name"].cast(pl.String).to_list())
    if not cpu_ops.height:
        return ()
    tid = cpu_ops.sort("start_ns")["tid"][0]
    top = cpu_ops.filter((pl.col("tid") == tid) & pl.col("parent_id").is_null()).sort("start_ns")
    return tuple(top["name"].cast(pl.String).to_list())
