"""The three-regime attribution of each device's window, and what can be recovered.

Every instant of the window is counted once. At an instant where several GPU ops overlap (several
streams), the instant goes to the first regime of `PRIORITY` that is running: compute, then
bandwidth, then unmodeled kernels, then communication, then copies. An instant with no GPU op is
`overhead`. So the fractions sum to 1 exactly. Definitions: docs/roofline.md.
"""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.idle import DEVICE, Window, windows
from traceanalyze.analysis.intervals import clip_to_windows, union_intervals
from traceanalyze.model import Trace

PRIORITY = ("compute", "bandwidth", "unmodeled", "communication", "memcpy")
ATTRIBUTION_KEYS = ("overhead", "bandwidth", "compute", "communication", "memcpy", "unmodeled")
FUSIBLE_MODELS = ("elementwise", "norm", "softmax", "reduction", "copy", "fill", "loss", "optimizer")

ADVICE = {
    "overhead": "GPU idle, waiting on the CPU: capture the step in CUDA graphs or torch.compile "
    "(mode='reduce-overhead'), use bigger batches, and move Python work (.item(), logging, data "
    "preparation) out of the step.",
    "bandwidth": "Kernels starved for memory bandwidth: fuse chains of elementwise and "
    "normalisation ops (torch.compile does this), keep activations in lower precision, avoid "
    "needless copies and layout changes.",
    "compute": "Kernels near their FLOP roof: use tensor cores (bf16/fp16, TF32 for fp32 matmuls), "
    "lower precision (fp8 where supported), or a bigger GPU.",
    "communication": "Collectives not hidden behind compute: overlap them (bucketed all-reduce, FSDP "
    "prefetch), or reduce their size.",
    "memcpy": "Host/device copies: use pinned memory with non_blocking=True, and keep data on the GPU.",
    "unmodeled": "Kernels with no FLOP/byte model (see the reasons): inspect them by hand.",
}


def _regime_time_in(intervals: pl.DataFrame, bounds: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Exclusive time per regime in each window → `by + regime columns (ns)`: time(k) =
    |union of regimes ≤ k| − |union of regimes < k| (priority order)."""
    covered_before = pl.lit(0)
    exprs = []
    totals = bounds.select(by)
    for k in range(len(PRIORITY)):
        upto = intervals.filter(pl.col("regime").cast(pl.String).is_in(PRIORITY[: k + 1]))
        merged = union_intervals(upto, by)
        length = (
            clip_to_windows(merged, bounds, by)
            .group_by(by)
            .agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias(f"_upto_{k}"))
        )
        totals = totals.join(length, on=by, how="left").with_columns(pl.col(f"_upto_{k}").fill_null(0))
        exprs.append((pl.col(f"_upto_{k}") - covered_before).alias(PRIORITY[k] + "_ns"))
        covered_before = pl.col(f"_upto_{k}")
    return totals.with_columns(exprs).select(*by, *[p + "_ns" for p in PRIORITY])


def attribution(roofline: pl.DataFrame, trace: Trace, *, window: Window = "activity") -> pl.DataFrame:
    """Per device → `rank, device, window_ns, busy_ns, overhead_ns, <regime>_ns …`, the matching
    fractions of the window (`overhead`, `bandwidth`, …, summing to 1), and `model_coverage`
    (see `model_coverage`)."""
    bounds = windows(trace, window=window)
    intervals = roofline.select(*DEVICE, "start_ns", "end_ns", "regime")
    times = _regime_time_in(intervals, bounds, DEVICE)
    return _fractions(bounds.join(times, on=DEVICE, how="left")).join(model_coverage(roofline, DEVICE), on=DEVICE, how="left")


def model_coverage(roofline: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Share of GPU time (summed over ops) spent in ops with a model: kernels whose op has FLOPs
    and bytes, copies and sets (bytes), and communication kernels → `by + [model_coverage]`."""
    return roofline.group_by(by).agg(
        (pl.col("duration_ns").filter(pl.col("modelled")).sum() / pl.col("duration_ns").sum()).alias("model_coverage")
    )


def _fractions(frame: pl.DataFrame) -> pl.DataFrame:
    regime_ns = [pl.col(p + "_ns").fill_null(0) for p in PRIORITY]
    frame = frame.with_columns(regime_ns).with_columns(
        (pl.col("window_end_ns") - pl.col("window_start_ns")).alias("window_ns"),
        pl.sum_horizontal(regime_ns).alias("busy_ns"),
    ).with_columns((pl.col("window_ns") - pl.col("busy_ns")).alias("overhead_ns"))
    window = pl.col("window_ns")
    return frame.with_columns(
        *[pl.when(window > 0).then(pl.col(key + "_ns") / window).otherwise(0.0).alias(key) for key in ATTRIBUTION_KEYS],
    )


def step_attribution(roofline: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """The same attribution over each step's GPU window (`idle.step_breakdown`) → `rank, device,
    step, window_ns, …` as in `attribution`."""
    if steps.is_empty():
        return pl.DataFrame()
    by = ["rank", "device", "step"]
    bounds = steps.select(*by, "window_start_ns", "window_end_ns")
    # every op against every step window of its device that it overlaps: an interval join (two
    # inequalities); pairs from other devices are dropped afterwards
    intervals = (
        roofline.select(*DEVICE, "start_ns", "end_ns", "regime")
        .join_where(
            bounds.rename({"rank": "_rank", "device": "_device"}),
            pl.col("start_ns") < pl.col("window_end_ns"),
            pl.col("end_ns") > pl.col("window_start_ns"),
        )
        .filter((pl.col("rank") == pl.col("_rank")) & (pl.col("device") == pl.col("_device")))
        .select(*by, "start_ns", "end_ns", "regime")
    )
    times = _regime_time_in(intervals, bounds, by)
    return _fractions(bounds.join(times, on=by, how="left"))


def recoverable(roofline: pl.DataFrame, attributed: pl.DataFrame) -> pl.DataFrame:
    """Time that could be saved per regime → `regime, recoverable_ns, how`: overhead = the idle
    time; bandwidth/compute = Σ per kernel (actual − time at the roof)."""
    kernels = (
        roofline.filter(pl.col("regime").is_in(["bandwidth", "compute"]))
        .group_by("regime")
        .agg(pl.col("recoverable_ns").sum())
        .with_columns(pl.col("regime").cast(pl.String))
    )
    rows = [("overhead", int(attributed["overhead_ns"].sum()) if attributed.height else 0)]
    rows += [(r, float(v)) for r, v in kernels.iter_rows()]
    return pl.DataFrame(
        {"regime": [r for r, _ in rows], "recoverable_ns": [float(v) for _, v in rows],
         "how": [ADVICE[r] for r, _ in rows]}
    )


def fusion_summary(runs: pl.DataFrame) -> pl.DataFrame:
    """Identical runs (same ops in the same module, e.g. once per step or layer) folded into one
    row → `ops, annotation, occurrences, kernels, duration_ns, bytes_saved, time_saved_ns`."""
    return (
        runs.with_columns(pl.col("ops").list.join(" → ").alias("ops"))
        .group_by("ops", "annotation")
        .agg(
            pl.len().alias("occurrences"),
            pl.col("kernels").sum(),
            pl.col("duration_ns").sum(),
            pl.col("bytes_saved").sum(),
            pl.col("time_saved_ns").sum(),
        )
        .sort(["time_saved_ns", "ops"], descending=[True, False])
    )


def fusion_opportunities(roofline: pl.DataFrame, *, min_kernels: int = 2) -> pl.DataFrame:
    """Runs of consecutive bandwidth-bound elementwise/normalisation kernels on one stream under
    the same annotation (module). A fused kernel would read the run's inputs and write its output
    once: estimated bytes saved = Σ bytes − the largest single kernel's bytes, and time saved at
    the run's achieved bandwidth = Σ duration × bytes saved / Σ bytes (the `x.cos().cos()` lesson).
    → `rank, device, stream, kernels, ops, annotation, start_ns, duration_ns, bytes,
    bytes_saved, time_saved_ns`, most time saved first."""
    stream = ["rank", "device", "stream"]
    kernels = roofline.filter(pl.col("kind") == "kernel").sort(*stream, "start_ns")
    fusible = (pl.col("regime") == "bandwidth") & pl.col("cost_model").cast(pl.String).is_in(FUSIBLE_MODELS)
    kernels = kernels.with_columns(fusible.fill_null(False).alias("_fusible"))
    breaks = (
        (pl.col("_fusible") != pl.col("_fusible").shift(1).over(stream))
        | (pl.col("annotation").fill_null("") != pl.col("annotation").fill_null("").shift(1).over(stream))
    ).fill_null(True)
    runs = kernels.with_columns(breaks.cast(pl.Int64).cum_sum().over(stream).alias("_run")).filter(pl.col("_fusible"))
    return (
        runs.group_by(*stream, "_run")
        .agg(
            pl.len().alias("kernels"),
            pl.col("op_name").unique(maintain_order=True).alias("ops"),
            pl.col("annotation").first(),
            pl.col("start_ns").min(),
            pl.col("duration_ns").sum(),
            pl.col("bytes").sum(),
            pl.col("bytes").max().alias("_largest"),
        )
        .filter(pl.col("kernels") >= min_kernels)
        .with_columns((pl.col("bytes") - pl.col("_largest")).alias("bytes_saved"))
        .with_columns((pl.col("duration_ns") * pl.col("bytes_saved") / pl.col("bytes")).alias("time_saved_ns"))
        .drop("_run", "_largest")
        .sort("time_saved_ns", descending=True)
    )


def kernels_by_name(roofline: pl.DataFrame) -> pl.DataFrame:
    """The roofline aggregated per kernel name and regime → `name, regime, count, total_ns, flops,
    bytes, intensity, achieved_flops_per_s, achieved_bytes_per_s, pct_of_peak, recoverable_ns`,
    longest total first."""
    seconds = pl.col("total_ns") / 1e9
    return (
        roofline.group_by("name", "regime")
        .agg(
            pl.len().alias("count"),
            pl.col("duration_ns").sum().alias("total_ns"),
            pl.col("flops").sum(),
            pl.col("bytes").sum().alias("bytes"),
            pl.col("peak_flops_per_s").first(),
            pl.col("peak_bytes_per_s").first(),
            pl.col("recoverable_ns").sum(),
            pl.col("op_name").drop_nulls().first().alias("op_name"),
            pl.col("unmodeled_reason").drop_nulls().first().alias("unmodeled_reason"),
        )
        .with_columns(
            pl.when(pl.col("bytes") > 0).then(pl.col("flops") / pl.col("bytes")).alias("intensity"),
            pl.when(seconds > 0).then(pl.col("flops") / seconds).alias("achieved_flops_per_s"),
            pl.when(seconds > 0).then(pl.col("bytes") / seconds).alias("achieved_bytes_per_s"),
        )
        .with_columns(
            pl.when(pl.col("regime") == "compute").then(pl.col("achieved_flops_per_s") / pl.col("peak_flops_per_s"))
            .when(pl.col("regime").is_in(["bandwidth", "memcpy"])).then(pl.col("achieved_bytes_per_s") / pl.col("peak_bytes_per_s"))
            .alias("pct_of_peak")
        )
        .sort(["total_ns", "name", "regime"], descending=[True, False, False])
    )


def kernels_by_op(roofline: pl.DataFrame) -> pl.DataFrame:
    """The roofline aggregated per launching op → `op_name, count, total_ns, flops, bytes,
    intensity, regimes`, longest first."""
    return (
        roofline.filter(pl.col("kind") == "kernel")
        .group_by("op_name")
        .agg(
            pl.len().alias("kernels"),
            pl.col("duration_ns").sum().alias("total_ns"),
            pl.col("flops").sum(),
            pl.col("bytes").sum(),
            pl.col("regime").cast(pl.String).unique().sort().alias("regimes"),
        )
        .with_columns(pl.when(pl.col("bytes") > 0).then(pl.col("flops") / pl.col("bytes")).alias("intensity"))
        .sort(["total_ns", "op_name"], descending=[True, False], nulls_last=True)
    )
