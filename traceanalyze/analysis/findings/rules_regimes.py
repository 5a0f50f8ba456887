"""The biggest lever of each regime, found in the kernels: attention written as matmul → softmax →
matmul (one SDPA kernel instead), layout conversions around convolutions (channels_last), an
optimizer step of many small kernels (foreach / fused), and kernels far below their roof that hold
a large share of the window. Each models its action as a `Remedy` (docs/findings.md)."""

from __future__ import annotations

import math

import polars as pl

from traceanalyze.analysis.findings.capabilities import capabilities
from traceanalyze.analysis.findings.finding import Finding, spans_of
from traceanalyze.analysis.findings.inputs import FindingInputs, busy_ns, format_ns, format_share
from traceanalyze.analysis.findings.kernel_common import top_kernel, weighted_fraction
from traceanalyze.analysis.findings.remedies import merge, retime
from traceanalyze.analysis.findings.run_context import inductor_share, run_context
from traceanalyze.analysis.names import contains, starts_with
from traceanalyze.analysis.op_tree import positions_in

# --- unfused attention -------------------------------------------------------------------------

# Fraction of the tensor-core roof an SDPA kernel reaches on the chain's FLOPs: FlashAttention-2
# reaches 50-73% of the A100's BF16 peak in the forward pass and 35-50% of the H100's (Dao 2023,
# "FlashAttention-2", Fig. 5-7); FlashAttention-3 75% of the H100's. 0.5 is the middle of those.
SDPA_EFFICIENCY = 0.5
ATTENTION_MAX_BETWEEN = 4  # kernels allowed between a matmul and the softmax (scale, mask, dropout, copies)
ATTENTION_MAX_AFTER = 2  # and between the softmax and the second matmul (dropout)
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def _attention_chains(rows: pl.DataFrame) -> list[list[int]]:
    """Chains of row positions of `rows` (kernels sorted by device, stream, start):
    matmul → ≤ 4 kernels → softmax → ≤ 2 kernels → matmul on one stream."""
    models = rows["cost_model"].cast(pl.String).to_list()
    streams = list(zip(rows["device"].to_list(), rows["stream"].to_list()))
    chains = []
    for index, model in enumerate(models):
        if model != "softmax":
            continue
        first = next((j for j in range(index - 1, max(index - 2 - ATTENTION_MAX_BETWEEN, -1), -1)
                      if streams[j] == streams[index] and models[j] in ("matmul", "softmax")), None)
        last = next((j for j in range(index + 1, min(index + 2 + ATTENTION_MAX_AFTER, len(models)))
                     if streams[j] == streams[index] and models[j] in ("matmul", "softmax")), None)
        if first is None or last is None or models[first] != "matmul" or models[last] != "matmul":
            continue
        if any(streams[j] != streams[index] for j in range(first, last + 1)):
            continue
        chains.append(list(range(first, last + 1)))
    return chains


def _operands(shapes: list | None) -> list[list[int]]:
    """The tensor inputs of a matmul op (two dimensions or more; `baddbmm`'s bias and scalars left out)."""
    return [list(shape) for shape in (shapes or []) if shape and len(shape) >= 2][-2:]


def _same_heads(first: list | None, softmax: list | None, second: list | None) -> bool:
    """Whether the recorded shapes join: the softmax's input has the first matmul's result's last
    size (its second operand's last size) and the size of one of the second matmul's operands;
    unknown shapes: True."""
    scores = softmax[0] if softmax else None
    left, right = _operands(first), _operands(second)
    if not scores or len(left) < 2 or len(right) < 2:
        return True
    return scores[-1] == left[1][-1] and any(math.prod(shape) == math.prod(scores) for shape in right)


def unfused_attention(inputs: FindingInputs) -> list[Finding]:
    """Attention written out (matmul → optional scale/mask/dropout → softmax → matmul over the same
    heads): one `F.scaled_dot_product_attention` kernel keeps the scores on chip."""
    if inputs.peaks is None or "cost_model" not in inputs.roofline.columns:
        return []
    kernels = (inputs.roofline.filter(pl.col("kind") == "kernel").sort("device", "stream", "start_ns")
               .with_row_index("_pos"))
    if not kernels.filter(pl.col("cost_model").cast(pl.String) == "softmax").height:
        return []
    chains = _attention_chains(kernels)
    if not chains:
        return []
    shapes = _shapes(inputs, kernels)
    kept, remedies, ideal_total = [], [], 0.0
    context = run_context(inputs)
    assumption = (f"the chain becomes one SDPA kernel doing the two matmuls' FLOPs at {SDPA_EFFICIENCY:.0%} of the "
                  "tensor-core roof of its format, reading Q, K, V and writing the output once at the memory roof")
    for chain in chains:
        rows = kernels[chain]
        ops = rows["op_id"].to_list()
        if not _same_heads(shapes.get(ops[0]), shapes.get(rows.filter(pl.col("cost_model").cast(pl.String) == "softmax")
                                                          ["op_id"][0]), shapes.get(ops[-1])):
            continue
        ideal = _sdpa_ns(rows, shapes.get(ops[0]), shapes.get(ops[-1]), inputs)
        if ideal is None or ideal >= float(rows["duration_ns"].sum()):
            continue
        kept.append(rows)
        remedies.append(merge(rows, ideal, assumption))
        ideal_total += ideal
    if not kept:
        return []
    hit = pl.concat(kept)
    total = float(hit["duration_ns"].sum())
    softmax = hit.filter(pl.col("cost_model").cast(pl.String) == "softmax")
    names = [str(name) for name in kept[0]["op_name"].to_list()]
    pattern = " → ".join(name for index, name in enumerate(names) if not index or name != names[index - 1])
    busy = busy_ns(inputs)
    softmax_ns = float(softmax["duration_ns"].sum())
    evidence = (f"{len(kept)} attention chain{'s' if len(kept) != 1 else ''} ({pattern}), {format_ns(total)} = "
                f"{format_share(total, busy)} of {context.device} busy; the softmax alone {format_ns(softmax_ns)} = "
                f"{format_share(softmax_ns, busy)} at {weighted_fraction(softmax):.0%} of its roof; one SDPA kernel "
                f"for the same heads: ≈ {format_ns(ideal_total)} at {SDPA_EFFICIENCY:.0%} of the "
                f"{_dtype(hit).upper()} roof")
    halves = "fp16/bf16" if capabilities(inputs.peaks).bf16 else "fp16"
    backends = (f"flash ({halves}), memory-efficient or cuDNN backend, chosen by "
                "`torch.nn.attention.sdpa_kernel`" if context.family == "CUDA" else
                "flash / memory-efficient backends (ROCm: CK or AOTriton)" if context.family == "ROCm" else
                "the backend the device provides")
    action = ("replace the matmul → softmax → matmul with `torch.nn.functional.scaled_dot_product_attention(q, k, v, "
              f"attn_mask=mask, dropout_p=p, is_causal=causal)` ({backends}); Hugging Face models: "
              "`attn_implementation=\"sdpa\"`")
    if _dtype(hit) == "fp32" and capabilities(inputs.peaks).bf16:
        action += "; in bf16 (`torch.autocast`) the flash backend applies"
    regime = str(hit.group_by("regime").agg(pl.col("duration_ns").sum())
                 .sort("duration_ns", descending=True)["regime"][0])
    return [Finding(id="unfused-attention",
                    regime=regime if regime in ("bandwidth", "compute", "latency") else "bandwidth",
                    title="Attention written as matmul → softmax → matmul: one SDPA kernel would do it",
                    evidence=evidence, action=action, gain_ns=total - ideal_total, confidence="medium",
                    spans=spans_of(hit), remedies=tuple(remedies))]


def _dtype(rows: pl.DataFrame) -> str:
    matmuls = rows.filter(pl.col("cost_model").cast(pl.String) == "matmul")["compute_dtype"].drop_nulls()
    return str(matmuls[0]) if matmuls.len() else "fp32"


def _shapes(inputs: FindingInputs, kernels: pl.DataFrame) -> dict[int, list]:
    """Recorded input shapes of the kernels' ops, by op id."""
    ids = kernels["op_id"].drop_nulls().unique()
    if ids.is_empty() or "input_dims" not in inputs.cpu_ops.columns:
        return {}
    dims = inputs.cpu_ops["input_dims"].gather(positions_in(inputs.cpu_ops["op_id"])(ids))
    return {int(i): d for i, d in zip(ids.to_list(), dims.to_list()) if d is not None}


def _sdpa_ns(rows: pl.DataFrame, first: list | None, second: list | None, inputs: FindingInputs) -> float | None:
    """The time of one SDPA kernel for the chain: its two matmuls' FLOPs at SDPA_EFFICIENCY × the
    roof of their format (fp32: the FP32 SIMT roof, the memory-efficient backend), or Q, K, V, O
    once at the memory roof, the larger; None without the matmuls' FLOPs."""
    matmuls = rows.filter(pl.col("cost_model").cast(pl.String) == "matmul")
    flops = float(matmuls["flops"].fill_null(0).sum())
    dtype = _dtype(rows)
    peak = inputs.peaks.peak_flops(dtype, dtype != "fp32")
    if not flops or not peak:
        return None
    compute = flops / (peak * SDPA_EFFICIENCY) * 1e9
    element = ELEMENT_BYTES.get(dtype, 4)
    left, right = _operands(first), _operands(second)
    # Q and K (the first matmul's operands), V (the second's), the output O (Q's size): each once
    tensors = left + right[1:] + left[:1]
    io = sum(math.prod(shape) for shape in tensors) * element
    memory = io / inputs.peaks.memory_bandwidth_bytes_per_s * 1e9
    return max(compute, memory)


# --- layout conversions around convolutions ------------------------------------------------------

LAYOUT_KERNEL = r"(?i)nchw_?to_?nhwc|nhwc_?to_?nchw|nchw2nhwc|nhwc2nchw"
LAYOUT_MIN_SHARE = 0.01  # of GPU busy: fewer conversions are not worth a finding


def layout_conversions(inputs: FindingInputs) -> list[Finding]:
    """cuDNN/MIOpen converting NCHW tensors to NHWC and back around each convolution: with
    `channels_last` tensors the convolutions read them as they are."""
    rows = inputs.roofline.filter(pl.col("kind") == "kernel")
    if rows.is_empty():
        return []
    rows = rows.filter(pl.lit(contains(rows["name"], LAYOUT_KERNEL).fill_null(False)))
    total = float(rows["duration_ns"].sum()) if rows.height else 0.0
    busy = busy_ns(inputs)
    if not total or total < LAYOUT_MIN_SHARE * busy:
        return []
    return [Finding(
        id="layout-conversions", regime="bandwidth", title="Convolutions convert NCHW ↔ NHWC around every call",
        evidence=f"{rows.height} layout conversion kernel{'s' if rows.height != 1 else ''}, {format_ns(total)} = "
                 f"{format_share(total, busy)} of {run_context(inputs).device} busy (top `{top_kernel(rows)}`)",
        action="keep activations and weights channels-last: `model = model.to(memory_format=torch.channels_last)` and "
               "`x = x.to(memory_format=torch.channels_last)` for the inputs",
        gain_ns=total, confidence="medium", spans=spans_of(rows),
        remedies=(retime(rows, pl.lit(0.0), "with channels_last tensors the convolutions need no conversion"),))]


# --- the optimizer step ----------------------------------------------------------------------------

OPTIMIZER_MIN_KERNELS = 16  # kernels per optimizer step below which its launches do not matter
FUSED_OPTIMIZERS = ("Adam", "AdamW", "SGD", "Adagrad")  # torch.optim classes with `fused=True` on CUDA (2.4+)
FOREACH_KERNEL = r"multi_tensor_apply|fused_adam|FusedAdam|fused_sgd|_fused_"  # foreach / fused optimizers


def optimizer_step(inputs: FindingInputs) -> list[Finding]:
    """An optimizer step that launches a few kernels per parameter (the for-loop implementation):
    `foreach=True` / `fused=True` does the same work in a few kernels."""
    names = inputs.cpu_ops["name"]
    steps = inputs.cpu_ops.filter(starts_with(names, "Optimizer.step").fill_null(False)).select(
        pl.col("name").cast(pl.String).alias("_step_name"), pl.col("start_ns").alias("_s"),
        pl.col("end_ns").alias("_e"))
    if steps.is_empty() or "launch_start_ns" not in inputs.roofline.columns:
        return []
    kernels = inputs.roofline.filter((pl.col("kind") == "kernel") & pl.col("launch_start_ns").is_not_null())
    inside = kernels.join_where(steps, pl.col("launch_start_ns") >= pl.col("_s"),
                                pl.col("launch_start_ns") <= pl.col("_e"))
    if inside.is_empty() or inside.height < OPTIMIZER_MIN_KERNELS * steps.height:
        return []
    if contains(inside["name"], FOREACH_KERNEL).fill_null(False).mean() >= 0.5:
        return []  # foreach / fused already
    roof = (pl.col("bytes") / pl.col("peak_bytes_per_s") * 1e9).fill_null(pl.col("duration_ns"))
    remedies, ideal_total = [], 0.0
    for _, group in inside.group_by("_s", maintain_order=True):
        ideal = float(group.select(roof.clip(upper_bound=pl.col("duration_ns")).sum()).item())
        ideal_total += ideal
        remedies.append(merge(group, ideal, "a fused optimizer step moves the same bytes in one kernel at the "
                                            "memory roof (kernels without a byte count keep their time)"))
    total = float(inside["duration_ns"].sum())
    gain = total - ideal_total
    if gain <= 0:
        return []
    context = run_context(inputs)
    per_step = inside.height / steps.height
    name = steps["_step_name"][0]  # Optimizer.step#AdamW.step
    kind = name.split("#", 1)[1].split(".", 1)[0] if "#" in name else "AdamW"
    flag = "fused=True" if kind in FUSED_OPTIMIZERS else "foreach=True"
    return [Finding(
        id="optimizer-foreach", regime="latency", title="The optimizer step launches kernels parameter by parameter",
        evidence=f"{inside.height} kernels in {steps.height} `{steps['_step_name'][0]}` span"
                 f"{'s' if steps.height != 1 else ''} ({per_step:.0f} per step), {format_ns(total)} = "
                 f"{format_share(total, busy_ns(inputs))} of {context.device} busy (top `{top_kernel(inside)}`); "
                 f"the same bytes at the memory roof: {format_ns(ideal_total)}",
        action=f"update all parameters at once: `torch.optim.{kind}(params, {flag})`"
               + ("" if context.cuda_api else " where the backend supports it")
               + "; the CPU then launches a few kernels instead of several per parameter",
        gain_ns=gain, confidence="medium", spans=spans_of(inside), remedies=tuple(remedies))]


# --- kernels far below their roof ------------------------------------------------------------------

FAR_BELOW_FRACTION = 0.3  # kernels under this fraction of their roof ...
FAR_MIN_SHARE = 0.05  # ... whose name holds at least this share of the rank's window
ATTAINABLE_FRACTION = 0.8  # what a well-shaped kernel of the same work reaches (the gain's assumption)
FAR_MAX_NAMES = 3
CAUSES = {
    "softmax": "non-contiguous input (`.contiguous()` before it), short rows (a last dimension of a few dozen "
               "elements leaves most threads idle), or an FP32 softmax in a bf16 model (`dtype=` upcasting "
               "it); attention's softmax goes away with `F.scaled_dot_product_attention`",
    "norm": "non-contiguous input, short rows, or an FP32 norm in a bf16 model (`torch.autocast` keeps "
                     "norms in FP32: a fused norm kernel, `torch.compile`)",
    "reduction": "reducing over a non-contiguous or short dimension (permute so that it is last and contiguous)",
    "elementwise": "non-contiguous or broadcast operands (strided reads), or tensors too small to fill the device",
    "copy": "a strided copy (`.contiguous()`, `permute`, `transpose` materialised): keep one layout",
    "matmul": "shapes the GEMM library tiles badly (a small or odd dimension), or a transposed operand it must copy",
    "conv": "a layout or algorithm cuDNN/MIOpen picks badly: `torch.backends.cudnn.benchmark = True`, channels_last",
}


def far_below_roof(inputs: FindingInputs) -> list[Finding]:
    """Kernels far below their roof that hold a large share of the window: named, with their usual
    causes and what to try. Gain: each at ATTAINABLE_FRACTION of its roof."""
    rows = inputs.roofline.filter(pl.col("regime").is_in(["bandwidth", "compute"]) & pl.col("ideal_ns").is_not_null()
                                  & (pl.col("pct_of_roof") < FAR_BELOW_FRACTION) & (pl.col("kind") == "kernel"))
    window = int(inputs.attribution["window_ns"].sum()) if inputs.attribution.height else 0
    if rows.is_empty() or not window:
        return []
    by_name = (rows.group_by("name").agg(pl.col("duration_ns").sum().alias("_total"))
               .filter(pl.col("_total") >= FAR_MIN_SHARE * window)
               .sort("_total", "name", descending=[True, False]).head(FAR_MAX_NAMES))
    if by_name.is_empty():
        return []
    hit = rows.filter(pl.col("name").is_in(by_name["name"].implode()))
    target = pl.col("ideal_ns") / ATTAINABLE_FRACTION
    gain = float(hit.select((pl.col("duration_ns") - target).clip(lower_bound=0).sum()).item())
    if gain <= 0:
        return []
    context = run_context(inputs)
    parts, tries = [], []
    for name, total in by_name.iter_rows():
        group = hit.filter(pl.col("name") == name)
        model = str(group["cost_model"].drop_nulls()[0]) if group["cost_model"].drop_nulls().len() else "elementwise"
        roof = "memory" if group["regime"][0] == "bandwidth" else "compute"
        ops = group["op_name"].drop_nulls()
        parts.append(f"`{top_kernel(group)}` ({ops.mode().sort()[0] if ops.len() else 'no op'}) "
                     f"{format_ns(total)} = {format_share(total, window)} of the window at "
                     f"{weighted_fraction(group):.0%} of its {roof} roof")
        if model in CAUSES and CAUSES[model] not in tries:
            tries.append(CAUSES[model])
    action = "check the usual causes: " + "; ".join(tries or [CAUSES["elementwise"]])
    if inductor_share(hit) < 0.5 and context.cuda_api:
        action += "; `torch.compile` often generates a better kernel for such ops"
    return [Finding(
        id="far-below-roof", regime=str(hit.group_by("regime").agg(pl.col("duration_ns").sum())
                                       .sort("duration_ns", descending=True)["regime"][0]),
        title="Kernels far below their roof hold much of the window",
        evidence="; ".join(parts) + f"; at {ATTAINABLE_FRACTION:.0%} of their roof they would save {format_ns(gain)}",
        action=action, gain_ns=gain, confidence="low", spans=spans_of(hit),
        remedies=(retime(hit, target, f"each kernel reaches {ATTAINABLE_FRACTION:.0%} of its roof once the cause is "
                                      "fixed"),))]


# --- a busy device with no lever -----------------------------------------------------------------

BUSY_SHARE = 0.9  # a device busy this share of its window or more is "busy"
LEVER_SHARE = 0.01  # a finding that gains at least this share of the window is a lever
BUSY_TOP_KERNELS = 3


def busy_without_lever(found: list[Finding], inputs: FindingInputs) -> list[Finding]:
    """A device busy ≥ BUSY_SHARE of its window for which no finding gains ≥ LEVER_SHARE of it:
    say so, and name the kernels that take the time (a note: gain None)."""
    window = int(inputs.attribution["window_ns"].sum()) if inputs.attribution.height else 0
    busy = busy_ns(inputs)
    if not window or busy < BUSY_SHARE * window or not inputs.roofline.height:
        return []
    if any(f.gain_ns is not None and f.gain_ns >= LEVER_SHARE * window for f in found):
        return []
    context = run_context(inputs)
    kernels = inputs.roofline.filter(pl.col("kind") == "kernel")
    if kernels.is_empty():
        return []
    by_name = (kernels.group_by("name").agg(pl.col("duration_ns").sum(), pl.col("pct_of_roof").mean())
               .sort("duration_ns", "name", descending=[True, False]).head(BUSY_TOP_KERNELS))
    named = "; ".join(f"`{top_kernel(kernels.filter(pl.col('name') == name))}` {format_share(float(total), window)}"
                      + (f" at {roof:.0%} of its roof" if roof is not None else "")
                      for name, total, roof in by_name.iter_rows())
    return [Finding(
        id="busy-no-lever", regime="trace", title=f"The {context.device} is busy and no change found saves 1% of it",
        evidence=f"{context.device} busy {format_share(busy, window)} of the window; no finding gains "
                 f"{LEVER_SHARE:.0%} of it; the time goes to {named}",
        action="less work per step (a smaller model or batch), or a device with higher roofs; look inside those "
               "kernels with a kernel profiler (Nsight Compute `ncu`, `rocprof` on AMD)",
        gain_ns=None, confidence="medium", spans=())]
