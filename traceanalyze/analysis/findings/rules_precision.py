"""Rules over number formats: FP32 matmul/conv work on a device with a faster format (TF32/bf16 from
Ampere on, fp16 autocast on Volta/Turing), lower precision for tensor-core work near its roof, and
the bigger GPU when the device has nothing faster. Every format advised is one the device has a
peak for (`capabilities`); the API follows the run (training: GradScaler, FP8 training recipes;
inference: FP8 inference quantisation) and the vendor (tensor cores, matrix cores)."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.device_table import DEVICE_TABLE
from traceanalyze.analysis.findings.capabilities import capabilities
from traceanalyze.analysis.findings.finding import Finding, spans_of
from traceanalyze.analysis.findings.inputs import FindingInputs, busy_ns, format_ns, format_share
from traceanalyze.analysis.findings.kernel_common import gain_to, rate, time_at, top_kernel, weighted_fraction
from traceanalyze.analysis.findings.remedies import retime
from traceanalyze.analysis.findings.run_context import RunContext, run_context
from traceanalyze.analysis.names import contains

NEAR_ROOF_FRACTION = 0.5  # compute-bound kernels at or above this fraction of their roof are "near the roof"
FP32_MODELS = ("matmul", "conv", "attention")  # cost models whose FP32 work a faster format speeds up
# kernels whose names say their math is not FP32 (a bf16 `gemv2T_kernel_val<…, __nv_bfloat16, …>` whose op
# recorded no types): never told to leave FP32
NOT_FP32_KERNEL = r"(?i)bf16|bfloat16|fp16|half|__half|f16|e4m3|e5m2|fp8|int8|hgemm|s16816|h16816"
SAME_FRACTION = "each kernel runs at the same fraction of the {target} roof as it reached of its current one"


def fp32_faster_format(inputs: FindingInputs) -> list[Finding]:
    """FP32 matmul/conv work off the tensor cores, on a device with a faster format: TF32 (and bf16)
    from Ampere on, bf16 on AMD matrix cores, fp16 autocast on Volta/Turing (id `fp32-simt-gemm`)."""
    caps = capabilities(inputs.peaks)
    if inputs.peaks is None or not (caps.tf32 or caps.bf16 or caps.fp16):
        return []
    rows = inputs.roofline.filter(
        (pl.col("compute_dtype") == "fp32") & pl.col("cost_model").cast(pl.String).is_in(FP32_MODELS)
        & ~pl.col("tensor_core").fill_null(False) & (pl.col("flops") > 0) & (pl.col("regime") != "latency")
        & pl.col("peak_flops_per_s").is_not_null())
    if rows.is_empty():
        return []
    rows = rows.filter(~pl.lit(contains(rows["name"], NOT_FP32_KERNEL).fill_null(False)))
    if rows.is_empty():
        return []
    context = run_context(inputs)
    nvidia = context.family == "CUDA"
    target = "tf32" if caps.tf32 and nvidia else "bf16" if caps.bf16 else "fp16"
    peak = inputs.peaks.peak_flops(target, True)
    if not peak:
        return []
    total = int(rows["duration_ns"].sum())
    gain = gain_to(rows, time_at(peak))
    if gain <= 0:
        return []
    achieved = float(rows["flops"].sum()) / total * 1e9
    simt = float(rows["peak_flops_per_s"].max())
    convs = rows.filter(pl.col("cost_model").cast(pl.String) == "conv").height
    what = "GEMM/conv" if convs and convs < rows.height else "conv" if convs else "GEMM"
    same_fraction = pl.max_horizontal(pl.col("duration_ns") * pl.col("peak_flops_per_s") / peak,
                                      (pl.col("bytes") / pl.col("peak_bytes_per_s") * 1e9).fill_null(0))
    return [Finding(
        id="fp32-simt-gemm", regime="compute",
        title=f"FP32 {'convolutions' if what == 'conv' else 'matmuls'} run on the SIMT units, not the {context.cores}",
        evidence=f"{rows.height} FP32 {what} kernel{'s' if rows.height != 1 else ''}, {format_ns(total)} = "
                 f"{format_share(total, busy_ns(inputs))} of {context.device} busy (top `{top_kernel(rows)}`) at "
                 f"{rate(achieved)} against the FP32 roof {rate(simt)}; {target.upper()} roof {rate(peak)} "
                 f"({peak / simt:.3g}×)",
        action=_faster_format_action(target, context, inputs), gain_ns=gain,
        confidence="high" if target == "tf32" else "medium", spans=spans_of(rows),
        remedies=(retime(rows, same_fraction, SAME_FRACTION.format(target=target.upper())),))]


def _faster_format_action(target: str, context: RunContext, inputs: FindingInputs) -> str:
    device = context.torch_device
    if target == "tf32":
        action = ("enable TF32: `torch.backends.cuda.matmul.allow_tf32 = True` (or "
                  "`torch.set_float32_matmul_precision(\"high\")`) and `torch.backends.cudnn.allow_tf32 = True`")
        bf16 = inputs.peaks.peak_flops("bf16", True) if capabilities(inputs.peaks).bf16 else None
        if bf16:
            action += f"; or bf16 autocast (roof {rate(bf16)}): `with torch.autocast(\"cuda\", dtype=torch.bfloat16):`"
        return action
    if target == "bf16":
        return (f"bf16 autocast on the {context.cores}: `with torch.autocast(\"{device}\", dtype=torch.bfloat16):` "
                "(check accuracy)")
    action = (f"fp16 autocast on the {context.cores}: `with torch.autocast(\"{device}\", dtype=torch.float16):`"
              " (the fastest format of this device)")
    if context.training:
        action += ("; in training scale the loss: `scaler = torch.amp.GradScaler(\"cuda\")`, "
                   "`scaler.scale(loss).backward()`, `scaler.step(optimizer)`, `scaler.update()`")
    return action + "; channel and matrix sizes that are multiples of 8 keep the tensor cores fed"


# The next lower format on tensor cores, and how to switch to it (training, inference).
FP8_TRAINING = ("FP8 matmuls: `torchao.float8.convert_to_float8_training(model)` or Transformer Engine "
                "`te.fp8_autocast()`")
FP8_INFERENCE = ("FP8 inference: `torchao.quantization.quantize_(model, "
                 "torchao.quantization.Float8DynamicActivationFloat8WeightConfig())`")
BF16_AUTOCAST = "bf16 autocast: `with torch.autocast(\"cuda\", dtype=torch.bfloat16):`"
LOWER_PRECISION = {"tf32": "bf16", "fp32": "bf16", "bf16": "fp8", "fp16": "fp8"}


def _lower_how(lower: str, context: RunContext) -> str:
    if lower == "bf16":
        return BF16_AUTOCAST.replace("\"cuda\"", f"\"{context.torch_device}\"")
    return FP8_TRAINING if context.training else FP8_INFERENCE


def near_roof_tensor_groups(inputs: FindingInputs) -> list[tuple[str, pl.DataFrame]]:
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
    return current in LOWER_PRECISION and bool(getattr(capabilities(inputs.peaks), LOWER_PRECISION[current]))


def lower_precision(inputs: FindingInputs) -> list[Finding]:
    """Compute-bound tensor-core kernels near their roof: the next lower format this device has."""
    found = []
    context = run_context(inputs)
    for current, group in near_roof_tensor_groups(inputs):
        if not _has_lower_format(current, inputs):
            continue  # this device has no faster format: say nothing rather than advise what it lacks
        lower = LOWER_PRECISION[current]
        lower_peak = inputs.peaks.peak_flops(lower, True)
        if lower_peak is None:
            continue
        total = int(group["duration_ns"].sum())
        gain = gain_to(group, time_at(lower_peak))
        if gain <= 0:
            continue
        same_fraction = pl.max_horizontal(pl.col("duration_ns") * pl.col("peak_flops_per_s") / lower_peak,
                                          (pl.col("bytes") / pl.col("peak_bytes_per_s") * 1e9).fill_null(0))
        found.append(Finding(
            id=f"lower-precision-{current}", regime="compute",
            title=f"{current.upper()} matmuls near the roof: {lower.upper()} raises it "
                  f"{lower_peak / float(group['peak_flops_per_s'].max()):.3g}×",
            evidence=f"{group.height} compute-bound {current.upper()} kernel{'s' if group.height != 1 else ''}, "
                     f"{format_ns(total)} = {format_share(total, busy_ns(inputs))} of {context.device} busy (top "
                     f"`{top_kernel(group)}`) at {weighted_fraction(group):.0%} of the {current.upper()} roof; "
                     f"{lower.upper()} roof {rate(lower_peak)}" + ("" if context.training or lower == "bf16" else
                                                                   "; an inference run (no backward recorded)"),
            action=f"{_lower_how(lower, context)} (check accuracy)", gain_ns=gain, confidence="medium",
            spans=spans_of(group),
            remedies=(retime(group, same_fraction, SAME_FRACTION.format(target=lower.upper())),)))
    return found


def bigger_gpu(inputs: FindingInputs) -> list[Finding]:
    """Compute-bound tensor-core kernels near their roof in a format this device has nothing faster
    than: only a GPU with a higher roof (or less work) makes them faster. The GPU named is the one of
    the same vendor with the highest roof for that format in the device table (an upper bound)."""
    found = []
    context = run_context(inputs)
    for current, group in near_roof_tensor_groups(inputs):
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
        ideal = pl.max_horizontal(pl.col("flops") / best_peak,
                                  pl.col("bytes") / best.memory_bandwidth_bytes_per_s) * 1e9
        gain = gain_to(group, ideal)
        if gain <= 0:
            continue
        total = int(group["duration_ns"].sum())
        same_fraction = pl.max_horizontal(pl.col("duration_ns") * pl.col("peak_flops_per_s") / best_peak,
                                          pl.col("bytes") / best.memory_bandwidth_bytes_per_s * 1e9)
        found.append(Finding(
            id=f"bigger-gpu-{current}", regime="compute",
            title=f"{current.upper()} matmuls near this GPU's roof, with no faster format on it",
            evidence=f"{group.height} compute-bound {current.upper()} kernel{'s' if group.height != 1 else ''}, "
                     f"{format_ns(total)} = {format_share(total, busy_ns(inputs))} of {context.device} busy (top "
                     f"`{top_kernel(group)}`) at {weighted_fraction(group):.0%} of the {current.upper()} roof "
                     f"{rate(here)}; {best.display_name}: {rate(best_peak)} ({best_peak / here:.3g}×)",
            action=f"a GPU with a higher {current.upper()} roof (the highest in our table: {best.display_name}), "
                   "or less work per step (a smaller model, fewer or smaller matmuls)",
            gain_ns=gain, confidence="low", spans=spans_of(group),
            remedies=(retime(group, same_fraction, f"on {best.display_name}, " +
                             SAME_FRACTION.format(target=current.upper())),)))
    return found
