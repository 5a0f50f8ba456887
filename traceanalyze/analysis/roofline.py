"""Per-kernel FLOPs, bytes and arithmetic intensity against the device roofline.

Each GPU op gets the cost of the CPU op that launched it (`kernel_ops`). An op that launches
several kernels spreads its FLOPs and bytes over them in proportion to their durations, so all of
its kernels share the op's arithmetic intensity. memcpy/memset take their bytes from their own
events; NCCL/RCCL kernels are `communication`. Definitions: docs/roofline.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.devices import DevicePeaks, device_peaks, math_unit_from_kernel_name, peaks_from_overrides
from traceanalyze.analysis.costs.autograd_pairs import recover_costs
from traceanalyze.analysis.costs.conv_geometry import recover_forward_costs
from traceanalyze.analysis.costs.registry import FAMILIES
from traceanalyze.analysis.costs.table import OP_COST_INPUTS, op_costs
from traceanalyze.analysis.device_match import device_file_mismatches, matched_devices
from traceanalyze.analysis.kernel_ops import kernel_ops
from traceanalyze.analysis.names import contains, starts_with
from traceanalyze.analysis.op_tree import OpTree
from traceanalyze.errors import ConfigError
from traceanalyze.model import Trace
from traceanalyze.scalar_columns import constants_as_scalars, varying_keys

REGIMES = ("compute", "bandwidth", "latency", "communication", "memcpy", "unmodeled")
ON_ROOFLINE = ("compute", "bandwidth", "latency")  # kernels with FLOPs, bytes and a roof
# A kernel is latency-bound when its work at the roof would take under LATENCY_WORK_NS (too little
# to fill the GPU: starting and draining a grid takes about that long) and it reaches under
# LATENCY_ROOF_SHARE of the roof that binds it (far below both roofs). docs/roofline.md.
LATENCY_WORK_NS = 2_000
LATENCY_ROOF_SHARE = 0.25
# how an op's cost was split among its kernels, read while the roofline is made and not kept:
# the op's FLOPs and bytes, its kernels' time, each kernel's share of time and of FLOPs
COST_SPLIT_COLUMNS = ("gpu_op_id", "op_flops", "op_bytes", "op_kernel_ns", "share", "flops_share")
# Helper kernels of an op (layout changes, split-K reductions, fills, the sorts and scans of an
# embedding backward) move data but do not do the op's FLOPs: they get their share of its bytes,
# the other kernels all of its FLOPs.
HELPER_KERNEL = (r"(?i)nchwToNhwc|nhwcToNchw|nchw2nhwc|nhwc2nchw|transpose|convertTensor|convert_kernel|"
                 r"splitKreduce|splitK_reduce|splitKReduction|FillFunctor|fill_kernel|memset|RadixSort|DeviceScan")
Regime = pl.Enum(REGIMES)
TENSOR_CORE_MODELS = tuple(f.name for f in FAMILIES if f.tensor_core)
LOW_PRECISION = ("fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp4", "int8")


@dataclass(frozen=True)
class PeakChoice:
    """The peaks used for one (rank, device), and where they came from."""

    rank: int
    device: int
    peaks: DevicePeaks | None
    source: str  # "datasheet", "device file", "command line", "unknown"
    device_name: str | None


@dataclass(frozen=True)
class PeakOverrides:
    """What the user supplied instead of (or over) the datasheet table."""

    device_file: DevicePeaks | None = None
    device_file_name: str | None = None
    peak_flops: float | None = None
    peak_bandwidth: float | None = None
    force_device_file: bool = False  # use a device file even when it describes another device


def choose_peaks(trace: Trace, overrides: PeakOverrides | None = None,
                 matched: pl.DataFrame | None = None) -> list[PeakChoice]:
    """Peaks for every device with GPU work: a device file when given, else the datasheet entry
    matching the trace's deviceProperties (`matched_devices`: ids matched; a missing or generic
    name resolved by SM/CU count and memory); `--peak-flops`/`--peak-bandwidth` then replace those
    figures (both are needed for a device we do not know). `matched`: `matched_devices(trace)`
    when the caller has it."""
    overrides = overrides or PeakOverrides()
    named = matched_devices(trace) if matched is None else matched
    if overrides.device_file is not None and not overrides.force_device_file:
        mismatches = device_file_mismatches(trace, overrides.device_file)
        if mismatches:
            raise ConfigError(
                f"{overrides.device_file_name or 'device file'}: describes another device: {mismatches[0]}"
                + (f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else "")
                + "; use a device file of this device, or --force-device-file to use it anyway"
            )
    choices = []
    for row in named.iter_rows(named=True):
        if overrides.device_file is not None:
            base, source = overrides.device_file, f"device file {overrides.device_file_name}"
        else:
            described = row["name"] or row["num_sms"] or row["total_memory_bytes"]
            base = device_peaks(row["name"] or "", row["num_sms"], row["total_memory_bytes"]) if described else None
            source = "datasheet" if base else "unknown"
        peaks = base
        if overrides.peak_flops is not None or overrides.peak_bandwidth is not None:
            if base is None and (overrides.peak_flops is None or overrides.peak_bandwidth is None):
                peaks, source = None, "unknown"  # a single figure cannot make a roofline
            else:
                peaks = peaks_from_overrides(
                    peak_flops=overrides.peak_flops, peak_bandwidth=overrides.peak_bandwidth, base=base
                )
                source = "command line" if base is None else f"command line over {source}"
        choices.append(PeakChoice(row["rank"], row["device"], peaks, source, row["name"]))
    return choices


def _op_costs_for(trace: Trace, op_ids: pl.Series) -> pl.DataFrame:
    inputs = trace.cpu_ops.select(
        [name for name in OP_COST_INPUTS if name in trace.cpu_ops.columns]
    )  # filtered: copied
    return op_costs(inputs.filter(pl.col("op_id").is_in(op_ids.drop_nulls().unique().implode())))


def kernel_roofline(trace: Trace, overrides: PeakOverrides | None = None, *,
                    choices: list[PeakChoice] | None = None, tree: OpTree | None = None) -> pl.DataFrame:
    """One row per GPU op → the `kernel_ops` columns (but `gpu_op_id`; `bytes` as `copy_bytes`)
    plus `cost_op_id`, `flops`, `bytes`, `cost_model`, `compute_dtype`, `tensor_core`,
    `helper_kernel`, `peak_flops_per_s`, `peak_bytes_per_s`, `intensity` (FLOP/byte),
    `ridge_flops_per_byte`, `achieved_flops_per_s`, `achieved_bytes_per_s`, `pct_of_roof` (a
    fraction of the roof that binds it), `tf32_peak_flops_per_s`, `tf32_roof_fraction`,
    `ideal_ns`, `recoverable_ns`, `regime`, `roof` and `unmodeled_reason`. How each op's cost was
    split among its kernels (`COST_SPLIT_COLUMNS`) is not kept. `choices`: `choose_peaks(trace,
    overrides)`, `tree`: the op tree of `trace.cpu_ops`, when the caller has them already."""
    tree = tree or OpTree.of(trace.cpu_ops)
    ops = _labels_categorical(kernel_ops(trace, tree).rename({"bytes": "copy_bytes"}))
    costs = recover_forward_costs(_op_costs_for(trace, ops["op_id"]), trace.cpu_ops)
    costs = recover_costs(costs, trace.cpu_ops)
    owners, costs = cost_owners(ops, trace.cpu_ops, costs, tree)
    ops = ops.join(owners, on="op_id", how="left", maintain_order="left").with_columns(
        pl.coalesce("cost_op_id", "op_id").alias("cost_op_id")
    )
    costs = _labels_categorical(costs.rename({"op_id": "cost_op_id", "flops": "op_flops", "bytes": "op_bytes"}))
    kernels_per_op = (
        ops.select("cost_op_id", "kind", "duration_ns")
        .filter(pl.col("cost_op_id").is_not_null() & (pl.col("kind") == "kernel"))
        .group_by("cost_op_id")
        .agg(pl.col("duration_ns").sum().alias("op_kernel_ns"), pl.len().alias("op_kernels"))
    )
    choices = choose_peaks(trace, overrides) if choices is None else choices
    frame = (
        ops.join(costs, on="cost_op_id", how="left", maintain_order="left")
        .join(kernels_per_op, on="cost_op_id", how="left", maintain_order="left")
        .with_columns(
            # kernels recorded as 0 ns (integer-µs traces) share their op's cost evenly
            pl.when(pl.col("op_kernel_ns") > 0).then(pl.col("duration_ns") / pl.col("op_kernel_ns"))
            .otherwise(1 / pl.col("op_kernels")).alias("share"),
        )
        .drop("op_kernels")
    )
    frame = _with_helper_kernels(frame)
    is_kernel = pl.col("kind") == "kernel"
    frame = frame.with_columns(
        pl.when(is_kernel).then(pl.col("op_flops") * pl.col("flops_share"))
        .when(pl.col("kind").is_in(["memcpy", "memset"])).then(pl.lit(0.0))
        .alias("flops"),
        pl.when(is_kernel).then(pl.col("op_bytes") * pl.col("share"))
        .when(pl.col("kind").is_in(["memcpy", "memset"])).then(pl.col("copy_bytes").cast(pl.Float64))
        .alias("bytes"),
    )
    frame = _with_tensor_core(frame.drop(COST_SPLIT_COLUMNS))  # the steps of the cost split go (a fifth of the frame)
    frame = _with_peaks(frame, choices)
    # what a trace does not record (graph ids, collectives, costs of unmodeled ops), once
    return constants_as_scalars(_labels_categorical(_with_regime(frame)), nulls_only=True)


# the per-op text columns, of a few distinct values each, kept as categoricals from where they are
# first per op: as strings made by `when … then(<literal>)` each row held its text, and the column
# every branch's (1 GB a100-cudagraph: 51 of the roofline's 92 MB)
LABEL_COLUMNS = (
    "op_source",
    "no_op_reason",
    "cost_note",
    "compute_dtype",
    "unmodeled_reason",
    "roof",
    "no_roof_reason",
)


def _labels_categorical(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with those of `LABEL_COLUMNS` it has as categoricals."""
    return frame.with_columns(pl.col(name).cast(pl.Categorical) for name in LABEL_COLUMNS if name in frame.columns)


def _with_helper_kernels(frame: pl.DataFrame) -> pl.DataFrame:
    """`helper_kernel` (a kernel of an op with FLOPs whose name is a layout change, split-K
    reduction or fill, `HELPER_KERNEL`, while the op has other kernels) and `flops_share`: the
    share of its op's FLOPs it carries: 0 for a helper; for the others their duration over the
    op's non-helper kernel time (evenly when that is 0). Bytes keep `share` (all kernels)."""
    frame = _helper_named(frame)
    # an op without a helper kernel gives each of its kernels `share` (its non-helper time is all
    # its kernel time): only the ops with one, or with a kernel of no name (neither helper nor
    # not), are grouped
    with_helpers = frame.filter(pl.col("helper_kernel").fill_null(True)).select("cost_op_id").unique()
    if with_helpers.is_empty():
        return frame.with_columns(pl.col("helper_kernel").and_(False), pl.col("share").alias("flops_share")).drop(
            "_main"
        )
    return _helper_shares(frame, frame.join(with_helpers, on="cost_op_id", how="semi"))


def _helper_named(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with `helper_kernel` (its name is a helper's, of an op with FLOPs) and `_main`."""
    kernel = (pl.col("kind") == "kernel") & pl.col("cost_op_id").is_not_null()
    named = pl.lit(contains(frame["name"], HELPER_KERNEL)) & kernel & (pl.col("op_flops").fill_null(0) > 0)
    return frame.with_columns(named.alias("helper_kernel"), (kernel & ~named).alias("_main"))


def _helper_shares(frame: pl.DataFrame, grouped: pl.DataFrame) -> pl.DataFrame:
    """`_with_helper_kernels` of `frame` (`_helper_named`), its ops' non-helper time from the rows
    of `grouped` (the rows of the ops that need it; any other op keeps `share`)."""
    per_op = grouped.group_by("cost_op_id").agg(
        pl.col("duration_ns").filter(pl.col("_main")).sum().alias("_main_ns"),
        pl.col("_main").sum().alias("_mains"),
    )
    frame = frame.join(per_op, on="cost_op_id", how="left", nulls_equal=False, maintain_order="left")
    helper = pl.col("helper_kernel") & (pl.col("_mains") > 0)
    main_share = (pl.when(pl.col("_main_ns") > 0).then(pl.col("duration_ns") / pl.col("_main_ns"))
                  .otherwise(1 / pl.col("_mains")))
    return frame.with_columns(
        helper.fill_null(False).alias("helper_kernel"),
        pl.when(helper)
        .then(0.0)
        .when(pl.col("_mains") > 0)
        .then(main_share)
        .otherwise(pl.col("share"))
        .alias("flops_share"),
    ).drop("_main", "_main_ns", "_mains")


LIFTABLE_REASONS = ("shape arguments incomplete", "no shapes recorded")


def cost_owners(ops: pl.DataFrame, cpu_ops: pl.DataFrame, costs: pl.DataFrame,
                tree: OpTree | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Which op's cost each launching op's kernels carry → (`op_id, cost_op_id`, costs of every
    op named there).

    A leaf op whose recorded arguments are incomplete (e.g. `aten::cudnn_convolution_backward_input`
    in old traces) hands its kernels to its nearest `aten::` ancestor that has a model (there
    `aten::cudnn_convolution_backward`, which records all three shapes). All kernels under that
    ancestor then share the ancestor's cost, including those of siblings that had a model of their
    own, so that nothing is counted twice. `tree`: the op tree of `cpu_ops` when the caller has it.
    """
    schema = {"op_id": pl.Int64, "cost_op_id": pl.Int64}
    incomplete = costs.filter(pl.col("unmodeled_reason").str.starts_with(LIFTABLE_REASONS[0])
                              | pl.col("unmodeled_reason").str.starts_with(LIFTABLE_REASONS[1]))
    if incomplete.is_empty():
        return pl.DataFrame(schema=schema), costs
    tree = tree or OpTree.of(cpu_ops)
    stuck = tree.positions(incomplete["op_id"].unique())
    # every aten:: op above an incomplete one, and which of them have a model
    above = tree.ancestors(stuck)
    above = above.filter(starts_with(cpu_ops["name"].gather(above), "aten::").fill_null(False))
    ancestor_costs = op_costs(cpu_ops[above])
    modelled = tree.mask(tree.positions(ancestor_costs.filter(pl.col("unmodeled_reason").is_null())["op_id"]))
    # each incomplete op's nearest modelled op above it owns the kernels under it
    nearest = tree.nearest(tree.parent.gather(stuck), modelled)
    is_owner = tree.mask(nearest.filter(nearest >= 0))
    if not is_owner.any():
        return pl.DataFrame(schema=schema), costs
    launching = tree.positions(ops["op_id"].unique())
    owner = tree.nearest(launching, is_owner)  # each launching op's nearest owner, itself included
    reached = owner >= 0
    mapping = pl.DataFrame({"op_id": tree.ids.gather(launching.filter(reached)),
                            "cost_op_id": tree.ids.gather(owner.filter(reached))}, schema=schema)
    owners = tree.ids.gather(is_owner.arg_true()).implode()
    lifted = ancestor_costs.filter(pl.col("op_id").is_in(owners))
    return mapping, pl.concat([costs.filter(~pl.col("op_id").is_in(owners)), lifted], how="vertical_relaxed")


def _with_tensor_core(frame: pl.DataFrame) -> pl.DataFrame:
    units = {name: math_unit_from_kernel_name(name) for name in frame["name"].unique(maintain_order=True).to_list()}
    unit = pl.col("name").replace_strict(units, default=None, return_dtype=pl.String)
    guess = pl.col("cost_model").cast(pl.String).is_in(TENSOR_CORE_MODELS) & pl.col("compute_dtype").is_in(
        LOW_PRECISION
    )
    return frame.with_columns(
        pl.when(unit == "tensor")
        .then(True)
        .when(unit == "simt")
        .then(False)
        .otherwise(guess.fill_null(False))
        .alias("tensor_core")
    )


def _flops_roof_label(entry: tuple[str, str] | None) -> str | None:
    """("tf32", "tensor") → "TF32 TC", ("fp32", "simt") → "FP32 SIMT", a single user roof → "FLOP/s"."""
    if entry is None:
        return None
    dtype, unit = entry
    return "FLOP/s" if unit == "default" else f"{dtype.upper()} {'TC' if unit == 'tensor' else 'SIMT'}"


def _with_peaks(frame: pl.DataFrame, choices: list[PeakChoice]) -> pl.DataFrame:
    """The peak FLOP/s that applies to each GPU op (its device, its math dtype, tensor cores or
    not; `DevicePeaks.peak_flops` holds the fallbacks), the name of that roof, the device's
    memory bandwidth and its host link."""
    by_device = {(c.rank, c.device): c.peaks for c in choices}
    combos = frame.select("rank", "device", "compute_dtype", "tensor_core").unique()
    keys = varying_keys(combos, ("rank", "device")) + ["compute_dtype", "tensor_core"]  # one device: not keyed
    rows = []
    for rank, device, dtype, tensor_core in combos.iter_rows():
        peaks = by_device.get((rank, device))
        rows.append({
            "rank": rank, "device": device, "compute_dtype": dtype, "tensor_core": tensor_core,
            "peak_flops_per_s": peaks.peak_flops(dtype, bool(tensor_core)) if peaks and dtype else None,
            "flops_roof": _flops_roof_label(peaks.flops_roof(dtype, bool(tensor_core))) if peaks and dtype else None,
            "peak_bytes_per_s": peaks.memory_bandwidth_bytes_per_s if peaks else None,
            "memory_roof": peaks.memory_kind if peaks else None,
            "host_link": peaks.host_link if peaks else None,
            "host_link_bytes_per_s": peaks.host_link_bytes_per_s if peaks else None,
            "tf32_peak_flops_per_s": _tf32_roof(peaks, dtype, tensor_core),
        })
    lookup = pl.DataFrame(
        rows,
        schema={
            "rank": pl.Int32,
            "device": pl.Int32,
            "compute_dtype": frame.schema["compute_dtype"],
            "tensor_core": pl.Boolean,
            "peak_flops_per_s": pl.Float64,
            "flops_roof": pl.Categorical(),
            "peak_bytes_per_s": pl.Float64,
            "memory_roof": pl.Categorical(),
            "host_link": pl.Categorical(),
            "host_link_bytes_per_s": pl.Float64,
            "tf32_peak_flops_per_s": pl.Float64,
        },
    )
    seconds = pl.col("duration_ns") / 1e9
    return (
        frame.join(
            lookup.select(*keys, pl.exclude("rank", "device", "compute_dtype", "tensor_core")),
            on=keys,
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        .with_columns(
            pl.when(pl.col("bytes") > 0).then(pl.col("flops") / pl.col("bytes")).alias("intensity"),
            (pl.col("peak_flops_per_s") / pl.col("peak_bytes_per_s")).alias("ridge_flops_per_byte"),
            pl.when(seconds > 0).then(pl.col("flops") / seconds).alias("achieved_flops_per_s"),
            pl.when(seconds > 0).then(pl.col("bytes") / seconds).alias("achieved_bytes_per_s"),
        )
        .with_columns(  # the TF32 roof only for matmul-like work that can take it
            pl.when(pl.col("cost_model").cast(pl.String).is_in(TENSOR_CORE_MODELS))
            .then(pl.col("tf32_peak_flops_per_s"))
            .alias("tf32_peak_flops_per_s")
        )
        .with_columns((pl.col("achieved_flops_per_s") / pl.col("tf32_peak_flops_per_s")).alias("tf32_roof_fraction"))
    )


def _tf32_roof(peaks: DevicePeaks | None, dtype: str | None, tensor_core: bool | None) -> float | None:
    """The TF32 tensor-core peak for FP32 math judged against the FP32 SIMT roof, on a device that
    has one (what `torch.backends.cuda.matmul.allow_tf32` would give); None otherwise."""
    if peaks is None or not dtype or tensor_core or peaks.flops_roof(dtype, False) != ("fp32", "simt"):
        return None
    return peaks.flops_per_s.get(("tf32", "tensor"))


HOST_COPY = r"HtoD|DtoH|HtoH"  # memcpy names of copies that cross the host link
PEER_COPY = r"PtoP"


def _roof(frame: pl.DataFrame) -> pl.DataFrame:
    """Which roof each GPU op's `pct_of_roof` is against → `roof` ("BF16 TC", "HBM", "PCIe Gen4
    x16") and `no_roof_reason` where there is none. Host↔device copies are judged against the
    host link, not device memory: `peak_bytes_per_s` is the link's for them."""
    regime = pl.col("regime")
    host = (pl.col("kind") == "memcpy") & pl.lit(contains(frame["name"], HOST_COPY))
    peer = (pl.col("kind") == "memcpy") & pl.lit(contains(frame["name"], PEER_COPY))
    return frame.with_columns(
        pl.when(host)
        .then(pl.col("host_link_bytes_per_s"))
        .when(peer)
        .then(None)
        .otherwise(pl.col("peak_bytes_per_s"))
        .alias("peak_bytes_per_s"),
        pl.when((regime == "compute") | ((regime == "latency") & (pl.col("binding_roof") == "compute")))
        .then(pl.col("flops_roof"))
        .when(host)
        .then(pl.col("host_link"))
        .when(peer)
        .then(None)
        .when(regime.is_in(["bandwidth", "latency", "memcpy"]))
        .then(pl.col("memory_roof"))
        .alias("roof"),
        pl.when(host & pl.col("host_link").is_null() & pl.col("memory_roof").is_not_null())
        .then(pl.lit("host↔device copy: this device's host-link bandwidth is not in the table"))
        .when(peer)
        .then(pl.lit("peer-to-peer copy: the peer link's bandwidth is not in the table"))
        .alias("no_roof_reason"),
    ).drop("flops_roof", "memory_roof", "host_link", "host_link_bytes_per_s")


def _with_regime(frame: pl.DataFrame) -> pl.DataFrame:
    kind = pl.col("kind")
    modelled = pl.col("flops").is_not_null() & pl.col("bytes").is_not_null() & (pl.col("bytes") > 0)
    has_peaks = pl.col("peak_flops_per_s").is_not_null() & pl.col("peak_bytes_per_s").is_not_null()
    ideal = pl.max_horizontal(
        pl.col("flops") / pl.col("peak_flops_per_s"), pl.col("bytes") / pl.col("peak_bytes_per_s")
    ) * 1e9
    binding = (
        pl.when(pl.col("intensity") >= pl.col("ridge_flops_per_byte"))
        .then(pl.lit("compute"))
        .otherwise(pl.lit("bandwidth"))
    )
    latency = (ideal < LATENCY_WORK_NS) & (ideal < LATENCY_ROOF_SHARE * pl.col("duration_ns"))
    regime = (
        pl.when(kind == "communication").then(pl.lit("communication"))
        .when(kind.is_in(["memcpy", "memset"])).then(pl.lit("memcpy"))
        .when(modelled & has_peaks & latency).then(pl.lit("latency"))
        .when(modelled & has_peaks).then(binding)
        .otherwise(pl.lit("unmodeled"))
        .cast(Regime)
    )
    reason = (
        pl.when(kind.is_in(["communication", "memcpy", "memset"]))
        .then(None)
        .when(pl.col("no_op_reason").is_not_null())
        .then(pl.col("no_op_reason"))
        .when(pl.col("unmodeled_reason").is_not_null())
        .then(pl.col("unmodeled_reason"))
        .when(~modelled)
        .then(pl.lit("no FLOP/byte model for its op"))
        .when(pl.col("peak_bytes_per_s").is_null())
        .then(pl.lit("device peaks unknown (give --peak-flops and --peak-bandwidth)"))
        .when(~has_peaks)
        .then(pl.format("no peak for dtype {} on this device", pl.col("compute_dtype")))
    )
    has_model = (kind.is_in(["memcpy", "memset"]) | ((kind == "kernel") & modelled)).fill_null(False)
    roofed = pl.col("regime").is_in(ON_ROOFLINE)
    return (
        frame.with_columns(
            regime.alias("regime"),
            binding.alias("binding_roof"),
            reason.alias("unmodeled_reason"),
            has_model.alias("modelled"),
        )
        .pipe(_roof)
        .with_columns(
            pl.when(roofed & (pl.col("binding_roof") == "compute"))
            .then(pl.col("achieved_flops_per_s") / pl.col("peak_flops_per_s"))
            .when(roofed | (pl.col("regime") == "memcpy"))
            .then(pl.col("achieved_bytes_per_s") / pl.col("peak_bytes_per_s"))
            .alias("pct_of_roof"),
            pl.when(roofed).then(ideal).alias("ideal_ns"),
        )
        .with_columns(
            pl.when(pl.col("ideal_ns").is_not_null())
            .then(pl.max_horizontal(pl.col("duration_ns") - pl.col("ideal_ns"), pl.lit(0.0)))
            .alias("recoverable_ns")
        )
        .drop("binding_roof")
    )
