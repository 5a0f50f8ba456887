"""The three-regime attribution of each device's window, and what can be recovered.

Every instant of the window is counted once. At an instant where several GPU ops overlap (several
streams), the instant goes to the first regime of `PRIORITY` that is running: compute, then
bandwidth, then latency-bound kernels, then unmodeled kernels, then communication, then copies. An
instant with no GPU op is `overhead`. So the fractions sum to 1 exactly. Definitions: docs/roofline.md.
"""

from __future__ import annotations

import math

import polars as pl

from traceanalyze.analysis.costs.registry import FAMILIES
from traceanalyze.analysis.costs.tensors import element_size
from traceanalyze.analysis.idle import DEVICE, Window, windows
from traceanalyze.analysis.names import starts_with
from traceanalyze.analysis.intervals import covered_in_windows
from traceanalyze.model import Trace

PRIORITY = ("compute", "bandwidth", "latency", "unmodeled", "communication", "memcpy")
ATTRIBUTION_KEYS = ("overhead", "bandwidth", "compute", "latency", "communication", "memcpy", "unmodeled")
FUSIBLE_MODELS = tuple(f.name for f in FAMILIES if f.fusible)


def _regime_time_in(intervals: pl.DataFrame, bounds: pl.DataFrame) -> pl.DataFrame:
    """Exclusive time per regime in each window of `bounds` (`rank, device, window_start_ns,
    window_end_ns`, any other key columns; windows may overlap) → `bounds` plus a `<regime>_ns`
    column per regime: time(k) = |union of regimes ≤ k| − |union of regimes < k| (priority order)."""
    priority = pl.col("regime").replace_strict(  # on the Enum itself: a String cast costs 4 times the lookup
        {name: k for k, name in enumerate(PRIORITY)}, default=None, return_dtype=pl.Int8)
    ranked = intervals.select(*DEVICE, "start_ns", "end_ns", priority.alias("_priority")).drop_nulls("_priority")
    columns = []
    before = pl.Series([0] * bounds.height, dtype=pl.Int64)
    for k, name in enumerate(PRIORITY):
        upto = covered_in_windows(ranked.filter(pl.col("_priority") <= k), bounds, DEVICE)
        columns.append((upto - before).alias(name + "_ns"))
        before = upto
    return bounds.with_columns(columns)


def attribution(roofline: pl.DataFrame, trace: Trace, *, window: Window = "activity") -> pl.DataFrame:
    """Per device → `rank, device, window_ns, busy_ns, overhead_ns, <regime>_ns …`, the matching
    fractions of the window (`overhead`, `bandwidth`, …, summing to 1), and the columns of
    `model_coverage`."""
    bounds = windows(trace, window=window)
    intervals = roofline.select(*DEVICE, "start_ns", "end_ns", "regime")
    return _fractions(_regime_time_in(intervals, bounds)).join(
        model_coverage(roofline, bounds, DEVICE), on=DEVICE, how="left"
    )


def _busy_ns(ops: pl.DataFrame, bounds: pl.DataFrame, by: list[str], name: str) -> pl.DataFrame:
    """|union of `ops` ∩ window| per group → `by + [name]` (0 where a window has no op)."""
    return bounds.select(by).with_columns(
        covered_in_windows(ops.select(*by, "start_ns", "end_ns"), bounds, by).alias(name)
    )


def model_coverage(roofline: pl.DataFrame, bounds: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Share of GPU busy time with a FLOP/byte model → `by + [modelled_busy_ns, modelable_busy_ns,
    communication_busy_ns, unroofed_busy_ns, model_coverage]`.

    `modelable_busy_ns` = |union of non-communication GPU ops ∩ window|, `modelled_busy_ns` = the
    same over those with a model (kernels whose op has FLOPs and bytes, copies and sets), and
    `model_coverage` their ratio (null without such time). Collectives are bound by the
    interconnect, not the roofline: they are in neither, and their own busy time is
    `communication_busy_ns`. An instant where a modelled and an unmodelled op overlap counts as
    modelled. `unroofed_busy_ns` = |union of modelled kernels without a roof (regime `unmodeled`:
    device or dtype peak unknown) ∩ window|: time the model covers that still counts as
    `unmodeled` in the attribution, whose shares are of the window, not of busy time."""
    roofline = roofline.select(*by, "start_ns", "end_ns", "kind", "modelled", "regime")  # a filter copies what it keeps
    compute = roofline.filter(pl.col("kind") != "communication")
    parts = [
        _busy_ns(compute.filter(pl.col("modelled")), bounds, by, "modelled_busy_ns"),
        _busy_ns(compute, bounds, by, "modelable_busy_ns"),
        _busy_ns(roofline.filter(pl.col("kind") == "communication"), bounds, by, "communication_busy_ns"),
        _busy_ns(
            compute.filter(pl.col("modelled") & (pl.col("regime") == "unmodeled")), bounds, by, "unroofed_busy_ns"
        ),
    ]
    frame = parts[0].join(parts[1], on=by).join(parts[2], on=by).join(parts[3], on=by)
    return frame.with_columns(
        pl.when(pl.col("modelable_busy_ns") > 0)
        .then(pl.col("modelled_busy_ns") / pl.col("modelable_busy_ns"))
        .alias("model_coverage")
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
    step, window_ns, …` as in `attribution` (no rows, the same columns, when there are no steps)."""
    bounds = steps.select("rank", "device", "step", "window_start_ns", "window_end_ns")
    return _fractions(_regime_time_in(roofline.select(*DEVICE, "start_ns", "end_ns", "regime"), bounds))


def _regime_sums(is_regime: pl.Expr) -> dict[str, pl.Expr]:
    """A regime's kernels, their summed recoverable time and time at the roof over actual time."""
    return {
        "kernels": is_regime.sum(),
        "recoverable_ns": pl.col("recoverable_ns").filter(is_regime).sum(),
        "roof_share": pl.col("ideal_ns").filter(is_regime).sum() / pl.col("duration_ns").filter(is_regime).sum(),
    }


def recoverable(roofline: pl.DataFrame, attributed: pl.DataFrame, *, left_out_idle_ns: int = 0) -> pl.DataFrame:
    """Per regime of `ATTRIBUTION_KEYS` → `regime, recoverable_ns, roof_share`: overhead = the idle
    time less `left_out_idle_ns` (the warm-up and autotune gaps no steady-state step has,
    `findings.excluded_ns`); bandwidth/compute/latency = Σ per kernel max(0, actual − time at the roof), and
    `roof_share` = Σ time at the roof / Σ actual time of their kernels (how close they get to it);
    null for the other regimes. What to change is the findings' job (analysis/findings)."""
    # each regime's sums over its kernels in row order, in one pass (a group_by would sum them in
    # another order where polars knows the regimes sorted: a rank alone, not among others)
    kernel_regimes = ("bandwidth", "compute", "latency")
    sums = roofline.select(
        expr.alias(f"{regime}\x00{name}") for regime in kernel_regimes
        for name, expr in _regime_sums(pl.col("regime") == regime).items()
    ).row(0, named=True)
    found = {regime: {name: sums[f"{regime}\x00{name}"] for name in ("recoverable_ns", "roof_share")}
             for regime in kernel_regimes if sums[f"{regime}\x00kernels"]}
    idle = float(attributed["overhead_ns"].sum()) - left_out_idle_ns if attributed.height else 0.0
    rows = []
    for regime in ATTRIBUTION_KEYS:
        row = found.get(regime, {})
        share = row.get("roof_share")
        rows.append({"regime": regime, "recoverable_ns": idle if regime == "overhead" else row.get("recoverable_ns"),
                     "roof_share": share})
    return pl.DataFrame(rows, schema={"regime": pl.String, "recoverable_ns": pl.Float64, "roof_share": pl.Float64})


def fusion_summary(runs: pl.DataFrame) -> pl.DataFrame:
    """Identical runs (same ops in the same module, e.g. once per step or layer) folded into one
    row → `ops, annotation, occurrences, kernels, duration_ns, bytes_saved, time_saved_ns`."""
    return (
        runs.with_columns(pl.col("ops").cast(pl.List(pl.String)).list.join(" → ").alias("ops"))
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


def _op_tensors(cpu_ops: pl.DataFrame, op_ids: pl.Series) -> pl.DataFrame:
    """Per op → `op_id, in_shapes` (every tensor argument as "shape:type", TensorLists expanded)
    and `out_shape`, `out_bytes`: its largest tensor, the shape and size of an elementwise,
    normalisation or copy op's result (broadcasting). Ops without recorded shapes are absent."""
    ops = cpu_ops.select("op_id", "input_dims", "input_types").filter(  # a filter copies every column it keeps
        pl.col("op_id").is_in(op_ids.drop_nulls().unique().implode()) & pl.col("input_dims").is_not_null())
    # each distinct argument list once (a training step repeats its ops), then back to every op
    groups = ops.group_by("input_dims", "input_types", maintain_order=True).agg("op_id")
    rows = []
    for dims, types, members in groups.iter_rows():
        tensors = [
            (shape, kind) for shape, kind in zip(dims or [], types or []) if element_size(kind or "") is not None
        ]
        if not tensors:
            continue
        largest = max(tensors, key=lambda t: math.prod(t[0]))
        rows.append({"op_id": members, "in_shapes": [f"{list(shape)}:{kind}" for shape, kind in tensors],
                     "out_shape": f"{list(largest[0])}:{largest[1]}",
                     "out_bytes": float(math.prod(largest[0]) * element_size(largest[1]))})
    return pl.DataFrame(
        rows,
        schema={
            "op_id": pl.List(pl.Int64),
            "in_shapes": pl.List(pl.String),
            "out_shape": pl.String,
            "out_bytes": pl.Float64,
        },
    ).explode("op_id")


def _in_optimizer_step(kernels: pl.DataFrame, cpu_ops: pl.DataFrame) -> pl.Series:
    """Whether each kernel was launched inside an `Optimizer.step…` span (a user annotation, or a
    `cpu_op` in 2021 traces, which record regions as operators)."""
    steps = cpu_ops.filter(starts_with(cpu_ops["name"], "Optimizer.step")).select(
        pl.col("rank").alias("_rank"), pl.col("start_ns").alias("_s"), pl.col("end_ns").alias("_e"))
    rows = kernels.select(pl.int_range(pl.len()).alias("_row"), "rank", "launch_start_ns")
    inside = rows.join_where(
        steps, pl.col("launch_start_ns") >= pl.col("_s"), pl.col("launch_start_ns") <= pl.col("_e")
    )
    inside = inside.filter(pl.col("rank") == pl.col("_rank"))["_row"].unique()
    return rows["_row"].is_in(inside.implode())


def fusion_opportunities(roofline: pl.DataFrame, cpu_ops: pl.DataFrame, *, min_ops: int = 2) -> pl.DataFrame:
    """Runs of consecutive bandwidth-bound elementwise/normalisation kernels on one stream that are
    plausibly data-dependent, and the traffic a fused kernel would not move.

    Kernels of one op form a block. Two consecutive blocks are linked when both are fusible
    (bandwidth-bound — a latency-bound kernel is not —, an elementwise/normalisation/softmax/
    reduction/copy/fill/loss op, not launched inside `Optimizer.step`: per-parameter updates touch
    different tensors), come from the same op name or the same annotation (module), the first
    one's result (its largest tensor, shape and dtype) is an input of the second (`cpu_ops`
    shapes: without them nothing is linked), and the second reads its inputs (a fill does not).
    A link saves the intermediate's write and re-read: 2 × its bytes. time saved = Σ duration ×
    bytes saved / Σ bytes (the run's achieved bandwidth). A run is kept when it has at least
    `min_ops` blocks, bytes saved > 0 and time saved > 0. → `rank, device, stream, kernels, ops, annotation, start_ns,
    duration_ns, bytes, bytes_saved, time_saved_ns`, most time saved first (then by stream and time)."""
    stream = ["rank", "device", "stream"]
    # blocks and their order from the numeric columns; names are gathered for fusible blocks only
    read = (*stream, "kind", "start_ns", "duration_ns", "regime", "cost_model", "op_id", "bytes", "launch_start_ns")
    kernels = (roofline.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_row"), *read)
               .filter(pl.col("kind") == "kernel").sort(*stream, "start_ns"))
    candidate = (
        (pl.col("regime") == "bandwidth") & pl.col("cost_model").cast(pl.String).is_in(FUSIBLE_MODELS)
    ).fill_null(False)
    candidates = kernels.filter(candidate)
    fusible_rows = candidates.filter(~_in_optimizer_step(candidates, cpu_ops))["_row"]
    blocks = fusible_blocks(kernels, fusible_rows, stream)
    blocks = blocks.with_columns(roofline.select("op_name", "annotation")[blocks["_row"]]).drop("_row")
    blocks = blocks.join(_op_tensors(cpu_ops, blocks["op_id"]), on="op_id", how="left", maintain_order="left")

    def prev(column: str) -> pl.Expr:
        return pl.col(column).shift(1).over(stream)

    same_op = pl.col("op_name") == prev("op_name")
    same_module = pl.col("annotation").is_not_null() & (pl.col("annotation") == prev("annotation"))
    has_shapes = pl.col("out_shape").is_not_null() & prev("out_shape").is_not_null()
    chained = pl.col("in_shapes").list.contains(prev("out_shape"))
    reads = pl.col("_family") != "fill"  # a fill writes its tensor without reading it: it consumes nothing
    linked = (pl.col("_previous_fusible") & has_shapes & (same_op | same_module) & chained & reads).fill_null(False)
    link_saved = 2 * prev("out_bytes")
    runs = (
        blocks.with_columns(linked.alias("_linked"), link_saved.alias("_saved"))
        .with_columns((~pl.col("_linked")).cast(pl.Int64).cum_sum().over(stream).alias("_run"))
    )
    return (
        runs.group_by(*stream, "_run")
        .agg(
            pl.len().alias("_ops"),
            pl.col("kernels").sum(),
            pl.col("op_name").unique(maintain_order=True).alias("ops"),
            pl.col("annotation").first(),
            pl.col("start_ns").min(),
            pl.col("duration_ns").sum(),
            pl.col("bytes").sum(),
            pl.col("bytes").max().alias("_largest"),
            pl.col("_saved").filter(pl.col("_linked")).sum().alias("bytes_saved"),
        )
        .filter(pl.col("_ops") >= min_ops)
        .with_columns(pl.min_horizontal("bytes_saved", pl.col("bytes") - pl.col("_largest")).alias("bytes_saved"))
        .with_columns((pl.col("duration_ns") * pl.col("bytes_saved") / pl.col("bytes")).alias("time_saved_ns"))
        .filter((pl.col("bytes_saved") > 0) & (pl.col("time_saved_ns") > 0))
        .drop("_run", "_largest", "_ops")
        .sort("time_saved_ns", "rank", "device", "stream", "start_ns", descending=[True, False, False, False, False])
    )


def fusible_blocks(kernels: pl.DataFrame, fusible_rows: pl.Series, stream: list[str]) -> pl.DataFrame:
    """The fusible blocks (consecutive kernels of one op, all fusible: their `_row` in
    `fusible_rows`) of `kernels` (sorted by stream and start) → `stream, _block, op_id, _row,
    _fusible, _family, kernels, start_ns, duration_ns, bytes, _previous_fusible` (whether the
    block before it on its stream is fusible; null for a stream's first), by stream and block."""
    new_block = (pl.col("op_id") != pl.col("op_id").shift(1).over(stream)).fill_null(True)
    kernels = kernels.with_columns(pl.col("_row").is_in(fusible_rows.implode()).alias("_fusible"),
                                   new_block.cast(pl.Int64).cum_sum().over(stream).alias("_block"))
    # only the blocks holding a fusible kernel are made (most kernels are in none); a block is
    # fusible when all its kernels are, and numbered in its stream, so the one before it is
    # `_block - 1` there
    touched = kernels.filter(pl.col("_fusible")).select(*stream, "_block").unique()
    fusible = (
        kernels.join(touched, on=[*stream, "_block"], how="semi", maintain_order="left")
        .group_by(*stream, "_block", maintain_order=True)
        .agg(pl.col("op_id").first(), pl.col("_row").first(), pl.col("_fusible").all(),
             pl.col("cost_model").cast(pl.String).first().alias("_family"),
             pl.len().alias("kernels"), pl.col("start_ns").min(), pl.col("duration_ns").sum(), pl.col("bytes").sum())
        .filter(pl.col("_fusible"))  # a run holds fusible blocks only; `_previous_fusible` keeps what broke it
        .sort(*stream, "_block")
    )
    before = fusible.select(*stream, (pl.col("_block") + 1).alias("_block"), pl.lit(True).alias("_previous_fusible"))
    return fusible.join(before, on=[*stream, "_block"], how="left", maintain_order="left").with_columns(
        # the first block of a stream has none before it (null); any other block before it is not fusible
        pl.when(pl.col("_block") > 1).then(pl.col("_previous_fusible").fill_null(False)).alias("_previous_fusible"))


# the roofline columns `op_parts` reads (a filter copies every column it keeps)
_AGGREGATED = (
    "name",
    "op_name",
    "kind",
    "regime",
    "duration_ns",
    "flops",
    "bytes",
    "recoverable_ns",
    "peak_flops_per_s",
    "peak_bytes_per_s",
    "ridge_flops_per_byte",
    "roof",
    "compute_dtype",
    "tensor_core",
    "no_roof_reason",
    "unmodeled_reason",
    "tf32_peak_flops_per_s",
)


SINGLE = (
    "peak_flops_per_s",
    "peak_bytes_per_s",
    "ridge_flops_per_byte",
    "tf32_peak_flops_per_s",
)  # kept when one value
FIRST = ("compute_dtype", "tensor_core", "no_roof_reason")  # of the group's first kernel
FIRST_PRESENT = ("op_name", "unmodeled_reason")  # the first one that is not null
SUMS = ("total_ns", "flops", "bytes", "recoverable_ns")


def aggregate_parts(roofline: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The sums and value sets `kernels_by_name`/`kernels_by_op` need per group of `by`, from the
    roofline's rows: a small frame that can be concatenated with other ranks' and combined
    (`combine_parts`) into the totals the concatenated rows would give (one rank: the same
    numbers; several: float sums summed per rank first, which may differ in the last digit)."""
    # `combine_parts` of the rows as one-value lists, without making a list per row: a group's
    # value set is its distinct values in order
    rows = part_rows(roofline, by)
    return rows.group_by(by, maintain_order=True).agg(
        *_SUMMED, *[pl.col(c).unique(maintain_order=True).alias(c) for c in (*SINGLE, "roof")], *_first_values(rows, by)
    )


def part_rows(roofline: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Each roofline row as `aggregate_parts` adds it up: one count, its sums, its time at the roof,
    and the values whose sets and first ones a group keeps."""
    at_roof = (
        pl.when(pl.col("regime").is_in(["compute", "bandwidth", "latency"]))
        .then(
            pl.max_horizontal(
                pl.col("flops") / pl.col("peak_flops_per_s"), pl.col("bytes") / pl.col("peak_bytes_per_s")
            )
        )
        .when(pl.col("regime") == "memcpy")
        .then(pl.col("bytes") / pl.col("peak_bytes_per_s"))
    ) * 1e9
    return roofline.select(
        *by, pl.lit(1, dtype=pl.UInt32).alias("count"), pl.col("duration_ns").alias("total_ns"), "flops", "bytes",
        "recoverable_ns", at_roof.alias("_at_roof_ns"), at_roof.is_null().alias("_no_roof"),
        *SINGLE, "roof", *FIRST, *[c for c in FIRST_PRESENT if c not in by],
    )


def combine_parts(parts: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """`aggregate_parts` frames (of one rank or several, concatenated in rank order) → one row per
    group: sums summed, value sets united (in order), first values kept."""
    return parts.group_by(by, maintain_order=True).agg(
        *_SUMMED,
        *[
            pl.col(c).list.explode(keep_nulls=True, empty_as_null=False).unique(maintain_order=True).alias(c)
            for c in (*SINGLE, "roof")
        ],
        *_first_values(parts, by),
    )


_SUMMED = (
    pl.col("count").sum(),
    *[pl.col(c).sum() for c in SUMS],
    pl.col("_at_roof_ns").sum(),
    pl.col("_no_roof").any(),
)


def _first_values(parts: pl.DataFrame, by: list[str]) -> list[pl.Expr]:
    """The first values `aggregate_parts` keeps: of the group's first row, or its first present."""
    return [*[pl.col(c).first() for c in FIRST],
            *[pl.col(c).drop_nulls().first() for c in FIRST_PRESENT if c in parts.columns and c not in by]]


def finish_parts(parts: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Combined parts → the table of `kernels_by_name` (its docstring defines it) or `kernels_by_op`."""
    seconds = pl.col("total_ns") / 1e9
    return (
        combine_parts(parts, by)
        .with_columns(
            pl.when(~pl.col("_no_roof")).then(pl.col("_at_roof_ns")).alias("_at_roof_ns"),
            *[pl.when(pl.col(c).list.len() == 1).then(pl.col(c).list.first()).alias(c) for c in SINGLE],
            pl.col("roof")
            .list.drop_nulls()
            .list.eval(pl.element().cast(pl.String))
            .list.sort()
            .list.join(" + ")
            .alias("roof"),
            pl.col("count").cast(pl.UInt32),
        )
        .with_columns(
            pl.when(pl.col("roof") != "").then(pl.col("roof")).alias("roof"),
            pl.when(pl.col("bytes") > 0).then(pl.col("flops") / pl.col("bytes")).alias("intensity"),
            pl.when(seconds > 0).then(pl.col("flops") / seconds).alias("achieved_flops_per_s"),
            pl.when(seconds > 0).then(pl.col("bytes") / seconds).alias("achieved_bytes_per_s"),
            pl.when(pl.col("total_ns") > 0).then(pl.col("_at_roof_ns") / pl.col("total_ns")).alias("pct_of_roof"),
        )
        .with_columns((pl.col("achieved_flops_per_s") / pl.col("tf32_peak_flops_per_s")).alias("tf32_roof_fraction"))
        .drop("_at_roof_ns", "_no_roof")
        .sort(["total_ns", *by], descending=[True] + [False] * len(by), nulls_last=True)
        .rename({"regime": "bound", "op_name": "op"})  # the JSON report's names (docs/report-json.md)
    )


NAME_KEYS = ["name", "regime"]
OP_KEYS = ["op_name", "regime"]


def name_parts(roofline: pl.DataFrame, *, by_rank: bool = False) -> pl.DataFrame:
    """`aggregate_parts` per kernel name and bound: what `kernels_by_name` is finished from
    (`by_rank`: per rank too, a `rank` column first)."""
    return aggregate_parts(roofline, ranked_keys(NAME_KEYS, by_rank))


def op_parts(roofline: pl.DataFrame, *, by_rank: bool = False) -> pl.DataFrame:
    """`aggregate_parts` of the kernels per launching op and bound: what `kernels_by_op` is
    finished from (`by_rank`: per rank too, a `rank` column first)."""
    read = ["rank", *_AGGREGATED] if by_rank else list(_AGGREGATED)
    return aggregate_parts(roofline.select(read).filter(pl.col("kind") == "kernel"), ranked_keys(OP_KEYS, by_rank))


def ranked_keys(keys: list[str], by_rank: bool) -> list[str]:
    """`keys`, after `rank` when the groups are per rank too."""
    return ["rank", *keys] if by_rank else keys


def kernels_by_name(roofline: pl.DataFrame) -> pl.DataFrame:
    """The roofline aggregated per kernel name and bound → `name, bound, count, total_ns, flops,
    bytes, intensity, achieved_flops_per_s, achieved_bytes_per_s, pct_of_roof, recoverable_ns`,
    `roof`, `peak_flops_per_s`, `peak_bytes_per_s`, `ridge_flops_per_byte`, `op` (the launching
    op of its first call that has one), and the `compute_dtype`, `tensor_core` and
    `no_roof_reason` of its first call, and for FP32 matmul-like kernels on the SIMT roof
    `tf32_peak_flops_per_s` and `tf32_roof_fraction` (achieved FLOP/s ÷ the TF32 tensor-core roof);
    longest total first. The column names are the JSON report's (`kernels[]`).

    Sums of time, FLOPs, bytes and recoverable time per group, and the ratios recomputed from the
    sums; `pct_of_roof` = Σ time at the roof / Σ time, each kernel at its own roof (achieved ÷
    peak when the group shares one roof); `roof` lists the group's roofs, and its peaks and ridge
    are null when there are several. A job's pooled table: `finish_parts` of its ranks'
    `name_parts`, concatenated."""
    return finish_parts(name_parts(roofline), NAME_KEYS)


def kernels_by_op(roofline: pl.DataFrame) -> pl.DataFrame:
    """The roofline's kernels aggregated per launching op and bound → the columns of
    `kernels_by_name` with `op` instead of `name`; longest total first (a job's: `finish_parts`
    of its ranks' `op_parts`)."""
    return finish_parts(op_parts(roofline), OP_KEYS)


def unmodeled_reasons(roofline: pl.DataFrame, *, by_rank: bool = False) -> pl.DataFrame:
    """GPU ops without a FLOP/byte model, per reason → `unmodeled_reason, count, duration_ns`,
    longest first (ties: the reason); `by_rank`: per rank too (a `rank` column first, ranks in order)."""
    keys = ranked_keys(["unmodeled_reason"], by_rank)
    return (
        roofline.select("regime", *keys, "duration_ns").filter(pl.col("regime") == "unmodeled")
        .group_by(keys).agg(pl.len().alias("count"), pl.col("duration_ns").sum())
        .sort([*keys[:-1], "duration_ns", "unmodeled_reason"], descending=[*(False for _ in keys[:-1]), True, False],
              nulls_last=True)
    )
