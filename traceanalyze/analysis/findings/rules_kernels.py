"""Rules over kernels on the roofline: GEMM shapes the tensor cores pad, latency-bound kernels,
fusible bandwidth-bound chains and pageable host-to-device copies (number formats: `rules_precision`).
`kernel_claims` runs them after the rules that model their action, on the kernels those left."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.findings.capabilities import capabilities
from traceanalyze.analysis.findings.finding import Finding, Remedy, spans_of
from traceanalyze.analysis.findings.remedies import merge, op_keys, retime
from traceanalyze.analysis.findings.kernel_common import top_kernel
from traceanalyze.analysis.findings.inputs import (
    FindingInputs,
    busy_ns,
    format_ns,
    format_share,
)
from traceanalyze.analysis.attribution import FUSIBLE_MODELS
from traceanalyze.analysis.findings.run_context import INDUCTOR_KERNEL_PREFIX, inductor_share, run_context
from traceanalyze.analysis.names import matching
from traceanalyze.analysis.op_tree import positions_in

ALIGNMENT = {"fp16": 8, "bf16": 8, "fp8": 16}  # elements a tensor-core GEMM dimension should be a multiple of


def gemm_alignment(inputs: FindingInputs) -> list[Finding]:
    """fp16/bf16 (fp8) GEMMs whose recorded dimensions are not multiples of 8 (16)."""
    caps = capabilities(inputs.peaks)
    # a latency-bound GEMM is too small for padding to matter: latency-bound-kernels holds it
    rows = inputs.roofline.filter((pl.col("cost_model") == "matmul") & pl.col("compute_dtype").is_in(list(ALIGNMENT))
                                  & pl.col("op_id").is_not_null() & (pl.col("regime") != "latency"))
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
    misaligned = pl.col("op_id").is_in(ids.implode())
    hit = rows.filter(misaligned)
    total = int(hit["duration_ns"].sum())
    gain = float(hit["recoverable_ns"].fill_null(0).sum())
    remedies, modelled = _aligned_remedy(hit, rows.filter(~misaligned))
    example = ordered.filter(pl.col("op_id") == ids[0]).row(0, named=True)
    dims = [shape for shape in (example["input_dims"] or []) if shape is not None and len(shape) >= 2]
    multiple = ALIGNMENT[example["compute_dtype"]]
    sizes = sorted({size for shape in dims for size in shape[-2:] if size is not None})
    bad = [size for size in sizes if size % multiple]
    shape_text = " × ".join(str(list(shape)) for shape in dims)
    context = run_context(inputs)
    library = "" if context.family == "CUDA" else f" ({context.blas} pads them too)"
    return [Finding(
        id="gemm-shape-alignment", regime="compute", title=f"GEMM dimensions the {context.cores} must pad{library}",
        evidence=f"{len(ids)} GEMM op{'s' if len(ids) != 1 else ''}, {format_ns(total)} (top `{top_kernel(hit)}`); "
                 f"e.g. {shape_text}: {', '.join(map(str, bad))} not a multiple of {multiple}; {modelled}",
        action=f"pad the dimension to a multiple of {multiple} (vocabulary, hidden size, batch × sequence): e.g. "
               "`torch.nn.functional.pad` or choose sizes that are multiples of 64",
        gain_ns=gain, confidence="low", spans=spans_of(hit), remedies=remedies)]


def _aligned_remedy(hit: pl.DataFrame, aligned: pl.DataFrame) -> tuple[tuple[Remedy, ...], str]:
    """The misaligned GEMMs (`hit`) retimed at the fraction of their roof that this rank's aligned
    GEMMs of the same format reach (Σ time at the roof ÷ Σ time, over those kernels), never slower
    than now; the sentence that says so. Formats without an aligned GEMM among the kernels the rules
    before left are not modelled."""
    reached = (aligned.filter(pl.col("ideal_ns").is_not_null() & (pl.col("duration_ns") > 0))
               .group_by("compute_dtype").agg((pl.col("ideal_ns").sum() / pl.col("duration_ns").sum()).alias("_reach")))
    rows = hit.join(reached, on="compute_dtype", how="inner").filter(pl.col("ideal_ns").is_not_null())
    if rows.is_empty():
        return (), ("the loss depends on the kernel and no aligned GEMM of its format is left to compare (none ran, or "
                    "rules before claimed them): not modelled for the replay")
    shares = ", ".join(f"{dtype.upper()} {share:.0%}" for dtype, share in
                       reached.sort("compute_dtype").select("compute_dtype", "_reach").iter_rows())
    assumption = ("padded, each GEMM reaches the fraction of its roof that the rank's aligned GEMMs of its format "
                  f"reach ({shares})")
    return ((retime(rows, pl.col("ideal_ns") / pl.col("_reach"), assumption),),
            f"{rows.height} of {hit.height} kernels modelled: {assumption}")


def _misaligned(ops: pl.DataFrame) -> pl.Series:
    """Per op (`op_id, compute_dtype, input_dims`), whether one of the last two sizes of one of its
    input shapes of two dimensions or more is no multiple of its format's (`ALIGNMENT`): computed
    on the shapes, not per op in Python (a model repeats its GEMMs thousands of times)."""
    multiple = pl.col("compute_dtype").replace_strict(ALIGNMENT, return_dtype=pl.Int64)
    sizes = (
        ops.select(pl.int_range(pl.len()).alias("_op"), multiple.alias("_multiple"),
                   pl.col("input_dims").alias("_shape"))
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
    context = run_context(inputs)
    action = "give each kernel more work: a bigger batch, batched ops (`torch.bmm`, `torch._foreach_*`)"
    if inductor_share(rows) >= 0.5:
        action += ("; most are Inductor's kernels (the model is compiled): fewer graph breaks let it fuse more "
                   "(`TORCH_LOGS=\"graph_breaks\"`)")
    else:
        action += ", or fuse them with `torch.compile(model)`"
    remedies, batched = _batched_remedies(inputs.roofline)
    modelled = (f"{batched} of them in runs of one kernel back to back, modelled as one batched op per run"
                if remedies else "no two of them of one kernel back to back: not modelled for the replay")
    return [Finding(
        id="latency-bound-kernels", regime="latency", title=f"Kernels too small to fill the {context.device}",
        evidence=f"{rows.height} latency-bound kernel{'s' if rows.height != 1 else ''}, {format_ns(total)} = "
                 f"{format_share(total, busy_ns(inputs))} of {context.device} busy (top `{top_kernel(rows)}`), each "
                 f"under 2 µs of work at the roof; {modelled}",
        action=action,
        gain_ns=gain, confidence="medium", spans=spans_of(rows), remedies=remedies)]


BATCH_ASSUMPTION = ("a batched op does a run's work in the time of the run's longest kernel (each was too small to "
                    "fill the GPU), no less than the run's work at the roof; its launches are not counted")


def _batched_remedies(roofline: pl.DataFrame) -> tuple[tuple[Remedy, ...], int]:
    """One `retime` per run of two or more latency-bound kernels of one name back to back on a
    stream (no other kernel of the roofline between them): together they take max(the run's
    longest, Σ its time at the roof), each its share of it (by its duration); and how many kernels
    the runs hold. The GPU time taken out is Σ durations − that ≤ Σ (duration − time at the roof),
    the rule's gain; the launch calls stay (the replay does not count fewer launches)."""
    kernels = (roofline.filter(pl.col("kind") == "kernel")
               .select("device", "stream", "start_ns", "duration_ns", "ideal_ns", "regime",
                       pl.col("name").cast(pl.String))
               .sort("device", "stream", "start_ns"))
    latency = pl.col("regime") == "latency"
    same = ((pl.col("device") == pl.col("device").shift()) & (pl.col("stream") == pl.col("stream").shift())
            & (pl.col("name") == pl.col("name").shift()) & latency & latency.shift())
    runs = (kernels.with_columns((~same.fill_null(False)).cum_sum().alias("_run")).filter(latency)
            .filter(pl.len().over("_run") >= 2))
    remedies = []
    for _, run in runs.group_by("_run", maintain_order=True):
        total = float(run["duration_ns"].sum())
        batched = max(float(run["duration_ns"].max()), float(run["ideal_ns"].fill_null(0).sum()))
        if 0 < batched < total:
            remedies.append(retime(run, pl.col("duration_ns") * (batched / total), BATCH_ASSUMPTION))
    return tuple(remedies), runs.height


def fusion(inputs: FindingInputs) -> list[Finding]:
    """Chains of bandwidth-bound ops whose intermediates a fused kernel would keep on chip."""
    chains = inputs.fusion
    if chains.is_empty():
        return []
    chains = chains.filter(pl.col("time_saved_ns") > 0)
    if chains.is_empty():
        return []
    top = chains.sort("time_saved_ns", descending=True).row(0, named=True)
    where = f" under `{top['annotation']}`" if top["annotation"] else ""
    bandwidth = inputs.roofline.filter(pl.col("regime") == "bandwidth")
    # the fusion table is per chain, not per kernel: its gain is held to the bandwidth-bound fusible
    # kernels no earlier rule claimed (kernel_claims), so that no kernel's time counts twice
    fusible = bandwidth.filter(pl.col("cost_model").cast(pl.String).is_in(FUSIBLE_MODELS))
    gain = min(float(chains["time_saved_ns"].sum()), float(fusible["duration_ns"].sum()))
    if gain <= 0:
        return []
    if all(op.strip().startswith(INDUCTOR_KERNEL_PREFIX) for op in top["ops"].split("→")):
        action = ("these are Inductor's kernels already (the model is compiled): Inductor kept them apart; look for "
                  "graph breaks between them (`TORCH_LOGS=\"graph_breaks\"`), or merge them in a hand-written "
                  "Triton kernel")
    else:
        action = ("fuse them: `model = torch.compile(model)` (Inductor fuses pointwise/reduction chains), or a "
                  "hand-written Triton kernel")
    remedies, occurrences = _fusion_remedies(inputs)
    if remedies:
        modelled = (f"{len(remedies)} of {occurrences} chain occurrence{'s' if occurrences != 1 else ''} modelled, "
                    "each as one kernel at the memory roof for its external bytes")
    else:
        modelled = "the chains' kernels or the memory roof are not known: not modelled for the replay"
    return [Finding(
        id="fuse-bandwidth-chain", regime="bandwidth", title="Memory-bound op chains a fused kernel would merge",
        evidence=f"{chains.height} chain{'s' if chains.height != 1 else ''}; top {top['ops']}{where}, "
                 f"{top['occurrences']}× ({top['kernels']} kernels, {format_ns(top['duration_ns'])}): "
                 f"{top['bytes_saved'] / 1e6:.3g} MB of intermediates, {format_ns(top['time_saved_ns'])} saved; "
                 + modelled,
        action=action, gain_ns=gain, confidence="medium", spans=spans_of(bandwidth), remedies=remedies)]


def _fusion_remedies(inputs: FindingInputs) -> tuple[tuple[Remedy, ...], int]:
    """One `merge` per chain occurrence (`fusion_runs`: its stream, first kernel's start and kernel
    count; a chain is consecutive kernels on its stream), of (bytes − bytes saved) / the kernels'
    peak bandwidth: the fused kernel at the memory roof for its external bytes. Occurrences whose
    kernels are not found one by one, or without a peak bandwidth, are left out. Returns the
    remedies and the number of occurrences."""
    runs = inputs.fusion_runs
    if runs is None or runs.is_empty():
        return (), 0
    runs = runs.filter(pl.col("time_saved_ns") > 0)
    kernels = (inputs.roofline.filter(pl.col("kind") == "kernel")
               .select("device", "stream", "start_ns", "duration_ns", "peak_bytes_per_s")
               .sort("device", "stream", "start_ns"))
    by_stream = {key: frame for key, frame in kernels.group_by("device", "stream")}
    remedies = []
    for run in runs.sort("start_ns").iter_rows(named=True):
        lane = by_stream.get((run["device"], run["stream"]))
        if lane is None:
            continue
        first = lane["start_ns"].search_sorted(run["start_ns"], side="left")
        rows = lane.slice(first, run["kernels"])
        peak = rows["peak_bytes_per_s"].drop_nulls()
        if rows.height != run["kernels"] or rows["start_ns"][0] != run["start_ns"] or peak.is_empty() or peak[0] <= 0:
            continue
        external = max(float(run["bytes"] - run["bytes_saved"]), 0.0)
        at_roof = min(external / float(peak[0]) * 1e9, float(rows["duration_ns"].sum()))  # never longer than now
        remedies.append(merge(rows, at_roof,
                              "the chain becomes one kernel at the memory roof for its external bytes (its "
                              "intermediates stay on chip)"))
    return tuple(remedies), runs.height


def pageable_copies(inputs: FindingInputs) -> list[Finding]:
    """Host-to-device copies from pageable memory: they block the CPU and cannot overlap."""
    copies = inputs.roofline.select("device", "stream", "kind", "name", "op_name", "start_ns", "end_ns", "duration_ns")
    pageable = matching(copies["name"], lambda name: name.str.contains("(?i)HtoD") & name.str.contains("(?i)Pageable"))
    rows = copies.filter((pl.col("kind") == "memcpy") & pl.lit(pageable))
    if rows.is_empty():
        return []
    total = int(rows["duration_ns"].sum())
    return [Finding(
        id="pageable-h2d", regime="memcpy", title="Host-to-device copies from pageable memory",
        evidence=f"{rows.height} pageable HtoD cop{'ies' if rows.height != 1 else 'y'}, {format_ns(total)} on the "
                 f"{run_context(inputs).device} "
                 f"(top op `{rows.sort('duration_ns', descending=True)['op_name'][0] or 'unknown'}`)",
        action="pin the host memory and copy asynchronously: `DataLoader(..., pin_memory=True)` or "
               "`tensor.pin_memory()`, then `.to(device, non_blocking=True)`",
        gain_ns=float(total), confidence="medium", spans=spans_of(rows),
        remedies=(Remedy(kind="async_copy", gpu_ops=op_keys(rows),
                         assumption="a pinned asynchronous copy overlaps compute and no longer blocks the CPU"),))]
