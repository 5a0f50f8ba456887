"""Rules over kernels on the roofline: FP32 GEMMs on CUDA cores, lower precision near the roof,
GEMM shapes the tensor cores pad, latency-bound kernels, fusible bandwidth-bound chains and
pageable host-to-device copies. Every number format advised is one the device has a peak for
(`capabilities`)."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.device_table import DEVICE_TABLE
from traceanalyze.analysis.findings.capabilities import capabilities
from traceanalyze.analysis.findings.finding import Finding, spans_of
from traceanalyze.analysis.findings.inputs import (
    FindingInputs,
    busy_ns,
    format_ns,
    format_share,
    short_kernel_name,
)
from traceanalyze.analysis.names import matching
from traceanalyze.analysis.op_tree import positions_in

NEAR_ROOF_FRACTION = 0.5  # compute-bound kernels at or above this fraction of their roof are "near the roof"
ALIGNMENT = {"fp16": 8, "bf16": 8, "fp8": 16}  # elements a tensor-core GEMM dimension should be a multiple of
# The next lower format on tensor cores, and how to switch to it.
LOWER_PRECISION = {
    "tf32": ("bf16", "bf16 autocast: `with torch.autocast(\"cuda\", dtype=torch.bfloat16):`"),
    "fp32": ("bf16", "bf16 autocast: `with torch.autocast(\"cuda\", dtype=torch.bfloat16):`"),
    "bf16": ("fp8", "FP8 matmuls: `torchao.float8.convert_to_float8_training(model)` or Transformer Engine "
                    "`te.fp8_autocast()`"),
    "fp16": ("fp8", "FP8 matmuls: `torchao.float8.convert_to_float8_training(model)` or Transformer Engine "
                    "`te.fp8_autocast()`"),
}


def _rate(value: float) -> str:
    """FLOP/s in TFLOP/s: 19.5, 156, 1979 (no exponent above 999)."""
    tera = value / 1e12
    return f"{tera:.3g} TFLOP/s" if tera < 999.5 else f"{tera:.0f} TFLOP/s"


def _top_kernel(rows: pl.DataFrame) -> str:
    names = rows.group_by("name").agg(pl.col("duration_ns").sum()).sort(["duration_ns", "name"], descending=[True, False])
    return short_kernel_name(names["name"][0])


def _time_at(rows: pl.DataFrame, peak_flops: pl.Expr | float) -> pl.Expr:
    """Per row: the time the work would take at `peak_flops` and the memory roof (the larger)."""
    flops_time = pl.col("flops") / peak_flops * 1e9
    bytes_time = pl.col("bytes") / pl.col("peak_bytes_per_s") * 1e9
    return pl.max_horizontal(flops_time, bytes_time.fill_null(0))


def _gain(rows: pl.DataFrame, ideal: pl.Expr) -> float:
    return float(rows.select((pl.col("duration_ns") - ideal).clip(lower_bound=0).sum()).item())


def fp32_simt_gemm(inputs: FindingInputs) -> list[Finding]:
    """FP32 matmul/conv work on the SIMT roof of a device with TF32 tensor cores."""
    if "tf32_peak_flops_per_s" not in inputs.roofline.columns or not capabilities(inputs.peaks).tf32:
        return []
    rows = inputs.roofline.filter(pl.col("tf32_peak_flops_per_s").is_not_null() & (pl.col("flops") > 0)
                                  & (pl.col("regime") != "latency"))  # too small for any roof to matter
    if rows.is_empty():
        return []
    total = int(rows["duration_ns"].sum())
    gain = _gain(rows, _time_at(rows, pl.col("tf32_peak_flops_per_s")))
    achieved = float(rows["flops"].sum()) / total * 1e9
    simt, tf32 = float(rows["peak_flops_per_s"].max()), float(rows["tf32_peak_flops_per_s"].max())
    bf16 = inputs.peaks.peak_flops("bf16", True) if capabilities(inputs.peaks).bf16 else None
    action = ("enable TF32: `torch.backends.cuda.matmul.allow_tf32 = True` (or "
              "`torch.set_float32_matmul_precision(\"high\")`) and `torch.backends.cudnn.allow_tf32 = True`")
    if bf16:
        action += f"; or bf16 autocast (roof {_rate(bf16)}): `with torch.autocast(\"cuda\", dtype=torch.bfloat16):`"
    return [Finding(
        id="fp32-simt-gemm", regime="compute", title="FP32 matmuls run on CUDA cores, not tensor cores",
        evidence=f"{rows.height} FP32 GEMM/conv kernel{'s' if rows.height != 1 else ''}, {format_ns(total)} = "
                 f"{format_share(total, busy_ns(inputs))} of GPU busy (top `{_top_kernel(rows)}`) at {_rate(achieved)}"
                 f" against the FP32 roof {_rate(simt)}; TF32 roof {_rate(tf32)}",
        action=action, gain_ns=gain, confidence="high", spans=spans_of(rows))]


def _near_roof_tensor_groups(inputs: FindingInputs) -> list[tuple[str, pl.DataFrame]]:
    """Compute-bound tensor-core kernels at ≥ NEAR_ROOF_FRACTION of their roof, by format (FP32 on
    tensor cores is TF32) → [(format, rows)]; none without peaks."""
    rows = inputs.roofline.filter((pl.col("regime") == "compute") & pl.col("tensor_core")
                                  & (pl.col("pct_of_roof") >= NEAR_ROOF_FRACTION) & (pl.col("flops") > 0))
    if "tf32_peak_flops_per_s" in rows.columns:
        rows = rows.filter(pl.col("tf32_peak_flops_per_s").is_null())  # fp32-simt-gemm covers those
    if rows.is_empty() or inputs.peaks is None:
        return []
    groups = []
    for dtype, group in rows.group_by("compute_dtype", maintain_order=True):
        current = dtype[0] or ""
        groups.append(("tf32" if current == "fp32" else current, group))
    return groups


def _has_lower_format(current: str, inputs: FindingInputs) -> bool:
    return current in LOWER_PRECISION and bool(getattr(capabilities(inputs.peaks), LOWER_PRECISION[current][0]))


def lower_precision(inputs: FindingInputs) -> list[Finding]:
    """Compute-bound tensor-core kernels near their roof: the next lower format this device has."""
    roof_fraction = "pct_of_roof"
    found = []
    for current, group in _near_roof_tensor_groups(inputs):
        if not _has_lower_format(current, inputs):
            continue  # this device has no faster format: say nothing rather than advise what it lacks
        lower, how = LOWER_PRECISION[current]
        lower_peak = inputs.peaks.peak_flops(lower, True)
        if lower_peak is None:
            continue
        total = int(group["duration_ns"].sum())
        gain = _gain(group, _time_at(group, lower_peak))
        if gain <= 0:
            continue
        mean_fraction = float((group[roof_fraction] * group["duration_ns"]).sum()) / total
        found.append(Finding(
            id=f"lower-precision-{current}", regime="compute",
            title=f"{current.upper()} matmuls near the roof: {lower.upper()} raises it "
                  f"{lower_peak / float(group['peak_flops_per_s'].max()):.3g}×",
            evidence=f"{group.height} compute-bound {current.upper()} kernel{'s' if group.height != 1 else ''}, "
                     f"{format_ns(total)} = {format_share(total, busy_ns(inputs))} of GPU busy (top "
                     f"`{_top_kernel(group)}`) at {mean_fraction:.0%} of the {current.upper()} roof; "
                     f"{lower.upper()} roof {_rate(lower_peak)}",
            action=f"{how} (check accuracy)", gain_ns=gain, confidence="medium", spans=spans_of(group)))
    return found


def bigger_gpu(inputs: FindingInputs) -> list[Finding]:
    """Compute-bound tensor-core kernels near their roof in a format this device has nothing faster
    than: only a GPU with a higher roof (or less work) makes them faster. The GPU named is the one of
    the same vendor with the highest roof for that format in the device table (an upper bound)."""
    found = []
    for current, group in _near_roof_tensor_groups(inputs):
        if _has_lower_format(current, inputs):
            continue  # lower-precision says what this device can still do
        here = float(group["peak_flops_per_s"].max())
        vendor = inputs.peaks.display_name.split()[0] if inputs.peaks and inputs.peaks.display_name else ""
        candidates = [(peak, device) for device in DEVICE_TABLE
                      if device.display_name.split()[0] == vendor and (peak := device.peak_flops(current, True))]
        if not candidates:
            continue
        best_peak, best = max(candidates, key=lambda candidate: candidate[0])
        if best_peak <= here:
            continue  # already the fastest we know
        ideal = pl.max_horizontal(pl.col("flops") / best_peak, pl.col("bytes") / best.memory_bandwidth_bytes_per_s) * 1e9
        gain = _gain(group, ideal)
        if gain <= 0:
            continue
        total = int(group["duration_ns"].sum())
        mean_fraction = float((group["pct_of_roof"] * group["duration_ns"]).sum()) / total
        found.append(Finding(
            id=f"bigger-gpu-{current}", regime="compute",
            title=f"{current.upper()} matmuls near this GPU's roof, with no faster format on it",
            evidence=f"{group.height} compute-bound {current.upper()} kernel{'s' if group.height != 1 else ''}, "
                     f"{format_ns(total)} = {format_share(total, busy_ns(inputs))} of GPU busy (top "
                     f"`{_top_kernel(group)}`) at {mean_fraction:.0%} of the {current.upper()} roof {_rate(here)}; "
                     f"{best.display_name}: {_rate(best_peak)} ({best_peak / here:.3g}×)",
            action=f"a GPU with a higher {current.upper()} roof (the highest in our table: {best.display_name}), "
                   "or less work per step (a smaller model, fewer or smaller matmuls)",
            gain_ns=gain, confidence="low", spans=spans_of(group)))
    return found


def gemm_alignment(inputs: FindingInputs) -> list[Finding]:
    """fp16/bf16 (fp8) GEMMs whose recorded dimensions are not multiples of 8 (16)."""
    caps = capabilities(inputs.peaks)
    rows = inputs.roofline.filter((pl.col("cost_model") == "matmul") & pl.col("compute_dtype").is_in(list(ALIGNMENT))
                                  & pl.col("op_id").is_not_null())
    if rows.is_empty() or not caps.tensor_cores:
        return []
    # the shapes of these ops only, found by position: a join against every op's hashes all of them
    # (370 k ops: 15 ms)
    ids = rows["op_id"].unique()
    shapes = pl.DataFrame([ids, inputs.cpu_ops["input_dims"].gather(positions_in(inputs.cpu_ops["op_id"])(ids))])
    rows = rows.join(shapes, on="op_id", how="left", maintain_order="left")
    # longest kernel first (ties by op id), so that the example is the costliest op, the same on every run
    ordered = (rows.sort("duration_ns", "op_id", descending=[True, False], nulls_last=True)
               .select("op_id", "compute_dtype", "input_dims").unique("op_id", maintain_order=True))
    ids = ordered.filter(_misaligned(ordered))["op_id"]
    if ids.is_empty():
        return []
    hit = rows.filter(pl.col("op_id").is_in(ids.implode()))
    total = int(hit["duration_ns"].sum())
    gain = float(hit["recoverable_ns"].fill_null(0).sum())
    example = ordered.filter(pl.col("op_id") == ids[0]).row(0, named=True)
    dims = [shape for shape in (example["input_dims"] or []) if shape is not None and len(shape) >= 2]
    multiple = ALIGNMENT[example["compute_dtype"]]
    bad = [size for size in sorted({size for shape in dims for size in shape[-2:] if size is not None}) if size % multiple]
    shape_text = " × ".join(str(list(shape)) for shape in dims)
    return [Finding(
        id="gemm-shape-alignment", regime="compute", title="GEMM dimensions the tensor cores must pad",
        evidence=f"{len(ids)} GEMM op{'s' if len(ids) != 1 else ''}, {format_ns(total)} (top `{_top_kernel(hit)}`); "
                 f"e.g. {shape_text}: {', '.join(map(str, bad))} not a multiple of {multiple}",
        action=f"pad the dimension to a multiple of {multiple} (vocabulary, hidden size, batch × sequence): e.g. "
               "`torch.nn.functional.pad` or choose sizes that are multiples of 64",
        gain_ns=gain, confidence="low", spans=spans_of(hit))]


def _misaligned(ops: pl.DataFrame) -> pl.Series:
    """Per op (`op_id, compute_dtype, input_dims`), whether one of the last two sizes of one of its
    input shapes of two dimensions or more is no multiple of its format's (`ALIGNMENT`): computed
    on the shapes, not per op in Python (a model repeats its GEMMs thousands of times)."""
    multiple = pl.col("compute_dtype").replace_strict(ALIGNMENT, return_dtype=pl.Int64)
    sizes = (
        ops.select(pl.int_range(pl.len()).alias("_op"), multiple.alias("_multiple"), pl.col("input_dims").alias("_shape"))
        .explode("_shape")
        .filter(pl.col("_shape").list.len() >= 2)
        .select("_op", "_multiple", pl.col("_shape").list.tail(2).alias("_size"))
        .explode("_size")
    )
    bad = sizes.filter(pl.col("_size") % pl.col("_multiple") != 0)["_op"].unique()
    return pl.int_range(ops.height, eager=True).is_in(bad.implode())


def latency_bound(inputs: FindingInputs) -> list[Finding]:
    """Kernels far below both roofs with little work: too small to fill the GPU."""
    rows = inputs.roofline.filter(pl.col("regime") == "latency")
    if rows.is_empty():
        return []
    total = int(rows["duration_ns"].sum())
    gain = float(rows["recoverable_ns"].fill_null(0).sum())
    return [Finding(
        id="latency-bound-kernels", regime="latency", title="Kernels too small to fill the GPU",
        evidence=f"{rows.height} latency-bound kernel{'s' if rows.height != 1 else ''}, {format_ns(total)} = "
                 f"{format_share(total, busy_ns(inputs))} of GPU busy (top `{_top_kernel(rows)}`), each under "
                 "2 µs of work at the roof",
        action="give each kernel more work: a bigger batch, batched ops (`torch.bmm`, `torch._foreach_*`), or fuse "
               "them with `torch.compile(model)`",
        gain_ns=gain, confidence="medium", spans=spans_of(rows))]


# the ops of a chain that torch.compile already made: Inductor's generated Triton kernels
# (`triton_poi_fused_…`, `triton_red_…`, `triton_per_…`, `triton_tem_…`) stand as their own ops
INDUCTOR_KERNEL_PREFIX = "triton_"


def fusion(inputs: FindingInputs) -> list[Finding]:
    """Chains of bandwidth-bound ops whose intermediates a fused kernel would keep on chip."""
    chains = inputs.fusion
    if chains.is_empty():
        return []
    chains = chains.filter(pl.col("time_saved_ns") > 0)
    if chains.is_empty():
        return []
    gain = float(chains["time_saved_ns"].sum())
    top = chains.sort("time_saved_ns", descending=True).row(0, named=True)
    where = f" under `{top['annotation']}`" if top["annotation"] else ""
    bandwidth = inputs.roofline.filter(pl.col("regime") == "bandwidth")
    if all(op.strip().startswith(INDUCTOR_KERNEL_PREFIX) for op in top["ops"].split("→")):
        action = ("these are Inductor's kernels already (the model is compiled): Inductor kept them apart; look for "
                  "graph breaks between them (`TORCH_LOGS=\"graph_breaks\"`), or merge them in a hand-written "
                  "Triton kernel")
    else:
        action = ("fuse them: `model = torch.compile(model)` (Inductor fuses pointwise/reduction chains), or a "
                  "hand-written Triton kernel")
    return [Finding(
        id="fuse-bandwidth-chain", regime="bandwidth", title="Memory-bound op chains a fused kernel would merge",
        evidence=f"{chains.height} chain{'s' if chains.height != 1 else ''}; top {top['ops']}{where}, "
                 f"{top['occurrences']}× ({top['kernels']} kernels, {format_ns(top['duration_ns'])}): "
                 f"{top['bytes_saved'] / 1e6:.3g} MB of intermediates, {format_ns(top['time_saved_ns'])} saved",
        action=action, gain_ns=gain, confidence="medium", spans=spans_of(bandwidth))]


def pageable_copies(inputs: FindingInputs) -> list[Finding]:
    """Host-to-device copies from pageable memory: they block the CPU and cannot overlap."""
    copies = inputs.roofline.select("kind", "name", "op_name", "start_ns", "end_ns", "duration_ns")
    rows = copies.filter((pl.col("kind") == "memcpy")
                         & pl.lit(matching(copies["name"], lambda name: name.str.contains("(?i)HtoD") & name.str.contains("(?i)Pageable"))))
    if rows.is_empty():
        return []
    total = int(rows["duration_ns"].sum())
    return [Finding(
        id="pageable-h2d", regime="memcpy", title="Host-to-device copies from pageable memory",
        evidence=f"{rows.height} pageable HtoD cop{'ies' if rows.height != 1 else 'y'}, {format_ns(total)} on the GPU "
                 f"(top op `{rows.sort('duration_ns', descending=True)['op_name'][0] or 'unknown'}`)",
        action="pin the host memory and copy asynchronously: `DataLoader(..., pin_memory=True)` or "
               "`tensor.pin_memory()`, then `.to(device, non_blocking=True)`",
        gain_ns=float(total), confidence="medium", spans=spans_of(rows))]
